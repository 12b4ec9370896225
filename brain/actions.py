"""Every write to the brain: one transaction each, validation first.

A bad input raises `BrainInputError` before anything is written. Each write
recomputes the content hash, rebuilds the note's outgoing links from its
`[[wikilinks]]` and frontmatter `related:`/`links:` lists, resolves links
that were waiting for its slug, bumps the corpus version (search indexes
rebuild on the next query) and, once committed, tells the search side
(`brain.indexing.note_changed`).
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from brain import anchors as anchor_rules
from brain import checks as note_checks
from brain import projects as project_rules
from brain import truth
from brain.callbacks import session_project
from brain.chunking import chunk_note
from brain.errors import BrainInputError, NoteConflict
from brain.indexing import bump_brain_version, note_changed, notes_changed_in_bulk
from brain.limits import MAX_TITLE_LENGTH
from brain.models import (
    NOTE_SOURCE_HASH,
    Anchor,
    AnchorState,
    AreaDescription,
    Embedding,
    MirrorFile,
    Note,
    NoteChange,
    NoteCheckRun,
    NoteChunk,
    NoteLink,
    NoteRevision,
    NoteStatus,
    Project,
    SimilarNotes,
    VerificationState,
    note_content_hash,
)
from brain.placement import link_candidates, resolve_targets, resolve_with, suffixes
from brain.repository import Repository, RepositoryUnreadable
from brain.slugs import SlugError, numbered, slugify_path, slugify_title, validate_segment, validate_slug
from hyperguild.lib.limits import hostile_value_problem, text_problem
from hyperguild.lib.markdown import FrontmatterError, check_frontmatter_limits, extract_wikilinks
from hyperguild.lib.redaction import redact_fields, secret_spans
from hyperguild.lib.text import without_bidi_controls

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import Model, QuerySet

MAX_SLUG_ATTEMPTS = 64


# -- the one form of text ------------------------------------------------------


def normalise_text(text: str) -> str:
    """Note text in the one form it is stored in, whoever wrote it (browser, REST, MCP, import).

    Line endings become `\n` (a browser sends a textarea's text with `\r\n`, so a note saved
    unchanged would otherwise differ from itself), a leading byte-order mark goes, and characters
    are composed (NFC), so the same text always has the same content hash.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text.removeprefix("\ufeff"))


# -- validation ---------------------------------------------------------------


def _clean_title(title: Any, *, required: bool = True) -> str:
    if title is None and not required:
        return ""
    if not isinstance(title, str) or not title.strip():
        raise BrainInputError("title is empty: give the note a short descriptive title.")
    problem = text_problem(title)
    if problem:
        raise BrainInputError(f"title {problem}.")
    title = " ".join(without_bidi_controls(title).split())
    if not title:
        raise BrainInputError("title is empty: give the note a short descriptive title.")
    if len(title) > MAX_TITLE_LENGTH:
        raise BrainInputError(f"title is {len(title)} characters long; keep it under {MAX_TITLE_LENGTH}.")
    return title


def _clean_body(body: Any, *, required: bool = True) -> str:
    if not isinstance(body, str):
        raise BrainInputError("body must be markdown text.")
    body = normalise_text(body)
    if required and not body.strip():
        raise BrainInputError("body is empty: write the content of the note.")
    problem = text_problem(body)
    if problem:
        raise BrainInputError(f"body {problem}.")
    size = len(body.encode("utf-8"))
    limit = settings.BRAIN_MAX_NOTE_BYTES
    if size > limit:
        raise BrainInputError(
            f"body is {size} bytes, over the limit of {limit} bytes (BRAIN_MAX_NOTE_BYTES); split it into several notes."
        )
    return body


def _clean_frontmatter(frontmatter: Any) -> dict:
    if frontmatter is None:
        return {}
    if not isinstance(frontmatter, dict):
        raise BrainInputError(
            f"frontmatter must be a mapping of keys to values (a JSON object), not a {type(frontmatter).__name__}."
        )
    try:
        check_frontmatter_limits(frontmatter)
    except FrontmatterError as exc:
        raise BrainInputError(f"{exc}.") from None
    problem = hostile_value_problem(frontmatter, "frontmatter")
    if problem:
        raise BrainInputError(problem)
    # The title lives in its own field; a `title:` key would only disagree with it.
    return {key: value for key, value in frontmatter.items() if key != "title"}


def _clean_slug(slug: Any) -> str | None:
    if slug is None or slug == "":
        return None
    try:
        return validate_slug(slug)
    except SlugError as exc:
        raise BrainInputError(str(exc))


def _clean_place(wing: Any, hall: Any, *, wing_required: bool) -> tuple[str, str]:
    wing = wing or ""
    hall = hall or ""
    if wing_required and not wing:
        raise BrainInputError("wing is required for a wiki note (the first folder under wiki/, e.g. 'concepts').")
    if hall and not wing:
        raise BrainInputError("a hall needs a wing: give both, e.g. wing='concepts', hall='python'.")
    try:
        return validate_segment(wing, "wing"), validate_segment(hall, "hall")
    except SlugError as exc:
        raise BrainInputError(str(exc))


def _check_wiki_slug(slug: str | None, hall: str) -> None:
    """In a folder, folders below the hall belong to the slug; without a hall they would be read back as one."""
    if slug and "/" in slug and not hall:
        raise BrainInputError(
            f"slug {slug!r} has folders, which a wiki note can only have below a hall "
            "(wiki/<wing>/<hall>/<folders>/<name>.md): give a hall, or a slug without '/'."
        )


# -- secrets: one redaction pass at the note door ------------------------------------
#
# Every writer (MCP, REST, forms, import, retrospective) reaches the notes through the actions below,
# and each runs its validated text through `_redact_note_fields` (and an explicit slug through
# `_redact_slug`) before anything is derived from it: the slug built from the title, the links, the
# hash, the export. The patterns are the ones session logs, runs and training data use
# (hyperguild.lib.redaction); what was taken out is kept in `Note.redactions`, never the secret.

SLUG_REDACTED = "redacted"


@dataclass(frozen=True)
class RedactedFields:
    """A note's text after the redaction pass (None where the write leaves a field as it is)."""

    title: str | None
    body: str | None
    frontmatter: dict | None
    flags: list[dict]


def _redact_note_fields(*, title: str | None = None, body: str | None = None, frontmatter: dict | None = None) -> RedactedFields:
    given = {name: value for name, value in (("title", title), ("body", body), ("frontmatter", frontmatter)) if value is not None}
    cleaned, flags = redact_fields(given)
    new_title = cleaned.get("title")
    if new_title is not None:
        new_title = new_title[:MAX_TITLE_LENGTH]  # the marker is longer than some secrets
    return RedactedFields(title=new_title, body=cleaned.get("body"), frontmatter=cleaned.get("frontmatter"), flags=flags)


def _redact_slug(slug: str | None) -> tuple[str | None, list[dict]]:
    """An explicit slug with a secret in it gets `redacted` in the secret's place.

    Slugs are lowercase, so the patterns are also run on the upper-cased slug (an AWS key id is
    upper case); both have the same length (slugs are ASCII), so the spans line up.
    """
    if not slug:
        return slug, []
    spans = set(secret_spans(slug)) | set(secret_spans(slug.upper()))
    if not spans:
        return slug, []
    chars, counts = list(slug), dict[str, int]()
    for start, end, name in spans:
        chars[start:end] = ["\x00"] * (end - start)
        counts[name] = counts.get(name, 0) + 1
    cleaned = slugify_path(re.sub("\x00+", f"-{SLUG_REDACTED}-", "".join(chars))) or SLUG_REDACTED
    return cleaned, [{"field": "slug", "pattern": name, "count": count} for name, count in sorted(counts.items())]


# -- links ------------------------------------------------------------------------


