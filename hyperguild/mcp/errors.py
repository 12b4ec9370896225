"""The errors a tool call answers as an `isError: true` result.

Below the registry and everything the registry imports, so that domain code (e.g. ledger.budgets)
can raise a ToolError without importing the MCP registry. `hyperguild.mcp.registry` re-exports both.
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A failure the caller should see as an `isError: true` tool result."""

    def __init__(self, message: str, *, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.data = data


class ToolCancelled(ToolError):
    """Raised by `ToolContext.check_cancelled()` once the client cancelled."""

    def __init__(self) -> None:
        super().__init__("the call was cancelled by the client")
