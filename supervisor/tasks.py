"""django-q2 tasks of the supervisor."""

from __future__ import annotations

import logging
import time

from supervisor.actions import do_claim_skill_run, do_finish_skill_run, do_set_run_progress
from supervisor.models import SkillRun
from supervisor.runners import run_worker_skill
from supervisor.skills import build_result

logger = logging.getLogger("supervisor")


def run_skill(run_id: int) -> str:
    """Run one queued SkillRun to the end (worker + verification) and record it."""
    run = do_claim_skill_run(run_id)
    if run is None:
        return "not claimed"
    started = time.monotonic()

    def progress(text: str) -> None:
        do_set_run_progress(run_id, text)

    def cancel_requested() -> bool:
        return SkillRun.objects.filter(pk=run_id, cancel_requested=True).exists()

    try:
        result, ctx = run_worker_skill(run, progress, cancel_requested)
        log = ctx.attempt_log
    except Exception as exc:
        logger.exception("skill run %s failed", run_id)
        result, log = build_result(run.skill, run_id=run_id, message=f"internal error: {type(exc).__name__}: {exc}"), []
    result["duration_ms"] = int((time.monotonic() - started) * 1000)
    finished = do_finish_skill_run(run_id, result, attempt_log=log)
    return finished.status
