"""One definition of each brain input: its fields, their limits and their words, as pydantic models.

The MCP tools take these models (their inputSchemas are generated from them, hyperguild.mcp.contracts), the
REST serializers are derived from them (`serializer_for`) and the browser forms take their fields from
them (`form_field`), so a limit is stated once (the numbers themselves are in `brain.limits`). These checks
only bound shapes and sizes at the door; the rules themselves (what a title or a slug may contain, the
body's byte limit BRAIN_MAX_NOTE_BYTES, frontmatter limits, secrets, slug numbering) are the actions'
(`brain.actions`), which every door calls.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Le, MaxLen, MinLen
from django import forms
from pydantic import BaseModel
from pydantic import Field as Constraints
from pydantic.fields import FieldInfo
from rest_framework import serializers

from brain.limits import (
    MAX_PLACE_LENGTH,
    MAX_QUERY_LENGTH,
    MAX_REASON_LENGTH,
    MAX_SEARCH_LIMIT,
    MAX_SESSION_ID_LENGTH,
    MAX_SLUG_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    MAX_TITLE_LENGTH,
)
from brain.models import NoteStatus
from hyperguild.mcp.contracts import CallSession, ToolInput


@dataclass(frozen=True)
class Verbatim:
    """Marks a text field that REST hands to the action as sent (not trimmed): a body, a slug the action checks."""


@dataclass(frozen=True)
class Textarea:
    """Marks a text field the browser shows as a textarea and keeps as typed (one-line inputs are trimmed)."""


# -- the fields ---------------------------------------------------------------------------------

Title = Annotated[str, Constraints(min_length=1, max_length=MAX_TITLE_LENGTH, description="a short descriptive title")]
Body = Annotated[
    str,
    Constraints(min_length=1, description="markdown without frontmatter; [[slug]] links to other notes"),
    Verbatim(),
    Textarea(),
]
Frontmatter = Annotated[
    dict[str, Any],
    Constraints(description="extra metadata (a mapping); `related:` and `links:` lists become links to other notes"),
]
Slug = Annotated[
    str,
    Constraints(
        min_length=1,
        max_length=MAX_SLUG_LENGTH,  # the rule itself is brain.slugs.validate_slug, run by the actions
        description="optional path-safe slug (lowercase a-z0-9- segments joined by /); derived from the title if omitted",
    ),
    Verbatim(),
]
# A slug named as a note to find (not one to write): the same limits, its own words.
NoteSlug = Annotated[str, Constraints(min_length=1, max_length=MAX_SLUG_LENGTH), Verbatim()]
Segment = Annotated[str, Constraints(max_length=MAX_PLACE_LENGTH, description="lowercase a-z, 0-9 and '-'")]
Wing = Annotated[Segment, Constraints(min_length=1, description="first folder under wiki/, e.g. 'concepts'")]
Hall = Annotated[Segment, Constraints(description="second folder under wiki/, optional")]
SessionId = Annotated[
    str,
    CallSession(),
    Constraints(max_length=MAX_SESSION_ID_LENGTH, description="the Claude Code session this note came from"),
]
Tag = Annotated[str, Constraints(min_length=1, max_length=MAX_TAG_LENGTH)]
Tags = Annotated[
    list[Tag],
    Constraints(max_length=MAX_TAGS, description="only notes whose frontmatter `tags` holds every one of these"),
]
Version = Annotated[int, Constraints(ge=1, description="the note's version as brain_get (or the last write) showed it")]
Reason = Annotated[str, Constraints(max_length=MAX_REASON_LENGTH, description="why, shown in the note's history")]
Anchor = Annotated[str, Constraints(min_length=1, max_length=500)]
Anchors = Annotated[
    list[Anchor],
    Constraints(
        max_length=200,
        description=(
            "what the note cites in its project's code, beyond what is found in its text: file paths, symbols "
            "(`Class.method`), quoted lines, commands, settings; 'kind: value' forces a kind (docs/truth.md)"
        ),
    ),
]
# A status filter: a note status, or "any" (every status; for search, every status but archived).
StatusFilter = Literal["raw", "wiki", "rejected", "archived", "any"]
assert list(get_args(StatusFilter)) == [*NoteStatus.values, "any"], "StatusFilter must follow NoteStatus"

# -- the writes (the field names are the actions' parameter names) --------------------------------


class RawNoteInput(ToolInput):
    """A note for raw: brain_write, brain_ingest_raw, POST /write."""

    title: Title
    body: Body
    frontmatter: Frontmatter | None = None
    slug: Slug | None = None
    session_id: SessionId | None = None
    anchors: Anchors | None = None


class WikiNoteInput(ToolInput):
    """A document straight into the wiki: brain_ingest, POST /ingest (which also takes raw notes)."""

    title: Title
    body: Body
    wing: Wing
    hall: Hall | None = None
    frontmatter: Frontmatter | None = None
    slug: Slug | None = None
    anchors: Anchors | None = None


class NoteEditInput(ToolInput):
    """A change to a note's text: brain_edit (the browser's edit form takes title and body)."""

    slug: Slug
    version: Version
    title: Title | None = None
    body: Body | None = None
    frontmatter: Frontmatter | None = None


class NoteArchiveInput(ToolInput):
    """brain_archive."""

    slug: Slug
    version: Version
    reason: Reason | None = None


# -- the search (brain_query, POST /query; the browser's search filters) --------------------------


class QueryInput(ToolInput):
    query: str = Constraints(min_length=1, max_length=MAX_QUERY_LENGTH, description="words to search for")
    limit: int = Constraints(10, ge=1, le=MAX_SEARCH_LIMIT)
    wing: Segment | None = None
    hall: Segment | None = None
    status: StatusFilter = "wiki"
    include_raw: bool = Constraints(
        False, description="with status wiki: also unreviewed raw notes (notes just written), each hit with its status"
    )
    tags: Tags | None = None
    include_superseded: bool = Constraints(
        False, description="also notes a newer note superseded (left out by default; each hit names its successor)"
    )


Input = TypeVar("Input", bound=BaseModel)


def given(model: type[Input], data: Mapping[str, Any]) -> Input:
    """`model` from the keys of `data` it names (other keys, such as REST's `raw`, are left out)."""
    return model.model_validate({name: data[name] for name in model.model_fields if name in data})


# -- REST serializers and form fields, derived from the models ---------------------------------------


@dataclass(frozen=True)
class _Spec:
    """What a door needs to know of one field: its type, limits and words."""

    kind: Any  # str, int, bool, dict or list (a Literal is str with choices)
    required: bool
    description: str
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    verbatim: bool = False
    textarea: bool = False
    choices: tuple[str, ...] = ()
    item: _Spec | None = None
    default: Any = None


def _spec(annotation: Any, info: FieldInfo | None = None) -> _Spec:
    """The door-neutral description of a field (its annotation, and its FieldInfo when it is a model's field)."""
    if info is None:
        info = FieldInfo.from_annotation(annotation)
    kind, metadata, description = info.annotation, list(info.metadata), info.description
    if get_origin(kind) in (Union, types.UnionType):  # `X | None`: optional; the door's own "not given"
        inner = FieldInfo.from_annotation(next(arg for arg in get_args(kind) if arg is not type(None)))
        kind, metadata, description = inner.annotation, [*inner.metadata, *metadata], description or inner.description
    values: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, MinLen):
            values["min_length"] = item.min_length
        elif isinstance(item, MaxLen):
            values["max_length"] = item.max_length
        elif isinstance(item, Ge):
            values["minimum"] = item.ge
        elif isinstance(item, Le):
            values["maximum"] = item.le
        elif isinstance(item, Verbatim):
            values["verbatim"] = True
        elif isinstance(item, Textarea):
            values["textarea"] = True
    origin = get_origin(kind)
    if origin is Literal:
        values["choices"], kind = tuple(get_args(kind)), str
    elif origin is list:
        values["item"], kind = _spec(get_args(kind)[0]), list
    elif origin is dict:
        kind = dict
    default = info.get_default(call_default_factory=True) if not info.is_required() else None
    return _Spec(kind=kind, required=info.is_required(), description=description or "", default=default, **values)


