"""The JSON-RPC messages the engine answers with, as they travel (`engine.wire` and `engine.error_response` write them).

TypedDicts, not models: the engine writes these dicts itself on the hot path (`engine.py` says why), and
the types say which keys each one has.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict


# An MCP result as it travels (camelCase): the fields of the results this engine answers, each optional
# (a result has the fields of its method). `_meta` cannot be a class attribute, hence the functional form.
class McpResult(TypedDict, total=False):
    _meta: dict[str, Any]
    resultType: str
    ttlMs: int
    cacheScope: str
    protocolVersion: str
    supportedVersions: list[str]
    capabilities: dict[str, Any]
    serverInfo: dict[str, Any]
    instructions: str
    tools: list[dict[str, Any]]
    prompts: list[dict[str, Any]]
    resources: list[dict[str, Any]]
    resourceTemplates: list[dict[str, Any]]
    contents: list[dict[str, Any]]
    nextCursor: str
    description: str
    messages: list[dict[str, Any]]
    completion: dict[str, Any]
    content: list[dict[str, Any]]
    structuredContent: dict[str, Any]
    isError: bool
    # A `Task` of the Tasks extension (hyperguild.mcp.mcp_tasks): tasks/get, and tools/call's task handle.
    taskId: str
    status: str
    createdAt: str
    lastUpdatedAt: str
    pollIntervalMs: int
    statusMessage: str
    result: dict[str, Any]  # a completed task's tools/call result
    error: dict[str, Any]  # a failed task's JSON-RPC error


class ErrorObject(TypedDict, total=False):
    """A JSON-RPC error object (`mcp.types.ErrorData` dumped without its None fields)."""

    code: Required[int]
    message: Required[str]
    data: Any


class JsonRpcResponse(TypedDict, total=False):
    """The envelope of an answer: `result` or `error`, never both."""

    jsonrpc: Required[str]
    id: Required[Any]  # the request's id; None (`"id": null`) when it could not be read
    result: McpResult | dict[str, Any]  # a dict: the Tasks extension answers its own results (mcp_tasks)
    error: ErrorObject
