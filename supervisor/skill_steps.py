"""Review, debug and consensus, written once for the two backends that answer them.

    ask = review_ask(params.project_root, paths=..., git_range=..., ...)   # what the skill asks
    result = review(backend, ask)                                          # a SkillRunResult
    result = debug(backend, debug_ask(...))

A skill step here says what the skill asks (`ReviewAsk`, `DebugAsk`), how an
answer is grounded and judged (`check_review`, `check_debug`, then
`review_verified` / the re-run of `failing_cmd`) and what its result holds.
A `Backend` gets the answers:

- the `claude` worker (`supervisor.runners.WorkerBackend`): headless Claude
  Code in the project. It reads the files itself and may edit them
  (`edits_files`), so a debug is verified by re-running `failing_cmd` after
  it stops; an answer the check refuses is reported, never retried.
- the routed model (`supervisor.routing_service.RoutedBackend`): the model
  the router picks, over the OpenAI wire. It is shown the files and only
  answers, so `failing_cmd` runs before it (its output is the evidence); an
  answer the check refuses fails open onto the thinking model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hyperguild.lib.git import RepositoryUnreadable, git
from supervisor import executor
from supervisor.apply import head_commit
from supervisor.consensus import ReviewAnswer, agree
from supervisor.errors import ProjectCommandFailed
from supervisor.executor import ProcessOutcome
from supervisor.grounding import GATE_FILE, GATE_LINE, GATE_QUOTE, Grounding, ground_findings, review_verified
from supervisor.project_tests import TestRun
from supervisor.roots import RootRefused, resolve_inside, resolve_project_root
from supervisor.run_results import SkillRunResult
from supervisor.shell_reach import check_git_range
from supervisor.skills import Verdict

GIT_DIFF_TIMEOUT_SECONDS = 60
# A review whose findings are mostly invented (wrong file, line or quote) is a failed answer.
MAX_UNGROUNDED_SHARE = 0.5
_UNGROUNDED_GATES = (GATE_FILE, GATE_LINE, GATE_QUOTE)


# --- what a skill asks ----------------------------------------------------------------


@dataclass(frozen=True)
class ReviewAsk:
    """A review: the project, what to read (paths, the diff of git_range), the focus, how many reviewers."""

    root: Path
    paths: list[str]
    git_range: str | None
    diff: str | None  # `git diff` of git_range, whole
    focus: str | None
    consensus: int
    model: str | None
    reviewed_commit: str | None


@dataclass(frozen=True)
class DebugAsk:
    """A debug: the symptom and the command that shows it, in the project."""

    root: Path
    symptom: str
    failing_cmd: str
    model: str | None
    reviewed_commit: str | None


SkillAsk = ReviewAsk | DebugAsk


def review_ask(
    project_root: str,
    *,
    paths: list[str] | None,
    git_range: str | None,
    focus: str | None,
    consensus: int | None,
    model: str | None,
) -> ReviewAsk:
    """The review asked for, its paths checked inside the project and the diff of its range read; or RootRefused,
    ArgumentRefused, ProjectCommandFailed."""
    root = resolve_project_root(project_root)
    for path in paths or []:
        resolve_inside(root, path, must_exist=True)
    diff = None
    if git_range:
        check_git_range(git_range)
        diff = git_diff(root, "--no-color", git_range)
    return ReviewAsk(root, list(paths or []), git_range, diff, focus, consensus or 1, model, head_commit(root))


def debug_ask(project_root: str, *, symptom: str, failing_cmd: str, model: str | None) -> DebugAsk:
    root = resolve_project_root(project_root)
    return DebugAsk(root, symptom, failing_cmd, model, head_commit(root))


def git_diff(root: Path, option: str, git_range: str) -> str:
    """`git diff <option> <range>` in the project, in the test commands' environment; or ProjectCommandFailed."""
    try:
        ran = git(
            root,
            *("diff", option, "--end-of-options", git_range, "--"),
            check=False,
            timeout=GIT_DIFF_TIMEOUT_SECONDS,
            env=executor.child_environment(),
        )
    except RepositoryUnreadable as exc:
        raise ProjectCommandFailed(f"git diff {git_range} failed in {root}: {exc}") from None
    if not ran.ok:
        raise ProjectCommandFailed(f"git diff {git_range} failed in {root}: {(ran.stdout + ran.stderr).strip()[-500:]}")
    return ran.stdout


# --- how an answer is grounded and checked -------------------------------------------------


@dataclass
class Checked:
    """An answer's findings grounded in the project, and why the check refuses the answer (None: it passes)."""

    grounding: Grounding
    problem: str | None = None


