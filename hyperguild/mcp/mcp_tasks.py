"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 only).

A `tools/call` of a long tool from a client whose request declares the
extension answers at once with a task handle (`resultType: "task"`) when the
endpoint's `JobStore` runs the tool as a job (every long tool of
/mcp/supervisor and /mcp/routing: `supervisor.jobs`). The call is checked at
the door as a blocking call is, then handed to the app, which records it under
the task id and queues it (a `SkillRun` run by a django-q2 worker, with that
run's heartbeat and reaper). The job's record *is* the task: the engine keeps
no row and runs no thread for it, and `tasks/get` / `tasks/cancel` on any
replica read and mark that record, so a task outlives the replica that
accepted it. A long tool of an endpoint without a JobStore answers as a
blocking call: the engine runs no task of its own (one long call, one record).

A task lives `TASK_TTL` from its creation (`ttlMs` in every answer); after
that `tasks/get` says it is unknown (the run stays in the history). The handle
is bound to the caller's Authorization header (a digest of it), so a handle
alone does not let another caller read or cancel the task.

Without the extension nothing changes: the call blocks (and streams progress)
as before, on both revisions.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from mcp import types

from hyperguild.mcp.messages import McpResult
from hyperguild.mcp.registry import JobState, JobStore, Tool, ToolContext
from hyperguild.mcp.revision import MISSING_REQUIRED_CLIENT_CAPABILITY, TASKS_EXTENSION, Revision
from hyperguild.providers import add_usage

# The engine's Dispatcher and CallRecord (typed loosely: the engine imports this module, not the other way round).
Dispatcher = Any
CallRecord = Any

TASK_TTL = timedelta(hours=24)  # longer than any skill run's budget; documented in docs/mcp.md
POLL_INTERVAL_MS = 2000
WORKING, COMPLETED = "working", "completed"  # a job's task statuses that the answers depend on
MODERN_FIELDS = {"result_type", "ttl_ms", "cache_scope"}  # added by the envelope (engine.MODERN_RESULT_FIELDS)


def owner_digest(authorization: str) -> str:
    """Who may see a task: a digest of the Authorization header the call came with ("" when none)."""
    return hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()[:64]


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
        """A task, not a blocking call: the client declared the extension and the endpoint runs the tool as a job
        (its app's JobStore says so for its long tools)."""
        name, jobs = params.get("name"), self.endpoint.jobs
        return (
            isinstance(name, str) and jobs is not None and jobs.runs(name) and revision.has_extension(TASKS_EXTENSION)
        )

    # -- tools/call -> CreateTaskResult -------------------------------------------------

    def start(self, params: Mapping[str, Any], ctx: ToolContext, record: CallRecord, revision: Revision) -> McpResult:
        """Hand the call to the endpoint's jobs once it passed the door: a handle, or the refusal a blocking call
        gets (`should_start` said the jobs run it)."""
        jobs: JobStore | None = self.endpoint.jobs
        assert jobs is not None
        task_id = new_task_id()

        def start_job(tool: Tool, arguments: Any) -> McpResult:
            state = jobs.start(tool.name, arguments, ctx, task_id=task_id, owner=self.owner)
            return {"resultType": "task", **self._describe_job(state, record)}

        result: McpResult = self.dispatcher._tools_call(params, ctx, record, job=start_job)
        if result.get("resultType") == "task":
            record.extra["task"] = task_id
            record.status = "task"
        return result

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
        record.extra["task"] = job.task_id
        if method == "tasks/get":
            return self._describe_job(job, record)
        if method == "tasks/cancel" and job.status == WORKING:
            assert self.endpoint.jobs is not None
            self.endpoint.jobs.cancel(job.task_id, self.owner)
        return {}  # tasks/cancel is acknowledged; tasks/update too: these tasks never ask for input

    def _find_job(self, params: Mapping[str, Any]) -> JobState:
        """The job whose record is this task: the endpoint's jobs have one with the id, for this caller, not expired."""
        jobs, task_id = self.endpoint.jobs, task_id_of(params)
        job = jobs.find(task_id[:64], self.owner) if jobs is not None else None
        if job is None or job.created_at.timestamp() + TASK_TTL.total_seconds() < time.time():
            raise TaskError(-32602, f"Unknown or expired task: {task_id[:64]}")
        return job

    def _describe_job(self, job: JobState, record: CallRecord) -> McpResult:
        """The `Task` of a job, with the `tools/call` result the blocking call would have answered once it has one."""
        data = describe_fields(job.task_id, job.status, job.created_at, job.updated_at, job.message)
        tool = self.endpoint.tools.get(job.tool)
        if job.status == COMPLETED and job.error is not None:
            data["result"] = self.dispatcher._modern_envelope("tools/call", error_result(job.error))
        elif job.status == COMPLETED and job.result is not None and tool is not None:
            structured = tool.checked(job.result).model_dump(mode="json")
            if tool.reports_usage:
                add_usage(structured, [], job.requested_by)  # in place; the run's usage is in its result
            result = self.dispatcher.tool_result(tool, structured, record)
            data["result"] = self.dispatcher._modern_envelope("tools/call", result)
        return data


def new_task_id() -> str:
    """An unguessable task handle (the job's record keeps it)."""
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
