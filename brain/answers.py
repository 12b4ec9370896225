"""brain_answer: a question in, an answer with numbered sources out.

    retrieve  search(question) — CANDIDATES, or CANDIDATES_WITH_RERANKER when a
              reranker is configured (it will throw some away)
    gate      a question naming a thing no note mentions ("… in a Dockerfile?", `brain.search.unknown_names`)
              has no answer, and only candidates that mention every name it names answer (`mentions`); else some
              passage of the candidates must hold MIN_PASSAGE_COVERAGE of the question's words, each
              weighed by its idf among all the brain's notes, or among the notes of the candidate's wing when it
              holds WING_NOTES (`distinctive_coverage`, `question_weights`), or read like the question
              to the passage reader (`brain.passage_reader.closest_by_source`, GATE_SIMILARITY); and a note
              holding the words still needs a passage of its own reading more like it than unrelated text does
              (UNRELATED_READING); else nothing answers (`passage_gate`)
    filter    the reranker's yes/no judgement; kept candidates keep retrieval order
    answer    at most MAX_LLM_SOURCES sources, numbered [1], [2]…, go to the LLM
              (BRAIN_ANSWER_MODEL through LITELLM_BASE_URL) with the instruction
              to answer only from them and cite them by number; without an LLM
              the answer is extractive: the best passage of each source (passages ranked by their words and
              by the passage reader, `brain.passage_reader.reread`)
    accept    the model's answer counts (`synthesized: true`) only if it was not cut
              off, cites sources that exist and is not degenerate
              (brain.answer_checks); otherwise the extractive answer, with `reason`

Nothing surviving the filter is an answer too: it says so and cites nothing.
A failing reranker or LLM raises AnswerUnavailable naming the service.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NotRequired, TypedDict

from django.conf import settings

from brain import bm25, passage_reader
from brain.answer_checks import synthesized_answer_problem
from brain.errors import AnswerUnavailable
from brain.language import foreign_language
from brain.models import Note, VerificationState
from brain.passages import (
    Passage,
    ScoredPassage,
    best_sentences,
    brain_weights,
    coverage,
    holds,
    quotable,
    quoted_passages,
    score_passages,
    split_passages,
)
from brain.passages import tokenize as passage_tokenize  # `tokenize` alone would read as BM25's
from brain.search import UnreviewedJson, question_names, search, unknown_names
from brain.truth import VerificationJson, verification_dict
from hyperguild.lib.llm import LLMError, get_llm_client
from hyperguild.lib.model_calls import mark_model_call
from hyperguild.lib.reranker import RerankerError, get_reranker
from hyperguild.lib.text import excerpt

CANDIDATES = 10
CANDIDATES_WITH_RERANKER = 20
MAX_LLM_SOURCES = 5
# How much of each source's body the reranker judges and the LLM reads (`source_text`).
SOURCE_CHARS = 2000
# Length of the excerpt returned with each source, and of an extractive passage.
EXCERPT_CHARS = 200
PASSAGE_CHARS = 600
# An extractive answer quotes a source's best passage only if it scores this share of the best one.
EXTRACT_SHARE = 0.5
# No passage of the candidates holding this share of the question's weight, each word weighed by its idf among
# all the brain's notes (`distinctive_coverage`): the notes matched words scattered over a long page ("a hard
# time limit on Celery tasks" against click's docs), or only words most of the brain uses ("run tests on several
# Python versions" against any project's docs), not a place that answers. Then nothing answers, as when search
# abstains. Measured on the three tuning projects of bench/projects/ (bench/RESULTS.md, issue 45).
MIN_PASSAGE_COVERAGE = 0.25
# A note of a wing of at least this many notes (and not the whole brain) weighs a question's words by their idf
# among its wing's notes instead of the brain's (`question_weights`): fewer notes say too little about which words
# are common there. The bench's projects have 23-74 pages of docs each.
WING_NOTES = 20

NOTHING_FOUND = "The brain has no note that answers this question."
NO_NAME = "Nothing relevant: no note mentions {names}, which the question names."
NO_NAME_HELD = "Nothing relevant: notes matched its words, but none of them mentions {names}, which the question names."
NO_PASSAGE = (
    "Nothing relevant: notes matched some words, but no passage of them holds {share:.0%} of the question, "
    "its words weighed by how few notes use them (the best holds {best:.0%})."
)
NO_PASSAGE_READ = (
    "Nothing relevant: notes matched some words, but no passage of them holds {share:.0%} of the question, "
    "its words weighed by how few notes use them (the best holds {best:.0%}), and none says it in other words "
    "(the closest reads {close:.2f} like it, under {floor:.2f})."
)
NO_PASSAGE_LIKE = (
    "Nothing relevant: passages hold the question's words, but none reads like it (the closest reads {close:.2f} "
    "like it, under {floor:.2f}: unrelated text reads so)."
)

SYSTEM_PROMPT = (
    "You answer questions for a software team using only the numbered sources from the team's "
    "knowledge base that follow. Cite every statement with the number of the source it comes from, "
    "in square brackets: [1], [2]. If the sources do not contain the answer, say that they do not; "
    "never use knowledge from outside the sources."
)

_WORD = re.compile(r"\w+", re.UNICODE)


def source_text(note: Note, question: str, chars: int = SOURCE_CHARS) -> str:
    """What the reranker judges and the model reads of one source: the whole body when it fits in `chars`;
    else the note's passages that answer the question (`brain.passages`: the best one and the example it
    leads into or explains first, then the others best first, while they fit), in the note's order, with "…"
    where text was left out. A long page's answer is often far below its first `chars` characters (a
    project's reference page); a note none of whose passages matches is read from its opening."""
    body = note.body.strip()
    if len(body) <= chars:
        return body
    passages = split_passages(note.title, note.body)
    scored = score_passages(question, [(note, passage) for passage in passages])
    ranked = [item for item in passage_reader.reread(question, scored) if item.score > 0]
    if not ranked:
        return body[:chars]
    chosen: dict[int, str] = {}  # passage order → its text as read
    room = chars
    kept: list[Passage] = []
    for passage in [*quoted_passages(ranked, passages, second=False), *(item.passage for item in ranked[1:])]:
        if passage.order in chosen or any(holds(other, passage) for other in kept):
            continue  # read already, or held whole by a passage read already (a lead-in sentence)
        whole = quotable(passage.text.strip())
        text = whole
        if len(text) + 4 > room:  # its text, and the "…" that may stand before it
            if chosen:
                continue  # a shorter passage further down may still fit
            text = best_sentences(passage, question, room - 4)
        chosen[passage.order] = text
        if text == whole:
            kept.append(passage)  # read whole: what it holds is read too (a cut one may have left it out)
        room -= len(text) + 4
        if room < 40:
            break
    pieces: list[str] = []
    previous = -1
    for order in sorted(chosen):
        if order != previous + 1:
            pieces.append("…")
        pieces.append(chosen[order])
        previous = order
    if previous != len(passages) - 1:
        pieces.append("…")
    return "\n\n".join(pieces)


