"""`apply`: a verified review's grounded findings become commits, one per finding, only when every gate passes.

    check_apply_request(root, arguments)   # before anything is recorded: the review run, the branch
    result = run_apply(ctx)                # the runner (supervisor.runners.RUNNERS["apply"])

The user's working tree, index, HEAD and other worktrees are never touched:
the work happens in a `git worktree` (under DATA_DIR/apply/) on a new branch
`hyperguild/apply-<review run id>` made from the commit the review read
(`reviewed_commit` in its result). The supervisor first runs `test_cmd`
there (and `lint_cmd`, to count its findings); a suite that already fails
refuses every finding, since nothing could be verified. Then, for each
finding of the review in order, the gates run in this order and the first
that fails names the refusal:

- `confidence`: the finding's confidence >= SUPERVISOR_APPLY_MIN_CONFIDENCE
  (or the call's `min_confidence`);
- `apply` (a patch at all): the suggestion holds a unified diff;
- `size`: its added + removed lines <= SUPERVISOR_MAX_PATCH_LINES (or the
  call's `max_patch_lines`);
- `apply`: `git apply` takes it on the branch as it is now;
- `rationale`: the patch changes (or creates) only the finding's file, and
  only lines within QUOTE_WINDOW of the code the finding quotes;
- `tests`: the supervisor runs `test_cmd` itself; it must pass;
- `warnings`: with `lint_cmd`, its count of findings (non-empty output
  lines) must not be higher than before the patch.

Every gate that needs no run of the project's code comes before `tests`: a
patch refused by one of them is never executed (a `conftest.py` it creates
is never imported).

A finding that passes every gate is one commit (naming the finding and both
runs); one that fails is reverted (`git reset --hard`, `git clean`) and the
gate, the reason and an excerpt of the evidence are recorded. Findings the
review itself dropped are listed as refused with the review's gate. The
branch is left for a person to merge; with nothing applied it is deleted.
Each finding is one entry of the run's `attempt_log` (an applied one with
its `change`), and the run's `change` records the pre-state, so applied
patches become training examples that `trainer_verify` replays.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from django.conf import settings

from hyperguild.lib.git import RepositoryUnreadable, git
from hyperguild.lib.text import excerpt
from hyperguild.lib.typed import JSON
from supervisor import executor
from supervisor.changes import ChangePart, ChangeRecorder
from supervisor.errors import ApplyRefused
from supervisor.executor import ProcessOutcome
from supervisor.grounding import (
    QUOTE_WINDOW,
    finding_kind,
    fingerprint,
    patch_size,
    quote_span,
    suggested_diff,
)
from supervisor.models import SkillRun
from supervisor.project_tests import NO_TEST_COMMAND, TestRun, detect_test_command, run_command
from supervisor.roots import RootRefused, resolve_inside, resolve_project_root
from supervisor.run_results import SkillRunResult
from supervisor.shell_reach import check_shell_arguments
from supervisor.skills import APPLY_GATE_NAMES, SkillFailed, Verdict

if TYPE_CHECKING:
    from supervisor.runners import RunContext

GATE_CONFIDENCE, GATE_SIZE, GATE_APPLY, GATE_TESTS, GATE_WARNINGS, GATE_RATIONALE = (
    "confidence",
    "size",
    "apply",
    "tests",
    "warnings",
    "rationale",
)
# The run's time ran out before this finding could be tried.
GATE_TIME = "time"
APPLIED, REFUSED = "applied", "refused"
SOURCE_SKILLS = ("review", "debug")
BRANCH_PREFIX = "hyperguild/apply-"
GIT_TIMEOUT = 120
# How much of a gate's evidence (test or lint output, git's message) a refusal keeps.
OUTPUT_EXCERPT_CHARS = 1500
# Folders a test command may need that git does not track: linked into the worktree, never committed.
LINKED_DIRS = (".venv", "venv", "node_modules")
# Every git call (hardened by hyperguild.lib.git: no hooks of the project run), and no signing prompt.
GIT_CONFIG = (
    "-c",
    "commit.gpgsign=false",
    "-c",
    "user.name=hyperguild",
    "-c",
    "user.email=hyperguild@localhost",
)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF_LINE_STARTS = ("--- ", "+++ ", "@@", " ", "+", "-", "\\")


def branch_name(source_run_id: int) -> str:
    return f"{BRANCH_PREFIX}{source_run_id}"


def _git(cwd: Path, *args: str) -> tuple[int | None, str]:
    """(exit code, output) of one git command; None when it could not run to the end (or git is missing)."""
    try:
        ran = git(cwd, *args, check=False, config=GIT_CONFIG, timeout=GIT_TIMEOUT, env=executor.child_environment())
    except RepositoryUnreadable as exc:
        return None, str(exc)
    return ran.exit_code, ran.stdout + (("\n" + ran.stderr) if ran.stderr.strip() else "")


def _git_ok(cwd: Path, *args: str) -> str:
    code, output = _git(cwd, *args)
    if code != 0:
        raise SkillFailed(f"git {' '.join(args[:3])} failed in {cwd}: {excerpt(output, 500)}")
    return output.strip()


def head_commit(root: Path) -> str | None:
    """The commit checked out in `root`, or None when it is not a git work tree (or has no commit yet)."""
    code, output = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return output.strip() if code == 0 and output.strip() else None


def _source_run(root: Path, arguments: Mapping[str, Any]) -> SkillRun:
    run_id: Any = arguments.get("run_id")  # as the caller sent it: the lookup finds no run for a bad one
    source = SkillRun.objects.filter(pk=run_id).first()
    if source is None:
        raise ApplyRefused(f"run {run_id} does not exist: pass the run_id a review (or debug) call returned")
    if source.skill not in SOURCE_SKILLS:
        raise ApplyRefused(f"run {run_id} is a {source.skill} run; apply takes the run_id of a review or debug run")
    if source.status != SkillRun.Status.PASS or source.verified is not True:
        raise ApplyRefused(
            f"run {run_id} is not a verified {source.skill} (status {source.status}, verified {source.verified}): "
            "only findings the supervisor grounded are applied"
        )
    if Path(source.project_root or "/nonexistent").resolve() != root:
        raise ApplyRefused(f"run {run_id} reviewed {source.project_root}, not {root}")
    if not (source.result or {}).get("reviewed_commit"):
        raise ApplyRefused(
            f"run {run_id} recorded no reviewed commit (the project was not a git repository with a commit when it "
            "ran): commit the code, review it again, then apply"
        )
    return source


def check_apply_request(root: Path, arguments: Mapping[str, Any]) -> SkillRun:
    """Refuse a call that cannot work before anything is recorded or run; returns the review run."""
    check_shell_arguments(arguments)
    source = _source_run(root, arguments)
    commit = (source.result or {})["reviewed_commit"]  # _source_run checked it is there
    code, _ = _git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    if code != 0:
        raise ApplyRefused(f"the reviewed commit {commit[:12]} is not in the repository at {root} any more")
    branch = branch_name(source.pk)
    code, _ = _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if code == 0:
        raise ApplyRefused(
            f"branch {branch} already exists (an earlier apply of run {source.pk}): merge or delete it "
            f"(git branch -D {branch}) to apply again"
        )
    return source


# --- one finding's gates ----------------------------------------------------------------


class GateCheck(TypedDict):
    gate: str
    passed: bool
    detail: str


# The finding's fields an entry repeats (the review's grounded finding, as its result stored it).
FINDING_FIELDS = ("file", "line", "title", "kind", "severity", "confidence", "quote", "rationale")
# An entry's fields as the apply result lists them (the attempt log keeps the diffs and test output in full).
PUBLIC_FIELDS = (
    "index",
    "file",
    "line",
    "title",
    "kind",
    "confidence",
    "fingerprint",
    "outcome",
    "commit",
    "gate",
    "reason",
    "output",
    "gates",
)


@dataclass
class ApplyEntry:
    """One finding's way through the gates: an entry of the run's attempt log (`as_attempt`), and of its result's
    findings (`as_public`). Refused until every gate passed."""

    index: int
    finding: JSON  # FINDING_FIELDS of the review's finding, as it stored them
    fingerprint: str
    outcome: str = REFUSED
    gate: str | None = None
    reason: str = ""
    output: str = ""
    commit: str | None = None
    gates: list[GateCheck] = field(default_factory=list)
    # Set once the tests ran with the patch.
    runner_output: str | None = None
    test_exit_code: int | None = None
    verified: bool | None = None
    attempted_change: ChangePart | None = None  # the patch that broke the tests (no state of the branch)
    change: ChangePart | None = None  # the applied patch
    # Not stored: what the next finding starts from.
    tests: TestRun | None = None
    lint_after: int | None = None

    def check(self, gate: str, passed: bool, detail: str) -> bool:
        """Record one gate; the first that fails names the refusal."""
        self.gates.append({"gate": gate, "passed": passed, "detail": detail})
        if not passed:
            self.outcome, self.gate, self.reason = REFUSED, gate, detail
        return passed

    def as_attempt(self) -> JSON:
        """The attempt-log entry (stored JSON; `sessions.extraction` reads applied and test-refused ones)."""
        attempt: JSON = {
            "attempt": self.index,
            "index": self.index,
            **self.finding,
            "fingerprint": self.fingerprint,
            "outcome": self.outcome,
            "gate": self.gate,
            "reason": self.reason,
            "output": self.output,
            "commit": self.commit,
            "gates": self.gates,
        }
        if self.verified is not None:
            attempt.update(runner_output=self.runner_output, test_exit_code=self.test_exit_code, verified=self.verified)
        if self.attempted_change is not None:
            attempt["attempted_change"] = self.attempted_change
        if self.change is not None:
            attempt["change"] = self.change
        return attempt

    def as_public(self) -> JSON:
        attempt = self.as_attempt()
        return {key: attempt.get(key) for key in PUBLIC_FIELDS}


def normalise_diff(diff: str, finding_file: str, prefix: str) -> str:
    """The suggestion's diff with git's `a/` `b/` headers, paths under `prefix` (the project inside its repository).

    A diff of bare hunks is taken to be about the finding's file.
    """
    out: list[str] = []
    lines = diff.splitlines(keepends=True)
    if not any(line.startswith("--- ") for line in lines):
        lines = [f"--- a/{finding_file}\n", f"+++ b/{finding_file}\n", *lines]
    for line in lines:
        if not line.startswith(_DIFF_LINE_STARTS) and line.strip():
            # `diff --git`, `index`, mode, rename and binary lines (a patch may not turn a file into a symlink or
            # move it), and any prose around the diff: only headers and hunks reach git apply.
            continue
        for marker, side in (("--- ", "a/"), ("+++ ", "b/")):
            if line.startswith(marker):
                path = line[4:].strip().split("\t")[0]
                if path != "/dev/null":
                    path = path[2:] if path.startswith(("a/", "b/")) else path
                    path = f"{side}{prefix}{path}"
                line = f"{marker}{path}\n"
                break
        out.append(line)
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def diff_paths(diff: str) -> set[str]:
    """Files a normalised diff names (prefix included, `a/`/`b/` removed)."""
    paths = set()
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            path = line[4:].strip()
            if path != "/dev/null":
                paths.add(path[2:])
    return paths


def changed_old_lines(diff_u0: str) -> Mapping[str, list[tuple[int, int]]]:
    """{file: [(first, last) old lines changed]} from `git diff -U0`; an insertion after line n is (n, n)."""
    changed: dict[str, list[tuple[int, int]]] = {}
    current = None
    for line in diff_u0.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = path[2:] if path.startswith("b/") else path
            changed.setdefault(current, [])
        elif line.startswith("--- ") and line[4:].strip() != "/dev/null":
            path = line[4:].strip()
            current = path[2:] if path.startswith("a/") else path
        elif current is not None and (match := _HUNK.match(line)):
            start, length = int(match.group(1)), int(match.group(2) if match.group(2) is not None else 1)
            changed.setdefault(current, []).append((start, start + max(length, 1) - 1) if length else (start, start))
    return changed


def rationale_problem(
    finding: Mapping[str, Any], work_root: Path, diff_u0: str, shift: int, patched: Set[str] = frozenset()
) -> str | None:
    """Why the change is not the change the finding argues for (None: it is).

    `patched` are the paths the patch itself names (relative to the project): a file it creates is
    untracked, so `git diff HEAD` does not show it, but it is a change all the same.
    """
    changed = changed_old_lines(diff_u0)
    wanted = finding["file"]
    others = sorted({path for path in changed if path != wanted} | {path for path in patched if path != wanted})
    if others:
        return f"the patch changes {', '.join(others)}, but the finding is about {wanted}"
    if wanted not in changed:
        return f"the patch does not change {wanted}, the file the finding is about"
    try:
        current = (work_root / wanted).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        current = []
    # The code as it was before this patch (HEAD of the branch): earlier commits may have moved it.
    code, before = _git(work_root, "show", f"HEAD:./{wanted}")
    lines = before.splitlines() if code == 0 else current
    span = quote_span(lines, int(finding["line"]), str(finding.get("quote") or ""), QUOTE_WINDOW + abs(shift))
    if span is None:
        return f"the quoted code is no longer near line {finding['line']} of {wanted} (an earlier patch changed it)"
    low, high = span[0] - QUOTE_WINDOW, span[1] + QUOTE_WINDOW
    far = [(first, last) for first, last in changed[wanted] if last < low - 1 or first > high]
    if far:
        shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in far)
        return (
            f"the patch changes line(s) {shown} of {wanted}, outside lines {max(low, 1)}-{high} "
            f"(the quoted code at {span[0]}-{span[1]} and {QUOTE_WINDOW} lines around it)"
        )
    return None


def lint_count(run: TestRun) -> int:
    """A lint command's count of findings: its non-empty output lines (give it a one-line-per-finding format)."""
    return sum(1 for line in run.output.splitlines() if line.strip() and not line.startswith("[supervisor:"))


