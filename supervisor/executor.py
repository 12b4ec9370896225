"""The `claude` process client: run one headless worker, bounded in every way.

    result = run_worker(prompt=..., schema=..., cwd=root, model="sonnet",
                        allowed_tools="Read,Write", cancel_check=lambda: False)

- The worker gets its own process group (`start_new_session=True`), so the
  supervisor (or the reaper, if the supervising process dies) can stop it and
  everything it spawned at once. The prompt goes to `claude -p` on stdin,
  never in argv (argv is visible to every user in `ps`).
- The environment of a worker and of a test command is an allow-list
  (`child_environment`): the service's secrets never reach them.
- Deadlines: `SUPERVISOR_TIMEOUT` wall clock and `SUPERVISOR_IDLE_TIMEOUT`
  without any output. On either (or when `cancel_check()` says so) the group
  gets SIGTERM, and SIGKILL `KILL_GRACE` seconds later if anything is left.
- At most `SUPERVISOR_MAX_WORKERS` workers run at once across all processes
  sharing the database: each holds a PostgreSQL advisory lock on one of N
  slots for as long as it runs (the lock dies with the connection, so a
  crashed process never leaks a slot) and, inside a skill run, records the
  slot on its SkillRun: a slot whose run is still `running` stays taken even
  when the lock is gone (its owner died but its worker may live on) until the
  reaper has killed that worker and ended the run. Others wait up to
  `SUPERVISOR_QUEUE_WAIT` seconds.
- The answer is the CLI's JSON envelope; the worker's report is its
  `structured_output` (or JSON inside `result`), validated against the
  skill's worker schema.

Every setting is read at call time.
"""

from __future__ import annotations

import contextvars
import fnmatch
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection

from hyperguild.lib.modeljson import ModelJSONError, parse_model_json
from hyperguild.lib.text import excerpt
from hyperguild.mcp.registry import token_settings
from supervisor.actions import do_record_run_ownership
from supervisor.models import SkillRun
from supervisor.output import cap

KILL_GRACE = 5.0
POLL_INTERVAL = 0.1
CANCEL_CHECK_INTERVAL = 0.5
# Two int4 keys: this namespace and the slot number (advisory locks are per database).
SLOT_LOCK_NAMESPACE = 0x48475356  # "HGSV"
# Enough for any real envelope; only the capped copy is stored.
PARSE_LIMIT = 16 * 1024 * 1024

# The environment a worker or a test command gets is an allow-list: what a shell,
# a compiler or a test runner needs, nothing of the service (database URL, MCP
# tokens, BRAIN_EMBED_API_KEY, LLM keys…). SUPERVISOR_WORKER_ENV_ALLOW adds
# names (NAME* for a prefix). Documented in docs/supervisor.md, "Worker environment".
ENV_ALLOW = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "JAVA_HOME",
    "NVM_DIR",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
)
# Only the `claude` worker (never a test command) also gets its own credentials and settings.
WORKER_ENV_ALLOW = ("ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_*")
# Never, whatever the allow-list says.
_ENV_NEVER = ("DATABASE_URL", "HYPERGUILD_*", "DJANGO_*", "BRAIN_*")

# Extension point: functions that return variables the worker must get on purpose
# (the LiteLLM gateway below; a gateway model's ANTHROPIC_BASE_URL/ANTHROPIC_AUTH_TOKEN).
WorkerEnvProvider = Callable[[], dict[str, str]]
_WORKER_ENV_PROVIDERS: list[WorkerEnvProvider] = []


def register_worker_env(provider: WorkerEnvProvider) -> None:
    """Add `provider()`'s variables to every worker's environment (not to test commands)."""
    if provider not in _WORKER_ENV_PROVIDERS:
        _WORKER_ENV_PROVIDERS.append(provider)


# The SkillRun the current thread works for (set by supervisor.tasks.run_skill): slots and
# process groups are recorded on it, so the reaper can find them if this process dies.
current_run_id: contextvars.ContextVar[int | None] = contextvars.ContextVar("current_run_id", default=None)


