"""Callbacks the apps above the brain register, so brain code reaches them without importing them.

The brain sits below supervisor and sessions (see docs/architecture.md):
it must not import them, yet a brain folder carries session logs and
training data, and a note page shows the session entries a note came from.
The sessions app registers these from its AppConfig.ready().
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FolderSection:
    """A sub-folder of a brain folder that another app reads and writes.

    `import_dir(folder)` runs on import when the folder exists; `export_dir(folder)`
    on export, returning None when there is nothing to write; `mirror_dir(folder)`
    once per round of the BRAIN_DIR mirror, so the folder stays a complete copy.
    Any may be None. Their summaries land on `FolderSummary.<summary_field>`.
    """

    folder: str
    summary_field: str
    import_dir: Callable[[Path], object] | None = None
    export_dir: Callable[[Path], object | None] | None = None
    mirror_dir: Callable[[Path], object | None] | None = None


# (session_id, entry sequence numbers) -> the entries, ordered
ProvenanceEntries = Callable[[str, list[int]], Sequence[object]]

_LOCK = threading.Lock()
_FOLDER_SECTIONS: dict[str, FolderSection] = {}
_provenance_entries: ProvenanceEntries | None = None
# project_root -> the session ids (client `session_id`s) recorded for that project, newest first
ProjectSessions = Callable[[str], list[str]]
_project_sessions: ProjectSessions | None = None


def register_folder_section(section: FolderSection) -> None:
    with _LOCK:
        _FOLDER_SECTIONS[section.folder] = section


def folder_sections() -> list[FolderSection]:
    with _LOCK:
        return list(_FOLDER_SECTIONS.values())


def register_provenance_entries(lookup: ProvenanceEntries) -> None:
    global _provenance_entries
    with _LOCK:
        _provenance_entries = lookup


def register_project_sessions(lookup: ProjectSessions) -> None:
    global _project_sessions
    with _LOCK:
        _project_sessions = lookup


def project_sessions(project_root: str) -> list[str]:
    """The session ids recorded for `project_root`, or [] when no app registered a lookup."""
    with _LOCK:
        lookup = _project_sessions
    return lookup(project_root) if lookup is not None else []


def provenance_entries(session_id: str, seqs: list[int]) -> Sequence[object]:
    """The session entries `seqs` of `session_id`, or [] when no app registered a lookup."""
    with _LOCK:
        lookup = _provenance_entries
    return lookup(session_id, seqs) if lookup is not None else []


# session_id -> the id of the brain Project that session's cwd resolved to (None: none)
SessionProject = Callable[[str], "int | None"]
_session_project: SessionProject | None = None


def register_session_project(lookup: SessionProject) -> None:
    global _session_project
    with _LOCK:
        _session_project = lookup


def session_project(session_id: str) -> int | None:
    """The project id of the session `session_id`, or None (no such session, no project, no app registered)."""
    with _LOCK:
        lookup = _session_project
    return lookup(session_id) if lookup is not None and session_id else None
