"""Cross-setting rules, as Django system checks.

Apps add their own rules here (one function each, tagged "hyperguild") so
`manage.py check`, `serve`, the worker and the tests all refuse a
contradictory configuration with a message that names the variable.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.core.checks import Error, Tags, register  # noqa: F401


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
    missing = [
        name
        for name in ("BRAIN_MCP_TOKEN", "SUPERVISOR_MCP_TOKEN", "ROUTING_MCP_TOKEN")
        if not getattr(settings, name)
    ]
    if not missing:
        return None
    return (
        f"Refusing to listen on {host}, beyond loopback, while {', '.join(missing)} "
        "is empty: anyone on the network could call those endpoints. Set the tokens, "
        "bind to 127.0.0.1 (HYPERGUILD_HOST), or set HYPERGUILD_ALLOW_NO_AUTH=1 if a proxy in "
        "front of hyperguild does the authentication."
    )


@register("hyperguild")
def check_bind_address(app_configs, **kwargs):
    problem = public_bind_problem(settings.HYPERGUILD_HOST)
    return [Error(problem, id="hyperguild.E001")] if problem else []


def routing_problems() -> list[str]:
    """Routing settings that contradict each other (MIN_SAMPLES above WINDOW is allowed: the
    router then stays in its min-samples band)."""
    floor, ceil = settings.HYPERGUILD_ROUTE_LOCAL_FLOOR, settings.HYPERGUILD_ROUTE_LOCAL_CEIL
    problems = []
    for name, value in (("HYPERGUILD_ROUTE_LOCAL_FLOOR", floor), ("HYPERGUILD_ROUTE_LOCAL_CEIL", ceil)):
        if not 0.0 <= value <= 1.0:
            problems.append(f"{name}={value:g} is a pass rate and must lie between 0 and 1.")
    if ceil > floor:
        problems.append(
            f"HYPERGUILD_ROUTE_LOCAL_CEIL={ceil:g} is above HYPERGUILD_ROUTE_LOCAL_FLOOR={floor:g}: below CEIL "
            "the thinking model answers, at or above FLOOR the fast one, so CEIL must not exceed FLOOR "
            "(defaults: CEIL 0.70, FLOOR 0.90)."
        )
    if settings.HYPERGUILD_FAST_MODEL == settings.HYPERGUILD_THINKING_MODEL:
        problems.append(
            f"HYPERGUILD_FAST_MODEL and HYPERGUILD_THINKING_MODEL are both {settings.HYPERGUILD_FAST_MODEL!r}: "
            "routing needs two different models."
        )
    return problems


@register("hyperguild")
def check_routing_settings(app_configs, **kwargs):
    return [Error(problem, id="hyperguild.E010") for problem in routing_problems()]


@register("hyperguild")
def check_brain_embedder(app_configs, **kwargs):
    """A half-configured embedder stops start-up, naming the variable to set."""
    from hyperguild.lib.embedders import embedder_problems

    return [
        Error(message, hint=f"Set {variable}.", id="hyperguild.E020")
        for variable, message in embedder_problems(
            settings.BRAIN_EMBEDDER, settings.BRAIN_EMBED_URL, settings.BRAIN_EMBED_MODEL
        )
    ]


@register("hyperguild")
def check_answer_model(app_configs, **kwargs):
    """BRAIN_ANSWER_MODEL without a gateway would silently give extractive answers only."""
    from django.core.checks import Warning as CheckWarning

    if settings.BRAIN_ANSWER_MODEL and not settings.LITELLM_BASE_URL:
        return [
            CheckWarning(
                f"BRAIN_ANSWER_MODEL={settings.BRAIN_ANSWER_MODEL} is set but LITELLM_BASE_URL is empty: "
                "brain_answer will return extracted passages, not synthesised answers.",
                hint="Set LITELLM_BASE_URL to the OpenAI-compatible gateway, or unset BRAIN_ANSWER_MODEL.",
                id="hyperguild.W040",
            )
        ]
    return []


@register("hyperguild")
def check_trainer_secret_patterns(app_configs, **kwargs):
    """An unreadable TRAINER_SECRET_PATTERNS_FILE or a bad regex in it would let secrets into training data."""
    path = settings.TRAINER_SECRET_PATTERNS_FILE
    if not path:
        return []
    from django.core.exceptions import ImproperlyConfigured

    from sessions.redaction import load_pattern_file

    try:
        load_pattern_file(path)
    except OSError as exc:
        return [Error(f"TRAINER_SECRET_PATTERNS_FILE={path} cannot be read: {exc}", id="hyperguild.E030")]
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="One Python regex a line; # starts a comment.", id="hyperguild.E031")]
    return []


@register("hyperguild")
def check_brain_dir(app_configs, **kwargs):
    """The mirror writes into BRAIN_DIR: it must be a writable folder (or creatable)."""
    import os
    from pathlib import Path

    if not settings.BRAIN_DIR:
        return []
    path = Path(settings.BRAIN_DIR)
    if path.exists() and not path.is_dir():
        return [Error(f"BRAIN_DIR={path} exists and is not a folder.", hint="Point BRAIN_DIR at a brain folder.", id="hyperguild.E050")]
    existing = path if path.exists() else path.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return [
            Error(
                f"BRAIN_DIR={path} cannot be written (or created): the mirror would fail every round.",
                hint="Create the folder and give the service user write access, or unset BRAIN_DIR.",
                id="hyperguild.E051",
            )
        ]
    return []
