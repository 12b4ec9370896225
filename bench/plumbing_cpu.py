"""CPU per call of hyperguild's own plumbing against the library-built alternatives in bench/plumbing/ (issue 49):

    PYTHONPATH=<tenacity, pybreaker, openai> .venv/bin/python bench/plumbing_cpu.py --calls 2000 --rounds 5

- http: `ServiceClient.post` of hyperguild.lib.http against bench/plumbing/http_libs.py (tenacity + pybreaker),
  a 200 at once, and a 503 then a 200 (one retry, no pause);
- llm: `LLMClient.chat` of hyperguild.lib.llm against bench/plumbing/llm_sdks.py (the openai SDK), a chat
  completion of 40 words parsed into a ChatResult (no ModelCall record: no database).

Both sides answer from an in-process mock transport (httpx.MockTransport; the SDK's own httpx2.MockTransport),
so the figure is the client's own CPU, not a socket's or a server's. Prints the median (min, max) µs of CPU per
call over the rounds, the sides alternating, and the ratio alternative / ours.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://bench@127.0.0.1:1/none")  # settings must not start a database
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")

import django  # noqa: E402 (after the path and settings set-up)

django.setup()

import httpx  # noqa: E402
import httpx2  # noqa: E402 (the openai SDK's HTTP client)
import openai  # noqa: E402
import pybreaker  # noqa: E402
import tenacity  # noqa: E402

from bench.contract_overhead import cpu_per_call  # noqa: E402
from bench.plumbing import http_libs, llm_sdks  # noqa: E402
from hyperguild.lib import http as ours_http  # noqa: E402
from hyperguild.lib import llm as ours_llm  # noqa: E402

URL = "http://gateway.test"
COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "fast",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": " ".join(["word"] * 40)}}
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 40, "total_tokens": 52},
}
BODY = json.dumps(COMPLETION).encode()
MESSAGES = [{"role": "user", "content": "What does the retry policy do?"}]


def scripted(statuses: list[int], response: Callable[..., object]) -> Callable[[object], object]:
    """A mock transport's handler answering the statuses in turn, over and over."""
    position = [0]

    def answer(request: object) -> object:
        status = statuses[position[0] % len(statuses)]
        position[0] += 1
        content = BODY if status == 200 else b'{"error": {"message": "overloaded"}}'
        return response(status, content=content, headers={"Content-Type": "application/json"})

    return answer


def http_calls(module: object, statuses: list[int]) -> Callable[[], object]:
    transport = httpx.MockTransport(scripted(statuses, httpx.Response))  # type: ignore[arg-type]
    client = module.ServiceClient("bench", URL, transport=transport, retries=2, backoff=0.0)  # type: ignore[attr-defined]
    return lambda: client.post("/v1/chat/completions", json={"model": "fast", "messages": MESSAGES})


def llm_ours() -> Callable[[], object]:
    client = ours_llm.LLMClient(URL, "key", transport=httpx.MockTransport(scripted([200], httpx.Response)))  # type: ignore[arg-type]
    return lambda: client.chat(MESSAGES, model="fast", max_tokens=100)


def llm_sdk() -> Callable[[], object]:
    client = llm_sdks.LLMClient(URL, "key")
    mock = httpx2.Client(transport=httpx2.MockTransport(scripted([200], httpx2.Response)))  # type: ignore[arg-type]
    client._sdk = openai.OpenAI(base_url=f"{URL}/v1", api_key="key", max_retries=2, http_client=mock)
    return lambda: client.chat(MESSAGES, model="fast", max_tokens=100)


def parts(calls: int, rounds: int) -> None:
    """The libraries' machinery alone around a call that does nothing: where the difference comes from."""
    ours_breaker, theirs_breaker = (
        ours_http.CircuitBreaker(5, 30),
        pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30),
    )

    def ours_guard() -> object:
        ours_breaker.before_call()
        ours_breaker.record_success()
        return None

    def tenacity_retry() -> object:
        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(3),
            wait=tenacity.wait_none(),
            retry=tenacity.retry_if_result(lambda outcome: outcome is not None),
        )(lambda: None)

    compare("part: breaker around a no-op", ours_guard, lambda: theirs_breaker.call(lambda: None), calls, rounds)
    tenacity_retry()
    values = sorted(cpu_per_call(tenacity_retry, calls) for _ in range(rounds))
    print(
        f"{'part: tenacity.Retrying, no-op':34} library: median {values[len(values) // 2]:7.1f} µs "
        "(ours is a for loop in ServiceClient._attempts)"
    )


def compare(title: str, ours: Callable[[], object], theirs: Callable[[], object], calls: int, rounds: int) -> None:
    ours(), theirs()  # warm up (imports, pools)
    figures: dict[str, list[float]] = {"ours": [], "library": []}
    for _ in range(rounds):
        figures["ours"].append(cpu_per_call(ours, calls))
        figures["library"].append(cpu_per_call(theirs, calls))
    medians = {}
    for name, values in figures.items():
        values.sort()
        medians[name] = values[len(values) // 2]
        print(f"{title:34} {name:8}: median {medians[name]:7.1f} µs (min {values[0]:.1f}, max {values[-1]:.1f})")
    print(f"{title:34} library / ours = {medians['library'] / medians['ours']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--part", choices=["http", "llm", "parts", "all"], default="all")
    options = parser.parse_args()
    if options.part in ("http", "all"):
        compare(
            "http: 200 at once",
            http_calls(ours_http, [200]),
            http_calls(http_libs, [200]),
            options.calls,
            options.rounds,
        )
        compare(
            "http: 503 then 200 (one retry)",
            http_calls(ours_http, [503, 200]),
            http_calls(http_libs, [503, 200]),
            options.calls // 2,
            options.rounds,
        )
    if options.part in ("parts", "all"):
        parts(options.calls * 5, options.rounds)
    if options.part in ("llm", "all"):
        compare("llm: one chat completion", llm_ours(), llm_sdk(), options.calls, options.rounds)


if __name__ == "__main__":
    main()
