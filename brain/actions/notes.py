"""Writing a note: the one form of text, validation at the door, secrets redacted, links rebuilt, slugs kept
unique, a revision per write; raw notes written and ingested."""

from __future__ import annotations

import functools
import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from brain import checks as note_checks
from brain.actions.truth import _queue_check_if_new, _refresh_anchors, _store_verdict
from brain.errors import BrainInputError
from brain.indexing import bump_brain_version, note_changed
from brain.inputs import RawNoteInput, WikiNoteInput
from brain.limits import MAX_TITLE_LENGTH
from brain.models import (
    Note,
    NoteLink,
    NoteRevision,
    NoteSnapshot,
    NoteStatus,
)
from brain.placement import resolve_targets, suffixes
from brain.slugs import SlugError, numbered, slugify_path, slugify_title, validate_segment, validate_slug
from hyperguild.lib.limits import hostile_value_problem, text_problem
from hyperguild.lib.markdown import FrontmatterError, check_frontmatter_limits, extract_wikilinks
from hyperguild.lib.redaction import redact_fields, secret_spans
from hyperguild.lib.text import without_bidi_controls
from hyperguild.lib.typed import JSON

if TYPE_CHECKING:
    from django.contrib.auth.models import User


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


def _clean_frontmatter(frontmatter: Any) -> JSON:
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
    frontmatter: JSON | None
    flags: list[JSON]


def _redact_note_fields(
    *, title: str | None = None, body: str | None = None, frontmatter: JSON | None = None
) -> RedactedFields:
    given = {
        name: value
        for name, value in (("title", title), ("body", body), ("frontmatter", frontmatter))
        if value is not None
    }
    cleaned, flags = redact_fields(given)
    new_title = cleaned.get("title")
    if new_title is not None:
        new_title = new_title[:MAX_TITLE_LENGTH]  # the marker is longer than some secrets
    return RedactedFields(
        title=new_title, body=cleaned.get("body"), frontmatter=cleaned.get("frontmatter"), flags=flags
    )


def _redact_slug(slug: str | None) -> tuple[str | None, list[JSON]]:
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


def link_targets(body: str, frontmatter: JSON) -> list[tuple[str, str]]:
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
        [
            NoteLink(source=note, target_slug=slug, target_id=resolved[slug].target_id, kind=kind)
            for slug, kind in targets
        ]
    )
    affected = (
        NoteLink.objects.filter(Q(target_slug__in=suffixes(note.slug)) | Q(target=note))
        .exclude(source=note)
        .select_related("source")
    )
    for link in affected:
        answer = resolve_targets(
            [link.target_slug], wing=link.source.wing, hall=link.source.hall, exclude_id=link.source_id
        )[link.target_slug]
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


def _check_provenance(provenance: Any) -> JSON | None:
    if provenance is not None and not isinstance(provenance, dict):
        raise BrainInputError("provenance must be a mapping (a JSON object).")
    return provenance


# -- revisions -------------------------------------------------------------------


def _save_with_revision(
    note: Note,
    *,
    before: NoteSnapshot,
    version_before: int,
    action: str,
    user: User | None = None,
    group: uuid.UUID | None = None,
    summary: str = "",
) -> NoteRevision:
    """Save `note` one version up and record what changed (call inside the action's transaction)."""
    note.version = version_before + 1
    note.save()
    return NoteRevision.objects.create(
        note=note,
        group=group or uuid.uuid4(),
        action=action,
        user=user if getattr(user, "pk", None) else None,
        before=before,
        after=note.snapshot(),
        version_before=version_before,
        version_after=note.version,
        summary=summary[:500],
    )


# -- actions ---------------------------------------------------------------------


