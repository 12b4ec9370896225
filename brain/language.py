"""Which language a question is in, and what follows from it for the brain's rules (issue 45, "Anyone's project").

BM25 and the passages are English-minded (English stopwords and stems, `brain.bm25.text`). A German team's question
differs in two ways that matter to brain_answer's gates:

- every German noun is capitalised, so a capital letter does not mark a name (`capitalises_nouns`);
- its function words ("wie", "ich", "eine") are not English stopwords: in a brain of mostly English notes they
  look rare and made any German question "hold" a German page (`stopword_terms`).

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


@functools.lru_cache(maxsize=64)
def _stopword_terms(language: str) -> frozenset[str]:
    from brain.passages import tokenize  # the passages' own terms (stemmed as they stem them)

    if language == "en" or language not in LANGUAGE_MAPPING:
        return frozenset()
    try:
        words = get_stop_words(language)
    except StopWordError:
        return frozenset()
    return frozenset(term for word in words for term in tokenize(word)[:1])


# A language is told from a question, not from a name: a text of fewer words (a project folder's name searched by
# brain_context, "graphstore pg") keeps all its words.
MIN_WORDS = 4


def stopword_terms(text: str) -> frozenset[str]:
    """The terms of the function words of `text`'s language when it is not English (English ones never become
    terms), as `brain.passages.tokenize` makes them; none for a text of fewer than MIN_WORDS words."""
    if len(text.split()) < MIN_WORDS:
        return frozenset()
    return _stopword_terms(language_of(text))