def link_targets(body: str, frontmatter: dict) -> list[tuple[str, str]]:
    """(target_slug, kind) pairs of a note, deduplicated, in order."""
    found: list[tuple[str, str]] = []
    kind: str
    for link in extract_wikilinks(body):
        found.append((slugify_path(link.target), NoteLink.Kind.WIKILINK))
    for key, kind in (("related", NoteLink.Kind.RELATED), ("links", NoteLink.Kind.LINKS)):
        values = frontmatter.get(key)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list):
            continue
        for value in values:
            if not isinstance(value, str):
                continue
            wikilinks = extract_wikilinks(value)
            target = wikilinks[0].target if wikilinks else value
            found.append((slugify_path(target), kind))
    seen: set[tuple[str, str]] = set()
    targets: list[tuple[str, str]] = []
    for slug, kind in found:
        if not slug or (slug, kind) in seen:
            continue
        try:
            validate_slug(slug)
        except SlugError:
            continue
        seen.add((slug, kind))
        targets.append((slug, kind))
    return targets


def _rebuild_links(note: Note) -> None:
    """Outgoing links resolved to the most specific note (`brain.placement`); links elsewhere that this
    note may now answer better (or no longer answers) are resolved again."""
    note.links_out.all().delete()
    targets = link_targets(note.body, note.frontmatter)
    resolved = resolve_targets([slug for slug, _ in targets], wing=note.wing, hall=note.hall, exclude_id=note.id)
    NoteLink.objects.bulk_create(
        [NoteLink(source=note, target_slug=slug, target_id=resolved[slug].target_id, kind=kind) for slug, kind in targets]
    )
    affected = (
        NoteLink.objects.filter(Q(target_slug__in=suffixes(note.slug)) | Q(target=note))
        .exclude(source=note)
        .select_related("source")
    )
    for link in affected:
        answer = resolve_targets([link.target_slug], wing=link.source.wing, hall=link.source.hall,
                                 exclude_id=link.source_id)[link.target_slug]
        if answer.target_id != link.target_id:
            NoteLink.objects.filter(pk=link.pk).update(target_id=answer.target_id)


def _after_write(note: Note, *, corpus_changed: bool = True, links_changed: bool = True) -> None:
    if links_changed:
        _rebuild_links(note)
        _refresh_anchors(note)
    else:
        _store_verdict(note)
    if corpus_changed:
        bump_brain_version([note.id])
    note_id = note.id

    def notify() -> None:
        note_changed(note_id)

    transaction.on_commit(notify)


# -- slug allocation ------------------------------------------------------------


def _first_free_number(base: str, *, exclude: Note | None = None) -> int:
    """1 when `base` is free (or is `exclude`'s own slug), else the lowest n ≥ 2 with `base-n` free."""
    others = Note.objects.exclude(pk=exclude.pk) if exclude is not None else Note.objects.all()
    if not others.filter(slug=base).exists():
        return 1
    taken = set(others.filter(slug__startswith=f"{base}-").values_list("slug", flat=True))
    number = 2
    while numbered(base, number) in taken:
        number += 1
    return number


@functools.cache
def _slug_constraints() -> frozenset[str]:
    """Names of the unique constraints on Note.slug, as the database calls them."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Note._meta.db_table)
    slug = Note._meta.get_field("slug").column
    return frozenset(name for name, found in constraints.items() if found["unique"] and found["columns"] == [slug])


def _slug_taken(exc: IntegrityError) -> bool:
    """Whether `exc` is the slug's unique index refusing a slug that another note took meanwhile."""
    name = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
    return name is not None and name in _slug_constraints()


def _inserted(note: Note) -> bool:
    """Insert `note` in a savepoint; False, with nothing written, when its slug was taken meanwhile."""
    try:
        with transaction.atomic():
            note.save()
    except IntegrityError as exc:
        if not _slug_taken(exc):
            raise
        return False
    return True


def _save_under_free_slug(note: Note, base: str, save: Callable[[], Any], *, explicit: bool, taken: str) -> None:
    """`save()` the note (new, or changing its slug) under `base`, or `base-2`, `base-3`… when taken.

    The one slug allocator of every write that picks a slug. Safe under concurrency: the unique
    index decides, not the SELECT that found the first free number, which cannot see a write
    still in flight in another transaction. Such a write makes ours wait for it and then fail
    with IntegrityError inside the savepoint (nothing of `save()` is kept); we move on to the
    next number. An explicit slug is never renumbered: taken, it raises BrainInputError(`taken`).
    """
    number = _first_free_number(base, exclude=note if note.pk is not None else None)
    if explicit and number != 1:
        raise BrainInputError(taken)
    for _ in range(MAX_SLUG_ATTEMPTS):
        note.slug = numbered(base, number)
        note.path = note.canonical_path()
        try:
            with transaction.atomic():
                save()
        except IntegrityError as exc:
            if not _slug_taken(exc):
                raise
        else:
            return
        if explicit:
            raise BrainInputError(taken)
        number += 1
    raise BrainInputError(f"could not find a free slug near {base!r}; pass an explicit slug.")


def _insert_with_unique_slug(note: Note, base: str, *, explicit: bool) -> None:
    """Save a new note under `base`, or `base-2`, `base-3`… when taken (explicit: see _save_under_free_slug)."""
    taken = f"slug {base!r} is already used by another note; choose another or omit slug."
    _save_under_free_slug(note, base, note.save, explicit=explicit, taken=taken)


def _check_provenance(provenance: Any) -> dict | None:
    if provenance is not None and not isinstance(provenance, dict):
        raise BrainInputError("provenance must be a mapping (a JSON object).")
    return provenance


# -- revisions -------------------------------------------------------------------


def _check_version(note: Note, expected_version: int | None) -> None:
    if expected_version is not None and note.version != expected_version:
        raise NoteConflict(
            f"“{note.title}” was changed by someone else while you were editing (version {expected_version} → "
            f"{note.version}); nothing was saved. Compare the texts below and save again.",
            current=note,
        )


def _save_with_revision(
    note: Note, *, before: dict, version_before: int, action: str, user: User | None = None, group: uuid.UUID | None = None,
    summary: str = "",
) -> NoteRevision:
    """Save `note` one version up and record what changed (call inside the action's transaction)."""
    note.version = version_before + 1
    note.save()
    return NoteRevision.objects.create(
        note=note, group=group or uuid.uuid4(), action=action, user=user if getattr(user, "pk", None) else None,
        before=before, after=note.snapshot(), version_before=version_before, version_after=note.version,
        summary=summary[:500],
    )  # fmt: skip


# -- actions ---------------------------------------------------------------------


def do_write_raw_note(
    *, title: str, body: str, frontmatter: dict | None = None, slug: str | None = None, source: str = "mcp",
    provenance: dict | None = None, session_id: str = "", user: User | None = None, anchors: list[str] | None = None,
) -> Note:  # fmt: skip
    """A new note in raw, waiting for review (`anchors`: explicit ones, kept in frontmatter `anchors:`)."""
    return _create_note(
        title=title, body=body, frontmatter=_with_anchors(frontmatter, anchors), slug=slug, status=NoteStatus.RAW,
        source=source, provenance=provenance, session_id=session_id, user=user,
    )  # fmt: skip


def _with_anchors(frontmatter: Any, anchors: Any) -> Any:
    """Explicit anchors join the frontmatter's `anchors:` list (where an imported file keeps them too)."""
    if anchors is None:
        return frontmatter
    if not isinstance(anchors, list) or not all(isinstance(item, str) and item.strip() for item in anchors):
        raise BrainInputError("anchors must be a list of non-empty strings (paths, symbols, quoted lines…).")
    if frontmatter is not None and not isinstance(frontmatter, dict):
        return frontmatter  # _clean_frontmatter says what is wrong with it
    frontmatter = dict(frontmatter or {})
    given = frontmatter.get("anchors")
    given = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    frontmatter["anchors"] = [*given, *[item for item in anchors if item not in given]]
    return frontmatter


def do_ingest_raw_note(*, provenance: dict | None = None, **note: Any) -> Note:
    """A document into raw for review: do_write_raw_note's arguments, recorded as an ingest."""
    return do_write_raw_note(provenance={"method": "ingest", **(_check_provenance(provenance) or {})}, **note)


