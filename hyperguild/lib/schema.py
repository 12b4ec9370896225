"""JSON Schema violations in one wording, for MCP arguments, REST bodies, model answers and exports.

problems = schema_problems(schema_or_validator, data)   # [] when valid, else ordered by path
format_schema_errors(problems)                          # "'limit': 0 is less than the minimum of 1; ..."
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError


def schema_problems(schema: Mapping[str, Any] | Draft202012Validator, data: Any) -> list[ValidationError]:
    """Every violation of `schema` (a schema or a compiled validator) by `data`, ordered by where it is."""
    validator = schema if isinstance(schema, Draft202012Validator) else Draft202012Validator(schema)
    return sorted(validator.iter_errors(data), key=lambda error: [str(part) for part in error.absolute_path])


def error_path(error: ValidationError) -> str:
    """Where the violation is, as "a/0/b"; "" at the top level."""
    return "/".join(str(part) for part in error.absolute_path)


def error_message(error: ValidationError) -> str:
    """What is wrong, in words a caller acts on ("'name' is required")."""
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    return error.message


def format_schema_error(error: ValidationError) -> str:
    """ "'where': what", or just "what" for a violation at the top level (a missing or unknown key)."""
    path = error_path(error)
    return f"'{path}': {error_message(error)}" if path else error_message(error)


def format_schema_errors(errors: Iterable[ValidationError], *, separator: str = "; ") -> str:
    return separator.join(format_schema_error(error) for error in errors)
