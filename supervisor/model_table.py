"""The model table: which model a skill's worker runs on.

`resolve_model(skill, requested)` picks, in order: the caller's `requested`
model, the skill's entry in the table (`SUPERVISOR_MODELS_FILE`, default
`supervisor/models.yaml`), the table's `default`. The file is YAML:

    default: sonnet
    skills:
      tdd: ollama/qwen3-coder-30b-tuned   # the Go hyperguild's key: all three TDD phases
      tdd_green: sonnet                   # a phase key wins over `tdd`
      review: opus
    consensus: [opus, sonnet, haiku]      # optional: the reviewers of a `consensus` review, in order

It is re-read when it changes on disk (users edit it while the service runs).

A model written `provider/name` (`ollama/qwen3-coder-30b-tuned`) is not a
Claude model: the worker still is Claude Code, but pointed at the LiteLLM
gateway through Claude Code's own variables (`gateway_environment()`), so the
whole worker runs on that model and no key ever goes into a prompt.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.conf import settings

from supervisor.errors import ModelTableError

FALLBACK_MODEL = "sonnet"
TDD_KEY = "tdd"
NO_GATEWAY_KEY = "no-key"
TDD_PHASES = ("tdd_red", "tdd_green", "tdd_refactor")


@dataclass(frozen=True)
class ModelTable:
    """SUPERVISOR_MODELS_FILE read: the default model, a model per skill, the consensus reviewers."""

    default: str
    skills: Mapping[str, str] = field(default_factory=dict)  # skill -> model (a `tdd` key spread over the phases)
    consensus: tuple[str, ...] = ()


_cache: dict[str, tuple[float, ModelTable]] = {}
_lock = threading.Lock()


def load_table(path: str | Path | None = None) -> ModelTable:
    """The model table from the file (cached by mtime); the fallback model alone without a file."""
    file = Path(path or settings.SUPERVISOR_MODELS_FILE)
    try:
        mtime = file.stat().st_mtime
    except FileNotFoundError:
        return ModelTable(FALLBACK_MODEL)
    key = str(file)
    with _lock:
        cached = _cache.get(key)
        if cached and cached[0] == mtime:
            return cached[1]
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ModelTableError(f"{file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ModelTableError(f"{file} must be a mapping with 'default' and 'skills'")
    skills = raw.get("skills") or {}
    if not isinstance(skills, dict):
        raise ModelTableError(f"{file}: 'skills' must map skill names to model names")
    entries = {str(name): str(model).strip() for name, model in skills.items() if model}
    shared_tdd = entries.pop(TDD_KEY, None)
    if shared_tdd:
        for phase in TDD_PHASES:
            entries.setdefault(phase, shared_tdd)  # a phase key wins over the shared one
    consensus = raw.get("consensus") or []
    if not isinstance(consensus, list) or not all(isinstance(model, str) and model.strip() for model in consensus):
        raise ModelTableError(f"{file}: 'consensus' must be a list of model names")
    table = ModelTable(
        default=str(raw.get("default") or FALLBACK_MODEL).strip(),
        skills=entries,
        consensus=tuple(model.strip() for model in consensus),
    )
    with _lock:
        _cache[key] = (mtime, table)
    return table


def resolve_model(skill: str, requested: str | None = None, *, path: str | Path | None = None) -> str:
    if requested and requested.strip():
        return requested.strip()
    table = load_table(path)
    return table.skills.get(skill) or table.default


def consensus_models(skill: str, count: int, requested: str | None = None) -> list[str]:
    """The `count` reviewers of a consensus call: the table's `consensus` models in order (repeated from the
    start when it lists fewer), else `count` independent samples of the skill's own model."""
    listed = () if requested and requested.strip() else load_table().consensus
    if not listed:
        return [resolve_model(skill, requested)] * count
    return [listed[index % len(listed)] for index in range(count)]


def is_gateway_model(model: str | None) -> bool:
    """`provider/name` models (LiteLLM's naming) run through the gateway, not Anthropic's API."""
    return model is not None and "/" in model.strip("/")


def gateway_problem(model: str | None) -> str | None:
    """Why a gateway model cannot run with the current settings, or None."""
    if is_gateway_model(model) and not settings.LITELLM_BASE_URL:
        return (
            f"model {model!r} is a provider/name model, which runs the worker through the LiteLLM gateway: "
            "set LITELLM_BASE_URL (and LITELLM_API_KEY if the gateway wants a key), or choose a Claude model"
        )
    return None


def gateway_environment(model: str | None) -> Mapping[str, str | None]:
    """Variables that point a Claude Code worker at the LiteLLM gateway for a `provider/name` model.

    Claude Code sends its Anthropic messages-format requests to
    `ANTHROPIC_BASE_URL` (`/v1/messages`, which LiteLLM serves) with
    `ANTHROPIC_AUTH_TOKEN` as the bearer token. Its background calls use the
    small/fast model, so every model variable names the same gateway model:
    the gateway knows no Claude model names. A value of None removes the
    variable (an Anthropic key must never reach the gateway). Empty for
    Claude models.
    """
    if not is_gateway_model(model):
        return {}
    problem = gateway_problem(model)
    if problem:
        raise ModelTableError(problem)
    env = {
        "ANTHROPIC_BASE_URL": settings.LITELLM_BASE_URL.rstrip("/"),
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_SMALL_FAST_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Claude Code refuses to start without a credential; a gateway without
        # a master key accepts any token.
        "ANTHROPIC_AUTH_TOKEN": settings.LITELLM_API_KEY or NO_GATEWAY_KEY,
        "ANTHROPIC_API_KEY": None,
    }
    return env
