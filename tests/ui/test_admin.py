"""The Django admin covers every model; logs are read-only; bulk actions call the same actions as the UI."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from model_bakery import baker

from brain.models import NoteStatus
from sessions.actions import do_log_entry
from sessions.models import SessionEntry
from supervisor.models import RoutingEntry, SkillRun
from tests.ui.conftest import make_example, make_raw_note

pytestmark = pytest.mark.django_db
APP_LABELS = ("brain", "supervisor", "agent_sessions", "hyperguild")


def _models():
    return [model for label in APP_LABELS for model in apps.get_app_config(label).get_models()]


@pytest.fixture
def admin_client_(db) -> Client:
    user = get_user_model().objects.create_superuser("root", password="pw-root-1234")
    client = Client()
    client.force_login(user)
    return client


def test_every_model_of_every_app_is_registered_with_search_or_filters():
    missing = [model.__name__ for model in _models() if model not in admin.site._registry]
    assert missing == []
    for model in _models():
        model_admin = admin.site._registry[model]
        assert model_admin.search_fields or model_admin.list_filter or model.__name__ == "BrainVersion", model


def test_every_changelist_opens_with_rows_in_it(admin_client_):
    make_raw_note(), make_example("dpo")
    do_log_entry("s-admin", kind="note", message="hello")
    baker.make(SkillRun, skill="review", status="pass")
    baker.make(RoutingEntry, skill="review", model="fast", reason="floor", status="pass")
    for model in _models():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert admin_client_.get(url).status_code == 200, url
        assert admin_client_.get(url, {"q": "x"}).status_code == 200, url


@pytest.mark.parametrize("model", [RoutingEntry, SessionEntry, SkillRun])
def test_logs_are_read_only_in_the_admin(model, admin_client_):
    model_admin = admin.site._registry[model]
    request = type("Request", (), {"user": get_user_model().objects.get(username="root")})()
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)


def test_the_note_admin_bulk_reject_goes_through_the_action(admin_client_):
    note = make_raw_note()
    response = admin_client_.post(
        reverse("admin:brain_note_changelist"),
        {
            "action": "reject_notes",
            "_selected_action": [note.pk],
        },
    )
    assert response.status_code == 302
    note.refresh_from_db()
    assert note.status == NoteStatus.REJECTED and note.reviewed_by.username == "root"


def test_the_training_admin_bulk_swap_goes_through_the_action(admin_client_):
    example = make_example("dpo")
    admin_client_.post(
        reverse("admin:agent_sessions_trainingexample_changelist"),
        {
            "action": "swap",
            "_selected_action": [example.pk],
        },
    )
    example.refresh_from_db()
    assert example.chosen[0]["content"].startswith("bad answer") and example.edits[-1]["by"] == "root"
