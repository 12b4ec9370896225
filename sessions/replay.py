"""Project states recorded by skill runs, and replaying an example's change on them.

    hashes = state_hashes(run, after_attempt=None)    # the project as the run left it (0: before the worker)
    diff = diff_between(before, after, store)          # a unified diff between two recorded states
    outcome = replay_example(example)                  # rebuild pre-state, apply, run the test command

A run's `change` (supervisor.changes) holds the hash of every project file
before the worker and the text of the files it changed; each attempt's own
files sit in `attempt_log[i]["change"]`. A state is the pre-state with the
first n attempts' changes applied. Texts come from every run recorded on the
same project (`ContentStore`), or from the project itself when a file still
has the recorded hash.

Replay (`trainer_verify`): the example's pre-state is rebuilt in a scratch
folder, the example's own diff (the ```diff block of its answer, so an edited
or tampered example is what gets checked) is applied, and the recorded test
command runs there. The outcome must match the phase: red fails, green and
refactor (and debug's failing command) pass. For DPO the chosen side must
verify and the rejected side must not.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from django.utils import timezone

from hyperguild.lib.diffs import BINARY, FileText, PatchFailed, apply_diff, diff_block, file_diff, join_diffs
from hyperguild.lib.git import RepositoryUnreadable, git
from hyperguild.lib.typed import JSON
from sessions.models import TrainingExample
from supervisor.executor import child_environment
from supervisor.models import SkillRun
from supervisor.project_tests import run_command

# Directories a test command may need but that are never part of a recorded state: linked, not copied.
LINKED_DIRS = (".venv", "venv", "node_modules", "target", "_build")
# What a phase's test run must do for its change to count as verified.
PHASE_EXPECTS = {"tdd_red": "fail", "tdd_green": "pass", "tdd_refactor": "pass", "debug": "pass", "apply": "pass"}
GIT_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
GIT_TIMEOUT = 30
OUTPUT_TAIL_CHARS = 2000


class ReplayError(Exception):
    """The example cannot be replayed (its pre-state or change is not recorded, or does not apply)."""


def _apply_files(hashes: dict[str, str], files: list[JSON] | None) -> None:
    for item in files or []:
        if item.get("after") is None:
            hashes.pop(item["path"], None)
        else:
            hashes[item["path"]] = item["after"]


def state_hashes(run: SkillRun, after_attempt: int | None = None) -> Mapping[str, str] | None:
    """The project's file hashes after `after_attempt` attempts of `run` (0: before the worker, None: at the end)."""
    change = run.change or {}
    if "pre_state" not in change:
        return None
    hashes: dict[str, str] = dict(change["pre_state"])
    if after_attempt is None:
        _apply_files(hashes, change.get("files"))
        return hashes
    for entry in run.attempt_log or []:
        if isinstance(entry, dict) and (entry.get("attempt") or 0) <= after_attempt:
            _apply_files(hashes, (entry.get("change") or {}).get("files"))
    return hashes


class ContentStore:
    """File texts by content hash: from every recorded run on `project_root`, then from the project itself."""

    def __init__(self, project_root: str, runs: Sequence[SkillRun] = ()) -> None:
        self.root = Path(project_root) if project_root else None
        self.blobs: dict[str, str | None] = {}
        # Commits whose files a run's pre-state was (apply works on a commit, not on the owner's files).
        self.commits: list[str] = []
        recorded = SkillRun.objects.filter(project_root=project_root, change__isnull=False).only("change")
        for run in [*runs, *recorded]:
            for digest, text in ((run.change or {}).get("blobs") or {}).items():
                if self.blobs.get(digest) is None:
                    self.blobs[digest] = text
            commit = (run.change or {}).get("git_commit")
            if isinstance(commit, str) and GIT_COMMIT.fullmatch(commit) and commit not in self.commits:
                self.commits.append(commit)

    def text(self, path: str, digest: str) -> FileText | None:
        """The file's text, BINARY when only binary content is known, or None when nothing is recorded."""
        if self.blobs.get(digest) is not None:
            return self.blobs[digest]
        if self.root is not None:
            candidate = self.root / path
            try:
                data = candidate.read_bytes()
            except OSError:
                data = None
            if data is None or hashlib.sha1(data).hexdigest() != digest:
                data = self._from_commits(path, digest)
            if data is not None:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError:
                    return BINARY
        return BINARY if digest in self.blobs else None

    def _from_commits(self, path: str, digest: str) -> bytes | None:
        """The file's bytes at a recorded commit, when they have the wanted hash."""
        if self.root is None:
            return None
        for commit in self.commits:
            try:
                shown = git(
                    self.root, "show", f"{commit}:./{path}", check=False, timeout=GIT_TIMEOUT, env=child_environment()
                )
            except RepositoryUnreadable:
                return None
            if shown.ok and hashlib.sha1(shown.output).hexdigest() == digest:
                return shown.output
        return None


def diff_between(before: Mapping[str, str], after: Mapping[str, str], store: ContentStore, *, cap: int) -> str | None:
    """The unified diff from one recorded state to another, or None when a needed text is not recorded."""
    parts = []
    for path in sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)):
        old = store.text(path, before[path]) if path in before else None
        new = store.text(path, after[path]) if path in after else None
        if (path in before and old is None) or (path in after and new is None):
            return None
        parts.append(file_diff(path, old, new))
    return join_diffs(parts, cap=cap)[0]


