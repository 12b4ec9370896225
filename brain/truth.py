"""Checking a note's anchors against its project's branch head (docs/truth.md).

An anchor **holds** (found where the note ties it, or found for the first time; records the commit and
the location), **moved** (found, but elsewhere than where it last held), **changed** (its file is there,
the symbol or quoted line is not) or is **gone** (neither). Only what once resolved can change or go: an
anchor never found in the project's code (a standard-library call, a builtin, a keyword argument, a typo)
is **unresolved** — said to the writer, never checked as stale — until the code has it. A note whose
anchors all hold or moved is *verified at <commit>*; one with a changed or gone anchor that no person
waived is *stale*, with the evidence of each (which anchor, the commit that removed or altered it, the
hunk around it, what the code says now where it was); a note with no project, no readable repository
or nothing resolved is *unverified*, with the reason.

This module computes; `brain.actions` stores (do_verify_note, do_sync_project, do_recheck_project).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from brain.hunks import hunk_around, hunk_within
from brain.models import Anchor, AnchorState, Note, Project, VerificationState
from brain.repository import DOC_FILES, Block, Definition, Hunk, Repository
from hyperguild.lib.typed import JSON

CONTEXT_LINES = 2  # lines of code shown around where an anchor was, as "what the code says now"
MAX_LINES_CHARS = 1000
# Commits the pickaxe (`git log -S`) proposes as the one that changed an anchor, tried oldest first.
MAX_PICKAXE_COMMITS = 50
# How alike (difflib ratio) a new line must be to the anchor's old line to be shown as where it went.
MIN_LIKENESS = 0.6
LIKENESS_TIE = 0.1  # lines this much less alike than the most alike one still compete on where they are
FAILING = (AnchorState.CHANGED, AnchorState.GONE)
# In a stale note's evidence: an anchor that still holds but whose definition changed since the note's commit
# ("changed, still present"). Never a reason to flag a note: only shown beside the anchor that failed.
ALTERED = "altered"
# Commits that changed an altered anchor's file (the newest this many), each compared with its parent.
MAX_ALTERED_COMMITS = 200
_DEFINITION_WORDS = r"(?:export\s+)?(?:pub\s+)?(?:async\s+)?(?:def|class|func|function|fn|struct|interface|type|module|const|let|var|static)\s+(?:mut\s+)?(?:\([^)]*\)\s*)?"


@dataclass
class Check:
    state: str
    path: str = ""
    location: str = ""
    evidence: JSON = field(default_factory=dict)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _lines_at(text: str | None, line: int, around: int = 0) -> str:
    if text is None or line < 1:
        return ""
    lines = text.splitlines()
    start, end = max(0, line - 1 - around), min(len(lines), line + around)
    return "\n".join(lines[start:end])[:MAX_LINES_CHARS]


def _location_line(location: str) -> tuple[str, int]:
    path, _, number = location.rpartition(":")
    return (path, int(number)) if number.isdigit() else (location, 0)


def _shown(value: str) -> str:
    return value if len(value) <= 80 else value[:77] + "…"


def _definition_of(name: str) -> re.Pattern[str]:
    """A line defining `name`: a def/class/func… or an assignment of it (brain.repository's rules, on one file)."""
    word = re.escape(name)
    return re.compile(
        rf"^\s*{_DEFINITION_WORDS}{word}(?!\w)|^\s{{0,8}}{word}\s*(?::[^=\n]*)?=(?!=)"
        rf"|^\s*(?:from\s+\S+\s+)?import\s[^\n#]*?(?<![\w.]){word}\s+as\s+{word}(?!\w)",
        re.M,
    )


class Verifier:
    """Checks anchors at one commit of one repository (`old`: the commit they were last checked at, if known;
    `project`: its name, as the writer is told what is not in it; `confirmed`: a person just said the note holds at
    `commit`, so what changed before it is settled and its anchors' changes are counted from there)."""

    def __init__(
        self, repo: Repository, commit: str, old: str | None = None, project: str = "", confirmed: bool = False
    ):
        self.repo, self.commit, self.old = repo, commit, old
        self.project = project or "the repository"
        self.confirmed = confirmed
        self.files = repo.files(commit)

    # -- one anchor ------------------------------------------------------------------

    def check(self, anchor: Anchor) -> Check:
        check = getattr(self, f"_check_{anchor.kind}")(anchor)
        if check.state in (AnchorState.HOLDS, AnchorState.MOVED):
            path, line = _location_line(check.location)
            check.evidence = {
                "held_commit": self.commit,
                "held_lines": _lines_at(self.repo.read(self.commit, path), line),
                "since": self._since(anchor),
            }
            if check.state == AnchorState.MOVED:
                check.evidence.update(self._moved(anchor, path))
        elif not anchor.location:
            # Never found (a location is recorded whenever an anchor holds): not this repository's code, or not
            # yet. Nothing of it can change, so it is never stale; the writer is told.
            check = Check(AnchorState.UNRESOLVED, path=anchor.hint or (check.path if anchor.kind == "path" else ""))
            check.evidence = {
                "anchor": anchor.value,
                "kind": anchor.kind,
                "state": AnchorState.UNRESOLVED,
                "message": f"`{_shown(anchor.value)}` is not in {self.project} at {self.commit[:7]}",
            }
        else:
            check.evidence = self._evidence(anchor, check)
        return check

    def _since(self, anchor: Anchor) -> str:
        """The commit the anchor's changes are counted from: where it was first found (the note's commit, as near as
        the brain knows it) or a person last confirmed the note, carried from check to check while it holds."""
        if self.confirmed or not anchor.location:
            return self.commit
        before = (
            anchor.evidence
            if anchor.state in (AnchorState.HOLDS, AnchorState.MOVED)
            else (anchor.evidence or {}).get("before", {})
        )
        return (before or {}).get("since") or (before or {}).get("held_commit") or self.commit

    # -- what changed under an anchor that still holds ("changed, still present") ---------------------------------

    def explain(self, note: Note, anchors: list[Anchor]) -> list[Anchor]:
        """For a note that is stale here: for each of its other anchors that still holds, the commits in since..head
        that changed its definition (kept in its evidence as `altered`, shown beside the anchor that failed). Returns
        the anchors whose evidence changed (to be stored). A note that is not stale is left as it is: a definition
        whose body changed is never a reason to flag a note."""
        waived = note.waived_anchors or {}
        failing = [a for a in anchors if a.state in FAILING and a.key not in waived]
        if not failing:
            return []
        failed_in = [a.evidence.get("changed_in", "") for a in failing if a.evidence.get("changed_in")]
        touched = []
        for anchor in anchors:
            if anchor.state != AnchorState.HOLDS or anchor.kind not in ("symbol", "setting"):
                continue
            altered = self._altered(anchor, failed_in)
            if altered != (anchor.evidence or {}).get(ALTERED):
                anchor.evidence = {**(anchor.evidence or {}), ALTERED: altered}
                if not altered:
                    del anchor.evidence[ALTERED]
                touched.append(anchor)
        return touched

    def _altered(self, anchor: Anchor, failed_in: list[str]) -> JSON | None:
        """{since, commits, changed_in, then, now, hunk} when the anchor's definition at the head is not what it was
        at `since`; else None. `commits`: every commit in since..head that changed it, oldest first; `changed_in`:
        of those, the first that also changed an anchor that failed (the commit that made the note false), else the
        first."""
        evidence = anchor.evidence or {}
        since = evidence.get("since") or ""
        path = _location_line(anchor.location)[0] if anchor.location else ""
        if not since or since == self.commit or not path:
            return None
        known = evidence.get(ALTERED)
        if known and known.get("through") == self.commit and known.get("since") == since:
            return known
        parts = anchor.value.split(".")
        name, owner = parts[-1], parts[-2] if len(parts) > 1 and anchor.kind == "symbol" else ""
        then, now = self.repo.block(since, path, name, owner), self.repo.block(self.commit, path, name, owner)
        if then is None or now is None or then.shape == now.shape:
            return None
        # Each commit that changed the file, compared with its parent: kept when the definition differs (not a
        # change of layout or comments alone). Merges are left out: their branch's own commits are compared. A commit
        # whose diff lies away from the definition's lines is not read; the lines are shifted past it.
        commits: list[str] = []
        blocks: dict[str, Block | None] = {}

        def block_at(commit: str) -> Block | None:
            if commit not in blocks:
                blocks[commit] = self.repo.block(commit, path, name, owner)
            return blocks[commit]

        for commit, parent, hunks in self.repo.file_history(since, self.commit, path)[-MAX_ALTERED_COMMITS:]:
            was = block_at(parent) if parent else None
            if was is not None and hunks and not any(_near(was, hunk) for hunk in hunks):
                blocks[commit] = _shifted(was, hunks)
                continue
            block = block_at(commit)
            if (block.shape if block else None) != (was.shape if was else None):
                commits.append(commit)
        if not commits:
            return None
        changed_in = next((c for c in commits if c in failed_in), commits[0])
        parent = self.repo.parent(changed_in)
        hunk = ""
        if parent:
            was = self.repo.block(parent, path, name, owner)
            hunk = hunk_within(self.repo.hunks(parent, changed_in, path), was.start, was.end) if was else ""
        return {
            "since": since,
            "through": self.commit,
            "path": path,
            "commits": commits,
            "changed_in": changed_in,
            "then": _lines_of(self.repo.read(since, path), then.start, then.end),
            "now": _lines_of(self.repo.read(self.commit, path), now.start, now.end),
            "hunk": hunk,
        }

    def _moved(self, anchor: Anchor, path: str) -> JSON:
        """Where a moved anchor was, and the commit that took it from there (shown beside a stale note's evidence)."""
        from_path = _location_line(anchor.location)[0] if anchor.location else anchor.hint
        base = self._held_base(anchor)
        if not from_path or from_path == path or not base:
            return {"moved_from": from_path} if from_path and from_path != path else {}
        return {"moved_from": from_path, "moved_in": self._changed_in(anchor, base, from_path)}

    def _preferred(self, anchor: Anchor) -> list[str]:
        """Where the anchor should be: its hint, and the file it last held in."""
        held_in = _location_line(anchor.location)[0] if anchor.location else ""
        return [path for path in dict.fromkeys((anchor.hint, held_in)) if path]

    def _found(self, path: str, line: int | None, preferred: list[str]) -> Check:
        """Found at path:line: it moved when it was expected elsewhere."""
        location = f"{path}:{line}" if line else path
        moved = bool(preferred) and path not in preferred
        return Check(AnchorState.MOVED if moved else AnchorState.HOLDS, path=path, location=location)

    def _missing(self, preferred: list[str], what_path: str = "") -> Check:
        there = [path for path in preferred if path in self.files]
        if there:
            return Check(AnchorState.CHANGED, path=there[0], location=there[0])
        return Check(AnchorState.GONE, path=what_path or (preferred[0] if preferred else ""))

    def _check_path(self, anchor: Anchor) -> Check:
        value = anchor.value.rstrip("/")
        if value in self.files:
            return Check(AnchorState.HOLDS, path=value, location=value)
        if any(name.startswith(value + "/") for name in self.files):  # a folder
            return Check(AnchorState.HOLDS, path=value, location=value)
        endings = sorted(name for name in self.files if name.endswith("/" + value))
        held = _location_line(anchor.location)[0] if anchor.location else ""
        if endings:
            path = held if held in endings else endings[0]
            state = AnchorState.MOVED if held and held != path else AnchorState.HOLDS
            return Check(state, path=path, location=path)
        base = value.rsplit("/", 1)[-1]
        elsewhere = sorted(name for name in self.files if name == base or name.endswith("/" + base))
        if elsewhere and "/" in value:
            return Check(AnchorState.MOVED, path=elsewhere[0], location=elsewhere[0])
        return Check(AnchorState.GONE, path=held or value)

    def _check_symbol(self, anchor: Anchor) -> Check:
        parts = anchor.value.split(".")
        name, owner = parts[-1], parts[-2] if len(parts) > 1 else ""
        definitions = self.repo.definitions(self.commit, since=self.old)
        found = [d for d in definitions.get(name, ()) if _owned_by(d, owner, anchor.hint, definitions)]
        preferred = self._preferred(anchor)
        for definition in found:
            if definition.path in preferred:
                return Check(AnchorState.HOLDS, path=definition.path, location=f"{definition.path}:{definition.line}")
        base = self._held_base(anchor) if found and preferred else ""
        if base:
            # A definition that was already there when the anchor last held is another one of the same name,
            # not where this one moved.
            before = self.repo.definitions(base)
            there = {(d.path, d.owner) for d in before.get(name, ())}
            found = [d for d in found if d.path in preferred or (d.path, d.owner) not in there]
        if found:
            first = found[0]
            return self._found(first.path, first.line, preferred)
        return self._missing(preferred)

    def _search_text(self, text: str, paths: list[str]) -> tuple[str, int] | None:
        wanted = _squash(text)
        for path in paths:
            content = self.repo.read(self.commit, path)
            if content is None:
                continue
            for number, line in enumerate(content.splitlines(), start=1):
                if wanted in _squash(line):
                    return path, number
        return None

    def _check_quote(self, anchor: Anchor) -> Check:
        preferred = self._preferred(anchor)
        hit = self._search_text(anchor.value, preferred)
        if hit:
            return Check(AnchorState.HOLDS, path=hit[0], location=f"{hit[0]}:{hit[1]}")
        needle = anchor.value.strip()
        base = self._held_base(anchor)
        wanted = _squash(needle)
        for path, line in self.repo.grep_fixed(self.commit, needle):
            if base and preferred and path not in preferred and wanted in _squash(self.repo.read(base, path) or ""):
                continue  # a copy that was there all along (a vendored v1, a test): not where the line went
            return self._found(path, line, preferred)
        return self._missing(preferred)

    def _held_base(self, anchor: Anchor) -> str:
        """The commit the anchor last held at (before this check), if it held before; else ''. For an anchor that
        failed at an earlier check, the commit it last held at before that (so a copy elsewhere that was there all
        along is still not where it went, however many syncs later)."""
        if not anchor.location:
            return ""
        if anchor.state in (AnchorState.HOLDS, AnchorState.MOVED):
            held = (anchor.evidence or {}).get("held_commit") or self.old or ""
        elif anchor.state in FAILING:
            held = ((anchor.evidence or {}).get("before") or {}).get("held_commit") or ""
        else:
            return ""
        return held if held != self.commit else ""

    def _check_setting(self, anchor: Anchor) -> Check:
        preferred = self._preferred(anchor)
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(anchor.value)}(?![A-Za-z0-9_])")
        for path in preferred:
            content = self.repo.read(self.commit, path) or ""
            for number, line in enumerate(content.splitlines(), start=1):
                if word.search(line):
                    return Check(AnchorState.HOLDS, path=path, location=f"{path}:{number}")
        defines = _definition_of(anchor.value)
        # Where it is defined says most: a settings file, then any assignment, then code before docs and tests, then
        # the first mention.
        hits = sorted(
            self.repo.grep_fixed_lines(self.commit, anchor.value),
            key=lambda hit: (
                "settings" not in hit[0],
                not defines.search(hit[2]),
                _is_doc(hit[0]),
                hit[0].startswith(("tests/", "test/")),
                hit[:2],
            ),
        )
        base = self._held_base(anchor)
        for path, number, _ in hits:
            if base and preferred and path not in preferred and word.search(self.repo.read(base, path) or ""):
                continue  # a mention that was there all along (a changelog, a test): not where it went
            return self._found(path, number, preferred)
        return self._missing(preferred)

    def _check_command(self, anchor: Anchor) -> Check:
        words = anchor.value.replace("./", "").split()
        if "manage.py" in words:
            name = words[words.index("manage.py") + 1] if len(words) > words.index("manage.py") + 1 else ""
            hits = sorted(p for p in self.files if p.endswith(f"/management/commands/{name}.py"))
            if hits:
                return Check(AnchorState.HOLDS, path=hits[0], location=hits[0])
            return Check(AnchorState.GONE, path=anchor.path or f"management/commands/{name}.py")
        if words[0] == "make":
            target = words[1] if len(words) > 1 else ""
            return self._target_in("Makefile", re.compile(rf"^{re.escape(target)}\s*:(?!=)"), anchor)
        script = words[2] if len(words) > 2 else ""
        return self._target_in("package.json", re.compile(rf'"{re.escape(script)}"\s*:'), anchor)

    def _target_in(self, filename: str, pattern: re.Pattern[str], anchor: Anchor) -> Check:
        content = self.repo.read(self.commit, filename)
        if content is None:
            return Check(AnchorState.GONE, path=filename)
        for number, line in enumerate(content.splitlines(), start=1):
            if pattern.search(line):
                return Check(AnchorState.HOLDS, path=filename, location=f"{filename}:{number}")
        return Check(AnchorState.CHANGED, path=filename, location=filename)

    # -- evidence ----------------------------------------------------------------------

    def _evidence(self, anchor: Anchor, check: Check) -> JSON:
        before = (
            anchor.evidence
            if anchor.state in (AnchorState.HOLDS, AnchorState.MOVED)
            else anchor.evidence.get("before", {})
        )
        held_commit = before.get("held_commit") or ""
        old_path, old_line = _location_line(anchor.location) if anchor.location else (check.path, 0)
        old_path = old_path or check.path
        base = held_commit if held_commit and held_commit != self.commit else (self.old or "")
        changed_in = self._changed_in(anchor, base, old_path) if base and old_path else ""
        if not changed_in and old_path:
            changed_in = self.repo.last_change(base or None, self.commit, old_path)
        hunk = ""
        if old_path and (base or changed_in):
            parent = self.repo.parent(changed_in) if changed_in else ""
            hunks = (
                self.repo.hunks(parent, changed_in, old_path)
                if parent
                else self.repo.hunks(base, self.commit, old_path)
            )
            hunk = hunk_around(hunks, _removed_line_test(anchor))
        now = self._now(base, old_path, old_line) if base and old_line else ""
        short = changed_in[:7] if changed_in else self.commit[:7]
        shown = _shown(anchor.value)
        if check.state == AnchorState.GONE:
            message = f"`{shown}` is gone in {short}" if anchor.kind != "path" else f"`{shown}` was deleted in {short}"
        else:
            message = f"`{shown}` changed in {short}"
        return {
            "anchor": anchor.value,
            "kind": anchor.kind,
            "state": check.state,
            "path": old_path,
            "quoted": before.get("held_lines") or anchor.value,
            "now": now,
            "changed_in": changed_in,
            "hunk": hunk,
            "message": message,
            "before": before,
        }

    def _changed_in(self, anchor: Anchor, base: str, path: str) -> str:
        """The first commit in base..head after which the anchor is no longer in `path`: among the commits that
        changed how often its text occurs there (`git log -S`), else by bisecting every commit that touched the file."""
        touching = self.repo.commits_touching(base, self.commit, path)
        if len(touching) <= 1:  # one commit changed the file since: that one (a sync one commit at a time)
            return touching[0] if touching else ""
        present = self._presence(anchor, path)
        needle = _pickaxe_text(anchor)
        if needle:
            for commit in self.repo.commits_touching(base, self.commit, path, needle)[:MAX_PICKAXE_COMMITS]:
                if not present(commit):
                    return commit
        low, high = 0, len(touching) - 1
        if high < 0 or present(touching[high]):
            return ""
        while low < high:  # present before touching[low], absent at touching[high]: the first absence
            middle = (low + high) // 2
            if present(touching[middle]):
                low = middle + 1
            else:
                high = middle
        return touching[high]

    def _presence(self, anchor: Anchor, path: str) -> Callable[[str], bool]:
        """commit → whether the anchor is in `path` at that commit (the file's text, read once per commit)."""
        if anchor.kind == "path":
            return lambda commit: path in self.repo.files(commit)
        if anchor.kind == "symbol":
            parts = anchor.value.split(".")
            pattern = _definition_of(parts[-1])
            if len(parts) > 1 and path.endswith(".py"):
                # `Class.method`: still defined in that file *as the class's* (a method moved out to module level
                # keeps its def line, and the text alone would say it is still there).
                return lambda commit: (
                    bool(pattern.search(self.repo.read(commit, path) or ""))
                    and any(
                        d.path == path and _owned_by(d, parts[-2], anchor.hint, index)
                        for index in (self.repo.definitions(commit),)
                        for d in index.get(parts[-1], ())
                    )
                )
            return lambda commit: bool(pattern.search(self.repo.read(commit, path) or ""))
        if anchor.kind == "quote":
            wanted = _squash(anchor.value)
            return lambda commit: any(
                wanted in _squash(line) for line in (self.repo.read(commit, path) or "").splitlines()
            )
        word = re.compile(rf"(?<![\w-]){re.escape(_pickaxe_text(anchor))}(?![\w-])")
        return lambda commit: bool(word.search(self.repo.read(commit, path) or ""))

    def _now(self, base: str, path: str, old_line: int) -> str:
        """The code where the anchor's line went (base → head), or '' when nothing took its place.

        Where it went is the head's line most like the old one (difflib's ratio, at least MIN_LIKENESS) among the
        lines the file did not have before: an edited line, a renamed def. Not the line now at the old number, and
        not a line that only slid into its place (the function below a deleted one).
        """
        text, before = self.repo.read(self.commit, path), self.repo.read(base, path)
        if text is None or before is None:
            return ""
        old_lines = before.splitlines()
        was = old_lines[old_line - 1].strip() if old_line <= len(old_lines) else ""
        if not was:
            return ""
        had = {line.strip() for line in old_lines}
        new_lines = text.splitlines()
        scored: list[tuple[float, int]] = []
        for number, line in enumerate(new_lines, start=1):
            line = line.strip()
            if not line or line in had:
                continue
            alike = difflib.SequenceMatcher(None, was, line)
            if alike.real_quick_ratio() >= MIN_LIKENESS and alike.quick_ratio() >= MIN_LIKENESS:
                scored.append((alike.ratio(), number))
        best = max((ratio for ratio, _ in scored), default=0.0)
        if best < MIN_LIKENESS:
            return ""
        # Lines about as alike (the same method in two classes): the one nearest where the old line would be now.
        expected = old_line * len(new_lines) / max(1, len(old_lines))
        where = min(
            (number for ratio, number in scored if ratio >= best - LIKENESS_TIE), key=lambda n: abs(n - expected)
        )
        return _lines_at(text, where, CONTEXT_LINES)


