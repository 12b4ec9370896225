"""System checks of the supervisor's settings (registered from SupervisorConfig.ready())."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Info, Warning, register

from supervisor.model_table import ModelTableError, is_gateway_model, load_table


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
    return problems


def single_model_notice() -> str:
    """'' unless one model serves both routing roles (allowed: a single local model is a common start)."""
    if settings.HYPERGUILD_FAST_MODEL != settings.HYPERGUILD_THINKING_MODEL:
        return ""
    return (
        f"HYPERGUILD_FAST_MODEL and HYPERGUILD_THINKING_MODEL are both {settings.HYPERGUILD_FAST_MODEL!r}: routing "
        'sends every call to that one model (reason "single model"), with no fail-open retry.'
    )


@register("hyperguild")
def check_routing_settings(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = [Error(problem, id="hyperguild.E010") for problem in routing_problems()]
    notice = single_model_notice()
    if notice:
        messages.append(Info(notice, id="hyperguild.I010"))
    return messages


@register("hyperguild")
def check_gateway_models(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """provider/name models in the model table run through the LiteLLM gateway, which must be set."""
    if settings.LITELLM_BASE_URL:
        return []
    try:
        table = load_table()
    except ModelTableError as exc:
        return [Error(str(exc), hint="Fix SUPERVISOR_MODELS_FILE.", id="hyperguild.E071")]
    entries = {"default": table.default, **table.skills}
    gateway = sorted(f"{name}: {model}" for name, model in entries.items() if is_gateway_model(model))
    if not gateway:
        return []
    return [
        Warning(
            f"The model table ({settings.SUPERVISOR_MODELS_FILE}) names provider/name models ({'; '.join(gateway)}), "
            "which run the Claude Code worker through the LiteLLM gateway, but LITELLM_BASE_URL is empty: those "
            "skills will be refused.",
            hint="Set LITELLM_BASE_URL (and LITELLM_API_KEY) to the gateway serving Anthropic /v1/messages.",
            id="hyperguild.W070",
        )
    ]


def heartbeat_problems() -> list[str]:
    """A run must be able to miss a beat or two before it counts as abandoned."""
    beat, stale = settings.SUPERVISOR_HEARTBEAT_SECONDS, settings.SUPERVISOR_STALE_SECONDS
    if stale < 3 * beat:
        return [
            f"SUPERVISOR_STALE_SECONDS={stale:g} is less than three SUPERVISOR_HEARTBEAT_SECONDS ({beat:g}): a live "
            "run that misses one beat would be killed as abandoned. Raise STALE or lower HEARTBEAT (defaults 30 and 5)."
        ]
    return []


@register("hyperguild")
def check_heartbeat_settings(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    return [Error(problem, id="hyperguild.E011") for problem in heartbeat_problems()]