def do_ingest_note(
    *, title: str, body: str, wing: str, hall: str = "", frontmatter: dict | None = None, slug: str | None = None,
    source: str = "mcp", provenance: dict | None = None, user: User | None = None, anchors: list[str] | None = None,
) -> Note:  # fmt: skip
    """A document straight into the wiki under wing/hall (for trusted sources)."""
    return _create_note(
        title=title, body=body, frontmatter=_with_anchors(frontmatter, anchors), slug=slug, status=NoteStatus.WIKI,
        wing=wing, hall=hall, source=source, provenance={"method": "ingest", **(_check_provenance(provenance) or {})}, user=user,
    )  # fmt: skip


def _create_note(
    *, title: Any, body: Any, frontmatter: Any, slug: Any, status: str, source: str, provenance: Any,
    wing: Any = "", hall: Any = "", session_id: str = "", user: User | None = None,
) -> Note:  # fmt: skip
    """Validate, redact and insert a new note under a free slug (the write and ingest actions' one path)."""
    title, body = _clean_title(title), _clean_body(body)
    frontmatter, slug = _clean_frontmatter(frontmatter), _clean_slug(slug)
    note_checks.refuse_unless_allowed(user, None, frontmatter)  # a check runs a command: a reviewer's to give
    if status == NoteStatus.WIKI:
        wing, hall = _clean_place(wing, hall, wing_required=True)
        _check_wiki_slug(slug, hall)
    provenance = {"source": source, **(_check_provenance(provenance) or {})}
    if session_id:
        provenance.setdefault("session_id", session_id)
    redacted = _redact_note_fields(title=title, body=body, frontmatter=frontmatter)
    assert redacted.title is not None and redacted.body is not None  # given, so returned
    slug, slug_flags = _redact_slug(slug)
    note = Note(
        title=redacted.title, body=redacted.body, frontmatter=redacted.frontmatter, status=status, wing=wing,
        hall=hall, source=source, provenance=provenance, session_id=session_id or "",
        created_by=user if getattr(user, "pk", None) else None, redactions=redacted.flags + slug_flags,
    )  # fmt: skip
    note.content_hash = note.compute_hash()
    with transaction.atomic():
        _insert_with_unique_slug(note, slug or slugify_title(note.title), explicit=slug is not None)
        _after_write(note)
        _queue_check_if_new(note, None)
    return note


def _locked(note: Note, *, allowed: tuple[str, ...] = (), verb: str = "", expected_version: int | None = None) -> Note:
    """`note` as it is now, locked for this transaction; refused unless its status is one of `allowed` (when
    given) and, with `expected_version`, unless nobody changed it since (NoteConflict)."""
    note = Note.objects.select_for_update().get(pk=note.pk)
    if allowed and note.status not in allowed:
        kinds = " or ".join(allowed)
        raise BrainInputError(f"note {note.slug} is {note.status}; only {kinds} notes can be {verb}.")
    _check_version(note, expected_version)
    return note


def _save_maybe_reslugged(note: Note, new_slug: str | None, save: Callable[[], Any], *, renumber: bool) -> None:
    """`save()` the note, under `new_slug` when it differs from the note's own: numbered (`-2`, `-3`…) when
    `renumber` and taken, else refused when another note has it (BrainInputError)."""
    if new_slug and new_slug != note.slug:
        taken = f"slug {new_slug!r} is already used by another note; choose another."
        _save_under_free_slug(note, new_slug, save, explicit=not renumber, taken=taken)
    else:
        save()


def _who(user: User | None) -> str:
    return getattr(user, "get_username", lambda: "")() if user is not None else ""


def do_edit_note(
    note: Note, *, title: str | None = None, body: str | None = None, frontmatter: Any = None, user: User | None = None,
    expected_version: int | None = None,
) -> Note:  # fmt: skip
    """Change a note's title, body and/or frontmatter (None leaves a field as it is).

    With `expected_version` (what the editing form saw) a note that changed
    meanwhile raises `NoteConflict` and nothing is written.
    """
    new_title = _clean_title(title) if title is not None else None
    new_body = _clean_body(body) if body is not None else None
    new_frontmatter = _clean_frontmatter(frontmatter) if frontmatter is not None else None
    redacted = _redact_note_fields(title=new_title, body=new_body, frontmatter=new_frontmatter)
    new_title, new_body, new_frontmatter = redacted.title, redacted.body, redacted.frontmatter
    with transaction.atomic():
        note = _locked(note, expected_version=expected_version)
        note_checks.refuse_unless_allowed(user, note.frontmatter, new_frontmatter)
        before, version_before = note.snapshot(), note.version
        if new_title is not None:
            note.title = new_title
        if new_body is not None:
            note.body = new_body
        if new_frontmatter is not None:
            note.frontmatter = new_frontmatter
        new_hash = note.compute_hash()
        if new_hash == note.content_hash:
            return note
        note.content_hash = new_hash
        note.redactions = [*note.redactions, *redacted.flags]
        note.provenance = {**note.provenance, "last_edited_by": _who(user) or "service", "last_edited_at": timezone.now().isoformat()}
        _save_with_revision(note, before=before, version_before=version_before, action=NoteRevision.Action.EDIT, user=user)
        _after_write(note)
        _queue_check_if_new(note, before.get("frontmatter"))
        if note.status == NoteStatus.WIKI:
            _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} was edited")
        return note


def do_promote_note(
    note: Note, *, reviewer: User | None, wing: str, hall: str = "", title: str | None = None, slug: str | None = None,
    body: str | None = None, expected_version: int | None = None, group: uuid.UUID | None = None,
    slug_from_title: bool = False,
) -> Note:  # fmt: skip
    """raw → wiki under wing/hall; records the reviewer and when.

    `group` puts the revision in an existing group (a bulk action: one undo for all its notes).
    `slug_from_title` (instead of `slug`) re-slugs the note from its title, numbered (`-2`, `-3`…) when
    another note has that slug; an explicit `slug` that is taken is refused, never renumbered.
    """
    if slug_from_title and slug is not None:
        raise BrainInputError("give a slug or ask for one from the title, not both.")
    group = group or uuid.uuid4()  # a successor's promotion and the supersession it settles: one undo
    wing, hall = _clean_place(wing, hall, wing_required=True)
    new_title = _clean_title(title) if title is not None else None
    new_body = _clean_body(body) if body is not None else None
    redacted = _redact_note_fields(title=new_title, body=new_body)
    new_title, new_body = redacted.title, redacted.body
    new_slug, slug_flags = _redact_slug(_clean_slug(slug))
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.RAW,), verb="promoted", expected_version=expected_version)
        before, version_before = note.snapshot(), note.version
        if new_title is not None:
            note.title = new_title
        if slug_from_title:
            new_slug = slugify_title(note.title)
        _check_wiki_slug(new_slug or note.slug, hall)
        if new_body is not None:
            note.body = new_body
        note.promote(reviewer=reviewer, wing=wing, hall=hall)
        note.content_hash = note.compute_hash()
        note.redactions = [*note.redactions, *redacted.flags, *slug_flags]

        def save() -> None:
            _save_with_revision(
                note, before=before, version_before=version_before, action=NoteRevision.Action.PROMOTE,
                user=reviewer, group=group, summary=f"promoted to {note.path}",
            )  # fmt: skip

        # Bulk promotes race each other for the slug of one title: the unique index decides, not a SELECT.
        _save_maybe_reslugged(note, new_slug, save, renumber=slug_from_title)
        _after_write(note)
        _supersede_what_it_names(note, reviewer=reviewer, group=group)
        return note


def do_reject_note(
    note: Note, *, reviewer: User | None, reason: str, group: uuid.UUID | None = None, settle: bool = True
) -> Note:
    """raw → rejected, with the reason (required) recorded as the review note (`group`: see do_promote_note).

    A rejected successor draft (frontmatter `supersedes:`) settles the re-check of the note it would have
    replaced: that note is still true (do_confirm_note), unless `settle` is False."""
    if not isinstance(reason, str) or not reason.strip():
        raise BrainInputError("a reason is required to reject a note: say why it should not enter the wiki.")
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.RAW,), verb="rejected")
        before, version_before = note.snapshot(), note.version
        note.reject(reviewer=reviewer, reason=reason.strip())
        _save_with_revision(
            note, before=before, version_before=version_before, action=NoteRevision.Action.REJECT, user=reviewer,
            group=group, summary=reason.strip(),
        )  # fmt: skip
        _after_write(note, links_changed=False)
        if settle:
            _confirm_what_it_names(note, reviewer=reviewer)
        return note


