"""Skill runs, routing entries and pathways are logs in the admin: shown read-only, deleted only by a superuser."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory

from supervisor.models import Pathway, RoutingEntry, SkillRun

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", [SkillRun, RoutingEntry, Pathway])
def test_a_log_is_read_only_and_only_a_superuser_may_delete_it(model):
    model_admin = admin.site._registry[model]
    users = get_user_model().objects
    staff = users.create_user("staff", password="x", is_staff=True)
    root = users.create_superuser("root", password="x")
    request = RequestFactory().get("/admin/")
    for user in (staff, root):
        request.user = user
        assert model_admin.has_add_permission(request) is False
        assert model_admin.has_change_permission(request) is False
    request.user = staff
    assert model_admin.has_delete_permission(request) is False
    request.user = root
    assert model_admin.has_delete_permission(request) is True
    shown = set(model_admin.get_readonly_fields(request))
    assert {"id", "skill"} <= shown if model is not Pathway else {"id", "key"} <= shown
