"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 only).

A `tools/call` of a tool declared `long_running` from a client whose request
declares the extension answers at once with a task handle (`resultType:
"task"`). Where the call then runs depends on the tool:

- **A job** (the endpoint's `JobStore` `runs` it: every long tool of
  /mcp/supervisor and /mcp/routing). The call is checked at the door as a
  blocking call is, then handed to the app, which records it under the task
  id and queues it (a `SkillRun` run by a django-q2 worker, with that run's
  heartbeat and reaper: `supervisor.jobs`). The job's record *is* the task:
  the engine keeps no row and runs no thread for it, and `tasks/get` /
  `tasks/cancel` on any replica read and mark that record, so a task outlives
  the replica that accepted it.
- **A long tool of an endpoint without a JobStore** (no endpoint of the
  service: the engine's self-test and conformance fixtures) runs in a thread
  of the replica that accepted the call, exactly as the blocking call would
  run it, and its progress and final result go to the task's row
  (`hyperguild.models.McpTask`). Any replica answers `tasks/get` from that row.
  `tasks/cancel` on any replica marks the row and records a cancellation the
  way `notifications/cancelled` does, so the running replica's cancellation
  watcher (`hyperguild.mcp.cancellation`) sets the call's cancel flag. The
  running replica marks the row alive every `ALIVE_EVERY` seconds; a task with
  no sign of life for `ALIVE_TIMEOUT` is answered `failed` (that replica
  stopped: such a task dies with it).

A task lives `TASK_TTL` from its creation (`ttlMs` in every answer); after
that `tasks/get` says it is unknown (and the heartbeat task deletes its row,
if it has one). The handle is bound to the caller's Authorization header (a
digest of it), so a handle alone does not let another caller read or cancel
the task.

Without the extension nothing changes: the call blocks (and streams progress)
as before, on both revisions.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import connections
from mcp import types

from hyperguild.actions import (
    do_create_mcp_task,
    do_finish_mcp_task,
    do_record_mcp_task_alive,
    do_report_mcp_task_progress,
    do_request_mcp_task_cancel,
)
from hyperguild.mcp.cancellation import request_id_key
from hyperguild.mcp.messages import McpResult
from hyperguild.mcp.registry import JobState, JobStore, Tool, ToolContext
from hyperguild.mcp.revision import MISSING_REQUIRED_CLIENT_CAPABILITY, TASKS_EXTENSION, Revision
from hyperguild.models import McpTask
from hyperguild.usage import add_usage

# The engine's Dispatcher and CallRecord (typed loosely: the engine imports this module, not the other way round).
Dispatcher = Any
CallRecord = Any

logger = logging.getLogger("hyperguild.mcp")

TASK_TTL = timedelta(hours=24)  # longer than any skill run's budget; documented in docs/mcp.md
POLL_INTERVAL_MS = 2000
PROGRESS_WRITE_EVERY = 1.0  # seconds between progress writes to the task's row
ALIVE_EVERY = 10.0  # seconds between the running replica's signs of life on the task's row
ALIVE_TIMEOUT = timedelta(seconds=60)  # no sign of life for this long: the replica running the task is gone
MODERN_FIELDS = {"result_type", "ttl_ms", "cache_scope"}  # added by the envelope (engine.MODERN_RESULT_FIELDS)
TASK_CALLER = "task"  # the cancellation scope of task-run calls: the task id alone identifies them


def owner_digest(authorization: str) -> str:
    """Who may see a task: a digest of the Authorization header the call came with ("" when none)."""
    return hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()[:64]


def cancel_key(task_id: str) -> str:
    """The request key a task's call runs under, for the cross-replica cancellation records."""
    return request_id_key(f"task:{task_id}", TASK_CALLER)