def do_archive_note(note: Note, *, user: User | None = None, reason: str = "", expected_version: int | None = None) -> Note:
    """Take a note out of search and out of the brain folder; it is never deleted.

    With `expected_version` a note that changed meanwhile raises `NoteConflict` (see do_edit_note).
    """
    with transaction.atomic():
        note = _locked(note)
        if note.status == NoteStatus.ARCHIVED:
            return note
        _check_version(note, expected_version)
        before, version_before = note.snapshot(), note.version
        note.archive(reason=reason)
        note.provenance = {**note.provenance, "archived_by": _who(user) or "service"}
        _save_with_revision(
            note, before=before, version_before=version_before, action=NoteRevision.Action.ARCHIVE, user=user,
            summary=reason,
        )  # fmt: skip
        _after_write(note, links_changed=False)
        _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} was archived")
        return note


def merge_target_problem(into: Note) -> str:
    """Why `into` cannot take a merge ("" when it can): only a wiki note can, or the merged text leaves the wiki."""
    if into.status == NoteStatus.WIKI:
        return ""
    what_next = (
        "Reopen it first if it should come back, or pick a wiki note."
        if into.status in (NoteStatus.REJECTED, NoteStatus.ARCHIVED) else "Pick a wiki note."
    )
    return (
        f"“{into.title}” ({into.slug}) is {into.status}: a note can only be merged into a wiki note, or its text "
        f"would leave both the queue and the wiki. {what_next}"
    )


def _check_merge_target(into: Note) -> None:
    problem = merge_target_problem(into)
    if problem:
        raise BrainInputError(problem)


@notes_changed_in_bulk()  # both notes' background work in one task
def do_merge_note(
    note: Note, *, into: Note, reviewer: User | None, body: str, expected_version: int | None = None,
) -> Note:  # fmt: skip
    """Merge a raw note into an existing note: `into` gets `body`, the raw note is archived.

    `expected_version` is the target's version the merge preview was made
    from: when the target changed since, `NoteConflict` is raised and
    nothing is written (the other merge's text would otherwise be lost).
    The target records the raw note under provenance `merged_from`; both
    changes share one revision group, so one undo restores both notes.
    """
    redacted = _redact_note_fields(body=_clean_body(body))
    assert redacted.body is not None  # given, so returned
    body = redacted.body
    with transaction.atomic():
        # Lock in id order: two merges touching the same pair never wait on each other in a cycle.
        first, second = sorted([note.pk, into.pk])
        locked = {n.pk: n for n in Note.objects.select_for_update().filter(pk__in=[first, second]).order_by("pk")}
        note, into = locked[note.pk], locked[into.pk]
        if note.pk == into.pk:
            raise BrainInputError("a note cannot be merged into itself.")
        if note.status != NoteStatus.RAW:
            raise BrainInputError(f"note {note.slug} is {note.status}; only raw notes can be merged.")
        _check_merge_target(into)
        _check_version(into, expected_version)
        group = uuid.uuid4()
        before, version_before = into.snapshot(), into.version
        into.body = body
        into.content_hash = into.compute_hash()
        into.redactions = [*into.redactions, *redacted.flags]
        into.reviewed_by, into.reviewed_at = reviewer, timezone.now()
        merged_from = [*(into.provenance.get("merged_from") or []), {"slug": note.slug, "id": note.pk, "title": note.title}]
        into.provenance = {**into.provenance, "merged_from": merged_from}
        _save_with_revision(
            into, before=before, version_before=version_before, action=NoteRevision.Action.MERGE, user=reviewer,
            group=group, summary=f"merged {note.slug} into it",
        )  # fmt: skip
        _after_write(into)
        before, version_before = note.snapshot(), note.version
        note.archive(reason=f"merged into {into.slug}")
        note.reviewed_by, note.reviewed_at = reviewer, timezone.now()
        _save_with_revision(
            note, before=before, version_before=version_before, action=NoteRevision.Action.MERGED, user=reviewer,
            group=group, summary=f"merged into {into.slug}",
        )  # fmt: skip
        _after_write(note, links_changed=False)
        return into


def do_refile_note(
    note: Note, *, user: User | None, wing: str, hall: str = "", slug: str | None = None, expected_version: int | None = None,
) -> Note:  # fmt: skip
    """Move a wiki note to another wing/hall and/or slug (its file moves with it)."""
    wing, hall = _clean_place(wing, hall, wing_required=True)
    new_slug, slug_flags = _redact_slug(_clean_slug(slug))
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.WIKI,), verb="re-filed", expected_version=expected_version)
        _check_wiki_slug(new_slug or note.slug, hall)
        before, version_before = note.snapshot(), note.version
        note.wing, note.hall = wing, hall
        note.path = note.canonical_path()
        if new_slug in (None, note.slug) and note.snapshot() == before:
            return note
        note.redactions = [*note.redactions, *slug_flags]

        def save() -> None:
            _save_with_revision(
                note, before=before, version_before=version_before, action=NoteRevision.Action.REFILE, user=user,
                summary=f"re-filed to {note.path}",
            )  # fmt: skip

        _save_maybe_reslugged(note, new_slug, save, renumber=False)
        _after_write(note)
        return note


def _back_to_raw(
    note: Note, *, user: User | None, reason: str, expected_version: int | None, allowed: tuple[str, ...], verb: str, action: str,
    summary: str,
) -> Note:  # fmt: skip
    """The note back in the review queue (raw, out of any wing, raw/ on disk); one revision, undoable."""
    with transaction.atomic():
        note = _locked(note, allowed=allowed, verb=verb, expected_version=expected_version)
        before, version_before = note.snapshot(), note.version
        note.status = NoteStatus.RAW
        note.wing = note.hall = ""
        note.path = note.canonical_path()
        if action == NoteRevision.Action.REOPEN:
            note.reviewed_by, note.reviewed_at = None, None  # a demoted wiki note keeps who reviewed it
        note.review_note = reason.strip() if isinstance(reason, str) else ""
        _save_with_revision(
            note, before=before, version_before=version_before, action=action, user=user,
            summary=note.review_note or summary.format(status=before["status"]),
        )  # fmt: skip
        _after_write(note)
        return note


def do_demote_note(note: Note, *, user: User | None, reason: str = "", expected_version: int | None = None) -> Note:
    """wiki → raw: the note goes back to the review queue (out of wiki search, back to raw/ on disk)."""
    return _back_to_raw(
        note, user=user, reason=reason, expected_version=expected_version, allowed=(NoteStatus.WIKI,),
        verb="demoted", action=NoteRevision.Action.DEMOTE, summary="demoted to raw",
    )  # fmt: skip


def do_reopen_note(note: Note, *, user: User | None, reason: str = "", expected_version: int | None = None) -> Note:
    """rejected or archived → raw: the note is back in the review queue (an undoable revision like any other)."""
    return _back_to_raw(
        note, user=user, reason=reason, expected_version=expected_version,
        allowed=(NoteStatus.REJECTED, NoteStatus.ARCHIVED), verb="reopened", action=NoteRevision.Action.REOPEN,
        summary="reopened from {status}",
    )  # fmt: skip


