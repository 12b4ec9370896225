"""hyperguild.lib.http against real HTTP servers on 127.0.0.1: retries, errors, the breaker, pooling."""

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
    excerpt,
)
from tests.conftest import free_port
from tests.core.scripted_http import Scripted, ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def quick(settings):
    """Short pauses so retries cost milliseconds."""
    settings.HYPERGUILD_HTTP_BACKOFF_SECONDS = 0.01
    settings.HYPERGUILD_HTTP_BACKOFF_MAX_SECONDS = 0.05
    return settings


# --- the retry policy --------------------------------------------------------------------------


def test_a_500_and_a_429_are_retried_then_the_answer_is_returned(server, quick):
    server.script(Scripted(500), Scripted(429))
    response = ServiceClient("svc", server.url, retries=2).post("/x", json={"a": 1})
    assert response.json() == {"ok": True}
    assert len(server.requests) == 3


def test_retry_after_is_honoured(server, quick):
    server.script(Scripted(503, headers={"Retry-After": "0.4"}))
    ServiceClient("svc", server.url, retries=1).get("/x")
    first, second = server.requests
    assert second.at - first.at >= 0.35


def test_a_long_retry_after_is_cut_to_the_cap(server, quick):
    quick.HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS = 0.1
    server.script(Scripted(429, headers={"Retry-After": "120"}))
    started = time.monotonic()
    ServiceClient("svc", server.url, retries=1).get("/x")
    assert len(server.requests) == 2
    assert time.monotonic() - started < 30  # the server asked for 120 s


def test_backoff_doubles_with_jitter_and_stops_at_the_cap():
    for retry, full in [(1, 0.2), (2, 0.4), (3, 0.8), (6, 5.0), (12, 5.0)]:
        pauses = [backoff_delay(retry, 0.2, 5.0) for _ in range(50)]
        assert all(full / 2 <= pause <= full for pause in pauses)
        assert len(set(pauses)) > 1  # jitter: not every client retries at the same instant


def test_it_gives_up_after_the_bounded_attempts_naming_the_service_and_the_url(server, quick):
    server.default = Scripted(503, body={"error": {"message": "overloaded"}})
    client = ServiceClient("the LLM gateway", server.url, headers={"Authorization": "Bearer sk-secret"}, retries=2)
    with pytest.raises(ServiceUnavailable) as caught:
        client.post("/v1/chat/completions?key=hidden", json={})
    error = caught.value
    assert len(server.requests) == 3 and error.attempts == 3 and error.status == 503
    assert str(error) == (
        f"the LLM gateway at {server.url}/v1/chat/completions is unavailable after 3 attempts: HTTP 503: overloaded"
    )
    assert "sk-secret" not in str(error) and "hidden" not in str(error)


def test_credentials_in_the_url_stay_out_of_the_message(server, quick):
    server.default = Scripted(500)
    url = server.url.replace("http://", "http://user:pa55word@")
    with pytest.raises(ServiceUnavailable) as caught:
        ServiceClient("svc", url, retries=0).get("/x")
    assert "pa55word" not in str(caught.value) and server.url in str(caught.value)


def test_a_4xx_is_rejected_at_once_with_the_services_own_message(server, quick):
    server.script(Scripted(404, body={"error": "model 'ghost' not found, try pulling it first"}))
    with pytest.raises(ServiceRejected) as caught:
        ServiceClient("ollama", server.url, retries=3).post("/api/generate", json={})
    assert len(server.requests) == 1
    assert caught.value.status == 404 and caught.value.detail == "model 'ghost' not found, try pulling it first"
    assert "refused the request with HTTP 404" in str(caught.value)


def test_a_slow_service_times_out_per_call(server, quick):
    server.default = Scripted(delay=1.0)
    client = ServiceClient("svc", server.url, timeout=5, retries=1)
    with pytest.raises(ServiceTimeout, match="timed out after 0.2 s") as caught:
        client.get("/x", timeout=0.2)
    assert caught.value.attempts == 2


def test_a_closed_port_is_unavailable(quick):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceUnavailable, match="could not connect") as caught:
        ServiceClient("svc", url, retries=1).get("/x")
    assert caught.value.attempts == 2 and url in str(caught.value)


