"""Counts every fuzzed call and prints the total at the end of the run (issue 17 asks for >= 5,000)."""

from __future__ import annotations

from collections import Counter

CALLS: Counter = Counter()
SERVER_ERRORS: list[str] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not CALLS:
        return
    total = sum(CALLS.values())
    parts = ", ".join(f"{door} {count}" for door, count in sorted(CALLS.items()))
    terminalreporter.write_line(f"fuzz: {total} generated calls ({parts}); 5xx answers: {len(SERVER_ERRORS)}")
