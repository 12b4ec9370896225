"""Fixtures shared across test folders (loaded by tests/conftest.py as a pytest plugin)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.fakes.openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible gateway on 127.0.0.1, not wired into the settings."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def gateway(fake_openai: FakeOpenAI, settings) -> FakeOpenAI:
    """The fake gateway as the service's LLM gateway (LITELLM_BASE_URL), with no retries."""
    settings.LITELLM_BASE_URL = fake_openai.url
    settings.LITELLM_API_KEY = "sk-gateway"
    settings.HYPERGUILD_HTTP_RETRIES = 0
    settings.HYPERGUILD_HTTP_TIMEOUT = 10.0
    return fake_openai


@pytest.fixture
def skill_worker(transactional_db):
    """Runs queued SkillRuns (worker skills and tool jobs) in a background thread, like the django-q2 worker does."""
    # Imported here: this module is loaded as a plugin before pytest-django sets Django up.
    from django.db import connection

    from supervisor.jobs import is_worker_skill
    from supervisor.models import SkillRun
    from supervisor.tasks import run_skill, run_tool_job

    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                for run_id in SkillRun.objects.filter(status=SkillRun.Status.QUEUED).values_list("pk", flat=True):
                    # run each in its own thread: several runs may be in flight at once
                    runner = threading.Thread(target=_one, args=(run_id,), daemon=True, name=f"skill-run-{run_id}")
                    runners.append(runner)
                    runner.start()
                time.sleep(0.1)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    started: set[int] = set()
    runners: list[threading.Thread] = []
    lock = threading.Lock()

    def _one(run_id: int) -> None:
        with lock:
            if run_id in started:
                return
            started.add(run_id)
        try:
            # A worker skill's run, or a tool job (a long tool started as an MCP task: supervisor.jobs).
            run = SkillRun.objects.get(pk=run_id)
            (run_skill if is_worker_skill(run) else run_tool_job)(run_id)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True, name="skill-worker")
    thread.start()
    yield
    stop.set()
    thread.join(timeout=10)
    for runner in list(runners):
        runner.join(timeout=20)
    assert not errors, errors