def _is_doc(path: str) -> bool:
    return any(fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern) for pattern in DOC_FILES)


def _owned_by(definition: Definition, owner: str, hint: str, definitions: Mapping[str, tuple[Definition, ...]]) -> bool:
    """Whether `owner.name` can mean this definition of `name`: no owner; `self`/`cls` and a class of the file the
    note names; the class it is defined in; a module or package it is in (`core.echo`, `click.echo`); or, where the
    language's classes are not read (not Python), a file that defines the owner."""
    if not owner:
        return True
    if owner in ("self", "cls"):
        return bool(definition.owner) and definition.path == hint
    if definition.owner == owner:
        return True
    folders, _, filename = definition.path.rpartition("/")
    if owner in folders.split("/") or filename.split(".")[0] == owner:
        return True
    return definition.owner is None and definition.path in {d.path for d in definitions.get(owner, ())}


def _pickaxe_text(anchor: Anchor) -> str:
    """The text whose count in a file changes when the anchor changes (`git log -S`)."""
    if anchor.kind == "symbol":
        return anchor.value.split(".")[-1]
    if anchor.kind == "command":
        words = anchor.value.replace("./", "").split()
        return words[-1] if len(words) > 1 else ""
    if anchor.kind in ("quote", "setting"):
        return anchor.value.strip()
    return ""