def test_a_2xx_body_that_is_not_json_is_a_bad_response_naming_the_service(server):
    server.script(Scripted(raw=b"<html>gateway page</html>"))
    with pytest.raises(ServiceBadResponse) as caught:
        ServiceClient("the LLM gateway", server.url).post_json("/v1/x", {})
    assert str(caught.value) == (
        f"the LLM gateway at {server.url}/v1/x answered HTTP 200 with a body that is not JSON: <html>gateway page</html>"
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
    quick.HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 0.3
    return quick


def state_of(server: ScriptedServer) -> dict:
    return breaker_states()[f"svc {server.url}"]


def test_the_breaker_opens_after_consecutive_failures_and_refuses_calls(server, breaker_settings):
    server.default = Scripted(503)
    client = ServiceClient("svc", server.url, retries=1)
    for _ in range(3):
        with pytest.raises(ServiceUnavailable):
            client.get("/x")
    assert len(server.requests) == 6
    assert state_of(server)["state"] == "open" and state_of(server)["consecutive_failures"] == 3

    with pytest.raises(CircuitOpen, match="3 calls in a row failed .last: HTTP 503"):
        client.get("/x")
    assert len(server.requests) == 6  # nothing went out


def test_after_the_cool_down_one_probe_closes_it_again(server, breaker_settings):
    server.default = Scripted(503)
    client = ServiceClient("svc", server.url, retries=0)
    for _ in range(3):
        with pytest.raises(ServiceUnavailable):
            client.get("/x")
    time.sleep(0.35)
    assert state_of(server)["state"] == "half-open"

    server.default = Scripted(200)
    assert client.get("/x").status_code == 200
    assert state_of(server) == {
        "state": "closed",
        "consecutive_failures": 0,
        "retry_in_seconds": 0.0,
        "last_problem": "HTTP 503: {\"ok\": true}",
    }


def test_a_failed_probe_opens_it_again_after_one_attempt(server, breaker_settings):
    server.default = Scripted(503)
    client = ServiceClient("svc", server.url, retries=2)
    for _ in range(3):
        with pytest.raises(ServiceUnavailable):
            client.get("/x")
    time.sleep(0.35)
    before = len(server.requests)
    with pytest.raises(ServiceUnavailable) as caught:
        client.get("/x")
    assert not isinstance(caught.value, CircuitOpen)
    assert len(server.requests) == before + 1  # the probe is a single attempt
    assert state_of(server)["state"] == "open"
    with pytest.raises(CircuitOpen):
        client.get("/x")


def test_while_a_probe_is_out_other_calls_are_refused(server, breaker_settings):
    server.default = Scripted(503)
    client = ServiceClient("svc", server.url, retries=0)
    for _ in range(3):
        with pytest.raises(ServiceUnavailable):
            client.get("/x")
    time.sleep(0.35)
    server.default = Scripted(200, delay=0.5)
    probe = threading.Thread(target=client.get, args=("/x",))
    probe.start()
    time.sleep(0.15)
    with pytest.raises(CircuitOpen):
        client.get("/x")
    probe.join()
    assert state_of(server)["state"] == "closed"


def test_a_4xx_is_an_answer_not_a_failure(server, breaker_settings):
    server.default = Scripted(404)
    client = ServiceClient("svc", server.url)
    for _ in range(5):
        with pytest.raises(ServiceRejected):
            client.get("/x")
    assert state_of(server)["state"] == "closed" and state_of(server)["consecutive_failures"] == 0


def test_a_success_resets_the_count_of_failures(server, breaker_settings):
    server.script(Scripted(503), Scripted(503), Scripted(200), Scripted(503), Scripted(503))
    client = ServiceClient("svc", server.url, retries=0)
    outcomes = []
    for _ in range(5):
        try:
            client.get("/x")
            outcomes.append("ok")
        except ServiceUnavailable:
            outcomes.append("down")
    assert outcomes == ["down", "down", "ok", "down", "down"]
    assert state_of(server)["state"] == "closed" and state_of(server)["consecutive_failures"] == 2


def test_each_service_has_its_own_breaker(breaker_settings):
    with ScriptedServer(Scripted(503)) as down, ScriptedServer() as up:
        for _ in range(3):
            with pytest.raises(ServiceUnavailable):
                ServiceClient("svc", down.url, retries=0).get("/x")
        assert ServiceClient("svc", up.url).get("/x").status_code == 200
        states = breaker_states()
        assert states[f"svc {down.url}"]["state"] == "open" and states[f"svc {up.url}"]["state"] == "closed"


# --- pooling -----------------------------------------------------------------------------------


def test_calls_reuse_one_pooled_connection_across_clients(server):
    for _ in range(3):
        ServiceClient("a", server.url).get("/x")
        ServiceClient("b", server.url).post("/y", json={})
    assert len(server.requests) == 6
    assert len({seen.client_port for seen in server.requests}) == 1


def test_threads_share_the_pool_within_its_size(server):
    server.default = Scripted(delay=0.05)
    client = ServiceClient("svc", server.url, max_connections=2)
    threads = [threading.Thread(target=lambda: [client.get("/x") for _ in range(4)]) for _ in range(6)]
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

