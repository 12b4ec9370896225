"""Benchmark (not collected): what an embedder that accepts connections and never answers costs brain queries.

    .venv/bin/python -m tests.core.bench_silent_service

Prints the wait and the connections of each query embedding against a silent server on 127.0.0.1
(the fixed settings BRAIN_QUERY_EMBED_TIMEOUT, 2 s, and HYPERGUILD_BREAKER_FAILURES, 5); asserts nothing.
"""

from __future__ import annotations

import time

from hyperguild.boot import setup_django


def main() -> None:
    setup_django()
    from django.conf import settings

    from hyperguild.lib.embedders import EmbedderError, OllamaEmbedder
    from hyperguild.lib.http import breaker_states
    from tests.core.test_bounded_outside_calls import SilentServer

    server = SilentServer()
    embedder = OllamaEmbedder(
        server.url,
        "nomic-embed-text",
        timeout=settings.BRAIN_EMBED_TIMEOUT,
        query_timeout=settings.BRAIN_QUERY_EMBED_TIMEOUT,
    )
    total = 0.0
    for number in range(1, 9):
        started = time.monotonic()
        try:
            embedder.embed_query("event loop")
        except EmbedderError:
            pass
        took = time.monotonic() - started
        total += took
        print(f"query {number}: waited {took:.2f} s; connections to the silent server so far: {server.connections}")
    print(f"8 queries waited {total:.2f} s in all; breakers: { {k: v['state'] for k, v in breaker_states().items()} }")
    server.close()


if __name__ == "__main__":
    main()
