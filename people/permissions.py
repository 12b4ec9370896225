"""One permission check for every door: what a caller may do is its credential's scopes ∩ what its role allows now.

A **right** is one thing a caller may do (read the brain, review notes, run skills…). Each right
names the token **scope** a credential must hold for it and the Django **permission** a person's
role must hold (through a group made by a migration, `people.roles`), checked at every
request, so a person who loses a role loses the power of every token and OAuth grant they made
at once. Staff hold every right; superusers hold every permission. The service identity (an
endpoint's environment token, or an endpoint left open) holds every right of the scopes it has.

The apps declare their rights once (`register_right`, from their `tools.py`), and every door
asks the same function:

    permission_refusal(who, "brain:review")   # None: allowed; else the reason, a sentence to act on

`who` is an `people.auth.Identity` (MCP, REST, the hook route) or a User (a browser session,
which holds no scopes: only the role counts). A tool names its right (`Tool.right`); a prompt,
a completion or a resource read needs its endpoint's first scope's right; a REST view its
`token_scope`. The core names no app: the table is filled by the apps.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

EVERY_ACCOUNT = ""  # a right whose `permission` is this is open to every active account (with the scope)
STAFF_ONLY = "staff"  # no role grants it: a scope an app declared without a right (fail closed until it declares one)


@dataclass(frozen=True)
class Right:
    """What one right needs: the token `scope` (empty: none, e.g. a browser-only page) and the role `permission`."""

    name: str
    scope: str
    permission: str = EVERY_ACCOUNT  # "app_label.codename"; EVERY_ACCOUNT: any active account
    description: str = ""
    # The roles (groups) the migrations give `permission` to, for the documents and the Tokens page's hints.
    roles: tuple[str, ...] = ()


_RIGHTS: dict[str, Right] = {}
_LOCK = threading.Lock()


def register_right(
    name: str, *, scope: str, permission: str = EVERY_ACCOUNT, description: str = "", roles: tuple[str, ...] = ()
) -> Right:
    """Declare a right (idempotent for the same declaration; a different one under a taken name is an error)."""
    right = Right(name=name, scope=scope, permission=permission, description=description, roles=tuple(roles))
    with _LOCK:
        existing = _RIGHTS.get(name)
        if existing is not None and existing != right:
            raise ValueError(f"right {name} is declared twice, differently: {existing} and {right}")
        _RIGHTS[name] = right
    return right


def get_right(name: str) -> Right:
    """The right called `name`; a scope with no right of its own is staff's only (fail closed)."""
    with _LOCK:
        right = _RIGHTS.get(name)
    if right is None:
        if ":" not in name:
            raise KeyError(f"no right called {name!r}; the apps declare theirs with register_right")
        # A scope no app declared a right for: staff only, so a new scope never opens a door by omission.
        return Right(name=name, scope=name, permission=STAFF_ONLY)
    return right


def all_rights() -> list[Right]:
    with _LOCK:
        return list(_RIGHTS.values())


# --- the one check -------------------------------------------------------------------


def role_allows(user: Any, right: Right | str) -> bool:
    """Whether the person's role allows `right` now (staff: every right), whatever their credential holds."""
    right = get_right(right) if isinstance(right, str) else right
    if user is None or not getattr(user, "is_active", False):
        return False
    if user.is_staff or not right.permission:
        return True
    if right.permission == STAFF_ONLY:
        return False
    return bool(user.has_perm(right.permission))


def permission_refusal(who: Any, right_name: str, *, what: str = "") -> str | None:
    """Why `who` may not do `right_name` (a sentence that says what would allow it), or None when it may.

    `who`: an Identity (a credential: its scopes and, for a person, their role now) or a User (the
    browser: the role alone). The service identity holds every right of the scopes it has. `what`
    names the thing refused in the message (a tool, "prompts/get recall"); default: the right.
    """
    right = get_right(right_name)
    what = what or right_name
    identity = who if hasattr(who, "scopes") and hasattr(who, "via") else None
    user = identity.user if identity is not None else who
    if identity is not None and right.scope and right.scope not in identity.scopes:
        held = ", ".join(sorted(identity.scopes)) or "none"
        if identity.user is not None and right.scope in identity.extra.get("granted_scopes", ()):
            return (
                f"{what} needs the {right.scope} scope, which your token holds but your role no longer allows "
                f"({_who_may(right)}); an administrator gives roles (docs/people.md)."
            )
        return (
            f"{what} needs the {right.scope} scope; the credential you sent has: {held}. "
            f"Make a token with --scope {right.scope} if your role allows it (docs/people.md)."
        )
    if identity is not None and identity.user is None:
        return None  # the service identity: every right of its scopes
    if not role_allows(user, right):
        name = user.get_username() if user is not None else "anonymous"
        return f"{what} needs {_who_may(right)}; {name} has no role that allows it (docs/people.md)."
    return None


def may(who: Any, right_name: str) -> bool:
    return permission_refusal(who, right_name) is None


def _who_may(right: Right) -> str:
    if not right.permission:
        return "an active account"
    if right.permission == STAFF_ONLY:
        return "a staff account (no role holds it yet: register_right)"
    roles = " or ".join(f"the {role} role" for role in right.roles) or f"the {right.permission} permission"
    return f"{roles} (permission {right.permission}) or a staff account"


# --- scopes a person may hold ----------------------------------------------------------


def scope_right(scope: str) -> Right:
    """The right a scope stands for on its own (what any token with it may do at least)."""
    return get_right(scope)


def role_scopes(user: Any, scopes: list[str] | tuple[str, ...]) -> list[str]:
    """Of `scopes` (every scope the endpoints declare: `people.auth.known_scopes()`), those the person's
    role allows now, in order."""
    return [scope for scope in scopes if role_allows(user, scope_right(scope))]
