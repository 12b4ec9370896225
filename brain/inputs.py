"""One definition of each brain write's input: its fields, their limits and their words.

The MCP tool schemas (`NoteInput.json_schema`), the REST serializers (`NoteInput.serializer`) and the
browser forms (`Field.form_field`) are all derived from the definitions below, so a limit is stated
once (the numbers themselves are in `brain.limits`). These checks only bound shapes and sizes at the door; the rules themselves (what a title or a
slug may contain, the body's byte limit BRAIN_MAX_NOTE_BYTES, frontmatter limits, secrets, slug
numbering) are the actions' (`brain.actions`), which every door calls.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, get_args

from django import forms
from pydantic import Field as Constraints
from rest_framework import serializers

from brain.limits import (
    MAX_PLACE_LENGTH,
    MAX_REASON_LENGTH,
    MAX_SESSION_ID_LENGTH,
    MAX_SLUG_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    MAX_TITLE_LENGTH,
)
from brain.models import NoteStatus

# -- typed fields (pydantic): the MCP tools' input models take these -----------------------------

Tag = Annotated[str, Constraints(min_length=1, max_length=MAX_TAG_LENGTH)]
Tags = Annotated[
    list[Tag],
    Constraints(max_length=MAX_TAGS, description="only notes whose frontmatter `tags` holds every one of these"),
]
# A status filter: a note status, or "any" (every status; for search, every status but archived).
StatusFilter = Literal["raw", "wiki", "rejected", "archived", "any"]
assert list(get_args(StatusFilter)) == [*NoteStatus.values, "any"], "StatusFilter must follow NoteStatus"


@dataclass(frozen=True)
class Text:
    """A string field.

    `strip=False` hands REST text to the action as sent (a body, a slug the action checks as given); browser
    forms trim one-line inputs and keep a textarea's text as typed. `min_length=1` also means "not blank".
    """

    description: str = ""
    min_length: int = 0
    max_length: int | None = None
    strip: bool = True
    textarea: bool = False

    def json_schema(self) -> dict:
        schema: dict[str, Any] = {"type": "string"}
        if self.min_length:
            schema["minLength"] = self.min_length
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        if self.description:
            schema["description"] = self.description
        return schema

    def serializer_field(self, *, required: bool) -> serializers.Field:
        return serializers.CharField(
            max_length=self.max_length, required=required, allow_blank=not (required or self.min_length),
            trim_whitespace=self.strip,
        )  # fmt: skip

    def form_field(self, *, required: bool = True) -> forms.Field:
        return forms.CharField(
            max_length=self.max_length, required=required, strip=not self.textarea,
            widget=forms.Textarea if self.textarea else None,
        )  # fmt: skip


class FrontmatterField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("frontmatter must be a mapping of keys to values (a JSON object).")
        return value


@dataclass(frozen=True)
class Mapping:
    """A JSON object (frontmatter); its limits are `hyperguild.lib.markdown.check_frontmatter_limits`, run by the actions."""

    description: str = ""

    def json_schema(self) -> dict:
        return {"type": "object", "description": self.description}

    def serializer_field(self, *, required: bool) -> serializers.Field:
        return FrontmatterField(required=required)


@dataclass(frozen=True)
class Integer:
    description: str = ""
    minimum: int | None = None

    def json_schema(self) -> dict:
        schema: dict[str, Any] = {"type": "integer"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.description:
            schema["description"] = self.description
        return schema

    def serializer_field(self, *, required: bool) -> serializers.Field:
        return serializers.IntegerField(min_value=self.minimum, required=required)


@dataclass(frozen=True)
class StringList:
    """A list of short strings (explicit anchors)."""

    description: str = ""
    max_items: int = 200
    max_length: int = 500

    def json_schema(self) -> dict:
        return {
            "type": "array", "items": {"type": "string", "minLength": 1, "maxLength": self.max_length},
            "maxItems": self.max_items, "description": self.description,
        }  # fmt: skip

    def serializer_field(self, *, required: bool) -> serializers.Field:
        return serializers.ListField(
            child=serializers.CharField(max_length=self.max_length), max_length=self.max_items, required=required
        )


Field = Text | Mapping | Integer | StringList


@dataclass(frozen=True)
class NoteInput:
    """The arguments of one write: fields in order, and which of them are required."""

    fields: dict[str, Field]
    required: tuple[str, ...] = ()

    def json_schema(self) -> dict:
        """The MCP tool's input schema (JSON Schema, no other property allowed)."""
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {name: spec.json_schema() for name, spec in self.fields.items()},
            "required": list(self.required),
        }

    def arguments(self, data: dict[str, Any]) -> dict[str, Any]:
        """The action's keyword arguments from checked input: this write's fields that were given, by name
        (a field left out keeps the action's default). The field names are the action's parameter names."""
        return {name: data[name] for name in self.fields if name in data}

    def serializer(self, name: str, **extra_fields: serializers.Field) -> type[serializers.Serializer]:
        """A DRF serializer of the same fields (plus REST-only ones such as `raw`)."""
        declared = {
            field_name: spec.serializer_field(required=field_name in self.required)
            for field_name, spec in self.fields.items()
        }
        return type(name, (serializers.Serializer,), {**declared, **extra_fields})