# check(root, answer): the answer's findings grounded, and whether the answer passes. It does not change `answer`.
Check = Callable[[Path, Mapping[str, Any]], Checked]


def check_review(root: Path, answer: Mapping[str, Any]) -> Checked:
    """A review passes when it is verified (`review_verified`) and at most half its findings are invented."""
    findings = answer.get("findings") or []
    grounding = ground_findings(root, findings)
    verified, why = review_verified(grounding, answer.get("verdict", "comment"))
    if not verified:
        return Checked(grounding, f"the answer is not grounded: {why}")
    invented = [d for d in grounding.dropped if d["gate"] in _UNGROUNDED_GATES]
    if findings and len(invented) / len(findings) > MAX_UNGROUNDED_SHARE:
        return Checked(
            grounding,
            f"{len(invented)} of {len(findings)} findings are not grounded in the files "
            f"(wrong file, line or quote): {grounding.reasons()}",
        )
    return Checked(grounding)


def check_debug(root: Path, answer: Mapping[str, Any]) -> Checked:
    """A diagnosis passes when it quotes real code, shows its hypotheses, names a root cause and a fix inside the project."""
    grounding = ground_findings(root, answer.get("findings") or [])
    if grounding.all_dropped:
        return Checked(grounding, f"the diagnosis quotes no real code: {grounding.reasons()}")
    if not answer.get("hypotheses"):
        return Checked(grounding, "no hypotheses: the diagnosis must show what was considered")
    if not str(answer.get("root_cause", "")).strip() or not str(answer.get("fix", "")).strip():
        return Checked(grounding, "the root cause or the fix is empty")
    for name in answer.get("files_changed") or []:
        try:
            resolve_inside(root, name)
        except RootRefused as exc:
            return Checked(grounding, f"the fix touches a file outside the project: {exc}")
    return Checked(grounding)


# --- the backends ------------------------------------------------------------------------


@dataclass
class Answer:
    """What a backend got for one ask: the model's answer, grounded, and how it came to be."""

    model: str
    report: dict[str, Any] = field(default_factory=dict)  # the answer as the backend received it
    grounding: Grounding = field(default_factory=Grounding)
    attempts: int = 1
    failed: str = ""  # the backend got no usable answer (not JSON, not the schema): why
    refused: str = ""  # the check refused the last answer: the message a result gives for it
    note: str = ""  # what the backend adds to the result's message ("Answered by …")
    files_changed: list[str] = field(default_factory=list)  # what the backend changed in the project


class Stopped(Exception):  # noqa: N818 - a way a run ends, not a fault
    """The backend stopped before any answer (killed, cancelled, unavailable): the run's final result."""

    def __init__(self, result: SkillRunResult) -> None:
        super().__init__(result.get("message", ""))
        self.result = result


class Backend(Protocol):
    """One way to get a skill's answer; the skill steps above say what is asked and how it is judged."""

    # The backend may change the project's files (a debug is then verified by re-running failing_cmd after it).
    edits_files: bool
    # How a consensus result names its reviews ("reviews", "routed reviews").
    reviews: str

    def ask(self, ask: SkillAsk, check: Check, *, number: int = 1, of: int = 1, model: str | None = None) -> Answer:
        """One answer, its findings grounded by `check`; raises Stopped when there is none to judge."""
        ...

    def consensus_models(self, count: int, override: str | None) -> list[str | None]:
        """The model of each of `count` independent reviews (None: the backend's choice)."""
        ...

    def remember(self, findings: list[dict[str, Any]]) -> None:
        """Keep the grounded findings of a verified answer (the routed model: its pathway's fingerprints)."""
        ...

    def verify(self, command: str) -> TestRun:
        """Run `command` in the project after the backend edited it: the check of its answer (edits_files only)."""
        ...

    def result(self, skill: str, /, **values: Any) -> SkillRunResult:
        """The skill's result (`build_result`) with what the backend knows: the run, the time taken."""
        ...


def _with_note(message: str, note: str) -> str:
    return f"{message}.{note}" if note else message


# --- review and consensus ------------------------------------------------------------------


