"""Long tools as MCP task jobs: a long call started as a task is one SkillRun, and the run is the task.

A task-augmented `tools/call` of a long tool (`long_running`) on an endpoint
whose `jobs` is a `SkillRunJobs` is checked at the engine's door, then `start`
records the run under the task's handle (`SkillRun.task_id`, bound to the
caller by `task_owner`) and queues it on django-q2; nothing in the web process
runs or waits for it. Two kinds of run:

- **a worker skill** (`tools.WORKER_SKILLS` on /mcp/supervisor: tdd, review,
  debug…): recorded and queued as its blocking call is (`start_worker_skill`),
  run by `supervisor.tasks.run_skill`;
- **any other long tool** (the routed skills, the retrospective, the trainer,
  an endpoint's own long tools): a *tool job* (`start_tool_job`), whose
  handler `supervisor.tasks.run_tool_job` runs in the worker with a context
  of its own (`JobContext`): the caller's identity as it was at the door,
  progress written to the run, and a cancel flag the worker's heartbeat sets
  when the run's cancel notification arrives (`supervisor.run_events`).

`tasks/get` on any replica reads the run (`find`), `tasks/cancel` marks it
(`cancel`). The run's liveness is its own: the worker's heartbeat, and the
reaper (`supervisor.reaper`), which `find` also asks about a running run. So
a task outlives the replica that accepted it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from django.db import OperationalError, transaction
from pydantic import BaseModel

from hyperguild.lib.model_calls import model_call_context
from hyperguild.mcp.registry import JobState, Tool, ToolCancelled, ToolContext, ToolError, get_endpoint
from hyperguild.providers import Identity
from ledger.usage import UsageReport, summed_usage
from supervisor import reaper
from supervisor.actions import do_create_skill_run, do_request_cancel, do_set_run_progress
from supervisor.models import SkillRun
from supervisor.skills import SkillInput, Verdict
from supervisor.tools import WORKER_SKILLS, enqueue_run, run_outcome, start_worker_skill

logger = logging.getLogger("supervisor")

# Task statuses (the extension's words) of a run's statuses.
WORKING, COMPLETED, CANCELLED = "working", "completed", "cancelled"
TOOL_JOB_TASK = "supervisor.tasks.run_tool_job"
PROGRESS_WRITE_EVERY = 1.0  # seconds between a tool job's progress writes (each one also wakes its waiters)


def is_worker_skill(run: SkillRun) -> bool:
    """A run of a `claude` worker skill (`run_skill`), not a tool job (`run_tool_job`)."""
    return run.endpoint == SkillRun.Endpoint.SUPERVISOR and (run.tool or run.skill) in WORKER_SKILLS


class SkillRunJobs:
    """An endpoint's JobStore (hyperguild.mcp.registry): its long tools run as SkillRuns in the worker."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint

    def _tool(self, name: str) -> Tool | None:
        return get_endpoint(self.endpoint).tools.get(name)

    def runs(self, tool: str) -> bool:
        found = self._tool(tool)
        return found is not None and found.long_running

    def start(self, tool: str, arguments: BaseModel, ctx: ToolContext, *, task_id: str, owner: str) -> JobState:
        if self.endpoint == SkillRun.Endpoint.SUPERVISOR and tool in WORKER_SKILLS:
            assert isinstance(arguments, SkillInput)
            run = start_worker_skill(tool, arguments, ctx, task_id=task_id, task_owner=owner)
        else:
            run = start_tool_job(self.endpoint, tool, arguments, ctx, task_id=task_id, task_owner=owner)
        return self._state(run)

    def find(self, task_id: str, owner: str) -> JobState | None:
        run = self._run(task_id, owner)
        if run is None:
            return None
        if run.status == SkillRun.Status.RUNNING and reaper.reap_run(run) is not None:
            # Its worker process died (kill -9, OOM): the run ends now, not at the next scheduled reaping.
            run.refresh_from_db()
        return self._state(run)

    def cancel(self, task_id: str, owner: str) -> None:
        run = self._run(task_id, owner)
        if run is None or run.is_finished:
            return
        do_request_cancel(run.pk)  # a queued run ends now; a running one is told through its notification
        reaper.reap_if_orphaned(run.pk)  # …unless its worker process is gone: then its group is killed here

    def _run(self, task_id: str, owner: str) -> SkillRun | None:
        return (
            SkillRun.objects.select_related("requested_by")
            .filter(task_id=task_id, task_owner=owner, endpoint=self.endpoint)
            .first()
        )

    def _state(self, run: SkillRun) -> JobState:
        assert run.task_id is not None
        result: BaseModel | None = None
        error = None
        if run.is_finished and (run.cancel_requested or run.status == SkillRun.Status.CANCELLED):
            # As a blocking call that was cancelled answers: cancelled, even if the run got to its verdict first.
            status, message = CANCELLED, "cancelled by the client"
        elif run.is_finished:
            status, message = COMPLETED, "done"
            if is_worker_skill(run):
                result = run_outcome(run)
            else:
                result, error = tool_job_outcome(run, self._tool(run.tool))
                message = "failed" if error is not None else message
        else:
            status, message = WORKING, f"{run.tool or run.skill}: {run.progress or run.status}"
        return JobState(
            task_id=run.task_id,
            tool=run.tool or run.skill,
            status=status,
            message=message,
            created_at=run.created_at,
            updated_at=_last_change(run),
            result=result,
            error=error,
            requested_by=run.requested_by,
        )


