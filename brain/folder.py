"""Brain folders: import, export and the two-way BRAIN_DIR mirror.

Layout (that of an existing hyperguild brain):

    wiki/<wing>/<hall>/<more/folders>/<name>.md   status wiki; wing = first folder, hall = second,
                                                 deeper folders stay in the slug (`more/folders/name`)
    raw/<folders>/<name>.md                       status raw; slug = `folders/name`
    sessions/<session_id>.jsonl, training-data/  read and written by the sessions app, through the
                                                 folder sections it registers (`brain.callbacks`)

A **plain folder** (markdown files, but no wiki/ or raw/ and no folder another app
reads) is imported as if it were laid out: each `<folders>/<name>.md` becomes
`wiki/<wing>/<hall>/<folders>/<name>.md` (`PlainFolder`: the wing and hall given,
by default the folder's own name and no hall, so a first sub-folder is the hall
as in the layout) or, for review, `raw/<folders>/<name>.md`. A folder holding no
markdown at all is refused with the expected layout (`LAYOUT_HELP`), never
imported as nothing.

Folder and file names are slugified (`Café Notes.md` → `cafe-notes`). The
title comes from frontmatter `title:`, else the first top-level `# heading`
outside fenced code, else the file name (`advanced/timeouts.md` → "Timeouts");
in a plain folder the heading comes before the frontmatter's title. The stored
frontmatter is the rest. Export writes `title:` first,
then the other keys, so import → export → import is a fixed point and two
exports are byte-identical.

Only raw and wiki notes live in a folder: rejected and archived notes are
not exported (they stay in the database, visible in the admin). Importing a
file whose note was archived or rejected leaves the note as it is when the
content is the same, and brings it back when the file's content changed.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import yaml
from django.db import transaction

from brain.actions import (
    NoteFileArguments,
    SlugsTakenMeanwhile,
    do_archive_note,
    do_forget_mirror_file,
    do_forget_note_hash,
    do_import_area_description,
    do_import_new_note_files,
    do_import_note_file,
    do_record_mirror_file,
    do_touch_mirror_file,
)
from brain.callbacks import folder_sections
from brain.errors import BrainInputError, FolderError
from brain.indexing import notes_changed_in_bulk
from brain.models import AreaDescription, MirrorFile, Note, NoteLink, NoteStatus
from brain.placement import choose_slug, link_candidates, resolve_with, slug_candidates
from brain.slugs import slugify_segment
from hyperguild.lib.markdown import (
    FrontmatterError,
    first_title_heading,
    parse_markdown,
    title_from_file_name,
    write_markdown,
)
from hyperguild.lib.progress import Item, ProgressWrapper

logger = logging.getLogger("brain.folder")

NOTE_FOLDERS = ("wiki", "raw")
# The Go hyperguild's wing/hall descriptions: wiki/_index.md, wiki/<wing>/_index.md, wiki/<wing>/<hall>/_index.md.
INDEX_FILE = "_index.md"
# New files inserted per transaction by an import (one corpus version, a few queries for their links).
NEW_FILES_PER_TRANSACTION = 200

KnownNote = tuple[str, str, str, str, str]  # what import compares a file with: (content_hash, status, wing, hall, path)

LAYOUT_HELP = """brain_import reads either a brain folder:
    wiki/<wing>/<hall>/<name>.md   reviewed notes (wing and hall are the first two folders)
    raw/<name>.md                  notes waiting for review
    sessions/<session_id>.jsonl    session logs
or a plain folder of .md files, imported as wiki notes under a wing named after the folder
(--wing and --hall choose another place) or, with --raw, as raw notes for review."""


@dataclass(frozen=True)
class PlainFolder:
    """Where the notes of a plain folder go: `status` wiki (under `wing`/`hall`) or raw."""

    status: str = NoteStatus.WIKI
    wing: str = ""
    hall: str = ""

    def place(self, rel_path: str) -> str:
        """The brain-layout path of the plain folder's file `rel_path` (`a/b.md` → `wiki/docs/a/b.md`)."""
        if self.status == NoteStatus.RAW:
            return f"raw/{rel_path}"
        return "/".join(part for part in ("wiki", self.wing, self.hall, rel_path) if part)

    def describe(self) -> str:
        if self.status == NoteStatus.RAW:
            return "raw notes waiting for review (raw/)"
        place = f"wing {self.wing!r}" + (f", hall {self.hall!r}" if self.hall else "")
        return f"wiki notes under {place}"


