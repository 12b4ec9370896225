"""Notes that carry a check: a command whose exit status proves what the note says (docs/truth.md).

A wiki note's frontmatter `check:` is one shell command (`grep -q "round(amount, 2)" billing/rounding.py`,
`pytest -q tests/test_rounding.py::test_half_up`, `python -c "…assert…"`). It runs against the project's
branch head in a throwaway copy of that commit's tree (`git archive`, never the person's work tree), through
the supervisor's test runner (registered at start-up: `register_check_runner`), so with a test run's limits:
SUPERVISOR_TEST_TIMEOUT, the environment allow-list, the process group killed when it ends or times out.

Exit 0: the note is **proven at <commit>** (if its anchors hold too); anything else: **stale**, with the
command's output as evidence. It runs when a sync re-checks the note (files its anchors name changed, or
the first sync), on brain_verify, and at most once per head (brain.models.NoteCheckRun). Setting one is a
reviewer's or staff's (CheckRefused, 403, at every door), as it runs a command on the server.

This module decides and prepares; `brain.actions.do_run_note_check` runs and stores.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from brain.errors import BrainInputError, CheckRefused
from brain.models import NoteCheckRun, NoteStatus, VerificationState
from brain.repository import Repository
from brain.truth import NoteVerdict
from hyperguild.lib.git import GIT_TIMEOUT_SECONDS, git
from hyperguild.lib.typed import JSON
from people.permissions import role_allows

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from brain.models import Note

FRONTMATTER_KEY = "check"
MAX_CHECK_CHARS = 500
MAX_OUTPUT_EVIDENCE_CHARS = 2000


@dataclass
class CheckResult:
    """What the runner reports of one run."""

    passed: bool
    exit_code: int | None
    outcome: str
    output: str
    seconds: float


# (the tree's root, the command) → CheckResult; the supervisor registers its test runner at start-up.
CheckRunner = Callable[[Path, str], CheckResult]
_runner: list[CheckRunner] = []


def register_check_runner(runner: CheckRunner) -> None:
    _runner[:] = [runner]


def check_runner() -> CheckRunner | None:
    return _runner[0] if _runner else None


def check_command(note: Note) -> str:
    """The note's check, or "" (only a wiki note's runs)."""
    value = (note.frontmatter or {}).get(FRONTMATTER_KEY)
    return value.strip() if isinstance(value, str) else ""


def clean_check(value: Any) -> str:
    """A check as given in frontmatter: one line of shell, 1-500 characters (BrainInputError otherwise)."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not value.strip():
        raise BrainInputError(
            "check must be one shell command as a string, e.g. grep -q 'round(amount, 2)' billing/rounding.py"
        )
    value = value.strip()
    if len(value) > MAX_CHECK_CHARS or "\n" in value or "\0" in value:
        raise BrainInputError(f"check must be one line of at most {MAX_CHECK_CHARS} characters.")
    return value


def refuse_unless_allowed(user: User | None, old: JSON | None, new: JSON | None) -> None:
    """CheckRefused when `user` sets or changes a check and is no reviewer (or staff); None is the service itself."""
    before = (old or {}).get(FRONTMATTER_KEY) if isinstance(old, dict) else None
    after = (new or {}).get(FRONTMATTER_KEY) if isinstance(new, dict) else None
    if after in (None, "") or after == before:
        return
    clean_check(after)
    if user is not None and not role_allows(user, "brain:review"):
        raise CheckRefused(
            "Only a reviewer or staff may give a note a `check:` (it runs a command on the server); "
            "leave it out, or ask a reviewer to add it."
        )


def export_tree(repo: Repository, commit: str, into: Path) -> None:
    """The commit's files into `into` (`git archive`: the repository and any work tree stay untouched)."""
    done = git(repo.git_dir, "archive", "--format=tar", commit, timeout=GIT_TIMEOUT_SECONDS)
    with tarfile.open(fileobj=io.BytesIO(done.output)) as archive:
        archive.extractall(into, filter="data")  # no links out of the tree, no devices


def with_check(note: Note, verdict: NoteVerdict) -> NoteVerdict:
    """The note's verdict from its anchors, with its check's last run for the same command folded in.

    A failed check makes it stale (the output is the evidence); a passed one makes a note whose anchors do
    not fail *proven at* the commit the check ran at. No check, or no run yet: the anchors' verdict."""
    command = check_command(note)
    if not command or note.status != NoteStatus.WIKI:
        return verdict
    run = NoteCheckRun.objects.filter(note=note, command=command).order_by("-ran_at", "-id").first()
    if run is None:
        return verdict
    if not run.passed and waiver_key(run) in (note.waived_anchors or {}):
        return verdict  # a person said "still true" although the check failed at that commit
    if not run.passed:
        anchors = verdict.evidence if verdict.state == VerificationState.STALE else []
        return NoteVerdict(VerificationState.STALE, run.commit, [*anchors, dict(failed_evidence(run))])
    if verdict.state == VerificationState.STALE:
        return verdict
    return NoteVerdict(
        VerificationState.PROVEN,
        run.commit,
        [
            {
                "message": f"proven at {run.commit[:7]} (check passed)",
                "check": command,
                "seconds": round(run.seconds, 3),
            }
        ],
    )


class FailedCheckEvidence(TypedDict):
    """A failed check in a note's `verification_evidence`, in the shape of an anchor's evidence."""

    anchor: str  # the command
    kind: str  # "check"
    state: str  # "failed"
    path: str
    quoted: str
    now: str  # the tail of what it printed
    changed_in: str
    hunk: str
    message: str


def failed_evidence(run: NoteCheckRun) -> FailedCheckEvidence:
    """A failed check as the re-check queue shows evidence: the command beside what it printed."""
    why = "timed out" if run.outcome == "timeout" else f"exit {run.exit_code}"
    shown = run.command if len(run.command) <= 80 else run.command[:77] + "…"
    return {
        "anchor": run.command,
        "kind": "check",
        "state": "failed",
        "path": "",
        "quoted": run.command,
        "now": run.output[-MAX_OUTPUT_EVIDENCE_CHARS:],
        "changed_in": run.commit,
        "hunk": "",
        "message": f"check `{shown}` failed at {run.commit[:7]} ({why})",
    }


def waiver_key(run: NoteCheckRun) -> str:
    """The key "Still true" waives a failed run under (in `Note.waived_anchors`, beside the anchors' keys): for
    that commit only, so the check failing again at a later head makes the note stale again."""
    return f"check:{run.commit}:{run.command}"


def failed_run(note: Note) -> NoteCheckRun | None:
    """The note's last run of its check, when that run failed."""
    command = check_command(note)
    if not command:
        return None
    run = NoteCheckRun.objects.filter(note=note, command=command).order_by("-ran_at", "-id").first()
    return run if run is not None and not run.passed else None
