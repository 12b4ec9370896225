"""Diffs: unified diffs of a set of files and applying them again (what a worker changed, replayable),
and line diffs of two texts as safe HTML for reviewers.

    text = file_diff(path, before, after)          # before/after: str, None (absent) or BINARY
    diff, truncated = join_diffs(parts, cap=...)   # a size cap with a clear marker
    apply_diff(root, diff)                         # raises PatchFailed; writes nothing on failure
    fenced = diff_block(text)                      # the ```diff block inside a message, or None
    html = html_diff(before, after)                # a `<pre class="diff">` for a review page
    ratio = similarity(a, b)                       # 0..1, the share of words two texts have in common

The format is git's (`diff --git`, `new file mode`, `deleted file mode`,
`--- /dev/null`, `\\ No newline at end of file`), so `git apply` reads it too.
A binary file is named (`Binary files a/x and b/x differ`), never inlined;
a diff that names one, or that was cut at the cap, does not apply.
"""

from __future__ import annotations

import difflib
import enum
import re
from pathlib import Path
from typing import Any, Final

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


class _Binary(enum.Enum):
    """The type of BINARY: a one-member enum, so a type checker narrows `text is BINARY`."""

    BINARY = "binary"


BINARY: Final = _Binary.BINARY  # a file whose content is not text: named in the diff, not inlined
FileText = str | _Binary  # a file's text, or BINARY
TRUNCATED_MARKER = "[hyperguild: diff truncated"
NO_NEWLINE = "\\ No newline at end of file"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"```diff\n(.*?)```", re.S)


class PatchFailed(ValueError):
    """The diff does not apply to the files it names (or cannot be applied at all)."""


def as_text(data: bytes) -> FileText:
    """The file's text, or BINARY when it holds a NUL byte or is not UTF-8."""
    if b"\0" in data:
        return BINARY
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY


def file_diff(path: str, before: FileText | None, after: FileText | None) -> str:
    """One file's part of a unified diff; `before`/`after` are text, None (no such file) or BINARY.

    Call it for a file whose content changed: two BINARY sides are still named as differing.
    """
    if before == after and before is not BINARY:
        return ""
    header = f"diff --git a/{path} b/{path}\n"
    if before is None:
        header += "new file mode 100644\n"
    elif after is None:
        header += "deleted file mode 100644\n"
    if before is BINARY or after is BINARY:
        old = "/dev/null" if before is None else f"a/{path}"
        new = "/dev/null" if after is None else f"b/{path}"
        return header + f"Binary files {old} and {new} differ\n"
    old_lines = (before or "").splitlines(keepends=True)
    new_lines = (after or "").splitlines(keepends=True)
    out = [header]
    for line in difflib.unified_diff(
        old_lines,
        new_lines,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
        lineterm="\n",
    ):
        if line.startswith("@@"):
            # difflib writes "-0,0" for an empty side, as git does
            out.append(line)
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE + "\n")
    return "".join(out)


def join_diffs(parts: list[str], *, cap: int) -> tuple[str, bool]:
    """The parts as one diff; past `cap` characters it is cut at a line with a marker saying so."""
    text = "".join(parts)
    if len(text) <= cap:
        return text, False
    cut = text.rfind("\n", 0, cap)
    cut = cap if cut < 0 else cut + 1
    return text[:cut] + f"{TRUNCATED_MARKER}: {cut} of {len(text)} characters shown]\n", True


