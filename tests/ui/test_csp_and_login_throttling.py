"""Issue 17: external images in notes do not load in the staff UI (CSP), and logins are throttled (django-axes)."""

from __future__ import annotations

import pytest
from django.test import Client

from brain.actions import do_write_raw_note

pytestmark = pytest.mark.django_db


def test_pages_carry_a_csp_that_only_loads_images_from_this_site(django_user_model):
    user = django_user_model.objects.create_user("staff", password="pw-123456", is_staff=True)
    note = do_write_raw_note(title="Pixel", body="![x](https://tracker.example/pixel.gif)")
    client = Client()
    client.force_login(user)
    response = client.get(f"/review/{note.pk}/")
    assert response.status_code == 200
    assert b"https://tracker.example/pixel.gif" in response.content  # rendered, but the browser will not fetch it
    policy = response["Content-Security-Policy"]
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert directives["img-src"] == ["'self'", "data:"]
    assert directives["default-src"] == ["'self'"] and directives["script-src"] == ["'self'"]


def login(client: Client, password: str):
    return client.post(
        "/admin/login/?next=/admin/", {"username": "staff", "password": password}, REMOTE_ADDR="10.0.0.9"
    )


def test_repeated_failed_logins_lock_the_account_out_even_with_the_right_password(django_user_model, settings):
    settings.AXES_FAILURE_LIMIT = 3
    django_user_model.objects.create_user("staff", password="right-password-1", is_staff=True)
    client = Client()
    for _ in range(3):
        response = login(client, "wrong")
        assert "_auth_user_id" not in client.session
    response = login(client, "right-password-1")
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_good_login_below_the_limit_works_and_resets_the_count(django_user_model, settings):
    settings.AXES_FAILURE_LIMIT = 3
    django_user_model.objects.create_user("staff", password="right-password-1", is_staff=True)
    client = Client()
    login(client, "wrong")
    login(client, "wrong")
    response = login(client, "right-password-1")
    assert response.status_code == 302 and "_auth_user_id" in client.session