def _last_change(run: SkillRun) -> datetime:
    return max(moment for moment in (run.created_at, run.started_at, run.heartbeat_at, run.finished_at) if moment)


# --- tool jobs: any long tool's handler, run in the worker --------------------------------------


class StoredCaller(TypedDict):
    """`SkillRun.caller` as the database keeps it."""

    scopes: list[str]
    via: str
    credential: str


@dataclass(frozen=True)
class CallerRecord:
    """The credential behind a tool job's call, as the run keeps it (`SkillRun.caller`); the person is the run's."""

    scopes: tuple[str, ...]
    via: str
    credential: str

    @classmethod
    def of(cls, identity: Identity | None) -> CallerRecord | None:
        if identity is None:
            return None
        return cls(scopes=tuple(sorted(identity.scopes)), via=identity.via, credential=identity.credential)

    def stored(self) -> StoredCaller:
        return {"scopes": list(self.scopes), "via": self.via, "credential": self.credential}

    @classmethod
    def read(cls, stored: Mapping[str, Any] | None) -> CallerRecord | None:
        if not stored:
            return None
        return cls(
            scopes=tuple(str(scope) for scope in stored.get("scopes") or ()),
            via=str(stored.get("via") or ""),
            credential=str(stored.get("credential") or ""),
        )

    def identity(self, user: Any) -> Identity:
        return Identity(user=user, scopes=frozenset(self.scopes), via=self.via, credential=self.credential)


def start_tool_job(
    endpoint: str, tool: str, arguments: BaseModel, ctx: ToolContext, *, task_id: str, task_owner: str
) -> SkillRun:
    """Record a long tool's call (checked at the door) as a queued run under the task's handle, and queue it."""
    # The arguments as given (what was not given stays out), as JSON: the worker parses them as the door did.
    values = arguments.model_dump(mode="json", exclude_unset=True)
    caller = CallerRecord.of(ctx.identity)
    run = do_create_skill_run(
        skill=tool,
        tool=tool,
        arguments=values,
        endpoint=endpoint,
        session_id=str(values.get("session_id") or "")[:200],
        requested_by=ctx.actor,
        task_id=task_id,
        task_owner=task_owner,
        caller=caller.stored() if caller is not None else None,
    )
    transaction.on_commit(lambda: enqueue_run(run.pk, task=TOOL_JOB_TASK))
    return run


class JobContext(ToolContext):
    """A tool job's context in the worker: its progress goes to the run (at most one write a second) and its
    `cancelled` event is set by the worker's heartbeat when the run's cancel notification arrives."""

    def __init__(self, run: SkillRun, identity: Identity | None):
        super().__init__(
            endpoint=run.endpoint,
            request_id=f"run:{run.pk}",
            progress_token=f"run:{run.pk}",
            emit=self._write_progress,
            identity=identity,
        )
        self.run_id = run.pk
        self._last_write = 0.0

    def _write_progress(self, notification: dict[str, Any]) -> None:
        params = notification.get("params") or {}
        message = params.get("message")
        now = time.monotonic()
        if not message or now - self._last_write < PROGRESS_WRITE_EVERY:
            return
        self._last_write = now
        try:
            do_set_run_progress(self.run_id, str(message))
        except OperationalError:  # progress is best effort; the result is what counts
            logger.exception("could not record the progress of run %s", self.run_id)