class TaskError(Exception):
    """A tasks/* request the engine answers with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Tasks:
    """The extension as one endpoint's dispatcher serves it."""

    def __init__(self, dispatcher: Dispatcher, owner: str):
        self.dispatcher = dispatcher
        self.endpoint = dispatcher.endpoint
        self.owner = owner

    def should_start(self, params: Mapping[str, Any], revision: Revision) -> bool:
        """A task, not a blocking call: the client declared the extension and the tool may take minutes."""
        tool = self.endpoint.tools.get(params.get("name")) if isinstance(params.get("name"), str) else None
        return tool is not None and tool.long_running and revision.has_extension(TASKS_EXTENSION)

    # -- tools/call -> CreateTaskResult -------------------------------------------------

    def start(self, params: Mapping[str, Any], ctx: ToolContext, record: CallRecord, revision: Revision) -> McpResult:
        jobs = self.endpoint.jobs
        if jobs is not None and jobs.runs(params["name"]):
            return self._start_job(jobs, params, ctx, record)
        record.tool = params["name"]
        task = do_create_mcp_task(endpoint=self.endpoint.name, owner=self.owner, tool=params["name"], ttl=TASK_TTL)
        record.extra["task"] = task.task_id
        record.status = "task"
        task_record = type(record)(method="tools/call", tool=params["name"], revision=revision.version)
        progress = _ProgressWriter(task.pk)
        task_ctx = ToolContext(
            endpoint=self.endpoint.name,
            request_id=f"task:{task.task_id}",
            progress_token=f"task:{task.task_id}",
            emit=progress.emit,
            client=dict(revision.client_capabilities),
            caller=TASK_CALLER,
            identity=ctx.identity,  # the same permission check and attribution as the blocking call
        )
        thread = threading.Thread(
            target=self._run,
            args=(task, params, task_ctx, task_record, revision),
            name=f"mcp-task-{self.endpoint.name}-{task.task_id[:8]}",
            daemon=True,
        )
        thread.start()
        return {"resultType": "task", **describe(task)}

    def _start_job(self, jobs: JobStore, params: Mapping[str, Any], ctx: ToolContext, record: CallRecord) -> McpResult:
        """Hand the call to its app's jobs once it passed the door: a handle, or the refusal a blocking call gets."""
        task_id = new_task_id()

        def start(tool: Tool, arguments: Any) -> McpResult:
            state = jobs.start(tool.name, arguments, ctx, task_id=task_id, owner=self.owner)
            return {"resultType": "task", **self._describe_job(state, record)}

        result: McpResult = self.dispatcher._tools_call(params, ctx, record, job=start)
        if result.get("resultType") == "task":
            record.extra["task"] = task_id
            record.status = "task"
        return result

    def _run(
        self, task: McpTask, params: Mapping[str, Any], ctx: ToolContext, record: CallRecord, revision: Revision
    ) -> None:
        started = time.monotonic()
        finished = threading.Event()
        threading.Thread(
            target=_keep_alive, args=(task.pk, finished), name=f"{threading.current_thread().name}-alive", daemon=True
        ).start()
        try:
            try:
                result = self.dispatcher._tools_call(params, ctx, record)
                result = self.dispatcher._modern_envelope("tools/call", result)
                if ctx.is_cancelled() or record.status == "cancelled":
                    do_finish_mcp_task(task.pk, status=McpTask.CANCELLED, message="cancelled by the client")
                else:
                    do_finish_mcp_task(
                        task.pk,
                        status=McpTask.COMPLETED,
                        result=result,
                        message="failed" if result.get("isError") else "done",
                    )
            except Exception:  # the task must end whatever happens
                incident = uuid.uuid4().hex[:16]
                logger.exception(
                    "task %s (%s on /mcp/%s, revision %s) raised (request id %s)",
                    task.task_id,
                    record.tool,
                    self.endpoint.name,
                    revision.version,
                    incident,
                )
                record.status = "internal_error"
                error = {
                    "code": -32603,
                    "message": f"the task failed; the server log has the detail (request id {incident})",
                }
                do_finish_mcp_task(task.pk, status=McpTask.FAILED, error=error, message="internal error")
        finally:
            finished.set()
            connections.close_all()
            logger.info(
                "mcp task %s",
                {
                    "revision": revision.version,
                    "endpoint": self.endpoint.name,
                    "task": task.task_id,
                    "tool": record.tool,
                    "status": record.status,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                },
            )

    # -- tasks/get, tasks/update, tasks/cancel --------------------------------------------

    def handle(
        self, method: str, params: Mapping[str, Any], ctx: ToolContext, record: CallRecord, revision: Revision
    ) -> McpResult:
        if not revision.has_extension(TASKS_EXTENSION):
            raise TaskError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{method} needs the {TASKS_EXTENSION} extension in the request's clientCapabilities",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        if method not in ("tasks/get", "tasks/update", "tasks/cancel"):
            raise TaskError(-32601, f"Method not found: {method}")
        job = self._find_job(params)
        if job is not None:
            record.extra["task"] = job.task_id
            if method == "tasks/get":
                return self._describe_job(job, record)
            if method == "tasks/cancel" and job.status == McpTask.WORKING:
                assert self.endpoint.jobs is not None
                self.endpoint.jobs.cancel(job.task_id, self.owner)
            return {}
        task = self._find(params)
        record.extra["task"] = task.task_id
        if method == "tasks/get":
            return describe(task)
        if method == "tasks/cancel":
            if not task.is_finished:
                do_request_mcp_task_cancel(task, cancel_key(task.task_id))
            return {}
        return {}  # tasks/update: these tasks never ask for input, so every response is one to ignore

    def _find_job(self, params: Mapping[str, Any]) -> JobState | None:
        """The job whose record is this task, if the endpoint runs jobs and one has the id (and is not expired)."""
        jobs, task_id = self.endpoint.jobs, task_id_of(params)
        job = jobs.find(task_id[:64], self.owner) if jobs is not None else None
        if job is not None and job.created_at.timestamp() + TASK_TTL.total_seconds() < time.time():
            raise TaskError(-32602, f"Unknown or expired task: {task_id[:64]}")
        return job

    def _describe_job(self, job: JobState, record: CallRecord) -> McpResult:
        """The `Task` of a job, with the `tools/call` result the blocking call would have answered once it has one."""
        data = describe_fields(job.task_id, job.status, job.created_at, job.updated_at, job.message)
        tool = self.endpoint.tools.get(job.tool)
        if job.status == McpTask.COMPLETED and job.error is not None:
            data["result"] = self.dispatcher._modern_envelope("tools/call", error_result(job.error))
        elif job.status == McpTask.COMPLETED and job.result is not None and tool is not None:
            structured = tool.checked(job.result).model_dump(mode="json")
            if tool.reports_usage:
                add_usage(structured, [], job.requested_by)  # in place; the run's usage is in its result
            result = self.dispatcher.tool_result(tool, structured, record)
            data["result"] = self.dispatcher._modern_envelope("tools/call", result)
        return data

    def _find(self, params: Mapping[str, Any]) -> McpTask:
        task_id = task_id_of(params)
        task = McpTask.objects.filter(task_id=task_id[:64], endpoint=self.endpoint.name, owner=self.owner).first()
        if task is None or task.expires_at.timestamp() < time.time():
            raise TaskError(-32602, f"Unknown or expired task: {task_id[:64]}")
        if not task.is_finished and task.alive_at.timestamp() < time.time() - ALIVE_TIMEOUT.total_seconds():
            # The replica that ran it stopped: a tool run in the web process dies with its replica.
            error = {"code": -32603, "message": f"the server process running this task ({task.host}) stopped"}
            do_finish_mcp_task(task.pk, status=McpTask.FAILED, error=error, message="the server running it stopped")
            task.refresh_from_db()
        return task


