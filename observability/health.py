"""Sections the apps add to GET /health, registered from their `AppConfig.ready()`.

The core names no app: `/health` asks every registered provider for a JSON
section. A section reports; it does not change the status code (only the
database and the worker do), and a provider that fails is reported as such.

    # <app>/apps.py
    def ready(self) -> None:
        register_health_section("embeddings", embedding_backlog)   # () -> JSON-able dict
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()
# Each app's section of /health (its own TypedDict, JSON-able); the core reports them unread.
HealthSection = Callable[[], Mapping[str, object]]
_SECTIONS: dict[str, HealthSection] = {}


def register_health_section(name: str, provider: HealthSection) -> None:
    with _LOCK:
        _SECTIONS[name] = provider


def health_sections() -> Mapping[str, Mapping[str, object]]:
    """Every registered section by name; one that raised is `{"ok": false, "error": ...}`."""
    with _LOCK:
        providers = dict(_SECTIONS)
    report: dict[str, Mapping[str, object]] = {}
    for name, provider in providers.items():
        try:
            report[name] = provider()
        except Exception as exc:  # noqa: BLE001 — /health reports problems, it never raises
            logger.warning("health section %s failed: %s", name, exc)
            report[name] = {"ok": False, "error": str(exc)}
    return report
