"""Which directories a skill may touch.

A project root must lie under one of `SUPERVISOR_ALLOWED_ROOTS` after every
symlink is resolved; `..` is refused outright (even when it would resolve to
somewhere allowed) because a path that needs it is almost always a mistake or
an attempt. With no allowed roots configured, nothing is allowed.

`RootRefused` is a `SupervisorError`: MCP handlers let it propagate (the
supervisor's tools declare the translation) and the caller sees an `isError`
result that says what to change.
"""

from __future__ import annotations

from pathlib import Path, PurePath

from django.conf import settings

from supervisor.errors import RootRefused


def allowed_roots() -> list[Path]:
    roots = []
    for entry in settings.SUPERVISOR_ALLOWED_ROOTS:
        if entry:
            roots.append(Path(entry).expanduser().resolve())
    return roots


def _has_parent_reference(path: str) -> bool:
    return ".." in PurePath(path).parts


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_project_root(path: str | Path) -> Path:
    """The real, absolute directory for `path`, or RootRefused.

    Checks, in order: a non-empty absolute path, no `..`, the directory
    exists, and its resolved location (symlinks followed) is under an
    allowed root.
    """
    text = str(path or "").strip()
    if not text:
        raise RootRefused("project_root is empty: pass the absolute path of the project directory")
    if "\x00" in text:
        raise RootRefused("project_root contains a NUL byte")
    if _has_parent_reference(text):
        raise RootRefused(f"project_root may not contain '..': {text}; pass the absolute path instead")
    raw = Path(text).expanduser()
    if not raw.is_absolute():
        raise RootRefused(f"project_root must be an absolute path, got {text!r}")
    roots = allowed_roots()
    if not roots:
        raise RootRefused(
            "no project roots are allowed on this server: set SUPERVISOR_ALLOWED_ROOTS "
            "(colon-separated directories) and restart it"
        )
    resolved = raw.resolve()
    if not any(_is_within(resolved, root) for root in roots):
        shown = ":".join(str(r) for r in roots)
        via = f" (it resolves to {resolved})" if resolved != raw else ""
        raise RootRefused(f"project_root {text}{via} is outside SUPERVISOR_ALLOWED_ROOTS ({shown})")
    if not resolved.is_dir():
        raise RootRefused(f"project_root {text} is not an existing directory")
    return resolved


def resolve_inside(root: Path, relative: str | Path, *, must_exist: bool = False) -> Path:
    """`relative` as a path inside `root` (already resolved), or RootRefused.

    Accepts a path relative to the root or an absolute one that lies inside
    it; refuses `..` and symlinks that lead out.
    """
    text = str(relative or "").strip()
    if not text:
        raise RootRefused("the file path is empty")
    if _has_parent_reference(text):
        raise RootRefused(f"file path may not contain '..': {text}")
    candidate = Path(text)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = candidate.resolve()
    if not _is_within(resolved, root):
        raise RootRefused(f"{text} is outside the project root {root}")
    if must_exist and not resolved.exists():
        raise RootRefused(f"{text} does not exist under {root}")
    return resolved


def relative_to_root(root: Path, path: Path) -> str:
    """A path under `root` written relative to it (for results and prompts)."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