def diff_block(text: str) -> str | None:
    """The last ```diff fenced block in `text` (an example's answer), or None."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1] if blocks else None


def fenced(diff: str) -> str:
    return "```diff\n" + diff + ("" if diff.endswith("\n") or not diff else "\n") + "```"


def _parse(diff: str) -> list[dict[str, Any]]:
    """[{old: path|None, new: path|None, hunks: [(old_start, old_len, [lines])]}]."""
    if TRUNCATED_MARKER in diff:
        raise PatchFailed("the diff was truncated at the size cap, so it cannot be applied")
    files: list[dict[str, Any]] = []
    lines = diff.splitlines(keepends=True)
    i = 0
    current: dict[str, Any] | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            current = None
        elif line.startswith("Binary files "):
            raise PatchFailed(f"the diff names a binary file ({line.strip()}); binary content is not inlined")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = line[4:].strip()
            new = lines[i + 1][4:].strip()
            current = {
                "old": None if old == "/dev/null" else _strip_prefix(old, "a/"),
                "new": None if new == "/dev/null" else _strip_prefix(new, "b/"),
                "hunks": [],
            }
            files.append(current)
            i += 2
            continue
        elif line.startswith("@@"):
            match = _HUNK.match(line)
            if current is None or match is None:
                raise PatchFailed(f"line {i + 1}: a hunk header outside a file, or malformed: {line.strip()}")
            old_start, old_len = int(match.group(1)), int(match.group(2) or 1)
            new_len = int(match.group(4) or 1)
            body: list[str] = []
            i += 1
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_len or seen_new < new_len or lines[i].startswith("\\")):
                text = lines[i]
                if text.startswith("\\"):
                    if body:
                        body[-1] = body[-1][:-1] if body[-1].endswith("\n") else body[-1]
                elif text[:1] in (" ", "-", "+"):
                    body.append(text)
                    seen_old += text[0] in " -"
                    seen_new += text[0] in " +"
                elif text == "\n":  # an empty context line whose leading space was lost
                    body.append(" \n")
                    seen_old += 1
                    seen_new += 1
                else:
                    raise PatchFailed(f"line {i + 1}: not a diff line: {text.strip()[:80]}")
                i += 1
            if seen_old != old_len or seen_new != new_len:
                raise PatchFailed(f"a hunk of {current['new'] or current['old']} is shorter than its header says")
            current["hunks"].append((old_start, old_len, body))
            continue
        i += 1
    if not files:
        raise PatchFailed("no file changes found in the diff")
    return files


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if path.startswith(prefix) else path


def _patched(path: str, original: str, hunks: list[tuple[int, int, list[str]]]) -> str:
    old = original.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # index into `old` of the next line not yet copied
    for old_start, old_len, body in hunks:
        start = old_start - 1 if old_len else old_start
        if start < position or start > len(old):
            raise PatchFailed(f"{path}: a hunk starts at line {old_start}, outside the file")
        out.extend(old[position:start])
        position = start
        for line in body:
            tag, text = line[0], line[1:]
            if tag in " -":
                if position >= len(old) or old[position] != text:
                    found = old[position].rstrip("\n") if position < len(old) else "end of file"
                    raise PatchFailed(
                        f"{path}, line {position + 1}: expected {text.rstrip(chr(10))!r}, found {found!r}"
                    )
                position += 1
                if tag == " ":
                    out.append(text)
            else:
                out.append(text)
    out.extend(old[position:])
    return "".join(out)


def apply_diff(root: Path | str, diff: str) -> list[str]:
    """Apply `diff` to the files under `root`; returns the paths written. Nothing is written if any part fails."""
    root = Path(root).resolve()
    writes: dict[Path, str | None] = {}
    for part in _parse(diff):
        name = part["new"] or part["old"]
        target = (root / name).resolve()
        if root not in target.parents:
            raise PatchFailed(f"{name}: outside the folder the diff applies to")
        if part["old"] is None:
            if target.exists():
                raise PatchFailed(f"{name}: the diff creates it, but it already exists")
            original = ""
        else:
            if not target.is_file():
                raise PatchFailed(f"{name}: the diff changes it, but it does not exist")
            original = target.read_text(encoding="utf-8")
        result = _patched(name, original, part["hunks"])
        writes[target] = None if part["new"] is None else result
    for target, content in writes.items():
        if content is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
    return sorted(str(target.relative_to(root)) for target in writes)


# --- line diffs as safe HTML, for reviewers comparing two texts (merges, revisions, DPO pairs) ---

CONTEXT_LINES = 3
MAX_DIFF_LINES = 2000  # a diff longer than this is cut, and says so


def diff_lines(before: str, after: str, *, context: int = CONTEXT_LINES) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is "del", "ins", "same" or "hunk" (an `@@` line)."""
    lines = []
    for line in difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(), lineterm="", n=context):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(("hunk", line))
        elif line.startswith("-"):
            lines.append(("del", line[1:]))
        elif line.startswith("+"):
            lines.append(("ins", line[1:]))
        else:
            lines.append(("same", line[1:]))
    return lines


def html_diff(before: str, after: str, *, context: int = CONTEXT_LINES) -> SafeString:
    """A `<pre class="diff">` with one escaped line per `<del>`, `<ins>` or `<span>`; empty when equal."""
    lines = diff_lines(before, after, context=context)
    if not lines:
        return mark_safe("")
    parts = []
    for kind, text in lines[:MAX_DIFF_LINES]:
        if kind == "del":
            parts.append(f'<del class="diff">{escape(text)}</del>')
        elif kind == "ins":
            parts.append(f'<ins class="diff">{escape(text)}</ins>')
        elif kind == "hunk":
            parts.append(f'<span class="diff-hunk">{escape(text)}</span>')
        else:
            parts.append(f'<span class="diff-same">{escape(text)}</span>')
    if len(lines) > MAX_DIFF_LINES:
        parts.append(f'<span class="diff-hunk">… {len(lines) - MAX_DIFF_LINES} more lines</span>')
    # Each line is a block element: no newline between them, or <pre> would show blank lines.
    return mark_safe('<pre class="diff">' + "".join(parts) + "</pre>")  # noqa: S308 — every line escaped above


def similarity(a: str, b: str) -> float:
    """0..1, how much of two texts is the same (difflib's ratio over words)."""
    words_a, words_b = (a or "").split(), (b or "").split()
    if not words_a and not words_b:
        return 1.0
    return difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio()