class FileError(TypedDict):
    file: str
    error: str


class FolderSummaryJson(TypedDict):
    """A `FolderSummary` as JSON: the django-q2 result of a mirror round, and what `brain_import --json` prints."""

    added: int
    updated: int
    unchanged: int
    archived: int
    written: int
    removed: int
    descriptions: int
    ambiguous_links: list[str]
    errors: list[FileError]
    sessions: Any  # the sessions section's own summary (sessions.folder), None when it did not run
    training_data: Any  # the training-data section's, likewise
    layout: str
    placed_as: str | None
    ignored: list[str]


@dataclass
class FolderSummary:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    archived: int = 0
    written: int = 0
    removed: int = 0
    descriptions: int = 0  # wing/hall descriptions (_index.md) added or changed
    errors: list[tuple[str, str]] = field(default_factory=list)
    ambiguous_links: list[str] = field(default_factory=list)  # in notes added or updated by this run
    sessions: object | None = None
    training_data: object | None = None
    layout: str = "brain"  # "brain" (wiki/, raw/ …) or "plain" (a folder of .md files)
    plain: PlainFolder | None = None  # where a plain folder's notes went
    ignored: list[str] = field(default_factory=list)  # .md files of a brain folder outside wiki/ and raw/

    @property
    def changes(self) -> int:
        return self.added + self.updated + self.archived + self.written + self.removed + self.descriptions

    def count(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    def as_dict(self) -> FolderSummaryJson:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "archived": self.archived,
            "written": self.written,
            "removed": self.removed,
            "descriptions": self.descriptions,
            "ambiguous_links": list(self.ambiguous_links),
            "errors": [{"file": name, "error": message} for name, message in self.errors],
            "sessions": self.sessions,
            "training_data": self.training_data,
            "layout": self.layout,
            "placed_as": self.plain.describe() if self.plain else None,
            "ignored": list(self.ignored),
        }


@dataclass
class NoteFile:
    rel_path: str
    slug: str
    title: str
    body: str
    frontmatter: dict[str, Any]  # as read from the file (JSON-like)
    status: str
    wing: str
    hall: str


def _no_progress(items: Iterable[Item]) -> Iterable[Item]:
    return items


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- paths ---------------------------------------------------------------------------


def iter_note_files(root: Path) -> list[str]:
    """Relative paths (with `/`) of every `.md` under wiki/ and raw/, sorted."""
    found = []
    for top in NOTE_FOLDERS:
        base = root / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.endswith(".md") and not name.startswith(".") and name != INDEX_FILE:
                    found.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(found)


