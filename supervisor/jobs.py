"""The worker skills as MCP task jobs: a skill started as a task is one SkillRun, and the run is the task.

A task-augmented `tools/call` of a worker skill (`tools.WORKER_SKILLS`) is checked
at the engine's door, then `start` records the run under the task's handle
(`SkillRun.task_id`, bound to the caller by `task_owner`) and queues it on
django-q2, as a blocking call does; nothing in the web process waits for it.
`tasks/get` on any replica reads the run (`find`), and `tasks/cancel` marks it
(`cancel`) for its executor, which polls the flag in the worker process. The
run's liveness is its own: the worker's heartbeat, and the reaper
(`supervisor.reaper`), which `find` also asks about a running run, as a
blocking caller's wait does.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from hyperguild.mcp.registry import JobState, ToolContext
from supervisor import reaper
from supervisor.actions import do_request_cancel
from supervisor.models import SkillRun
from supervisor.skills import SkillInput
from supervisor.tools import WORKER_SKILLS, run_outcome, start_worker_skill

# Task statuses (the extension's words) of a run's statuses.
WORKING, COMPLETED, CANCELLED = "working", "completed", "cancelled"


class SkillRunJobs:
    """The supervisor endpoint's JobStore (hyperguild.mcp.registry): worker skills run as SkillRuns."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint

    def runs(self, tool: str) -> bool:
        return tool in WORKER_SKILLS

    def start(self, tool: str, arguments: BaseModel, ctx: ToolContext, *, task_id: str, owner: str) -> JobState:
        assert isinstance(arguments, SkillInput)
        run = start_worker_skill(tool, arguments, ctx, task_id=task_id, task_owner=owner)
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
        do_request_cancel(run.pk)  # a queued run ends now; a running one's executor kills its worker's group
        reaper.reap_if_orphaned(run.pk)  # …unless its worker process is gone: then its group is killed here

    def _run(self, task_id: str, owner: str) -> SkillRun | None:
        return (
            SkillRun.objects.select_related("requested_by")
            .filter(task_id=task_id, task_owner=owner, endpoint=self.endpoint)
            .first()
        )

    def _state(self, run: SkillRun) -> JobState:
        assert run.task_id is not None
        result = None
        if run.is_finished and (run.cancel_requested or run.status == SkillRun.Status.CANCELLED):
            # As a blocking call that was cancelled answers: cancelled, even if the run got to its verdict first.
            status, message = CANCELLED, "cancelled by the client"
        elif run.is_finished:
            status, message = COMPLETED, "done"
            result = run_outcome(run)
        else:
            status, message = WORKING, f"{run.skill}: {run.progress or run.status}"
        return JobState(
            task_id=run.task_id,
            tool=run.tool or run.skill,
            status=status,
            message=message,
            created_at=run.created_at,
            updated_at=_last_change(run),
            result=result,
            requested_by=run.requested_by,
        )


def _last_change(run: SkillRun) -> datetime:
    return max(moment for moment in (run.created_at, run.started_at, run.heartbeat_at, run.finished_at) if moment)
