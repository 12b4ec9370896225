"""Notes from files: a brain folder's notes, area descriptions and the mirror's file records (brain.folder)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict

from django.db import IntegrityError, transaction
from django.utils import timezone

from brain import truth
from brain.actions.notes import (
    _after_write,
    _clean_body,
    _clean_frontmatter,
    _clean_place,
    _clean_slug,
    _clean_title,
    _inserted,
    _redact_note_fields,
    _redact_slug,
    _slug_taken,
    link_targets,
)
from brain.actions.truth import _anchor_rows_of, _check_note, _note_project
from brain.errors import BrainInputError
from brain.indexing import bump_brain_version, note_changed
from brain.limits import MAX_TITLE_LENGTH
from brain.models import (
    AreaDescription,
    MirrorFile,
    Note,
    NoteLink,
    NoteStatus,
    note_content_hash,
)
from brain.placement import link_candidates, resolve_with, suffixes
from hyperguild.lib.text import without_bidi_controls
from hyperguild.lib.typed import JSON

# -- import (used by brain.folder) -----------------------------------------------


@dataclass(frozen=True)
class NoteFileFields:
    """A file's note as it will be stored: validated, redacted (`flags`: what the note door took out)."""

    slug: str
    title: str
    body: str
    frontmatter: JSON
    status: str
    wing: str
    hall: str
    flags: list[JSON]


def _clean_note_file(
    *, slug: str, title: str, body: str, frontmatter: JSON, status: str, wing: str, hall: str
) -> NoteFileFields:
    title = _clean_title(title)
    body = _clean_body(body, required=False)
    frontmatter = _clean_frontmatter(frontmatter)
    redacted = _redact_note_fields(title=title, body=body, frontmatter=frontmatter)
    assert redacted.title is not None and redacted.body is not None and redacted.frontmatter is not None  # given
    clean_slug, slug_flags = _redact_slug(_clean_slug(slug))
    if not clean_slug:
        raise BrainInputError("the file name gives no usable slug.")
    if status not in (NoteStatus.RAW, NoteStatus.WIKI):
        raise BrainInputError(f"a file can only hold a raw or wiki note, not {status}.")
    wing, hall = _clean_place(wing, hall, wing_required=False)
    return NoteFileFields(
        slug=clean_slug,
        title=redacted.title,
        body=redacted.body,
        frontmatter=redacted.frontmatter,
        status=status,
        wing=wing,
        hall=hall,
        flags=redacted.flags + slug_flags,
    )


def _new_note_from_file(fields: NoteFileFields, *, path: str, source: str) -> Note:
    note = Note(
        slug=fields.slug,
        title=fields.title,
        body=fields.body,
        frontmatter=fields.frontmatter,
        status=fields.status,
        wing=fields.wing,
        hall=fields.hall,
        path=path,
        source=source,
        provenance={"source": source, "path": path},
        redactions=fields.flags,
    )
    note.content_hash = note.compute_hash()
    return note


def do_import_note_file(
    *,
    slug: str,
    title: str,
    body: str,
    frontmatter: JSON,
    status: str,
    wing: str,
    hall: str,
    path: str,
    source: str = "import",
    restore: bool = False,
) -> tuple[Note, str]:
    """Create or update the note `slug` from a file. Returns (note, "added"|"updated"|"unchanged").

    A note whose content, status and place already match is left alone
    (importing twice changes nothing); only its path is kept current. A
    rejected or archived note with the same content stays as it is, unless
    `restore` (the mirror: the file is back on disk) brings it back.
    """
    fields = _clean_note_file(
        slug=slug, title=title, body=body, frontmatter=frontmatter, status=status, wing=wing, hall=hall
    )
    slug, title, body, frontmatter = fields.slug, fields.title, fields.body, fields.frontmatter
    wing, hall, flags = fields.wing, fields.hall, fields.flags
    with transaction.atomic():
        note = Note.objects.select_for_update().filter(slug=slug).first()
        if note is None:
            note = _new_note_from_file(fields, path=path, source=source)
            if not _inserted(note):
                raise BrainInputError(f"slug {slug!r} was written by someone else at the same time; import again.")
            _after_write(note)
            return note, "added"
        new_hash = Note(title=title, body=body, frontmatter=frontmatter).compute_hash()
        same_place = (note.status, note.wing, note.hall) == (status, wing, hall)
        left_alone = note.status in (NoteStatus.REJECTED, NoteStatus.ARCHIVED) and not restore
        if new_hash == note.content_hash and (same_place or left_alone):
            if note.path != path and note.is_live:
                Note.objects.filter(pk=note.pk).update(path=path)
                note.path = path
            return note, "unchanged"
        note.title, note.body, note.frontmatter = title, body, frontmatter
        note.status, note.wing, note.hall, note.path = status, wing, hall, path
        note.content_hash = new_hash
        note.redactions = [*note.redactions, *flags]
        note.provenance = {**note.provenance, "last_imported_from": path}
        note.version += 1  # a form opened before the file changed must not save over it
        note.save()
        _after_write(note)
        return note, "updated"