def _tail(text: str) -> str:
    text = (text or "").strip()
    return text if len(text) <= OUTPUT_EXCERPT_CHARS else "…" + text[-OUTPUT_EXCERPT_CHARS:]


# --- the run ---------------------------------------------------------------------------


class _Worktree:
    """A git worktree of `root`'s repository on a new branch, removed (the branch kept) when done."""

    def __init__(self, root: Path, branch: str, commit: str, folder: Path):
        self.root, self.branch, self.commit, self.folder = root, branch, commit, folder
        top = Path(_git_ok(root, "rev-parse", "--show-toplevel")).resolve()
        self.prefix = "" if top == root else str(root.relative_to(top)) + "/"
        self.work_root = folder / self.prefix if self.prefix else folder
        self.created = False

    def __enter__(self) -> _Worktree:
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        _git_ok(self.root, "worktree", "add", "--quiet", "-b", self.branch, str(self.folder), self.commit)
        self.created = True  # from here on the branch is ours to delete (before, it may be someone else's)
        for name in LINKED_DIRS:
            source, target = self.root / name, self.work_root / name
            if source.is_dir() and not target.exists():
                target.symlink_to(source)
        return self

    def revert(self) -> None:
        _git_ok(self.folder, "reset", "--quiet", "--hard", "HEAD")
        _git_ok(self.folder, "clean", "-fdq", *[arg for name in LINKED_DIRS for arg in ("-e", f"/{self.prefix}{name}")])

    def close(self, keep_branch: bool) -> None:
        if not self.created:
            return
        remove_own_worktree(self.root, self.folder)
        if not keep_branch:
            _git(self.root, "branch", "-D", self.branch)


