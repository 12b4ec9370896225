"""Markdown files with YAML frontmatter: parse, write, render, find wikilinks.

Loading is safe: the loader is a `yaml.SafeLoader` subclass (no Python
objects can be built from a file). It differs from `yaml.safe_load` in two
ways: timestamps stay strings, so `created: 2024-01-05` comes back as the
string it was and is written back unquoted; and aliases (`*name`, `<<: *name`)
are refused, because an alias graph expands exponentially (a "billion laughs"
file of 300 bytes would otherwise expand to gigabytes before any size check). The writer is deterministic
(keys in the order given, block style, unicode kept), so writing the same
note twice gives the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape as html_escape
from typing import Any

import markdown as markdown_lib
import nh3
import yaml

FENCE = "---"
FENCE_ENDS = ("---", "...")
# Caps on frontmatter, whatever door it comes through (file, MCP, REST): deeper or bigger
# frontmatter is refused with a FrontmatterError, so that nothing downstream (YAML dump,
# JSON, export) ever meets a structure that would overflow the stack.
FRONTMATTER_MAX_DEPTH = 16  # nested mappings/lists
FRONTMATTER_MAX_BYTES = 64 * 1024  # YAML text, or the JSON of a frontmatter given as data


class FrontmatterError(ValueError):
    """The frontmatter of a markdown file cannot be used (bad YAML, not a mapping, unclosed)."""


def _without_timestamps(resolvers: dict[Any, list[tuple[str, Any]]]) -> dict[Any, list[tuple[str, Any]]]:
    return {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:timestamp"]
        for first, entries in resolvers.items()
    }


class FrontmatterLoader(yaml.SafeLoader):
    """SafeLoader that leaves dates and times as strings (JSON has no date type) and refuses aliases.

    With aliases refused, the composed tree has at most one node per event in
    the text, so the 64 KiB cap on the text bounds the work; the depth and
    size checks then run on data that is no bigger than the file.
    """

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            mark = event.start_mark
            raise FrontmatterError(
                f"frontmatter uses the YAML alias *{event.anchor} (line {mark.line + 1}, column {mark.column + 1}); "
                "aliases are not allowed in frontmatter: write the value out instead"
            )
        return super().compose_node(parent, index)


FrontmatterLoader.yaml_implicit_resolvers = _without_timestamps(yaml.SafeLoader.yaml_implicit_resolvers)


class FrontmatterDumper(yaml.SafeDumper):
    """SafeDumper that does not quote date-like strings (they load back as strings)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Lists indented under their key ("key:\n  - a"), the way people write them.
        return super().increase_indent(flow, False)


FrontmatterDumper.yaml_implicit_resolvers = _without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


FrontmatterDumper.add_representer(str, _str_representer)


@dataclass
class MarkdownDocument:
    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False


