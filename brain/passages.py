"""A note's passages, and which of them answer a question.

The extractive answer (no LLM) and the SessionStart context quote a note by
its passage that answers, not by its opening. A passage is one of:

- a paragraph;
- one item of a list, one row of a table;
- a fenced code block together with the prose right above it: a short line
  ending in ":" whole, else the paragraph's last sentence (and the one before
  while that is under SHORT_LEAD_IN: "For example:" says nothing); "… could
  be done like this:" and the block are the answer together, the rest of the
  paragraph is a passage of its own; a list or a table with the short line ending in ":"
  that leads into it (`**From the command line** (operators):` and the
  command under it are one passage: the lead-in alone says nothing);

each with its *context*: the note's title, the headings above it and the
lead-in of the list or table it belongs to. HTML comments (`<!-- … -->`) are
never part of a passage.

Headings and code fences bound passages. HTML markup is not words, and code
identifiers count by their parts too (`CliRunner`: "cli", "runner").

Scoring is BM25 over the passages considered together (`score_passages`:
the idf counted among those passages, so a word most of them use weighs
little), plus CONTEXT_WEIGHT of the weight of each query term found only in
the context (a row of the "Set it up" section counts "set" a little), times
one plus the share of the question the passage covers.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from brain import bm25
from brain.language import foreign_language, stopwords

PASSAGE_K1 = 1.2
COVERAGE_POWER = 1.0
# Less length normalisation than BM25's usual 0.75: a table row or a one-line item is short, and a short
# passage is not more relevant for it.
PASSAGE_B = 0.3
# Words that phrase a question rather than name its subject ("what happens to…", "what does X mean"),
# as stems: they count, at this share of their weight.
QUESTION_WORDS = frozenset(
    {"happen", "mean", "use", "see", "get", "work", "make", "need", "way", "tell", "find", "return", "say"}
)
# The stemmer leaves irregular verb forms alone; a question's "written" should find a passage's "write".
IRREGULAR_FORMS = {
    "written": "write",
    "wrote": "write",
    "taken": "take",
    "took": "take",
    "given": "give",
    "gave": "give",
    "chosen": "choose",
    "chose": "choose",
    "made": "make",
    "found": "find",
    "sent": "send",
    "kept": "keep",
    "built": "build",
    "ran": "run",
    "done": "do",
    "did": "do",
    "shown": "show",
    "seen": "see",
    "saw": "see",
    "known": "know",
    "knew": "know",
    "thrown": "throw",
    "threw": "throw",
    "broken": "break",
    "broke": "break",
    "began": "begin",
    "begun": "begin",
    "brought": "bring",
    "bought": "buy",
    "caught": "catch",
    "held": "hold",
    "lost": "lose",
    "paid": "pay",
    "read": "read",
    "said": "say",
    "sold": "sell",
    "told": "tell",
    "thought": "think",
    "understood": "understand",
    "went": "go",
    "gone": "go",
    "won": "win",
    "wore": "wear",
    "worn": "wear",
}
QUESTION_WORD_WEIGHT = 0.3
# Stopwords that say what a question asks for ("who promoted a note?", "my own PostgreSQL"): passages keep them.
KEPT_STOPWORDS = frozenset({"who", "where", "own"})
# A query term found in the passage's headings or lead-in but not in the passage itself.
CONTEXT_WEIGHT = 0.5
# … found in the heading right above it: the section is about that (not quite as much as saying it).
HEADING_WEIGHT = 0.75
# An extractive answer quotes up to MORE_PASSAGES more passages of its best source, each scoring this share of
# the best one: a question the best passage only half answers.
SECOND_PASSAGE_SHARE = 0.6
MORE_PASSAGES = 2
# … then up to FURTHER_PASSAGES more, best first, each scoring FURTHER_SHARE of the best one (tuned on click, typer,
# pydantic and rich-de: 2 more facts of 93, none lost; the two best sources' quotes are about 40 % longer).
FURTHER_SHARE = 0.4
FURTHER_PASSAGES = 2
# A line ending with ":" this short leads into what follows it.
LEAD_IN_CHARS = 200
# The last sentence of a longer paragraph leads into the code under it; one shorter than this takes the
# sentence before it too.
SHORT_LEAD_IN = 60

# "e.g.", "i.e.": not the words "e", "g" (a question saying "e.g. into a README" found a page saying "e.g. the list").
ABBREVIATION_RE = re.compile(r"\b(?:e\.\s?g|i\.\s?e|cf|etc|vs|viz)\.", re.IGNORECASE)
# "doesn't" is "does not", not "doesn" and "t".
NEGATION_RE = re.compile(r"\b(?:(ca)|(wo)|(\w+))n['’]t\b", re.IGNORECASE)
HTML_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# A line that includes code from a file, as documentation generators write it: `{* docs_src/app/main.py hl[9] *}`
# (FastAPI's and Typer's docs), `--8<-- "snippets/main.py"` (pymdownx snippets). It stands where a code block would.
INCLUDE_RE = re.compile(r"^\s*(?:\{\*.*\*\}|-{2}8<-{2}\s+\S.*)\s*$")
# A line of layout only: an admonition's opening or closing marker (`/// tip`, `/// note | Details`, `///`,
# `!!! warning "Title"`), a content tab's (`=== "pip"`), or HTML tags with no words between them (`<div class="termy">`, `</div>`). It bounds
# blocks like a blank line and is never a passage, so the prose above `<div class="termy">` still leads into
# the console session under it.
ADMONITION_RE = re.compile(r"^\s*(?:/{3}(?:\s.*)?|!{3}\s*\w.*|\?{3}\+?\s*\w.*|={3}\+?\s+\".*\")$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
FENCE_OPEN_RE = re.compile(r"^\s*(`{3,}|~{3,})")
FENCE_LINE_RE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
LIST_ITEM_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
TABLE_RULE_RE = re.compile(r"^\|?\s*:?-{3,}")
IDENTIFIER_HUMP_RE = re.compile(r"[a-z][A-Z]")
IDENTIFIER_PART_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# "Which class …", "what function …": the question asks for a name, which a passage naming code holds.
ASKED_KIND_RE = re.compile(
    r"\b(?:which|what)\s+(class|function|method|decorator|exception|module|attribute|setting|variable|"
    r"parameter|argument|flag|option|keyword|callback|type)s?\b",
    re.IGNORECASE,
)
NAMES_CODE_RE = re.compile(r"`[^`\n]+`|^\s*(?:```|~~~)", re.MULTILINE)
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[(])")


@dataclass(frozen=True)
class Passage:
    text: str  # as it stands in the note (a lead-in included)
    context: str  # title, headings and lead-in: what the passage is about, not what it says
    order: int
    tokens: tuple[str, ...] = field(default=(), repr=False)
    context_tokens: frozenset[str] = field(default=frozenset(), repr=False)
    heading_tokens: frozenset[str] = field(default=frozenset(), repr=False)  # the nearest heading's

    @property
    def token_set(self) -> frozenset[str]:
        return frozenset(self.tokens) | self.context_tokens


Source = TypeVar("Source")  # what a caller attaches to each passage it scores (a note, or None)


@dataclass(frozen=True)
class ScoredPassage(Generic[Source]):
    passage: Passage
    score: float
    source: Source  # what the caller attached (a note)
    covered: float = 0.0  # the share of the question's weight it holds, in its text or its context


def _negation(match: re.Match[str]) -> str:
    can, will, other = match.groups()
    return "can not" if can else "will not" if will else f"{other} not"


def _without_abbreviations(text: str) -> str:
    return NEGATION_RE.sub(_negation, ABBREVIATION_RE.sub(" ", text))


def tokenize(text: str) -> list[str]:
    """BM25's tokens (`brain.bm25.tokenize`), with KEPT_STOPWORDS kept, and the parts of code identifiers
    (`test_hello_world`, `CliRunner`) after the identifier itself: a question says "test", "runner". Latin
    abbreviations and negations are not words of their own ("e.g." is not "e" and "g", "doesn't" not "doesn", "t")."""
    text = _without_abbreviations(unicodedata.normalize("NFKC", text))
    if bm25.CJK_RE.search(text):
        return bm25.tokenize(text.lower())
    tokens = []
    for original in bm25.WORD_RE.findall(text):
        word = original.lower()
        if word in KEPT_STOPWORDS:
            tokens.append(word)
            continue
        if word not in bm25.STOPWORDS and IRREGULAR_FORMS.get(word) not in bm25.STOPWORDS:
            tokens.append(bm25.word_tokens(IRREGULAR_FORMS.get(word, word))[0])
        if "_" in original.strip("_") or IDENTIFIER_HUMP_RE.search(original):
            for part in IDENTIFIER_PART_RE.findall(original):
                part = part.lower()
                if len(part) > 1 and part not in bm25.STOPWORDS:
                    tokens.extend(bm25.word_tokens(part))
    return tokens


def without_html_comments(text: str) -> str:
    return HTML_COMMENT_RE.sub("", text)


# MyST's directives are written as fences (```` ```{note} ````): the ones that hold prose (admonitions, version
# notes) are unwrapped, their fence lines layout and their text passages like any other; the ones that only
# lay out the site (a table of contents) are dropped; the rest (`{code-block}`, `{eval-rst}`…) stay code.
DIRECTIVE_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})\{([\w-]+)\}")
PROSE_DIRECTIVES = frozenset(
    {
        "note",
        "warning",
        "tip",
        "important",
        "caution",
        "danger",
        "attention",
        "hint",
        "seealso",
        "admonition",
        "versionadded",
        "versionchanged",
        "deprecated",
        "error",
        "todo",
    }
)
LAYOUT_DIRECTIVES = frozenset({"contents", "toctree"})
DIRECTIVE_OPTION_RE = re.compile(r"^\s*:[\w-]+:")


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _unwrap_directives(lines: list[str]) -> list[str]:
    """`lines` with MyST's prose directives unwrapped and its layout directives dropped (DIRECTIVE_FENCE_RE)."""
    out: list[str] = []
    blocks: list[tuple[str, str]] = []  # (the opening fence, "prose" | "drop" | "code") of each open block
    for line in lines:
        kind = blocks[-1][1] if blocks else ""
        if blocks and _closes(line, blocks[-1][0]):
            blocks.pop()
            if kind == "code":
                out.append(line)
            continue
        if kind == "drop":
            continue
        if kind == "code":  # nothing opens inside code
            out.append(line)
            continue
        directive = DIRECTIVE_FENCE_RE.match(line)
        fence = FENCE_OPEN_RE.match(line)
        if directive:
            name = directive.group(2).lower()
            opened = "prose" if name in PROSE_DIRECTIVES else "drop" if name in LAYOUT_DIRECTIVES else "code"
            blocks.append((directive.group(1), opened))
            if opened == "code":
                out.append(line)
        elif fence:
            blocks.append((fence.group(1), "code"))
            out.append(line)
        elif kind == "prose" and DIRECTIVE_OPTION_RE.match(line) and (not out or not out[-1].strip()):
            continue  # `:class: tip` right after the opening line
        else:
            out.append(line)
    return out


