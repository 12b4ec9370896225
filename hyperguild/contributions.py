"""What the apps contribute to the core, registered from their `AppConfig.ready()`.

The core names no app: the home page asks every registered provider for its
counts, and `do_ensure_schedules()` installs every registered schedule. (MCP
endpoints and tools register with `hyperguild.mcp.registry`; system checks
with Django's own `django.core.checks.register`.)

    # <app>/apps.py
    def ready(self) -> None:
        register_home_counts(home_counts)   # () -> {"raw_count": 3, ...}
        register_schedules(schedules)       # () -> [(name, "<app>.tasks.f", seconds)]
        register_web_start(start)           # () -> None, in each web process once it is built
        register_task_queue("<app>.tasks.f", "embed")  # its schedule runs on that django-q2 cluster
        register_serve_start(resume)        # () -> None, in `serve` once the database is ready (queue leftover work)
        register_serve_banner(lines)        # () -> ["budget: …"], lines `serve` prints under its banner
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

# Each app's part of the home page's template context (its own TypedDict); the core merges them unread.
HomeCounts = Callable[[], Mapping[str, object]]
Schedules = Callable[[], list[tuple[str, str, int]]]
WebStart = Callable[[], object]
BannerLines = Callable[[], list[str]]

_Provider = TypeVar("_Provider", bound=Callable[[], object])

_LOCK = threading.Lock()
_HOME_COUNTS: list[HomeCounts] = []
_SCHEDULES: list[Schedules] = []
_WEB_START: list[WebStart] = []
_TASK_QUEUES: dict[str, str] = {}
_SERVE_START: list[WebStart] = []
_SERVE_BANNER: list[BannerLines] = []


def _register(registry: list[_Provider], provider: _Provider) -> None:
    with _LOCK:
        if provider not in registry:  # ready() may run twice (tests); register once
            registry.append(provider)


def register_home_counts(provider: HomeCounts) -> None:
    """`provider()` returns template variables for the home page (names unique across apps)."""
    _register(_HOME_COUNTS, provider)


def register_schedules(provider: Schedules) -> None:
    """`provider()` returns the (name, dotted task path, seconds) schedules the app wants now."""
    _register(_SCHEDULES, provider)


def register_web_start(hook: WebStart) -> None:
    """`hook()` runs in each web process right after its application is built, before it answers: work that
    its first requests would otherwise wait for (it must return at once: start a thread for anything slow)."""
    _register(_WEB_START, hook)


def register_task_queue(func: str, queue: str) -> None:
    """The schedule of task `func` runs on the django-q2 cluster `queue` (an ALT_CLUSTERS name), not the default."""
    with _LOCK:
        _TASK_QUEUES[func] = queue


def task_queue(func: str) -> str | None:
    """The cluster that a schedule of `func` runs on; None for the default one."""
    with _LOCK:
        return _TASK_QUEUES.get(func)


def register_serve_start(hook: WebStart) -> None:
    """`hook()` runs in `serve` after its migrations and schedules, before the workers start: work left by the
    last stop is queued again here, so it resumes without a command run by hand."""
    _register(_SERVE_START, hook)


def register_serve_banner(provider: BannerLines) -> None:
    """`provider()` returns lines `serve` prints under its start-up banner (the ledger's budgets)."""
    _register(_SERVE_BANNER, provider)


def serve_banner_lines() -> list[str]:
    with _LOCK:
        providers = list(_SERVE_BANNER)
    return [line for provider in providers for line in provider()]


def serve_start_hooks() -> list[WebStart]:
    with _LOCK:
        return list(_SERVE_START)


def web_start_hooks() -> list[WebStart]:
    with _LOCK:
        return list(_WEB_START)


def home_counts() -> Mapping[str, object]:
    """The home page's template context: every app's counts, merged."""
    with _LOCK:
        providers = list(_HOME_COUNTS)
    counts: dict[str, object] = {}
    for provider in providers:
        counts.update(provider())
    return counts


def schedules() -> list[tuple[str, str, int]]:
    with _LOCK:
        providers = list(_SCHEDULES)
    return [schedule for provider in providers for schedule in provider()]
