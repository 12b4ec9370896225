"""Grounding and gates: a review or debug finding counts only if the code it cites is really there.

A finding is `{file, line, severity, title, rationale, suggestion,
confidence, quote, kind?}`. It is kept only when every gate passes, in this
order (the first that fails names the reason):

- `file`: a path inside the project root (no `..`, no symlink out) that
  exists and is a UTF-8 text file;
- `line`: a line number that exists in that file (1-based);
- `quote`: present, at least `QUOTE_MIN_CHARS` non-space characters, and
  found in the file starting within `QUOTE_WINDOW` lines of `line`
  (whitespace-normalised: runs of spaces/tabs collapse, blank lines are
  ignored; a multi-line quote must match consecutive lines, the first and
  last of which may be partial);
- `rationale`: not empty;
- `confidence` ≥ `SUPERVISOR_MIN_CONFIDENCE` (default 0.6).

A dropped finding is kept in `dropped` with `reason` (a sentence) and `gate`
(file, line, quote, rationale, confidence). A kept finding whose
`suggestion` is longer than `SUPERVISOR_MAX_PATCH_LINES` lines (a unified
diff: its added and removed lines, `patch_size`) stays a
finding, but is not offered as a patch: `patch` is None and
`patch_refused` says why; otherwise `patch` is the suggestion.

Bug fingerprints (`fingerprint(finding)`) name what a grounded finding is
about, `{kind}:{top-3 identifiers of the quote, sorted}`, for pathway memory.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from hyperguild.lib.typed import JSON
from supervisor.roots import RootRefused, relative_to_root, resolve_inside

# Models are often off by a line or two (a decorator, a blank line); a
# window this small still rejects a quote copied from elsewhere in the file.
QUOTE_WINDOW = 3
# A quote shorter than this (")", "x") would be "found" almost anywhere.
QUOTE_MIN_CHARS = 4
MAX_FILE_BYTES = 2 * 1024 * 1024

GATE_FILE, GATE_LINE, GATE_QUOTE, GATE_RATIONALE, GATE_CONFIDENCE = "file", "line", "quote", "rationale", "confidence"

_SPACE = re.compile(r"\s+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words that say nothing about which code a bug is in (keywords of the usual languages).
_NOT_IDENTIFIERS = set(keyword.kwlist) | {
    "self",
    "cls",
    "def",
    "func",
    "function",
    "return",
    "var",
    "let",
    "const",
    "int",
    "str",
    "string",
    "bool",
    "true",
    "false",
    "null",
    "nil",
    "none",
    "this",
    "new",
    "public",
    "private",
    "static",
    "void",
    "fn",
    "if",
    "else",
    "for",
    "while",
    "import",
    "from",
    "package",
    "err",
    "error",
    "len",
    "range",
    "print",
    "append",
}


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass
class Grounding:
    """What survived: `kept` findings (file made relative) and `dropped` ones, each with its reason."""

    # A finding is a model's JSON object: these gates are what checks its file, line, quote and confidence.
    kept: list[JSON] = field(default_factory=list)
    dropped: list[JSON] = field(default_factory=list)

    @property
    def all_dropped(self) -> bool:
        return bool(self.dropped) and not self.kept

    def reasons(self) -> str:
        return "; ".join(f"{d.get('title') or d.get('file')}: {d['reason']}" for d in self.dropped[:5])


class _Dropped(Exception):
    def __init__(self, gate: str, reason: str):
        super().__init__(reason)
        self.gate = gate
        self.reason = reason


def _read_lines(path: Path, cache: dict[Path, list[str] | None]) -> list[str] | None:
    if path not in cache:
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                cache[path] = None
            else:
                cache[path] = path.read_text(encoding="utf-8", errors="strict").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[path] = None
    return cache[path]


def quote_found(lines: list[str], line: int, quote: str, window: int = QUOTE_WINDOW) -> bool:
    """Whether `quote` matches consecutive non-blank lines starting within `window` lines of `line` (1-based)."""
    return quote_span(lines, line, quote, window) is not None


def quote_span(lines: list[str], line: int, quote: str, window: int = QUOTE_WINDOW) -> tuple[int, int] | None:
    """(first, last) 1-based lines where `quote` matches, starting nearest to `line` within `window`; None if nowhere."""
    wanted = [_normalise(part) for part in quote.splitlines() if _normalise(part)]
    if not wanted:
        return None
    # Non-blank lines of the file with their 0-based index, so blank lines never break a multi-line match.
    low = max(0, line - 1 - window)
    high = min(len(lines), line + window)
    candidates = [(index, _normalise(lines[index])) for index in range(len(lines))]
    solid = [(index, text) for index, text in candidates if text]
    spans = []
    for position, (index, _text) in enumerate(solid):
        if index < low:
            continue
        if index >= high:
            break
        if _matches_from(solid, position, wanted):
            spans.append((index + 1, solid[position + len(wanted) - 1][0] + 1))
    return min(spans, key=lambda span: (abs(span[0] - line), span[0])) if spans else None


def _matches_from(solid: list[tuple[int, str]], position: int, wanted: list[str]) -> bool:
    if position + len(wanted) > len(solid):
        return False
    if len(wanted) == 1:
        return wanted[0] in solid[position][1]
    for offset, part in enumerate(wanted):
        text = solid[position + offset][1]
        first, last = offset == 0, offset == len(wanted) - 1
        if first and not text.endswith(part):
            return False
        if last and not text.startswith(part):
            return False
        if not first and not last and text != part:
            return False
    return True


def _check(root: Path, finding: JSON, cache: dict[Path, list[str] | None], min_confidence: float) -> JSON:
    file_text = finding.get("file")
    line = finding.get("line")
    if not isinstance(file_text, str) or not file_text.strip():
        raise _Dropped(GATE_FILE, "no file")
    try:
        path = resolve_inside(root, file_text, must_exist=True)
    except RootRefused as exc:
        raise _Dropped(GATE_FILE, f"file {file_text!r} is not in the project ({exc})") from None
    lines = _read_lines(path, cache)
    if lines is None:
        raise _Dropped(GATE_FILE, f"{file_text} is not a readable text file")
    if isinstance(line, bool) or not isinstance(line, int) or not 1 <= line <= len(lines):
        raise _Dropped(GATE_LINE, f"line {line!r} does not exist in {file_text} ({len(lines)} lines)")
    quote = finding.get("quote")
    if not isinstance(quote, str) or not quote.strip():
        raise _Dropped(GATE_QUOTE, "no quote: a finding must quote the code it is about")
    if len(_SPACE.sub("", quote)) < QUOTE_MIN_CHARS:
        raise _Dropped(
            GATE_QUOTE, f"the quote {quote!r} is too short to ground anything (< {QUOTE_MIN_CHARS} characters)"
        )
    if not quote_found(lines, line, quote):
        raise _Dropped(GATE_QUOTE, f"the quoted code is not in {file_text} within {QUOTE_WINDOW} lines of line {line}")
    if not str(finding.get("rationale") or "").strip():
        raise _Dropped(GATE_RATIONALE, "no rationale: a finding must say why it is a problem")
    confidence = finding.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise _Dropped(GATE_CONFIDENCE, "no confidence")
    if confidence < min_confidence:
        raise _Dropped(
            GATE_CONFIDENCE, f"confidence {confidence:g} is below SUPERVISOR_MIN_CONFIDENCE ({min_confidence:g})"
        )
    return {**finding, "file": relative_to_root(root, path)}


_DIFF_FENCE = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)```", re.S)
_DIFF_FILE_HEADER = re.compile(r"^(---|\+\+\+) ")
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def suggested_diff(suggestion: str) -> str | None:
    """The unified diff a suggestion holds (bare or in a ```diff fence), or None when it is prose or code."""
    text = str(suggestion or "")
    fenced = _DIFF_FENCE.findall(text)
    for candidate in [*fenced, text]:
        lines = candidate.splitlines()
        if any(_HUNK_HEADER.match(line) for line in lines):
            body = candidate.strip("\n")
            return body + "\n"
    return None


def patch_size(suggestion: str) -> int:
    """How big a suggested patch is: for a unified diff its added and removed lines, else its non-blank lines."""
    diff = suggested_diff(suggestion)
    if diff is None:
        return len([line for line in str(suggestion or "").splitlines() if line.strip()])
    return sum(1 for line in diff.splitlines() if line[:1] in ("+", "-") and not _DIFF_FILE_HEADER.match(line))


def finding_kind(finding: Mapping[str, Any]) -> str:
    """The class of bug a finding names: its `kind`, else its severity, normalised ("Off By One" -> "off-by-one")."""
    return _normalise(str(finding.get("kind") or finding.get("severity") or "bug")).lower().replace(" ", "-")


@dataclass(frozen=True)
class PatchGate:
    """Whether a finding's suggestion is small enough to be a patch: `patch` if so, else why not (`refused`)."""

    patch: str | None
    refused: str


def patch_gate(suggestion: str, max_lines: int) -> PatchGate:
    """The gate on a finding's suggestion: a patch when it is at most `max_lines` lines.

    A suggestion that is a unified diff is measured by its changed lines (headers and context do not count).
    """
    count = patch_size(suggestion)
    if not suggestion.strip():
        return PatchGate(patch=None, refused="no suggestion")
    if count > max_lines:
        return PatchGate(
            patch=None,
            refused=(
                f"the suggestion is {count} lines, over SUPERVISOR_MAX_PATCH_LINES ({max_lines}): "
                "kept as a finding, not a patch"
            ),
        )
    return PatchGate(patch=suggestion, refused="")


def ground_findings(
    project_root: str | Path,
    findings: Sequence[object],
    *,
    min_confidence: float | None = None,
    max_patch_lines: int | None = None,
) -> Grounding:
    """Run every gate on every finding (settings unless given)."""
    root = Path(project_root).resolve()
    floor = settings.SUPERVISOR_MIN_CONFIDENCE if min_confidence is None else min_confidence
    patch_lines = settings.SUPERVISOR_MAX_PATCH_LINES if max_patch_lines is None else max_patch_lines
    cache: dict[Path, list[str] | None] = {}
    result = Grounding()
    for finding in findings or []:
        if not isinstance(finding, dict):
            result.dropped.append({"finding": finding, "gate": GATE_FILE, "reason": "not a finding object"})
            continue
        try:
            kept = _check(root, finding, cache, floor)
        except _Dropped as exc:
            result.dropped.append({**finding, "gate": exc.gate, "reason": exc.reason})
            continue
        gate = patch_gate(str(kept.get("suggestion") or ""), patch_lines)
        # The finding travels on as JSON (the runners validate it into the result model): the gate's outcome as two keys.
        result.kept.append({**kept, "patch": gate.patch, "patch_refused": gate.refused})
    return result


def fingerprint(finding: Mapping[str, Any]) -> str:
    """`{kind}:{top-3 identifiers sorted}`: what a grounded finding is about, stable across wording.

    `kind` is the finding's own `kind` (e.g. "off-by-one"), else its severity;
    the identifiers are the most frequent names in its quote (ties: longer
    first), language keywords left out.
    """
    kind = finding_kind(finding)
    names = [
        name for name in _IDENTIFIER.findall(str(finding.get("quote") or "")) if name.lower() not in _NOT_IDENTIFIERS
    ]
    counts = Counter(names)
    top = sorted(counts, key=lambda name: (-counts[name], -len(name), name))[:3]
    return f"{kind}:{','.join(sorted(top))}"


def review_verified(grounding: Grounding, verdict: str) -> tuple[bool, str]:
    """(verified, why) for a review: it must not rest on dropped findings alone."""
    if grounding.all_dropped:
        return False, (f"not verified: all {len(grounding.dropped)} finding(s) were dropped ({grounding.reasons()})")
    if verdict == "request_changes" and not grounding.kept:
        return False, "not verified: the verdict asks for changes but no grounded finding says which"
    message = f"{len(grounding.kept)} grounded finding(s)"
    if grounding.dropped:
        message += f"; {len(grounding.dropped)} dropped ({grounding.reasons()})"
    return True, message