def _layout_only(line: str) -> bool:
    """Whether a line outside code is layout, not words (ADMONITION_RE, or HTML tags and nothing else)."""
    stripped = line.strip()
    if ADMONITION_RE.match(stripped):
        return True
    return stripped.startswith("<") and not bm25.without_markup(stripped).strip()


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(kind, lines) of one section: "code", "table", "list" or "text", split at blank lines (not inside code);
    a line of layout (`_layout_only`) splits like a blank line, and an include line (INCLUDE_RE) is a code block."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        if current:
            first = current[0].lstrip()
            if FENCE_RE.match(first):
                kind = "code"
            elif first.startswith("|"):
                kind = "table"
            elif LIST_ITEM_RE.match(first):
                kind = "list"
            else:
                kind = "text"
            blocks.append((kind, list(current)))
            current.clear()

    for line in lines:
        if FENCE_RE.match(line):
            if not in_fence:
                flush()
            in_fence = not in_fence
            current.append(line)
            if not in_fence:
                flush()
            continue
        if not in_fence and (not line.strip() or _layout_only(line)):
            flush()
            continue
        if not in_fence and INCLUDE_RE.match(line):
            flush()
            blocks.append(("code", [line]))
            continue
        current.append(line)
    flush()
    return blocks


def _list_items(lines: list[str]) -> list[str]:
    items: list[list[str]] = []
    for line in lines:
        if LIST_ITEM_RE.match(line) or not items:
            items.append([line])
        else:  # an indented continuation, or a nested item: part of the item above
            items[-1].append(line)
    return ["\n".join(item) for item in items]


