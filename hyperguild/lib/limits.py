"""Limits at the door: JSON depth before parsing, text a database cannot store, numbers JSON cannot carry.

    data = loads_limited(body, max_depth=64)   # JSON, or InputRejected with a message a person can act on
    problem = text_problem(value)              # None, or "contains a NUL character (\\u0000)" …
    problem = hostile_value_problem(data)      # the first NUL / lone surrogate / NaN anywhere in decoded JSON

Why here and not in each view: Python's json module recurses, so JSON nested
10,000 deep raises RecursionError (not a ValueError) and becomes a 500; and
PostgreSQL refuses NUL characters and lone UTF-16 surrogates in text, and
NaN in jsonb, with a DataError whose message quotes the SQL. Checking before
the data goes anywhere gives one clear 400 and writes nothing.
"""

from __future__ import annotations

import json
import math
from typing import Any

# The deepest nesting of objects and arrays in any JSON the service accepts (400 above, checked before parsing):
# far above any real request, far below what would exhaust the parser's stack.
JSON_MAX_DEPTH = 64


class InputRejected(ValueError):
    """Input refused before it reached any domain code; `message` says what to change."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def json_depth_exceeds(raw: bytes | str, max_depth: int) -> bool:
    """True when `raw` nests objects/arrays deeper than `max_depth` (brackets inside strings do not count).

    A linear scan without recursion, run before json.loads. Cheap for bodies that cannot be too deep.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    depth = 0
    in_string = False
    escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise InputRejected(f"JSON may not contain {name}: it is not a number JSON allows; send a finite number or null.")


# Python refuses to turn longer digit strings into an int (sys.get_int_max_str_digits, 4300); JSON
# integers longer than this are refused here, with our own message, before Python's own would leak.
JSON_MAX_INT_DIGITS = 4000


def _parse_int(digits: str) -> int:
    if len(digits) > JSON_MAX_INT_DIGITS:
        raise InputRejected(
            f"JSON holds an integer of {len(digits)} digits, over the limit of {JSON_MAX_INT_DIGITS}; send a shorter number."
        )
    return int(digits)


def loads_limited(raw: bytes | str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Decoded JSON, or InputRejected: too deep, not JSON, NaN/Infinity, NUL or a lone surrogate in a string."""
    if json_depth_exceeds(raw, max_depth):
        raise InputRejected(f"JSON is nested deeper than {max_depth} levels; flatten the data.")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
        data = json.loads(text, parse_constant=_refuse_constant, parse_int=_parse_int)
    except InputRejected:
        raise
    except UnicodeDecodeError:
        raise InputRejected("The body is not valid UTF-8.") from None
    except json.JSONDecodeError as exc:
        # The decoder's own short description and where; never the text of any other exception.
        raise InputRejected(f"The body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except (ValueError, RecursionError):
        raise InputRejected("The body is not valid JSON.") from None
    problem = hostile_value_problem(data)
    if problem:
        raise InputRejected(problem)
    return data


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None."""
    if "\x00" in value:
        return "contains a NUL character (\\u0000), which cannot be stored; remove it"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return (
            "contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not valid text; remove it"
        )
    return None


def hostile_value_problem(value: Any, path: str = "") -> str | None:
    """The first string (key or value) or number in decoded JSON that cannot be stored, as a message; else None.

    Iterative, so it also copes with data decoded elsewhere without a depth limit.
    """
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            problem = text_problem(node)
            if problem:
                return f"{where or 'the value'} {problem}."
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{where or 'the value'} is {node!r}, which JSON does not allow; send a finite number or null."
        elif isinstance(node, dict):
            for key, child in node.items():
                key_text = str(key)
                problem = text_problem(key_text)
                if problem:
                    return f"a key in {where or 'the object'} {problem}."
                stack.append((child, f"{where}.{key_text}" if where else key_text))
        elif isinstance(node, list | tuple):
            for index, child in enumerate(node):
                stack.append((child, f"{where}[{index}]"))
    return None