def remove_own_worktree(root: Path, folder: Path) -> None:
    """Remove one worktree apply made (its folder and its metadata), and nothing else.

    Never `git worktree prune`: that also drops the metadata of the owner's own worktrees whose folders
    are moved aside for a while, and they are then no repository any more. `git worktree remove` names
    the one worktree, whether its folder is still there or not.
    """
    repository = root
    if folder.is_dir():
        # The repository the worktree belongs to (it may not be `root`'s: a stale folder of another project).
        code, common = _git(folder, "rev-parse", "--path-format=absolute", "--git-common-dir")
        if code == 0 and common.strip():
            repository = Path(common.strip().splitlines()[0])
    code, _ = _git(repository, "worktree", "remove", "--force", str(folder))
    if code != 0 and folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
        _git(repository, "worktree", "remove", "--force", str(folder))


def _registered_worktrees(root: Path) -> list[Path]:
    code, listing = _git(root, "worktree", "list", "--porcelain")
    if code != 0:
        return []
    return [Path(line.removeprefix("worktree ")) for line in listing.splitlines() if line.startswith("worktree ")]


def _finished_run_folder(folder: Path, base: Path) -> bool:
    """Is `folder` apply's own folder (DATA_DIR/apply/run-<id>) of a run that has ended?"""
    if folder.parent != base:
        return False
    run_id = folder.name.removeprefix("run-")
    return (
        folder.name.startswith("run-")
        and run_id.isdigit()
        and SkillRun.objects.filter(pk=int(run_id)).exclude(status__in=SkillRun.UNFINISHED).exists()
    )