def _walk_markdown(base: Path, root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.endswith(".md") and not name.startswith("."):
                found.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(found)


def layout_folders() -> list[str]:
    """The top folders that make a folder a brain folder: wiki/, raw/ and those other apps read (sessions/ …)."""
    return [*NOTE_FOLDERS, *(section.folder for section in folder_sections())]


def folder_layout(root: Path) -> str:
    """`brain` when `root` holds any layout folder, `plain` when it holds markdown only, else `empty`."""
    if any((root / name).is_dir() for name in layout_folders()):
        return "brain"
    return "plain" if _walk_markdown(root, root) else "empty"


def loose_markdown(root: Path) -> list[str]:
    """The .md files of a brain folder that no layout folder holds (a README beside wiki/): not imported."""
    inside = tuple(f"{name}/" for name in layout_folders())
    return [rel for rel in _walk_markdown(root, root) if not rel.startswith(inside)]


def iter_index_files(root: Path) -> list[str]:
    """Relative paths of every `_index.md` under wiki/ and raw/ (descriptions, never notes), sorted."""
    found = []
    for top in NOTE_FOLDERS:
        base = root / top
        if base.is_dir():
            found += [path.relative_to(root).as_posix() for path in base.rglob(INDEX_FILE) if path.is_file()]
    return sorted(found)


def _name_segment(name: str) -> str:
    segment = slugify_segment(name)
    if not segment:
        # A name with nothing transliterable (e.g. only CJK): a stable stand-in.
        segment = "note-" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return segment


def parse_note_path(rel_path: str) -> tuple[str, str, str, str]:
    """'wiki/concepts/python/async/gil.md' → ('wiki', 'concepts', 'python', 'async/gil')."""
    parts = rel_path.split("/")
    if len(parts) < 2 or parts[0] not in NOTE_FOLDERS or not parts[-1].endswith(".md"):
        raise FolderError(f"{rel_path} is not under wiki/ or raw/, or is not a .md file")
    folders = [_name_segment(part) for part in parts[1:-1]]
    stem = _name_segment(parts[-1][: -len(".md")])
    if parts[0] == "wiki":
        wing = folders[0] if folders else ""
        hall = folders[1] if len(folders) > 1 else ""
        return NoteStatus.WIKI, wing, hall, "/".join([*folders[2:], stem])
    return NoteStatus.RAW, "", "", "/".join([*folders, stem])


def note_file_path(note: Note) -> str:
    """Where the mirror keeps `note`: its recorded path if that still says the same thing, else the canonical one."""
    if note.path:
        try:
            status, wing, hall, bare = parse_note_path(note.path)
        except FolderError:
            return note.canonical_path()
        if (status, wing, hall) == (note.status, note.wing, note.hall) and note.slug in slug_candidates(
            status, wing, hall, bare
        ):
            return note.path
    return note.canonical_path()


# -- reading and writing files --------------------------------------------------------


def parse_note_text(rel_path: str, text: str, *, plain_source: str | None = None) -> NoteFile:
    """One note file. Its title: in a brain folder, frontmatter `title:` (what export writes), else the first
    top-level heading outside fenced code, else the file name; in a plain folder (`plain_source`: the file's
    path there) the heading comes first: a team's docs page names itself by its `# Heading`."""
    if not text.strip():
        raise FolderError("the file is empty")
    status, wing, hall, slug = parse_note_path(rel_path)
    document = parse_markdown(text)
    frontmatter = dict(document.frontmatter)
    declared = frontmatter.pop("title", None)
    declared = str(declared).strip() if declared is not None and str(declared).strip() else None
    heading = first_title_heading(document.body)
    file_name = title_from_file_name(plain_source or rel_path)
    if plain_source is not None:
        title = heading or declared or file_name
    else:
        title = declared or heading or file_name
    return NoteFile(
        rel_path=rel_path,
        slug=slug,
        title=title,
        body=document.body,
        frontmatter=frontmatter,
        status=status,
        wing=wing,
        hall=hall,
    )


def note_file_text(note: Note) -> str:
    """The exact text a note is exported as."""
    frontmatter = {"title": note.title, **{k: v for k, v in note.frontmatter.items() if k != "title"}}
    return write_markdown(frontmatter, note.body)


def description_file_text(description: AreaDescription) -> str:
    """The exact text a wing/hall description is exported as (`_index.md`)."""
    frontmatter = {k: v for k, v in description.frontmatter.items() if k != "title"}
    if description.title:
        frontmatter = {"title": description.title, **frontmatter}
    return write_markdown(frontmatter, description.body)


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)  # atomic: a reader never sees half a note


def claim_order(rel_path: str) -> tuple[bool, int, str]:
    """The order files claim slugs in: wiki before raw, shallow before deep (`wiki/entities/x.md` gets
    `entities/x` before `wiki/entities/databases/x.md` could), then by path."""
    return (not rel_path.startswith("wiki/"), rel_path.count("/"), rel_path)


def place_note_file(
    nf: NoteFile, on_disk: set[str], claimed: dict[str, str], held: Mapping[str, str] | None = None
) -> NoteFile:
    """Give `nf` its slug under the rule of `brain.placement` (unique across wings).

    A slug is taken when another file of this round claimed it (`claimed`:
    slug → path, updated here) or when a note holds it whose file is still on
    disk; a note whose file is gone (moved) gives its slug up. `held` (slug →
    path of every note) saves the query when the caller read it already.
    Raises FolderError when every candidate is taken.
    """
    candidates = slug_candidates(nf.status, nf.wing, nf.hall, nf.slug)
    if held is None:
        held = dict(Note.objects.filter(slug__in=candidates).values_list("slug", "path"))

    def holder(slug: str) -> str | None:
        if slug in claimed:
            return claimed[slug]
        path = held.get(slug)
        return path if path and path in on_disk else None

    slug = choose_slug(nf.rel_path, candidates, holder)
    if slug is None:
        taken = ", ".join(f"{candidate} ({holder(candidate)})" for candidate in candidates)
        raise FolderError(f"every slug it could take is taken: {taken}; rename the file")
    claimed[slug] = nf.rel_path
    nf.slug = slug
    return nf


