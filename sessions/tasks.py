"""django-q2 tasks of the sessions app (small functions that take ids and call the logic)."""

from __future__ import annotations

import logging

from hyperguild import budgets
from hyperguild.lib.llm import get_llm_client
from sessions.actions import do_record_replay
from sessions.models import AgentSession, TrainingExample
from sessions.replay import replay_example as replay
from sessions.retrospective import run_retrospective
from sessions.trainer import run_trainer

logger = logging.getLogger(__name__)


def retrospective(session_id: str, llm_model: str | None = None) -> dict:
    """`async_task("sessions.tasks.retrospective", session_id)`: look back on one session.

    Queued by the Stop/SessionEnd hooks: with a model that a spent budget would refuse, it skips
    with a logged reason (the next hook tries again) instead of failing in the queue.
    """
    if get_llm_client() is not None:
        session = AgentSession.objects.filter(external_id=session_id).select_related("started_by").first()
        refusal = budgets.would_exceed(session.started_by if session is not None else None)
        if refusal:
            logger.warning("retrospective of session %s skipped: %s", session_id, refusal)
            return {"skipped": refusal}
    return run_retrospective(session_id, llm_model=llm_model)


def trainer_extract(session_id: str | None = None) -> dict:
    """`async_task("sessions.tasks.trainer_extract")`: extract training candidates (one session or all)."""
    result = run_trainer(session_id)
    return {"count": result["count"], "created": result.get("created", 0), "message": result["message"]}


def replay_example(example_id: int) -> dict:
    """`async_task("sessions.tasks.replay_example", pk)`: what `manage.py trainer_verify` does, for one example."""
    example = TrainingExample.objects.filter(pk=example_id).first()
    if example is None:
        return {"skipped": "no such example"}
    outcome = replay(example)
    do_record_replay(example, outcome)
    return {"status": outcome["status"], "reason": outcome["reason"]}


def schedules() -> list[tuple[str, str, int]]:
    # Extraction is cheap and idempotent: sweep every session hourly so nothing depends on a client calling it.
    return [("sessions-trainer-extract", "sessions.tasks.trainer_extract", 3600)]
