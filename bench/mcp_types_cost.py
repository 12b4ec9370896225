"""What the official SDK's result models (`mcp.types`) would cost the hot path: the `tools/call` result of one
`brain_query` (10 hits of 300-character excerpts) built as a dict, as `hyperguild.mcp.engine._tools_call` does,
against `types.CallToolResult` built and dumped by `engine.wire`. Also the rarer messages the engine builds as
models (a tool error result, a JSON-RPC error object). No database.

    .venv/bin/python bench/mcp_types_cost.py --results 3000 --rounds 5

Prints the median (min, max) CPU per result over the rounds, the paths alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://bench@127.0.0.1:1/none")  # settings must not start a database
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")

import django  # noqa: E402 (after the path and settings set-up)

django.setup()

from mcp import types  # noqa: E402

from bench.contract_overhead import RESPONSE, cpu_per_call  # noqa: E402 (the same ten-hit result, timed the same way)
from brain.presenters import query_result  # noqa: E402
from hyperguild.mcp.engine import error_response, tool_error_result, wire  # noqa: E402

STRUCTURED = query_result(RESPONSE).model_dump(mode="json")
TEXT = json.dumps(STRUCTURED, ensure_ascii=False, separators=(",", ":"))


def as_dict() -> dict[str, Any]:
    return {"content": [{"type": "text", "text": TEXT}], "structuredContent": STRUCTURED, "isError": False}


def as_model() -> dict[str, Any]:
    return wire(
        types.CallToolResult(content=[types.TextContent(type="text", text=TEXT)], structured_content=STRUCTURED)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=int, default=3000, help="results per round and path")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    assert as_dict() == as_model(), "the two paths must answer the same"
    paths: dict[str, Callable[[], object]] = {
        "tools/call result as a dict (kept)": as_dict,
        "tools/call result as CallToolResult": as_model,
        "tool error result (CallToolResult)": lambda: tool_error_result("brain_query failed"),
        "error object (ErrorData)": lambda: error_response(1, -32602, "Unknown tool: x"),
    }
    figures: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(options.rounds):
        for name, path in paths.items():
            figures[name].append(cpu_per_call(path, options.results))
    for name, values in figures.items():
        values.sort()
        print(f"{name:36}: median {values[len(values) // 2]:6.1f} µs (min {values[0]:.1f}, max {values[-1]:.1f}) CPU")


if __name__ == "__main__":
    main()
