"""Cross-setting rules, as Django system checks.

The core's own rule is here; each app registers its rules in its
`system_checks.py` (one function each, tagged "hyperguild", imported from its
AppConfig.ready()) so `manage.py check`, `serve`, the worker and the tests all
refuse a contradictory configuration with a message that names the variable.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from hyperguild.mcp.registry import all_endpoints


def is_loopback(host: str) -> bool:
    if host in {"localhost", "ip6-localhost"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def public_bind_problem(host: str) -> str | None:
    """Why the service must not listen on `host`, or None if it may."""
    if is_loopback(host) or settings.HYPERGUILD_ALLOW_NO_AUTH:
        return None
    missing = list(dict.fromkeys(e.token_setting for e in all_endpoints() if e.token_setting and not e.token()))
    if not missing:
        return None
    return (
        f"Refusing to listen on {host}, beyond loopback, while {', '.join(missing)} "
        "is empty: anyone on the network could call those endpoints. Set the tokens, "
        "bind to 127.0.0.1 (HYPERGUILD_HOST), or set HYPERGUILD_ALLOW_NO_AUTH=1 if a proxy in "
        "front of hyperguild does the authentication."
    )


@register("hyperguild")
def check_bind_address(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    problem = public_bind_problem(settings.HYPERGUILD_HOST)
    return [Error(problem, id="hyperguild.E001")] if problem else []