def remove_stale_worktrees(root: Path) -> None:
    """Worktrees of apply runs that ended without cleaning up (their process was killed): folder and metadata gone.

    Only apply's own (DATA_DIR/apply/run-<id> of a finished run) are touched; the owner's worktrees are not.
    """
    base = (Path(settings.DATA_DIR) / "apply").resolve()
    stale = (
        {folder.resolve() for folder in base.iterdir() if _finished_run_folder(folder.resolve(), base)}
        if base.is_dir()
        else set()
    )
    # Registered in `root`'s repository but with the folder gone (removed by hand, or a crash mid-removal).
    stale |= {folder for folder in _registered_worktrees(root) if _finished_run_folder(folder, base)}
    for folder in sorted(stale):
        remove_own_worktree(root, folder)


def _entry(index: int, finding: Mapping[str, Any]) -> ApplyEntry:
    return ApplyEntry(
        index=index,
        finding={key: finding.get(key) for key in FINDING_FIELDS},
        fingerprint=fingerprint(finding) if finding.get("quote") else "",
    )


def _commit_message(entry: ApplyEntry, source: SkillRun, apply_run_id: int) -> str:
    finding = entry.finding
    title = " ".join(str(finding.get("title") or "finding").split())[:60]
    return (
        f"hyperguild apply: {title}\n\n"
        f"Finding {entry.index} of {source.skill} run {source.pk} ({finding['file']}:{finding['line']}, "
        f"{finding_kind(finding)}, confidence {finding.get('confidence')}).\n"
        f"Applied by apply run {apply_run_id}: gates confidence, size, apply, rationale, tests and warnings passed.\n"
    )


