"""django-q2 tasks of the sessions app (small functions that take ids and call the logic)."""

from __future__ import annotations

import logging
from typing import TypedDict

from django.contrib.auth.models import User

from hyperguild.lib.llm import get_llm_client
from hyperguild.lib.model_calls import model_call_context
from ledger import budgets
from sessions.actions import do_record_replay
from sessions.models import AgentSession, TrainingExample
from sessions.replay import replay_example as replay
from sessions.retrospective import run_retrospective
from sessions.trainer import run_trainer
from supervisor.skills import RetrospectiveResult

logger = logging.getLogger(__name__)


class Skipped(TypedDict):
    skipped: str  # why the task did nothing


def retrospective(
    session_id: str, llm_model: str | None = None, requested_by_id: int | None = None
) -> RetrospectiveResult | Skipped:
    """`async_task("sessions.tasks.retrospective", session_id, requested_by_id=owner_id)`: look back on one session.

    Queued by the Stop/SessionEnd hooks, on behalf of the session's owner (the person whose hook caused it,
    `requested_by_id`; None: the service's session): it runs with their rights, its model calls name them and
    are charged to their budget. With a model that a spent budget would refuse, it skips with a logged reason
    (the next hook tries again) instead of failing in the queue; other people's retrospectives go on. Its result:
    `run_retrospective`'s RetrospectiveResult, or `{"skipped": why}`.
    """
    session = AgentSession.objects.filter(external_id=session_id).select_related("started_by").first()
    if session is None:
        return {"skipped": f"no session {session_id!r}"}
    owner = session.started_by
    if owner is not None and not owner.is_active:
        return {"skipped": "the session's owner's account is deactivated: nothing runs as them"}
    if owner is not None and requested_by_id is not None and owner.pk != requested_by_id:
        # Queued for one person, the session is someone else's: nothing of it runs as the wrong person.
        logger.warning("retrospective of session %s skipped: queued for another person", session_id)
        return {"skipped": "the session is not the queuing person's"}
    if get_llm_client() is not None:
        refusal = budgets.would_exceed(owner)
        if refusal:
            logger.warning("retrospective of session %s skipped: %s", session_id, refusal)
            return {"skipped": refusal}
    with model_call_context(requested_by=owner, service="hook retrospective"):
        try:
            return run_retrospective(session_id, llm_model=llm_model, requested_by=owner)
        except budgets.BudgetExceeded as exc:  # spent between the check and the call (another call took it)
            logger.warning("retrospective of session %s skipped: %s", session_id, exc.message)
            return {"skipped": exc.message}


class Extracted(TypedDict):
    count: int
    created: int
    message: str


def trainer_extract(session_id: str | None = None) -> Extracted:
    """`async_task("sessions.tasks.trainer_extract")`: extract training candidates (one session or all)."""
    result = run_trainer(session_id)
    return {"count": result.count, "created": result.created or 0, "message": result.message}


class Replayed(TypedDict):
    status: str
    reason: str


def replay_example(example_id: int, requested_by_id: int | None = None) -> Replayed | Skipped:
    """`async_task("sessions.tasks.replay_example", pk, requested_by_id=…)`: what `manage.py trainer_verify` does,
    for one example, on behalf of the curator who asked (None: the service, a schedule or the command)."""
    example = TrainingExample.objects.filter(pk=example_id).first()
    if example is None:
        return {"skipped": "no such example"}
    requested_by = User.objects.filter(pk=requested_by_id, is_active=True).first() if requested_by_id else None
    with model_call_context(requested_by=requested_by, service="training replay"):
        outcome = replay(example)
    do_record_replay(example, outcome, requested_by=requested_by)
    return {"status": outcome["status"], "reason": outcome["reason"]}


def schedules() -> list[tuple[str, str, int]]:
    # Extraction is cheap and idempotent: sweep every session hourly so nothing depends on a client calling it.
    return [("sessions-trainer-extract", "sessions.tasks.trainer_extract", 3600)]
