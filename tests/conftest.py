"""Shared test fixtures: a real ASGI server in a thread, MCP helpers.

Everything runs against the embedded PostgreSQL (pytest-django creates the
test database on it); tests/session_start.py, the session's entry point, starts it
before pytest-django reads the settings. `asgi_server` serves the real ASGI application with
uvicorn on 127.0.0.1 in this process, so tests that use it must also use
`transactional_db` (the server's threads see only committed data).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from tests.fakes.fixtures import fake_openai, gateway, skill_worker  # noqa: F401 - shared fixtures for every folder


def test_database_url() -> str:
    """A DATABASE_URL that points child processes (qcluster, serve) at the test database."""
    from urllib.parse import quote

    from django.db import connection

    s = connection.settings_dict
    user, password = quote(s.get("USER") or ""), quote(s.get("PASSWORD") or "")
    host = s.get("HOST") or "127.0.0.1"
    if host.startswith("/"):
        return f"postgresql://{user}:{password}@{quote(host, safe='')}/{s['NAME']}"
    return f"postgresql://{user}:{password}@{host}:{s.get('PORT') or 5432}/{s['NAME']}"


test_database_url.__test__ = False  # a helper, not a test


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThreadedServer:
    def __init__(self, app, port: int):
        self.config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"uvicorn-{port}")
        self.url = f"http://127.0.0.1:{port}"

    def _run(self) -> None:
        asyncio.run(self.server.serve())

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker) -> Iterator[str]:
    """Base URL of the real ASGI app served by uvicorn on 127.0.0.1."""
    from hyperguild.asgi import application

    server = ThreadedServer(application, free_port())
    with django_db_blocker.unblock():
        server.start()
    yield server.url
    server.stop()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def rpc(method: str, params: dict | None = None, request_id: int | str = 1) -> dict:
    message: dict = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def mcp_post(url: str, message, headers: dict | None = None, timeout: float = 30.0) -> httpx.Response:
    """POST one message (or any raw body, when `message` is bytes) to an MCP endpoint."""
    all_headers = {**MCP_HEADERS, **(headers or {})}
    content = message if isinstance(message, bytes) else json.dumps(message).encode()
    return httpx.post(url, content=content, headers=all_headers, timeout=timeout)


def call_tool(url: str, name: str, arguments: dict, headers: dict | None = None, request_id: int = 1) -> dict:
    """tools/call over plain JSON; returns the JSON-RPC `result` (asserts no protocol error)."""
    response = mcp_post(url, rpc("tools/call", {"name": name, "arguments": arguments}, request_id), headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    return body["result"]


def parse_sse(text: str) -> list[dict]:
    """The JSON messages of an SSE body, in order."""
    messages = []
    for block in text.split("\n\n"):
        data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


@pytest.fixture(scope="session", autouse=True)
def _end_stray_database_connections(django_db_setup, django_db_blocker):
    """Let pytest-django drop the test database at the end.

    Threads of the in-process ASGI server and of worker fixtures may still
    hold connections when the session ends; PostgreSQL refuses to drop a
    database that is in use, so end those connections first.
    """
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(autouse=True)
def _closed_circuit_breakers():
    """Each test starts with every outbound service's breaker closed (breakers are process-wide)."""
    from hyperguild.lib.http import reset_breakers

    reset_breakers()
    yield


@pytest.fixture(autouse=True)
def _fresh_batch_budgets():
    """Each test starts with every person's share of batch work unspent (counted per process)."""
    from hyperguild.lib.batches import batch_budget, new_project_allowance

    batch_budget.forget()
    new_project_allowance.forget()
    yield


def rest_error(response) -> dict:
    """The body of a REST error, checked against the one shape every REST endpoint answers (see hyperguild.api)."""
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["code"], str) and error["code"], error
    assert isinstance(error["message"], str) and error["message"], error
    assert isinstance(error["details"], dict), error
    return error


def _flush_without_post_migrate(self) -> None:
    """What a transactional test leaves behind, emptied faster than Django's own flush.

    Django's TransactionTestCase TRUNCATEs every table (new files for each table and index)
    and then emits post_migrate, which rebuilds all content types and permissions row by row:
    about 0.3 s per transactional test, 334 of them in the suite. Here the tables are emptied
    with DELETE in one transaction (Django's foreign keys are deferrable, so the order does not
    matter; the tables are small), the rows migrate made (content types, permissions) are
    kept — no test changes them — and the one post_migrate handler of our own (the periodic
    schedules) is run directly.
    """
    from django.db import connections, transaction

    from hyperguild.apps import install_schedules

    for db_name in self._databases_names(include_mirrors=False):
        connection = connections[db_name]
        tables = [
            name
            for name in connection.introspection.django_table_names(only_existing=True, include_views=False)
            if name not in KEPT_BY_FLUSH
        ]
        statements = ["SET CONSTRAINTS ALL DEFERRED"]
        statements += [f"DELETE FROM {connection.ops.quote_name(name)}" for name in tables]
        with transaction.atomic(using=db_name), connection.cursor() as cursor:
            cursor.execute("; ".join(statements))
        install_schedules(sender=None, using=db_name)


KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


def pytest_configure(config) -> None:
    from django.conf import settings
    from django.test import TransactionTestCase

    TransactionTestCase._fixture_teardown = _flush_without_post_migrate
    # Hashing a password the production way takes 0.47 s here, and most UI tests create a user or log
    # one in: a fast hasher for passwords made in this process (Django's own advice for test suites).
    # The service keeps PBKDF2; servers started as child processes use it, and its hashes still verify here.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        *[name for name in settings.PASSWORD_HASHERS if not name.endswith("MD5PasswordHasher")],
    ]


# The files that take longest (a real `serve` watched past one 60 s heartbeat, then restarted mid-backlog; scratch
# servers killed and restarted; browsers), longest first: collected before the rest, so pytest-xdist's whole-file
# scheduling (in collection order: `--no-loadscope-reorder` in the Makefile) starts them early, and the run does not
# end waiting on one of them while the other workers are idle (the longest job first keeps the tail short).
# Figures: `make test PYTEST_ARGS=--durations=0`, summed per file.
LONG_FILES = (
    "tests/core/test_embedding_backlog_health.py",  # about 2.5 minutes
    # The other two workers start with files that need no scratch database: the first scratch server of a fresh
    # checkout makes the migrated template (tests/fakes/pg_template.py), and the others would wait on its lock.
    "tests/core/test_bench_load.py",
    "tests/fuzz/test_fuzz_doors.py",
    "tests/supervisor/test_chaos.py",
    "tests/core/test_recovery_with_backlog.py",
    "tests/core/test_two_replicas.py",
    "tests/core/test_serve.py",
    "tests/core/test_prometheus.py",
    "tests/supervisor/test_tasks_across_replicas.py",
    "tests/sessions/test_training_change.py",
    "tests/core/test_first_minute.py",
    "tests/e2e/test_review_on_a_phone_by_touch_and_undo.py",
)


def _long_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LONG_FILES.index(path) if path in LONG_FILES else len(LONG_FILES)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_long_rank)  # stable: the rest keep their order