# Lines after a definition's last one whose history is read too (a tail of its body that a commit cut).
SPAN_MARGIN = 3


def _near(block: Block, hunk: Hunk) -> bool:
    """Whether a hunk (old start, old count, …) changes the definition's lines, or lines just beside them."""
    first = hunk[0] if hunk[1] else hunk[0] + 1  # an insertion comes after its line
    last = hunk[0] + max(hunk[1], 1) - 1
    return first <= block.end + SPAN_MARGIN and last >= block.start - 1


def _shifted(block: Block, hunks: tuple[Hunk, ...]) -> Block:
    """The definition after a commit whose hunks all lie away from it: the same, its lines moved by those above."""
    delta = sum(new_count - old_count for old_start, old_count, _, new_count in hunks if old_start < block.start)
    return Block(block.start + delta, block.end + delta, block.shape)


def _lines_of(text: str | None, start: int, end: int) -> str:
    if text is None:
        return ""
    return "\n".join(text.splitlines()[start - 1 : end])[:MAX_LINES_CHARS]


def _removed_line_test(anchor: Anchor) -> Callable[[str], bool]:
    """line of a diff → whether it removes the anchor (its definition, its quoted line, its name)."""
    if anchor.kind == "symbol":
        pattern = _definition_of(anchor.value.split(".")[-1])
        return lambda line: line.startswith("-") and bool(pattern.search(line[1:]))
    if anchor.kind == "path":
        return lambda line: False
    wanted = _squash(anchor.value) if anchor.kind == "quote" else _pickaxe_text(anchor)
    return lambda line: line.startswith("-") and bool(wanted) and wanted in _squash(line[1:])


