"""What a note cites in the code, found in its text by rules (no model): the anchors brain.truth checks.

- **path**: `supervisor/executor.py` (in backticks, or bare in the text when it has a folder and an extension);
- **symbol**: `Class.method`, `function_name`, `_cache`, `spawn_worker()` (a backtick span that is one identifier
  with an underscore, a dot or call parentheses, or a CamelCase name, `SSLConfig` too; `Response.json` — a capitalised name, a dot
  and no folder — is a class's method, not a file);
- **quote**: a backtick span that reads as code (`timeout=GIT_TIMEOUT_SECONDS`, `from .utils import echo`), and
  each line of a fenced code block in a programming language (blocks marked text, console, shell or output are
  examples, not quotes); a block's line that defines a name at its top level cites that name too, as a symbol;
- **command**: `manage.py project_sync`, `make test`, `npm run build`;
- **setting**: `SUPERVISOR_ALLOWED_ROOTS` (upper case with an underscore).

Explicit anchors come from frontmatter `anchors:` — a list of strings (classified by the same rules; a
`path:` or `symbol:`… prefix forces the kind) or of {kind, value, path} mappings. A symbol or quote is tied
to the file the note names when it names exactly one, so a commit to that file re-checks it.

These rules find what *may* be the project's code; brain.truth keeps as anchors only what resolves in the
project's tree (`time.perf_counter`, `ValueError`, `example.com` do not: they are unresolved, never stale).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from hyperguild.lib.typed import JSON

KINDS = ("path", "symbol", "quote", "command", "setting")
MAX_ANCHORS = 200
MAX_QUOTE_CHARS = 500
MIN_QUOTE_CHARS = 6
CODE_EXTENSIONS = frozenset(
    "py pyi go js jsx ts tsx mjs cjs rs rb java kt kts scala c h cc cpp hpp cs swift php sh bash zsh sql "
    "html css scss vue svelte toml yaml yml json ini cfg md rst txt lock mk proto graphql ex exs erl hs lua "
    "pl r jl dart tf".split()
)
SPECIAL_FILES = frozenset("Makefile Dockerfile Procfile Gemfile Rakefile Justfile".split())
# Fenced blocks in these languages show examples, output or prose, not lines of the project's code.
NOT_CODE_FENCES = frozenset(
    "text txt console output shell sh bash zsh plain plaintext log diff markdown md mermaid".split()
)

_FENCE = re.compile(r"^(```|~~~)[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_BARE_PATH = re.compile(r"(?<![\w./`-])((?:[\w.-]+/)+[\w.-]+\.([A-Za-z0-9]{1,6}))(?![\w/`])")
_SETTING = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SYMBOL = re.compile(rf"^({_IDENT}(?:\.{_IDENT})*)(\(\))?$")
_COMMAND = re.compile(
    r"^(?:(?:\./|python3?\s+)?manage\.py\s+[\w-]+|make\s+[\w.-]+|(?:npm|yarn|pnpm)\s+run\s+[\w:.-]+)(?:\s.*)?$"
)
_CODE_PUNCTUATION = re.compile(r"[=(){}\[\]:;<>]|->|\.\w+\(")
# `Response.json`, `Path.py`: a class name and an attribute, not a file (a file in a folder has a folder; files
# named so at the top of a repository are configuration: `Cargo.toml`, `Pipfile.lock`).
_CLASS_ATTRIBUTE = re.compile(
    r"^[A-Z][a-z0-9]+[A-Za-z0-9]*\.(?!(?:toml|lock|ya?ml|cfg|ini|txt|md|rst|in)$)[a-z_][a-z0-9_]*$"
)
# A line of a code block that defines a name at the top of a module: `def name(`, `class Name`, `NAME = …`.
_DEFINES = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_IMPORT = re.compile(r"^(?:from\s+\.*[\w.]*\s+import\s+\S.*|import\s+[\w.]+(?:\s+as\s+\w+)?)$")
_PREFIXED = re.compile(r"^(path|symbol|quote|command|setting)\s*:\s*(.+)$", re.S)


@dataclass(frozen=True)
class FoundAnchor:
    kind: str
    value: str
    hint: str = ""  # the file the note ties it to
    explicit: bool = False

    @property
    def key(self) -> str:
        return anchor_key(self.kind, self.value, self.hint)


def anchor_key(kind: str, value: str, hint: str) -> str:
    return hashlib.sha1(f"{kind}\0{value}\0{hint}".encode()).hexdigest()


def looks_like_path(text: str) -> bool:
    if " " in text or text.startswith(("http:", "https:", "//")) or "://" in text:
        return False
    name = text.rstrip("/").rsplit("/", 1)[-1]
    if name in SPECIAL_FILES:
        return True
    stem, dot, extension = name.rpartition(".")
    return bool(
        dot and stem and extension.lower() in CODE_EXTENSIONS and ("/" in text or stem.replace("_", "").isalnum())
    )


def classify(text: str) -> str | None:
    """The kind of anchor a backtick span (or an explicit string) is, or None when it is none."""
    text = text.strip()
    if not text or len(text) > MAX_QUOTE_CHARS:
        return None
    if _COMMAND.match(text):
        return "command"
    if _SETTING.match(text):
        return "setting"
    if _CLASS_ATTRIBUTE.match(text) and text.partition(".")[0] not in SPECIAL_FILES:
        return "symbol"
    if looks_like_path(text):
        return "path"
    symbol = _SYMBOL.match(text)
    if symbol:
        name = symbol.group(1)
        if (
            symbol.group(2)
            or "." in name
            or "_" in name.strip("_")
            or (name.startswith("_") and name.strip("_"))
            or re.match(r"^[A-Z][a-z0-9]+[A-Z]\w*$", name)
            or re.match(r"^[A-Z]{2,}[a-z]{2,}\w*$", name)  # an acronym and a word: `SSLConfig`, `HTTPTransport`
        ):
            return "symbol"
        return None
    if len(text) >= MIN_QUOTE_CHARS and (_CODE_PUNCTUATION.search(text) or _IMPORT.match(text)):
        return "quote"
    return None


def _normal_value(kind: str, text: str) -> str:
    text = text.strip()
    if kind == "symbol":
        return text.removesuffix("()")
    if kind == "path":
        return text.removeprefix("./")
    if kind == "command":
        return " ".join(text.split())
    return text


def extract(body: str, frontmatter: JSON | None = None) -> list[FoundAnchor]:
    """Every anchor of a note, deduplicated, in order: explicit ones first, then the text's."""
    found: list[FoundAnchor] = []
    explicit = (frontmatter or {}).get("anchors")
    if isinstance(explicit, (str, dict)):
        explicit = [explicit]
    for item in explicit if isinstance(explicit, list) else []:
        anchor = _explicit(item)
        if anchor is not None:
            found.append(anchor)

    text_anchors: list[tuple[str, str]] = []
    prose = body
    for fence in _FENCE.finditer(body):
        language = fence.group(2).lower()
        if language not in NOT_CODE_FENCES:
            for line in fence.group(3).splitlines():
                defined = _DEFINES.match(line)
                line = line.strip()
                if (
                    len(line) >= MIN_QUOTE_CHARS
                    and len(line) <= MAX_QUOTE_CHARS
                    and not line.startswith(("#", "//", "..."))
                ):
                    text_anchors.append(("quote", line))
                    # A block that defines a name cites that name too (`_flag_needs_value = object()`).
                    name = defined and (defined.group(1) or defined.group(2))
                    if name and classify(name) == "symbol":
                        text_anchors.append(("symbol", name))
    prose = _FENCE.sub("\n", body)
    for span in _SPAN.finditer(prose):
        kind = classify(span.group(1))
        if kind:
            text_anchors.append((kind, _normal_value(kind, span.group(1))))
    outside = _SPAN.sub(" ", prose)
    for match in _BARE_PATH.finditer(outside):
        if looks_like_path(match.group(1)):
            text_anchors.append(("path", _normal_value("path", match.group(1))))

    paths = {value for kind, value in text_anchors if kind == "path"} | {a.value for a in found if a.kind == "path"}
    hint = next(iter(paths)) if len(paths) == 1 else ""
    for kind, value in text_anchors:
        found.append(FoundAnchor(kind, value, hint if kind in ("symbol", "quote") else ""))

    unique: dict[str, FoundAnchor] = {}
    for anchor in found:
        unique.setdefault(anchor.key, anchor)
    return list(unique.values())[:MAX_ANCHORS]


def _explicit(item: object) -> FoundAnchor | None:
    if isinstance(item, dict):
        kind, value, hint = item.get("kind"), item.get("value"), item.get("path") or ""
        if kind not in KINDS or not isinstance(value, str) or not value.strip() or not isinstance(hint, str):
            return None
        return FoundAnchor(kind, _normal_value(kind, value), hint.strip().removeprefix("./"), explicit=True)
    if not isinstance(item, str):
        return None
    prefixed = _PREFIXED.match(item.strip())
    if prefixed:
        kind, value = prefixed.group(1), prefixed.group(2)
    else:
        kind, value = classify(item) or "quote", item
    if not value.strip() or len(value) > MAX_QUOTE_CHARS:
        return None
    return FoundAnchor(kind, _normal_value(kind, value), "", explicit=True)
