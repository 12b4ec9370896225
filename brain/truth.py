"""Checking a note's anchors against its project's branch head (docs/truth.md).

An anchor **holds** (found where the note ties it, or found for the first time; records the commit and
the location), **moved** (found, but elsewhere than where it last held), **changed** (its file is there,
the symbol or quoted line is not) or is **gone** (neither). A note whose anchors all hold or moved is
*verified at <commit>*; one with a changed or gone anchor that no person waived is *stale*, with the
evidence of each (which anchor, the commit that changed it, the hunk, what the code says now); a note
with no project, no readable repository or nothing cited is *unverified*, with the reason.

This module computes; `brain.actions` stores (do_verify_note, do_sync_project, do_recheck_project).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from brain.models import Anchor, AnchorState, Note, Project, VerificationState
from brain.repository import Repository

CONTEXT_LINES = 2  # lines of code shown around where an anchor was, as "what the code says now"
MAX_HUNK_CHARS = 2000
MAX_LINES_CHARS = 1000


@dataclass
class Check:
    state: str
    path: str = ""
    location: str = ""
    evidence: dict = field(default_factory=dict)


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


class Verifier:
    """Checks anchors at one commit of one repository (`old`: the commit they were last checked at, if known)."""

    def __init__(self, repo: Repository, commit: str, old: str | None = None):
        self.repo, self.commit, self.old = repo, commit, old
        self.files = repo.files(commit)

    # -- one anchor ------------------------------------------------------------------

    def check(self, anchor: Anchor) -> Check:
        check = getattr(self, f"_check_{anchor.kind}")(anchor)
        if check.state in (AnchorState.HOLDS, AnchorState.MOVED):
            path, line = _location_line(check.location)
            check.evidence = {"held_commit": self.commit, "held_lines": _lines_at(self.repo.read(self.commit, path), line)}
        else:
            check.evidence = self._evidence(anchor, check)
        return check

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
        name, owner = parts[-1], parts[0] if len(parts) > 1 else ""
        definitions = self.repo.definitions(self.commit)
        found = list(definitions.get(name, ()))
        if owner:
            owners = {d.path for d in definitions.get(owner, ())}
            found = [d for d in found if d.path in owners or d.path.rsplit("/", 1)[-1].split(".")[0] == owner]
        preferred = self._preferred(anchor)
        for definition in found:
            if definition.path in preferred:
                return Check(AnchorState.HOLDS, path=definition.path, location=f"{definition.path}:{definition.line}")
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
        for path, line in self.repo.grep_fixed(self.commit, needle):
            return self._found(path, line, preferred)
        return self._missing(preferred)

    def _check_setting(self, anchor: Anchor) -> Check:
        preferred = self._preferred(anchor)
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(anchor.value)}(?![A-Za-z0-9_])")
        for path in preferred:
            content = self.repo.read(self.commit, path) or ""
            for number, line in enumerate(content.splitlines(), start=1):
                if word.search(line):
                    return Check(AnchorState.HOLDS, path=path, location=f"{path}:{number}")
        hits = [(p, n) for p, n in self.repo.grep_fixed(self.commit, anchor.value)]
        # Where it is defined says most: a settings file, then any assignment, then the first mention.
        hits.sort(key=lambda hit: ("settings" not in hit[0], hit[0].startswith(("tests/", "test/")), hit))
        if hits:
            path, number = hits[0]
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

    def _target_in(self, filename: str, pattern: re.Pattern, anchor: Anchor) -> Check:
        content = self.repo.read(self.commit, filename)
        if content is None:
            return Check(AnchorState.GONE, path=filename)
        for number, line in enumerate(content.splitlines(), start=1):
            if pattern.search(line):
                return Check(AnchorState.HOLDS, path=filename, location=f"{filename}:{number}")
        return Check(AnchorState.CHANGED, path=filename, location=filename)

    # -- evidence ----------------------------------------------------------------------

    def _evidence(self, anchor: Anchor, check: Check) -> dict:
        before = anchor.evidence if anchor.state in (AnchorState.HOLDS, AnchorState.MOVED) else anchor.evidence.get("before", {})
        held_commit = before.get("held_commit") or ""
        old_path, old_line = _location_line(anchor.location) if anchor.location else (check.path, 0)
        old_path = old_path or check.path
        base = held_commit if held_commit and held_commit != self.commit else (self.old or "")
        changed_in = self.repo.last_change(base or None, self.commit, old_path) if old_path else ""
        hunk = ""
        if base and old_path:
            needle = anchor.value.split(".")[-1] if anchor.kind == "symbol" else _squash(anchor.value)
            hunks = self.repo.hunks(base, self.commit, old_path)
            removing = [h for h in hunks if any(
                line.startswith("-") and needle and needle in _squash(line[1:]) for line in h.splitlines())]
            hunk = (removing or hunks or [""])[0][:MAX_HUNK_CHARS]
        now = _lines_at(self.repo.read(self.commit, old_path), old_line, CONTEXT_LINES) if old_line else ""
        short = changed_in[:7] if changed_in else self.commit[:7]
        shown = anchor.value if len(anchor.value) <= 80 else anchor.value[:77] + "…"
        if check.state == AnchorState.GONE:
            message = f"`{shown}` is gone in {short}" if anchor.kind != "path" else f"`{shown}` was deleted in {short}"
        else:
            message = f"`{shown}` changed in {short}"
        return {
            "anchor": anchor.value, "kind": anchor.kind, "state": check.state, "path": old_path,
            "quoted": before.get("held_lines") or anchor.value, "now": now, "changed_in": changed_in, "hunk": hunk,
            "message": message, "before": before,
        }  # fmt: skip


# -- a note's state from its anchors ---------------------------------------------------


@dataclass
class NoteVerdict:
    state: str
    commit: str
    evidence: list[dict]


def unverified(reason: str) -> NoteVerdict:
    return NoteVerdict(VerificationState.UNVERIFIED, "", [{"message": f"unverified: {reason}"}])


def verdict(note: Note, anchors: list[Anchor], commit: str) -> NoteVerdict:
    if not anchors:
        return unverified("the note cites nothing in the code (no file, symbol or quoted line)")
    waived = note.waived_anchors or {}
    failing = [a for a in anchors if a.state in (AnchorState.CHANGED, AnchorState.GONE) and a.key not in waived]
    if any(a.state == AnchorState.UNCHECKED for a in anchors):
        return unverified("its anchors have not been checked yet")
    if failing:
        return NoteVerdict(VerificationState.STALE, commit, [
            {key: a.evidence.get(key, "") for key in ("anchor", "kind", "state", "path", "quoted", "now", "changed_in",
                                                        "hunk", "message")}
            for a in failing
        ])  # fmt: skip
    return NoteVerdict(VerificationState.VERIFIED, commit, [])


def no_repository_reason(project: Project | None, problem: str = "") -> str:
    if project is None:
        return "the note belongs to no project, so there is no code to check it against"
    if problem:
        return f"project {project.name}'s repository cannot be read ({problem})"
    return f"project {project.name} has not been synced yet (manage.py project_sync {project.name})"


def describe(state: str, commit: str, evidence: list[dict]) -> str:
    """One line for a session: "proven at 1a2b3c4 (check passed)", "verified at 1a2b3c4 (anchors hold)",
    "may be outdated: `spawn_worker` changed in 9f8e7d6"."""
    if state == VerificationState.PROVEN:
        return f"proven at {commit[:7]} (check passed)"
    if state == VerificationState.VERIFIED:
        return f"verified at {commit[:7]} (anchors hold)"
    if state == VerificationState.STALE:
        messages = [item.get("message", "") for item in evidence if item.get("message")]
        return "may be outdated: " + "; ".join(messages[:2]) + ("; …" if len(messages) > 2 else "")
    reason = next((item.get("message", "") for item in evidence if item.get("message")), "")
    return reason or "unverified"


def verification_dict(note: Note) -> dict:
    """What brain_get and every hit show: {state, commit, label, evidence}."""
    return verification_of(note.verification_state, note.verified_commit, note.verification_evidence)


def verification_of(state: str, commit: str, evidence: list[dict]) -> dict:
    return {
        "state": state,
        "commit": commit or None,
        "label": describe(state, commit, evidence),
        "reason": describe(state, commit, evidence) if state == VerificationState.UNVERIFIED else None,
        "evidence": [
            {key: item.get(key, "") for key in ("anchor", "kind", "state", "path", "changed_in", "message")}
            for item in evidence
            if item.get("anchor")
        ],
    }
