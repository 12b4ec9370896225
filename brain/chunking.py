"""Split a note into heading-aware chunks of bounded size, for embedding.

Each markdown section (a heading and the text up to the next heading of any
level) is one chunk, so editing one section changes one chunk's hash and
only that chunk is embedded again. A section longer than MAX_CHUNK_CHARS is
cut at paragraph, then sentence, then word boundaries. The text sent to the
embedder carries the note title and the heading path, so a chunk is
understandable on its own; its hash is what decides re-embedding.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# e5-small reads 512 tokens; ~2,000 characters of English fit in that.
MAX_CHUNK_CHARS = 2000
HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？])\s+")
HEADING_SEPARATOR = " > "


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading_path: str
    text: str
    embed_text: str  # what the embedder reads: title, heading path, text
    content_hash: str


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_note(title: str, body: str, *, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    pieces: list[tuple[str, str]] = []
    for heading_path, text in sections(body):
        for part in _split(text, max_chars):
            pieces.append((heading_path, part))
    if not pieces:  # an empty body still has a title worth finding
        pieces.append(("", ""))
    chunks = []
    for ordinal, (heading_path, text) in enumerate(pieces):
        embedded = embed_text(title, heading_path, text)
        chunks.append(Chunk(ordinal, heading_path, text, embedded, content_hash(embedded)))
    return chunks


def embed_text(title: str, heading_path: str, text: str) -> str:
    """What the embedder reads for a chunk: the note title and heading path give it context."""
    header = title if not heading_path else f"{title}{HEADING_SEPARATOR}{heading_path}"
    return f"{header}\n\n{text}".strip()


def sections(body: str) -> list[tuple[str, str]]:
    """(heading path, section text) in order; headings inside code fences are text."""
    stack: list[tuple[int, str]] = []
    sections: list[tuple[str, str]] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(current).strip()
        if text:
            sections.append((HEADING_SEPARATOR.join(h for _, h in stack), text))
        current.clear()

    for line in body.splitlines():
        if FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING_RE.match(line)
        if match:
            flush()
            level = len(match.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, match.group(2)))
        else:
            current.append(line)
    flush()
    return sections


def _split(text: str, max_chars: int) -> list[str]:
    if len(text) <= max_chars:
        return [text]
    for splitter in (re.compile(r"\n\s*\n"), SENTENCE_END_RE, re.compile(r"\s+")):
        units = [u for u in splitter.split(text) if u.strip()]
        if len(units) > 1:
            return _pack(units, max_chars, "\n\n" if splitter.pattern.startswith("\\n") else " ")
    return [text[i : i + max_chars] for i in range(0, len(text), max_chars)]


def _pack(units: list[str], max_chars: int, joiner: str) -> list[str]:
    """Greedy packing of units into pieces of at most max_chars (long units split further)."""
    pieces: list[str] = []
    current = ""
    for unit in units:
        if len(unit) > max_chars:
            if current:
                pieces.append(current)
                current = ""
            pieces.extend(_split(unit, max_chars))
            continue
        candidate = f"{current}{joiner}{unit}" if current else unit
        if len(candidate) <= max_chars:
            current = candidate
        else:
            pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return pieces