def _is_lead_in(kind: str, lines: list[str]) -> bool:
    text = " ".join(line.strip() for line in lines)
    return kind == "text" and text.endswith(":") and len(text) <= LEAD_IN_CHARS


def _split_lead_in(text: str) -> tuple[str, str]:
    """(the paragraph before, its last sentence, with the ones before it while that is under SHORT_LEAD_IN:
    "For example:" alone says nothing)."""
    sentences = [piece for piece in SENTENCE_RE.split(" ".join(text.split())) if piece.strip()]
    start = len(sentences) - 1
    while start > 0 and len(" ".join(sentences[start:])) < SHORT_LEAD_IN:
        start -= 1
    return " ".join(sentences[:start]), " ".join(sentences[start:])


def _nearest(headings: list[tuple[int, str]]) -> str:
    """The heading right above, unless it is the page's `#` heading (the title, which counts as context)."""
    return headings[-1][1] if headings and headings[-1][0] > 1 else ""


def split_passages(title: str, body: str) -> list[Passage]:
    """The passages of a note, in order (see the module docstring). One answer cuts its candidates up to four
    times (the gates, the passage reader, the extractive answer, what a model reads): the last SPLIT_CACHE notes
    cut are kept (passages are frozen)."""
    return list(_split_passages(title, body))