def ambiguous_links(notes: list[Note]) -> list[str]:
    """One line per `[[bare-name]]` of `notes` that several notes answer equally well (a few queries for all)."""
    targets: dict[int, list[str]] = {}
    ids = [note.id for note in notes]
    for start in range(0, len(ids), 1000):
        for source_id, target in NoteLink.objects.filter(source_id__in=ids[start : start + 1000]).values_list(
            "source_id", "target_slug"
        ):
            targets.setdefault(source_id, []).append(target)
    candidates = link_candidates(target for found in targets.values() for target in found)
    lines = []
    for note in notes:
        resolved = resolve_with(
            candidates, targets.get(note.id, []), wing=note.wing, hall=note.hall, exclude_id=note.id
        )
        for target, answer in resolved.items():
            if answer.ambiguous:
                others = ", ".join(slug for slug in answer.ambiguous if slug != answer.target_slug)
                lines.append(
                    f"{note.path or note.slug}: [[{target}]] is ambiguous: resolved to {answer.target_slug} "
                    f"(also {others}); write [[{answer.ambiguous[-1]}]] to choose"
                )
    return lines


def import_index_file(root: Path, rel_path: str) -> str:
    """Import one `_index.md` as the description of its wing or hall; returns the action's outcome."""
    parts = rel_path.split("/")
    if parts[0] != "wiki" or len(parts) > 4:
        raise FolderError(
            "an _index.md describes the wiki, a wing or a hall: wiki/_index.md, "
            "wiki/<wing>/_index.md or wiki/<wing>/<hall>/_index.md"
        )
    folders = [_name_segment(part) for part in parts[1:-1]]
    try:
        text = (root / rel_path).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise FolderError("the file is not UTF-8 text")
    document = parse_markdown(text)
    frontmatter = dict(document.frontmatter)
    title = frontmatter.pop("title", None)
    if not isinstance(title, str) or not title.strip():
        title = first_title_heading(document.body) or ""
    _, outcome = do_import_area_description(
        wing=folders[0] if folders else "",
        hall=folders[1] if len(folders) > 1 else "",
        title=title,
        body=document.body,
        frontmatter=frontmatter,
        path=rel_path,
    )
    return outcome


def import_index_files(root: Path, summary: FolderSummary) -> None:
    for rel_path in iter_index_files(root):
        try:
            outcome = import_index_file(root, rel_path)
        except (FolderError, FrontmatterError, BrainInputError, OSError) as exc:
            summary.errors.append((rel_path, _error_text(exc)))
            continue
        if outcome != "unchanged":
            summary.descriptions += 1


def _import_one(nf: NoteFile, *, restore: bool = False) -> tuple[Note, str]:
    return do_import_note_file(**_file_arguments(nf), restore=restore)


def _import_new(new_files: list[NoteFile], summary: FolderSummary, changed: list[Note]) -> None:
    """Insert the notes of `new_files` together (`do_import_new_note_files`), then empty the list.

    When another writer took one of their slugs meanwhile, the files are imported one by one instead
    (an existing note is then updated, as on any import)."""
    if not new_files:
        return
    files = list(new_files)
    new_files.clear()
    try:
        results = do_import_new_note_files([_file_arguments(nf) for nf in files])
    except SlugsTakenMeanwhile:
        for nf in files:
            try:
                note, outcome = _import_one(nf)
            except BrainInputError as exc:
                summary.errors.append((nf.rel_path, _error_text(exc)))
                continue
            summary.count(outcome)
            if outcome != "unchanged":
                changed.append(note)
        return
    for nf, result in zip(files, results, strict=True):
        if isinstance(result, BrainInputError):
            summary.errors.append((nf.rel_path, _error_text(result)))
        else:
            summary.added += 1
            changed.append(result)


def _file_arguments(nf: NoteFile) -> NoteFileArguments:
    return {
        "slug": nf.slug,
        "title": nf.title,
        "body": nf.body,
        "frontmatter": nf.frontmatter,
        "status": nf.status,
        "wing": nf.wing,
        "hall": nf.hall,
        "path": nf.rel_path,
    }


