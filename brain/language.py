"""Which language a question is in, and what follows from it for the brain's rules (issue 45, "Anyone's project").

BM25 and the passages are English-minded (English stopwords and stems, `brain.bm25.text`). A German team's question
differs in two ways that matter to brain_answer's gates:

- every German noun is capitalised, so a capital letter does not mark a name (`capitalises_nouns`);
- its function words ("wie", "ich", "eine") are not English stopwords: in a brain of mostly English notes they
  look rare and made any German question "hold" a German page (`foreign_language`, `stopwords`; the passages
  leave them out of a question's terms, `brain.passages.stopword_terms`).

The language is py3langid's guess (its model is in the wheel); the stopword lists are the `stop-words` package's.
"""

from __future__ import annotations

import functools

import py3langid
from stop_words import LANGUAGE_MAPPING, StopWordError, get_stop_words

# py3langid's codes of the languages that capitalise every noun.
NOUN_CAPITALISING = frozenset({"de", "lb"})


@functools.lru_cache(maxsize=1024)
def language_of(text: str) -> str:
    """py3langid's ISO 639-1 code for `text` ("en", "de", …)."""
    language, _score = py3langid.classify(text)
    return str(language)


def capitalises_nouns(text: str) -> bool:
    """Whether `text` is in a language that capitalises every noun (German, Luxembourgish)."""
    return language_of(text) in NOUN_CAPITALISING


# A language is told from a question, not from a name: a text of fewer words (a project folder's name searched by
# brain_context, "graphstore pg") keeps all its words.
MIN_WORDS = 4


def foreign_language(text: str) -> str | None:
    """`text`'s language when it is not English and `stop-words` has its function words; None for English, for
    another language and for a text of fewer than MIN_WORDS words."""
    if len(text.split()) < MIN_WORDS:
        return None
    language = language_of(text)
    return language if language != "en" and language in LANGUAGE_MAPPING else None


@functools.lru_cache(maxsize=64)
def stopwords(language: str) -> frozenset[str]:
    """The function words of `language` (`stop-words`' list; none when it has no list)."""
    try:
        return frozenset(get_stop_words(language))
    except StopWordError:
        return frozenset()