def extractive(question: str, candidates: list[Note], limit: int) -> tuple[list[tuple[int, Note]], str]:
    """The extractive answer: (sources numbered in the order they are quoted, the answer text).

    Every passage of every candidate competes (`brain.passages`): the sources are the notes of the
    best passages (at most `limit`), each quoted as `[n] Title: passage`, the best first, with the note's
    truth state (docs/truth.md), by its best passage and the code example under it
    (`brain.passages.quoted_passages`; the first two sources by their next best passages too, when those
    score nearly as well); a note is quoted only when its best passage scores EXTRACT_SHARE of the best one
    (the best is always quoted). With nothing matching, the first candidate's opening.
    """
    split = {note.id: split_passages(note.title, note.body) for note in candidates}
    pool = [(note, passage) for note in candidates for passage in split[note.id]]
    # The words' ranking, read again by the passage reader (`brain.passage_reader`): a passage that says what
    # is asked in other words moves up.
    ranked = [item for item in passage_reader.reread(question, score_passages(question, pool)) if item.score > 0]
    by_note: dict[int, list[ScoredPassage[Note]]] = {}
    for item in ranked:
        by_note.setdefault(item.source.id, []).append(item)
    if not by_note:
        note = candidates[0]
        return [(1, note)], f"[1] {note.title}{truth_label(note)}: {excerpt(note.body, EXCERPT_CHARS)}"
    top = ranked[0].score
    quoted = [items for items in by_note.values() if items[0].score >= EXTRACT_SHARE * top][:limit]
    chosen = [(n, items[0].source) for n, items in enumerate(quoted, start=1)]
    lines = []
    for n, items in enumerate(quoted, start=1):
        note = items[0].source
        # The two best sources also quote their next best passages when those score nearly as well, and after them
        # the few that score less but well (FURTHER_SHARE): a list item lower on the page may be the answer.
        passages = quoted_passages(items, split[note.id], second=n <= 2, further=n <= 2)
        text = "\n\n".join(best_sentences(passage, question, PASSAGE_CHARS) for passage in passages)
        lines.append(f"[{n}] {note.title}{truth_label(note)}: {text}")
    return chosen, "\n\n".join(lines)