def _fingerprint(nf: NoteFile) -> KnownNote:
    """(content_hash, status, wing, hall, path) the note would have after importing `nf` unchanged."""
    title = " ".join(nf.title.split())
    frontmatter = {key: value for key, value in nf.frontmatter.items() if key != "title"}
    content_hash = Note(title=title, body=nf.body, frontmatter=frontmatter).compute_hash()
    return (content_hash, nf.status, nf.wing, nf.hall, nf.rel_path)


# What turning one stored note into file text can raise (frontmatter stored before the caps existed:
# too deep for the YAML writer, lone surrogates that do not encode). Export and the mirror report the
# note and go on with the others.
UNWRITABLE_NOTE_ERRORS = (RecursionError, ValueError, yaml.YAMLError, UnicodeError)


def unwritable_reason(note: Note, exc: Exception) -> str:
    logger.warning("note %s cannot be written as a file: %s: %s", note.slug, type(exc).__name__, str(exc)[:200])
    if isinstance(exc, RecursionError):
        return f"note {note.slug} has frontmatter nested too deeply to write; edit its frontmatter"
    return f"note {note.slug} cannot be written as a file ({type(exc).__name__}); edit it"


def note_file_bytes(note: Note, rel_path: str, summary: FolderSummary) -> bytes | None:
    """The note's file as bytes, or None when it cannot be written (the reason goes to `summary.errors`)."""
    try:
        return note_file_text(note).encode("utf-8")
    except UNWRITABLE_NOTE_ERRORS as exc:
        summary.errors.append((rel_path, unwritable_reason(note, exc)))
        return None


def _error_text(exc: Exception) -> str:
    return getattr(exc, "message", None) or str(exc)


# -- import / export ------------------------------------------------------------------


def default_plain_folder(root: Path) -> PlainFolder:
    """A plain folder's notes go to the wiki, under a wing named after the folder."""
    return PlainFolder(status=NoteStatus.WIKI, wing=_name_segment(root.resolve().name))


@notes_changed_in_bulk()
def import_folder(
    root: Path | str,
    *,
    progress: ProgressWrapper = _no_progress,
    archive_missing: bool = False,
    plain: PlainFolder | None = None,
) -> FolderSummary:
    """Read a brain folder, or a plain folder of markdown, into the database. Bad files are reported by name
    and skipped. `plain`: where a plain folder's notes go (default: `default_plain_folder`); giving it for a
    brain folder, or a folder with no markdown at all, raises FolderError with the expected layout.

    The background work of the notes it changes is queued one task per batch of notes (`brain.indexing`).
    """
    root = Path(root)
    if not root.is_dir():
        raise FolderError(f"{root} is not a directory")
    layout = folder_layout(root)
    if layout == "empty":
        raise FolderError(
            f"{root} holds no .md file and none of {', '.join(f'{n}/' for n in layout_folders())}: "
            f"nothing to import.\n{LAYOUT_HELP}"
        )
    if layout == "brain" and plain is not None:
        raise FolderError(
            f"{root} is a brain folder (it holds wiki/, raw/ or sessions/): its notes already have "
            f"their place, so --wing, --hall and --raw do not apply.\n{LAYOUT_HELP}"
        )
    if layout == "plain":
        return _import_plain_folder(root, plain or default_plain_folder(root), progress, archive_missing)
    summary = FolderSummary(ignored=loose_markdown(root))
    known = _known_notes()
    files = iter_note_files(root)
    _import_files(root, {rel: rel for rel in files}, summary, known, progress, archive_missing)
    import_index_files(root, summary)
    for section in folder_sections():
        if section.import_dir is not None and (root / section.folder).is_dir():
            setattr(summary, section.summary_field, section.import_dir(root / section.folder))
    return summary


def _known_notes() -> dict[str, KnownNote]:
    """slug → (content_hash, status, wing, hall, path) of every note, read once: an unchanged file costs no
    transaction."""
    return {
        row[0]: row[1:]
        for row in Note.objects.values_list("slug", "content_hash", "status", "wing", "hall", "path").iterator()
    }


