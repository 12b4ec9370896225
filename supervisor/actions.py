"""Every write to supervisor records goes through these functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from hyperguild.lib.redaction import redact_fields
from hyperguild.lib.typed import JSON
from supervisor.models import Pathway, RoutingEntry, SkillRun
from supervisor.output import cap
from supervisor.run_events import RunChange, notify
from supervisor.skills import SKILLS, build_result

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from supervisor.routing import Attempt, Decision, PathwayKey


@transaction.atomic
def do_create_skill_run(
    *,
    skill: str,
    arguments: JSON,
    project_root: str = "",
    model: str = "",
    endpoint: str = "supervisor",
    tool: str = "",
    session_id: str = "",
    route: str = "",
    status: str = SkillRun.Status.QUEUED,
    requested_by: User | None = None,
    task_id: str | None = None,
    task_owner: str = "",
    caller: Mapping[str, Any] | None = None,
) -> SkillRun:
    """A queued run; `task_id` and `task_owner` when it was started as an MCP task (the run is that task);
    `caller`: the credential's scopes for a tool job's handler (supervisor.jobs)."""
    return SkillRun.objects.create(
        task_id=task_id,
        task_owner=task_owner,
        caller=dict(caller) if caller is not None else None,
        skill=skill,
        tool=tool or skill,
        endpoint=endpoint,
        arguments=arguments,
        project_root=project_root,
        model=model,
        session_id=session_id or "",
        route=route,
        status=status,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
    )


def do_claim_skill_run(run_id: int, *, host: str = "", pid: int | None = None) -> SkillRun | None:
    """queued → running, for exactly one worker; None if someone else has it (or it was cancelled).

    `host` and `pid` name the owning process; it must beat (`do_beat_skill_run`) while it runs.
    """
    # A conditional UPDATE whose row count is checked: if the task is
    # delivered twice (django-q retry, two clusters), only one delivery sees
    # status=queued and runs the worker; the other returns without touching it.
    now = timezone.now()
    claimed = SkillRun.objects.filter(pk=run_id, status=SkillRun.Status.QUEUED, cancel_requested=False).update(
        status=SkillRun.Status.RUNNING,
        started_at=now,
        progress="starting",
        worker_host=host[:255],
        worker_pid=pid,
        heartbeat_at=now,
    )
    if claimed != 1:
        return None
    notify(run_id, RunChange(status=SkillRun.Status.RUNNING, progress="starting"))
    return SkillRun.objects.get(pk=run_id)


def do_beat_skill_run(run_id: int) -> bool:
    """The owner is alive: refresh the heartbeat. False once the run is no longer running."""
    return SkillRun.objects.running().filter(pk=run_id).update(heartbeat_at=timezone.now()) == 1


def do_record_run_ownership(run_id: int, **fields: int | None) -> None:
    """Record the worker slot (`worker_slot`) or process group (`worker_pgid`) a running run holds now."""
    allowed = {"worker_slot", "worker_pgid"}
    if not fields or set(fields) - allowed:
        raise ValueError(f"only {sorted(allowed)} can be recorded")
    SkillRun.objects.filter(pk=run_id).update(**fields)


@transaction.atomic
def do_end_orphaned_run(run_id: int, *, status: str, message: str) -> SkillRun | None:
    """End a running run whose owner is gone (its process group is already killed); None if it had ended."""
    # Locked and re-checked: the owner may have finished it in the meantime, and two reapers
    # (the schedule and a waiting caller) may find the same run.
    run = SkillRun.objects.select_for_update().filter(pk=run_id, status__in=SkillRun.UNFINISHED).first()
    if run is None:
        return None
    if run.cancel_requested:
        status = SkillRun.Status.CANCELLED
    run.status = status
    run.message = message
    # A skill's result in its shape; a tool job of another tool has none, and answers its message as an error.
    run.result = (
        build_result(
            run.skill,
            run_id=run.pk,
            status=SkillRun.Status.ERROR if status == SkillRun.Status.CANCELLED else status,
            message=message,
            model_used=run.model,
            attempts=run.attempts,
        )
        if run.skill in SKILLS
        else None
    )
    run.progress = "finished"
    run.worker_slot = None
    run.worker_pgid = None
    run.finished_at = timezone.now()
    if run.started_at:
        run.duration_ms = int((run.finished_at - run.started_at).total_seconds() * 1000)
    run.save()
    notify(run.pk, RunChange(status=run.status, progress=run.progress))  # delivered at commit
    return run


def do_set_run_progress(run_id: int, text: str) -> None:
    if SkillRun.objects.filter(pk=run_id).update(progress=text[:200]):
        notify(run_id, RunChange(progress=text[:200]))


def do_request_cancel(run_id: int) -> None:
    """Ask the run to stop: the executor polls the flag and kills the worker's group.

    A run nobody has claimed yet is cancelled on the spot.
    """
    SkillRun.objects.filter(pk=run_id).update(cancel_requested=True)
    ended = SkillRun.objects.filter(pk=run_id, status=SkillRun.Status.QUEUED).update(
        status=SkillRun.Status.CANCELLED, finished_at=timezone.now(), message="cancelled before it started"
    )
    notify(run_id, RunChange(status=SkillRun.Status.CANCELLED if ended else "", cancel_requested=True))


@transaction.atomic
def do_finish_skill_run(
    run_id: int,
    result: JSON,
    *,
    attempt_log: list[JSON] | None = None,
    change: Mapping[str, Any] | None = None,
    model_calls: list[int] | None = None,
) -> SkillRun:
    """Record the final result; a run someone cancelled stays cancelled. Secrets are redacted (and counted) first."""
    run = SkillRun.objects.select_for_update().get(pk=run_id)
    last = (attempt_log or [{}])[-1] if attempt_log else {}
    status = result.get("status", SkillRun.Status.ERROR)
    if run.cancel_requested and status not in (SkillRun.Status.PASS, SkillRun.Status.FAIL):
        status = SkillRun.Status.CANCELLED
    run.status = status
    run.verified = result.get("verified")
    run.result = result
    run.message = result.get("message", "")
    run.model = result.get("model_used") or run.model
    run.runner_output = cap(result.get("runner_output") or "")
    run.attempts = result.get("attempts", 0)
    run.duration_ms = result.get("duration_ms")
    run.worker_report = last.get("report") if last else None
    run.exit_code = last.get("exit_code") if last else None
    run.stdout = cap(last.get("stdout") or "") if last else ""
    run.stderr = cap(last.get("stderr") or "") if last else ""
    run.attempt_log = attempt_log or []
    run.change = change
    stored, run.redactions = redact_fields(
        {
            name: getattr(run, name)
            for name in (
                "result",
                "message",
                "runner_output",
                "worker_report",
                "stdout",
                "stderr",
                "attempt_log",
                "change",
            )
        }
    )
    for name, value in stored.items():
        setattr(run, name, value)
    run.progress = "finished"
    run.worker_slot = None
    run.worker_pgid = None
    run.finished_at = timezone.now()
    run.save()
    if model_calls:
        run.model_calls.add(*model_calls)
    notify(run.pk, RunChange(status=run.status, progress=run.progress))  # delivered at commit, with the result
    return run


@transaction.atomic
def do_finish_tool_job(
    run_id: int, *, status: str, result: Mapping[str, Any] | None, message: str, model_calls: list[int] | None = None
) -> SkillRun:
    """Record how a tool job ended: its structured result (None when it failed: `message` is then the error the
    caller reads). A run someone cancelled ends cancelled unless it reached its verdict. Secrets are redacted."""
    run = SkillRun.objects.select_for_update().get(pk=run_id)
    if run.cancel_requested and status not in (SkillRun.Status.PASS, SkillRun.Status.FAIL):
        status = SkillRun.Status.CANCELLED
    stored, run.redactions = redact_fields({"result": dict(result) if result is not None else None, "message": message})
    run.status = status
    run.result, run.message = stored["result"], stored["message"]
    run.model = str((result or {}).get("model_used") or run.model)[:200]
    run.progress = "finished"
    run.finished_at = timezone.now()
    if run.started_at:
        run.duration_ms = int((run.finished_at - run.started_at).total_seconds() * 1000)
    run.save()
    if model_calls:
        run.model_calls.add(*model_calls)
    notify(run.pk, RunChange(status=run.status, progress=run.progress))  # delivered at commit, with the result
    return run


# --- routing entries ------------------------------------------------------------


def _capped(value: Any, cap: int = RoutingEntry.BODY_CAP) -> Any:
    if isinstance(value, str):
        return value[:cap]
    if isinstance(value, list):
        # Messages: cap each content string, so the JSON stays valid.
        out = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                item = {**item, "content": item["content"][:cap]}
            out.append(item)
        return out
    return value


def do_log_routing_entry(
    *,
    skill: str,
    decision: Decision,
    attempt: Attempt,
    is_final: bool,
    attempt_of: RoutingEntry | None = None,
    session_id: str = "",
    requested_by: User | None = None,
) -> RoutingEntry:
    """Record one attempt (one INSERT, so concurrent calls cannot lose or merge entries)."""
    usage = attempt.usage or {}
    bodies, redactions = redact_fields(
        {
            "request": _capped(attempt.request),
            "response": _capped(attempt.response or ""),
            "error": attempt.error[:5000],
        }
    )
    with transaction.atomic():
        entry = RoutingEntry.objects.create(
            requested_by=requested_by if getattr(requested_by, "pk", None) else None,
            skill=skill,
            model=decision.model,
            reason=decision.reason,
            pass_rate_seen=decision.pass_rate,
            samples_seen=decision.samples,
            status=attempt.status,
            is_final=is_final,
            attempt_of=attempt_of,
            latency_ms=max(0, attempt.latency_ms),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
            error=bodies["error"],
            request=bodies["request"],
            response=bodies["response"],
            redactions=redactions,
            session_id=session_id[:200],
        )
        if attempt.model_calls:
            entry.model_calls.set(attempt.model_calls)
        return entry


# --- pathway memory ----------------------------------------------------------------


def _locked_pathway(key: PathwayKey) -> Pathway:
    """The pathway row for `key`, created if new, locked for this transaction."""
    values = {"skill": key.skill, "area": key.area, "signal": key.signal}
    try:
        with transaction.atomic():  # a savepoint: two first calls on a new pathway race to create it
            Pathway.objects.get_or_create(key=key.key, defaults=values)
    except IntegrityError:
        pass
    return Pathway.objects.select_for_update().get(key=key.key)


@transaction.atomic
def do_record_pathway_outcome(
    key: PathwayKey, outcomes: list[tuple[str, bool]], entries: list[RoutingEntry]
) -> Pathway:
    """Count one routed call on its pathway ((model, passed) per attempt, in order) and link its entries."""
    pathway = _locked_pathway(key)
    pathway.record(
        outcomes,
        probation=settings.HYPERGUILD_PATHWAY_PROBATION,
        min_success=settings.HYPERGUILD_PATHWAY_MIN_SUCCESS,
        cheap_model=settings.HYPERGUILD_FAST_MODEL,
    )
    pathway.save()
    RoutingEntry.objects.filter(pk__in=[entry.pk for entry in entries]).update(pathway=pathway)
    for entry in entries:
        entry.pathway = pathway
    return pathway


@transaction.atomic
def do_add_pathway_fingerprints(key: PathwayKey, found: Sequence[Mapping[str, Any]]) -> Pathway | None:
    """Keep the bug fingerprints of a call's grounded findings on its pathway."""
    if not found:
        return None
    pathway = _locked_pathway(key)
    pathway.add_fingerprints(found)
    pathway.save(update_fields=["fingerprints", "updated_at"])
    return pathway
