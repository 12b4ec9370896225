"""What a worker changed in the project, recorded so it can be shown, taught and replayed.

    recorder = ChangeRecorder(root)         # captures the pre-state
    part = recorder.attempt()               # after each attempt: {files, diff, truncated}
    change = recorder.record(test_cmd=..., before=TestRun|None, after=TestRun|None)

`change` (stored on `SkillRun.change`) holds:
- `pre_state`: a content hash per project file before the worker (ignored
  directories such as .git and node_modules left out), `pre_state_complete`;
- `blobs`: the text of every changed file before and after, by hash (None for
  a binary file or one over BLOB_LIMIT: named, not inlined);
- `files`: [{path, status: added|modified|deleted, before, after, binary}];
- `diff`: the whole run's unified diff, cut at SUPERVISOR_DIFF_CAP with a
  marker (`truncated`);
- `test_cmd` and the supervisor's own test run `before` and `after` the
  worker ({exit_code, output}).
Each attempt's own part sits in its `attempt_log` entry (`change`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NotRequired, TypedDict

from django.conf import settings

from hyperguild.lib.diffs import BINARY, FileText, as_text, file_diff, join_diffs
from supervisor.project_tests import Capture, TestRun, capture

# Characters of one file's text kept in `blobs`.
BLOB_LIMIT = 256 * 1024


class ChangedFile(TypedDict):
    path: str
    status: str  # added, deleted or modified
    before: str | None  # content hash; None: absent
    after: str | None
    binary: bool


class ChangePart(TypedDict):
    """What one attempt changed (an `attempt_log` entry's `change`)."""

    files: list[ChangedFile]
    diff: str
    truncated: bool


class TestRunJson(TypedDict):
    exit_code: int | None
    outcome: str
    output: str


class RecordedChange(TypedDict):
    """What a run changed, kept as `SkillRun.change` (sessions.replay rebuilds the pre-state from it)."""

    test_cmd: str
    before: TestRunJson | None
    after: TestRunJson | None
    pre_state: dict[str, str]  # path -> content hash before the run
    pre_state_complete: bool
    blobs: dict[str, str | None]  # content hash -> text (None: binary or not kept)
    files: list[ChangedFile]
    diff: str
    truncated: bool
    # apply's: where the pre-state's texts are when the owner's files have moved on
    git_commit: NotRequired[str]
    git_prefix: NotRequired[str]
    source_run_id: NotRequired[int]


class ChangeRecorder:
    def __init__(self, root: Path, keep: Iterable[str | None] = ()) -> None:
        self.root = root
        # Files the run may touch whose text is kept even if unchanged (a TDD task's test_path, impl_path).
        self.keep = [path for path in keep if path]
        self.start = capture(root)
        self.current = self.start
        self.blobs: dict[str, str | None] = {}

    def _blob(self, snap: Capture, path: str) -> FileText | None:
        """The file's text for the diff (None: absent; BINARY: binary or not kept), remembered in `blobs`."""
        digest = snap.hashes.get(path)
        if digest is None:
            return None
        data = snap.contents.get(path)
        text = as_text(data) if data is not None else BINARY
        if text is not BINARY and len(text) > BLOB_LIMIT:
            text = BINARY
        self.blobs[digest] = None if text is BINARY else text
        return text

    def _files(self, before: Capture, after: Capture) -> tuple[list[ChangedFile], str, bool]:
        paths = sorted(p for p in set(before.hashes) | set(after.hashes) if before.hashes.get(p) != after.hashes.get(p))
        files: list[ChangedFile] = []
        parts = []
        for path in paths:
            old, new = self._blob(before, path), self._blob(after, path)
            status = "added" if old is None else "deleted" if new is None else "modified"
            files.append(
                {
                    "path": path,
                    "status": status,
                    "before": before.hashes.get(path),
                    "after": after.hashes.get(path),
                    "binary": old is BINARY or new is BINARY,
                }
            )
            parts.append(file_diff(path, old, new))
        diff, truncated = join_diffs(parts, cap=settings.SUPERVISOR_DIFF_CAP)
        return files, diff, truncated

    def begin(self) -> None:
        """Before an attempt: the project as it is now (a test run may have written files since)."""
        self.current = capture(self.root)

    def attempt(self) -> ChangePart:
        """The change the last attempt made (from the end of the previous one)."""
        after = capture(self.root)
        files, diff, truncated = self._files(self.current, after)
        self.current = after
        return {"files": files, "diff": diff, "truncated": truncated}

    def record(self, *, test_cmd: str, before: TestRun | None, after: TestRun | None) -> RecordedChange:
        files, diff, truncated = self._files(self.start, self.current)
        for path in self.keep:
            self._blob(self.start, path)
        return {
            "test_cmd": test_cmd,
            "before": _test_run(before),
            "after": _test_run(after),
            "pre_state": dict(sorted(self.start.hashes.items())),
            "pre_state_complete": self.start.complete,
            "blobs": self.blobs,
            "files": files,
            "diff": diff,
            "truncated": truncated,
        }


def _test_run(run: TestRun | None) -> TestRunJson | None:
    if run is None:
        return None
    return {"exit_code": run.exit_code, "outcome": run.outcome, "output": run.output}