# -- a note's state from its anchors ---------------------------------------------------


@dataclass
class NoteVerdict:
    state: str
    commit: str
    evidence: list[JSON]


NO_PROJECT = "the note belongs to no project, so there is no code to check it against"
CITES_NOTHING = "the note cites nothing in the code (no file, symbol or quoted line)"


def unverified(reason: str, *, claims: bool | None = None) -> NoteVerdict:
    """Unverified, and why. `claims`: whether the note says anything about code that could not be checked; a note
    with no project or nothing in its project's code claims nothing, and is shown with no label (docs/truth.md)."""
    if claims is None:
        claims = reason not in (NO_PROJECT, CITES_NOTHING)
    item: JSON = {"message": f"unverified: {reason}"}
    if not claims:
        item["claims"] = False
    return NoteVerdict(VerificationState.UNVERIFIED, "", [item])


def verdict(note: Note, anchors: list[Anchor], commit: str) -> NoteVerdict:
    if not anchors:
        return unverified(CITES_NOTHING)
    if any(a.state == AnchorState.UNCHECKED for a in anchors):
        return unverified("its anchors have not been checked yet")
    # What it cites that is not in the code is said on the note, and counts for nothing.
    said = [
        {
            "anchor": a.value,
            "kind": a.kind,
            "state": AnchorState.UNRESOLVED,
            "message": a.evidence.get("message") or f"`{_shown(a.value)}` is not in the project's code",
        }
        for a in anchors
        if a.state == AnchorState.UNRESOLVED
    ]
    if len(said) == len(anchors):
        nothing = unverified(f"nothing it cites is in the project's code at {commit[:7]}", claims=False)
        return NoteVerdict(nothing.state, nothing.commit, nothing.evidence + said)
    waived = note.waived_anchors or {}
    failing = [a for a in anchors if a.state in FAILING and a.key not in waived]
    if failing:
        # Beside what changed: what still holds but whose definition changed since the note's commit, and what moved
        # away from where the note says it is, each with the commit that did it.
        altered = [
            _altered_item(a) for a in anchors if a.state == AnchorState.HOLDS and (a.evidence or {}).get(ALTERED)
        ]
        moved = [
            {
                "anchor": a.value,
                "kind": a.kind,
                "state": AnchorState.MOVED,
                "path": _location_line(a.location)[0],
                "changed_in": a.evidence.get("moved_in", ""),
                "message": f"`{_shown(a.value)}` moved from {a.evidence['moved_from']} to {_location_line(a.location)[0]}"
                + (f" in {a.evidence['moved_in'][:7]}" if a.evidence.get("moved_in") else ""),
            }
            for a in anchors
            if a.state == AnchorState.MOVED and a.evidence.get("moved_from")
        ]
        return NoteVerdict(
            VerificationState.STALE,
            commit,
            [
                {
                    key: a.evidence.get(key, "")
                    for key in ("anchor", "kind", "state", "path", "quoted", "now", "changed_in", "hunk", "message")
                }
                for a in failing
            ]
            + altered
            + moved
            + said,
        )
    return NoteVerdict(VerificationState.VERIFIED, commit, said)