class QueueFull(Exception):
    """No worker slot became free within SUPERVISOR_QUEUE_WAIT."""


class ProcessOutcome(StrEnum):
    """How `run_process` ended: the process exited by itself, or it was killed (and why)."""

    EXITED = "exited"
    TIMEOUT = "timeout"  # past its wall-clock deadline
    IDLE = "idle"  # no output for `idle_timeout` seconds
    CANCELLED = "cancelled"  # `cancel_check()` said so


@dataclass
class ProcessResult:
    outcome: ProcessOutcome
    exit_code: int | None
    stdout: str
    stderr: str
    pid: int

    @property
    def succeeded(self) -> bool:
        return self.outcome == ProcessOutcome.EXITED and self.exit_code == 0


class WorkerStatus(StrEnum):
    """What one `claude -p` run came to, before the supervisor checks anything."""

    OK = "ok"  # it answered, and the answer validates against the worker schema
    ERROR = "error"  # it could not be started, failed, or answered nonsense
    UNAVAILABLE = "unavailable"  # it could not work at all: not logged in, rate-limited, offline
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@dataclass
class WorkerResult:
    status: WorkerStatus
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    envelope: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    message: str = ""
    duration_ms: int = 0
    pid: int | None = None
    argv: list[str] = field(default_factory=list)


def run_budget_seconds() -> float:
    """The longest a skill run can legitimately take, from the settings in force: the wait for a worker
    slot, then every attempt at its worker and test timeouts with the kill grace of each."""
    per_attempt = settings.SUPERVISOR_TIMEOUT + settings.SUPERVISOR_TEST_TIMEOUT + 2 * KILL_GRACE
    return settings.SUPERVISOR_QUEUE_WAIT + settings.SUPERVISOR_MAX_ATTEMPTS * per_attempt + 30


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def child_environment(*, worker: bool = False) -> Mapping[str, str]:
    """The environment for a test command, or (`worker=True`) for a `claude` worker: a fresh mapping, read-only
    to the caller (a caller that adds to it copies it first)."""
    allowed = (*ENV_ALLOW, *settings.SUPERVISOR_WORKER_ENV_ALLOW, *(WORKER_ENV_ALLOW if worker else ()))
    never = (*_ENV_NEVER, *token_settings())
    env = {key: value for key, value in os.environ.items() if _matches(key, allowed) and not _matches(key, never)}
    if worker:
        for provider in list(_WORKER_ENV_PROVIDERS):
            env.update(provider())
    return env


def _litellm_env() -> dict[str, str]:
    # The worker may delegate to local models through the LiteLLM gateway.
    env = {}
    if settings.LITELLM_BASE_URL:
        env["LITELLM_BASE_URL"] = settings.LITELLM_BASE_URL
    if settings.LITELLM_API_KEY:
        env["LITELLM_API_KEY"] = settings.LITELLM_API_KEY
    return env


register_worker_env(_litellm_env)


def build_argv(*, schema: Mapping[str, Any], allowed_tools: str, model: str | None) -> list[str]:
    """`claude -p` in print mode; the prompt is written to its stdin, not put in argv."""
    argv = [
        settings.CLAUDE_BINARY,
        "-p",
        "--output-format",
        "json",
        "--json-schema",
        json.dumps(schema, separators=(",", ":")),
        "--permission-mode",
        settings.SUPERVISOR_PERMISSION_MODE,
        "--allowedTools",
        allowed_tools,
        "--max-turns",
        str(settings.SUPERVISOR_MAX_TURNS),
    ]
    if model:
        argv += ["--model", model]
    return argv


# --- slots -----------------------------------------------------------------------