def run_apply(ctx: RunContext) -> SkillRunResult:
    root = resolve_project_root(ctx.run.project_root)
    args = ctx.args
    try:
        source = check_apply_request(root, args)
    except ApplyRefused as exc:
        raise SkillFailed(str(exc)) from exc
    test_cmd = args.get("test_cmd") or detect_test_command(root)
    if not test_cmd:
        raise SkillFailed(NO_TEST_COMMAND)
    lint_cmd = args.get("lint_cmd") or None
    min_confidence = args.get("min_confidence", settings.SUPERVISOR_APPLY_MIN_CONFIDENCE)
    max_lines = args.get("max_patch_lines", settings.SUPERVISOR_MAX_PATCH_LINES)
    commit = (source.result or {})["reviewed_commit"]  # check_apply_request checked it is there
    branch = branch_name(source.pk)
    deadline = time.monotonic() + executor.run_budget_seconds() - settings.SUPERVISOR_TEST_TIMEOUT * 2 - 30
    remove_stale_worktrees(root)
    entries: list[ApplyEntry] = []
    findings = list((source.result or {}).get("findings") or [])
    fields = {
        "branch": None,
        "base_commit": commit,
        "source_run_id": source.pk,
        "test_cmd": test_cmd,
        "lint_cmd": lint_cmd,
    }
    worktree = _Worktree(root, branch, commit, Path(settings.DATA_DIR) / "apply" / f"run-{ctx.run.pk}")
    applied_any = False
    with tempfile.TemporaryDirectory(prefix="hyperguild-apply-") as scratch:
        try:
            worktree.__enter__()
            work = worktree.work_root
            recorder = ChangeRecorder(work)
            ctx.progress(f"baseline: {test_cmd} on {commit[:12]}")
            baseline = run_command(work, test_cmd, ctx.cancel_check)
            if baseline.outcome == ProcessOutcome.CANCELLED:
                return ctx.result(status=Verdict.CANCELLED, message="cancelled while the baseline tests ran", **fields)
            lint_before = None
            if lint_cmd:
                lint_run = run_command(work, lint_cmd, ctx.cancel_check)
                if lint_run.outcome == ProcessOutcome.CANCELLED:
                    return ctx.result(
                        status=Verdict.CANCELLED, message="cancelled while the baseline lint ran", **fields
                    )
                lint_before = lint_count(lint_run)
            worktree.revert()
            last_tests = baseline
            shifts: dict[str, int] = {}
            for index, finding in enumerate(findings, start=1):
                entry = _entry(index, finding)
                entries.append(entry)
                if not baseline.passed:
                    entry.check(
                        GATE_TESTS,
                        False,
                        f"the tests fail before any patch (`{test_cmd}` exit code {baseline.exit_code}), so no "
                        "patch can be verified",
                    )
                    entry.output = _tail(baseline.output)
                    continue
                if time.monotonic() >= deadline:
                    entry.check(GATE_TIME, False, "the run's time budget ran out before this finding was tried")
                    continue
                ctx.progress(f"finding {index} of {len(findings)}: gates")
                stopped = _try_finding(
                    ctx,
                    entry,
                    finding,
                    worktree,
                    recorder,
                    source,
                    Path(scratch),
                    test_cmd=test_cmd,
                    lint_cmd=lint_cmd,
                    lint_before=lint_before,
                    min_confidence=min_confidence,
                    max_lines=max_lines,
                    shifts=shifts,
                )
                if stopped is not None:
                    return ctx.result(status=Verdict.CANCELLED, message=stopped, **fields)
                if entry.outcome == APPLIED:
                    applied_any = True
                    last_tests = entry.tests or last_tests
                    if lint_cmd:
                        lint_before = entry.lint_after
            ctx.change = {
                **recorder.record(test_cmd=test_cmd, before=baseline, after=last_tests),
                # Where the pre-state's texts are when the owner's files have moved on (sessions.replay reads them).
                "git_commit": commit,
                "git_prefix": worktree.prefix,
                "source_run_id": source.pk,
            }
        finally:
            ctx.attempt_log[:] = [entry.as_attempt() for entry in entries]
            worktree.close(keep_branch=applied_any)
    dropped = list((source.result or {}).get("dropped_findings") or [])
    listed = [entry.as_public() for entry in entries] + [
        _dropped_by_review(len(entries) + n, d) for n, d in enumerate(dropped, 1)
    ]
    applied = [entry for entry in entries if entry.outcome == APPLIED]
    refused = len(listed) - len(applied)
    if applied:
        message = (
            f"{len(applied)} of {len(listed)} finding(s) applied as commits on {branch} (from {commit[:12]}); "
            f"{refused} refused. The branch is left for you to merge."
        )
    elif not baseline.passed:
        message = f"nothing applied: the tests fail on {commit[:12]} before any patch (exit code {baseline.exit_code})"
    else:
        message = f"nothing applied: all {len(listed)} finding(s) were refused by a gate; no branch was left"
    return ctx.result(
        status=Verdict.PASS if applied else Verdict.FAIL,
        verified=bool(applied),
        message=message,
        attempts=len(entries),
        runner_output=last_tests.output,
        findings=listed,
        applied=len(applied),
        refused=refused,
        **{**fields, "branch": branch if applied else None},
    )


