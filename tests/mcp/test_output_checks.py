"""Tool results are checked against their outputSchema: always, sampled (the default), or never."""

from __future__ import annotations

from hyperguild.mcp.engine import OUTPUT_CHECK_EVERY, OUTPUT_CHECK_FIRST, OutputChecks


def checked_calls(checks: OutputChecks, calls: int, tool: str = "brain_query") -> list[int]:
    return [n for n in range(1, calls + 1) if checks.due(tool)]


def test_sampling_checks_the_first_results_of_each_tool_then_one_in_fifty(settings):
    settings.HYPERGUILD_MCP_CHECK_OUTPUT = "sample"
    checks = OutputChecks()
    assert checked_calls(checks, 160) == [*range(1, OUTPUT_CHECK_FIRST + 1), 50, 100, 150]
    assert checks.due("brain_get")  # counted per tool: another tool starts with its own first calls
    assert OUTPUT_CHECK_EVERY == 50


def test_always_checks_every_result_and_off_none(settings):
    settings.HYPERGUILD_MCP_CHECK_OUTPUT = "always"
    assert checked_calls(OutputChecks(), 100) == list(range(1, 101))
    settings.HYPERGUILD_MCP_CHECK_OUTPUT = "off"
    assert checked_calls(OutputChecks(), 100) == []