def _serializer_field(spec: _Spec) -> serializers.Field:
    optional: dict[str, Any] = {"required": spec.required, "help_text": spec.description or None}
    if not spec.required and spec.default is not None:
        optional = {"default": spec.default, "help_text": spec.description or None}
    if spec.choices:
        return serializers.ChoiceField(choices=list(spec.choices), **optional)
    if spec.kind is str:
        return serializers.CharField(
            max_length=spec.max_length,
            allow_blank=not (spec.required or spec.min_length),
            trim_whitespace=not spec.verbatim,
            **optional,
        )
    if spec.kind is bool:
        return serializers.BooleanField(**optional)
    if spec.kind is int:
        return serializers.IntegerField(min_value=spec.minimum, max_value=spec.maximum, **optional)
    if spec.kind is dict:
        return MappingField(**optional)
    if spec.kind is list and spec.item is not None:
        return serializers.ListField(child=_serializer_field(spec.item), max_length=spec.max_length, **optional)
    raise TypeError(f"no REST field for {spec.kind!r}")


class MappingField(serializers.JSONField):
    """A JSON object (frontmatter); its limits are `hyperguild.lib.markdown.check_frontmatter_limits`, run by the actions."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("frontmatter must be a mapping of keys to values (a JSON object).")
        return value


@cache
def serializer_for(model: type[BaseModel]) -> type[serializers.Serializer]:
    """A DRF serializer of `model`'s fields with their limits (DRF's own error messages and format)."""
    declared = {name: _serializer_field(_spec(info.annotation, info)) for name, info in model.model_fields.items()}
    return type(f"{model.__name__}Serializer", (serializers.Serializer,), declared)


def rest_field(model: type[BaseModel], name: str, *, required: bool | None = None) -> serializers.Field:
    """One field of `model` as a DRF field (for a REST body that adds or loosens fields)."""
    info = model.model_fields[name]
    spec = _spec(info.annotation, info)
    if required is not None:
        spec = replace(spec, required=required, default=None)
    return _serializer_field(spec)


def form_field(model: type[BaseModel], name: str, *, required: bool = True) -> forms.Field:
    """One text field of `model` as a browser form field: the same limits; one-line inputs trimmed."""
    info = model.model_fields[name]
    spec = _spec(info.annotation, info)
    if spec.kind is not str:
        raise TypeError(f"{model.__name__}.{name} is not text: no form field for it")
    return forms.CharField(
        max_length=spec.max_length,
        required=required,
        strip=not spec.textarea,
        widget=forms.Textarea if spec.textarea else None,
    )
