"""Exchanges recorded between hyperguild and a real model server, replayed by the fakes byte for byte.

    exchange = recorded_exchanges()[0]        # .request (what was sent then), .response (the body, as text)
    gateway.queue(replay(exchange))           # the OpenAI-wire fake answers with exactly that body

The recordings are in tests/fixtures/real-model-outputs/ (see its README): Gemma 3 270M on
llama.cpp's OpenAI-compatible server, the bodies exactly as the server sent them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.fakes.openai import Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real-model-outputs"
GEMMA_EXCHANGES = FIXTURES / "gemma3-270m-llamacpp.jsonl"


@dataclass(frozen=True)
class Exchange:
    index: int
    secs: float
    path: str
    status: int
    request: dict[str, Any]
    response: str

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.response)

    @property
    def content(self) -> str:
        return self.body["choices"][0]["message"]["content"]

    @property
    def finish_reason(self) -> str:
        return self.body["choices"][0]["finish_reason"]

    @property
    def system_prompt(self) -> str:
        return self.request["messages"][0]["content"]


@cache
def recorded_exchanges(path: Path = GEMMA_EXCHANGES) -> tuple[Exchange, ...]:
    exchanges = []
    for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            data = json.loads(line)
            exchanges.append(
                Exchange(index, data["secs"], data["path"], data["status"], data["request"], data["response"])
            )
    return tuple(exchanges)


def replay(exchange: Exchange) -> Reply:
    """The fake's answer: the recorded status and body, byte for byte."""
    return Reply(
        status=exchange.status, raw=exchange.response.encode("utf-8"), headers={"Content-Type": "application/json"}
    )


def answers() -> list[Exchange]:
    return [e for e in recorded_exchanges() if e.system_prompt.startswith("You answer questions")]


def retrospectives(model: str) -> list[Exchange]:
    return [
        e
        for e in recorded_exchanges()
        if e.system_prompt.startswith("You review the log") and e.request["model"] == model
    ]


def reviews() -> list[Exchange]:
    return [e for e in recorded_exchanges() if e.system_prompt.startswith("# Discipline: review")]
