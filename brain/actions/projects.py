"""Projects: added, found or made for a session, and the notes anchored to one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Q

from brain import projects as project_rules
from brain.actions.locking import _locked
from brain.actions.truth import _check_note, do_sync_project
from brain.errors import BrainInputError
from brain.models import (
    Note,
    Project,
)

if TYPE_CHECKING:
    pass


def do_add_project(*, name: str, repo: str = "", branch: str = "main", folders: Iterable[str] = ()) -> Project:
    """A new project (or the same name updated), then one sync: its head is recorded when the repository reads.

    An unreadable repository is not refused: the project is kept with `sync_error` saying why, and its
    notes stay unverified until it reads.
    """
    if not isinstance(name, str) or not project_rules.PROJECT_NAME.match(name):
        raise BrainInputError(
            f"project name {name!r} must be 1-200 letters, digits, '.', '_' or '-', starting with a letter or digit."
        )
    repo = (repo or "").strip()
    if repo and "://" not in repo and not repo.startswith("git@") and not repo.startswith("/"):
        raise BrainInputError(f"--repo {repo!r} must be an absolute path or a git URL.")
    branch = (branch or "main").strip()
    if not re.match(r"^[\w./-]{1,200}$", branch) or branch.startswith("-") or ".." in branch:
        raise BrainInputError(f"branch {branch!r} is not a branch name.")
    folders = [str(folder).strip() for folder in folders if str(folder).strip()]
    with transaction.atomic():
        project, _ = Project.objects.update_or_create(
            name=name, defaults={"repo": repo, "branch": branch, "folders": folders}
        )
        _link_existing_notes(project)
    do_sync_project(project)
    project.refresh_from_db()
    return project


def _link_existing_notes(project: Project) -> None:
    """Notes without a project whose frontmatter or provenance names this one now belong to it."""
    unlinked = Note.objects.filter(project__isnull=True).filter(
        Q(frontmatter__project=project.name) | Q(provenance__project=project.name)
    )
    unlinked.update(project=project)


def do_set_note_project(note: Note, project: Project | None) -> Note:
    """A reviewer's choice of the note's project; its anchors are checked against that project's code."""
    with transaction.atomic():
        note = _locked(note)
        Note.objects.filter(pk=note.pk).update(project=project)
        note.project = project
        _check_note(note, list(note.anchors.all()), only_unchecked=False)
        return note


def do_find_or_make_project(*, name: str = "", cwd: str = "", create: bool = True) -> Project | None:
    """The project a session belongs to: the one its cwd resolves to, else the one named `name` (or the
    cwd's folder name), else (with `create`) a new project of that name with no repository yet (its notes
    unverified); else None."""
    cwd = cwd.strip() if isinstance(cwd, str) else ""
    if cwd:
        found = Project.objects.for_cwd(cwd)
        if found is not None:
            return found
    name = name.strip() if isinstance(name, str) and name.strip() else (project_rules.folder_name(cwd) if cwd else "")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:200]
    if not name:
        return None
    if not create:
        return Project.objects.filter(name=name).first()
    folders = [cwd] if cwd.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", cwd) else [name]
    project, _ = Project.objects.get_or_create(name=name, defaults={"folders": folders, "branch": "main"})
    return project