def _altered_item(anchor: Anchor) -> JSON:
    """A stale note's evidence for an anchor that still holds but whose definition changed: "changed, still present"."""
    altered = anchor.evidence[ALTERED]
    commits = altered.get("commits", [])
    others = [c[:7] for c in commits if c != altered["changed_in"]]
    also = f" (also changed in {', '.join(others[:5])}{', …' if len(others) > 5 else ''})" if others else ""
    return {
        "anchor": anchor.value,
        "kind": anchor.kind,
        "state": ALTERED,
        "path": altered.get("path", ""),
        "quoted": altered.get("then", ""),
        "now": altered.get("now", ""),
        "changed_in": altered["changed_in"],
        "commits": commits,
        "since": altered.get("since", ""),
        "hunk": altered.get("hunk", ""),
        "message": f"`{_shown(anchor.value)}` changed, still present: its definition changed in "
        f"{altered['changed_in'][:7]}{also} since {altered.get('since', '')[:7]}",
    }


def no_repository_reason(project: Project | None, problem: str = "") -> str:
    if project is None:
        return NO_PROJECT
    if problem:
        return f"project {project.name}'s repository cannot be read ({problem})"
    return f"project {project.name} has not been synced yet (manage.py project_sync {project.name})"


def describe(state: str, commit: str, evidence: list[JSON]) -> str:
    """One line for a session: "proven at 1a2b3c4 (check passed)", "verified at 1a2b3c4 (anchors hold)",
    "may be outdated: `spawn_worker` changed in 9f8e7d6", why it is unverified, or "" for a note that claims
    nothing about code (no project, nothing in its code)."""
    if state == VerificationState.PROVEN:
        return f"proven at {commit[:7]} (check passed)"
    if state == VerificationState.VERIFIED:
        return f"verified at {commit[:7]} (anchors hold)"
    if state == VerificationState.STALE:
        messages = [
            item.get("message", "") for item in evidence if item.get("message") and item.get("state") in FAILING
        ]
        return "may be outdated: " + "; ".join(messages[:2]) + ("; …" if len(messages) > 2 else "")
    if evidence and evidence[0].get("claims") is False:
        return ""
    return _reason(evidence)