def _dropped_by_review(index: int, dropped: Mapping[str, Any]) -> JSON:
    gate = str(dropped.get("gate") or "")
    gate = gate if gate in APPLY_GATE_NAMES else "quote"  # a review's own gates are all named; never an unknown one
    reason = f"dropped by the review ({gate}): {dropped.get('reason', '')}"
    return {
        "index": index,
        "file": dropped.get("file"),
        "line": dropped.get("line"),
        "title": dropped.get("title"),
        "kind": dropped.get("kind"),
        "confidence": dropped.get("confidence"),
        "fingerprint": "",
        "outcome": REFUSED,
        "commit": None,
        "gate": gate,
        "reason": reason,
        "output": "",
        "gates": [{"gate": gate, "passed": False, "detail": reason}],
    }


def _try_finding(
    ctx: RunContext,
    entry: ApplyEntry,
    finding: Mapping[str, Any],
    worktree: _Worktree,
    recorder: ChangeRecorder,
    source: SkillRun,
    scratch: Path,
    *,
    test_cmd: str,
    lint_cmd: str | None,
    lint_before: int | None,
    min_confidence: float,
    max_lines: int,
    shifts: dict[str, int],
) -> str | None:
    """Run one finding through the gates, committing or reverting it; a message if the run was cancelled."""
    confidence = finding.get("confidence")
    ok = isinstance(confidence, int | float) and not isinstance(confidence, bool) and confidence >= min_confidence
    if not entry.check(GATE_CONFIDENCE, ok, f"confidence {confidence} {'>=' if ok else '<'} {min_confidence:g}"):
        return None
    diff = suggested_diff(str(finding.get("suggestion") or ""))
    if diff is None:
        entry.check(GATE_APPLY, False, "the suggestion holds no unified diff, so there is nothing to apply")
        return None
    size = patch_size(diff)
    if not entry.check(GATE_SIZE, size <= max_lines, f"{size} changed line(s), limit {max_lines}"):
        return None
    work = worktree.work_root
    diff = normalise_diff(diff, str(finding["file"]), worktree.prefix)
    try:
        for path in diff_paths(diff):
            resolve_inside(worktree.folder, path)
    except RootRefused as exc:
        entry.check(GATE_APPLY, False, f"the patch names a path outside the project: {exc}")
        return None
    patch_file = scratch / f"finding-{entry.index}.diff"
    patch_file.write_text(diff, encoding="utf-8")
    recorder.begin()
    # --recount: models miscount hunk lengths; --unidiff-zero: a hunk without trailing context is not pinned to
    # the end of the file (its context and removed lines must still match exactly).
    code, output = _git(worktree.folder, "apply", "--recount", "--unidiff-zero", "--whitespace=nowarn", str(patch_file))
    if not entry.check(
        GATE_APPLY,
        code == 0,
        "git apply took the patch"
        if code == 0
        else f"the patch does not apply to {finding['file']} at {worktree.branch}",
    ):
        entry.output = _tail(output)
        worktree.revert()
        return None
    # The rationale needs no run of the project's code: it comes before `tests`, so a refused patch never executes.
    code, diff_u0 = _git(work, "diff", "-U0", "--no-color", "--relative", "HEAD", "--", ".")
    patched = {path.removeprefix(worktree.prefix) for path in diff_paths(diff)}
    problem = rationale_problem(
        finding, work, diff_u0 if code == 0 else "", shifts.get(str(finding["file"]), 0), patched
    )
    if not entry.check(GATE_RATIONALE, problem is None, problem or "the patch changes the cited lines"):
        entry.output = _tail(diff_u0)
        worktree.revert()
        return None
    ctx.progress(f"finding {entry.index}: {test_cmd}")
    tests = run_command(work, test_cmd, ctx.cancel_check)
    if tests.outcome == ProcessOutcome.CANCELLED:
        worktree.revert()
        return "cancelled while the tests ran"
    passed = entry.check(
        GATE_TESTS,
        tests.passed,
        "the tests pass (exit code 0)"
        if tests.passed
        else f"the tests fail with the patch (`{test_cmd}` exit code {tests.exit_code}"
        f"{', timed out' if tests.outcome == ProcessOutcome.TIMEOUT else ''})",
    )
    entry.runner_output, entry.test_exit_code, entry.verified = tests.output, tests.exit_code, tests.passed
    if not passed:
        entry.output = _tail(tests.output)
        # The patch that broke the tests is kept aside (not as `change`: it is no state of the branch),
        # for a DPO pair when another patch for the same finding is applied.
        entry.attempted_change = recorder.attempt()
        worktree.revert()
        recorder.begin()
        return None
    if lint_cmd:
        lint_run = run_command(work, lint_cmd, ctx.cancel_check)
        if lint_run.outcome == ProcessOutcome.CANCELLED:
            worktree.revert()
            return "cancelled while the lint command ran"
        after = lint_count(lint_run)
        if not entry.check(
            GATE_WARNINGS,
            after <= (lint_before or 0),
            f"`{lint_cmd}` finds {after} after the patch, {lint_before} before",
        ):
            entry.output = _tail(lint_run.output)
            worktree.revert()
            return None
        entry.lint_after = after
    part = recorder.attempt()
    paths = [item["path"] for item in part["files"]]
    _git_ok(work, "add", "-A", "--", *(paths or ["."]))
    _git_ok(work, "commit", "--quiet", "--no-verify", "-m", _commit_message(entry, source, ctx.run.pk))
    entry.outcome, entry.gate, entry.reason = APPLIED, None, "every gate passed"
    entry.commit, entry.change, entry.tests = _git_ok(work, "rev-parse", "HEAD"), part, tests
    added = sum(1 for line in part["diff"].splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in part["diff"].splitlines() if line.startswith("-") and not line.startswith("---"))
    shifts[str(finding["file"])] = shifts.get(str(finding["file"]), 0) + added - removed
    return None
