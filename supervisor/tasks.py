"""django-q2 tasks of the supervisor."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

import psycopg
from django.conf import settings
from django.db import OperationalError, connection

from hyperguild.lib.model_calls import model_call_context
from supervisor import executor, jobs, reaper
from supervisor.actions import (
    do_beat_skill_run,
    do_claim_skill_run,
    do_finish_skill_run,
    do_finish_tool_job,
    do_set_run_progress,
)
from supervisor.models import SkillRun
from supervisor.run_events import RunListener
from supervisor.runners import run_worker_skill
from supervisor.skills import build_result

logger = logging.getLogger("supervisor")

STOP_SLICE = 0.25  # seconds: the longest a run's heartbeat listens before it looks whether its run has ended


def schedules() -> list[tuple[str, str, int]]:
    return [("supervisor-reaper", "supervisor.tasks.reap_runs", settings.SUPERVISOR_REAPER_SECONDS)]


def reap_runs() -> int:
    """Scheduled: end the runs whose owner died (see supervisor/reaper.py)."""
    return len(reaper.reap_orphaned_runs())


class _Heartbeat(threading.Thread):
    """Beats for the run every SUPERVISOR_HEARTBEAT_SECONDS while this process owns it.

    Between beats it listens on the run's channel (supervisor.run_events): a cancel notification calls
    `on_cancel` at once (a tool job's handler watches its context's event, not the row). Without the
    database's notifications (an outage) it goes on beating on a timer: the beat is what the reaper reads."""

    def __init__(self, run_id: int, on_cancel: Callable[[], None] | None = None):
        super().__init__(daemon=True, name=f"heartbeat-{run_id}")
        self.run_id = run_id
        self.on_cancel = on_cancel
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            try:
                self._listen_and_beat()
            except (OperationalError, psycopg.Error):  # no notifications: keep beating on a timer
                logger.warning("run %s: listening for its cancellation failed; beating on a timer", self.run_id)
                while not self.stopped.wait(settings.SUPERVISOR_HEARTBEAT_SECONDS):
                    self._beat()
        finally:
            connection.close()

    def _listen_and_beat(self) -> None:
        with RunListener(self.run_id) as listener:
            # A cancellation may have come between the claim and the LISTEN: read the flag once, now.
            if SkillRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                self._cancelled()
            next_beat = time.monotonic() + settings.SUPERVISOR_HEARTBEAT_SECONDS
            while not self.stopped.is_set():
                # In slices, so that `stop` is heard soon: waiting on the socket reads no row.
                changes = listener.wait(min(STOP_SLICE, max(0.0, next_beat - time.monotonic())))
                if any(change.cancel_requested for change in changes):
                    self._cancelled()
                if time.monotonic() >= next_beat and not self.stopped.is_set():
                    self._beat()
                    next_beat = time.monotonic() + settings.SUPERVISOR_HEARTBEAT_SECONDS

    def _cancelled(self) -> None:
        if self.on_cancel is not None:
            self.on_cancel()

    def _beat(self) -> None:
        try:
            do_beat_skill_run(self.run_id)
        except Exception:  # noqa: BLE001 - a database blip: beat again next time
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=settings.SUPERVISOR_HEARTBEAT_SECONDS + 5)


def run_skill(run_id: int) -> str:
    """Run one queued SkillRun to the end (worker + verification) and record it."""
    run = do_claim_skill_run(run_id, host=reaper.HOST, pid=os.getpid())
    if run is None:
        return "not claimed"
    started = time.monotonic()
    heartbeat = _Heartbeat(run_id)
    heartbeat.start()
    owner = executor.current_run_id.set(run_id)

    def progress(text: str) -> None:
        do_set_run_progress(run_id, text)

    def cancel_requested() -> bool:
        return SkillRun.objects.filter(pk=run_id, cancel_requested=True).exists()

    try:
        try:
            with model_call_context(
                requested_by=run.requested_by,
                service="supervisor worker",
                skill=run.skill,
                session_id=run.session_id,
                project=run.project_root,
            ) as calls:
                result, ctx = run_worker_skill(run, progress, cancel_requested)
            log, change = ctx.attempt_log, ctx.change
        except Exception as exc:
            logger.exception("skill run %s failed", run_id)
            result, log, change = (
                dict(build_result(run.skill, run_id=run_id, message=f"internal error: {type(exc).__name__}: {exc}")),
                [],
                None,
            )
        result["duration_ms"] = int((time.monotonic() - started) * 1000)
        finished = do_finish_skill_run(run_id, result, attempt_log=log, change=change, model_calls=calls.recorded)
    finally:
        executor.current_run_id.reset(owner)
        heartbeat.stop()
    return finished.status


def run_tool_job(run_id: int) -> str:
    """Run one queued tool job (a long tool started as an MCP task: supervisor.jobs) to the end and record it."""
    run = do_claim_skill_run(run_id, host=reaper.HOST, pid=os.getpid())
    if run is None:
        return "not claimed"
    ctx = jobs.job_context(run)
    heartbeat = _Heartbeat(run_id, on_cancel=ctx.cancelled.set)
    heartbeat.start()
    try:
        end = jobs.run_tool_job_handler(run, ctx)
        finished = do_finish_tool_job(
            run_id, status=end.status, result=end.result, message=end.message, model_calls=end.model_calls
        )
    finally:
        heartbeat.stop()
    return finished.status
