"""hyperguild.lib.http against real HTTP servers on 127.0.0.1: retries, errors, the breaker, pooling.

The server is the fake OpenAI gateway: every call here posts to its chat-completions path.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from hyperguild.lib.http import (
    CircuitOpen,
    ServiceBadResponse,
    ServiceClient,
    ServiceRejected,
    ServiceTimeout,
    ServiceUnavailable,
    backoff_delay,
    breaker_states,
)
from hyperguild.lib.text import excerpt
from tests.conftest import free_port
from tests.fakes.openai import FakeOpenAI, Reply

PATH = "/v1/chat/completions"
OK = Reply(200, {"ok": True})


def ok(request: dict) -> Reply:
    return OK


def down(request: dict) -> Reply:
    return Reply.error(503, "overloaded")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=ok) as running:
        yield running


@pytest.fixture
def quick(settings):
    """Short pauses so retries cost milliseconds."""
    settings.HYPERGUILD_HTTP_BACKOFF_SECONDS = 0.01
    settings.HYPERGUILD_HTTP_BACKOFF_MAX_SECONDS = 0.05
    return settings


def call(client: ServiceClient, **kwargs):
    return client.post(PATH, json={"model": "m"}, **kwargs)


# --- the retry policy --------------------------------------------------------------------------


def test_a_500_and_a_429_are_retried_then_the_answer_is_returned(server, quick):
    server.queue(Reply.error(500), Reply.error(429))
    response = call(ServiceClient("svc", server.url, retries=2))
    assert response.json() == {"ok": True}
    assert len(server.requests) == 3


def test_retry_after_is_honoured(server, quick):
    server.queue(Reply(503, {}, headers={"Retry-After": "0.4"}))
    call(ServiceClient("svc", server.url, retries=1))
    first, second = server.requests
    assert second.at - first.at >= 0.35


def test_a_long_retry_after_is_cut_to_the_cap(server, quick):
    quick.HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS = 0.1
    server.queue(Reply(429, {}, headers={"Retry-After": "120"}))
    started = time.monotonic()
    call(ServiceClient("svc", server.url, retries=1))
    assert len(server.requests) == 2
    assert time.monotonic() - started < 30  # the server asked for 120 s


def test_backoff_doubles_with_jitter_and_stops_at_the_cap():
    for retry, full in [(1, 0.2), (2, 0.4), (3, 0.8), (6, 5.0), (12, 5.0)]:
        pauses = [backoff_delay(retry, 0.2, 5.0) for _ in range(50)]
        assert all(full / 2 <= pause <= full for pause in pauses)
        assert len(set(pauses)) > 1  # jitter: not every client retries at the same instant


def test_it_gives_up_after_the_bounded_attempts_naming_the_service_and_the_url(server, quick):
    server.default = down
    client = ServiceClient("the LLM gateway", server.url, headers={"Authorization": "Bearer sk-secret"}, retries=2)
    with pytest.raises(ServiceUnavailable) as caught:
        call(client)
    error = caught.value
    assert len(server.requests) == 3 and error.attempts == 3 and error.status == 503
    assert str(error) == f"the LLM gateway at {server.url}{PATH} is unavailable after 3 attempts: HTTP 503: overloaded"
    assert "sk-secret" not in str(error)


def test_credentials_in_the_url_stay_out_of_the_message(server, quick):
    server.default = down
    url = server.url.replace("http://", "http://user:pa55word@")
    with pytest.raises(ServiceUnavailable) as caught:
        call(ServiceClient("svc", url, retries=0))
    assert "pa55word" not in str(caught.value) and server.url in str(caught.value)


def test_a_4xx_is_rejected_at_once_with_the_services_own_message(server, quick):
    server.queue(Reply(404, {"error": "model 'ghost' not found, try pulling it first"}))
    with pytest.raises(ServiceRejected) as caught:
        call(ServiceClient("ollama", server.url, retries=3))
    assert len(server.requests) == 1
    assert caught.value.status == 404 and caught.value.detail == "model 'ghost' not found, try pulling it first"
    assert "refused the request with HTTP 404" in str(caught.value)


def test_a_slow_service_times_out_per_call(server, quick):
    server.default = lambda request: Reply(200, {}, delay=1.0)
    client = ServiceClient("svc", server.url, timeout=5, retries=1)
    with pytest.raises(ServiceTimeout, match="timed out after 0.2 s") as caught:
        call(client, timeout=0.2)
    assert caught.value.attempts == 2


def test_a_closed_port_is_unavailable_and_the_query_string_stays_out_of_the_message(quick):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceUnavailable, match="could not connect") as caught:
        ServiceClient("svc", url, retries=1).get("/models?api_key=hidden")
    assert caught.value.attempts == 2 and f"{url}/models" in str(caught.value)
    assert "hidden" not in str(caught.value)


def test_a_2xx_body_that_is_not_json_is_a_bad_response_naming_the_service(server):
    server.queue(Reply(200, raw=b"<html>gateway page</html>"))
    with pytest.raises(ServiceBadResponse) as caught:
        ServiceClient("the LLM gateway", server.url).post_json(PATH, {"model": "m"})
    assert str(caught.value) == (
        f"the LLM gateway at {server.url}{PATH} answered HTTP 200 with a body that is not JSON: <html>gateway page</html>"
    )
    assert caught.value.service == "the LLM gateway" and caught.value.status == 200


def test_excerpt_keeps_one_line_and_cuts_long_text():
    assert excerpt("  a\n  b  ") == "a b"
    cut = excerpt("word " * 200, limit=50)
    assert len(cut) == 50 and cut.endswith("…")
    assert excerpt(b"\xff bytes") == "\ufffd bytes"


# --- the circuit breaker -----------------------------------------------------------------------


@pytest.fixture
def breaker_settings(quick):
    quick.HYPERGUILD_BREAKER_FAILURES = 3
    quick.HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 30
    return quick


def open_briefly(server: FakeOpenAI, client: ServiceClient, settings) -> None:
    """Open the breaker with a 0.2 s cool-down and let it pass; a breaker opened later waits 30 s."""
    settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 0.2
    fail_three_times(server, client)
    time.sleep(0.25)
    settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 30


def state_of(server: FakeOpenAI) -> dict:
    return breaker_states()[f"svc {server.url}"]


def fail_three_times(server: FakeOpenAI, client: ServiceClient) -> None:
    """Three calls that end unavailable: enough to open the breaker under `breaker_settings`."""
    server.default = down
    for _ in range(3):
        with pytest.raises(ServiceUnavailable):
            call(client)


def test_the_breaker_opens_after_consecutive_failures_and_refuses_calls(server, breaker_settings):
    client = ServiceClient("svc", server.url, retries=1)
    fail_three_times(server, client)
    assert len(server.requests) == 6
    assert state_of(server)["state"] == "open" and state_of(server)["consecutive_failures"] == 3

    with pytest.raises(CircuitOpen, match="3 calls in a row failed .last: HTTP 503: overloaded"):
        call(client)
    assert len(server.requests) == 6  # nothing went out


def test_after_the_cool_down_one_probe_closes_it_again(server, breaker_settings):
    client = ServiceClient("svc", server.url, retries=0)
    open_briefly(server, client, breaker_settings)
    assert state_of(server)["state"] == "half-open"

    server.default = ok
    assert call(client).status_code == 200
    assert state_of(server) == {
        "state": "closed",
        "consecutive_failures": 0,
        "retry_in_seconds": 0.0,
        "last_problem": "HTTP 503: overloaded",
    }


def test_a_failed_probe_opens_it_again_after_one_attempt(server, breaker_settings):
    client = ServiceClient("svc", server.url, retries=2)
    open_briefly(server, client, breaker_settings)
    before = len(server.requests)
    with pytest.raises(ServiceUnavailable) as caught:
        call(client)
    assert not isinstance(caught.value, CircuitOpen)
    assert len(server.requests) == before + 1  # the probe is a single attempt
    assert state_of(server)["state"] == "open"
    with pytest.raises(CircuitOpen):
        call(client)


def test_while_a_probe_is_out_other_calls_are_refused(server, breaker_settings):
    client = ServiceClient("svc", server.url, retries=0)
    open_briefly(server, client, breaker_settings)
    server.default = lambda request: Reply(200, {}, delay=0.5)
    probe = threading.Thread(target=call, args=(client,))
    probe.start()
    time.sleep(0.15)
    with pytest.raises(CircuitOpen):
        call(client)
    probe.join()
    assert state_of(server)["state"] == "closed"


def test_a_4xx_is_an_answer_not_a_failure(server, breaker_settings):
    server.default = lambda request: Reply.error(404, "no such model")
    client = ServiceClient("svc", server.url)
    for _ in range(5):
        with pytest.raises(ServiceRejected):
            call(client)
    assert state_of(server)["state"] == "closed" and state_of(server)["consecutive_failures"] == 0


def test_a_success_resets_the_count_of_failures(server, breaker_settings):
    server.queue(Reply.error(503), Reply.error(503), OK, Reply.error(503), Reply.error(503))
    client = ServiceClient("svc", server.url, retries=0)
    outcomes = []
    for _ in range(5):
        try:
            call(client)
            outcomes.append("ok")
        except ServiceUnavailable:
            outcomes.append("down")
    assert outcomes == ["down", "down", "ok", "down", "down"]
    assert state_of(server)["state"] == "closed" and state_of(server)["consecutive_failures"] == 2


def test_each_service_has_its_own_breaker(breaker_settings):
    with FakeOpenAI(default=ok) as failing, FakeOpenAI(default=ok) as healthy:
        fail_three_times(failing, ServiceClient("svc", failing.url, retries=0))
        assert call(ServiceClient("svc", healthy.url)).status_code == 200
        assert state_of(failing)["state"] == "open" and state_of(healthy)["state"] == "closed"


# --- pooling -----------------------------------------------------------------------------------


def test_calls_reuse_one_pooled_connection_across_clients(server):
    for _ in range(3):
        call(ServiceClient("a", server.url))
        call(ServiceClient("b", server.url))
    assert len(server.requests) == 6
    assert len({seen.client_port for seen in server.requests}) == 1


def test_threads_share_the_pool_within_its_size(server):
    server.default = lambda request: Reply(200, {}, delay=0.05)
    client = ServiceClient("svc", server.url, max_connections=2)
    threads = [threading.Thread(target=lambda: [call(client) for _ in range(4)]) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.requests) == 24
    assert len({seen.client_port for seen in server.requests}) <= 2


def test_embedders_built_twice_share_the_connection_pool(settings):
    from hyperguild.lib.embedders import get_embedder

    settings.BRAIN_EMBEDDER, settings.BRAIN_EMBED_URL, settings.BRAIN_EMBED_MODEL = "ollama", "http://127.0.0.1:1", ""
    assert get_embedder()._http._http is get_embedder()._http._http
