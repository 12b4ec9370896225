"""Typed tool contracts: one pydantic model for a tool's arguments, one for its result.

    class GetInput(ToolInput):
        slug: Slug                                  # required: no default
        limit: int = Field(10, ge=1, le=50)         # optional, with the default the handler sees
        wing: str | None = Field(None, max_length=100, description="...")   # optional, may be left out

    class GetResult(ToolResult):
        slug: str
        reason: str | None                          # always present, null allowed
        hint: str | None = None                     # left out of the result when None

The tool's inputSchema and outputSchema are `tool_schema(model, ...)` of these (the one place the wire
shape is written), so a JSON Schema is never restated by hand. The rules of that translation:

- No `title`s (pydantic's automatic ones); `description`s come from `Field(description=...)` only (a model's
  docstring is for its reader, not the wire); nested models are written out in place (no `$defs`/`$ref`).
- `ToolInput` is closed (`extra="forbid"`: `additionalProperties: false`); an open one sets `extra="allow"`
  (nothing written: JSON Schema's default). A model with no required field writes no `required` (add
  `json_schema_extra={"required": []}` to its model_config where a pinned schema says `"required": []`).
- A field whose default is None is optional and *not* nullable on the wire (`{"type": "string"}`, not in
  `required`): in an input it means "not given"; in a result it is left out when None (`ToolResult` gives
  such fields pydantic's `exclude_if`). A field typed `X | None` without a default is required and nullable: `{"type": ["X", "null"]}`.
- `dict[str, Any]` is `{"type": "object"}` (an open mapping is JSON Schema's default).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import PydanticUndefined, core_schema

from hyperguild.lib.typed import JsonSchema


class ToolInput(BaseModel):
    """A tool's arguments. Closed: an argument the model does not name is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class CallSession:
    """Marks the argument that names the Claude Code session a call belongs to (`Annotated[str, CallSession()]`):
    the engine records the call's model calls under it. The engine reads no argument by its name."""


@dataclass(frozen=True)
class CallProject:
    """Marks the argument that names the project a call works on (`Annotated[str, CallProject()]`): the engine
    records the call's model calls under it."""


def _carries(annotation: Any, marker: type) -> bool:
    """Whether a field's annotation holds `marker` in an `Annotated[...]`, also inside `X | None`."""
    if get_origin(annotation) is Annotated:
        if any(isinstance(item, marker) for item in annotation.__metadata__):
            return True
        return _carries(get_args(annotation)[0], marker)
    return any(_carries(argument, marker) for argument in get_args(annotation))


def declared_field(model: type[BaseModel], marker: type) -> str:
    """The name of the one argument of `model` marked with `marker` (CallSession, CallProject), or ""."""
    names = [
        name
        for name, info in model.model_fields.items()
        if any(isinstance(item, marker) for item in info.metadata) or _carries(info.annotation, marker)
    ]
    if len(names) > 1:
        raise TypeError(f"{model.__name__} marks {len(names)} arguments as its {marker.__name__}: {names}")
    return names[0] if names else ""


class NoArguments(ToolInput):
    """The arguments of a tool that takes none."""


class ToolResult(BaseModel):
    """A tool's structured result (or a part of one). A field that defaults to None is left out when None."""

    model_config = ConfigDict(extra="forbid")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Before pydantic collects the fields (it reads the class attributes after this hook): a field whose
        # default is None gets `exclude_if=is None`, so the dump (in pydantic-core) leaves it out when None.
        for name in cls.__dict__.get("__annotations__", {}):
            default = cls.__dict__.get(name, PydanticUndefined)
            if default is None:
                setattr(cls, name, Field(None, exclude_if=_is_none))
            elif isinstance(default, FieldInfo) and default.default is None and default.exclude_if is None:
                setattr(cls, name, FieldInfo.merge_field_infos(default, exclude_if=_is_none))
        super().__init_subclass__(**kwargs)


def _is_none(value: Any) -> bool:
    return value is None


class ToolSchema(GenerateJsonSchema):
    """pydantic's JSON Schema, in the shape the MCP tools have always declared (see the module docstring)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        if json_schema.get("additionalProperties") is True:
            del json_schema["additionalProperties"]  # extra="allow": JSON Schema's default, never written
        docstring = schema["cls"].__doc__
        if docstring and json_schema.get("description") == inspect.cleandoc(docstring):
            del json_schema["description"]
        return json_schema

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        inner = schema["schema"]
        if _defaults_to_none(schema):
            # Optional (left out when not given), not nullable: the wire never carries null for it.
            return self.generate_inner(inner["schema"] if inner["type"] == "nullable" else inner)
        if self.mode == "serialization":
            return self.generate_inner(inner)  # a result's field is always there: a default says nothing
        return super().default_schema(schema)

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        kind = inner.get("type")
        if isinstance(kind, str) and kind != "null" and "$ref" not in inner:
            return {**inner, "type": [kind, "null"]}
        return super().nullable_schema(schema)

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        json_schema = super().dict_schema(schema)
        if json_schema.get("additionalProperties") in (True, {}):
            del json_schema["additionalProperties"]
        return json_schema

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        if self.mode == "serialization" and field["type"] == "model-field":
            # A result always carries its fields except the ones left out when None (ToolResult).
            return not _defaults_to_none(field["schema"])
        return super().field_is_required(field, total)

    def generate(self, schema: core_schema.CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        json_schema = super().generate(schema, mode=mode)
        definitions = json_schema.pop("$defs", {})
        return cast(JsonSchemaValue, _inline(json_schema, definitions, ()))


def _defaults_to_none(schema: core_schema.CoreSchema) -> bool:
    return schema["type"] == "default" and schema.get("default", PydanticUndefined) is None


def _inline(value: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """`value` with every `{"$ref": "#/$defs/X", ...}` replaced by X's schema (and the ref's siblings)."""
    if isinstance(value, list):
        return [_inline(item, definitions, seen) for item in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"a tool contract cannot be recursive ({' -> '.join((*seen, name))})")
        siblings = {key: item for key, item in value.items() if key != "$ref"}
        return {**_inline(definitions[name], definitions, (*seen, name)), **_inline(siblings, definitions, seen)}
    return {key: _inline(item, definitions, seen) for key, item in value.items()}


def input_schema(model: type[BaseModel]) -> JsonSchema:
    """The inputSchema of a tool that takes `model`."""
    return cast(JsonSchema, model.model_json_schema(schema_generator=ToolSchema, mode="validation"))


def output_schema(model: type[BaseModel]) -> JsonSchema:
    """The outputSchema of a tool that answers `model`."""
    return cast(JsonSchema, model.model_json_schema(schema_generator=ToolSchema, mode="serialization"))
