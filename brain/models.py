"""Notes and the links between them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class NoteStatus(models.TextChoices):
    RAW = "raw", "raw"
    WIKI = "wiki", "wiki"
    REJECTED = "rejected", "rejected"
    ARCHIVED = "archived", "archived"


class NoteQuerySet(models.QuerySet):
    def wiki(self):
        return self.filter(status=NoteStatus.WIKI)

    def raw_queue(self):
        return self.filter(status=NoteStatus.RAW).order_by("-created_at", "-id")

    def searchable(self):
        return self.exclude(status=NoteStatus.ARCHIVED)

    def in_wing(self, wing: str):
        return self.filter(wing=wing)

    def in_hall(self, hall: str):
        return self.filter(hall=hall)


class Note(models.Model):
    """One markdown note: a body without frontmatter, plus its frontmatter as JSON.

    `path` is where the note lives in a brain folder (`wiki/<wing>/<hall>/<slug>.md`
    or `raw/<slug>.md`); `content_hash` covers title, frontmatter and body so
    an import can tell unchanged files from edited ones.
    """

    slug = models.CharField(max_length=200, unique=True)
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    frontmatter = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=NoteStatus.choices, default=NoteStatus.RAW, db_index=True)
    wing = models.CharField(max_length=100, blank=True, db_index=True)
    hall = models.CharField(max_length=100, blank=True, db_index=True)
    path = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    # Who or what wrote it: {"source": "mcp|rest|import|retrospective|ui|...", "session_id", "entries", "method", ...}
    provenance = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=50, blank=True, db_index=True)
    session_id = models.CharField(max_length=200, blank=True, db_index=True)
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

    objects = NoteQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        indexes = [models.Index(fields=["status", "wing", "hall"])]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=NoteStatus.values), name="note_status_valid"),
        ]

    def __str__(self) -> str:
        return self.slug


class NoteLink(models.Model):
    """source → target_slug; `target` is filled when a note with that slug exists."""

    class Kind(models.TextChoices):
        WIKILINK = "wikilink", "[[wikilink]]"
        RELATED = "related", "frontmatter related"
        LINKS = "links", "frontmatter links"

    source = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="links_out")
    target_slug = models.CharField(max_length=200, db_index=True)
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

    Search indexes built in memory compare their version with this one and
    rebuild only when it moved; every process sees the same number.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)

    @classmethod
    def bump(cls) -> None:
        updated = cls.objects.filter(pk=1).update(version=F("version") + 1)
        if not updated:
            cls.objects.get_or_create(pk=1, defaults={"version": 1})

    @classmethod
    def current(cls) -> int:
        row = cls.objects.filter(pk=1).values_list("version", flat=True).first()
        return row or 0