@notes_changed_in_bulk()  # a bulk action's undo: every note's background work in one task per batch
def do_undo_revision(group: uuid.UUID | str, *, user: User | None) -> list[Note]:
    """Undo one reviewer action (every revision of its group): each note gets back its fields from before.

    Refused, with nothing written, when a note changed again after that
    action (undo the later change first), when the action was already
    undone, or when the old slug now belongs to another note. The undo is a
    revision too, so it shows in the history and can itself be undone.
    """
    try:
        group = uuid.UUID(str(group))
    except ValueError:
        raise BrainInputError("no such change to undo.")
    with transaction.atomic():
        revisions = list(NoteRevision.objects.select_for_update().filter(group=group).order_by("id"))
        if not revisions:
            raise BrainInputError("no such change to undo.")
        if any(rev.undone_at for rev in revisions):
            raise BrainInputError("this change was already undone.")
        notes = {n.pk: n for n in Note.objects.select_for_update().filter(pk__in=[r.note_id for r in revisions]).order_by("pk")}
        for rev in revisions:
            note = notes[rev.note_id]
            # Only the fields the revision recorded: one written before a field existed still undoes.
            fields_now = {name: value for name, value in note.snapshot().items() if name in rev.after}
            if note.version != rev.version_after or fields_now != rev.after:
                raise BrainInputError(
                    f"“{note.title}” changed after this {rev.get_action_display()} (now version {note.version}); "
                    "undo the later changes first, from its history."
                )
        undo_group, now, restored = uuid.uuid4(), timezone.now(), list[Note]()
        # The note that changed slug last gives its slug back first.
        for rev in reversed(revisions):
            note = notes[rev.note_id]
            old_slug = rev.before.get("slug", note.slug)
            if old_slug != note.slug and Note.objects.filter(slug=old_slug).exclude(pk=note.pk).exists():
                raise BrainInputError(f"slug {old_slug!r} now belongs to another note; re-file that one first.")
            before, version_before = note.snapshot(), note.version
            note.restore(rev.before)
            undo = _save_with_revision(
                note, before=before, version_before=version_before, action=NoteRevision.Action.UNDO, user=user,
                group=undo_group, summary=f"undid {rev.get_action_display()}",
            )  # fmt: skip
            undo.undoes = group
            undo.save(update_fields=["undoes"])
            _after_write(note)
            restored.append(note)
        NoteRevision.objects.filter(group=group).update(undone_at=now, undone_by=user if getattr(user, "pk", None) else None)
        return restored


# -- import (used by brain.folder) -----------------------------------------------


@dataclass(frozen=True)
class NoteFileFields:
    """A file's note as it will be stored: validated, redacted (`flags`: what the note door took out)."""

    slug: str
    title: str
    body: str
    frontmatter: dict
    status: str
    wing: str
    hall: str
    flags: list


def _clean_note_file(*, slug: str, title: str, body: str, frontmatter: dict, status: str, wing: str, hall: str) -> NoteFileFields:
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
        slug=clean_slug, title=redacted.title, body=redacted.body, frontmatter=redacted.frontmatter, status=status,
        wing=wing, hall=hall, flags=redacted.flags + slug_flags,
    )  # fmt: skip


def _new_note_from_file(fields: NoteFileFields, *, path: str, source: str) -> Note:
    note = Note(
        slug=fields.slug, title=fields.title, body=fields.body, frontmatter=fields.frontmatter, status=fields.status,
        wing=fields.wing, hall=fields.hall, path=path, source=source, provenance={"source": source, "path": path},
        redactions=fields.flags,
    )  # fmt: skip
    note.content_hash = note.compute_hash()
    return note


def do_import_note_file(
    *,
    slug: str,
    title: str,
    body: str,
    frontmatter: dict,
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
    fields = _clean_note_file(slug=slug, title=title, body=body, frontmatter=frontmatter, status=status, wing=wing,
                              hall=hall)  # fmt: skip
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


class SlugsTakenMeanwhile(Exception):
    """A bulk insert met a slug another writer took since the caller looked: nothing of the batch was written."""


def do_import_new_note_files(files: Iterable[dict], *, source: str = "import") -> list[Note | BrainInputError]:
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
            fields = _clean_note_file(**{key: item[key] for key in ("slug", "title", "body", "frontmatter", "status",
                                                                   "wing", "hall")})  # fmt: skip
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
        if not (note.frontmatter or {}).get("project") and not note.session_id and not (note.provenance or {}).get("project"):
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
            verification_state=verdict.state, verified_commit=verdict.commit, verification_evidence=verdict.evidence,
            verified_at=timezone.now(),
        )  # fmt: skip


def _link_new_notes(notes: list[Note]) -> None:
    """What _rebuild_links does for each new note, for many at once: their outgoing links, resolved
    after all of them are in (so links between them resolve as if imported one by one), and the
    links elsewhere that one of them now answers better."""
    targets = {note.id: link_targets(note.body, note.frontmatter) for note in notes}
    candidates = link_candidates(slug for found in targets.values() for slug, _ in found)
    links = []
    for note in notes:
        resolved = resolve_with(candidates, [slug for slug, _ in targets[note.id]], wing=note.wing, hall=note.hall,
                                exclude_id=note.id)  # fmt: skip
        links += [NoteLink(source=note, target_slug=slug, target_id=resolved[slug].target_id, kind=kind)
                  for slug, kind in targets[note.id]]  # fmt: skip
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
        answer = resolve_with(candidates, [link.target_slug], wing=link.source.wing, hall=link.source.hall,
                              exclude_id=link.source_id)[link.target_slug]  # fmt: skip
        if answer.target_id != link.target_id:
            link.target_id = answer.target_id
            moved.append(link)
    NoteLink.objects.bulk_update(moved, ["target"], batch_size=1000)


# -- chunks and embeddings (brain.embedding_sync decides what is due; these write it) -------


def do_drop_archived_chunks(notes: QuerySet[Note], *, using: str = "default") -> int:
    """Delete the chunks of the archived notes among `notes` (their embeddings go with them); returns embeddings deleted."""
    archived = NoteChunk.objects.using(using).filter(note__in=notes.filter(status=NoteStatus.ARCHIVED))
    deleted = Embedding.objects.using(using).filter(chunk__in=archived).count()
    archived.delete()
    return deleted


def do_rechunk_note(note_id: int, *, using: str = "default") -> int:
    """Bring one note's chunk rows in line with its text; returns embeddings deleted."""
    with transaction.atomic(using=using):
        # The note row lock serialises concurrent syncs of the same note (the write
        # task and the schedule), so ordinals never collide.
        note = (
            Note.objects.using(using).select_for_update().annotate(text_md5=NOTE_SOURCE_HASH).filter(pk=note_id).first()
        )
        if note is None or note.status == NoteStatus.ARCHIVED:
            return 0
        wanted = chunk_note(note.title, note.body)
        existing = {c.ordinal: c for c in NoteChunk.objects.using(using).filter(note_id=note_id)}
        deleted = 0
        for chunk in wanted:
            fields = {
                "heading_path": chunk.heading_path, "text": chunk.text,
                "content_hash": chunk.content_hash, "source_hash": note.text_md5,
            }  # fmt: skip
            row = existing.pop(chunk.ordinal, None)
            if row is None:
                NoteChunk.objects.using(using).create(note_id=note_id, ordinal=chunk.ordinal, **fields)
            elif any(getattr(row, name) != value for name, value in fields.items()):
                for name, value in fields.items():
                    setattr(row, name, value)
                row.save(using=using)
        if existing:  # the note got shorter: drop the extra chunks and their embeddings
            gone = NoteChunk.objects.using(using).filter(id__in=[c.id for c in existing.values()])
            deleted = Embedding.objects.using(using).filter(chunk__in=gone).count()
            gone.delete()
        return deleted


def do_store_embeddings(model_key: str, rows: list[tuple[int, str, list[float]]], *, using: str = "default") -> int:
    """Upsert one embedding per (chunk, model) from `rows` of (chunk id, content hash, vector), in one bulk write.

    A chunk deleted or re-chunked since it was embedded is skipped; returns how many were stored.
    """
    if not rows:
        return 0
    with transaction.atomic(using=using):
        # Lock the chunks: one deleted or re-chunked meanwhile is skipped, and its hash
        # must still be the one that was embedded, or the vector would be stale.
        live = dict(
            NoteChunk.objects.using(using)
            .select_for_update()
            .filter(id__in=[cid for cid, _, _ in rows])
            .values_list("id", "content_hash")
        )
        objs = [
            Embedding(chunk_id=cid, model=model_key, dimensions=len(vec), content_hash=h, vector=vec)
            for cid, h, vec in rows
            if live.get(cid) == h
        ]
        Embedding.objects.using(using).bulk_create(
            objs,
            update_conflicts=True,
            unique_fields=["chunk", "model"],
            update_fields=["vector", "dimensions", "content_hash"],
        )
    return len(objs)