# -- the fields ---------------------------------------------------------------------------------

TITLE = Text(min_length=1, max_length=MAX_TITLE_LENGTH, description="a short descriptive title")
BODY = Text(
    min_length=1, strip=False, textarea=True,
    description="markdown without frontmatter; [[slug]] links to other notes",
)  # fmt: skip
FRONTMATTER = Mapping("extra metadata (a mapping); `related:` and `links:` lists become links to other notes")
SLUG = Text(
    min_length=1,
    max_length=MAX_SLUG_LENGTH,  # the rule itself is brain.slugs.validate_slug, run by the actions
    strip=False,
    description="optional path-safe slug (lowercase a-z0-9- segments joined by /); derived from the title if omitted",
)
SEGMENT = Text(max_length=MAX_PLACE_LENGTH, description="lowercase a-z, 0-9 and '-'")
WING = replace(SEGMENT, min_length=1, description="first folder under wiki/, e.g. 'concepts'")
HALL = replace(SEGMENT, description="second folder under wiki/, optional")
SESSION_ID = Text(max_length=MAX_SESSION_ID_LENGTH, description="the Claude Code session this note came from")
TAG = Text(min_length=1, max_length=MAX_TAG_LENGTH)
VERSION = Integer(minimum=1, description="the note's version as brain_get (or the last write) showed it")
REASON = Text(max_length=MAX_REASON_LENGTH, description="why, shown in the note's history")
ANCHORS = StringList(
    description=(
        "what the note cites in its project's code, beyond what is found in its text: file paths, symbols "
        "(`Class.method`), quoted lines, commands, settings; 'kind: value' forces a kind (docs/truth.md)"
    )
)

# -- the writes ---------------------------------------------------------------------------------

# A note for raw: brain_write, brain_ingest_raw, POST /write.
RAW_NOTE = NoteInput(
    {"title": TITLE, "body": BODY, "frontmatter": FRONTMATTER, "slug": SLUG, "session_id": SESSION_ID,
     "anchors": ANCHORS},
    required=("title", "body"),
)
# A document straight into the wiki: brain_ingest, POST /ingest (which also takes raw notes).
WIKI_NOTE = NoteInput(
    {"title": TITLE, "body": BODY, "wing": WING, "hall": HALL, "frontmatter": FRONTMATTER, "slug": SLUG,
     "anchors": ANCHORS},
    required=("title", "body", "wing"),
)
# A change to a note's text: brain_edit (the browser's edit form takes title and body).
NOTE_EDIT = NoteInput(
    {"slug": SLUG, "version": VERSION, "title": TITLE, "body": BODY, "frontmatter": FRONTMATTER},
    required=("slug", "version"),
)
NOTE_ARCHIVE = NoteInput({"slug": SLUG, "version": VERSION, "reason": REASON}, required=("slug", "version"))
