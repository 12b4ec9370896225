"""How each worker skill runs once its SkillRun is claimed: worker, verification, result.

    result, ctx = run_worker_skill(run, progress, cancel_check)

returns the result dict (shared shape + skill fields) and the context whose
`attempt_log` records every attempt. The skill's spec names its runner
(`SkillSpec.runner`, a key of `RUNNERS`). A runner never trusts the worker:
TDD phases are verified by running the tests here; `spec` writes its spec to
the brain as a raw note. `review` (with its consensus) and `debug` are the
skill steps of `supervisor.skill_steps`, shared with the routed model; here
the `claude` worker is their backend (`WorkerBackend`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from brain.actions import do_write_raw_note
from hyperguild.lib.model_calls import record_model_call
from hyperguild.lib.redaction import redact_fields
from ledger import budgets
from ledger.models import ModelCall
from people.permissions import role_allows
from supervisor import executor, skill_steps
from supervisor.apply import run_apply
from supervisor.changes import ChangeRecorder, RecordedChange
from supervisor.errors import SupervisorError
from supervisor.executor import ProcessOutcome, WorkerStatus
from supervisor.model_table import ModelTableError, consensus_models, gateway_environment, resolve_model
from supervisor.project_tests import (
    BASELINE_MUST_PASS,
    NO_TEST_COMMAND,
    TestRun,
    baseline_allows,
    detect_test_command,
    judge_tdd_attempt,
    run_command,
)
from supervisor.prompts import (
    build_prompt,
    debug_task,
    review_task,
    spec_task,
    tdd_task,
    verification_failed_feedback,
    worker_rejected_feedback,
)
from supervisor.roots import RootRefused, resolve_inside, resolve_project_root
from supervisor.run_results import SkillRunResult
from supervisor.shell_reach import check_test_cmd
from supervisor.skills import SKILLS, SkillFailed, Verdict, build_result, worker_schema

if TYPE_CHECKING:
    from supervisor.models import SkillRun

# Called with one line of progress text ("attempt 1: verifying (...)") for the run's record.
ReportProgress = Callable[[str], None]


class RunContext:
    """One claimed run: its arguments, model and spec, the progress callback and the attempt log."""

    def __init__(self, run: SkillRun, progress: ReportProgress, cancel_check: Callable[[], bool]) -> None:
        self.run = run
        self.args = run.arguments or {}
        self.progress = progress
        self.cancel_check = cancel_check
        self.skill = run.skill
        self.spec = SKILLS[run.skill]
        # A skill without a worker (apply) runs no model.
        self.model = resolve_model(run.skill, self.args.get("model")) if self.spec.worker_schema else ""
        self.attempt_log: list[dict[str, Any]] = []
        self.worker_pids: list[int] = []
        # What the worker changed (TDD, debug): see supervisor.changes; stored on SkillRun.change.
        self.change: RecordedChange | None = None

    def worker(self, task: str, attempt: int, model: str | None = None) -> executor.WorkerResult:
        """Run the worker once, on `model` (a consensus review's own reviewer) or the run's model."""
        model = model or self.model
        root = Path(self.run.project_root) if self.run.project_root else None
        cwd = root or Path(settings.DATA_DIR)
        cwd.mkdir(parents=True, exist_ok=True)
        self.progress(f"attempt {attempt}: worker running ({model})")

        def waiting(seconds: float) -> None:
            self.progress(f"attempt {attempt}: waiting for a free worker slot ({int(seconds)} s)")

        try:
            gateway_env = gateway_environment(model)
        except ModelTableError as exc:
            raise SkillFailed(str(exc)) from exc
        prompt = build_prompt(self.skill, task)
        with budgets.reserve(None, what=f"{self.skill} worker ({model})"):
            worker = self._spawn(prompt, model, cwd, waiting, gateway_env)
            record_worker_call(worker, model=model, prompt=prompt, purpose=self.skill)
        return worker

    def _spawn(
        self,
        prompt: str,
        model: str,
        cwd: Path,
        waiting: Callable[[float], None],
        gateway_env: Mapping[str, str | None],
    ) -> executor.WorkerResult:
        return executor.run_worker(
            prompt=prompt,
            schema=dict(worker_schema(self.skill)),
            cwd=cwd,
            model=model,
            allowed_tools=self.spec.allowed_tools,
            cancel_check=self.cancel_check,
            on_wait=waiting,
            on_start=self.worker_pids.append,
            env_overrides=dict(gateway_env),
        )

    def log(self, attempt: int, worker: executor.WorkerResult, **verification: Any) -> None:
        """Add one attempt to the run's attempt log: the worker's answer and what verifying it found."""
        entry = {
            "attempt": attempt,
            "worker_status": worker.status,
            "worker_message": worker.message,
            "exit_code": worker.exit_code,
            "report": worker.report,
            "stdout": worker.stdout,
            "stderr": worker.stderr,
            "duration_ms": worker.duration_ms,
            **verification,
        }
        self.attempt_log.append(entry)

    def result(self, **values: Any) -> SkillRunResult:
        """The run's result in its skill's shape (`build_result`), naming the model and the run."""
        return build_result(self.skill, **{"model_used": self.model, "run_id": self.run.pk, **values})


# How a `claude` worker run ends, as a ModelCall outcome. A worker that could not work at all
# (offline, rate-limited, not logged in) or ran out of time is an outage, not the model's answer.
_WORKER_OUTCOMES = {
    WorkerStatus.OK: ModelCall.Outcome.OK,
    WorkerStatus.ERROR: ModelCall.Outcome.BAD_OUTPUT,
    WorkerStatus.UNAVAILABLE: ModelCall.Outcome.OUTAGE,
    WorkerStatus.TIMEOUT: ModelCall.Outcome.OUTAGE,
    WorkerStatus.CANCELLED: ModelCall.Outcome.OUTAGE,
}


def record_worker_call(worker: executor.WorkerResult, *, model: str, prompt: str, purpose: str) -> None:
    """Keep one `claude -p` run as a ModelCall: the prompt and argv sent, its raw output, how it ended."""
    if worker.pid is None:
        return  # it never started (no free slot, no binary, cancelled first): no call was made
    usage = ((worker.envelope or {}).get("usage") or {}) if isinstance(worker.envelope, dict) else {}
    record_model_call(
        provider=ModelCall.Provider.CLAUDE,
        endpoint=" ".join(worker.argv[:2]) or settings.CLAUDE_BINARY,
        model=model or "",
        purpose=purpose,
        request={"argv": worker.argv, "prompt": prompt},
        response=worker.stdout + (f"\n[stderr]\n{worker.stderr}" if worker.stderr else ""),
        outcome=_WORKER_OUTCOMES.get(worker.status, ModelCall.Outcome.BAD_OUTPUT),
        error=worker.message,
        latency_ms=worker.duration_ms,
        finish_reason=str((worker.envelope or {}).get("subtype") or "") if isinstance(worker.envelope, dict) else "",
        input_tokens=usage.get("input_tokens") if isinstance(usage.get("input_tokens"), int) else None,
        output_tokens=usage.get("output_tokens") if isinstance(usage.get("output_tokens"), int) else None,
        reported_cost_usd=_reported_cost(worker.envelope),
    )


def _reported_cost(envelope: object) -> float | None:
    """The claude CLI's own `total_cost_usd` (None when the envelope has none)."""
    cost = envelope.get("total_cost_usd") if isinstance(envelope, dict) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0 else None


def run_worker_skill(
    run: SkillRun, progress: ReportProgress, cancel_check: Callable[[], bool]
) -> tuple[dict[str, Any], RunContext]:
    ctx = RunContext(run, progress, cancel_check)
    try:
        runner = RUNNERS.get(ctx.spec.runner or "")  # a skill without a runner has none
        if runner is None:
            raise SkillFailed(f"{run.skill} does not run a worker")
        result = runner(ctx)
    except (SkillFailed, SupervisorError) as exc:  # RootRefused, ArgumentRefused, ProjectCommandFailed
        result = ctx.result(status=Verdict.ERROR, message=str(exc), attempts=len(ctx.attempt_log))
    return dict(result), ctx


def _worker_stopped(ctx: RunContext, worker: executor.WorkerResult, attempt: int) -> SkillRunResult | None:
    """A final result if the worker was killed (timeout/cancel) or could not work at all, else None.

    A worker that is not logged in, rate-limited or offline gave no answer to
    judge: the run ends as `error` with the CLI's message instead of burning
    the remaining attempts on the same wall.
    """
    if worker.status in (WorkerStatus.TIMEOUT, WorkerStatus.CANCELLED):
        return ctx.result(status=Verdict(worker.status), message=worker.message, attempts=attempt)
    if worker.status == WorkerStatus.UNAVAILABLE:  # nothing was attempted, so nothing is verified
        return ctx.result(status=Verdict.ERROR, message=worker.message, attempts=attempt, verified=False)
    return None


def _single_answer(ctx: RunContext, task: str) -> tuple[executor.WorkerResult, SkillRunResult | None]:
    """Run the worker once and log it: (the worker, a final result if it gave no usable answer, else None)."""
    worker = ctx.worker(task, 1)
    ctx.log(1, worker)
    stopped = _worker_stopped(ctx, worker, 1)
    if stopped is None and worker.status != WorkerStatus.OK:
        stopped = ctx.result(status=Verdict.ERROR, message=worker.message, attempts=1)
    return worker, stopped


def _answer_signature(report: dict[str, Any] | None, error: str) -> str:
    """What a worker answered, to stop retrying when two attempts in a row answer the same."""
    return json.dumps(report, sort_keys=True) if report is not None else "error:" + error


# --- TDD phases -----------------------------------------------------------------------


def run_tdd(ctx: RunContext) -> SkillRunResult:
    root = resolve_project_root(ctx.run.project_root)
    args = ctx.args
    for key in ("test_path", "impl_path"):
        if args.get(key):
            resolve_inside(root, args[key], must_exist=(key == "test_path" and ctx.skill != "tdd_red"))
    check_test_cmd(args.get("test_cmd"))  # the setting may have changed since the call was accepted
    test_cmd = args.get("test_cmd") or detect_test_command(root)
    if not test_cmd:
        raise SkillFailed(NO_TEST_COMMAND)
    expect = ctx.spec.expect_tests
    assert expect is not None  # every TDD skill says whether its tests must fail or pass
    stopped, baseline = _baseline(ctx, root, test_cmd)
    if stopped is not None:
        return stopped
    recorder = ChangeRecorder(root, keep=[args.get("test_path"), args.get("impl_path")])
    task = tdd_task(ctx.skill, args, test_cmd)
    max_attempts = settings.SUPERVISOR_MAX_ATTEMPTS
    previous = None
    feedback = ""
    last_report: dict[str, Any] | None = None
    last_run: TestRun | None = None
    all_changed: set[str] = set()
    why = ""

    def tdd_fields() -> dict[str, Any]:
        return {
            "file_path": _report_path(root, last_report),
            "files_changed": sorted(all_changed),
            "test_cmd": test_cmd,
            "worker_report": last_report,
            **({"test_name": (last_report or {}).get("test_name")} if ctx.skill == "tdd_red" else {}),
        }

    def record_change() -> None:
        ctx.change = recorder.record(test_cmd=test_cmd, before=baseline, after=last_run)

    for attempt in range(1, max_attempts + 1):
        recorder.begin()
        worker = ctx.worker(task + feedback, attempt)
        stopped = _worker_stopped(ctx, worker, attempt)
        if stopped is not None:
            ctx.log(attempt, worker, change=recorder.attempt())
            record_change()
            stopped.update({"test_cmd": test_cmd, "worker_report": last_report, "files_changed": sorted(all_changed)})
            return stopped
        part = recorder.attempt()
        changed = [item["path"] for item in part["files"]]
        all_changed.update(changed)
        if worker.report is not None:
            last_report = worker.report
        signature = _answer_signature(worker.report, worker.message)
        if worker.status != WorkerStatus.OK:
            why = f"attempt {attempt}: {worker.message}"
            ctx.log(attempt, worker, verified=False, reason=why, files_changed=changed, change=part)
            feedback = worker_rejected_feedback(worker.message)
        else:
            ctx.progress(f"attempt {attempt}: verifying ({test_cmd})")
            last_run = run_command(root, test_cmd, ctx.cancel_check)
            if last_run.outcome == ProcessOutcome.CANCELLED:
                ctx.log(attempt, worker, verified=None, reason="cancelled while verifying", change=part)
                record_change()
                return ctx.result(status=Verdict.CANCELLED, message="cancelled while the tests ran", attempts=attempt)
            verified, why = judge_tdd_attempt(expect, last_run, changed, attempt)
            ctx.log(
                attempt,
                worker,
                verified=verified,
                reason=why,
                test_exit_code=last_run.exit_code,
                runner_output=last_run.output,
                files_changed=changed,
                change=part,
            )
            if verified:
                record_change()
                return ctx.result(
                    status=Verdict.PASS,
                    verified=True,
                    message=why,
                    attempts=attempt,
                    runner_output=last_run.output,
                    **tdd_fields(),
                )
            feedback = verification_failed_feedback(why, test_cmd, last_run.output)
        if previous is not None and signature == previous:
            why = f"stopped early after attempt {attempt}: the worker returned the same output twice in a row ({why})"
            break
        previous = signature
    else:
        why = f"not verified after {max_attempts} attempts (SUPERVISOR_MAX_ATTEMPTS): {why}"
    record_change()
    return ctx.result(
        status=Verdict.FAIL,
        verified=False,
        message=why,
        attempts=len(ctx.attempt_log),
        runner_output=last_run.output if last_run else "",
        **tdd_fields(),
    )


def _baseline(ctx: RunContext, root: Path, test_cmd: str) -> tuple[SkillRunResult | None, TestRun | None]:
    """Run the tests before the worker (recorded as the run's "before"); (a result that stops the call or None, the run).

    Red and refactor must start from a passing suite; green's run is only recorded.
    """
    ctx.progress(f"baseline: running {test_cmd} before the worker")
    run = run_command(root, test_cmd, ctx.cancel_check)
    if run.outcome == ProcessOutcome.CANCELLED:
        return ctx.result(status=Verdict.CANCELLED, message="cancelled while the baseline tests ran", attempts=0), run
    if ctx.skill not in BASELINE_MUST_PASS or baseline_allows(ctx.skill, run):
        return None, run
    phase = "red" if ctx.skill == "tdd_red" else "refactor"
    return ctx.result(
        status=Verdict.FAIL,
        verified=False,
        attempts=0,
        runner_output=run.output,
        test_cmd=test_cmd,
        message=(
            f"the suite already fails before any change (`{test_cmd}` exit code {run.exit_code}"
            f"{', timed out' if run.outcome == ProcessOutcome.TIMEOUT else ''}); {phase} starts from a passing suite: "
            "make it pass first (tdd_green, or by hand). No worker was started."
        ),
    ), run


def _report_path(root: Path, report: dict[str, Any] | None) -> str | None:
    path = (report or {}).get("file_path")
    if not isinstance(path, str) or not path:
        return None
    try:
        return str(resolve_inside(root, path).relative_to(root))
    except (RootRefused, ValueError):
        return None


# --- review, debug (supervisor.skill_steps), spec -------------------------------------------


class WorkerBackend:
    """The `claude` worker as a backend of the skill steps: Claude Code in the project, which may edit it.

    Each ask is one worker run, one attempt of the run's log; what it changed is recorded
    (`supervisor.changes`) when the skill edits files."""

    reviews = "reviews"

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        # A skill whose worker may edit (debug: Edit among its tools) is verified by what it changed, not by its word.
        self.edits_files = "Edit" in ctx.spec.allowed_tools.split(",")
        self.recorder: ChangeRecorder | None = None
        self.root: Path | None = None
        self.changed: list[str] = []

    def ask(
        self,
        ask: skill_steps.SkillAsk,
        check: skill_steps.Check,
        *,
        number: int = 1,
        of: int = 1,
        model: str | None = None,
    ) -> skill_steps.Answer:
        ctx = self.ctx
        # The worker reads the files itself: it is told what to read, not shown it.
        if isinstance(ask, skill_steps.ReviewAsk):
            arguments = {"paths": ask.paths, "git_range": ask.git_range, "focus": ask.focus}
            task = review_task(arguments, ask.diff)
        else:
            task = debug_task({"symptom": ask.symptom, "failing_cmd": ask.failing_cmd})
        self.root = ask.root
        if self.edits_files:
            self.recorder = ChangeRecorder(ask.root)
        # A consensus review names each reviewer's model; a single answer is the run's model.
        worker = ctx.worker(task, number, model if of > 1 else None)
        part = self.recorder.attempt() if self.recorder is not None else None
        self.changed = [item["path"] for item in part["files"]] if part is not None else []
        ctx.log(
            number, worker, **({"model": model} if of > 1 else {}), **({"change": part} if part is not None else {})
        )
        stopped = _worker_stopped(ctx, worker, number)
        if stopped is not None:
            if self.recorder is not None and isinstance(ask, skill_steps.DebugAsk):
                ctx.change = self.recorder.record(test_cmd=ask.failing_cmd, before=None, after=None)
            raise skill_steps.Stopped(stopped)
        report = worker.report or {}
        grounding = check(ask.root, report).grounding
        if isinstance(ask, skill_steps.ReviewAsk) and worker.status == WorkerStatus.OK:
            ctx.attempt_log[-1].update(kept_findings=len(grounding.kept), dropped_findings=len(grounding.dropped))
        return skill_steps.Answer(
            model=model or ctx.model,
            report=report,
            grounding=grounding,
            failed=worker.message if worker.status != WorkerStatus.OK else "",
            files_changed=self.changed,
        )

    def consensus_models(self, count: int, override: str | None) -> list[str | None]:
        return [*consensus_models("review", count, override)]

    def remember(self, findings: list[dict[str, Any]]) -> None:
        """The worker's findings are kept with its run (SkillRun.result); no pathway learns from them."""

    def verify(self, command: str) -> TestRun:
        assert self.root is not None, "verify follows an ask"
        self.ctx.progress(f"attempt 1: verifying ({command})")
        rerun = run_command(self.root, command, self.ctx.cancel_check)
        if self.recorder is not None:
            self.ctx.change = self.recorder.record(test_cmd=command, before=None, after=rerun)
        self.ctx.attempt_log[-1].update(
            verified=rerun.passed,
            test_exit_code=rerun.exit_code,
            runner_output=rerun.output,
            files_changed=self.changed,
        )
        return rerun

    def result(self, skill: str, /, **values: Any) -> SkillRunResult:
        return self.ctx.result(**values)


def run_review(ctx: RunContext) -> SkillRunResult:
    args = ctx.args
    ask = skill_steps.review_ask(
        ctx.run.project_root,
        paths=args.get("paths"),
        git_range=args.get("git_range"),
        focus=args.get("focus"),
        consensus=args.get("consensus"),
        model=args.get("model"),
    )
    return skill_steps.review(WorkerBackend(ctx), ask)


def run_debug(ctx: RunContext) -> SkillRunResult:
    args = ctx.args
    ask = skill_steps.debug_ask(
        ctx.run.project_root, symptom=args["symptom"], failing_cmd=args["failing_cmd"], model=args.get("model")
    )
    return skill_steps.debug(WorkerBackend(ctx), ask)


def run_spec(ctx: RunContext) -> SkillRunResult:
    worker, stopped = _single_answer(ctx, spec_task(ctx.args))
    if stopped is not None:
        return stopped
    report = worker.report or {}
    criteria = report.get("acceptance_criteria", [])
    body = (
        report["spec"].rstrip()
        + "\n\n## Acceptance criteria\n\n"
        + "\n".join(f"{number}. {text}" for number, text in enumerate(criteria, 1))
    )
    note_id, note_message = _write_spec_note(report["title"], body, ctx)
    return ctx.result(
        status=Verdict.PASS,
        message="spec written" + note_message,
        attempts=1,
        title=report["title"],
        spec=body,
        acceptance_criteria=criteria,
        note_id=note_id,
    )


def _write_spec_note(title: str, body: str, ctx: RunContext) -> tuple[int | None, str]:
    provenance = {"skill": "spec", "run_id": ctx.run.pk, "model": ctx.model, "project": ctx.args.get("project", "")}
    text, redactions = redact_fields({"title": title, "body": body})
    if redactions:
        provenance["redactions"] = redactions
    # The note is written as the person who asked for the spec, and only if their role may write raw notes.
    author = ctx.run.requested_by
    if author is not None and not role_allows(author, "brain:write"):
        return None, f" (not saved to the brain: {author.get_username()}'s role cannot write raw notes)"
    try:
        note = do_write_raw_note(
            title=text["title"],
            body=text["body"],
            source="spec",
            provenance=provenance,
            session_id=ctx.run.session_id or "",
            user=author,
        )
    except Exception as exc:  # noqa: BLE001 - the spec itself is still returned
        return None, f" (writing the raw note failed: {exc})"
    return note.pk, " and saved to the brain as a raw note"


RUNNERS: dict[str, Callable[[RunContext], SkillRunResult]] = {
    "tdd": run_tdd,
    "review": run_review,
    "debug": run_debug,
    "spec": run_spec,
    "apply": run_apply,
}