def review(backend: Backend, ask: ReviewAsk) -> SkillRunResult:
    """One review (or `ask.consensus` of them), grounded; verified when it rests on grounded findings."""
    if ask.consensus > 1:
        return consensus_review(backend, ask)
    try:
        answer = backend.ask(ask, check_review, model=ask.model)
    except Stopped as stop:
        return stop.result
    if answer.failed:
        return backend.result("review", status=Verdict.ERROR, message=answer.failed, attempts=answer.attempts)
    grounding = answer.grounding
    verdict = answer.report.get("verdict", "comment")
    verified, why = review_verified(grounding, verdict)
    verified = verified and not answer.refused
    if verified:
        backend.remember(grounding.kept)
    return backend.result(
        "review",
        status=Verdict.PASS if verified else Verdict.FAIL,
        verified=verified,
        message=answer.refused or _with_note(why, answer.note),
        attempts=answer.attempts,
        model_used=answer.model,
        **review_fields(grounding, verdict, answer.report.get("summary", ""), ask.reviewed_commit),
    )


def consensus_review(backend: Backend, ask: ReviewAsk) -> SkillRunResult:
    """`ask.consensus` independent reviews, each grounded on its own, then kept where two agree (`agree`)."""
    count = ask.consensus
    reviews: list[ReviewAnswer] = []
    attempts = 0
    for number, model in enumerate(backend.consensus_models(count, ask.model), start=1):
        try:
            answer = backend.ask(ask, check_review, number=number, of=count, model=model)
        except Stopped as stop:
            return stop.result
        if answer.failed:
            message = f"review {number} of {count} ({answer.model}): {answer.failed}"
            return backend.result("review", status=Verdict.ERROR, message=message, attempts=number)
        grounding = answer.grounding
        attempts += answer.attempts
        verdict, summary = answer.report.get("verdict", "comment"), answer.report.get("summary", "")
        reviews.append(ReviewAnswer(number, answer.model, grounding, verdict, summary))
    outcome = agree(ask.root, reviews)
    verified, why = review_verified(outcome.grounding, outcome.verdict)
    backend.remember(outcome.grounding.kept)
    models = [review.model for review in reviews]
    return backend.result(
        "review",
        status=Verdict.PASS if verified else Verdict.FAIL,
        verified=verified,
        message=f"consensus of {count} {backend.reviews} ({', '.join(models)}): {why}",
        attempts=attempts,
        model_used=", ".join(dict.fromkeys(models)),
        **review_fields(outcome.grounding, outcome.verdict, outcome.summary, ask.reviewed_commit),
    )


def review_fields(grounding: Grounding, verdict: str, summary: str, reviewed_commit: str | None) -> SkillRunResult:
    """The fields a review's result adds to the shared shape."""
    return {
        "findings": grounding.kept,
        "verdict": verdict,
        "dropped_findings": grounding.dropped,
        "summary": summary,
        "reviewed_commit": reviewed_commit,
    }


# --- debug -------------------------------------------------------------------------------


def debug(backend: Backend, ask: DebugAsk, before: TestRun | None = None) -> SkillRunResult:
    """A diagnosis of the symptom, grounded. A backend that edits files is verified by re-running `failing_cmd`
    after it; a backend that only answers is given `before` (failing_cmd's run) as evidence and edits nothing."""
    try:
        answer = backend.ask(ask, check_debug, model=ask.model)
    except Stopped as stop:
        return stop.result
    report = answer.report
    fields: SkillRunResult = {
        "hypotheses": report.get("hypotheses", []),
        "root_cause": report.get("root_cause", ""),
        "fix": report.get("fix", ""),
        "worker_report": report or None,
        "findings": answer.grounding.kept,
        "dropped_findings": answer.grounding.dropped,
        "reviewed_commit": ask.reviewed_commit,
        "model_used": answer.model,
        "attempts": answer.attempts,
    }
    if not backend.edits_files:
        assert before is not None, "a backend that only answers is shown failing_cmd's run"
        exit_text = f"exit code {before.exit_code}" if before.outcome == ProcessOutcome.EXITED else "timed out"
        return backend.result(
            "debug",
            status=Verdict.PASS,
            verified=None,
            message=f"Diagnosis only (failing_cmd {exit_text} before): apply the fix, then re-run failing_cmd."
            + answer.note,
            runner_output=before.output,
            files_changed=report.get("files_changed") or [],
            failing_cmd_passes=True if before.passed else None,
            **fields,
        )
    rerun = backend.verify(ask.failing_cmd)
    passes = rerun.passed
    if answer.failed:
        status, message = Verdict.ERROR, answer.failed
    elif passes:
        status, message = Verdict.PASS, "verified: the failing command passes now"
    else:
        status, message = Verdict.FAIL, f"the failing command still fails (exit code {rerun.exit_code})"
    return backend.result(
        "debug",
        status=status,
        verified=passes,
        message=message,
        runner_output=rerun.output,
        files_changed=answer.files_changed,
        failing_cmd_passes=passes,
        **fields,
    )
