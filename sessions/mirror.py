"""The sessions side of the BRAIN_DIR mirror: session logs and training data kept on disk as they are recorded.

In the Go hyperguild the files were the source of truth; here the database
is, and the mirror keeps the folder a complete copy every round:

- `sessions/<session_id>.jsonl` (or `BRAIN_SESSIONS_DIR`): first lines added
  on disk are imported (the same idempotent import as `sessions_import`),
  then each session's new entries are **appended**: a line already on disk
  is never rewritten. A file whose content is no longer a prefix of the
  session's log (someone edited a line) is left alone and reported.
- `training-data/{sft,dpo}.jsonl`: the approved examples in TRL's format,
  rewritten only when they changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from django.conf import settings

from sessions.folder import SESSION_FILE_SUFFIX, FileError, import_sessions_dir, session_file_text
from sessions.models import AgentSession, TrainingExample
from sessions.trl_export import TrainingDataExport, export_training_data_dir


def sessions_folder(default: Path) -> Path:
    """`BRAIN_SESSIONS_DIR` when set (the Go `SUPERVISOR_SESSIONS_DIR`), else `default` (BRAIN_DIR/sessions)."""
    return Path(settings.BRAIN_SESSIONS_DIR) if settings.BRAIN_SESSIONS_DIR else default


class SessionLogsMirror(TypedDict):
    """One mirror round of the session logs (kept in the brain mirror round's summary)."""

    imported_entries: int
    appended: int
    created: int
    unchanged: int
    conflicts: list[str]  # files left alone: not a prefix of their session's log
    errors: list[FileError]


def mirror_session_logs(default_folder: Path) -> SessionLogsMirror:
    """One mirror round for session logs; returns counts and the files left alone."""
    folder = sessions_folder(default_folder)
    folder.mkdir(parents=True, exist_ok=True)
    imported = import_sessions_dir(folder)
    summary: SessionLogsMirror = {
        "imported_entries": imported["entries_created"],
        "appended": 0,
        "created": 0,
        "unchanged": 0,
        "conflicts": [],
        "errors": imported["errors"],
    }
    for session in AgentSession.objects.filter(last_seq__gt=0).order_by("external_id").iterator():
        target = folder / f"{session.external_id}{SESSION_FILE_SUFFIX}"
        current = target.read_bytes() if target.is_file() else None
        if current is not None and sum(1 for line in current.split(b"\n") if line.strip()) == session.last_seq:
            # One line per entry already (the import above took the disk's own lines): nothing new.
            summary["unchanged"] += 1
            continue
        data = session_file_text(session).encode("utf-8")
        if current == data:
            summary["unchanged"] += 1
        elif current is None:
            target.write_bytes(data)
            summary["created"] += 1
        elif data.startswith(current):
            with target.open("ab") as handle:  # append-only: what is on disk stays byte for byte
                handle.write(data[len(current) :])
            summary["appended"] += 1
        else:
            summary["conflicts"].append(
                f"{target.name}: the file on disk is not a prefix of the session's log (a line was edited); left alone"
            )
    return summary


def mirror_training_data(folder: Path) -> TrainingDataExport | None:
    """The approved examples as `sft.jsonl`/`dpo.jsonl`; None (nothing written) while none is approved."""
    if not TrainingExample.objects.filter(status=TrainingExample.Status.APPROVED).exists() and not folder.is_dir():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return export_training_data_dir(folder)
