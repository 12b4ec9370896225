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

import json
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

import httpx
from django.conf import settings

from hyperguild.lib.http import (
    ServiceClient,
    ServiceError,
    ServiceRejected,
    ServiceUnavailable,
    configured_client,
    safe_url,
)
from hyperguild.lib.model_calls import record_model_call

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

    def __init__(self, message: str, *, outcome: str = "model_error", response: str = ""):
        super().__init__(message)
        self.outcome = outcome  # how its ModelCall ends: outage, model_error or bad_output
        self.response = response


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


def _ollama_counts(body: str) -> tuple[int, int] | None:
    """(prompt_eval_count, eval_count) of an Ollama generate body, None when it does not say."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    counts: tuple[Any, Any] = (
        (data.get("prompt_eval_count"), data.get("eval_count")) if isinstance(data, dict) else (None, None)
    )
    if all(isinstance(count, int) and not isinstance(count, bool) for count in counts):
        return counts[0], counts[1]
    return None


class GenerateOptions(TypedDict):
    temperature: float
    num_predict: int


class GenerateRequest(TypedDict):
    """The body of Ollama's POST /api/generate as the reranker sends it (also what a model call records)."""

    model: str
    prompt: str
    stream: bool
    raw: bool
    options: GenerateOptions


@dataclass
class Judgement:
    score: float
    response: str
    done_reason: str = ""  # Ollama's: "stop", or "length" when cut at num_predict
    body: str = field(default="", repr=False)  # the server's body as received
    payload: GenerateRequest | None = field(default=None, repr=False)
    latency_ms: int = 0

    @property
    def keep(self) -> bool:
        return self.score > 0


@dataclass
class _Failure:
    error: RerankerError
    payload: GenerateRequest
    latency_ms: int
    status: int | None = None


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


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
        record: bool = False,
    ):
        # Record every judgement as a ModelCall (needs the database; get_reranker's clients do).
        self.record = record
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.retries = retries
        self.instruction = instruction
        # A pool as large as the requests in flight; shared with every client of this server.
        self._http = ServiceClient(
            f"reranker (model {model!r})",
            self.base_url,
            timeout=timeout,
            retries=retries,
            max_connections=self.concurrency,
        )

    @property
    def generate_url(self) -> str:
        return f"{self.base_url}/api/generate"

    def close(self) -> None:
        self._http.close()

    def payload(self, query: str, document: str) -> GenerateRequest:
        return {
            "model": self.model,
            "prompt": build_prompt(query, document[:MAX_DOCUMENT_CHARS], self.instruction),
            "stream": False,
            "raw": True,
            "options": {"temperature": 0, "num_predict": NUM_PREDICT},
        }

    def judge(self, query: str, document: str) -> Judgement:
        """Ask about one document; raises RerankerError when the service fails."""
        outcome = self._judge_timed(query, document)
        self._record([outcome])
        if isinstance(outcome, _Failure):
            raise outcome.error
        return outcome

    def _judge_timed(self, query: str, document: str) -> Judgement | _Failure:
        """One request, never raising: safe in a worker thread (nothing is written here)."""
        payload = self.payload(query, document)
        started = time.monotonic()
        try:
            response = self._http.post("/api/generate", json=payload)
        except ServiceRejected as exc:
            # Ollama answers 404 for a model that is not pulled.
            error = RerankerError(
                f"reranker at {self.base_url} refused model {self.model!r}: HTTP {exc.status}: {exc.detail}"
            )
            return _Failure(error, payload, _ms_since(started), exc.status)
        except ServiceError as exc:
            outcome = "outage" if isinstance(exc, ServiceUnavailable) else "bad_output"
            return _Failure(RerankerError(str(exc), outcome=outcome), payload, _ms_since(started), exc.status)
        try:
            judgement = self._judgement(response)
        except RerankerError as exc:
            exc.outcome, exc.response = "bad_output", response.text
            return _Failure(exc, payload, _ms_since(started), response.status_code)
        judgement.payload, judgement.latency_ms = payload, _ms_since(started)
        return judgement

    def _record(self, outcomes: Sequence[Judgement | _Failure]) -> None:
        """One ModelCall for the whole pass over N candidates (not N): its tokens are the sum of Ollama's
        `prompt_eval_count` and `eval_count`, unknown if any answer lacks them; the worst outcome wins."""
        if not self.record or not outcomes:
            return

        failures = [item for item in outcomes if isinstance(item, _Failure)]
        judgements = [item for item in outcomes if isinstance(item, Judgement)]
        counts = [_ollama_counts(item.body) for item in judgements]
        known = bool(counts) and not failures and all(count is not None for count in counts)
        truncated = any(item.done_reason == "length" and item.score == 0 for item in judgements)
        outcome = failures[0].error.outcome if failures else ("truncated" if truncated else "ok")
        record_model_call(
            provider="ollama",
            endpoint=safe_url(self.generate_url),
            model=self.model,
            purpose="rerank",
            request=[item.payload for item in outcomes] if len(outcomes) > 1 else outcomes[0].payload,
            max_tokens=NUM_PREDICT,
            latency_ms=max(item.latency_ms for item in outcomes),
            outcome=outcome,
            response="\n".join(item.body if isinstance(item, Judgement) else item.error.response for item in outcomes),
            error="; ".join(str(item.error) for item in failures),
            status_code=failures[0].status if failures else 200,
            finish_reason=",".join(sorted({item.done_reason for item in judgements if item.done_reason})),
            input_tokens=sum(count[0] for count in counts if count is not None) if known else None,
            output_tokens=sum(count[1] for count in counts if count is not None) if known else None,
        )

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
        done_reason = body.get("done_reason") if isinstance(body.get("done_reason"), str) else ""
        return Judgement(score=score_response(text), response=text, done_reason=done_reason, body=response.text)

    def judge_all(self, query: str, documents: Sequence[str]) -> list[Judgement]:
        """One judgement per document, in order, at most `concurrency` requests in flight.

        The requests run in threads; their records are written here, in the caller's thread (its
        database connection and transaction), once all are in.
        """
        if not documents:
            return []
        if len(documents) == 1 or self.concurrency == 1:
            return [self.judge(query, document) for document in documents]
        outcomes: list[Judgement | _Failure] = []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(documents)), thread_name_prefix="rerank") as pool:
            futures = [pool.submit(self._judge_timed, query, document) for document in documents]
            for future in futures:
                try:
                    outcome = future.result()
                except CancelledError:
                    continue
                outcomes.append(outcome)
                if isinstance(outcome, _Failure):
                    # One failure fails the whole filter: don't keep calling a service that is down.
                    pool.shutdown(wait=True, cancel_futures=True)
        self._record(outcomes)
        for item in outcomes:
            if isinstance(item, _Failure):
                raise item.error
        return [item for item in outcomes if isinstance(item, Judgement)]  # every one: a failure raised above

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
        # A person waits on the reranker (brain_query, /query): its own short budget, never above the general one.
        min(settings.BRAIN_RERANKER_TIMEOUT, settings.HYPERGUILD_HTTP_TIMEOUT),
        min(settings.BRAIN_RERANKER_RETRIES, settings.HYPERGUILD_HTTP_RETRIES),
    )
    return configured_client(
        ("reranker", url, model, concurrency, timeout, retries),
        lambda: RerankerClient(url, model, concurrency=concurrency, timeout=timeout, retries=retries, record=True),
    )