def mentions(note: Note, names: list[str]) -> bool:
    """Whether the note holds each of `names` (as a word, by its stem: "Flask" in "flasks")."""
    held = frozenset().union(*(passage.token_set for passage in split_passages(note.title, note.body)))
    return all(not (tokens := passage_tokenize(name)) or tokens[0] in held for name in names)


def brain_document_frequency() -> tuple[Callable[[str], int], int]:
    """(how many notes hold a term, how many notes there are): the brain's own vocabulary."""
    index = bm25.current_index()
    return (lambda term: index.term_info(term)[1]), len(index)


def question_weights(question: str, wing: str) -> dict[str, float]:
    """The question's words weighed for a note of `wing`: by their idf among the wing's notes when it holds at least
    WING_NOTES of them and is not the whole brain, else among all the brain's notes. A word most of a project's pages
    use ("certificate" in an HTTP client's docs) is no evidence that one of them answers, however rare it is beside
    5,000 science abstracts; and a word the abstracts use but no page of the project ("valid", "year") is what the
    page lacks. So a project's docs answer in a large brain as they do in a brain of their own.

    A question in another language than English (`brain.language.foreign_language`) is weighed among the wing's notes
    however few they are: beside English notes every German word is rare, so "Wie richte ich eine Matrix in GitHub
    Actions ein?" held a German README's "GitHub" as a third of its weight, where in a brain of that README alone it
    holds a tenth (`tests/search/test_wing_weights.py`)."""
    index = bm25.current_index()
    size = index.wing_size(wing)
    least = 1 if foreign_language(question) else WING_NOTES
    if least <= size < len(index):
        return brain_weights(question, lambda term: index.wing_frequency(term, wing), size)
    return brain_weights(question, *brain_document_frequency())


def note_coverages(question: str, candidates: list[Note]) -> dict[int, float]:
    """For each candidate (by id), the largest share of the question's weight (`question_weights`: its words' idf
    among the notes of the candidate's wing, or of the whole brain) that one of its passages holds
    (`brain.passages.coverage`)."""
    by_wing: dict[str, dict[str, float]] = {}
    covered: dict[int, float] = {}
    for note in candidates:
        if note.wing not in by_wing:
            by_wing[note.wing] = question_weights(question, note.wing)
        weights = by_wing[note.wing]
        covered[note.id] = max(
            (coverage(passage, weights) for passage in split_passages(note.title, note.body)), default=0.0
        )
    return covered


def distinctive_coverage(question: str, candidates: list[Note]) -> float:
    """The largest share of the question's weight that one passage of the candidates holds (`note_coverages`)."""
    return max(note_coverages(question, candidates).values(), default=0.0)


