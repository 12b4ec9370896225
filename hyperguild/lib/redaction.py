"""Secret redaction: one place that knows what a secret looks like, used at every door.

    text, found = redact("key AKIA...")        # found: {"aws_access_key": 1}
    value, found = redact_value({"a": [...]})  # every string inside, redacted

The detectors, in order (the first to match a stretch of text names it):

1. hyperguild's own personal tokens (`hgp_…`, people.auth.PERSONAL_TOKEN_PREFIX) and whole JWTs;
2. the regex plugins of `detect-secrets` (Yelp's maintained detector, pinned in requirements.txt)
   listed in DETECT_SECRETS_PLUGINS: AWS, Stripe, JWTs (only formally valid ones), URLs with a
   password (`postgres://user:pass@…`), GitHub, GitLab, Slack, OpenAI, SendGrid, PyPI, npm, …;
3. our own patterns for what those miss (Google API keys `AIza…`, whole PEM private key blocks,
   `sk-…` keys of any shape, bearer tokens, `api_key=…`-style assignments);
4. the operator's, one regex a line in `TRAINER_SECRET_PATTERNS_FILE` (read at call time,
   compiled once per file name).

Text is first normalised for invisible characters (zero-width spaces and joiners, soft hyphens,
word joiners, BOMs, bidi controls): `AKIA\u200b…` is an AWS key all the same. When a secret is
found the stored text is the normalised one; text without secrets is returned exactly as given.
A match becomes `[REDACTED:<pattern name>]`; a pattern with a named group `secret` (or a plugin
listed with its secret group) redacts only that part, so the label (`Bearer `, `api_key = `,
`postgres://user:`) stays readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# hyperguild's personal tokens: `hgp_` + 51 characters (people.auth.new_personal_token). The 12-character
# prefix the Tokens page shows to name a token ("hgp_3f9a2c1b") is not a secret and is left alone.
OWN_TOKEN_PATTERN = ("hyperguild_token", r"\bhgp_[A-Za-z0-9_-]{20,}")
# A whole JWT, signature included (detect-secrets' own regex stops after the payload), checked by its plugin.
WHOLE_JWT_PATTERN = ("jwt", r"\beyJ[A-Za-z0-9_-]+={0,2}\.[A-Za-z0-9_-]+={0,2}\.[A-Za-z0-9_-]*")

# detect-secrets' regex plugins (their `denylist`), with the name a hit is counted under and, for plugins whose
# regex captures the secret in a group behind a readable label, that group. Left out on purpose: the
# high-entropy and keyword plugins (they flag commit hashes, checksums and prose), IP addresses (not secrets),
# the private-key plugin (it matches the BEGIN line only; our pattern takes the whole block) and the IBM and
# Artifactory/Cloudant/Softlayer plugins (keyword-context heuristics, noisy on prose), and Telegram's (a regex
# that starts with digits costs a full scan of every text for a rare kind).
DETECT_SECRETS_PLUGINS: list[tuple[type[RegexBasedDetector], str, int, tuple[str, ...]]] = [
    (AWSKeyDetector, "aws_access_key", 0, ("a3t", "abia", "acca", "akia", "asia", "aws")),
    (StripeDetector, "stripe_key", 0, ()),
    (JwtTokenDetector, "jwt", 0, ()),
    (BasicAuthDetector, "url_password", 1, ()),
    (GitHubTokenDetector, "github_token", 0, ()),
    (GitLabTokenDetector, "gitlab_token", 0, ()),
    (SlackDetector, "slack_token", 0, ("xox", "hooks.slack.com")),
    (OpenAIDetector, "openai_key", 0, ()),
    (SendGridDetector, "sendgrid_key", 0, ()),
    (PypiTokenDetector, "pypi_token", 0, ()),
    (NpmDetector, "npm_token", 1, ()),
    (AzureStorageKeyDetector, "azure_storage_key", 0, ()),
    (DiscordBotTokenDetector, "discord_token", 0, ()),
    (MailchimpDetector, "mailchimp_key", 0, ("-us",)),
    (SquareOAuthDetector, "square_oauth", 0, ()),
    (TwilioKeyDetector, "twilio_key", 0, ()),
]
# Speed (redaction runs on every write): a regex that does not start with a literal scans the whole text, a
# few hundred µs per 10 KB each. Such detectors name needles, lower-case words one of which must be in the
# (lower-cased) text for the regex to match at all; without one, the regex is not run. Measured by
# bench/redaction.py (bench/RESULTS.md).
NEEDLES: dict[str, tuple[str, ...]] = {
    "hyperguild_token": ("hgp_",),
    "jwt": ("eyj",),
    "aws_access_key": ("akia", "asia", "agpa", "aida", "aroa"),
    "aws_secret_key": ("aws_secret_access_key",),
    "google_api_key": ("aiza",),
    "openai_key": ("sk-",),
    "stripe_key": ("k_live_", "k_test_"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "bearer_token": ("bearer",),
    "assigned_secret": ("api", "token", "secret", "password"),
}
# A plugin's own check that a match really is one (a JWT's first two parts must decode to JSON).
PLUGIN_VALIDATORS: dict[type, Callable[[str], bool]] = {JwtTokenDetector: JwtTokenDetector.is_formally_valid}

# (name, regex), after the plugins. A named group `secret` limits the redaction to that part.
DEFAULT_SECRET_PATTERNS: list[tuple[str, str]] = [
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("aws_secret_key", r"(?i)aws_secret_access_key\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9/+=]{40})"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
    ("openai_key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("stripe_key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("bearer_token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"),
    (
        "assigned_secret",
        r"(?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password)\b"
        r"['\"]?\s*[:=]\s*['\"]?(?P<secret>[^\s'\"]{8,})",
    ),
]
# Characters that show nothing and split a secret so no pattern sees it: zero-width space/non-joiner/joiner,
# word joiner and invisible operators, BOM, soft hyphen, Mongolian vowel separator, bidi marks and controls.
INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
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


class Detector:
    """One compiled regex: its name, the group that is the secret (0: the whole match), an optional check of a
    match, and the needles (NEEDLES) one of which a text must hold for the regex to be worth running."""

    __slots__ = ("name", "pattern", "group", "valid", "needles")

    def __init__(
        self,
        name: str,
        pattern: re.Pattern[str],
        group: int | str = 0,
        valid: Callable[[str], bool] | None = None,
        needles: tuple[str, ...] = (),
    ) -> None:
        self.name, self.pattern, self.group, self.valid, self.needles = name, pattern, group, valid, needles

    def may_match(self, lowered: str) -> bool:
        return not self.needles or any(needle in lowered for needle in self.needles)

    def secret_group(self, match: re.Match[str]) -> int | str:
        if self.group and match.group(self.group) is not None:
            return self.group
        return 0

    def accepts(self, match: re.Match[str]) -> bool:
        return self.valid is None or self.valid(match.group(0))


def _detector(name: str, regex: str, needles: tuple[str, ...] = ()) -> Detector:
    pattern = re.compile(regex)
    return Detector(name, pattern, "secret" if "secret" in pattern.groupindex else 0, needles=needles)


@lru_cache(maxsize=4)
def _compiled(extra_file: str) -> tuple[Detector, ...]:
    detectors = [
        _detector(*OWN_TOKEN_PATTERN, NEEDLES["hyperguild_token"]),
        Detector(
            WHOLE_JWT_PATTERN[0],
            re.compile(WHOLE_JWT_PATTERN[1]),
            0,
            JwtTokenDetector.is_formally_valid,
            NEEDLES["jwt"],
        ),
    ]
    for plugin, name, group, needles in DETECT_SECRETS_PLUGINS:
        # each plugin class sets a tuple of patterns over the abstract property `denylist`
        patterns: Iterable[re.Pattern[str]] = plugin.denylist  # type: ignore[assignment]
        detectors += [Detector(name, pattern, group, PLUGIN_VALIDATORS.get(plugin), needles) for pattern in patterns]
    detectors += [_detector(name, regex, NEEDLES.get(name, ())) for name, regex in DEFAULT_SECRET_PATTERNS]
    if extra_file:
        detectors += [_detector(name, regex) for name, regex in load_pattern_file(extra_file)]
    return tuple(detectors)


def secret_patterns() -> tuple[Detector, ...]:
    return _compiled(settings.TRAINER_SECRET_PATTERNS_FILE or "")


def normalise(text: str) -> str:
    """`text` without invisible characters (INVISIBLE)."""
    return INVISIBLE.sub("", text)


# A JSON string escape: `\"`, `\\`, `\/`, `\b` … and `\uXXXX` (surrogate pairs are joined after).
JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt]))")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape_json(text: str) -> str:
    """`text` with its JSON string escapes decoded: what JSON text (a raw model response, a stream cut short)
    says, for the patterns to see (`password = \\"…\\"`, `AKIA\\u200b…` hid a secret from them)."""

    def decode(match: re.Match[str]) -> str:
        return chr(int(match.group(1), 16)) if match.group(1) else _SIMPLE_ESCAPES[match.group(2)]

    # Surrogate pairs (an emoji escaped as two \u escapes) joined; a lone one, which no database stores, made U+FFFD.
    return JSON_ESCAPE.sub(decode, text).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _redact_into(text: str, found: dict[str, int]) -> str:
    """`text` redacted; where it holds JSON escapes, its decoded text too (issue 46, finding 7): when the
    decoded text shows a secret the text does not, the decoded text is what is kept, redacted."""
    cleaned = _redact_view(text, found)
    if "\\" not in text:
        return cleaned
    decoded = unescape_json(cleaned)
    if decoded == cleaned:
        return cleaned
    more: dict[str, int] = {}
    again = _redact_view(decoded, more)
    if not more:
        return cleaned
    add_counts(found, more)
    return again


def _redact_view(text: str, found: dict[str, int]) -> str:
    # Most text has no invisible character: the search costs one scan and the text is used as it is.
    source = normalise(text) if INVISIBLE.search(text) else text
    hits_before = sum(found.values())
    lowered = source.lower()
    cleaned = source
    for detector in secret_patterns():
        if not detector.may_match(lowered):
            continue
        replacement = REDACTED.format(name=detector.name)

        def substitute(match: re.Match[str], detector: Detector = detector, replacement: str = replacement) -> str:
            group = detector.secret_group(match)
            if not detector.accepts(match) or match.group(group).startswith("[REDACTED:"):
                return match.group(0)  # not a secret, or one already redacted (`password = [REDACTED:…]`)
            found[detector.name] = found.get(detector.name, 0) + 1
            if group:
                start, end = match.span(group)
                offset = match.start()
                whole = match.group(0)
                return whole[: start - offset] + replacement + whole[end - offset :]
            return replacement

        cleaned = detector.pattern.sub(substitute, cleaned)
    # Nothing found: the text exactly as given (an emoji's zero-width joiner stays).
    return cleaned if sum(found.values()) > hits_before else text


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, pattern name) of every secret in `text` (the secret group's span where there is one).

    Spans are positions in `text` itself, which must hold no invisible characters (a slug, say).
    """
    spans = []
    lowered = text.lower()
    for detector in secret_patterns():
        if not detector.may_match(lowered):
            continue
        for match in detector.pattern.finditer(text):
            if detector.accepts(match):
                spans.append((*match.span(detector.secret_group(match)), detector.name))
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


