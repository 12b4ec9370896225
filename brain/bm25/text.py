"""Text to tokens: what BM25 sees of a note (NFKC, lowercase, English stopwords and stems, CJK per character)."""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from functools import lru_cache

import snowballstemmer
from snowballstemmer.basestemmer import BaseStemmer

TITLE_REPEAT = 1  # how many times the title counts in the note's text

WORD_RE = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces: each character is a token.
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves""".split()
)

# A snowball stemmer keeps the word it is working on in the object itself: two threads sharing one
# raise IndexError and, worse, return wrong stems (which the cache below would then keep). One per thread.
_stemmers = threading.local()


def _stemmer() -> BaseStemmer:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not word.isascii():
        return word
    return _stemmer().stemWord(word)


def tokenize(text: str) -> list[str]:
    """Lowercased, NFKC-normalised words without English stopwords, stemmed;
    CJK runs are split into single characters."""
    text = unicodedata.normalize("NFKC", text).lower()
    words = WORD_RE.findall(text)
    if not CJK_RE.search(text):  # the common case, checked once per text
        return [_stem(word) for word in words if word not in STOPWORDS]
    tokens: list[str] = []
    for word in words:
        if CJK_RE.search(word):
            tokens.extend(ch for ch in word if not ch.isspace())
        elif word not in STOPWORDS:
            tokens.append(_stem(word))
    return tokens


@lru_cache(maxsize=100_000)
def word_tokens(word: str) -> tuple[str, ...]:
    """`tokenize(word)` for one word, remembered: excerpts look at the same words again and again."""
    return tuple(tokenize(word))


# HTML in a markdown note is layout, not what the note says: `<div align="center">`, `<img src=…>`, `&nbsp;`.
HTML_MARKUP_RE = re.compile(r"<!--.*?(?:-->|\Z)|</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>|&#?\w+;", re.DOTALL)
CODE_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN_RE = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)


def without_markup(text: str) -> str:
    """`text` without HTML tags, attributes, comments and entities, except in code (fenced blocks and
    `code spans`, where `<div>` is what the note is about)."""
    if "<" not in text and "&" not in text:
        return text
    out: list[str] = []
    prose: list[str] = []
    fence = ""

    def flush() -> None:
        if prose:
            chunk = "\n".join(prose)
            kept, position = [], 0
            for span in CODE_SPAN_RE.finditer(chunk) if "`" in chunk else ():
                kept += [HTML_MARKUP_RE.sub(" ", chunk[position : span.start()]), span.group(0)]
                position = span.end()
            kept.append(HTML_MARKUP_RE.sub(" ", chunk[position:]))
            out.append("".join(kept))
            prose.clear()

    for line in text.split("\n"):
        opening = CODE_FENCE_RE.match(line)
        if fence:
            out.append(line)
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            flush()
            fence = opening.group(1)
            out.append(line)
            continue
        prose.append(line)
    flush()
    return "\n".join(out)


def note_text(title: str, body: str) -> str:
    """What BM25 indexes of a note: its title and its body without HTML markup (`without_markup`)."""
    return "\n".join([title] * TITLE_REPEAT + [without_markup(body)])


@lru_cache(maxsize=500_000)
def term_key(token: str) -> int:
    """A stable 64-bit key for a term, the same in every process (segments on disk store keys, not strings)."""
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
