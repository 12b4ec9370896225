"""`sessions/<session_id>.jsonl` folders: import and byte-exact export.

The original hyperguild brain kept one JSON object a line per session,
with whatever fields the client wrote (`ts`, `kind`, `skill`, `phase`,
`status`, `message`, and more). Import keeps every line exactly as it was
(`SessionEntry.raw_line`; `data` holds the parsed object, but jsonb does not
keep key order or spacing) plus the file's newline layout, so an export of
an imported session gives the same bytes. Entries logged through the
service are written in a canonical form (`entry_line`).

Import is idempotent: each line's idempotency key is its hash plus how
many identical lines came before it in the file, so importing a file twice
adds nothing and importing a file that grew adds only the new lines.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sessions.actions import do_append_entries, do_set_session_file_layout
from sessions.inputs import IMPORT_OLDEST, time_in_range
from sessions.models import AgentSession, EntrySource, SessionEntry

SESSION_FILE_SUFFIX = ".jsonl"
SESSION_FILE_STEM = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$")
UNPARSED_KIND = "unparsed"
# Field names the original clients used, first match wins.
KIND_KEYS = ("kind", "type", "event")
MESSAGE_KEYS = ("message", "msg", "text")
TIME_KEYS = ("ts", "timestamp", "time", "at")


def _text(obj: dict[str, Any], keys: tuple[str, ...], limit: int | None = None) -> str:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) != "":
            text = str(value)
            return text[:limit] if limit else text
    return ""


def _time(obj: dict[str, Any]) -> datetime | None:
    for key in TIME_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is not None:
                # A time no read can show (year 1 at +14:00, an offset no zone has) is kept in the line only.
                return time_in_range(parsed, timezone.now(), key, oldest=IMPORT_OLDEST)[0]
    return None


def entry_line(entry: SessionEntry) -> str:
    """The line an entry is exported as: its original bytes, or the canonical form."""
    if entry.source == EntrySource.IMPORT:
        return entry.raw_line
    record: dict[str, Any] = {
        "ts": (entry.occurred_at or entry.created_at).isoformat(),
        "seq": entry.seq,
        "kind": entry.kind,
    }
    for name in ("skill", "phase", "status", "message"):
        if getattr(entry, name):
            record[name] = getattr(entry, name)
    if entry.data is not None:
        record["data"] = entry.data
    return json.dumps(record, ensure_ascii=False)


# The ceiling on one file's work: it is imported in one transaction, its entries held in memory.
MAX_IMPORT_LINES = 200_000
MAX_IMPORT_FILE_BYTES = 256 * 1024 * 1024


class FileCounts(TypedDict):
    created: int
    existing: int
    unparsed: int


class FileError(TypedDict):
    file: str
    error: str


class SessionsImport(TypedDict):
    """What importing a folder of session files did (printed by sessions_import, kept in a brain import's summary)."""

    files: int
    entries_created: int
    entries_existing: int
    unparsed_lines: int
    errors: list[FileError]


class SessionsExport(TypedDict):
    files: int
    written: int
    unchanged: int
    entries: int


def import_session_file(path: Path) -> FileCounts:
    """Import one `<session_id>.jsonl`; returns counts. A file imports fully or not at all."""
    session_id = path.name[: -len(SESSION_FILE_SUFFIX)]
    if not SESSION_FILE_STEM.match(session_id):
        raise ValueError(f"{path.name}: the file name is not a valid session id (letters, digits, '_', '.', '-').")
    size = path.stat().st_size
    if size > MAX_IMPORT_FILE_BYTES:
        raise ValueError(
            f"{path.name}: {size} bytes; one session file imports at most {MAX_IMPORT_FILE_BYTES} bytes "
            "(one transaction each). Split it into sessions of its own."
        )
    text = path.read_bytes().decode("utf-8")
    trailing_newline = text.endswith("\n")
    lines = text.split("\n")
    if trailing_newline:
        lines.pop()
    if len(lines) > MAX_IMPORT_LINES:
        raise ValueError(
            f"{path.name}: {len(lines)} lines; one session file imports at most {MAX_IMPORT_LINES} "
            "(one transaction each). Split it into sessions of its own."
        )
    counts: FileCounts = {"created": 0, "existing": 0, "unparsed": 0}
    seen: Counter[str] = Counter()
    blank_lines: list[int] = []
    batch: list[dict[str, Any]] = []
    with transaction.atomic():
        existing = AgentSession.objects.filter(external_id=session_id).first()
        # Lines this service itself exported (canonical form): already here, by seq.
        canonical = (
            {entry_line(e): e.seq for e in existing.entries.exclude(source=EntrySource.IMPORT)} if existing else {}
        )
        for index, line in enumerate(lines):
            if not line.strip():
                blank_lines.append(index)
                continue
            if line in canonical:
                counts["existing"] += 1
                continue
            digest = hashlib.sha256(line.encode()).hexdigest()[:40]
            seen[digest] += 1
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            fields: dict[str, Any]
            if not isinstance(obj, dict):
                counts["unparsed"] += 1
                fields = {"kind": UNPARSED_KIND, "data": None}
            else:
                fields = {
                    "kind": _text(obj, KIND_KEYS, 64) or "entry",
                    "skill": _text(obj, ("skill",), 100),
                    "phase": _text(obj, ("phase",), 64),
                    "status": _text(obj, ("status",), 64),
                    "message": _text(obj, MESSAGE_KEYS),
                    "data": obj,
                    "occurred_at": _time(obj),
                }
            batch.append(
                {
                    "idempotency_key": f"import:{digest}:{seen[digest]}",
                    "source": EntrySource.IMPORT,
                    "raw_line": line,
                    **fields,
                }
            )
        created, already = do_append_entries(session_id, batch)
        counts["created"] += created
        counts["existing"] += already
        # An empty file still stands for a session: the layout call creates it.
        do_set_session_file_layout(
            session_id, {"trailing_newline": trailing_newline, "blank_lines": blank_lines, "lines": len(lines)}
        )
    return counts


def import_sessions_dir(path: str | Path, progress: Callable[[str], None] | None = None) -> SessionsImport:
    """Import every `*.jsonl` of `path`; returns a summary (files, entries created/existing, errors)."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of <session_id>.jsonl files.")
    summary: SessionsImport = {
        "files": 0,
        "entries_created": 0,
        "entries_existing": 0,
        "unparsed_lines": 0,
        "errors": [],
    }
    for file in sorted(folder.glob(f"*{SESSION_FILE_SUFFIX}")):
        if progress:
            progress(file.name)
        try:
            counts = import_session_file(file)
        except (ValueError, UnicodeDecodeError, OSError) as exc:
            summary["errors"].append({"file": file.name, "error": str(exc)})
            continue
        summary["files"] += 1
        summary["entries_created"] += counts["created"]
        summary["entries_existing"] += counts["existing"]
        summary["unparsed_lines"] += counts["unparsed"]
    return summary


def session_file_text(session: AgentSession) -> str:
    lines = [entry_line(entry) for entry in session.entries.order_by("seq")]
    layout = session.file_layout or {}
    for index in layout.get("blank_lines", []):
        if index <= len(lines):
            lines.insert(index, "")
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if layout.get("trailing_newline", True) else "")


def export_sessions_dir(
    path: str | Path, session_ids: list[str] | None = None, progress: Callable[[str], None] | None = None
) -> SessionsExport:
    """Write `<path>/<session_id>.jsonl` for each session (unchanged files are not rewritten)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    sessions = AgentSession.objects.order_by("external_id")
    if session_ids is not None:
        sessions = sessions.filter(external_id__in=session_ids)
    summary: SessionsExport = {"files": 0, "written": 0, "unchanged": 0, "entries": 0}
    for session in sessions.iterator():
        if progress:
            progress(session.external_id)
        data = session_file_text(session).encode("utf-8")
        target = folder / f"{session.external_id}{SESSION_FILE_SUFFIX}"
        summary["files"] += 1
        summary["entries"] += session.entries.count()
        if target.exists() and target.read_bytes() == data:
            summary["unchanged"] += 1
            continue
        target.write_bytes(data)
        summary["written"] += 1
    return summary
