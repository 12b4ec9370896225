"""Projects: which project a folder means, and where its repository is read from.

A project's repository is a local path under SUPERVISOR_ALLOWED_ROOTS (read in place), or a git URL
the service keeps a bare mirror of under HYPERGUILD_REPO_MIRRORS_DIR (`<name>.git`, fetched by
`project_sync`, the schedule and session hooks). Anything else is unreadable, said plainly, and the
project's notes stay unverified.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from django.conf import settings

from brain.repository import Repository, RepositoryUnreadable, run_git

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from brain.models import Project

PROJECT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def folder_name(cwd: str) -> str:
    """The last folder of a POSIX or Windows path (`C:\\src\\ledgerly` → `ledgerly`)."""
    return re.split(r"[\\/]+", cwd.strip().rstrip("/\\"))[-1]


def _normal(path: str) -> str:
    return path.replace("\\", "/").rstrip("/")


def project_for_cwd(projects: QuerySet[Project], cwd: str) -> Project | None:
    """The project `cwd` belongs to (see ProjectQuerySet.for_cwd), or None.

    An absolute folder entry or a local repository path that holds the cwd wins (the longest);
    then a folder-name entry, or the project's own name, equal to the cwd's last folder.
    """
    cwd = _normal(cwd or "")
    if not cwd:
        return None
    best, best_length = None, -1
    name = folder_name(cwd)
    by_name = None
    for project in projects.all():
        places = [entry for entry in project.folders if isinstance(entry, str)]
        if project.repo and not project.is_remote:
            places.append(project.repo)
        for place in places:
            place = _normal(place)
            if "/" in place:
                if (cwd == place or cwd.startswith(place + "/")) and len(place) > best_length:
                    best, best_length = project, len(place)
            elif place == name and by_name is None:
                by_name = project
        if by_name is None and project.name == name:
            by_name = project
    return best or by_name


def mirror_dir(project: Project) -> Path:
    return Path(settings.HYPERGUILD_REPO_MIRRORS_DIR) / f"{project.name}.git"


def _allowed_roots() -> list[Path]:
    return [Path(entry).expanduser().resolve() for entry in settings.SUPERVISOR_ALLOWED_ROOTS if entry]


def local_repo_problem(path: str) -> str:
    """Why the service may not read the local repository `path` ("" when it may)."""
    if not path or not PurePath(path).is_absolute():
        return f"{path!r} is not an absolute path"
    if ".." in PurePath(path).parts:
        return f"{path!r} may not contain '..'"
    resolved = Path(path).resolve()
    roots = _allowed_roots()
    if not any(resolved == root or root in resolved.parents for root in roots):
        return f"{path} is outside SUPERVISOR_ALLOWED_ROOTS ({':'.join(map(str, roots)) or 'none set'})"
    if not resolved.is_dir():
        return f"{path} does not exist"
    return ""


def file_url_path(repo: str) -> str | None:
    """The local path a `file://` URL names (`file:///srv/x`, `file://localhost/srv/x`); None for any other repo.

    Such a URL is a local path in disguise: it obeys SUPERVISOR_ALLOWED_ROOTS like one (issue 46).
    """
    if not repo[:7].lower() == "file://":
        return None
    parts = urlsplit(repo)
    if parts.hostname not in (None, "", "localhost"):
        return ""  # a file URL on another host: no path this server may read
    return unquote(parts.path)


def local_problem_of_url(repo: str) -> str:
    """Why the service may not read the `file://` repository `repo` ("" when it may, or when it is no file URL)."""
    path = file_url_path(repo)
    if path is None:
        return ""
    if not path:
        return f"{repo} names another host; a file:// repository must be on this server (file:///path)"
    problem = local_repo_problem(path)
    return f"{repo}: {problem}" if problem else ""


def enclosing_repository_problem(path: Path) -> str:
    """Why the repository git finds at `path` may not be read ("" when it may): git looks up the folders for
    one, and a folder under an allowed root that is no repository would read one around it, outside the
    roots (issue 46). It counts only when its top (a work tree's, or a bare repository itself) is inside."""
    bare = run_git(str(path), "rev-parse", "--is-bare-repository").strip() == "true"
    top = run_git(str(path), "rev-parse", "--absolute-git-dir" if bare else "--show-toplevel").strip()
    resolved = Path(top).resolve()
    roots = _allowed_roots()
    if any(resolved == root or root in resolved.parents for root in roots):
        return ""
    return f"{path} is not a repository; the one around it, {resolved}, is outside SUPERVISOR_ALLOWED_ROOTS"


def repository(project: Project) -> Repository:
    """The project's repository to read, or RepositoryUnreadable saying why not."""
    if not project.repo:
        raise RepositoryUnreadable(f"project {project.name} has no repository")
    if problem := local_problem_of_url(project.repo):
        raise RepositoryUnreadable(problem)
    if project.is_remote:
        git_dir = mirror_dir(project)
        if not git_dir.is_dir():
            raise RepositoryUnreadable(
                f"the mirror of {project.repo} is not made yet: run manage.py project_sync {project.name}"
            )
        return Repository(git_dir)
    problem = local_repo_problem(project.repo)
    if problem:
        raise RepositoryUnreadable(problem)
    resolved = Path(project.repo).resolve()
    if problem := enclosing_repository_problem(resolved):
        raise RepositoryUnreadable(problem)
    return Repository(resolved)


def fetch(project: Project) -> None:
    """Bring the bare mirror of a remote repository up to date (clone it the first time); local repos: nothing."""
    if not project.is_remote:
        return
    if problem := local_problem_of_url(project.repo):
        raise RepositoryUnreadable(problem)  # never mirrored: a path outside the roots stays unread
    git_dir = mirror_dir(project)
    if not git_dir.is_dir():
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        run_git(str(git_dir.parent), "clone", "--mirror", "--quiet", "--", project.repo, str(git_dir))
    else:
        run_git(str(git_dir), "remote", "update", "--prune")
