"""brain_answer: a question in, an answer with numbered sources out.

    retrieve  search(question) — CANDIDATES, or CANDIDATES_WITH_RERANKER when a
              reranker is configured (it will throw some away)
    filter    the reranker's yes/no judgement; kept candidates keep retrieval order
    answer    at most MAX_LLM_SOURCES sources, numbered [1], [2]…, go to the LLM
              (BRAIN_ANSWER_MODEL through LITELLM_BASE_URL) with the instruction
              to answer only from them and cite them by number; without an LLM
              the answer is extractive: the best passage of each source
    accept    the model's answer counts (`synthesized: true`) only if it was not cut
              off, cites sources that exist and is not degenerate
              (brain.answer_checks); otherwise the extractive answer, with `reason`

Nothing surviving the filter is an answer too: it says so and cites nothing.
A failing reranker or LLM raises AnswerUnavailable naming the service.
"""

from __future__ import annotations

import re

from django.conf import settings

from brain.answer_checks import synthesized_answer_problem
from brain.errors import AnswerUnavailable
from brain.models import Note
from brain.search import search
from hyperguild.lib.llm import LLMError, get_llm_client
from hyperguild.lib.model_calls import mark_model_call
from hyperguild.lib.reranker import RerankerError, get_reranker
from hyperguild.lib.text import excerpt

CANDIDATES = 10
CANDIDATES_WITH_RERANKER = 20
MAX_LLM_SOURCES = 5
# How much of each source's body the reranker judges and the LLM reads.
SOURCE_CHARS = 2000
# Length of the excerpt returned with each source, and of an extractive passage.
EXCERPT_CHARS = 200
PASSAGE_CHARS = 600

NOTHING_FOUND = "The brain has no note that answers this question."

SYSTEM_PROMPT = (
    "You answer questions for a software team using only the numbered sources from the team's "
    "knowledge base that follow. Cite every statement with the number of the source it comes from, "
    "in square brackets: [1], [2]. If the sources do not contain the answer, say that they do not; "
    "never use knowledge from outside the sources."
)

_WORD = re.compile(r"\w+", re.UNICODE)


def _source_text(note: Note) -> str:
    return f"{note.title}\n\n{note.body[:SOURCE_CHARS]}"


def best_passage(question: str, body: str) -> str:
    """The paragraph of `body` sharing most words with the question (the first one on a tie)."""
    wanted = {word.lower() for word in _WORD.findall(question) if len(word) > 2}
    paragraphs = [part.strip() for part in re.split(r"\n\s*\n", body) if part.strip()]
    if not paragraphs:
        return ""
    best = max(
        paragraphs,
        key=lambda part: (len(wanted & {word.lower() for word in _WORD.findall(part)}), -paragraphs.index(part)),
    )
    return excerpt(best, PASSAGE_CHARS)


def user_prompt(question: str, sources: list[tuple[int, Note]]) -> str:
    blocks = [f"[{n}] {note.title} ({note.slug})\n{note.body[:SOURCE_CHARS].strip()}" for n, note in sources]
    return "Sources:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"


def answer(question: str, limit: int = 5) -> dict:
    """`{answer, sources: [{n, slug, title, path, excerpt}], model, reranked, synthesized, unreviewed_…}`.

    Sources are wiki notes only; raw notes that match are counted and named (`unreviewed_matches`,
    `unreviewed`), never cited.

    `limit` caps the sources; an LLM never gets more than MAX_LLM_SOURCES.
    """
    reranker = get_reranker()
    response = search(question, limit=CANDIDATES_WITH_RERANKER if reranker else CANDIDATES)
    notes_by_id = Note.objects.in_bulk([hit.note_id for hit in response.hits])
    candidates = [notes_by_id[hit.note_id] for hit in response.hits if hit.note_id in notes_by_id]
    # Search's excerpt is centred on the query words; a note's opening is the fallback.
    excerpts = {hit.note_id: excerpt(hit.excerpt, EXCERPT_CHARS) for hit in response.hits if hit.excerpt}

    if reranker is not None and candidates:
        try:
            candidates = reranker.filter(question, candidates, text=_source_text)
        except RerankerError as exc:
            raise AnswerUnavailable(f"The reranker failed, so no answer was attempted: {exc}") from None

    # A person waits: the answer's own timeout, and no retry (a retry doubles the wait on a busy server).
    llm = get_llm_client(timeout=settings.BRAIN_ANSWER_TIMEOUT, retries=0) if settings.BRAIN_ANSWER_MODEL else None
    cap = min(limit, MAX_LLM_SOURCES) if llm is not None else limit
    chosen = list(enumerate(candidates[:cap], start=1))
    sources = [
        {
            "n": n,
            "slug": note.slug,
            "title": note.title,
            "path": note.path,
            "excerpt": excerpts.get(note.id) or excerpt(note.body, EXCERPT_CHARS),
        }
        for n, note in chosen
    ]
    result = {
        "answer": "", "sources": sources, "model": None, "reranked": reranker is not None, "synthesized": False,
        "unreviewed_matches": response.unreviewed_matches, "unreviewed": response.unreviewed,
        "unreviewed_hint": response.unreviewed_hint,
    }  # fmt: skip

    if not chosen:
        result["answer"] = NOTHING_FOUND
        return result

    if llm is None:
        result["answer"] = extractive_answer(question, chosen)
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
        result.update(answer=extractive_answer(question, chosen), reason=f"{problem}; the passages are shown instead")
        return result
    result.update(answer=chat.text.strip(), model=chat.model, synthesized=True)
    return result


def extractive_answer(question: str, chosen: list[tuple[int, Note]]) -> str:
    """The answer without a model: the passage of each source that answers the question."""
    return "\n\n".join(
        f"[{n}] {note.title}: {best_passage(question, note.body) or excerpt(note.body, EXCERPT_CHARS)}" for n, note in chosen
    )