def new_task_id() -> str:
    """An unguessable task handle (a job's record keeps it, as an McpTask row does)."""
    return secrets.token_urlsafe(24)


def task_id_of(params: Mapping[str, Any]) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise TaskError(-32602, "params.taskId (a string) is required")
    return task_id


def describe_fields(task_id: str, status: str, created: datetime, updated: datetime, message: str) -> McpResult:
    """The fields every `Task` answer carries."""
    data: McpResult = {
        "taskId": task_id,
        "status": status,
        "createdAt": created.isoformat().replace("+00:00", "Z"),
        "lastUpdatedAt": updated.isoformat().replace("+00:00", "Z"),
        "ttlMs": int(TASK_TTL.total_seconds() * 1000),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if message:
        data["statusMessage"] = message
    return data


def error_result(text: str) -> McpResult:
    """The `tools/call` error result with `text`, as the engine answers a tool's error (`engine.tool_error_result`)."""
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    return cast(McpResult, result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=MODERN_FIELDS))


def describe(task: McpTask) -> McpResult:
    """The `Task` (with its result or error once it has one) as tasks/get answers it."""
    data = describe_fields(task.task_id, task.status, task.created_at, task.updated_at, task.status_message)
    if task.status == McpTask.COMPLETED and task.result is not None:
        data["result"] = task.result
    if task.status == McpTask.FAILED and task.error is not None:
        data["error"] = task.error
    return data


def _keep_alive(task_pk: int, finished: threading.Event) -> None:
    """While the task runs, show every replica that the one running it lives."""
    try:
        while not finished.wait(ALIVE_EVERY):
            try:
                do_record_mcp_task_alive(task_pk)
            except Exception:  # a database hiccup; the next beat may get through
                logger.exception("could not record that task %s is alive", task_pk)
    finally:
        connections.close_all()


class _ProgressWriter:
    """Turns the tool's progress notifications into the task's status message (at most one write a second)."""

    def __init__(self, task_pk: int):
        self.task_pk = task_pk
        self.last_write = 0.0

    def emit(self, notification: Mapping[str, Any]) -> None:
        params = notification.get("params") or {}
        message = params.get("message")
        now = time.monotonic()
        if not message or now - self.last_write < PROGRESS_WRITE_EVERY:
            return
        self.last_write = now
        try:
            do_report_mcp_task_progress(self.task_pk, str(message))
        except Exception:  # progress is best effort; the result is what counts
            logger.exception("could not record task progress")