SPLIT_CACHE = 256


@functools.lru_cache(maxsize=SPLIT_CACHE)
def _split_passages(title: str, body: str) -> tuple[Passage, ...]:
    sections: list[tuple[str, str, list[str]]] = []  # (heading path, nearest heading, lines)
    headings: list[tuple[int, str]] = []
    current: list[str] = []
    in_fence = False
    for line in _unwrap_directives(without_html_comments(body).splitlines()):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING_RE.match(line)
        if match:
            sections.append((" ".join(h for _, h in headings), _nearest(headings), current))
            current = []
            level = len(match.group(1))
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, match.group(2)))
        else:
            current.append(line)
    sections.append((" ".join(h for _, h in headings), _nearest(headings), current))

    found: list[tuple[str, str, str]] = []  # (text, context, nearest heading)
    for heading, nearest, lines in sections:
        context = f"{title} {heading}".strip()
        blocks = _blocks(lines)
        lead_in = ""
        previous_text = ""  # the prose block just before, when the block before was prose
        for index, (kind, block) in enumerate(blocks):
            text = "\n".join(block).strip()
            following = blocks[index + 1][0] if index + 1 < len(blocks) else None
            if _is_lead_in(kind, block) and following in ("code", "table", "list"):
                # "So you can do something like this:" points back at the paragraph before it, which says what
                # "this" does ("… disable the implicit sys.exit"): its last sentences lead in too.
                told = _split_lead_in(previous_text)[1] if previous_text and following == "code" else ""
                lead_in = f"{told}\n{text}".strip()
                previous_text = ""
                continue
            previous_text = text if kind == "text" else ""
            if kind == "text" and following == "code":
                # The prose right above a code block says what the code does ("… could be done like this:",
                # "To read a value from the environment use `envvar`."): its last sentences and the code are
                # one passage (the answer is the code with them); the rest of a long paragraph is its own.
                rest, lead_in = _split_lead_in(text)
                if rest:
                    found.append((rest, context, nearest))
                continue
            if kind == "code":
                found.append((f"{lead_in}\n\n{text}".strip(), context, nearest))
                if following == "code":
                    continue  # a second block right under the first (the module, then its test) has the same lead-in
            elif kind == "table":
                rows = [line for line in block if not TABLE_RULE_RE.match(line.strip())]
                header, rows = (rows[0], rows[1:]) if len(rows) > 1 else ("", rows)
                for row in rows:
                    found.append((row.strip(), f"{context} {lead_in} {header}".strip(), nearest))
            elif kind == "list":
                for item in _list_items(block):
                    found.append((item.strip(), f"{context} {lead_in}".strip(), nearest))
            else:
                found.append((text, context, nearest))
            lead_in = ""
    passages = []
    for order, (text, context, nearest) in enumerate(item for item in found if item[0].strip()):
        passages.append(
            Passage(
                text,
                context,
                order,
                tuple(tokenize(bm25.without_markup(text))),
                frozenset(tokenize(context)),
                frozenset(tokenize(nearest)),
            )
        )
    return tuple(passages)


@functools.lru_cache(maxsize=64)
def _stopword_terms(language: str) -> frozenset[str]:
    return frozenset(term for word in stopwords(language) for term in tokenize(word)[:1])


