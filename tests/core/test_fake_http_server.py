"""The one base of the tests' fake HTTP servers: records, answers JSON, stops for real."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.http import FakeHTTPServer, Request, Response


class Echo(FakeHTTPServer):
    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        return Response(201, {"path": request.path, "body": request.json()}, headers={"X-Fake": "yes"})


def test_it_records_the_request_and_answers_json_with_its_length():
    with Echo() as server:
        response = httpx.post(f"{server.url}/v1/things?x=1", json={"a": 1}, headers={"X-Caller": "test"})
    assert response.status_code == 201 and response.headers["X-Fake"] == "yes"
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.json() == {"path": "/v1/things?x=1", "body": {"a": 1}}
    (request,) = server.requests
    assert request.method == "POST" and request.headers["X-Caller"] == "test" and request.client_port > 0


def test_a_callable_answers_without_a_subclass_and_get_is_served_too():
    with FakeHTTPServer(handle=lambda request: Response(404, raw=b"nothing here")) as server:
        response = httpx.get(f"{server.url}/anything")
    assert response.status_code == 404 and response.text == "nothing here"


def test_a_body_that_is_not_json_reads_as_none():
    with Echo() as server:
        httpx.post(server.url, content=b"not json")
    assert server.requests[0].json() is None


def test_a_stopped_server_refuses_connections():
    server = Echo().start()
    httpx.post(server.url, json={})
    server.stop()
    server.stop()  # twice is harmless
    with pytest.raises(httpx.ConnectError):
        httpx.post(server.url, json={}, timeout=2)


def test_the_base_alone_has_no_answer():
    server = FakeHTTPServer()
    try:
        with pytest.raises(NotImplementedError):
            server.handle(Request("GET", "/", {}, b"", 0, 0.0))
    finally:
        server.stop()
