"""Qwen3-Reranker on Ollama, used as a yes/no relevance filter.

The model is asked, once per candidate, whether the document meets the
query, in the exact chat template it was trained on (`raw: true` so Ollama
applies no template of its own). Its first word after any
`<think>…</think>` block decides: "yes" keeps the candidate, "no" drops it,
anything else scores 0 and drops it too. The kept candidates keep their
retrieval order: this is a filter, not a re-ranker.

    reranker = get_reranker()          # None when BRAIN_RERANKER_URL is empty
    kept = reranker.filter("how do we deploy?", hits, text=lambda hit: hit.excerpt)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import httpx
from django.conf import settings

from hyperguild.lib.http import ServiceClient, ServiceError, ServiceRejected, configured_client

T = TypeVar("T")

DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

# Qwen3-Reranker's published prompt, word for word (the model was trained on it).
PROMPT_PREFIX = (
    "<|im_start|>system\n"
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
PROMPT_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"

# The answer is one word; a few tokens leave room for a stray space or newline.
NUM_PREDICT = 4
# Longer documents are cut: the 0.6B model judges on the opening of a note.
MAX_DOCUMENT_CHARS = 4000

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FIRST_WORD = re.compile(r"\s*([A-Za-z]+)")


class RerankerError(Exception):
    """The reranker service could not judge a candidate (down, timed out, refused the model)."""


def build_prompt(query: str, document: str, instruction: str = DEFAULT_INSTRUCTION) -> str:
    body = f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
    return PROMPT_PREFIX + body + PROMPT_SUFFIX


def score_response(text: str) -> float:
    """1.0 for "yes", 0.0 for "no" and for anything ambiguous.

    The first word after any `<think>…</think>` block decides; an unclosed
    `<think>` (the model ran out of tokens while thinking) is ambiguous.
    """
    visible = _THINK_BLOCK.sub("", text)
    if "<think>" in visible:
        return 0.0
    match = _FIRST_WORD.match(visible)
    if match and match.group(1).lower() == "yes":
        return 1.0
    return 0.0


@dataclass(frozen=True)
class Judgement:
    score: float
    response: str

    @property
    def keep(self) -> bool:
        return self.score > 0


class RerankerClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        concurrency: int = 4,
        timeout: float = 60.0,
        retries: int = 2,
        instruction: str = DEFAULT_INSTRUCTION,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.retries = retries
        self.instruction = instruction
        # A pool as large as the requests in flight; shared with every client of this server.
        self._http = ServiceClient(
            f"reranker (model {model!r})", self.base_url, timeout=timeout, retries=retries, max_connections=self.concurrency
        )

    @property
    def generate_url(self) -> str:
        return f"{self.base_url}/api/generate"

    def close(self) -> None:
        self._http.close()

    def payload(self, query: str, document: str) -> dict:
        return {
            "model": self.model,
            "prompt": build_prompt(query, document[:MAX_DOCUMENT_CHARS], self.instruction),
            "stream": False,
            "raw": True,
            "options": {"temperature": 0, "num_predict": NUM_PREDICT},
        }

    def judge(self, query: str, document: str) -> Judgement:
        """Ask about one document; raises RerankerError when the service fails."""
        try:
            response = self._http.post("/api/generate", json=self.payload(query, document))
        except ServiceRejected as exc:
            # Ollama answers 404 for a model that is not pulled.
            raise RerankerError(
                f"reranker at {self.base_url} refused model {self.model!r}: HTTP {exc.status}: {exc.detail}"
            ) from None
        except ServiceError as exc:
            raise RerankerError(str(exc)) from None
        return self._judgement(response)

    def _judgement(self, response: httpx.Response) -> Judgement:
        try:
            body = response.json()
            text = body["response"]
        except (ValueError, KeyError, TypeError):
            raise RerankerError(
                f"reranker at {self.base_url} answered with something that is not an Ollama generate body"
            ) from None
        if not isinstance(text, str):
            raise RerankerError(f"reranker at {self.base_url} answered without a text response")
        return Judgement(score=score_response(text), response=text)

    def judge_all(self, query: str, documents: Sequence[str]) -> list[Judgement]:
        """One judgement per document, in order, at most `concurrency` requests in flight."""
        if not documents:
            return []
        if len(documents) == 1 or self.concurrency == 1:
            return [self.judge(query, document) for document in documents]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(documents)), thread_name_prefix="rerank") as pool:
            futures = [pool.submit(self.judge, query, document) for document in documents]
            try:
                return [future.result() for future in futures]
            except RerankerError:
                # One failure fails the whole filter: don't keep calling a service that is down.
                pool.shutdown(wait=True, cancel_futures=True)
                raise

    def filter(self, query: str, candidates: Sequence[T], *, text: Callable[[T], str]) -> list[T]:
        """The candidates judged relevant, in their original (retrieval) order."""
        judgements = self.judge_all(query, [text(candidate) for candidate in candidates])
        return [candidate for candidate, judgement in zip(candidates, judgements, strict=True) if judgement.keep]


def get_reranker() -> RerankerClient | None:
    """The configured reranker, or None when BRAIN_RERANKER_URL is empty (no filter)."""
    if not settings.BRAIN_RERANKER_URL:
        return None
    url, model, concurrency, timeout, retries = (
        settings.BRAIN_RERANKER_URL,
        settings.BRAIN_RERANKER_MODEL,
        settings.BRAIN_RERANKER_CONCURRENCY,
        settings.HYPERGUILD_HTTP_TIMEOUT,
        settings.HYPERGUILD_HTTP_RETRIES,
    )
    return configured_client(
        ("reranker", url, model, concurrency, timeout, retries),
        lambda: RerankerClient(url, model, concurrency=concurrency, timeout=timeout, retries=retries),
    )