def stopword_terms(question: str) -> frozenset[str]:
    """The terms (as `tokenize` makes them) of the function words of the question's language when it is not English
    (`brain.language.foreign_language`): "wie", "ich", "eine" are not evidence that a passage answers it."""
    language = foreign_language(question)
    return _stopword_terms(language) if language else frozenset()


def term_weights(question: str, pool: list[Passage]) -> Mapping[str, float]:
    """Each distinct query term's idf among the passages of `pool` (Lucene's form, never negative), words that
    only phrase a question (QUESTION_WORDS) at QUESTION_WORD_WEIGHT of theirs; the function words of a question in
    another language than English are not terms (`stopword_terms`)."""
    foreign = stopword_terms(question)
    terms = [term for term in dict.fromkeys(tokenize(question)) if term not in foreign]
    count = len(pool)
    weights = {}
    for term in terms:
        df = sum(1 for passage in pool if term in passage.token_set)
        idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
        weights[term] = idf * (QUESTION_WORD_WEIGHT if term in QUESTION_WORDS else 1.0)
    return weights


def brain_weights(question: str, document_frequency: Callable[[str], int], documents: int) -> dict[str, float]:
    """Each distinct query word's idf among the brain's notes (`document_frequency(term)` of `documents`), words
    that only phrase a question at QUESTION_WORD_WEIGHT of theirs. A term no note holds weighs the most: a question
    about something the brain has never seen stays mostly uncovered. An identifier counts once, as itself, not
    again by its parts ("GitHub" is one word, not "github", "git" and "hub"); a kept stopword ("where", "own"),
    which BM25 does not index, weighs as a word every note holds; a question's function words in another language
    than English are not terms (`stopword_terms`)."""
    wholes: list[str] = []
    foreign = stopword_terms(question)
    for word in bm25.WORD_RE.findall(_without_abbreviations(unicodedata.normalize("NFKC", question))):
        tokens = tokenize(word)
        if tokens and tokens[0] not in foreign:
            wholes.append(tokens[0])
    weights = {}
    for term in dict.fromkeys(wholes):
        df = documents if term in KEPT_STOPWORDS else min(document_frequency(term), documents)
        idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
        weights[term] = idf * (QUESTION_WORD_WEIGHT if term in QUESTION_WORDS else 1.0)
    return weights


def coverage(passage: Passage, weights: dict[str, float]) -> float:
    """The share of `weights` (a question's terms) the passage holds, in its text or its context."""
    total = sum(weights.values())
    found = passage.token_set
    return sum(weight for term, weight in weights.items() if term in found) / total if total else 0.0


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of code thing a question asks for ("Which *class* …", "what *function* …"), as terms."""
    return frozenset(bm25.word_tokens(kind.lower())[0] for kind in ASKED_KIND_RE.findall(question))


def score_passages(
    question: str, candidates: Iterable[tuple[Source, Passage]], weights: Mapping[str, float] | None = None
) -> list[ScoredPassage[Source]]:
    """`candidates` (source, passage) scored against `question`, best first; ties keep their order.

    BM25 over the candidates as documents, each query term found only in a passage's context adding
    CONTEXT_WEIGHT of its weight; the kind of thing a question asks for ("which class …") is found in a
    passage that names code (a `code span` or a code block); the sum is multiplied by (1 + the share of the query's weight the
    passage covers, text and context), so a passage naming most of what is asked beats one naming a
    single rare word of it.
    """
    pool = list(candidates)
    passages = [passage for _, passage in pool]
    if weights is None:
        weights = term_weights(question, passages)
    total = sum(weights.values())
    if not total:
        return [ScoredPassage(passage, 0.0, source) for source, passage in pool]
    average = sum(len(passage.tokens) for passage in passages) / len(passages) or 1.0
    asked = asked_kinds(question)
    scored: list[tuple[float, int, ScoredPassage[Source]]] = []
    for position, (source, passage) in enumerate(pool):
        counts = Counter(passage.tokens)
        norm = PASSAGE_K1 * (1 - PASSAGE_B + PASSAGE_B * len(passage.tokens) / average)
        score = covered = 0.0
        names_code = NAMES_CODE_RE.search(passage.text) is not None
        for term, weight in weights.items():
            tf = counts.get(term, 0)
            if not tf and term in asked and names_code:
                tf = 1  # "which class …?" is answered by the line that names one, not by the paragraph around it
            if tf:
                score += weight * tf * (PASSAGE_K1 + 1) / (tf + norm)
                covered += weight
            elif term in passage.heading_tokens:
                score += HEADING_WEIGHT * weight
                covered += weight
            elif term in passage.context_tokens:
                score += CONTEXT_WEIGHT * weight
                covered += weight
        score *= (1 + covered / total) ** COVERAGE_POWER
        scored.append((score, position, ScoredPassage(passage, score, source, covered / total)))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [item for _, _, item in scored]


def has_code(passage: Passage) -> bool:
    return FENCE_LINE_RE.search(passage.text) is not None or any(
        INCLUDE_RE.match(line) for line in passage.text.splitlines()
    )


CONSOLE_FENCE_RE = re.compile(r"^\s*(?:```|~~~)\s*(?:console|shell-session|terminal)\b", re.IGNORECASE | re.MULTILINE)


def is_console(passage: Passage) -> bool:
    """Whether the passage's code is a console session (```` ```console ````): a program run and what it printed."""
    return CONSOLE_FENCE_RE.search(passage.text) is not None


