"""Grounding: a review finding survives only if the code it cites is really there.

A finding is `{file, line, severity, title, rationale, suggestion,
confidence, quote?}`. It is kept when:

- `file` is a path inside the project root (no `..`, no symlink out) that
  exists and is a text file;
- `line` is a line number that exists in that file (1-based);
- `quote`, when given, appears (whitespace-normalised) on one of the lines
  within `QUOTE_WINDOW` of `line`. Multi-line quotes are matched line by
  line against the same window.

Everything else is dropped and counted. Used by the supervisor's `review`
and by the routing endpoint.
"""

from __future__ import annotations

import re
from pathlib import Path

from supervisor.roots import RootRefused, relative_to_root, resolve_inside

# Models are often off by a line or two (a decorator, a blank line); a
# window this small still rejects a quote from elsewhere in the file.
QUOTE_WINDOW = 3
MAX_FILE_BYTES = 2 * 1024 * 1024

_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


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


def _quote_found(lines: list[str], line: int, quote: str) -> bool:
    wanted = [_normalise(part) for part in quote.splitlines() if _normalise(part)]
    if not wanted:
        return True
    low = max(0, line - 1 - QUOTE_WINDOW)
    high = min(len(lines), line + QUOTE_WINDOW + len(wanted))
    window = [_normalise(text) for text in lines[low:high]]
    return all(any(part in candidate for candidate in window) for part in wanted)


def ground_finding(root: Path, finding: dict, cache: dict | None = None) -> dict | None:
    """The finding with `file` made relative to the root, or None if it is not grounded."""
    cache = {} if cache is None else cache
    file_text = finding.get("file")
    line = finding.get("line")
    if not isinstance(file_text, str) or isinstance(line, bool) or not isinstance(line, int) or line < 1:
        return None
    try:
        path = resolve_inside(root, file_text, must_exist=True)
    except RootRefused:
        return None
    lines = _read_lines(path, cache)
    if lines is None or line > len(lines):
        return None
    quote = finding.get("quote")
    if isinstance(quote, str) and quote.strip() and not _quote_found(lines, line, quote):
        return None
    return {**finding, "file": relative_to_root(root, path)}


def ground_findings(project_root: str | Path, findings: list[dict]) -> tuple[list[dict], int]:
    """(the grounded findings, how many were dropped)."""
    root = Path(project_root).resolve()
    cache: dict[Path, list[str] | None] = {}
    kept = []
    for finding in findings:
        grounded = ground_finding(root, finding, cache) if isinstance(finding, dict) else None
        if grounded is not None:
            kept.append(grounded)
    return kept, len(findings) - len(kept)