def _reason(evidence: list[JSON]) -> str:
    return next((item.get("message", "") for item in evidence if item.get("message")), "") or "unverified"


def unresolved_messages(evidence: list[JSON]) -> list[str]:
    """What the note cites that is not in its project's code, as said to the writer."""
    return [item.get("message", "") for item in evidence or [] if item.get("state") == AnchorState.UNRESOLVED]


class AnchorEvidence(TypedDict):
    anchor: str
    kind: str
    state: str
    path: str
    changed_in: str
    message: str


class VerificationJson(TypedDict):
    """What brain_get and every hit show of a note's truth (`brain.presenters.Verification` on the wire)."""

    state: str
    commit: str | None
    label: str
    reason: str | None  # why unverified (None otherwise)
    evidence: list[AnchorEvidence]  # each anchor that no longer holds
    unresolved: list[str]


def verification_dict(note: Note) -> VerificationJson:
    """What brain_get and every hit show: {state, commit, label, reason, evidence, unresolved}."""
    return _verification(note.verification_state, note.verified_commit, note.verification_evidence)


def verification_of(state: str, commit: str, evidence: list[JSON]) -> VerificationJson:
    """`verification_dict` from a search row's columns."""
    return _verification(state, commit, evidence)


def _verification(state: str, commit: str, evidence: list[JSON]) -> VerificationJson:
    return {
        "state": state,
        "commit": commit or None,
        "label": describe(state, commit, evidence),
        "reason": _reason(evidence) if state == VerificationState.UNVERIFIED else None,
        "evidence": [
            {
                "anchor": item.get("anchor", ""),
                "kind": item.get("kind", ""),
                "state": item.get("state", ""),
                "path": item.get("path", ""),
                "changed_in": item.get("changed_in", ""),
                "message": item.get("message", ""),
            }
            for item in evidence
            if item.get("anchor") and item.get("state") != AnchorState.UNRESOLVED
        ],
        "unresolved": unresolved_messages(evidence),
    }