def redact_json_text(text: str) -> tuple[str, dict[str, int]]:
    """`redact` for text that may be JSON (a model's raw response): when it parses, its decoded strings are
    redacted and, if anything was, it is kept re-encoded (still JSON); otherwise as `redact`."""
    if text[:1] in ("{", "[") and "\\" in text:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if value is not None:
            cleaned, found = redact_value(value)
            return (json.dumps(cleaned, ensure_ascii=False) if found else text), found
    return redact(text)


def add_counts(total: dict[str, int], found: dict[str, int]) -> None:
    """Add `found` (pattern -> hits) into `total`."""
    for name, count in found.items():
        total[name] = total.get(name, 0) + count


def redact_fields(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Redact each named value before it is stored: (cleaned values, [{field, pattern, count}] for the record)."""
    cleaned: dict[str, Any] = {}
    flags: list[dict[str, Any]] = []
    for field, value in values.items():
        cleaned[field], found = redact_value(value)
        flags.extend({"field": field, "pattern": pattern, "count": count} for pattern, count in sorted(found.items()))
    return cleaned, flags


def redaction_summary(flags: list[dict[str, Any]]) -> str:
    """'2 redacted: stdout (aws_access_key ×1), ...' for a page or an admin column; '' when nothing was."""
    if not flags:
        return ""
    total = sum(flag.get("count", 0) for flag in flags)
    parts = ", ".join(f"{flag.get('field')} ({flag.get('pattern')} ×{flag.get('count')})" for flag in flags)
    return f"{total} redacted: {parts}"
