"""Secret redaction: one place that knows what a secret looks like, used at every door.

    text, found = redact("key AKIA...")        # found: {"aws_access_key": 1}
    value, found = redact_value({"a": [...]})  # every string inside, redacted

Built-in patterns catch AWS keys, OpenAI/GitHub/Slack-style tokens, private
key blocks, bearer tokens and `api_key=...`-style assignments; operators add
one regex a line in `TRAINER_SECRET_PATTERNS_FILE` (read at call time,
compiled once per file name). A match becomes `[REDACTED:<pattern name>]`;
a pattern with a named group `secret` redacts only that part, so the label
(`Bearer `, `api_key = `) stays readable.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# (name, regex). A named group `secret` limits the redaction to that part.
DEFAULT_SECRET_PATTERNS: list[tuple[str, str]] = [
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("aws_secret_key", r"(?i)aws_secret_access_key\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9/+=]{40})"),
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
    ("openai_key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("bearer_token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"),
    (
        "assigned_secret",
        r"(?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password)\b"
        r"['\"]?\s*[:=]\s*['\"]?(?P<secret>[^\s'\"]{8,})",
    ),
]
REDACTED = "[REDACTED:{name}]"


def load_pattern_file(path: str) -> list[tuple[str, str]]:
    """One regex a line; blank lines and lines starting with # are ignored."""
    patterns = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            re.compile(text)
        except re.error as exc:
            raise ImproperlyConfigured(f"TRAINER_SECRET_PATTERNS_FILE {path}, line {number}: bad regex ({exc}).")
        patterns.append((f"custom_{number}", text))
    return patterns


@lru_cache(maxsize=4)
def _compiled(extra_file: str) -> tuple[tuple[str, re.Pattern], ...]:
    patterns = list(DEFAULT_SECRET_PATTERNS)
    if extra_file:
        patterns += load_pattern_file(extra_file)
    return tuple((name, re.compile(regex)) for name, regex in patterns)


def secret_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    return _compiled(settings.TRAINER_SECRET_PATTERNS_FILE or "")


def _redact_into(text: str, found: dict[str, int]) -> str:
    for name, pattern in secret_patterns():
        replacement = REDACTED.format(name=name)

        def substitute(match: re.Match, name=name, replacement=replacement) -> str:
            found[name] = found.get(name, 0) + 1
            if "secret" in match.re.groupindex and match.group("secret") is not None:
                start, end = match.span("secret")
                offset = match.start()
                whole = match.group(0)
                return whole[: start - offset] + replacement + whole[end - offset :]
            return replacement

        text = pattern.sub(substitute, text)
    return text


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, pattern name) of every secret in `text` (the `secret` group's span where there is one)."""
    spans = []
    for name, pattern in secret_patterns():
        for match in pattern.finditer(text):
            group = "secret" if "secret" in pattern.groupindex and match.group("secret") is not None else 0
            spans.append((*match.span(group), name))
    return spans


def redact(text: str) -> tuple[str, dict[str, int]]:
    """(`text` with every secret replaced, how many hits per pattern name)."""
    found: dict[str, int] = {}
    return _redact_into(text, found), found


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """`redact` for every string inside lists and dicts (keys are left alone); other values pass through."""
    found: dict[str, int] = {}

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _redact_into(item, found)
        if isinstance(item, list):
            return [walk(element) for element in item]
        if isinstance(item, dict):
            return {key: walk(element) for key, element in item.items()}
        return item

    return walk(value), found


def add_counts(total: dict[str, int], found: dict[str, int]) -> dict[str, int]:
    """Add `found` (pattern -> hits) into `total` and return it."""
    for name, count in found.items():
        total[name] = total.get(name, 0) + count
    return total


def redact_fields(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict]]:
    """Redact each named value before it is stored: (cleaned values, [{field, pattern, count}] for the record)."""
    cleaned: dict[str, Any] = {}
    flags: list[dict] = []
    for field, value in values.items():
        cleaned[field], found = redact_value(value)
        flags.extend({"field": field, "pattern": pattern, "count": count} for pattern, count in sorted(found.items()))
    return cleaned, flags


def redaction_summary(flags: list[dict]) -> str:
    """'2 redacted: stdout (aws_access_key ×1), ...' for a page or an admin column; '' when nothing was."""
    if not flags:
        return ""
    total = sum(flag.get("count", 0) for flag in flags)
    parts = ", ".join(f"{flag.get('field')} ({flag.get('pattern')} ×{flag.get('count')})" for flag in flags)
    return f"{total} redacted: {parts}"
