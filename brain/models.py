"""Notes and the links between them."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self, TypedDict

from django.conf import settings
from django.contrib.postgres.indexes import OpClass
from django.db import models
from django.db.models import F, Q, TextField, Value
from django.db.models.functions import MD5, Concat, Reverse
from django.utils import timezone
from pgvector.django import VectorField

from brain.limits import MAX_PLACE_LENGTH, MAX_SESSION_ID_LENGTH, MAX_SLUG_LENGTH, MAX_TITLE_LENGTH
from brain.projects import project_for_cwd
from hyperguild.lib.redaction import redaction_summary
from hyperguild.lib.typed import JSON

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class NoteStatus(models.TextChoices):
    RAW = "raw", "raw"
    WIKI = "wiki", "wiki"
    REJECTED = "rejected", "rejected"
    ARCHIVED = "archived", "archived"


class VerificationState(models.TextChoices):
    """Whether what a note cites in its project's code is still there (docs/truth.md)."""

    PROVEN = "proven", "proven"  # its anchors hold and its `check:` command passed (brain.checks)
    VERIFIED = "verified", "verified"
    STALE = "stale", "stale"
    UNVERIFIED = "unverified", "unverified"


class ProjectQuerySet(models.QuerySet["Project"]):
    def for_cwd(self, cwd: str) -> Project | None:
        """The project a folder belongs to: the longest folder entry (an absolute path) the cwd is in, else
        the one whose repository (a local path) holds it, else one that names the cwd's folder name."""
        return project_for_cwd(self, cwd)  # the matching rule lives with the rest of project logic


