"""Type names shared by the apps (for the type checker; nothing here runs any logic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# A JSON object as it crosses a boundary (a request body, a tool's arguments, a stored document):
# its values really are arbitrary JSON.
JSON = dict[str, Any]


class AuthenticatedHttpRequest(HttpRequest):
    """A request that a login check has passed (login_required, a signed-in test): `user` is a User."""

    user: User