def passage_gate(question: str, candidates: list[Note]) -> str | None:
    """Why no candidate answers the question, or None when one does.

    A note answers when one of its passages holds MIN_PASSAGE_COVERAGE of the question's weight and one reads
    more like the question than unrelated text does (UNRELATED_READING), or when one reads as close as a paraphrase
    does (GATE_SIMILARITY). Without the passage reader, the words alone decide. The words and the reading must be
    the same note's: in a large brain one science abstract held "make", "command" and "window" of "How do I make
    zsh share its command history across open terminal windows?" while a page of a CLI's docs read 0.53 like it."""
    covered = note_coverages(question, candidates)
    best = max(covered.values(), default=0.0)
    readings = passage_reader.closest_by_source(
        question, [(note.id, passage) for note in candidates for passage in split_passages(note.title, note.body)]
    )
    if readings is None:
        return None if best >= MIN_PASSAGE_COVERAGE else NO_PASSAGE.format(share=MIN_PASSAGE_COVERAGE, best=best)
    for note_id, share in covered.items():
        reading = readings.get(note_id, 0.0)
        if reading >= passage_reader.GATE_SIMILARITY or (
            share >= MIN_PASSAGE_COVERAGE and reading >= passage_reader.UNRELATED_READING
        ):
            return None
    if best < MIN_PASSAGE_COVERAGE:
        # A paraphrase holds few of the docs' words, and no passage reads close enough to say it in other words.
        return NO_PASSAGE_READ.format(
            share=MIN_PASSAGE_COVERAGE, best=best, close=max(readings.values()), floor=passage_reader.GATE_SIMILARITY
        )
    # Words are not enough in a large brain: among 5,000 science abstracts, "How long should I boil an egg to get a
    # runny yolk?" finds one on egg-yolk particles that holds half the question's weight.
    close = max((readings.get(note_id, 0.0) for note_id, share in covered.items() if share >= MIN_PASSAGE_COVERAGE))
    return NO_PASSAGE_LIKE.format(close=close, floor=passage_reader.UNRELATED_READING)


def truth_label(note: Note, before: str = " (", after: str = ")") -> str:
    """The note's truth state beside its title, or "" for a note that claims nothing about code (docs/truth.md)."""
    label = verification_dict(note)["label"]
    return f"{before}{label}{after}" if label else ""


def user_prompt(question: str, sources: list[tuple[int, Note]]) -> str:
    blocks = [
        f"[{n}] {note.title} ({note.slug}{truth_label(note, '; ', '')})\n{source_text(note, question)}"
        for n, note in sources
    ]
    return "Sources:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"


class SourceJson(TypedDict):
    n: int  # the number the answer cites, as [n]
    slug: str
    title: str
    path: str
    excerpt: str
    verification: VerificationJson


class AnswerJson(TypedDict):
    """What `answer()` returns: `brain.answer_tools.AnswerResult` on the wire."""

    answer: str
    sources: list[SourceJson]
    model: str | None
    reranked: bool
    synthesized: bool
    unreviewed_matches: int
    unreviewed: list[UnreviewedJson]
    unreviewed_hint: str | None
    reason: NotRequired[str]  # why nothing answers, or why the model's answer was not used