def frontmatter_depth(value: Any) -> int:
    """How deeply mappings and lists nest in `value` (a scalar is 0); iterative, so never a RecursionError."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list | tuple):
            children = list(node)
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        if deepest > 10_000:
            break  # cyclic (YAML anchors can build one): deep enough to refuse
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_frontmatter_limits(frontmatter: Any) -> None:
    """FrontmatterError when `frontmatter` (decoded data) nests deeper or weighs more than the caps."""
    depth = frontmatter_depth(frontmatter)
    if depth > FRONTMATTER_MAX_DEPTH:
        raise FrontmatterError(
            f"frontmatter nests {depth if depth <= 10_000 else 'over 10000'} levels deep, over the limit of "
            f"{FRONTMATTER_MAX_DEPTH}; flatten it"
        )
    size = len(json.dumps(frontmatter, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    if size > FRONTMATTER_MAX_BYTES:
        raise FrontmatterError(
            f"frontmatter is {size} bytes, over the limit of {FRONTMATTER_MAX_BYTES}; keep long text in the body"
        )


def _jsonable(value: Any, where: str) -> Any:
    """Frontmatter is stored as JSON: keep only what JSON can hold."""
    if isinstance(value, dict):
        return {str(key): _jsonable(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item, where) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise FrontmatterError(f"frontmatter value at {where} has type {type(value).__name__}, which JSON cannot hold")


def parse_frontmatter_text(text: str) -> dict[str, Any]:
    """YAML text → a mapping; anything else (too big, too deep) is a FrontmatterError."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > FRONTMATTER_MAX_BYTES:
        raise FrontmatterError(
            f"frontmatter is {size} bytes, over the limit of {FRONTMATTER_MAX_BYTES}; keep long text in the body"
        )
    try:
        data = yaml.load(text, Loader=FrontmatterLoader)  # noqa: S506 - SafeLoader subclass
    except RecursionError:
        raise FrontmatterError(
            f"frontmatter nests too deeply (the limit is {FRONTMATTER_MAX_DEPTH} levels); flatten it"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise FrontmatterError(f"frontmatter is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError(f"frontmatter must be a mapping of keys to values, not a {type(data).__name__}")
    check_frontmatter_limits(data)
    return _jsonable(data, "frontmatter")


def parse_markdown(text: str) -> MarkdownDocument:
    """Split a markdown file into frontmatter (a dict) and body.

    Frontmatter is present when the first line is `---`; it ends at the next
    line that is `---` or `...`. The body is everything after that line,
    byte for byte (line endings normalised to `\\n`).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != FENCE:
        return MarkdownDocument(body=text)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in FENCE_ENDS:
            frontmatter = parse_frontmatter_text("\n".join(lines[1:index]))
            return MarkdownDocument(frontmatter=frontmatter, body="\n".join(lines[index + 1 :]), has_frontmatter=True)
    raise FrontmatterError("frontmatter starts with --- on the first line but is never closed by a --- line")


def dump_frontmatter(frontmatter: dict[str, Any]) -> str:
    return yaml.dump(
        frontmatter,
        Dumper=FrontmatterDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )


def write_markdown(frontmatter: dict[str, Any], body: str) -> str:
    """Frontmatter + body as file text; the same input always gives the same bytes."""
    if not frontmatter:
        return body
    return f"{FENCE}\n{dump_frontmatter(frontmatter)}{FENCE}\n{body}"


# -- titles --------------------------------------------------------------------

ATX_TITLE_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
SETEXT_TITLE_RULE_RE = re.compile(r"^ {0,3}=+[ \t]*$")
FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
FENCE_CLOSE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")


def first_title_heading(body: str) -> str | None:
    """The text of the first top-level heading (`# Title`, or `Title` over a `===` line) outside fenced code.

    A `# comment` inside a ```python block is code, not a heading; `##` and deeper are sections, not
    the document's title. A fence closes only with the same character, at least as long (CommonMark).
    """
    fence = ""
    previous = ""
    for line in body.splitlines():
        opening = FENCE_OPEN_RE.match(line)
        if fence:
            closing = FENCE_CLOSE_RE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            previous = ""
            continue
        match = ATX_TITLE_RE.match(line)
        if match:
            return match.group(1).strip()
        if previous and SETEXT_TITLE_RULE_RE.match(line):
            return previous
        previous = line.strip() if line.strip() and not line.startswith(("    ", "\t")) else ""
    return None


def title_from_file_name(path: str) -> str:
    """`advanced/timeouts.md` → "Timeouts"; `getting_started-guide.md` → "Getting started guide"."""
    stem = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    words = " ".join(stem.replace("-", " ").replace("_", " ").split())
    return words[:1].upper() + words[1:]


# -- rendering -----------------------------------------------------------------

ALLOWED_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "th": {"align"},
    "td": {"align"},
}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str, *, wikilink: Callable[[str], tuple[str, bool]] | None = None) -> str:
    """Markdown → HTML that is safe to show: no scripts, no event handlers, no javascript: URLs.

    With `wikilink` (target → (href, exists)), `[[target]]` and
    `[[target|label]]` become links, class `wikilink`, plus `missing` when
    no note has that target yet.
    """
    text = text or ""
    if wikilink is not None:
        text = _link_wikilinks(text, wikilink)
    html = markdown_lib.markdown(text, extensions=["fenced_code", "tables", "sane_lists"])
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


# -- wikilinks -------------------------------------------------------------------


def _link_wikilinks(text: str, wikilink: Callable[[str], tuple[str, bool]]) -> str:
    """`[[…]]` → an inline `<a>` (escaped); inside code spans and fences they stay literal."""
    out, in_fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or "[[" not in line:
            out.append(line)
            continue
        pieces = re.split(r"(`[^`]*`)", line)
        for index, piece in enumerate(pieces):
            if index % 2 == 0:
                pieces[index] = WIKILINK_RE.sub(lambda m: _wikilink_html(m, wikilink), piece)
        out.append("".join(pieces))
    return "\n".join(out)


def _wikilink_html(match: re.Match[str], wikilink: Callable[[str], tuple[str, bool]]) -> str:
    target = match.group(1).split("#", 1)[0].strip()
    label = (match.group(2) or "").strip() or match.group(1).strip()
    if not target:
        return match.group(0)
    href, exists = wikilink(target)
    css = "wikilink" if exists else "wikilink missing"
    title = target if exists else f"no note {target} yet"
    return f'<a class="{css}" href="{html_escape(href)}" title="{html_escape(title)}">{html_escape(label)}</a>'


WIKILINK_RE = re.compile(r"\[\[([^\[\]|\n]+?)(?:\|([^\[\]\n]*))?\]\]")


@dataclass(frozen=True)
class WikiLink:
    target: str
    label: str


def extract_wikilinks(text: str) -> list[WikiLink]:
    """`[[target]]` and `[[target|label]]` in order of appearance; `#anchors` are dropped from the target."""
    links = []
    for match in WIKILINK_RE.finditer(text or ""):
        target = match.group(1).split("#", 1)[0].strip()
        if not target:
            continue
        label = (match.group(2) or "").strip() or target
        links.append(WikiLink(target=target, label=label))
    return links