@contextmanager
def worker_slot(on_wait: Callable[[float], None] | None = None) -> Iterator[int]:
    """Hold one of SUPERVISOR_MAX_WORKERS slots while the block runs."""
    total = settings.SUPERVISOR_MAX_WORKERS
    deadline = time.monotonic() + settings.SUPERVISOR_QUEUE_WAIT
    waited_since = time.monotonic()
    slot = None
    run_id = current_run_id.get()
    while slot is None:
        held_by_runs = _slots_held_by_runs(run_id)
        with connection.cursor() as cursor:
            for number in range(1, total + 1):
                if number in held_by_runs:
                    continue
                cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [SLOT_LOCK_NAMESPACE, number])
                if cursor.fetchone()[0]:
                    slot = number
                    break
        if slot is not None:
            break
        if time.monotonic() >= deadline:
            raise QueueFull(
                f"all {total} worker slots stayed busy for {settings.SUPERVISOR_QUEUE_WAIT} s "
                "(SUPERVISOR_MAX_WORKERS / SUPERVISOR_QUEUE_WAIT); try again later"
            )
        if on_wait is not None:
            on_wait(time.monotonic() - waited_since)
        time.sleep(0.5)
    try:
        _record_on_run(run_id, worker_slot=slot)
        yield slot
    finally:
        _record_on_run(run_id, worker_slot=None)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SLOT_LOCK_NAMESPACE, slot])
        except Exception:  # noqa: BLE001 - a dead connection released the lock already
            pass


def _slots_held_by_runs(run_id: int | None) -> set[int]:
    """Slots recorded on running runs other than this one (a dead owner's worker may still run)."""
    held = SkillRun.objects.running().filter(worker_slot__isnull=False).exclude(pk=run_id)
    return set(held.values_list("worker_slot", flat=True))


def _record_on_run(run_id: int | None, **fields: int | None) -> None:
    if run_id is None:
        return
    try:
        do_record_run_ownership(run_id, **fields)
    except Exception:  # noqa: BLE001 - bookkeeping must not turn a finished worker into a crash
        pass


# --- process group ---------------------------------------------------------------


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(process: subprocess.Popen[Any], grace: float = KILL_GRACE) -> None:
    """SIGTERM the whole group, SIGKILL whatever is still there after `grace` seconds."""
    pgid = process.pid  # start_new_session: the leader's pid is the group id
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        process.poll()
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, or it stays in the group as a zombie
        if not group_alive(pgid):
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