# -- what the review pages read about a note's neighbours (brain.similar ranks them) ----------------


def do_store_similar_notes(note: Note, found: Iterable[Any]) -> SimilarNotes:
    """Remember the notes most like `note` for its current text (`found`: `brain.similar.Similar` items)."""
    items = [item.as_dict() for item in found]
    row, _ = SimilarNotes.objects.update_or_create(
        note_id=note.pk,
        defaults={"content_hash": note.content_hash, "items": items,
                  "duplicate_ids": [item["id"] for item in items if item["duplicate"]]},
    )  # fmt: skip
    return row


# -- the BRAIN_DIR mirror's record of each file (brain.folder.mirror_folder) -----------------


def do_record_mirror_file(path: str, *, note: Note, disk_hash: str, mtime_ns: int, size: int) -> MirrorFile:
    """Remember that `path` holds `note` as it is now (its content hash), with the file's hash and stat."""
    state, _ = MirrorFile.objects.update_or_create(
        path=path,
        defaults={"note": note, "disk_hash": disk_hash, "note_hash": note.content_hash,
                  "mtime_ns": mtime_ns, "size": size},
    )  # fmt: skip
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
    *, wing: str, hall: str, title: str, body: str, frontmatter: dict, path: str
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
                wing=wing, hall=hall, title=title, body=body, frontmatter=frontmatter, path=path,
                content_hash=content_hash,
            )  # fmt: skip
            return description, "added"
        if description.content_hash == content_hash and description.path == path:
            return description, "unchanged"
        description.title, description.body, description.frontmatter = title, body, frontmatter
        description.path, description.content_hash = path, content_hash
        description.save()
        return description, "updated"


NOTE_CHANGE_KEEP_SECONDS = 24 * 3600


@transaction.atomic
def do_prune_note_changes(keep_seconds: int = NOTE_CHANGE_KEEP_SECONDS) -> int:
    """Forget index change-log rows older than `keep_seconds`, never the newest one.

    A search process idle for longer than that finds a gap in the log and
    builds (or maps) a whole base again; every other process is unaffected.
    """
    newest = NoteChange.objects.order_by("-version").values_list("version", flat=True).first()
    if newest is None:
        return 0
    cutoff = timezone.now() - timedelta(seconds=keep_seconds)
    deleted, _ = NoteChange.objects.filter(created_at__lt=cutoff, version__lt=newest).delete()
    return deleted


# -- projects, anchors and their truth (brain.truth computes, these store; docs/truth.md) -------------------


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


def _note_project(note: Note) -> Project | None:
    """Its frontmatter `project:`, else its session's project, else the project its provenance names."""
    named = (note.frontmatter or {}).get("project")
    if isinstance(named, str) and named.strip():
        found = Project.objects.filter(name=named.strip()).first() or Project.objects.for_cwd(named.strip())
        if found is not None:
            return found
    project_id = session_project(note.session_id)
    if project_id is not None:
        return Project.objects.filter(pk=project_id).first()
    named = (note.provenance or {}).get("project")
    if isinstance(named, str) and named:
        return Project.objects.filter(name=named).first()
    return None


def do_set_note_project(note: Note, project: Project | None) -> Note:
    """A reviewer's choice of the note's project; its anchors are checked against that project's code."""
    with transaction.atomic():
        note = _locked(note)
        Note.objects.filter(pk=note.pk).update(project=project)
        note.project = project
        _check_note(note, list(note.anchors.all()), only_unchecked=False)
        return note


def _refresh_anchors(note: Note) -> None:
    """Anchors again from the note's text (kept where unchanged, with their last check), then its verdict."""
    if note.project_id is None:
        project = _note_project(note)
        if project is not None:
            Note.objects.filter(pk=note.pk).update(project=project)
            note.project = project
    _check_note(note, _anchor_rows(note), only_unchecked=True)


def _anchor_rows(note: Note) -> list[Anchor]:
    """The note's anchor rows in line with its text: new ones made (unchecked), dropped ones deleted."""
    return _anchor_rows_of([note], {note.pk: list(note.anchors.all())})[note.pk]


def _anchor_rows_of(notes: list[Note], existing_rows: dict[int, list[Anchor]]) -> dict[int, list[Anchor]]:
    """`_anchor_rows` for many notes at once: one delete and one insert for all of them."""
    gone, new, rows = [], [], {}
    for note in notes:
        wanted = {anchor.key: anchor for anchor in anchor_rules.extract(note.body, note.frontmatter)}
        existing = {anchor.key: anchor for anchor in existing_rows.get(note.pk, [])}
        gone += [anchor.pk for key, anchor in existing.items() if key not in wanted]
        made = [
            Anchor(note=note, key=key, kind=found.kind, value=found.value, hint=found.hint, explicit=found.explicit,
                   path=found.hint or (found.value if found.kind == "path" else ""))
            for key, found in wanted.items() if key not in existing
        ]  # fmt: skip
        new += made
        rows[note.pk] = [anchor for key, anchor in existing.items() if key in wanted] + made
    if gone:
        Anchor.objects.filter(pk__in=gone).delete()
    Anchor.objects.bulk_create(new, batch_size=1000)
    return rows


def _project_head(project: Project | None) -> tuple[Repository | None, str, str]:
    """(repository, the commit notes are checked at, "") or (None, "", why they cannot be)."""
    if project is None:
        return None, "", truth.no_repository_reason(None)
    if project.sync_error:
        return None, "", truth.no_repository_reason(project, project.sync_error)
    if not project.last_synced_commit:
        return None, "", truth.no_repository_reason(project)
    try:
        return project_rules.repository(project), project.last_synced_commit, ""
    except RepositoryUnreadable as exc:
        return None, "", truth.no_repository_reason(project, str(exc))


def _check_note(note: Note, anchors: list[Anchor], *, only_unchecked: bool) -> None:
    """Check `anchors` (all, or those never checked at the project's head) and store the note's verdict."""
    repo, commit, reason = _project_head(note.project)
    if repo is None:
        _store_verdict(note, truth.unverified(reason))
        return
    due = [a for a in anchors if not only_unchecked or a.state == AnchorState.UNCHECKED or a.commit != commit]
    try:
        verifier = truth.Verifier(repo, commit, project=note.project.name if note.project else "")
        _store_checks(verifier, due)
    except RepositoryUnreadable as exc:
        _store_verdict(note, truth.unverified(truth.no_repository_reason(note.project, str(exc))))
        return
    _store_verdict(note, truth.verdict(note, anchors, commit))


def _store_checks(verifier: truth.Verifier, anchors: list[Anchor]) -> None:
    now = timezone.now()
    for anchor in anchors:
        check = verifier.check(anchor)
        anchor.state, anchor.commit, anchor.checked_at = check.state, verifier.commit, now
        anchor.evidence = check.evidence
        if check.state in (AnchorState.HOLDS, AnchorState.MOVED):
            anchor.location, anchor.path = check.location, check.path
        else:
            anchor.path = check.path or anchor.path  # the location where it last held stays, for the evidence
    _update_rows(
        Anchor, anchors, {"state": "text", "commit": "text", "checked_at": "timestamptz", "evidence": "jsonb",
                          "location": "text", "path": "text"},
    )  # fmt: skip


UPDATE_BATCH = 1000


def _update_rows(model: type[Model], rows: list, columns: dict[str, str]) -> None:
    """Write `columns` of many rows in one UPDATE … FROM (VALUES …) per UPDATE_BATCH rows.

    Django's bulk_update builds a CASE per column with a branch per row: with thousands of anchors it
    took most of the time of a re-verification with thousands of anchors (figures in bench/RESULTS.md).
    """
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = list(columns)
    sets = ", ".join(f"{connection.ops.quote_name(name)} = v.{connection.ops.quote_name(name)}" for name in names)
    placeholder = "(%s, " + ", ".join(f"%s::{kind}" for kind in columns.values()) + ")"
    aliases = ", ".join(["id", *[connection.ops.quote_name(name) for name in names]])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), UPDATE_BATCH):
            batch = rows[start : start + UPDATE_BATCH]
            params: list = []
            for row in batch:
                params.append(row.pk)
                for name, kind in columns.items():
                    value = getattr(row, name)
                    params.append(json.dumps(value) if kind == "jsonb" else value)
            values = ", ".join([placeholder] * len(batch))
            cursor.execute(
                f"UPDATE {table} AS t SET {sets} FROM (VALUES {values}) AS v({aliases}) WHERE t.id = v.id",  # noqa: S608
                params,
            )


