"""MCP prompts (Claude Code's slash commands): prompts/list, prompts/get and completion/complete.

Over plain JSON-RPC for the protocol details, and with the official `mcp`
Python client on /mcp/brain and /mcp/supervisor.
"""

from __future__ import annotations

import anyio
import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

from brain.actions import do_ingest_note
from tests.conftest import mcp_post, rpc

pytestmark = pytest.mark.django_db(transaction=True)

LEDGERLY_NOTES = [
    ("ledgerly-architecture", "Ledgerly architecture", "Ledgerly is the billing service; every invoice is an event."),
    ("ledgerly-currency-rounding", "Ledgerly rounds per line", "Ledgerly rounds currency per invoice line."),
    ("pasta-water", "Salting pasta water", "Salt the pasta water generously."),
]


@pytest.fixture(autouse=True)
def quiet_services(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_MCP_TOKEN = ""
    settings.SUPERVISOR_MCP_TOKEN = ""
    settings.ROUTING_MCP_TOKEN = ""


@pytest.fixture
def ledgerly():
    for slug, title, body in LEDGERLY_NOTES:
        do_ingest_note(title=title, body=body, wing="concepts", slug=slug)


def answer(url: str, method: str, params: dict | None = None) -> dict:
    response = mcp_post(url, rpc(method, params))
    assert response.status_code == 200, response.text
    return response.json()


def text_of(result: dict) -> str:
    return "\n".join(message["content"]["text"] for message in result["messages"])


def test_brain_and_supervisor_advertise_prompts_and_completions_routing_does_not(asgi_server):
    for name in ("brain", "supervisor"):
        capabilities = answer(f"{asgi_server}/mcp/{name}", "initialize", {"protocolVersion": "2025-11-25"})["result"][
            "capabilities"
        ]
        assert capabilities["prompts"] == {"listChanged": False}
        assert capabilities["completions"] == {}
    routing = f"{asgi_server}/mcp/routing"
    assert "prompts" not in answer(routing, "initialize", {"protocolVersion": "2025-11-25"})["result"]["capabilities"]
    assert answer(routing, "prompts/list")["error"]["code"] == -32601


def test_prompts_list_pins_each_endpoints_prompts_and_their_arguments(asgi_server):
    brain = answer(f"{asgi_server}/mcp/brain", "prompts/list")["result"]["prompts"]
    assert {p["name"]: [(a["name"], a["required"]) for a in p["arguments"]] for p in brain} == {
        "recall": [("topic", True)],
        "remember": [("what", False)],
        "context": [("project_root", False)],
    }
    supervisor = answer(f"{asgi_server}/mcp/supervisor", "prompts/list")["result"]["prompts"]
    assert {p["name"]: [(a["name"], a["required"]) for a in p["arguments"]] for p in supervisor} == {
        "tdd": [("spec", True), ("project_root", False)],
    }
    assert all(p["title"] and p["description"] for p in brain + supervisor)


def test_recall_searches_the_brain_and_asks_for_a_cited_summary(asgi_server, ledgerly):
    result = answer(
        f"{asgi_server}/mcp/brain", "prompts/get", {"name": "recall", "arguments": {"topic": "ledgerly rounding"}}
    )
    text = text_of(result["result"])
    assert result["result"]["messages"][0]["role"] == "user"
    assert "ledgerly-currency-rounding" in text and "brain_get" in text
    assert "pasta-water" not in text

    nothing = answer(
        f"{asgi_server}/mcp/brain", "prompts/get", {"name": "recall", "arguments": {"topic": "zebra husbandry"}}
    )
    assert "nothing relevant" in text_of(nothing["result"])


def test_context_ranks_the_projects_notes_and_abstains_for_an_unknown_project(asgi_server, ledgerly):
    url = f"{asgi_server}/mcp/brain"
    known = text_of(
        answer(url, "prompts/get", {"name": "context", "arguments": {"project_root": "/src/ledgerly"}})["result"]
    )
    assert "ledgerly-architecture" in known and "pasta-water" not in known
    unknown = text_of(
        answer(url, "prompts/get", {"name": "context", "arguments": {"project_root": "/src/zebra"}})["result"]
    )
    assert "knows nothing about project 'zebra'" in unknown
    ask = text_of(answer(url, "prompts/get", {"name": "context"})["result"])
    assert "brain_context" in ask


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"name": "nope"}, "Unknown prompt: nope"),
        ({"name": "recall"}, "needs topic"),
        ({"name": "recall", "arguments": {"topic": "   "}}, "needs topic"),
        ({"name": "recall", "arguments": {"topic": "x", "colour": "red"}}, "has no argument colour"),
        ({"name": "recall", "arguments": {"topic": 3}}, "object of strings"),
        ({}, "Unknown prompt"),
        ({"name": "recall", "arguments": {"topic": "x" * 2001}}, "at most 2000"),
        ({"name": "context", "arguments": {"project_root": "/"}}, "no folder name"),
    ],
)
def test_prompts_get_refuses_bad_params_with_invalid_params(asgi_server, params, message):
    error = answer(f"{asgi_server}/mcp/brain", "prompts/get", params)["error"]
    assert error["code"] == -32602
    assert message in error["message"]


def test_completion_offers_wiki_titles_for_recall_and_refuses_unknown_references(asgi_server, ledgerly):
    url = f"{asgi_server}/mcp/brain"
    ref = {"type": "ref/prompt", "name": "recall"}
    completion = answer(url, "completion/complete", {"ref": ref, "argument": {"name": "topic", "value": "ledg"}})
    assert completion["result"]["completion"] == {
        "values": ["Ledgerly architecture", "Ledgerly rounds per line"],
        "total": 2,
        "hasMore": False,
    }
    none = answer(
        url,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "remember"}, "argument": {"name": "what", "value": "x"}},
    )
    assert none["result"]["completion"]["values"] == []
    bad = answer(
        url,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "recall"}, "argument": {"name": "colour", "value": ""}},
    )
    assert bad["error"]["code"] == -32602
    assert answer(url, "completion/complete", {"ref": ref})["error"]["code"] == -32602


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_official_client_lists_and_gets_prompts_on_brain_and_supervisor(asgi_server, ledgerly, mode):
    async def scenario():
        async with Client(f"{asgi_server}/mcp/brain", mode=mode) as brain:
            names = [prompt.name for prompt in (await brain.list_prompts()).prompts]
            recalled = await brain.get_prompt("recall", {"topic": "ledgerly"})
            completed = await brain.complete(
                PromptReference(type="ref/prompt", name="recall"), {"name": "topic", "value": "Salt"}
            )
            with pytest.raises(MCPError):
                await brain.get_prompt("recall", {})
        async with Client(f"{asgi_server}/mcp/supervisor", mode=mode) as supervisor:
            tdd_names = [prompt.name for prompt in (await supervisor.list_prompts()).prompts]
            tdd = await supervisor.get_prompt(
                "tdd", {"spec": "invoices round per line", "project_root": "/src/ledgerly"}
            )
        return names, recalled, completed, tdd_names, tdd

    names, recalled, completed, tdd_names, tdd = anyio.run(scenario)
    assert names == ["recall", "remember", "context"]
    assert "ledgerly-architecture" in recalled.messages[0].content.text
    assert completed.completion.values == ["Salting pasta water"]
    assert tdd_names == ["tdd"]
    text = tdd.messages[0].content.text
    assert "invoices round per line" in text and "/src/ledgerly" in text
    assert "tdd_red" in text and "tdd_green" in text and "tdd_refactor" in text