class NoteFileArguments(TypedDict):
    """do_import_note_file's arguments for one file (brain.folder reads them from the file)."""

    slug: str
    title: str
    body: str
    frontmatter: JSON
    status: str
    wing: str
    hall: str
    path: str


class SlugsTakenMeanwhile(Exception):
    """A bulk insert met a slug another writer took since the caller looked: nothing of the batch was written."""


def do_import_new_note_files(
    files: Iterable[NoteFileArguments], *, source: str = "import"
) -> list[Note | BrainInputError]:
    """Notes for files whose slugs no note holds (a folder import's new files), in one transaction.

    Each item of `files` holds do_import_note_file's arguments. What is stored is what
    do_import_note_file would store for each file ("added"), but the notes are inserted together,
    their links resolved in a few queries, and the corpus version moves once: an import of
    thousands of new files is not thousands of transactions. Returns, per file, the new note or
    the BrainInputError that refused that file (nothing written for it). Raises SlugsTakenMeanwhile,
    with nothing written, when another writer took one of the slugs: the caller imports those
    files one by one.
    """
    results: list[Note | BrainInputError] = []
    notes: list[Note] = []
    for item in files:
        try:
            fields = _clean_note_file(
                slug=item["slug"],
                title=item["title"],
                body=item["body"],
                frontmatter=item["frontmatter"],
                status=item["status"],
                wing=item["wing"],
                hall=item["hall"],
            )
        except BrainInputError as exc:
            results.append(exc)
            continue
        note = _new_note_from_file(fields, path=item["path"], source=source)
        results.append(note)
        notes.append(note)
    if not notes:
        return results
    if len({note.slug for note in notes}) < len(notes):
        raise SlugsTakenMeanwhile()  # two files of the batch give one slug: one by one, the second one updates
    with transaction.atomic():
        try:
            with transaction.atomic():
                Note.objects.bulk_create(notes)
        except IntegrityError as exc:
            if not _slug_taken(exc):
                raise
            raise SlugsTakenMeanwhile() from None
        _link_new_notes(notes)
        _anchor_new_notes(notes)
        bump_brain_version([note.id for note in notes])
        for note in notes:
            transaction.on_commit(functools.partial(note_changed, note.id))
    return results


def _anchor_new_notes(notes: list[Note]) -> None:
    """What freshly inserted notes cite in code (docs/truth.md), in one insert; a note that names its project
    (frontmatter `project:`, its session) is checked against that project's code as a single write is."""
    rows = _anchor_rows_of(notes, {})
    unlinked = []
    for note in notes:
        if (
            not (note.frontmatter or {}).get("project")
            and not note.session_id
            and not (note.provenance or {}).get("project")
        ):
            unlinked.append(note.pk)  # no project to check against: unverified, as a single write leaves it
            continue
        project = _note_project(note)
        if project is not None:
            Note.objects.filter(pk=note.pk).update(project=project)
            note.project = project
        _check_note(note, rows[note.pk], only_unchecked=True)
    if unlinked:
        verdict = truth.unverified(truth.no_repository_reason(None))
        Note.objects.filter(pk__in=unlinked).update(
            verification_state=verdict.state,
            verified_commit=verdict.commit,
            verification_evidence=verdict.evidence,
            verified_at=timezone.now(),
        )