def do_write_raw_note(
    *,
    title: str,
    body: str,
    frontmatter: JSON | None = None,
    slug: str | None = None,
    source: str = "mcp",
    provenance: JSON | None = None,
    session_id: str = "",
    user: User | None = None,
    anchors: list[str] | None = None,
) -> Note:
    """A new note in raw, waiting for review (`anchors`: explicit ones, kept in frontmatter `anchors:`)."""
    return _create_note(
        title=title,
        body=body,
        frontmatter=_with_anchors(frontmatter, anchors),
        slug=slug,
        status=NoteStatus.RAW,
        source=source,
        provenance=provenance,
        session_id=session_id,
        user=user,
    )


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


def do_ingest_raw_note(*, provenance: JSON | None = None, **note: Any) -> Note:
    """A document into raw for review: do_write_raw_note's arguments, recorded as an ingest."""
    return do_write_raw_note(provenance={"method": "ingest", **(_check_provenance(provenance) or {})}, **note)


def do_ingest_note(
    *,
    title: str,
    body: str,
    wing: str,
    hall: str = "",
    frontmatter: JSON | None = None,
    slug: str | None = None,
    source: str = "mcp",
    provenance: JSON | None = None,
    user: User | None = None,
    anchors: list[str] | None = None,
) -> Note:
    """A document straight into the wiki under wing/hall (for trusted sources)."""
    return _create_note(
        title=title,
        body=body,
        frontmatter=_with_anchors(frontmatter, anchors),
        slug=slug,
        status=NoteStatus.WIKI,
        wing=wing,
        hall=hall,
        source=source,
        provenance={"method": "ingest", **(_check_provenance(provenance) or {})},
        user=user,
    )


def do_write_raw_note_from(note: RawNoteInput, *, source: str, user: User | None, ingest: bool = False) -> Note:
    """`do_write_raw_note` (or, `ingest`, `do_ingest_raw_note`) with the input the door parsed (MCP, REST).

    A field left out of the input has the action's default: the models' None is "not given"."""
    return do_write_raw_note(
        title=note.title,
        body=note.body,
        frontmatter=note.frontmatter,
        slug=note.slug,
        session_id=note.session_id or "",
        anchors=note.anchors,
        source=source,
        user=user,
        provenance={"method": "ingest"} if ingest else None,  # as do_ingest_raw_note records an ingest
    )


def do_ingest_note_from(note: WikiNoteInput, *, source: str, user: User | None) -> Note:
    """`do_ingest_note` with the input the door parsed (MCP brain_ingest, REST /ingest)."""
    return do_ingest_note(
        title=note.title,
        body=note.body,
        wing=note.wing,
        hall=note.hall or "",
        frontmatter=note.frontmatter,
        slug=note.slug,
        anchors=note.anchors,
        source=source,
        user=user,
    )


def _create_note(
    *,
    title: Any,
    body: Any,
    frontmatter: Any,
    slug: Any,
    status: str,
    source: str,
    provenance: Any,
    wing: Any = "",
    hall: Any = "",
    session_id: str = "",
    user: User | None = None,
) -> Note:
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
        title=redacted.title,
        body=redacted.body,
        frontmatter=redacted.frontmatter,
        status=status,
        wing=wing,
        hall=hall,
        source=source,
        provenance=provenance,
        session_id=session_id or "",
        created_by=user if getattr(user, "pk", None) else None,
        redactions=redacted.flags + slug_flags,
    )
    note.content_hash = note.compute_hash()
    with transaction.atomic():
        _insert_with_unique_slug(note, slug or slugify_title(note.title), explicit=slug is not None)
        _after_write(note)
        _queue_check_if_new(note, None)
    return note


def _save_maybe_reslugged(note: Note, new_slug: str | None, save: Callable[[], Any], *, renumber: bool) -> None:
    """`save()` the note, under `new_slug` when it differs from the note's own: numbered (`-2`, `-3`…) when
    `renumber` and taken, else refused when another note has it (BrainInputError)."""
    if new_slug and new_slug != note.slug:
        taken = f"slug {new_slug!r} is already used by another note; choose another."
        _save_under_free_slug(note, new_slug, save, explicit=not renumber, taken=taken)
    else:
        save()
