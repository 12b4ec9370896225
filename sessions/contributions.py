"""What the sessions app contributes to the brain and the core (registered in AgentSessionsConfig.ready())."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from django.db.models import Count

from brain.callbacks import FolderSection
from sessions.folder import SessionsExport, export_sessions_dir, import_sessions_dir
from sessions.mirror import mirror_session_logs, mirror_training_data
from sessions.models import AgentSession, SessionEntry, TrainingExample
from sessions.trl_export import TrainingDataExport, export_training_data_dir


def export_sessions_if_any(folder: Path) -> SessionsExport | None:
    """`sessions/<id>.jsonl` for a brain export, or None when there is no session."""
    if not AgentSession.objects.exists():
        return None
    return export_sessions_dir(folder)


def export_training_data_if_any(folder: Path) -> TrainingDataExport | None:
    """The approved SFT/DPO examples as TRL JSONL for a brain export, or None when none is approved."""
    if not TrainingExample.objects.filter(status=TrainingExample.Status.APPROVED).exists():
        return None
    return export_training_data_dir(folder)


FOLDER_SECTIONS = (
    FolderSection(
        "sessions",
        "sessions",
        import_dir=import_sessions_dir,
        export_dir=export_sessions_if_any,
        mirror_dir=mirror_session_logs,
    ),
    FolderSection(
        "training-data", "training_data", export_dir=export_training_data_if_any, mirror_dir=mirror_training_data
    ),
)


# brain_context lists the raw notes of a project's recent sessions; older sessions add nothing new.
PROJECT_SESSIONS_LIMIT = 200


def session_project(session_id: str) -> int | None:
    """The id of the brain Project session `session_id` belongs to (notes written in it link to that project)."""
    return AgentSession.objects.filter(external_id=session_id).values_list("project_id", flat=True).first()


def project_sessions(project_root: str) -> list[str]:
    """The `session_id`s of the newest sessions recorded for `project_root` (for brain_context)."""
    root = project_root.strip().rstrip("/")
    return list(
        AgentSession.objects.filter(project_root__in={project_root, root, f"{root}/"})
        .order_by("-updated_at")
        .values_list("external_id", flat=True)[:PROJECT_SESSIONS_LIMIT]
    )


def provenance_entries(session_id: str, seqs: list[int]) -> list[SessionEntry]:
    return list(SessionEntry.objects.for_session(session_id).filter(seq__in=seqs))


class CandidateCounts(TypedDict):
    candidate_counts: dict[str, int]  # kind (sft, dpo) -> candidates waiting


def home_counts() -> CandidateCounts:
    """Training candidates waiting for curation, by kind (the home page's `candidate_counts`)."""
    rows = TrainingExample.objects.filter(status="candidate").order_by().values("kind").annotate(n=Count("id"))
    return {"candidate_counts": {row["kind"]: row["n"] for row in rows}}