def quoted_passages(
    ranked: list[ScoredPassage[Source]], passages: list[Passage], *, second: bool, further: bool = False
) -> list[Passage]:
    """What an extractive answer quotes of one note, in the note's order: its best passage (`ranked`: the note's
    scored passages, best first; `passages`: all of them, in order), the code example right under it when the
    best passage is prose about it (the docs' "… use `envvar`." then the example), else the one right above it
    in the same section ("With that, you can use Markdown in the docstring…" explains the example above it); for
    a console session, the example above it in the section that it runs; the paragraph after it in the section
    when the best passage is prose of one sentence (it names the thing, the next one says how); with `second`,
    its next best passages (MORE_PASSAGES at most) that score SECOND_PASSAGE_SHARE of the best, those with code
    first; and with `further`, then its next best (FURTHER_PASSAGES at most) that score FURTHER_SHARE of the best.
    In typer's docs "which variable names does the runner look for?" is answered by the third list item of a page
    whose best passages are about the runner in general (bench/projects.py)."""
    best = ranked[0]
    chosen = [best.passage]
    if is_console(best.passage) or not has_code(best.passage):
        following = passages[best.passage.order + 1] if best.passage.order + 1 < len(passages) else None
        if (
            not has_code(best.passage)
            and following is not None
            and has_code(following)
            and not is_console(following)
            and following.context == best.passage.context
        ):
            chosen.append(following)
        else:
            # The example above in the same section: the one a console session runs, or the one a paragraph
            # under it explains ("With that, you can use Markdown in the docstring…").
            for before in reversed(passages[: best.passage.order]):
                if before.context != best.passage.context:
                    break
                if has_code(before) and not is_console(before):
                    chosen.append(before)
                    break
        if (
            following is not None
            and not has_code(best.passage)
            and not has_code(following)
            and following.context == best.passage.context
            and len(sentences(best.passage.text)) == 1
        ):
            # A paragraph of one sentence names the thing ("You can also customize the formats … with the `formats`
            # parameter."); the paragraph after it in the section says how ("`formats` receives a list of strings").
            chosen.append(following)
    if second:
        near = [item for item in ranked[1:] if item.score >= SECOND_PASSAGE_SHARE * best.score]
        # A passage with code in it (a lead-in and its block) before prose that scores a little better: the
        # answer to "how do I …" is the example.
        near.sort(key=lambda item: not has_code(item.passage))
        extra = 0
        for item in near:
            if extra == MORE_PASSAGES:
                break
            if item.passage not in chosen:
                chosen.append(item.passage)
                extra += 1
    if further:
        added = 0
        for item in ranked[1:]:
            if added == FURTHER_PASSAGES or item.score < FURTHER_SHARE * best.score:
                break
            if item.passage not in chosen:
                chosen.append(item.passage)
                added += 1
    # A paragraph's last sentence also leads into the example under the line after it (`split_passages`): a passage
    # another chosen one holds whole is not quoted again.
    kept = [passage for passage in chosen if not any(holds(other, passage) for other in chosen)]
    return sorted(kept, key=lambda passage: passage.order)


def holds(outer: Passage, inner: Passage) -> bool:
    """Whether `outer`, another passage, holds all of `inner`'s text (whitespace aside); of two passages with the
    same text (a page that says it twice), the first holds the second, never both each other."""
    if outer is inner or outer.order == inner.order:
        return False
    within, around = " ".join(inner.text.split()), " ".join(outer.text.split())
    return within in around and (len(around) > len(within) or outer.order < inner.order)