class _Drain(threading.Thread):
    """Reads one pipe to the end, remembering when output last arrived."""

    def __init__(self, pipe: IO[bytes], name: str) -> None:
        super().__init__(daemon=True, name=name)
        self.pipe = pipe
        self.chunks: list[bytes] = []
        self.size = 0
        self.last_output = time.monotonic()

    def run(self) -> None:
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                break
            self.last_output = time.monotonic()
            if self.size < PARSE_LIMIT:
                self.chunks.append(chunk)
                self.size += len(chunk)
        self.pipe.close()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    timeout: float,
    idle_timeout: float | None = None,
    cancel_check: Callable[[], bool] | None = None,
    shell: bool = False,
    on_start: Callable[[int], None] | None = None,
    merge_stderr: bool = False,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    env_overrides: dict[str, str | None] | None = None,
) -> ProcessResult:
    """Run to completion or until stopped (see `ProcessOutcome`).

    Whatever the outcome, nothing of the process group is left running afterwards. With
    `merge_stderr` stderr goes into stdout in the order it was written, and
    the stderr returned is empty. `input_text` is written to its stdin (else
    stdin is empty); `env` defaults to a test command's environment, and
    `env_overrides` sets variables on top of it (None removes one).
    """
    env = dict(child_environment() if env is None else env)
    for key, value in (env_overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    process = subprocess.Popen(
        argv,
        cwd=str(cwd),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
        env=env,
        shell=shell,
    )
    run_id = current_run_id.get()
    _record_on_run(run_id, worker_pgid=process.pid)
    if on_start is not None:
        on_start(process.pid)
    if input_text is not None:
        threading.Thread(
            target=_feed, args=(process.stdin, input_text), daemon=True, name=f"stdin-{process.pid}"
        ).start()
    assert process.stdout is not None  # stdout=PIPE
    drains = [_Drain(process.stdout, f"stdout-{process.pid}")]
    if not merge_stderr:
        assert process.stderr is not None  # stderr=PIPE unless merged into stdout
        drains.append(_Drain(process.stderr, f"stderr-{process.pid}"))
    for drain in drains:
        drain.start()
    started = time.monotonic()
    deadline = started + timeout
    next_cancel_check = started
    outcome = ProcessOutcome.EXITED
    while process.poll() is None:
        now = time.monotonic()
        if now >= deadline:
            outcome = ProcessOutcome.TIMEOUT
        elif idle_timeout is not None and now - max(drain.last_output for drain in drains) >= idle_timeout:
            outcome = ProcessOutcome.IDLE
        elif cancel_check is not None and now >= next_cancel_check:
            next_cancel_check = now + CANCEL_CHECK_INTERVAL
            if cancel_check():
                outcome = ProcessOutcome.CANCELLED
        if outcome != ProcessOutcome.EXITED:
            kill_group(process)
            break
        time.sleep(POLL_INTERVAL)
    if outcome == ProcessOutcome.EXITED and group_alive(process.pid):
        # The leader is done but left children behind (daemons, watchers):
        # they are part of the worker and go with it.
        kill_group(process, grace=1.0)
    for drain in drains:
        drain.join(timeout=KILL_GRACE)
    _record_on_run(run_id, worker_pgid=None)
    stdout, stderr = drains[0].text(), (drains[1].text() if len(drains) > 1 else "")
    return ProcessResult(outcome, process.returncode, stdout, stderr, process.pid)


def _feed(pipe: IO[bytes], text: str) -> None:
    """Write the whole input and close the pipe (in a thread: a big prompt fills the pipe buffer)."""
    try:
        pipe.write(text.encode("utf-8"))
    except (BrokenPipeError, OSError):  # the process exited without reading it all
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


# --- the worker ------------------------------------------------------------------

# What the CLI says when it cannot work at all. Such a run is not a bad answer:
# retrying it burns the attempts and hides the cause, so the run ends at once
# (status "unavailable" here, `error` on the skill result) with the CLI's words.
_INFRASTRUCTURE = (
    (
        "not logged in",
        re.compile(
            r"not logged in|please run /login|invalid api key|authentication_error|"
            r"oauth token (has )?expired|credit balance is too low",
            re.I,
        ),
    ),
    (
        "rate-limited",
        re.compile(
            r"rate.?limit|usage limit|too many requests|\b429\b|overloaded_error|"
            r"\b529\b|limit reached",
            re.I,
        ),
    ),
    (
        "cannot reach its API",
        re.compile(
            r"ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|connection error|"
            r"unable to connect|network (error|is unreachable)|getaddrinfo",
            re.I,
        ),
    ),
)


def infrastructure_problem(text: str) -> str | None:
    """ "not logged in" / "rate-limited" / "cannot reach its API" when the CLI's output says so, else None."""
    for label, pattern in _INFRASTRUCTURE:
        if pattern.search(text or ""):
            return label
    return None


def parse_envelope(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        # Some CLI versions print log lines first; the envelope is the last line.
        for line in reversed(text.splitlines()):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            break
        else:
            return None
    if isinstance(value, list):  # stream-style output: the last "result" event
        value = next(
            (item for item in reversed(value) if isinstance(item, dict) and item.get("type") == "result"), None
        )
    return value if isinstance(value, dict) else None


def run_worker(
    *,
    prompt: str,
    schema: Mapping[str, Any],
    cwd: Path,
    model: str | None,
    allowed_tools: str,
    cancel_check: Callable[[], bool] | None = None,
    on_wait: Callable[[float], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    env_overrides: dict[str, str | None] | None = None,
) -> WorkerResult:
    """Run `claude -p` once and return what it did, never raising for worker faults.

    The prompt goes to the worker on stdin (never in argv, where `ps` shows it). `env_overrides`
    adjusts the worker's environment (e.g. the gateway variables for a `provider/name` model;
    see `supervisor.model_table.gateway_environment`).
    """
    argv = build_argv(schema=schema, allowed_tools=allowed_tools, model=model)
    started = time.monotonic()
    try:
        with worker_slot(on_wait):
            if cancel_check is not None and cancel_check():
                return WorkerResult(WorkerStatus.CANCELLED, message="cancelled before the worker started", argv=argv)
            process = run_process(
                argv,
                cwd=cwd,
                timeout=settings.SUPERVISOR_TIMEOUT,
                idle_timeout=settings.SUPERVISOR_IDLE_TIMEOUT,
                cancel_check=cancel_check,
                on_start=on_start,
                input_text=prompt,
                env=child_environment(worker=True),
                env_overrides=env_overrides,
            )
    except QueueFull as exc:
        return WorkerResult(WorkerStatus.ERROR, message=str(exc), argv=argv)
    except FileNotFoundError:
        return WorkerResult(
            WorkerStatus.ERROR,
            message=f"the worker binary {settings.CLAUDE_BINARY!r} was not found; install Claude Code or set CLAUDE_BINARY",
            argv=argv,
        )
    except PermissionError:
        return WorkerResult(
            WorkerStatus.ERROR, message=f"the worker binary {settings.CLAUDE_BINARY!r} is not executable", argv=argv
        )
    result = WorkerResult(
        WorkerStatus.OK,
        exit_code=process.exit_code,
        stdout=cap(process.stdout),
        stderr=cap(process.stderr),
        duration_ms=int((time.monotonic() - started) * 1000),
        pid=process.pid,
        argv=argv,
    )
    _judge_answer(result, process, schema)
    return result


def _judge_answer(result: WorkerResult, process: ProcessResult, schema: Mapping[str, Any]) -> None:
    """Set the result's status, message, envelope and report from how the process ended and what it printed."""
    if process.outcome == ProcessOutcome.TIMEOUT:
        result.status = WorkerStatus.TIMEOUT
        result.message = f"the worker ran past SUPERVISOR_TIMEOUT ({settings.SUPERVISOR_TIMEOUT} s) and was killed"
        return
    if process.outcome == ProcessOutcome.IDLE:
        result.status = WorkerStatus.TIMEOUT
        result.message = f"the worker printed nothing for SUPERVISOR_IDLE_TIMEOUT ({settings.SUPERVISOR_IDLE_TIMEOUT} s) and was killed"
        return
    if process.outcome == ProcessOutcome.CANCELLED:
        result.status, result.message = WorkerStatus.CANCELLED, "the call was cancelled; the worker was killed"
        return

    code, stdout, stderr = process.exit_code, process.stdout, process.stderr
    result.envelope = envelope = parse_envelope(stdout)
    if envelope is None:
        problem = infrastructure_problem(stdout + "\n" + stderr) if code != 0 else None
        _failed(
            result,
            problem,
            code,
            said=stderr or stdout,
            otherwise=f"the worker exited with code {code} without printing the JSON result",
        )
        return
    if envelope.get("is_error") or code != 0:
        detail = str(envelope.get("result") or envelope.get("subtype") or "")
        _failed(
            result,
            infrastructure_problem(f"{detail}\n{stderr}"),
            code,
            said=detail or stderr,
            otherwise=f"the worker reported an error (exit code {code}): {excerpt(detail, 500)}",
        )
        return
    structured = envelope.get("structured_output")
    try:
        result.report = parse_model_json(structured if isinstance(structured, dict) else envelope.get("result"), schema)
    except ModelJSONError as exc:
        result.status, result.report = WorkerStatus.ERROR, exc.data
        if exc.data is None:
            result.message = "the worker's answer had no structured_output and no JSON object in its result"
        else:
            result.message = f"the worker's answer {exc.problem}"


def _failed(
    result: WorkerResult, infrastructure: str | None, exit_code: int | None, *, said: str, otherwise: str
) -> None:
    """Unavailable, quoting what the CLI `said`, when it could not work at all (`infrastructure`); else an error."""
    if infrastructure is None:
        result.status, result.message = WorkerStatus.ERROR, otherwise
        return
    result.status = WorkerStatus.UNAVAILABLE
    result.message = (
        f"the worker could not work ({infrastructure}; exit code {exit_code}), so no attempt was made: "
        f"{excerpt(said.strip(), 500)}"
    )
