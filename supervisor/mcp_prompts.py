"""MCP prompts of /mcp/supervisor (slash commands in Claude Code): `tdd <spec>`, red/green/refactor."""

from __future__ import annotations

from mcp import types

from hyperguild.mcp.registry import PromptArgument
from supervisor.tools import supervisor


@supervisor.prompt(
    name="tdd",
    title="Red, green, refactor for a spec",
    description="Drive one behaviour through tdd_red, tdd_green and tdd_refactor, each verified by the supervisor.",
    arguments=(
        PromptArgument("spec", "the behaviour to build, in a sentence or two", required=True),
        PromptArgument("project_root", "the project's folder; empty means the current working directory"),
    ),
)
def tdd(arguments: dict[str, str]) -> list[types.PromptMessage]:
    spec = arguments["spec"].strip()
    root = (arguments.get("project_root") or "").strip() or "the current working directory (absolute path)"
    text = (
        f"Build this behaviour test-first with the hyperguild supervisor:\n\n{spec}\n\n"
        f"project_root: {root}\n\n"
        "1. Red: call tdd_red with project_root and spec. Go on only when the result says verified=true "
        "(the supervisor ran the tests itself and they failed for the new test).\n"
        "2. Green: call tdd_green with the same project_root and spec (and the test file from step 1). "
        "Go on only when verified=true (the whole suite passes).\n"
        "3. Refactor: call tdd_refactor; it must stay verified=true.\n"
        "If a step comes back unverified, read its test output, say what went wrong and retry that step "
        "once with a sharper spec; never claim a step passed that the supervisor did not verify. "
        "End with the files changed and the test command that proves it."
    )
    return [types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
