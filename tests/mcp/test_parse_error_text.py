"""A parse error says what is wrong in our words, never with Python's exception text (issue 28, problem 5)."""

from __future__ import annotations

import pytest

from tests.conftest import mcp_post

pytestmark = pytest.mark.django_db(transaction=True)

PYTHON_WORDS = ("sys.set_int_max_str_digits", "Exceeds the limit", "Traceback", "ValueError", "int_max_str_digits")


def test_an_integer_id_of_five_thousand_digits_is_a_parse_error_in_our_own_words(asgi_server):
    body = b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "ping"}'
    response = mcp_post(f"{asgi_server}/mcp/brain", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32700 and response.json()["id"] is None
    assert "integer of 5000 digits" in error["message"]
    assert not any(word in error["message"] for word in PYTHON_WORDS), error["message"]


def test_a_long_number_inside_the_arguments_is_refused_the_same_way(asgi_server):
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "brain_query", "arguments": {"limit": -'
        + b"1" * 4500
        + b"}}}"
    )
    response = mcp_post(f"{asgi_server}/mcp/brain", body)
    assert response.json()["error"]["code"] == -32700
    assert not any(word in response.json()["error"]["message"] for word in PYTHON_WORDS)


def test_broken_json_names_the_place_not_a_python_exception(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", b'{"jsonrpc": "2.0", "id": 1, "method": ')
    message = response.json()["error"]["message"]
    assert message == "Parse error: The body is not valid JSON: Expecting value (line 1, column 39)."


def test_rest_bodies_get_the_same_words(asgi_server):
    import httpx

    body = b'{"query": "x", "limit": ' + b"7" * 5000 + b"}"
    response = httpx.post(
        f"{asgi_server}/query", content=body, headers={"Content-Type": "application/json"}, timeout=30
    )
    assert response.status_code == 400, response.text
    assert "integer of 5000 digits" in response.text
    assert not any(word in response.text for word in PYTHON_WORDS), response.text
