"""Type names shared by the apps (for the type checker; nothing here runs any logic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# A JSON object as it crosses a boundary (a request body, a tool's arguments, a stored document):
# its values really are arbitrary JSON.
JSON = dict[str, Any]


class AuthenticatedHttpRequest(HttpRequest):
    """A request that a login check has passed (login_required, a signed-in test): `user` is a User."""

    user: User


# A tool's JSON Schema as `hyperguild.mcp.contracts.ToolSchema` writes it (an object at the top, nested models inlined: no `$defs`).
# The keywords a reader of the schema looks up by name; pydantic may write others (`allOf`, ...) for a field.
class JsonSchema(TypedDict, total=False):
    type: str | list[str]
    description: str
    properties: dict[str, Any]
    required: list[str]
    additionalProperties: bool | dict[str, Any]
    items: dict[str, Any]
    enum: list[Any]