class Project(models.Model):
    """A codebase the team's notes describe: the folders that mean it and a repository the service reads.

    `repo` is a local path (under SUPERVISOR_ALLOWED_ROOTS) or a git URL, kept as a bare mirror under
    HYPERGUILD_REPO_MIRRORS_DIR; `branch` is the team's truth. `last_synced_commit` is the branch head
    the notes were last verified against (brain.truth); `sync_error` says why the repository could not
    be read ("" when it could), and its notes stay unverified meanwhile.
    """

    name = models.CharField(max_length=200, unique=True)
    # Folder names (`ledgerly`) or absolute paths (`/home/ana/src/ledgerly`) that mean this project.
    folders = models.JSONField(default=list, blank=True)
    repo = models.CharField(max_length=1000, blank=True)
    branch = models.CharField(max_length=200, blank=True, default="main")
    last_synced_commit = models.CharField(max_length=64, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    sync_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_remote(self) -> bool:
        return "://" in self.repo or self.repo.startswith("git@")


class NoteQuerySet(models.QuerySet["Note"]):
    def current(self) -> Self:
        """Notes nobody superseded: what default search, brain_context and SessionStart show."""
        return self.filter(superseded_by__isnull=True)

    def needs_recheck(self) -> Self:
        """Live notes whose anchors no longer hold: the "Needs a re-check" queue."""
        return self.filter(
            verification_state=VerificationState.STALE, status__in=EXPORTED_STATUSES, superseded_by__isnull=True
        )

    def wiki(self) -> Self:
        return self.filter(status=NoteStatus.WIKI)

    def raw_queue(self) -> Self:
        return self.filter(status=NoteStatus.RAW).order_by("-created_at", "-id")

    def searchable(self) -> Self:
        return self.exclude(status=NoteStatus.ARCHIVED)

    def with_tags(self, tags: Iterable[str] | None) -> Self:
        """Notes whose frontmatter `tags` holds every one of `tags` (a YAML list, or one tag as a string)."""
        queryset = self
        for tag in tags or ():
            queryset = queryset.filter(Q(frontmatter__tags__contains=[tag]) | Q(frontmatter__tags=tag))
        return queryset

    def exportable(self) -> Self:
        """Notes that live in a brain folder: raw and wiki (rejected and archived ones do not)."""
        return self.filter(status__in=EXPORTED_STATUSES)


EXPORTED_STATUSES = (NoteStatus.RAW, NoteStatus.WIKI)


def note_content_hash(title: str, frontmatter: JSON, body: str) -> str:
    """sha256 over title, frontmatter (key order does not matter) and body."""
    canonical = json.dumps([title, frontmatter or {}, body], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def canonical_note_path(status: str, wing: str, hall: str, slug: str) -> str:
    """Where a note lives in a brain folder: `wiki/<wing>/<hall>/<slug>.md` or `raw/<slug>.md`."""
    if status == NoteStatus.WIKI:
        if wing and not hall and slug.startswith(f"{wing}/"):
            # A wing-qualified slug (`entities/pgvector`, see brain.placement): the file is wiki/entities/pgvector.md.
            slug = slug[len(wing) + 1 :]
        return "/".join(part for part in ("wiki", wing, hall, f"{slug}.md") if part)
    return f"raw/{slug}.md"


class Note(models.Model):
    """One markdown note: a body without frontmatter, plus its frontmatter as JSON.

    `path` is where the note lives in a brain folder (`wiki/<wing>/<hall>/<slug>.md`
    or `raw/<slug>.md`); `content_hash` covers title, frontmatter and body so
    an import can tell unchanged files from edited ones.
    """

    slug = models.CharField(max_length=MAX_SLUG_LENGTH, unique=True)
    title = models.CharField(max_length=MAX_TITLE_LENGTH)
    body = models.TextField(blank=True)
    frontmatter = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=NoteStatus.choices, default=NoteStatus.RAW, db_index=True)
    wing = models.CharField(max_length=MAX_PLACE_LENGTH, blank=True, db_index=True)
    hall = models.CharField(max_length=MAX_PLACE_LENGTH, blank=True, db_index=True)
    path = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    # Who or what wrote it: {"source": "mcp|rest|import|retrospective|ui|...", "session_id", "entries", "method", ...}
    provenance = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=50, blank=True, db_index=True)
    session_id = models.CharField(max_length=MAX_SESSION_ID_LENGTH, blank=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Secrets taken out at the note door (brain.actions.notes._redact_note_fields), as
    # [{field, pattern, count}]: the review page and brain_get show that a secret was removed.
    redactions = models.JSONField(default=list, blank=True)
    # Goes up by one on every change made through an action; a form that saw version N may only
    # save over version N (optimistic concurrency: two reviewers never overwrite each other silently).
    version = models.PositiveIntegerField(default=1)
    # The codebase the note describes (its session's project, its frontmatter `project:`, or a reviewer's choice).
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes")
    # Its anchors checked against the project's branch head (brain.truth): state, at which commit, and for
    # a stale note the evidence of each anchor that no longer holds. Derived: recomputed after every write
    # and every re-verification, so never part of a revision.
    verification_state = models.CharField(
        max_length=16, choices=VerificationState.choices, default=VerificationState.UNVERIFIED, db_index=True
    )
    verified_commit = models.CharField(max_length=64, blank=True)
    verification_evidence = models.JSONField(default=list, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    # Anchors a person declared still true although the code no longer shows them ("still true" in the
    # re-check queue): {anchor key: {"commit", "by", "at"}}. Part of revisions, so the decision is undoable.
    waived_anchors = models.JSONField(default=dict, blank=True)
    # Supersession (brain.actions.do_supersede_note): the successor, when, by whom and why.
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    superseded_at = models.DateTimeField(null=True, blank=True)
    superseded_by_person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    superseded_reason = models.TextField(blank=True)

    objects = NoteQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        # The reviewer role (docs/people.md): the group of that name holds it.
        permissions = [("review_note", "Can promote, reject, merge, edit, re-file, demote notes and undo")]
        indexes = [
            models.Index(fields=["status", "wing", "hall"]),
            # `[[bare-name]]` links look for slugs ending in `/name` (brain.placement): a prefix
            # search on the reversed slug, which this index answers.
            models.Index(OpClass(Reverse("slug"), name="text_pattern_ops"), name="note_slug_reversed"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=NoteStatus.values), name="note_status_valid"),
        ]

    def __str__(self) -> str:
        return self.slug

    # -- state changes (the actions call these inside their transaction) --------

    def compute_hash(self) -> str:
        return note_content_hash(self.title, self.frontmatter, self.body)

    def canonical_path(self) -> str:
        return canonical_note_path(self.status, self.wing, self.hall, self.slug)

    def promote(self, *, reviewer: User | None, wing: str, hall: str = "") -> None:
        self.status = NoteStatus.WIKI
        self.wing, self.hall = wing, hall
        self.reviewed_by = reviewer
        self.reviewed_at = timezone.now()
        self.path = self.canonical_path()

    def reject(self, *, reviewer: User | None, reason: str) -> None:
        self.status = NoteStatus.REJECTED
        self.reviewed_by = reviewer
        self.reviewed_at = timezone.now()
        self.review_note = reason

    def archive(self, *, reason: str = "") -> None:
        self.status = NoteStatus.ARCHIVED
        if reason:
            self.review_note = reason

    @property
    def secret_removed(self) -> bool:
        return bool(self.redactions)

    @property
    def redactions_text(self) -> str:
        """'2 redacted: body (aws_access_key ×1), title (github_token ×1)'; '' when nothing was."""
        return redaction_summary(self.redactions)

    @property
    def is_live(self) -> bool:
        return self.status in EXPORTED_STATUSES

    @property
    def unresolved_anchors(self) -> list[str]:
        """What the note cites that is not in its project's code ("`x` is not in ledgerly at 1a2b3c4"), from its
        last check (brain.truth): told to the writer, shown on the note, never stale."""
        return [
            item.get("message", "") for item in self.verification_evidence or [] if item.get("state") == "unresolved"
        ]

    def snapshot(self) -> NoteSnapshot:
        """The fields a revision records and an undo restores, as JSON."""
        data = {name: getattr(self, name) for name in REVISION_FIELDS}
        data["reviewed_at"] = self.reviewed_at.isoformat() if self.reviewed_at else None
        data["superseded_at"] = self.superseded_at.isoformat() if self.superseded_at else None
        snapshot: NoteSnapshot = json.loads(json.dumps(data, default=str))  # the REVISION_FIELDS, JSON-typed
        return snapshot

    def restore(self, snapshot: JSON) -> None:
        for name in REVISION_FIELDS:
            if name in snapshot:
                setattr(self, name, snapshot[name])
        reviewed_at = snapshot.get("reviewed_at")
        self.reviewed_at = datetime.fromisoformat(reviewed_at) if reviewed_at else None
        if "superseded_at" in snapshot:
            superseded_at = snapshot["superseded_at"]
            self.superseded_at = datetime.fromisoformat(superseded_at) if superseded_at else None


class NoteSnapshot(TypedDict):
    """A note's REVISION_FIELDS as JSON: `NoteRevision.before` and `after`, what an undo restores."""

    slug: str
    title: str
    body: str
    frontmatter: dict[str, Any]
    status: str
    wing: str
    hall: str
    path: str
    content_hash: str
    provenance: dict[str, Any]
    source: str
    session_id: str
    reviewed_by_id: int | None
    reviewed_at: str | None  # ISO 8601
    review_note: str
    waived_anchors: dict[str, Any]
    superseded_by_id: int | None
    superseded_at: str | None  # ISO 8601
    superseded_by_person_id: int | None
    superseded_reason: str


# What a revision keeps of a note: everything a reviewer's action can change (not ids, timestamps of
# the row itself or the version counter).
REVISION_FIELDS = (
    "slug",
    "title",
    "body",
    "frontmatter",
    "status",
    "wing",
    "hall",
    "path",
    "content_hash",
    "provenance",
    "source",
    "session_id",
    "reviewed_by_id",
    "reviewed_at",
    "review_note",
    "waived_anchors",
    "superseded_by_id",
    "superseded_at",
    "superseded_by_person_id",
    "superseded_reason",
)


class NoteRevisionQuerySet(models.QuerySet["NoteRevision"]):
    def undoable(self) -> Self:
        return self.filter(undone_at__isnull=True).exclude(action=NoteRevision.Action.UNDO)


class NoteRevision(models.Model):
    """One change to one note: who, when, which action, and the note's fields before and after.

    Revisions are written by the actions in `brain.actions`, never by views.
    One reviewer action that changes two notes (a merge changes the target and
    archives the raw note) writes two revisions with the same `group`; undoing
    the group restores both.
    """

    class Action(models.TextChoices):
        PROMOTE = "promote", "promote"
        REJECT = "reject", "reject"
        MERGE = "merge", "merge (target)"
        MERGED = "merged", "merged into another note"
        EDIT = "edit", "edit"
        REFILE = "refile", "re-file"
        DEMOTE = "demote", "demote to raw"
        ARCHIVE = "archive", "archive"
        REOPEN = "reopen", "reopen"
        SUPERSEDE = "supersede", "superseded"
        STILL_TRUE = "still_true", "still true (re-anchored)"
        UNDO = "undo", "undo"

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="revisions")
    group = models.UUIDField(default=uuid.uuid4, db_index=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    version_before = models.PositiveIntegerField(default=0)
    version_after = models.PositiveIntegerField(default=0)
    summary = models.CharField(max_length=500, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # For an UNDO revision: the group it undid.
    undoes = models.UUIDField(null=True, blank=True)

    objects = NoteRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["note", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.note_id} {self.action} @ {self.created_at:%Y-%m-%d %H:%M}"

    def changed_fields(self) -> list[str]:
        return [name for name in REVISION_FIELDS if self.before.get(name) != self.after.get(name)]


class AnchorKind(models.TextChoices):
    PATH = "path", "file path"
    SYMBOL = "symbol", "symbol"
    QUOTE = "quote", "quoted lines"
    COMMAND = "command", "command"
    SETTING = "setting", "setting name"


class AnchorState(models.TextChoices):
    HOLDS = "holds", "holds"
    MOVED = "moved", "moved"
    CHANGED = "changed", "changed"
    GONE = "gone", "gone"
    UNCHECKED = "unchecked", "not checked"
    # Never found in the project's code (not this repository's code, or not yet): never stale, said to the writer.
    UNRESOLVED = "unresolved", "not in the code"


class Anchor(models.Model):
    """One thing a note cites in its project's code, and its last check against the branch head.

    Extracted from the note's text at every write (brain.anchors, deterministic) or given explicitly
    (frontmatter `anchors:`). `path` is the file the anchor depends on (the file it names, the file it
    was found in, or its hint): re-verification re-checks an anchor when a commit changes that file.
    """

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="anchors")
    key = models.CharField(max_length=64)  # sha1 of kind, value and the path hint: stable across writes
    kind = models.CharField(max_length=16, choices=AnchorKind.choices)
    value = models.TextField()
    hint = models.CharField(max_length=500, blank=True)  # the file the note ties it to, if any
    explicit = models.BooleanField(default=False)
    path = models.CharField(max_length=500, blank=True, db_index=True)
    state = models.CharField(max_length=16, choices=AnchorState.choices, default=AnchorState.UNCHECKED)
    commit = models.CharField(max_length=64, blank=True)
    location = models.CharField(max_length=600, blank=True)  # path:line where it was found
    # Where it last held (the quote's lines then), what the code says now, the commit that changed it, the hunk.
    evidence = models.JSONField(default=dict, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["note_id", "id"]
        constraints = [models.UniqueConstraint(fields=["note", "key"], name="anchor_unique_key")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.value[:60]}"

    @property
    def holds(self) -> bool:
        return self.state in (AnchorState.HOLDS, AnchorState.MOVED)


class NoteLink(models.Model):
    """source → target_slug; `target` is filled when a note with that slug exists."""

    class Kind(models.TextChoices):
        WIKILINK = "wikilink", "[[wikilink]]"
        RELATED = "related", "frontmatter related"
        LINKS = "links", "frontmatter links"

    source = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="links_out")
    target_slug = models.CharField(max_length=MAX_SLUG_LENGTH, db_index=True)
    target = models.ForeignKey(Note, null=True, blank=True, on_delete=models.SET_NULL, related_name="links_in")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.WIKILINK)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "target_slug", "kind"], name="notelink_unique"),
            models.CheckConstraint(condition=~Q(target_slug=""), name="notelink_target_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} → {self.target_slug}"


class BrainVersion(models.Model):
    """A single row whose counter goes up whenever the searchable corpus changes.

    Search indexes in memory compare their version with this one and apply
    the changes logged in `NoteChange` since; every process sees the same
    number. Writers move it with `brain.indexing.bump_brain_version`. `corpus_id` is new whenever the row is (a new or emptied
    database), so an index never mistakes another corpus for its own.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)
    corpus_id = models.UUIDField(default=uuid.uuid4)

    @classmethod
    def current(cls) -> int:
        return cls.current_with_corpus()[0]

    @classmethod
    def current_with_corpus(cls) -> tuple[int, str]:
        row = cls.objects.filter(pk=1).values_list("version", "corpus_id").first()
        return (row[0], str(row[1])) if row else (0, "")


class NoteChange(models.Model):
    """Which note changed at which corpus version: what a search index applies to catch up.

    `note_id` is not a foreign key (the log outlives deleted notes); NULL means
    every note may have changed. Rows older than `NOTE_CHANGE_KEEP` are pruned
    by the `brain-index-prune` schedule; an index further behind rebuilds.
    """

    version = models.BigIntegerField(db_index=True)
    note_id = models.BigIntegerField(null=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"v{self.version}: note {self.note_id}"


class MirrorFile(models.Model):
    """What the BRAIN_DIR mirror last saw of one file, so it can tell which side changed.

    `disk_hash`/`mtime_ns`/`size` describe the file as last read or written;
    `note_hash` is the note's content_hash at that moment. A file whose bytes
    differ from `disk_hash` was edited on disk; a note whose content_hash
    differs from `note_hash` was changed through the service.
    """

    path = models.CharField(max_length=500, unique=True)
    note = models.ForeignKey(Note, null=True, blank=True, on_delete=models.SET_NULL, related_name="mirror_files")
    disk_hash = models.CharField(max_length=64)
    note_hash = models.CharField(max_length=64, blank=True)
    mtime_ns = models.BigIntegerField(default=0)
    size = models.BigIntegerField(default=0)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return self.path


# md5 of a note's title + "\n" + body, computed by PostgreSQL (NoteChunk.source_hash holds it).
NOTE_SOURCE_HASH = MD5(Concat(F("title"), Value("\n"), F("body"), output_field=TextField()))


class NoteChunk(models.Model):
    """One heading-aware piece of a note (see `brain.chunking`), the unit that gets embedded.

    `content_hash` is the hash of the text the embedder reads (title, heading
    path, text): an embedding is reused while the hash and the model match.
    """

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading_path = models.CharField(max_length=1000, blank=True)
    text = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    # md5 of the note's title + "\n" + body when it was chunked (computed by PostgreSQL,
    # see NOTE_SOURCE_HASH): a note needs re-chunking when it differs.
    source_hash = models.CharField(max_length=32, blank=True, db_index=True)

    class Meta:
        ordering = ["note_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["note", "ordinal"], name="notechunk_unique_ordinal")]

    def __str__(self) -> str:
        return f"{self.note_id}#{self.ordinal}"


class Embedding(models.Model):
    """A chunk's vector under one model. `vector` has no fixed dimension so models of
    different sizes coexist; each model gets its own partial HNSW index over
    `vector::vector(<dims>)` (created by `brain.vectors.ensure_index`)."""

    chunk = models.ForeignKey(NoteChunk, on_delete=models.CASCADE, related_name="embeddings")
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    vector = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chunk", "model"], name="embedding_unique_chunk_model")]
        indexes = [models.Index(fields=["model", "content_hash"])]

    def __str__(self) -> str:
        return f"{self.chunk_id} ({self.model})"


class PassageVector(models.Model):
    """A passage's vector under the passage reader (`brain.passage_reader`): keyed by the digest of the model's
    name and the passage's text, so the same text in two notes, or a note written again unchanged, is read once.
    `vector` is the float32 row as bytes (384 of them, never searched in SQL: looked up by digest)."""

    digest = models.CharField(max_length=64, unique=True)
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.digest[:12]


class AreaDescription(models.Model):
    """What a wing or a hall is about, from its `_index.md` (the Go hyperguild's convention).

    `wiki/_index.md` describes the whole wiki (wing and hall empty),
    `wiki/<wing>/_index.md` a wing, `wiki/<wing>/<hall>/_index.md` a hall.
    These files are descriptions, never notes.
    """

    wing = models.CharField(max_length=MAX_PLACE_LENGTH, blank=True)
    hall = models.CharField(max_length=MAX_PLACE_LENGTH, blank=True)
    title = models.CharField(max_length=MAX_TITLE_LENGTH, blank=True)
    body = models.TextField(blank=True)
    frontmatter = models.JSONField(default=dict, blank=True)
    path = models.CharField(max_length=500)
    content_hash = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["wing", "hall"]
        constraints = [models.UniqueConstraint(fields=["wing", "hall"], name="areadescription_unique_place")]

    def __str__(self) -> str:
        return "/".join(part for part in (self.wing, self.hall) if part) or "(wiki)"


class SimilarNotes(models.Model):
    """The notes most like one note (the brain's hybrid search), with how alike each is: what the review pages read.

    Written in the background after a note changes (`brain.tasks.refresh_similar_notes`) or by the
    note page's deferred panel, never per view; rows made for another text of the note (another
    `content_hash`) are stale and made again. `items`: [{"id", "words", "meaning", "duplicate"}], best first
    (see `brain.similar`).
    """

    note = models.OneToOneField(Note, on_delete=models.CASCADE, primary_key=True, related_name="similar_notes")
    content_hash = models.CharField(max_length=64)
    items = models.JSONField(default=list)
    # Ids of the items flagged as likely duplicates, so the queue can badge a page of notes in one query.
    duplicate_ids = models.JSONField(default=list)
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"similar to {self.note_id}"


class NoteCheckRun(models.Model):
    """One run of a wiki note's `check:` command at one commit of its project's branch (brain.checks).

    Run by the supervisor's test runner in a throwaway copy of that commit's tree, with a test run's limits.
    At most one per (note, commit, command): a head the check already ran at is answered from here. Exit 0
    makes the note *proven at <commit>*; anything else *stale*, with `output` as the evidence.
    """

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="check_runs")
    command = models.CharField(max_length=500)
    commit = models.CharField(max_length=64)
    passed = models.BooleanField(default=False)
    exit_code = models.IntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=32, blank=True)  # exited, timeout… (supervisor.executor.ProcessOutcome)
    output = models.TextField(blank=True)
    seconds = models.FloatField(default=0)  # its cost, as a test run's is recorded
    ran_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-ran_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["note", "commit", "command"], name="note_check_once_per_head")]

    def __str__(self) -> str:
        return f"{self.note_id} at {self.commit[:7]}: {'passed' if self.passed else 'failed'}"