def _import_files(
    root: Path,
    files: dict[str, str],
    summary: FolderSummary,
    known: dict[str, KnownNote],
    progress: ProgressWrapper,
    archive_missing: bool,
    *,
    plain: bool = False,
) -> None:
    """Import `files` (brain-layout path → the file's path under `root`, the same for a brain folder);
    `plain`: they come from a plain folder (titles: `parse_note_text`)."""
    seen: dict[str, str] = {}
    on_disk = set(files)
    held = {slug: row[-1] for slug, row in known.items()}  # slug → path, for placing files without a query each
    changed: list[Note] = []
    new_files: list[NoteFile] = []  # files whose slug no note holds: inserted a batch at a time
    for rel_path in progress(sorted(files, key=claim_order)):
        source = files[rel_path]
        try:
            try:
                text = (root / source).read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                raise FolderError("the file is not UTF-8 text")
            plain_source = source if plain else None
            nf = place_note_file(parse_note_text(rel_path, text, plain_source=plain_source), on_disk, seen, held)
            if nf.slug not in known:
                new_files.append(nf)
                if len(new_files) >= NEW_FILES_PER_TRANSACTION:
                    _import_new(new_files, summary, changed)
                continue
            if known.get(nf.slug) == _fingerprint(nf):
                summary.unchanged += 1
                continue
            note, outcome = _import_one(nf)
        except (FolderError, FrontmatterError, BrainInputError, OSError) as exc:
            summary.errors.append((source, _error_text(exc)))
            continue
        summary.count(outcome)
        if outcome != "unchanged":
            changed.append(note)
    _import_new(new_files, summary, changed)
    summary.ambiguous_links = ambiguous_links(changed)
    if archive_missing:
        gone = Note.objects.exportable().filter(source="import").exclude(slug__in=list(seen))
        for note in gone:
            do_archive_note(note, reason=f"{note.path} is no longer in the imported folder")
            summary.archived += 1


def _import_plain_folder(
    root: Path, plain: PlainFolder, progress: ProgressWrapper, archive_missing: bool
) -> FolderSummary:
    if plain.status not in (NoteStatus.WIKI, NoteStatus.RAW):
        raise FolderError(f"a plain folder's notes go to the wiki or to raw, not {plain.status}")
    if plain.status == NoteStatus.WIKI and not plain.wing:
        raise FolderError(f"wiki notes need a wing: give one with --wing.\n{LAYOUT_HELP}")
    if plain.status == NoteStatus.WIKI:
        plain = PlainFolder(NoteStatus.WIKI, _name_segment(plain.wing), _name_segment(plain.hall) if plain.hall else "")
    summary = FolderSummary(layout="plain", plain=plain)
    # An _index.md of a plain folder is an ordinary page (a README of its folder), not a wing description.
    files = {plain.place(rel): rel for rel in _walk_markdown(root, root)}
    _import_files(root, files, summary, _known_notes(), progress, archive_missing, plain=True)
    return summary


