"""Hypothesis strategies for fuzzing the doors: values drawn from a JSON Schema, then hostile variants.

`from_schema(schema)` covers the subset of JSON Schema the tools use (type, enum, const,
string length/pattern, number bounds, arrays, objects with required/properties, anyOf/oneOf).
`hostile_values()` are what an attacker or a broken client sends: NUL, lone surrogates,
control characters, huge and deeply nested values, wrong types.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

HOSTILE_STRINGS = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "../../etc/passwd",
    "/etc/passwd",
    "-rf",
    "--output=/tmp/x",
    "<script>alert(1)</script>",
    "'; DROP TABLE brain_note; --",
    "\u202e\u200b\ufeff",
    "%00",
    "\\u0000",
    "${HOME}",
    "$(id)",
    "a" * 5000,
    "é" * 3000,
    " ",
    "",
    "[[" * 50,
    "---\nx: [" * 20,
]

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(HOSTILE_STRINGS),
)

ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def hostile_values() -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(HOSTILE_STRINGS),
        st.text(alphabet=st.characters(codec=None, categories=("Cc", "Cs", "Co", "Zs")), max_size=20),
        st.sampled_from([deep(20), deep(60), [[[[[[[[[[]]]]]]]]]], 2**63, -(2**63) - 1, 10**30, -1, 0, 1e308, -0.0]),
        ANY_JSON,
    )


def _string(schema: dict) -> st.SearchStrategy:
    min_size = int(schema.get("minLength", 0))
    max_size = int(schema.get("maxLength", max(min_size, 60)))
    max_size = min(max_size, max(min_size, 200))
    pattern = schema.get("pattern")
    if pattern:
        try:
            re.compile(pattern)
            return st.from_regex(pattern, fullmatch=True).filter(lambda s: min_size <= len(s) <= max_size)
        except re.error:
            pass
    if schema.get("format") == "date-time":
        return st.datetimes().map(lambda d: d.isoformat())
    return st.text(min_size=min_size, max_size=max_size)


def _number(schema: dict, integer: bool) -> st.SearchStrategy:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if schema.get("exclusiveMinimum") is not None:
        low = schema["exclusiveMinimum"] + (1 if integer else 1e-9)
    if schema.get("exclusiveMaximum") is not None:
        high = schema["exclusiveMaximum"] - (1 if integer else 1e-9)
    if integer:
        return st.integers(min_value=None if low is None else int(low), max_value=None if high is None else int(high))
    return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)


def from_schema(schema: Any, depth: int = 0) -> st.SearchStrategy:
    """Values valid (or nearly so) for `schema`."""
    if not isinstance(schema, dict) or depth > 6:
        return ANY_JSON
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of(
                [
                    from_schema({**{k: v for k, v in schema.items() if k != key}, **option}, depth + 1)
                    for option in schema[key]
                ]
            )
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": one}, depth + 1) for one in kind])
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _number(schema, integer=True)
    if kind == "number":
        return _number(schema, integer=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        min_items = int(schema.get("minItems", 0))
        max_items = min(int(schema.get("maxItems", min_items + 3)), min_items + 3)
        return st.lists(from_schema(schema.get("items", {}), depth + 1), min_size=min_items, max_size=max_items)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = [name for name in schema.get("required", []) if name in properties]
        optional = [name for name in properties if name not in required]
        return st.fixed_dictionaries(
            {name: from_schema(properties[name], depth + 1) for name in required},
            optional={name: from_schema(properties[name], depth + 1) for name in optional},
        )
    return ANY_JSON


@st.composite
def tool_arguments(draw, schema: dict) -> Any:
    """Arguments for a tool: valid ones, valid ones with one field made hostile, or anything at all."""
    choice = draw(st.sampled_from(["valid", "valid", "mutated", "mutated", "extra", "missing", "anything"]))
    if choice == "anything":
        return draw(st.one_of(ANY_JSON, hostile_values()))
    value = draw(from_schema(schema))
    if not isinstance(value, dict):
        return value
    value = dict(value)
    properties = list((schema.get("properties") or {}).keys())
    if choice == "mutated" and properties:
        name = draw(st.sampled_from(properties))
        value[name] = draw(hostile_values())
    elif choice == "extra":
        value[draw(st.sampled_from(["unknown", "__proto__", "\x00", "\ud800"]))] = draw(hostile_values())
    elif choice == "missing" and value:
        value.pop(draw(st.sampled_from(sorted(value))))
    return value