def sentences(text: str) -> list[str]:
    """The sentences of a prose passage."""
    return [piece for piece in SENTENCE_RE.split(" ".join(text.split())) if piece]


# A Markdown link to another place of the docs (`[*before*](#field-before-validator)`, `[ConfigDict][pydantic.ConfigDict]`)
# is quoted as its text: its target means nothing in an answer and took a third of a lead-in's room. Links to the web
# keep their address.
RELATIVE_LINK_RE = re.compile(r"\[([^\]\n]+)\]\((?![a-z][a-z0-9+.-]*://)[^)\s]*\)")
REFERENCE_LINK_RE = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")


def link_text(prose: str) -> str:
    """`prose` with its links to other places of the docs written as their text."""
    return REFERENCE_LINK_RE.sub(r"\1", RELATIVE_LINK_RE.sub(r"\1", prose))


def quotable(text: str) -> str:
    """A passage's text as it is quoted: its prose's links to the docs as their text (`link_text`), its code as is."""
    fence = FENCE_LINE_RE.search(text)
    return link_text(text[: fence.start()]) + text[fence.start() :] if fence else link_text(text)


def best_sentences(passage: Passage, question: str, limit: int) -> str:
    """The passage cut to about `limit` characters: from the sentence that matches most of the question on,
    with the sentences before it while there is room. Prose is put on one line; code keeps its lines, and a
    lead-in and its code block are cut apart (`_cut_code`) so that the code is never cut off for the prose."""
    text = quotable(passage.text.strip())
    fence = FENCE_LINE_RE.search(text)
    if fence:
        if len(text) <= limit:
            return text
        return _cut_code(text[: fence.start()].strip(), text[fence.start() :], question, limit)
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return _cut_prose(text, question, limit)


def _cut_prose(text: str, question: str, limit: int) -> str:
    terms = set(tokenize(question)) - QUESTION_WORDS
    pieces = [piece for piece in SENTENCE_RE.split(text) if piece.strip()]
    found = [len(terms & set(tokenize(piece))) for piece in pieces]
    best = max(range(len(pieces)), key=lambda i: (found[i], -i))
    first, last = best, best
    length = len(pieces[best])
    while last + 1 < len(pieces) and length + len(pieces[last + 1]) + 1 <= limit:
        last += 1
        length += len(pieces[last]) + 1
    while first > 0 and length + len(pieces[first - 1]) + 1 <= limit:
        first -= 1
        length += len(pieces[first]) + 1
    window = " ".join(pieces[first : last + 1])
    if len(window) > limit:
        cut = window.rfind(" ", 0, limit)
        window = window[: cut if cut > limit // 2 else limit].rstrip()
        last = -1  # cut inside a sentence
    return ("…" if first > 0 else "") + window + ("…" if last != len(pieces) - 1 else "")


def _cut_code(lead_in: str, code: str, question: str, limit: int) -> str:
    """A lead-in (cut to at most a third of `limit`) and the code lines that fit in the rest, from a little
    before the line that holds most of the question's words."""
    lead = _cut_prose(" ".join(lead_in.split()), question, limit // 3) if lead_in else ""
    budget = limit - len(lead)
    lines = code.splitlines()
    if len(code) > budget:
        closing = lines[-1].strip() if len(lines) > 1 and FENCE_RE.match(lines[-1]) else ""
        budget -= len(closing) + 3  # "…" and the closing fence on their lines
        terms = set(tokenize(question)) - QUESTION_WORDS
        found = [len(terms & set(tokenize(line))) for line in lines]
        best = max(range(len(lines)), key=lambda i: (found[i], -i))
        start = best if best <= 1 else best - 2  # the lines just before it set it up
        kept: list[str] = []
        length = 0
        for line in lines[start:]:
            if kept and length + len(line) + 1 > budget:
                break
            kept.append(line)
            length += len(line) + 1
        every = lines
        lines = ([every[0], "…"] if start > 1 else every[:start]) + kept
        left = every[start + len(kept) :]
        if left and not (closing and len(left) == 1):
            lines.append("…")
        if left and closing:
            lines.append(closing)  # the block cut short still ends as a block: a reader sees code, not prose
    return (lead + "\n\n" if lead else "") + "\n".join(lines)