def rebuild(folder: Path, hashes: Mapping[str, str], store: ContentStore) -> None:
    """Write the state `hashes` into `folder` (empty), linking the project's dependency folders."""
    for path, digest in sorted(hashes.items()):
        text = store.text(path, digest)
        if text is None:
            raise ReplayError(
                f"pre-state: the content of {path} ({digest[:10]}) is not recorded and the project has changed it since"
            )
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if text is BINARY:
            source = store.root / path if store.root else None
            if source is None or not source.is_file() or hashlib.sha1(source.read_bytes()).hexdigest() != digest:
                raise ReplayError(
                    f"pre-state: {path} is binary and not recorded; the project no longer has that version"
                )
            target.write_bytes(source.read_bytes())
        else:
            target.write_text(text, encoding="utf-8")
    if store.root is not None:
        for name in LINKED_DIRS:
            if (store.root / name).is_dir() and not (folder / name).exists():
                os.symlink(store.root / name, folder / name)


class SideReplay(TypedDict):
    """One side of an example replayed: did its change apply, and did the tests do what the phase needs."""

    applied: bool
    exit_code: NotRequired[int | None]
    outcome: NotRequired[str]
    verifies: bool
    why: str
    output: NotRequired[str]  # the tail of the test run's output


class ReplayOutcome(TypedDict):
    """What `replay_example` found: kept on the example (`do_record_replay`: `replay_status` and the JSON `replay`)."""

    status: str  # TrainingExample.ReplayStatus
    reason: str
    sides: dict[str, SideReplay]  # "completion" (SFT) or "chosen" and "rejected" (DPO); empty when none ran
    checked_at: str
    test_cmd: NotRequired[str]
    expect: NotRequired[str]


def _side(messages: list[dict[str, Any]]) -> str | None:
    return diff_block("\n".join(m.get("content", "") for m in messages if m.get("role") == "assistant"))


def _try(hashes: Mapping[str, str], store: ContentStore, diff: str | None, test_cmd: str, expect: str) -> SideReplay:
    """Rebuild, apply `diff`, run `test_cmd`: {applied, exit_code, outcome, output, verifies, why}."""
    if diff is None:
        return {"applied": False, "verifies": False, "why": "the answer holds no ```diff block to apply"}
    with tempfile.TemporaryDirectory(prefix="hyperguild-replay-") as scratch:
        folder = Path(scratch)
        rebuild(folder, hashes, store)
        try:
            if diff.strip():  # an empty change (the worker wrote nothing) applies as is
                apply_diff(folder, diff)
        except PatchFailed as exc:
            return {"applied": False, "verifies": False, "why": f"the change does not apply: {exc}"}
        run = run_command(folder, test_cmd)
    if run.outcome == "timeout":
        verifies, why = False, "the test command timed out"
    elif expect == "fail":
        verifies = not run.passed and not run.no_tests
        why = (
            f"the tests fail as red requires (exit code {run.exit_code})"
            if verifies
            else (
                "the tests pass, but red needs a failing test" if run.passed else "the test runner collected no tests"
            )
        )
    else:
        verifies = run.passed
        why = "the tests pass (exit code 0)" if verifies else f"the tests fail (exit code {run.exit_code})"
    return {
        "applied": True,
        "exit_code": run.exit_code,
        "outcome": run.outcome,
        "verifies": verifies,
        "why": why,
        "output": run.output[-OUTPUT_TAIL_CHARS:],
    }


def replay_example(example: TrainingExample) -> ReplayOutcome:
    """{status: valid|invalid|n/a, reason, sides: {...}, checked_at}; it writes nothing (see do_record_replay)."""
    checked_at = timezone.now().isoformat()
    pre = (example.provenance or {}).get("pre_state")
    if not isinstance(pre, dict) or "run" not in pre:
        return {
            "status": TrainingExample.ReplayStatus.NOT_APPLICABLE,
            "reason": "no recorded change to replay",
            "sides": {},
            "checked_at": checked_at,
        }
    try:
        run = SkillRun.objects.get(pk=pre["run"])
        hashes = state_hashes(run, pre.get("after_attempt", 0))
        if hashes is None:
            raise ReplayError(f"run #{run.pk} recorded no pre-state")
        test_cmd = (run.change or {}).get("test_cmd") or ""
        expect = PHASE_EXPECTS.get(run.skill)
        if not test_cmd or expect is None:
            raise ReplayError(f"run #{run.pk} ({run.skill}) recorded no test command to replay")
        store = ContentStore(run.project_root, [run])
        sides: dict[str, SideReplay]
        if example.kind == TrainingExample.Kind.SFT:
            sides = {"completion": _try(hashes, store, _side(example.completion), test_cmd, expect)}
            ok = sides["completion"]["verifies"]
            reason = sides["completion"]["why"]
        else:
            chosen = _try(hashes, store, _side(example.chosen), test_cmd, expect)
            rejected = _try(hashes, store, _side(example.rejected), test_cmd, expect)
            sides = {"chosen": chosen, "rejected": rejected}
            rejected_ok = rejected["applied"] and not rejected["verifies"]
            ok = chosen["verifies"] and rejected_ok
            if not chosen["verifies"]:
                reason = f"chosen does not verify: {chosen['why']}"
            elif not rejected_ok:
                reason = (
                    "rejected verifies too, so the pair teaches nothing"
                    if rejected["verifies"]
                    else f"rejected: {rejected['why']}"
                )
            else:
                reason = f"chosen verifies ({chosen['why']}); rejected does not ({rejected['why']})"
    except (ReplayError, SkillRun.DoesNotExist) as exc:
        message = str(exc) if isinstance(exc, ReplayError) else f"run #{pre['run']} no longer exists"
        return {
            "status": TrainingExample.ReplayStatus.INVALID,
            "reason": message,
            "sides": {},
            "checked_at": checked_at,
        }
    status = TrainingExample.ReplayStatus.VALID if ok else TrainingExample.ReplayStatus.INVALID
    return {
        "status": status,
        "reason": reason,
        "sides": sides,
        "checked_at": checked_at,
        "test_cmd": test_cmd,
        "expect": expect,
    }
