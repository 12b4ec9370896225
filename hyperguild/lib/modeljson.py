"""A model's JSON answer, parsed and checked in one place (the LLM gateway and the claude worker).

Models wrap JSON in ```json fences or put a sentence around it; this takes
the first object it can find: the whole text, a fenced block, or the
outermost {...}. With a schema, the object is also validated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from hyperguild.lib.schema import format_schema_error, schema_problems

_FENCED = re.compile(r"```(?:json|JSON)?\s*(.*?)\s*```", re.DOTALL)


class ModelJSONError(ValueError):
    """The answer holds no JSON object, or the object breaks the schema (then `data` is the object)."""

    def __init__(self, problem: str, *, data: dict[str, Any] | None = None):
        super().__init__(f"the answer {problem}")
        self.problem = problem
        self.data = data


def parse_model_json(answer: str | dict[str, Any] | None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object in a model's answer (text, or an already-structured object), valid against `schema`.

    Raises ModelJSONError: "is not JSON (...)", "is JSON but a list, not an object",
    "does not match the schema: '<path>': <what>" (the first violation by path).
    """
    data = answer if isinstance(answer, dict) else _first_object(answer)
    if schema is not None:
        problems = schema_problems(schema, data)
        if problems:
            raise ModelJSONError(f"does not match the schema: {format_schema_error(problems[0])}", data=data)
    return data


def _first_object(text: str | None) -> dict[str, Any]:
    if not isinstance(text, str):
        raise ModelJSONError(f"is not text but {type(text).__name__}")
    stripped = text.strip()
    candidates = [stripped, *_FENCED.findall(stripped)]
    first, last = stripped.find("{"), stripped.rfind("}")
    if 0 <= first < last:
        candidates.append(stripped[first : last + 1])
    first_error: ValueError | None = None
    not_an_object: Any = None
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            first_error = first_error or exc
            continue
        if isinstance(value, dict):
            return value
        if not_an_object is None:
            not_an_object = value
    if not_an_object is not None:
        raise ModelJSONError(f"is JSON but a {type(not_an_object).__name__}, not an object")
    detail = (
        f" ({first_error.msg} at position {first_error.pos})" if isinstance(first_error, json.JSONDecodeError) else ""
    )
    raise ModelJSONError(f"is not JSON{detail}")
