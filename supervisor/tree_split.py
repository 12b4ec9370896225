"""Tree-split: review a file too long for one prompt without a context cut-off.

A reviewer shown the first 60,000 characters of a file will claim that
something "is missing" when it lies past the cut. Instead, a file longer
than `SUPERVISOR_TREE_SPLIT_CHARS` is:

1. split into parts of at most half that size, at top-level function/class
   boundaries (`split_parts`; a block too long on its own is cut into line
   windows);
2. each part summarised by the fast model (`summarise_parts`; a failed
   summary says so and the split goes on);
3. reviewed part by part: each call sees the real code of one part, with its
   true line numbers, and the summaries of all parts as a scratchpad
   (`scratchpad`) between markers that say it is not code and cannot be cited.

Findings must still quote real code: grounding runs on the file itself, so a
"quote" copied from the scratchpad is dropped like any invented one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

from hyperguild.lib.llm import LLMClient, LLMError, generation_limit

SCRATCHPAD_OPEN = (
    "<<<SCRATCHPAD: summaries of the other parts, written by a model. Not code: never quote or cite it.>>>"
)
SCRATCHPAD_CLOSE = "<<<END SCRATCHPAD>>>"
SUMMARY_INPUT_CHARS = 40_000

# A top-level definition starts a block: Python, JS/TS, Go, Rust, Ruby, Elixir, Java-ish.
_BOUNDARY = re.compile(
    r"^(?:@|def |async def |class |function |async function |export |func |fn |pub |impl |struct |enum |"
    r"trait |type |interface |module |defmodule |defp? |const |let |var |public |private |protected )"
)


@dataclass(frozen=True)
class Part:
    start: int  # first line, 1-based
    end: int  # last line, inclusive
    text: str

    @property
    def label(self) -> str:
        return f"lines {self.start}-{self.end}"


def needs_split(text: str) -> bool:
    return len(text) > settings.SUPERVISOR_TREE_SPLIT_CHARS


def part_chars() -> int:
    return max(1000, settings.SUPERVISOR_TREE_SPLIT_CHARS // 2)


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) 0-based half-open ranges of top-level blocks (decorators stay with their definition)."""
    starts = [0]
    for index, line in enumerate(lines):
        if index and _BOUNDARY.match(line) and not (lines[index - 1].startswith("@")):
            starts.append(index)
    starts = sorted(set(starts))
    return [(start, end) for start, end in zip(starts, starts[1:] + [len(lines)], strict=True) if end > start]


def _windows(lines: list[str], start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Cut lines[start:end] into consecutive windows of at most `limit` characters (one line at least)."""
    out, first, size = [], start, 0
    for index in range(start, end):
        length = len(lines[index]) + 1
        if size + length > limit and index > first:
            out.append((first, index))
            first, size = index, 0
        size += length
    out.append((first, end))
    return out


def split_parts(text: str, limit: int | None = None) -> list[Part]:
    """Whole top-level blocks packed into parts of at most `limit` characters; line windows as the fallback."""
    limit = limit or part_chars()
    lines = text.splitlines()
    ranges: list[tuple[int, int]] = []
    for start, end in _blocks(lines):
        if sum(len(line) + 1 for line in lines[start:end]) > limit:
            ranges.extend(_windows(lines, start, end, limit))
        else:
            ranges.append((start, end))
    parts: list[tuple[int, int]] = []
    size = 0
    for start, end in ranges:
        length = sum(len(line) + 1 for line in lines[start:end])
        if parts and size + length <= limit and parts[-1][1] == start:
            parts[-1] = (parts[-1][0], end)
            size += length
        else:
            parts.append((start, end))
            size = length
    return [Part(start + 1, end, "\n".join(lines[start:end])) for start, end in parts]


def numbered(part: Part) -> str:
    return "\n".join(f"{number:>6}  {line}" for number, line in enumerate(part.text.splitlines(), start=part.start))


def summarise_parts(client: LLMClient, name: str, parts: list[Part]) -> list[str]:
    """One short summary per part from the fast model; a failure is written down, never raised."""
    summaries = []
    for part in parts:
        messages = [
            {
                "role": "system",
                "content": (
                    "Summarise this part of a source file for a code reviewer who will not see it: the names it "
                    "defines, what each does, what it depends on, anything that looks wrong. At most 8 short lines."
                ),
            },
            {"role": "user", "content": f"{name} ({part.label}):\n{part.text[:SUMMARY_INPUT_CHARS]}"},
        ]
        try:
            text = client.chat(
                messages,
                model=settings.HYPERGUILD_FAST_MODEL,
                max_tokens=generation_limit("summary"),
                purpose="summary",
            ).text
        except LLMError as exc:
            text = f"(no summary: {exc})"
        summaries.append(text.strip() or "(empty summary)")
    return summaries


def scratchpad(name: str, parts: list[Part], summaries: list[str], *, current: int | None = None) -> str:
    """The summaries between markers; each line starts with "~" so it never looks like a line of code."""
    lines = [SCRATCHPAD_OPEN]
    for index, (part, summary) in enumerate(zip(parts, summaries, strict=True)):
        here = " (shown in full below)" if index == current else ""
        lines.append(f"~ [{name} {part.label}{here}]")
        lines.extend(f"~   {line}" for line in summary.splitlines() if line.strip())
    lines.append(SCRATCHPAD_CLOSE)
    return "\n".join(lines)


def part_block(name: str, parts: list[Part], summaries: list[str], index: int) -> str:
    """What one part's review call sees of a long file: the scratchpad, then the part's real code."""
    part = parts[index]
    return (
        f"{scratchpad(name, parts, summaries, current=index)}\n\n"
        f"=== {name}, part {index + 1} of {len(parts)} ({part.label}; real code, line numbers added) ===\n"
        f"{numbered(part)}\n"
    )


def parts_for_lines(parts: list[Part], lines: list[int], most: int = 2) -> list[int]:
    """Indexes of the parts that hold any of `lines` (at most `most`); the last part when none does."""
    chosen = []
    for index, part in enumerate(parts):
        if any(part.start <= line <= part.end for line in lines):
            chosen.append(index)
    return chosen[:most] or [len(parts) - 1]