def answer(question: str, limit: int = 5) -> AnswerJson:
    """`{answer, sources: [{n, slug, title, path, excerpt}], model, reranked, synthesized, unreviewed_…}`.

    Sources are wiki notes only; raw notes that match are counted and named (`unreviewed_matches`,
    `unreviewed`), never cited.

    `limit` caps the sources; an LLM never gets more than MAX_LLM_SOURCES.
    """
    reranker = get_reranker()
    # Every BM25 hit stays a candidate whatever its vector similarity: the gates below judge them.
    response = search(question, limit=CANDIDATES_WITH_RERANKER if reranker else CANDIDATES, vector_veto=False)
    notes_by_id = Note.objects.in_bulk([hit.note_id for hit in response.hits])
    candidates = [notes_by_id[hit.note_id] for hit in response.hits if hit.note_id in notes_by_id]
    # Search's excerpt is centred on the query words; a note's opening is the fallback.
    excerpts = {hit.note_id: excerpt(hit.excerpt, EXCERPT_CHARS) for hit in response.hits if hit.excerpt}

    reason = None  # why nothing answers, when search found notes
    unknown = unknown_names(question, bm25.current_index()) if candidates else []
    if unknown:
        # "How do I set an environment variable in a Dockerfile?" against a brain that never says Dockerfile: the
        # notes matched its other words, not its subject.
        reason = NO_NAME.format(names=", ".join(f"`{name}`" for name in unknown[:3]))
        candidates = []
    names = question_names(question) if candidates else []
    if names:
        # In a large brain some note mentions almost any name ("Flask" in a lab's cell-culture flasks, "Django" in
        # a team's notes): the notes that answer must mention what the question names, not only its other words
        # ("How do I register a Flask blueprint under a URL prefix?" against Starlette's page on URL routing).
        holding = [note for note in candidates if mentions(note, names)]
        if not holding:
            reason = NO_NAME_HELD.format(names=", ".join(f"`{name}`" for name in names[:3]))
        candidates = holding
    # Words matched across a page, or words every note uses, are not an answer: some passage must hold enough of
    # the question's distinctive weight.
    if candidates:
        reason = passage_gate(question, candidates)
        if reason:
            candidates = []

    if reranker is not None and candidates:
        try:
            candidates = reranker.filter(
                question, candidates, text=lambda note: f"{note.title}\n\n{source_text(note, question)}"
            )
        except RerankerError as exc:
            raise AnswerUnavailable(f"The reranker failed, so no answer was attempted: {exc}") from None

    # A note whose code changed since (stale) comes after the others, and says so (docs/truth.md).
    candidates.sort(key=lambda note: note.verification_state == VerificationState.STALE)
    # A person waits: the answer's own timeout, and no retry (a retry doubles the wait on a busy server).
    llm = get_llm_client(timeout=settings.BRAIN_ANSWER_TIMEOUT, retries=0) if settings.BRAIN_ANSWER_MODEL else None
    cap = min(limit, MAX_LLM_SOURCES) if llm is not None else limit
    extract = ""
    if llm is None and candidates:
        # Without an LLM the passages choose the sources: the note that answers may not rank first.
        chosen, extract = extractive(question, candidates, cap)
    else:
        chosen = list(enumerate(candidates[:cap], start=1))

    def sources_of(numbered: list[tuple[int, Note]]) -> list[SourceJson]:
        return [
            {
                "n": n,
                "slug": note.slug,
                "title": note.title,
                "path": note.path,
                "excerpt": excerpts.get(note.id) or excerpt(note.body, EXCERPT_CHARS),
                "verification": verification_dict(note),
            }
            for n, note in numbered
        ]

    sources = sources_of(chosen)
    result: AnswerJson = {
        "answer": "",
        "sources": sources,
        "model": None,
        "reranked": reranker is not None,
        "synthesized": False,
        "unreviewed_matches": response.unreviewed_matches,
        "unreviewed": response.unreviewed,
        "unreviewed_hint": response.unreviewed_hint,
    }

    if not chosen:
        result["answer"] = NOTHING_FOUND
        if reason:
            result["reason"] = reason
        return result

    if llm is None:
        result["answer"] = extract
        return result

    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(question, chosen)},
    ]
    try:
        chat = llm.chat(messages, model=settings.BRAIN_ANSWER_MODEL, temperature=0, purpose="answer")
    except LLMError as exc:
        raise AnswerUnavailable(f"The LLM ({settings.BRAIN_ANSWER_MODEL}) failed to answer: {exc}") from None
    problem = synthesized_answer_problem(chat.text, sources=len(chosen), truncated=chat.truncated)
    if problem is not None:
        # Garbage is never passed off as a sourced answer: the passages themselves, and why.
        if not chat.truncated:
            mark_model_call(chat.call_id, "bad_output", problem)
        # The passages choose and number the sources again, as without a model (the one that answers may not rank first).
        rechosen, extract = extractive(question, [note for _, note in chosen], len(chosen))
        result.update(
            {"answer": extract, "sources": sources_of(rechosen), "reason": f"{problem}; the passages are shown instead"}
        )
        return result
    result.update({"answer": chat.text.strip(), "model": chat.model, "synthesized": True})
    return result