def export_folder(
    root: Path | str, *, progress: ProgressWrapper = _no_progress, sessions: bool = True
) -> FolderSummary:
    """Write every raw and wiki note under `root` (and the session logs); files already
    holding the same bytes are left alone."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    summary = FolderSummary()
    used: dict[str, str] = {}
    notes = Note.objects.exportable().order_by("slug")
    for note in progress(notes.iterator()):
        rel_path = note_file_path(note)
        if rel_path in used:
            summary.errors.append((rel_path, f"notes {used[rel_path]} and {note.slug} map to the same file"))
            continue
        used[rel_path] = note.slug
        data = note_file_bytes(note, rel_path, summary)
        if data is None:
            continue
        target = root / rel_path
        if target.is_file() and target.read_bytes() == data:
            summary.unchanged += 1
            continue
        _write_file(target, data)
        summary.written += 1
    for description in AreaDescription.objects.all():
        target = root / (
            description.path or "/".join(p for p in ("wiki", description.wing, description.hall, INDEX_FILE) if p)
        )
        data = description_file_text(description).encode("utf-8")
        if target.is_file() and target.read_bytes() == data:
            summary.unchanged += 1
            continue
        _write_file(target, data)
        summary.written += 1
    if sessions:
        for section in folder_sections():
            if section.export_dir is not None:
                setattr(summary, section.summary_field, section.export_dir(root / section.folder))
    return summary


# -- the two-way mirror ------------------------------------------------------------------


@notes_changed_in_bulk()
def sync_mirror(root: Path | str) -> FolderSummary:
    """One round of the BRAIN_DIR mirror (its notes' background work queued in batches, as import_folder's).

    1. disk → service: files new or changed since the last round (mtime/size,
       then hash) are imported; on a conflict the disk edit wins.
    2. a file removed on disk archives its note (never deletes it).
    3. service → disk: notes changed since the last round (content hash) are
       written; a note whose place changed (promoted) moves its file.
    4. files of notes rejected or archived in the service are removed from disk
       (only if nobody edited the file since the mirror wrote it).
    5. the folder sections other apps register (`brain.callbacks`) mirror their
       part: session logs appended as they are recorded, approved training data.

    `_index.md` files edited on disk update their wing/hall description.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    summary = FolderSummary()
    on_disk = set(iter_note_files(root))
    states = {state.path: state for state in MirrorFile.objects.select_related("note")}

    # 1. disk → service
    claimed: dict[str, str] = {}
    note: Note | None  # a file's note in step 1 and 2, a service note in step 3
    data: bytes | None
    for rel_path in sorted(on_disk, key=claim_order):
        full = root / rel_path
        stat = full.stat()
        state = states.get(rel_path)
        if state is not None and (state.mtime_ns, state.size) == (stat.st_mtime_ns, stat.st_size):
            continue
        data = full.read_bytes()
        digest = sha256(data)
        if state is not None and state.disk_hash == digest:
            do_touch_mirror_file(state, mtime_ns=stat.st_mtime_ns, size=stat.st_size)
            continue
        try:
            nf = place_note_file(parse_note_text(rel_path, data.decode("utf-8")), on_disk, claimed)
            note, outcome = _import_one(nf, restore=True)
        except (FolderError, FrontmatterError, BrainInputError, UnicodeDecodeError) as exc:
            summary.errors.append((rel_path, _error_text(exc)))
            continue
        summary.count(outcome)
        do_record_mirror_file(rel_path, note=note, disk_hash=digest, mtime_ns=stat.st_mtime_ns, size=stat.st_size)
        if outcome != "unchanged" and note.redactions:
            # The file on disk still holds the secret the note door took out: step 3 writes the note back over it.
            do_forget_note_hash(rel_path)

    import_index_files(root, summary)

    # 2. removed on disk → archived
    for rel_path, state in states.items():
        if rel_path in on_disk:
            continue
        note = state.note
        if note is not None:
            note.refresh_from_db()
            if note.is_live and note_file_path(note) == rel_path:
                do_archive_note(note, reason=f"{rel_path} was removed from the brain folder")
                summary.archived += 1
        do_forget_mirror_file(state)

    # 3. service → disk
    states = {state.path: state for state in MirrorFile.objects.all()}
    for note in Note.objects.exportable().order_by("slug").iterator():
        rel_path = note_file_path(note)
        state = states.get(rel_path)
        if state is not None and state.note_id == note.id and state.note_hash == note.content_hash:
            continue
        data = note_file_bytes(note, rel_path, summary)
        if data is None:
            continue
        full = root / rel_path
        if not (full.is_file() and full.read_bytes() == data):
            _write_file(full, data)
            summary.written += 1
        stat = full.stat()
        with transaction.atomic():
            do_record_mirror_file(
                rel_path, note=note, disk_hash=sha256(data), mtime_ns=stat.st_mtime_ns, size=stat.st_size
            )
            for old in MirrorFile.objects.filter(note=note).exclude(path=rel_path):
                summary.removed += _remove_if_untouched(root, old)

    # 4. notes that left the folder in the service
    gone = MirrorFile.objects.filter(note__status__in=[NoteStatus.REJECTED, NoteStatus.ARCHIVED])
    for state in gone:
        summary.removed += _remove_if_untouched(root, state)

    # 5. what other apps keep in the folder (session logs, training data), as they are recorded
    for section in folder_sections():
        if section.mirror_dir is not None:
            setattr(summary, section.summary_field, section.mirror_dir(root / section.folder))
    return summary


def _remove_if_untouched(root: Path, state: MirrorFile) -> int:
    """Delete the file the mirror wrote for `state` unless it was edited since; forget the state."""
    full = root / state.path
    removed = 0
    if full.is_file() and sha256(full.read_bytes()) == state.disk_hash:
        full.unlink()
        removed = 1
    do_forget_mirror_file(state)
    return removed