def _store_verdict(note: Note, verdict: truth.NoteVerdict | None = None) -> None:
    """Store the note's verification (derived data: no revision, no version bump)."""
    if verdict is None:  # the anchors are as they were: the verdict again, e.g. after an undo of "still true"
        if note.verification_state == VerificationState.UNVERIFIED:
            return
        verdict = truth.verdict(note, list(note.anchors.all()), note.verified_commit)
    verdict = note_checks.with_check(note, verdict)
    if (note.verification_state, note.verified_commit, note.verification_evidence) == (
        verdict.state, verdict.commit, verdict.evidence
    ):
        return  # nothing new: the row stays as it is (an undo restores a note exactly)
    note.verification_state, note.verified_commit = verdict.state, verdict.commit
    note.verification_evidence, note.verified_at = verdict.evidence, timezone.now()
    Note.objects.filter(pk=note.pk).update(
        verification_state=verdict.state, verified_commit=verdict.commit, verification_evidence=verdict.evidence,
        verified_at=note.verified_at,
    )  # fmt: skip


def do_verify_note(note: Note) -> Note:
    """Re-check every anchor of one note now, at its project's recorded head, then run its `check:` there
    unless it ran at that head already (brain_verify waits for it: at most SUPERVISOR_TEST_TIMEOUT)."""
    with transaction.atomic():
        note = _locked(note)
        _check_note(note, list(note.anchors.all()), only_unchecked=False)
    if note_checks.check_command(note) and note.project is not None and note.project.last_synced_commit:
        do_run_note_check(note, note.project.last_synced_commit)
        note.refresh_from_db()
    return note


@dataclass
class RecheckOutcome:
    """What one sync of a project did (kept as the django-q2 result and printed by project_sync)."""

    project: str
    old: str = ""
    new: str = ""
    changed_files: int = 0
    notes_rechecked: int = 0
    anchors_rechecked: int = 0
    stale: list[str] = field(default_factory=list)  # slugs of the re-checked notes that are stale now
    error: str = ""
    checks_due: list[int] = field(default_factory=list)  # re-checked wiki notes that carry a `check:`
    checks: list[dict] = field(default_factory=list)  # what their checks did: {slug, passed, seconds, commit}

    def as_dict(self) -> dict:
        return {
            "project": self.project, "old": self.old, "new": self.new, "changed_files": self.changed_files,
            "notes_rechecked": self.notes_rechecked, "anchors_rechecked": self.anchors_rechecked,
            "stale": list(self.stale or []), "error": self.error, "checks": list(self.checks),
        }  # fmt: skip


def do_sync_project(project: Project) -> RecheckOutcome:
    """Fetch the project's repository (a mirror) and re-verify the notes its new branch head may change.

    Incremental: only anchors whose file changed between the last synced head and the new one are
    re-checked (`git diff --name-only old..new`); the first sync checks every anchor. Nothing is
    retired: a note whose anchors no longer hold becomes stale, and a person decides.
    """
    try:
        project_rules.fetch(project)
        head = project_rules.repository(project).head(project.branch)
    except RepositoryUnreadable as exc:
        Project.objects.filter(pk=project.pk).update(sync_error=str(exc), synced_at=timezone.now())
        project.sync_error = str(exc)
        reason = truth.no_repository_reason(project, str(exc))
        verdict = truth.unverified(reason)
        Note.objects.filter(project=project).update(
            verification_state=verdict.state, verified_commit="", verification_evidence=verdict.evidence
        )
        return RecheckOutcome(project=project.name, error=str(exc), stale=[])
    outcome = do_recheck_project(project, head)
    # Checks run after the anchors are stored, outside their transaction: a check may take a test run's time.
    for note in Note.objects.filter(pk__in=outcome.checks_due).select_related("project"):
        run = do_run_note_check(note, head)
        if run is not None:
            outcome.checks.append({"slug": note.slug, "passed": run.passed, "seconds": round(run.seconds, 3),
                                   "commit": run.commit})  # fmt: skip
            if not run.passed and note.slug not in outcome.stale:
                outcome.stale = sorted([*outcome.stale, note.slug])
    return outcome


def do_recheck_project(project: Project, head: str) -> RecheckOutcome:
    """Re-verify the project's notes at commit `head` (see do_sync_project), and record it as synced."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        old = "" if project.sync_error else project.last_synced_commit
        outcome = RecheckOutcome(project=project.name, old=old, new=head, stale=[])
        repo = project_rules.repository(project)
        verifier = truth.Verifier(repo, head, old=old or None, project=project.name)
        if not old:
            # A first sync (or the first since the repository read again): every note's anchors, from its
            # text, all checked.
            notes = list(Note.objects.filter(project=project))
            existing: dict[int, list[Anchor]] = {}
            for anchor in Anchor.objects.filter(note__project=project):
                existing.setdefault(anchor.note_id, []).append(anchor)
            by_note = _anchor_rows_of(notes, existing)
            due = [anchor for rows in by_note.values() for anchor in rows]
        else:
            changed = repo.changed_files(old, head) if old != head else []
            outcome.changed_files = len(changed)
            due = list(Anchor.objects.filter(note__project=project).filter(Q(path__in=changed) | Q(hint__in=changed)))
            note_ids = {anchor.note_id for anchor in due}
            notes = list(Note.objects.filter(pk__in=note_ids))
            by_note = {}
            checked = {anchor.pk: anchor for anchor in due}
            for anchor in Anchor.objects.filter(note_id__in=note_ids):
                by_note.setdefault(anchor.note_id, []).append(checked.get(anchor.pk, anchor))
        _store_checks(verifier, due)
        outcome.anchors_rechecked = len(due)
        rechecked = [note for note in notes if by_note.get(note.pk)] if old else notes
        outcome.notes_rechecked = len({anchor.note_id for anchor in due})
        now = timezone.now()
        for note in rechecked:
            verdict = note_checks.with_check(note, truth.verdict(note, by_note.get(note.pk, []), head))
            if note_checks.check_command(note) and note.status == NoteStatus.WIKI:
                outcome.checks_due.append(note.pk)
            note.verification_state, note.verified_commit = verdict.state, verdict.commit
            note.verification_evidence, note.verified_at = verdict.evidence, now
            if verdict.state == VerificationState.STALE:
                outcome.stale.append(note.slug)
        _update_rows(
            Note, rechecked, {"verification_state": "text", "verified_commit": "text",
                              "verification_evidence": "jsonb", "verified_at": "timestamptz"},
        )  # fmt: skip
        # Notes none of whose files changed still hold at the new head.
        Note.objects.filter(project=project, verification_state=VerificationState.VERIFIED).exclude(
            pk__in=[note.pk for note in rechecked]).update(verified_commit=head)  # fmt: skip
        Project.objects.filter(pk=project.pk).update(last_synced_commit=head, synced_at=timezone.now(), sync_error="")
        project.last_synced_commit, project.sync_error = head, ""
        outcome.stale.sort()
        return outcome


def do_confirm_note(note: Note, *, user: User | None, expected_version: int | None = None) -> Note:
    """"Still true": re-check at the project's head, waive what no longer holds there, verified at that commit.

    One revision (the waivers are part of it), so one undo makes the note stale again.
    """
    with transaction.atomic():
        note = _locked(note, allowed=EXPORTED_STATES, verb="confirmed", expected_version=expected_version)
        repo, commit, reason = _project_head(note.project)
        if repo is None:
            raise BrainInputError(f"“{note.title}” cannot be re-anchored: {reason}.")
        anchors = list(note.anchors.all())
        _store_checks(truth.Verifier(repo, commit, project=note.project.name if note.project else ""), anchors)
        before, version_before = note.snapshot(), note.version
        waived = dict(note.waived_anchors or {})
        for anchor in anchors:
            if anchor.state in (AnchorState.CHANGED, AnchorState.GONE):
                waived[anchor.key] = {"commit": commit, "by": _who(user) or "service", "at": timezone.now().isoformat()}
        failed = note_checks.failed_run(note)
        if failed is not None:  # its check failed there: waived for that commit, like an anchor
            waived[note_checks.waiver_key(failed)] = {"commit": failed.commit, "by": _who(user) or "service",
                                                      "at": timezone.now().isoformat()}  # fmt: skip
        note.waived_anchors = waived
        _save_with_revision(
            note, before=before, version_before=version_before, action=NoteRevision.Action.STILL_TRUE, user=user,
            summary=f"still true at {commit[:7]}",
        )  # fmt: skip
        _store_verdict(note, truth.verdict(note, anchors, commit))
        _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} is still true at {commit[:7]}")
        return note


EXPORTED_STATES = (NoteStatus.RAW, NoteStatus.WIKI)


def do_supersede_note(old: Note, new: Note, *, reason: str, user: User | None = None, group: uuid.UUID | None = None) -> Note:
    """`old` is superseded by `new`: out of default search, brain_context and SessionStart, still readable.

    One revision on the old note (who, when, why; undo restores it). The link goes both ways
    (`old.superseded_by`, `new.supersedes`). Refused, with nothing written, for a note superseding
    itself, a successor that is not live or is itself superseded, or an old note already superseded.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise BrainInputError("a reason is required to supersede a note: say what changed.")
    reason = (_redact_note_fields(body=reason.strip()).body or "")[:2000]  # a body given comes back
    with transaction.atomic():
        first, second = sorted([old.pk, new.pk])
        locked = {n.pk: n for n in Note.objects.select_for_update().filter(pk__in=[first, second]).order_by("pk")}
        if old.pk == new.pk:
            raise BrainInputError("a note cannot supersede itself.")
        old, new = locked[old.pk], locked[new.pk]
        if old.superseded_by is not None:
            raise BrainInputError(f"{old.slug} is already superseded by {old.superseded_by.slug}; undo that first.")
        if new.status not in EXPORTED_STATES or new.superseded_by_id is not None:
            raise BrainInputError(
                f"{new.slug} cannot be the successor: it is {'superseded' if new.superseded_by_id else new.status}."
            )
        if old.status not in EXPORTED_STATES:
            raise BrainInputError(f"note {old.slug} is {old.status}; only raw or wiki notes can be superseded.")
        before, version_before = old.snapshot(), old.version
        old.superseded_by, old.superseded_at = new, timezone.now()
        old.superseded_by_person = user if getattr(user, "pk", None) else None
        old.superseded_reason = reason
        _save_with_revision(
            old, before=before, version_before=version_before, action=NoteRevision.Action.SUPERSEDE, user=user,
            group=group, summary=f"superseded by {new.slug}: {reason}",
        )  # fmt: skip
        _after_write(old, links_changed=False)
        _settle_drafts(old, reviewer=user, reason=f"settled: {old.slug} is superseded by {new.slug}", keep=new,
                       group=group)  # fmt: skip
        return old


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