@dataclass(frozen=True)
class ToolJobEnd:
    """How a tool job's handler ended: its structured result, or the error text its blocking call would answer."""

    status: str
    result: dict[str, Any] | None
    message: str
    model_calls: list[int]


def job_context(run: SkillRun) -> JobContext:
    caller = CallerRecord.read(run.caller)
    return JobContext(run, caller.identity(run.requested_by) if caller is not None else None)


def run_tool_job_handler(run: SkillRun, ctx: JobContext) -> ToolJobEnd:
    """Run the job's tool on its arguments as the engine runs a blocking call, and say how it ended.

    The errors are answered as the engine answers them (a ToolError's message and data, a domain error's text,
    an unexpected exception as a message naming the log's request id)."""
    endpoint = get_endpoint(run.endpoint)
    tool = endpoint.tools.get(run.tool)
    if tool is None:
        return ToolJobEnd(SkillRun.Status.ERROR, None, f"Unknown tool: {run.tool} on /mcp/{run.endpoint}", [])
    arguments = dict(run.arguments or {})
    with model_call_context(
        requested_by=run.requested_by,
        service=f"mcp/{endpoint.name}",
        skill=tool.name,
        session_id=str(arguments.get(tool.session_field) or "")[:200] if tool.session_field else "",
        project=str(arguments.get(tool.project_field) or "") if tool.project_field else "",
    ) as calls:
        try:
            ctx.check_cancelled()
            structured = tool.call(arguments, ctx).model_dump(mode="json")
        except ToolCancelled as exc:
            return ToolJobEnd(SkillRun.Status.CANCELLED, None, exc.message, list(calls.recorded))
        except ToolError as exc:
            return ToolJobEnd(SkillRun.Status.ERROR, None, _error_text(exc.message, exc.data), list(calls.recorded))
        except endpoint.domain_errors as exc:
            text = _error_text(str(exc), getattr(exc, "data", None))
            return ToolJobEnd(SkillRun.Status.ERROR, None, text, list(calls.recorded))
        except Exception as exc:  # noqa: BLE001 - the job must end whatever its tool raises
            incident = uuid.uuid4().hex[:16]
            logger.exception(
                "tool job %s (%s on /mcp/%s) raised (request id %s)", run.pk, tool.name, endpoint.name, incident
            )
            text = f"{tool.name} failed unexpectedly ({type(exc).__name__}); the server log has the detail (request id {incident})"
            return ToolJobEnd(SkillRun.Status.ERROR, None, text, list(calls.recorded))
    return ToolJobEnd(
        _verdict_of(structured), structured, str(structured.get("message") or "done")[:2000], list(calls.recorded)
    )


def tool_job_outcome(run: SkillRun, tool: Tool | None) -> tuple[BaseModel | None, str | None]:
    """A finished tool job's answer: (its tool's result model, None) or (None, the error its call answers)."""
    if run.result is None or tool is None:
        return None, run.message or "the run left no result"
    result = tool.models[1].model_validate(run.result)
    if isinstance(result, UsageReport) and result.usage is None:
        # Its model calls were made by the worker that ran it, and linked to the run.
        result.usage = summed_usage(list(run.model_calls.values_list("pk", flat=True)))
    return result, None


def _verdict_of(structured: Mapping[str, Any]) -> str:
    """The run's status of a tool's result: its verdict when it has one (a skill's), else pass (it answered)."""
    status = structured.get("status")
    return str(status) if status in {verdict.value for verdict in Verdict} else SkillRun.Status.PASS


def _error_text(message: str, data: Any) -> str:
    """The text of the error result the engine answers (`engine.tool_error_result`)."""
    return message if not data else f"{message}\n{json.dumps(data, ensure_ascii=False)}"