def _link_new_notes(notes: list[Note]) -> None:
    """What _rebuild_links does for each new note, for many at once: their outgoing links, resolved
    after all of them are in (so links between them resolve as if imported one by one), and the
    links elsewhere that one of them now answers better."""
    targets = {note.id: link_targets(note.body, note.frontmatter) for note in notes}
    candidates = link_candidates(slug for found in targets.values() for slug, _ in found)
    links = []
    for note in notes:
        resolved = resolve_with(
            candidates, [slug for slug, _ in targets[note.id]], wing=note.wing, hall=note.hall, exclude_id=note.id
        )
        links += [
            NoteLink(source=note, target_slug=slug, target_id=resolved[slug].target_id, kind=kind)
            for slug, kind in targets[note.id]
        ]
    NoteLink.objects.bulk_create(links, batch_size=1000)
    new_ids = [note.id for note in notes]
    answered = sorted({suffix for note in notes for suffix in suffixes(note.slug)})
    affected: list[NoteLink] = []
    for start in range(0, len(answered), 1000):
        affected += list(
            NoteLink.objects.filter(target_slug__in=answered[start : start + 1000])
            .exclude(source_id__in=new_ids)
            .select_related("source")
        )
    if not affected:
        return
    candidates = link_candidates(link.target_slug for link in affected)
    moved = []
    for link in affected:
        answer = resolve_with(
            candidates, [link.target_slug], wing=link.source.wing, hall=link.source.hall, exclude_id=link.source_id
        )[link.target_slug]
        if answer.target_id != link.target_id:
            link.target_id = answer.target_id
            moved.append(link)
    NoteLink.objects.bulk_update(moved, ["target"], batch_size=1000)


# -- the BRAIN_DIR mirror's record of each file (brain.folder.mirror_folder) -----------------


def do_record_mirror_file(path: str, *, note: Note, disk_hash: str, mtime_ns: int, size: int) -> MirrorFile:
    """Remember that `path` holds `note` as it is now (its content hash), with the file's hash and stat."""
    state, _ = MirrorFile.objects.update_or_create(
        path=path,
        defaults={
            "note": note,
            "disk_hash": disk_hash,
            "note_hash": note.content_hash,
            "mtime_ns": mtime_ns,
            "size": size,
        },
    )
    return state


def do_touch_mirror_file(state: MirrorFile, *, mtime_ns: int, size: int) -> None:
    """The file's stat changed but not its content: remember the new stat only."""
    MirrorFile.objects.filter(pk=state.pk).update(mtime_ns=mtime_ns, size=size)


def do_forget_note_hash(path: str) -> None:
    """The file at `path` no longer matches its note (the import took secrets out): the next export rewrites it."""
    MirrorFile.objects.filter(path=path).update(note_hash="")


def do_forget_mirror_file(state: MirrorFile) -> None:
    state.delete()


def do_import_area_description(
    *, wing: str, hall: str, title: str, body: str, frontmatter: JSON, path: str
) -> tuple[AreaDescription, str]:
    """Create or update the description of a wing or hall from its `_index.md`.

    Returns (description, "added"|"updated"|"unchanged"); an unchanged file writes nothing.
    """
    title = " ".join(without_bidi_controls(title or "").split())[:MAX_TITLE_LENGTH]
    body = _clean_body(body, required=False)
    frontmatter = _clean_frontmatter(frontmatter)
    redacted = _redact_note_fields(title=title, body=body, frontmatter=frontmatter)
    assert redacted.title is not None and redacted.body is not None and redacted.frontmatter is not None  # given
    title, body, frontmatter = redacted.title, redacted.body, redacted.frontmatter
    wing, hall = _clean_place(wing, hall, wing_required=False)
    content_hash = note_content_hash(title, frontmatter, body)
    with transaction.atomic():
        description = AreaDescription.objects.select_for_update().filter(wing=wing, hall=hall).first()
        if description is None:
            description = AreaDescription.objects.create(
                wing=wing,
                hall=hall,
                title=title,
                body=body,
                frontmatter=frontmatter,
                path=path,
                content_hash=content_hash,
            )
            return description, "added"
        if description.content_hash == content_hash and description.path == path:
            return description, "unchanged"
        description.title, description.body, description.frontmatter = title, body, frontmatter
        description.path, description.content_hash = path, content_hash
        description.save()
        return description, "updated"