def do_promote_superseding(note: Note, old: Note, *, reviewer: User | None, reason: str) -> Note:
    """A raw note the duplicate finder paired with wiki note `old` enters the wiki in its place: promoted
    to `old`'s wing and hall, and `old` superseded by it. One revision group: one undo restores both."""
    if old.status != NoteStatus.WIKI:
        raise BrainInputError(f"{old.slug} is {old.status}; a raw note can only supersede a wiki note.")
    group = uuid.uuid4()
    with transaction.atomic():
        promoted = do_promote_note(note, reviewer=reviewer, wing=old.wing, hall=old.hall, group=group)
        old.refresh_from_db()
        if old.superseded_by_id != promoted.pk:  # a draft that names it was promoted in its place already
            do_supersede_note(old, promoted, reason=reason, user=reviewer, group=group)
        return promoted


# -- notes that carry a check (brain.checks; docs/truth.md) ---------------------------------------------------


def _queue_check_if_new(note: Note, frontmatter_before: dict | None) -> None:
    """A wiki note given a check (or a new one) has it run at its project's head by a worker, after the commit."""
    command = note_checks.check_command(note)
    if not command or note.status != NoteStatus.WIKI or note.project_id is None:
        return
    if isinstance(frontmatter_before, dict) and frontmatter_before.get(note_checks.FRONTMATTER_KEY) == command:
        return
    note_id = note.pk

    def queue() -> None:
        from django_q.tasks import async_task

        async_task("brain.tasks.run_note_check", note_id, task_name=f"note-check-{note_id}")

    transaction.on_commit(queue)


def do_run_note_check(note: Note, commit: str) -> NoteCheckRun | None:
    """Run the wiki note's `check:` at `commit` of its project (once per commit and command), store the run and
    the note's verdict (proven, or stale with the output). None when it has no check, no readable repository,
    or no runner is registered (the supervisor app is not installed)."""
    command = note_checks.check_command(note)
    runner = note_checks.check_runner()
    if not command or note.status != NoteStatus.WIKI or note.project is None or runner is None:
        return None
    run = NoteCheckRun.objects.filter(note=note, commit=commit, command=command).first()
    if run is None:
        try:
            repo = project_rules.repository(note.project)
            with tempfile.TemporaryDirectory(prefix="hyperguild-check-") as folder:
                note_checks.export_tree(repo, commit, Path(folder))
                result = runner(Path(folder), command)
        except RepositoryUnreadable:
            return None
        run, _ = NoteCheckRun.objects.get_or_create(
            note=note, commit=commit, command=command,
            defaults={"passed": result.passed, "exit_code": result.exit_code, "outcome": result.outcome,
                      "output": result.output, "seconds": result.seconds},
        )  # fmt: skip
    with transaction.atomic():
        note = _locked(note)
        head = note.project.last_synced_commit if note.project is not None else ""
        _store_verdict(note, truth.verdict(note, list(note.anchors.all()), head or commit))
    return run


# -- successor drafts: one decision settles a draft and the re-check of the note it names (docs/truth.md) ------

SUPERSEDES_KEY = "supersedes"


def successor_drafts(old: Note) -> QuerySet[Note]:
    """Raw notes waiting for review that say they replace `old` (frontmatter `supersedes: <slug>`): the
    retrospective's drafts after a session changed the code `old` cites, or a session's own successor."""
    return Note.objects.filter(status=NoteStatus.RAW, **{f"frontmatter__{SUPERSEDES_KEY}": old.slug}).order_by("id")


def _named_old(draft: Note) -> Note | None:
    slug = (draft.frontmatter or {}).get(SUPERSEDES_KEY)
    if not isinstance(slug, str) or not slug or slug == draft.slug:
        return None
    return Note.objects.filter(slug=slug, status=NoteStatus.WIKI, superseded_by__isnull=True).first()


def _settle_drafts(old: Note, *, reviewer: User | None, reason: str, keep: Note | None = None,
                   group: uuid.UUID | None = None) -> None:  # fmt: skip
    """The note's re-check was decided (still true, edited, superseded, archived): its drafts are rejected."""
    drafts = successor_drafts(old)
    if keep is not None:
        drafts = drafts.exclude(pk=keep.pk)
    for draft in drafts:
        do_reject_note(draft, reviewer=reviewer, reason=reason, group=group, settle=False)


def _supersede_what_it_names(promoted: Note, *, reviewer: User | None, group: uuid.UUID) -> None:
    """A promoted draft takes the place of the wiki note it names (its re-check, and its other drafts, settled)."""
    old = _named_old(promoted)
    if old is not None:
        do_supersede_note(old, promoted, reason=f"replaced by {promoted.slug}, promoted from review", user=reviewer,
                          group=group)  # fmt: skip


def _confirm_what_it_names(rejected: Note, *, reviewer: User | None) -> None:
    """A rejected draft leaves the note it named as it is: when that note waits for a re-check, it is still true."""
    old = _named_old(rejected)
    if old is not None and Note.objects.needs_recheck().filter(pk=old.pk).exists():
        do_confirm_note(old, user=reviewer)
