"""MCP tools of /mcp/supervisor (registered on import, from AppConfig.ready).

Worker skills do not run in the web process: the handler records a SkillRun,
enqueues `supervisor.tasks.run_skill` on django-q2 and waits for the run to
finish, listening on the run's notifications (`supervisor.run_events`: no row
is read in a loop) and streaming its progress to the client at least every
`PROGRESS_EVERY` seconds. If the client cancels, the handler sets
`cancel_requested` on the run; the executor (in the worker process) sees it
and kills the worker's process group. Started as an MCP task, the same call is
recorded and queued the same way but nothing waits: the run is the task
(`supervisor.jobs`, which also runs every other long tool started as a task).

`retrospective` and `trainer` are registered by the sessions app.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django_q.tasks import async_task

from hyperguild.lib.processes import pid_alive
from hyperguild.mcp.registry import Endpoint, ToolCancelled, ToolContext, ToolError, register_endpoint
from ledger import budgets
from ledger.usage import UsageReport, summed_usage
from people.permissions import register_right
from people.roles import OPERATOR
from supervisor import executor, reaper
from supervisor.actions import do_create_skill_run, do_request_cancel
from supervisor.apply import check_apply_request
from supervisor.errors import SupervisorError
from supervisor.executor import run_budget_seconds
from supervisor.model_table import ModelTableError, consensus_models, gateway_problem, resolve_model
from supervisor.models import SkillRun
from supervisor.roots import resolve_inside, resolve_project_root
from supervisor.run_events import RunListener
from supervisor.shell_reach import check_command_right, check_shell_arguments
from supervisor.skills import (
    SKILLS,
    SkillInput,
    SkillResult,
    TierInput,
    TierResult,
    Verdict,
    build_result,
    check_session,
    typed_result,
)
from supervisor.tier import current_tier

PROGRESS_EVERY = 10.0  # below the 15 s the clients are promised
OWNER_CHECK_EVERY = 2.0  # how often a waiting caller checks that the run's worker process lives
WAKE_EVERY = 1.0  # a waiting call's longest sleep between notifications: how soon it sees the client's cancel

supervisor = register_endpoint(
    Endpoint(
        "supervisor",
        title="hyperguild supervisor",
        token_setting="SUPERVISOR_MCP_TOKEN",
        scopes=("supervisor:run",),
        instructions=(
            "Skill workers whose results the supervisor verifies itself: TDD red/green/refactor, "
            "review, debug, spec, retrospective, trainer and tier; apply turns a verified review's findings into "
            "commits on a new branch, each behind gates."
        ),
    )
)
# Skills run workers and commands as the service's user: the operator role's (people.permissions; docs/people.md).
register_right(
    "supervisor:run",
    scope="supervisor:run",
    permission="supervisor.run_skill",
    roles=(OPERATOR,),
    description="run the skills on /mcp/supervisor (workers that edit files and run tests)",
)
register_right(
    "supervisor:commands",
    scope="",
    permission="supervisor.run_skill",
    roles=(OPERATOR,),
    description="give a shell command in the arguments (test_cmd, lint_cmd, failing_cmd)",
)
supervisor.translate_errors(SupervisorError)  # RootRefused, ModelTableError… reach the caller as tool errors


def enqueue_run(run_id: int, *, task: str = "supervisor.tasks.run_skill") -> None:
    """Queue the run on django-q2: a worker skill's `run_skill`, or a tool job's `run_tool_job` (supervisor.jobs)."""
    async_task(
        task,
        run_id,
        task_name=f"skill-run-{run_id}",
        group="supervisor",
        timeout=int(run_budget_seconds()),
    )


def _check_paths(skill: str, arguments: dict[str, Any]) -> str:
    """Refuse bad roots, paths and shell arguments before anything is recorded or spawned."""
    check_shell_arguments(arguments)
    if "project_root" not in arguments:
        return ""
    root = resolve_project_root(arguments["project_root"])
    for key in ("test_path", "impl_path"):
        if arguments.get(key):
            resolve_inside(root, arguments[key])
    for path in arguments.get("paths") or []:
        resolve_inside(root, path, must_exist=True)
    if skill == "apply":
        check_apply_request(root, arguments)  # the review run exists, is verified, its branch is free
    return str(root)


def start_skill_run(
    skill: str,
    arguments: dict[str, Any],
    *,
    endpoint: str = "supervisor",
    requested_by: Any = None,
    task_id: str | None = None,
    task_owner: str = "",
) -> SkillRun:
    """Check `arguments` (a skill's arguments as JSON, as the run keeps them), record the run and queue it.

    `requested_by`: the person behind the call (a User), or None for the service identity. `task_id` and
    `task_owner`: the MCP task handle the run answers to (supervisor.jobs), when it was started as a task."""
    root = _check_paths(skill, arguments)
    if SKILLS[skill].worker_model is None:
        model = ""  # no worker, no model (apply)
    elif arguments.get("consensus"):
        model = ", ".join(dict.fromkeys(consensus_models(skill, arguments["consensus"], arguments.get("model"))))
    else:
        model = resolve_model(skill, arguments.get("model"))
    problem = next(filter(None, (gateway_problem(name.strip()) for name in model.split(","))), None)
    if problem:
        raise ModelTableError(problem)
    if model:
        # Before anything is queued or spawned: a spent budget is a clear error, not a failed run.
        # A consensus review runs one worker per model, and the budget must hold them all.
        budgets.check(budgets.estimate_or_default(None), requested_by, count=len(model.split(",")))
    run = do_create_skill_run(
        skill=skill,
        arguments=arguments,
        project_root=root,
        model=model,
        endpoint=endpoint,
        session_id=arguments.get("session_id", ""),
        requested_by=requested_by,
        task_id=task_id,
        task_owner=task_owner,
    )
    transaction.on_commit(lambda: enqueue_run(run.pk))
    return run


def wait_for_run(run: SkillRun, ctx: ToolContext) -> SkillRun:
    """Block until the run is finished, relaying progress and cancellation: the finished run.

    Only a blocking call waits here, in its own request; a call started as an MCP task does not wait at all
    (supervisor.jobs: the client polls `tasks/get`, which reads the run). The wait reads no row in a loop: it
    listens on the run's channel (supervisor.run_events), whose notifications carry the run's status and
    progress as each change commits, and reads the row once it ends. Between notifications it wakes every
    `WAKE_EVERY` seconds for what no notification announces: the client's cancellation (an in-memory flag),
    the deadline, the progress the client is owed every `PROGRESS_EVERY` seconds, and, every
    `OWNER_CHECK_EVERY`, whether the run's worker process lives (no query while it does, on this host)."""
    deadline = time.monotonic() + run_budget_seconds()
    ctx.report_progress(0, None, f"{run.skill}: queued (run {run.pk})")
    with RunListener(run.pk) as listener:
        # LISTEN is in place: what the run is now, and every change after it arrives as a notification.
        current = SkillRun.objects.only("status", "progress", "worker_host", "worker_pid", "started_at").get(pk=run.pk)
        status, text = current.status, current.progress or current.status
        ticks, last_sent_text, last_sent_at = 0, "", 0.0
        next_owner_check = time.monotonic() + OWNER_CHECK_EVERY
        while status in SkillRun.UNFINISHED:
            now = time.monotonic()
            if ctx.is_cancelled():
                _cancel(run.pk, listener)
                raise ToolCancelled()
            if now >= deadline:
                do_request_cancel(run.pk)
                raise ToolError(
                    f"{run.skill} run {run.pk} did not finish in {int(run_budget_seconds())} s; it was cancelled"
                )
            if now >= next_owner_check and status == SkillRun.Status.RUNNING:
                # Its worker process may have died (kill -9, OOM): end the run now, not at the deadline. On this
                # host its pid says so without a query; elsewhere only its heartbeat (the row) can, which cannot
                # go stale faster than SUPERVISOR_STALE_SECONDS.
                local = current.worker_host == reaper.HOST and current.worker_pid is not None
                next_owner_check = now + (OWNER_CHECK_EVERY if local else settings.SUPERVISOR_STALE_SECONDS / 2)
                if not local or not pid_alive(current.worker_pid or 0):
                    current = SkillRun.objects.get(pk=run.pk)
                    if current.is_finished or reaper.reap_run(current) is not None:
                        break
            if text != last_sent_text or now - last_sent_at >= PROGRESS_EVERY:
                ticks += 1
                ctx.report_progress(ticks, None, f"{run.skill}: {text}")
                last_sent_text, last_sent_at = text, now
            for change in listener.wait(min(WAKE_EVERY, max(0.0, deadline - now))):
                if change.status:
                    status = change.status
                    if status == SkillRun.Status.RUNNING:  # claimed: learn its owner, once
                        current = SkillRun.objects.only("status", "worker_host", "worker_pid", "started_at").get(
                            pk=run.pk
                        )
                if change.progress or change.status:
                    text = change.progress or change.status
    run.refresh_from_db()
    if run.status == SkillRun.Status.CANCELLED:
        raise ToolCancelled()
    return run


def run_outcome(run: SkillRun) -> SkillResult:
    """What a finished run's tool call answers: its result, with what its worker's model calls used."""
    if run.result is None:
        values = build_result(
            run.skill, run_id=run.pk, status=Verdict.ERROR, message=run.message or "the run left no result"
        )
    else:
        values = run.result
    result = typed_result(run.skill, values)
    if isinstance(result, UsageReport):
        # The worker's calls were recorded by the process that ran it, and linked to the run.
        result.usage = summed_usage(list(run.model_calls.values_list("pk", flat=True)))
    return result


def _cancel(run_id: int, listener: RunListener | None = None) -> None:
    """Cancel the run and make sure its process group is gone, even if its owner is dead (`listener`: the
    caller's, already listening on the run; else one of its own)."""
    do_request_cancel(run_id)
    if reaper.reap_if_orphaned(run_id) is not None:
        return
    with nullcontext(listener) if listener is not None else RunListener(run_id) as heard:
        if _wait_until_finished(run_id, heard, executor.KILL_GRACE * 2 + 5):
            return
    # The owner did not stop it in time: kill the recorded group and end the run here.
    run = SkillRun.objects.running().filter(pk=run_id).first()
    if run is not None:
        reaper.stop_run(
            run, status=SkillRun.Status.CANCELLED, message="cancelled; the worker did not stop in time and was killed"
        )


def _wait_until_finished(run_id: int, listener: RunListener, seconds: float) -> bool:
    """Whether the run ends within `seconds`: its end arrives as a notification (one read before, one after)."""
    deadline = time.monotonic() + seconds
    if SkillRun.objects.filter(pk=run_id).exclude(status__in=SkillRun.UNFINISHED).exists():
        return True
    while (left := deadline - time.monotonic()) > 0:
        changes = listener.wait(left)
        if any(change.status and change.status not in SkillRun.UNFINISHED for change in changes):
            return True
    return SkillRun.objects.filter(pk=run_id).exclude(status__in=SkillRun.UNFINISHED).exists()


def start_worker_skill(
    skill: str, params: SkillInput, ctx: ToolContext, *, task_id: str | None = None, task_owner: str = ""
) -> SkillRun:
    """A worker skill's call, checked and queued as a run: what its tool does first, blocking or as a task."""
    # The run keeps its arguments as JSON, as they were given (an argument not given stays out).
    arguments = params.model_dump(mode="json", exclude_none=True)
    check_command_right(arguments, ctx.identity)
    check_session(arguments.get("session_id"), ctx.actor)  # its run would join another person's session
    return start_skill_run(skill, arguments, requested_by=ctx.actor, task_id=task_id, task_owner=task_owner)


WORKER_SKILLS: set[str] = set()  # the tools that run as a SkillRun (a job, when started as an MCP task)


def _worker_tool(
    skill: str, *, read_only: bool = False, destructive: bool = False
) -> Callable[[SkillInput, ToolContext], SkillResult]:
    spec = SKILLS[skill]
    WORKER_SKILLS.add(skill)

    def handler(params: SkillInput, ctx: ToolContext) -> SkillResult:
        try:
            run = start_worker_skill(skill, params, ctx)
            return run_outcome(wait_for_run(run, ctx))
        finally:
            # The engine may run this in a thread of its own that ends with the
            # call; its connection would otherwise stay open until GC.
            if not connection.in_atomic_block:
                connection.close()

    handler.__name__ = f"{skill}_tool"
    supervisor.tool(
        name=skill,
        title=spec.title,
        description=spec.description,
        input_model=spec.input_model,
        result_model=spec.result_model,
        read_only=read_only,
        destructive=destructive,
        idempotent=False,
        open_world=True,
        long_running=True,  # minutes of a worker: run as an MCP task when the client can poll
        reports_usage=spec.worker_model is not None,  # apply asks no model
    )(handler)
    return handler


tdd_red = _worker_tool("tdd_red")
tdd_green = _worker_tool("tdd_green")
tdd_refactor = _worker_tool("tdd_refactor")
review = _worker_tool("review", read_only=True)
debug = _worker_tool("debug")
spec = _worker_tool("spec")
apply = _worker_tool("apply")


@supervisor.tool(
    name="tier",
    title=SKILLS["tier"].title,
    description=SKILLS["tier"].description,
    input_model=TierInput,
    result_model=TierResult,
    read_only=True,
    idempotent=True,
    open_world=True,
)
def tier(params: TierInput, ctx: ToolContext) -> TierResult:
    started = time.monotonic()
    found, cached = current_tier(refresh=bool(params.refresh))
    values = build_result(
        "tier",
        status=Verdict.PASS,
        verified=None,
        message=f"tier {found['tier']} ({found['label']})",
        duration_ms=int((time.monotonic() - started) * 1000),
        tier=found["tier"],
        label=found["label"],
        anthropic_reachable=found["anthropic_reachable"],
        litellm_reachable=found["litellm_reachable"],
        cached=cached,
    )
    return TierResult.model_validate(values)
