"""django-q2 tasks of the supervisor."""

from __future__ import annotations

import logging
import os
import threading
import time

from django.conf import settings
from django.db import connection

from hyperguild.lib.model_calls import model_call_context
from supervisor import executor, reaper
from supervisor.actions import do_beat_skill_run, do_claim_skill_run, do_finish_skill_run, do_set_run_progress
from supervisor.models import SkillRun
from supervisor.runners import run_worker_skill
from supervisor.skills import build_result

logger = logging.getLogger("supervisor")


def schedules() -> list[tuple[str, str, int]]:
    return [("supervisor-reaper", "supervisor.tasks.reap_runs", settings.SUPERVISOR_REAPER_SECONDS)]


def reap_runs() -> int:
    """Scheduled: end the runs whose owner died (see supervisor/reaper.py)."""
    return len(reaper.reap_orphaned_runs())


class _Heartbeat(threading.Thread):
    """Beats for the run every SUPERVISOR_HEARTBEAT_SECONDS while this process owns it."""

    def __init__(self, run_id: int):
        super().__init__(daemon=True, name=f"heartbeat-{run_id}")
        self.run_id = run_id
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.SUPERVISOR_HEARTBEAT_SECONDS):
                try:
                    do_beat_skill_run(self.run_id)
                except Exception:  # noqa: BLE001 - a database blip: beat again next time
                    connection.close()
        finally:
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
