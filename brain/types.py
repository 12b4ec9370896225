"""Types the brain's signatures share (for the type checker; nothing here runs)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class SignedInRequest(HttpRequest):
    """A request a view only sees after sign-in (`login_required`, `hyperguild.ui.role_action`, the admin):
    its `user` is a person, never AnonymousUser."""

    user: User
