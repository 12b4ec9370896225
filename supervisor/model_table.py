"""The model table: which model a skill's worker runs on.

`resolve_model(skill, requested)` picks, in order: the caller's `requested`
model, the skill's entry in the table (`SUPERVISOR_MODELS_FILE`, default
`supervisor/models.yaml`), the table's `default`. The file is YAML:

    default: sonnet
    skills:
      review: opus

It is re-read when it changes on disk (users edit it while the service runs).
"""

from __future__ import annotations

import threading
from pathlib import Path

import yaml
from django.conf import settings

from supervisor.errors import SupervisorError

FALLBACK_MODEL = "sonnet"

_cache: dict[str, tuple[float, dict]] = {}
_lock = threading.Lock()


class ModelTableError(SupervisorError):
    """The model table file exists but cannot be used."""


def load_table(path: str | Path | None = None) -> dict:
    """`{"default": str, "skills": {skill: model}}` from the file (cached by mtime)."""
    file = Path(path or settings.SUPERVISOR_MODELS_FILE)
    try:
        mtime = file.stat().st_mtime
    except FileNotFoundError:
        return {"default": FALLBACK_MODEL, "skills": {}}
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
    table = {
        "default": str(raw.get("default") or FALLBACK_MODEL),
        "skills": {str(name): str(model) for name, model in skills.items() if model},
    }
    with _lock:
        _cache[key] = (mtime, table)
    return table


def resolve_model(skill: str, requested: str | None = None, *, path: str | Path | None = None) -> str:
    if requested and requested.strip():
        return requested.strip()
    table = load_table(path)
    return table["skills"].get(skill) or table["default"]
