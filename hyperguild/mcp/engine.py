"""All of JSON-RPC for one MCP endpoint, independent of HTTP.

`receive(endpoint, body, caller)` is the one door from the transport: it
parses the body, classifies the message (request, notification, response;
batches are refused), screens it, handles notifications, decides the
protocol revision (`revision.decide`) and answers with what to send: an
`Answer` (one JSON-RPC message with the status the MCP transport gives it,
or nothing: 202), or a `Call`, a request that passed every check, which the
view runs after choosing how its answer travels (JSON or an SSE stream).
The HTTP view (`views.py`) reads the bytes, checks who may send them and
writes the HTTP response; it never looks inside a message.
`Dispatcher.handle(message, ctx)` answers one request already known to be one.

Results and error objects are the official SDK's models (`mcp.types`: `InitializeResult`, `DiscoverResult`,
`ListToolsResult`, `ListPromptsResult`, `GetPromptResult`, `CompleteResult`, the resource results,
`CallToolResult` for tool errors, `ErrorData`), dumped by `wire()`. Where they do not fit, TypedDicts
(`hyperguild.mcp.messages`) stay, each
with its reason: the JSON-RPC envelope (`JSONRPCResponse` would dump the whole result again on the hot path,
and `exclude_none` would drop the `"id": null` an error about an unknown id must carry), the `tools/call`
success result (the hot path too: bench/RESULTS.md), the 2026-07-28 envelope fields (written by
`_modern_envelope` with our caching policy) and request params, which are read by hand so that a malformed
one gets the message naming its field that clients and tests rely on, not pydantic's.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError
from mcp import types
from pydantic import BaseModel

from hyperguild.actions import do_record_mcp_cancellation
from hyperguild.lib import admission
from hyperguild.lib.limits import JSON_MAX_DEPTH, InputRejected, hostile_value_problem, loads_limited
from hyperguild.lib.model_calls import model_call_context
from hyperguild.lib.schema import format_schema_errors, schema_problems
from hyperguild.lib.typed import JSON
from hyperguild.mcp.cancellation import RUNNING, request_id_key
from hyperguild.mcp.mcp_tasks import TaskError, Tasks
from hyperguild.mcp.messages import ErrorObject, JsonRpcResponse, McpResult
from hyperguild.mcp.registry import Endpoint, Prompt, Tool, ToolCancelled, ToolContext, ToolError
from hyperguild.mcp.revision import (
    CACHE_POLICIES,
    LATEST_LEGACY_VERSION,
    LEGACY_ONLY_METHODS,
    LEGACY_VERSIONS,
    MODERN_ONLY_METHODS,
    SUPPORTED_VERSIONS,
    TASKS_EXTENSION,
    Rejection,
    Revision,
    decide,
    http_status_for,
    legacy,
)
from hyperguild.providers import add_usage, mcp_span, permission_refusal

logger = logging.getLogger("hyperguild.mcp")

LATEST_PROTOCOL_VERSION = LATEST_LEGACY_VERSION  # what `initialize` answers when asked for a version it does not know
SUPPORTED_PROTOCOL_VERSIONS = LEGACY_VERSIONS  # what `initialize` negotiates

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002  # 2025-11-25 and earlier; 2026-07-28 says -32602
FORBIDDEN = -32003  # server-defined: the caller's credential or role does not allow this (people.permissions)
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


# Fields of the SDK's result models that only 2026-07-28 carries: `_modern_envelope` writes them (with this
# server's caching policy) for a modern request, and a handshake-era answer never had them.
MODERN_RESULT_FIELDS: set[str] = {"result_type", "ttl_ms", "cache_scope"}


def wire(model: BaseModel) -> McpResult:
    """An `mcp.types` model as it travels: camelCase aliases, `_meta`, and no field left at None."""
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=MODERN_RESULT_FIELDS)
    return cast(McpResult, dumped)


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> JsonRpcResponse:
    # The envelope is written here: `JSONRPCError` dumped with exclude_none would drop `"id": null` (an unknown id).
    error = types.ErrorData(code=code, message=message, data=data).model_dump(mode="json", exclude_none=True)
    return {"jsonrpc": "2.0", "id": request_id, "error": cast(ErrorObject, error)}


@dataclass
class CallRecord:
    """What the structured log line says about one message."""

    method: str = ""
    tool: str | None = None
    revision: str | None = None
    status: str = "ok"
    extra: dict[str, object] = field(default_factory=dict)  # more fields for the log line


def classify(message: Any) -> str:
    """'request', 'notification' or 'response'; raises RpcError if none of them."""
    if isinstance(message, list):
        raise RpcError(INVALID_REQUEST, "Batch requests are not supported: send one JSON-RPC message per POST")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid request: expected a JSON object with "jsonrpc": "2.0"')
    has_id = "id" in message
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            raise RpcError(INVALID_REQUEST, "Invalid request: method must be a non-empty string")
        if "params" in message and not isinstance(message["params"], dict):
            raise RpcError(INVALID_REQUEST, "Invalid request: params must be an object")
        if not has_id:
            return "notification"
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
            raise RpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
        return "request"
    if has_id and ("result" in message or "error" in message):
        return "response"
    raise RpcError(INVALID_REQUEST, "Invalid request: no method, and not a response")


def parse_message(body: bytes, max_depth: int) -> Any:
    """One JSON-RPC message: InputRejected when too deep, not JSON or holding NaN/Infinity.

    Text problems (NUL, lone surrogates) are checked after classification, to answer with the id.
    """
    try:
        return loads_limited(body, max_depth)
    except InputRejected as exc:
        if "NUL" in exc.message or "surrogate" in exc.message:
            return json.loads(body)  # well-formed: `receive` refuses it with the request's id
        raise


# --- pagination ----------------------------------------------------------------


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


MAX_CURSOR_OFFSET = 2**31 - 1  # far past any real list, well inside PostgreSQL's OFFSET range


def decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode()).decode()
        if not text.startswith("o:"):
            raise ValueError
        digits = text[2:]
        # A cursor is ours, so it is short; anything longer (or past a bigint) is forged.
        if len(digits) > 12:
            raise ValueError
        offset = int(digits)
        if offset < 0 or offset > MAX_CURSOR_OFFSET:
            raise ValueError
        return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RpcError(INVALID_PARAMS, "Invalid cursor: pass back the nextCursor of a previous page") from None


# --- output size ---------------------------------------------------------------

TRUNCATION_MARK = " …[truncated]"


def fit_to_budget(value: Any, max_chars: int) -> tuple[Any, bool]:
    """Shrink the largest strings (then the longest lists) until the JSON fits.

    Keeps the shape of the result, so it still matches its schema in all but
    pathological cases; returns (value, truncated?).
    """
    size = len(json.dumps(value, ensure_ascii=False))
    if size <= max_chars:
        return value, False
    value = json.loads(json.dumps(value))  # private copy
    for _ in range(200):
        size = len(json.dumps(value, ensure_ascii=False))
        if size <= max_chars:
            return value, True
        excess = size - max_chars
        container, key, leaf = _largest_leaf(value)
        if leaf is None:
            break
        if isinstance(leaf, str) and len(leaf) > 200:
            target = len(leaf) - excess - len(TRUNCATION_MARK) - 16
            keep = target if target >= 100 else max(100, len(leaf) // 2)
            container[key] = leaf[:keep] + TRUNCATION_MARK
        elif isinstance(leaf, list) and len(leaf) > 1:
            container[key] = leaf[: max(1, len(leaf) // 2)]
        else:
            break
    return value, True


def _largest_leaf(root: Any) -> tuple[Any, Any, Any]:
    best: tuple[Any, Any, Any] = (None, None, None)
    best_size = 0
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, child in items:
            if isinstance(child, str) and len(child) > 200:
                size = len(child)
            elif isinstance(child, list) and len(child) > 1:
                size = len(json.dumps(child, ensure_ascii=False))
            else:
                size = 0
            if size > best_size:
                best, best_size = (node, key, child), size
            if isinstance(child, (dict, list)):
                stack.append(child)
    return best


# --- dispatch --------------------------------------------------------------------


class OutputChecks:
    """Which tool results are checked against the tool's outputSchema before they are sent.

    The check costs about a millisecond of CPU for a 10-hit brain_query, more than ranking it. With the
    setting HYPERGUILD_MCP_CHECK_OUTPUT at "sample" (fixed so; tests set the others) a process checks the first OUTPUT_CHECK_FIRST
    results of each tool and then one in OUTPUT_CHECK_EVERY: a tool whose output drifts from its
    schema is still reported (an error result and a log line) without every call paying for it.
    `always` checks every result, `off` none; the contract tests pin the schemas either way.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def due(self, tool_name: str) -> bool:
        mode = settings.HYPERGUILD_MCP_CHECK_OUTPUT
        if mode != "sample":
            return mode == "always"
        # A lost update under concurrency only shifts which call is sampled.
        count = self.counts[tool_name] = self.counts.get(tool_name, 0) + 1
        return count <= OUTPUT_CHECK_FIRST or count % OUTPUT_CHECK_EVERY == 0


OUTPUT_CHECK_FIRST = 20
OUTPUT_CHECK_EVERY = 50
OUTPUT_CHECKS = OutputChecks()


class Dispatcher:
    def __init__(self, endpoint: Endpoint, owner: str = ""):
        """`owner`: who is calling, for the tasks it starts or asks about (`tasks.owner_digest`)."""
        self.endpoint = endpoint
        self.tasks = Tasks(self, owner)  # the Tasks extension: 2026-07-28 requests only

    def handle(
        self, message: JSON, ctx: ToolContext, record: CallRecord, revision: Revision | None = None
    ) -> JsonRpcResponse:
        """Answer one request (already classified as such) in its revision (`revision.decide`)."""
        method = message["method"]
        record.method = method
        revision = revision or legacy(message, None)
        record.revision = revision.version
        params = message.get("params") or {}
        request_id = message["id"]
        result: McpResult | dict[str, Any]
        try:
            if revision.modern:
                result = self._route_modern(method, params, ctx, record, revision)
            else:
                result = self._route(method, params, ctx, record)
        except (RpcError, TaskError) as exc:
            code = exc.code
            if revision.modern and code == RESOURCE_NOT_FOUND:
                code = INVALID_PARAMS
            record.status = f"rpc_error {code}"
            return error_response(request_id, code, exc.message, exc.data)
        except Exception as exc:  # resources/*, paging: a JSON-RPC error, never an HTML 500
            incident = uuid.uuid4().hex[:16]
            logger.exception(
                "%s on /mcp/%s raised (request id %s, revision %s)",
                method,
                self.endpoint.name,
                incident,
                revision.version,
            )
            record.status = "internal_error"
            what = "could not reach the database" if isinstance(exc, OperationalError | InterfaceError) else "failed"
            return error_response(
                request_id, INTERNAL_ERROR, f"{method} {what}; the server log has the detail (request id {incident})"
            )
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _route_modern(
        self, method: str, params: JSON, ctx: ToolContext, record: CallRecord, revision: Revision
    ) -> dict[str, Any]:
        """A 2026-07-28 request: the same methods as the handshake era, in the 2026 envelope.

        Every method `_route` serves is served here too (minus those 2026-07-28
        removed), so a method added there works on both revisions.
        """
        if method in LEGACY_ONLY_METHODS:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (not part of MCP {revision.version})")
        result: McpResult | dict[str, Any]
        if method == "server/discover":
            result = self._discover()
        elif method.startswith("tasks/"):
            result = self.tasks.handle(method, params, ctx, record, revision)
        elif method == "tools/call" and self.tasks.should_start(params, revision):
            result = self.tasks.start(params, ctx, record, revision)
        else:
            result = self._route(method, params, ctx, record)
        return self._modern_envelope(method, result)

    def _modern_envelope(self, method: str, answered: Mapping[str, Any]) -> dict[str, Any]:
        result = {"resultType": "complete", **answered}
        meta = dict(result.get("_meta") or {})
        meta[SERVER_INFO_META_KEY] = self._server_info()
        result["_meta"] = meta
        policy = CACHE_POLICIES.get(method)
        if policy is not None:
            scope = policy.scope
            if scope == "public" and self.endpoint.token():
                # Behind a token the list is still the same for every caller, but only callers may see it.
                scope = "private"
            result["ttlMs"], result["cacheScope"] = policy.ttl_ms, scope
        return result

    def _server_info(self) -> JSON:
        return {"name": f"hyperguild-{self.endpoint.name}", "title": self.endpoint.title, "version": settings.VERSION}

    def _discover(self) -> McpResult:
        # The capabilities and instructions `initialize` answers, so a capability added there is announced here too.
        capabilities = self.capabilities()
        # Every endpoint speaks the extension; only its long_running tools ever answer with a task.
        capabilities.extensions = {**(capabilities.extensions or {}), TASKS_EXTENSION: {}}
        result = types.DiscoverResult(
            supported_versions=list(SUPPORTED_VERSIONS),
            capabilities=capabilities,
            instructions=self.endpoint.instructions or None,
        )
        return wire(result)  # `_modern_envelope` adds resultType, ttlMs and cacheScope

    def _route(self, method: str, params: JSON, ctx: ToolContext, record: CallRecord) -> McpResult:
        if method in MODERN_ONLY_METHODS:
            # server/discover (the 2026 probe) without the 2026 envelope: -32601 tells
            # clients that probe with a legacy request to use the initialize handshake.
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return self._tools_list(params)
        if method == "tools/call":
            return self._tools_call(params, ctx, record)
        if self.endpoint.prompts:
            if method == "prompts/list":
                return self._prompts_list(params)
            if method == "prompts/get":
                return self._prompts_get(params, record, ctx)
            if method == "completion/complete":
                return self._complete(params, ctx)
        if self.endpoint.resources is not None:
            if method == "resources/list":
                self._require(ctx, self.endpoint.read_right, method)
                return self._resources_list(params)
            if method == "resources/read":
                self._require(ctx, self.endpoint.read_right, method)
                return self._resources_read(params)
            if method == "resources/templates/list":
                templates = [
                    types.ResourceTemplate.model_validate(t) for t in self.endpoint.resources.resource_templates()
                ]
                return wire(types.ListResourceTemplatesResult(resource_templates=templates))
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, params: JSON) -> McpResult:
        # params are read, not parsed as types.InitializeRequestParams: that model requires capabilities and
        # clientInfo, and `initialize` has always answered a client that leaves them out (and `_discover` calls it with none).
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        result = types.InitializeResult(
            protocol_version=version,
            capabilities=self.capabilities(),
            server_info=types.Implementation(**self._server_info()),
            instructions=self.endpoint.instructions or None,
        )
        return wire(result)

    def capabilities(self) -> types.ServerCapabilities:
        """What this endpoint serves, the same whichever protocol revision asks."""
        capabilities = types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False))
        if self.endpoint.resources is not None:
            capabilities.resources = types.ResourcesCapability(subscribe=False, list_changed=False)
        if self.endpoint.prompts:
            capabilities.prompts = types.PromptsCapability(list_changed=False)
            capabilities.completions = types.CompletionsCapability()
        return capabilities

    def _page(self, params: JSON) -> tuple[int, int]:
        return decode_cursor(params.get("cursor")), settings.HYPERGUILD_MCP_PAGE_SIZE

    def _tools_list(self, params: JSON) -> McpResult:
        offset, size = self._page(params)
        tools = list(self.endpoint.tools.values())
        page = tools[offset : offset + size]
        more = offset + size < len(tools)
        result = types.ListToolsResult(
            tools=[tool.describe() for tool in page],
            next_cursor=encode_cursor(offset + size) if more else None,
        )
        return wire(result)

    def _prompts_list(self, params: JSON) -> McpResult:
        offset, size = self._page(params)
        prompts = list(self.endpoint.prompts.values())
        more = offset + size < len(prompts)
        result = types.ListPromptsResult(
            prompts=[prompt.describe() for prompt in prompts[offset : offset + size]],
            next_cursor=encode_cursor(offset + size) if more else None,
        )
        return wire(result)

    def _prompt(self, name: Any) -> Prompt:
        prompt = self.endpoint.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            known = ", ".join(self.endpoint.prompts)
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name} (this endpoint has: {known})")
        return prompt

    @staticmethod
    def _require(ctx: ToolContext, right: str, what: str) -> None:
        """The one permission check (people.permissions) for a door that is not a tool: RpcError if refused."""
        if not right or ctx.identity is None:
            return
        refusal = permission_refusal(ctx.identity, right, what=what)
        if refusal:
            raise RpcError(FORBIDDEN, refusal, {"right": right})

    def _prompts_get(self, params: JSON, record: CallRecord, ctx: ToolContext) -> McpResult:
        prompt = self._prompt(params.get("name"))
        record.tool = prompt.name
        self._require(ctx, prompt.right, f"prompts/get {prompt.name}")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict) or not all(isinstance(value, str) for value in arguments.values()):
            raise RpcError(INVALID_PARAMS, "prompts/get params.arguments must be an object of strings")
        known = {argument.name for argument in prompt.arguments}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise RpcError(INVALID_PARAMS, f"Prompt {prompt.name} has no argument {', '.join(unknown)}")
        missing = [a.name for a in prompt.arguments if a.required and not arguments.get(a.name, "").strip()]
        if missing:
            raise RpcError(INVALID_PARAMS, f"Prompt {prompt.name} needs {', '.join(missing)}")
        refused_by_handler: tuple[type[Exception], ...] = (ToolError, *self.endpoint.domain_errors)
        try:
            messages = prompt.handler(arguments)
        except refused_by_handler as exc:
            # A prompt has no error result: an argument the handler cannot use is the caller's to fix.
            raise RpcError(INVALID_PARAMS, getattr(exc, "message", None) or str(exc)) from None
        result = types.GetPromptResult(
            description=prompt.description, messages=[types.PromptMessage.model_validate(m) for m in messages]
        )
        return wire(result)

    def _complete(self, params: JSON, ctx: ToolContext) -> McpResult:
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise RpcError(INVALID_PARAMS, "completion/complete needs params.ref and params.argument {name, value}")
        values: list[str] = []
        if ref.get("type") == "ref/prompt":
            prompt = self._prompt(ref.get("name"))
            self._require(ctx, prompt.right, f"completion/complete {prompt.name}")
            spec = next((a for a in prompt.arguments if a.name == argument["name"]), None)
            if spec is None:
                raise RpcError(INVALID_PARAMS, f"Prompt {prompt.name} has no argument {argument['name']}")
            if spec.complete is not None:
                values = [str(value) for value in spec.complete(str(argument.get("value") or ""))]
        # The spec caps one answer at 100 values.
        completion = types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        return wire(types.CompleteResult(completion=completion))

    def _resources_list(self, params: JSON) -> McpResult:
        offset, size = self._page(params)
        assert self.endpoint.resources is not None
        items, more = self.endpoint.resources.list_resources(offset, size)
        result = types.ListResourcesResult(
            resources=[types.Resource.model_validate(item) for item in items],
            next_cursor=encode_cursor(offset + size) if more else None,
        )
        return wire(result)

    def _resources_read(self, params: JSON) -> McpResult:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RpcError(INVALID_PARAMS, "resources/read needs a uri (a string)")
        assert self.endpoint.resources is not None
        contents = self.endpoint.resources.read_resource(uri)
        if contents is None:
            # -32002 is the spec's "resource not found".
            raise RpcError(-32002, f"Resource not found: {uri}", {"uri": uri})
        return wire(types.ReadResourceResult.model_validate({"contents": contents}))

    def _tools_call(
        self,
        params: JSON,
        ctx: ToolContext,
        record: CallRecord,
        job: Callable[[Tool, BaseModel], McpResult] | None = None,
    ) -> McpResult:
        """Run the tool and answer its result; with `job`, check the call at the door as always, then answer
        what `job` returns for the parsed arguments instead (a task handle: `mcp_tasks.Tasks.start`)."""
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "tools/call needs params.name (the tool's name)")
        record.tool = name
        tool = self.endpoint.tools.get(name)
        if tool is None:
            known = ", ".join(self.endpoint.tools) or "none"
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name} (this endpoint has: {known})")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tools/call params.arguments must be an object")

        problems = schema_problems(tool.input_validator, arguments)
        if problems:
            record.status = "invalid_arguments"
            return tool_error_result(f"Invalid arguments for {name}: {format_schema_errors(problems)}")

        refusal = tool.scope_refusal(ctx)
        if refusal:
            record.status = "insufficient_scope"
            return tool_error_result(refusal)

        RUNNING.add(ctx)
        if tool.open_world:
            admission.leave()  # it waits on a worker or a model: quick calls must not wait behind it
        try:
            ctx.check_cancelled()
            # Every model call the tool makes is recorded as made by this caller, for this tool.
            with model_call_context(
                requested_by=ctx.actor,
                service=f"mcp/{self.endpoint.name}",
                skill=name,
                session_id=str(arguments.get(tool.session_field) or "")[:200] if tool.session_field else "",
                project=str(arguments.get(tool.project_field) or "") if tool.project_field else "",
            ) as calls:
                if job is not None:
                    return job(tool, tool.parse(arguments))
                structured = tool.call(arguments, ctx).model_dump(mode="json")
            if tool.reports_usage:
                add_usage(structured, calls.recorded, ctx.actor)
        except ToolCancelled as exc:
            record.status = "cancelled"
            return tool_error_result(exc.message)
        except ToolError as exc:
            record.status = "tool_error"
            return tool_error_result(exc.message, exc.data)
        except self.endpoint.domain_errors as exc:
            record.status = "tool_error"
            return tool_error_result(str(exc), getattr(exc, "data", None))
        except Exception as exc:
            # The message never carries the exception text (SQL, paths); the log has it under this id.
            incident = uuid.uuid4().hex[:16]
            logger.exception(
                "tool %s on /mcp/%s raised (request id %s, revision %s)",
                name,
                self.endpoint.name,
                incident,
                record.revision,
            )
            record.status = "internal_error"
            if isinstance(exc, OperationalError | InterfaceError):
                return tool_error_result(
                    f"{name} could not reach the database; try again shortly (request id {incident})"
                )
            return tool_error_result(
                f"{name} failed unexpectedly ({type(exc).__name__}); the server log has the detail (request id {incident})"
            )
        finally:
            RUNNING.remove(ctx)
        return self.tool_result(tool, structured, record)

    def tool_result(self, tool: Tool, structured: dict[str, Any], record: CallRecord) -> McpResult:
        """The `tools/call` result of a tool's structured result: checked against its outputSchema, within budget."""
        name = tool.name
        output_problems = schema_problems(tool.output_validator, structured) if OUTPUT_CHECKS.due(tool.name) else []
        if output_problems:
            logger.error(
                "tool %s returned output that breaks its schema (revision %s): %s",
                name,
                record.revision,
                format_schema_errors(output_problems),
            )
            record.status = "invalid_output"
            return tool_error_result(
                f"{name} produced a result that does not match its outputSchema; see the server log"
            )
        # The success result stays a dict: types.CallToolResult re-serialises structuredContent (the whole
        # result) on dump, about 50 µs for a 10-hit brain_query against under 1 µs here (bench/RESULTS.md).
        # Compact: this text is what lands in the model's context, and indentation only costs tokens.
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        truncated = False
        if len(text) > settings.HYPERGUILD_MCP_MAX_OUTPUT_CHARS:
            structured, truncated = fit_to_budget(structured, settings.HYPERGUILD_MCP_MAX_OUTPUT_CHARS)
            text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        result: McpResult = {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }
        if truncated:
            record.extra["truncated"] = True
            result["_meta"] = {"hyperguild/truncated": True}
        return result


def tool_error_result(message: str, data: JSON | None = None) -> McpResult:
    text = message if not data else f"{message}\n{json.dumps(data, ensure_ascii=False)}"
    return wire(types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True))


# --- the door from the transport -------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """What the transport knows about who sent a message and how; the engine reads nothing else of the request."""

    identity: Any = None  # hyperguild.providers.Identity: what the bearer token or OAuth grant proved
    key: str = ""  # cancellation.client_key: cancellations match calls on it and the request id
    owner: str = ""  # tasks.owner_digest of the Authorization header: who may see the tasks it starts
    person_id: int | None = None  # the signed-in person, for traces
    headers: Mapping[str, str] = field(default_factory=dict)  # keyed in lower case (`mcp-protocol-version`, …)
    raw_headers: Sequence[tuple[str, str]] = ()  # as sent, duplicates kept (revision.decide refuses some)


@dataclass
class Answer:
    """What to send for one message: a JSON-RPC message and the HTTP status the MCP transport gives it,
    or nothing (`message` None: 202 Accepted)."""

    message: JsonRpcResponse | None
    status: int
    record: CallRecord
    # A handshake-era `initialize`: the transport hands out an Mcp-Session-Id if the client has none.
    opens_session: bool = False


def accepted(record: CallRecord) -> Answer:
    return Answer(None, 202, record)


def unread(reason: str, status: int, record: CallRecord) -> Answer:
    """A body the transport refused without reading it (too large): a JSON-RPC error with no id."""
    return refused(None, INVALID_REQUEST, reason, status, record)


def refused(request_id: Any, code: int, message: str, status: int, record: CallRecord, data: Any = None) -> Answer:
    return Answer(error_response(request_id, code, message, data), status, record)


def receive(endpoint: Endpoint, body: bytes, caller: Caller) -> Answer | Call:
    """One POSTed body, read and authenticated by the transport: what to send, or the request to run."""
    record = CallRecord()
    try:
        # Depth-limited, and NaN/Infinity refused: `"id": NaN` is a parse error, never echoed back.
        message = parse_message(body, JSON_MAX_DEPTH)
    except InputRejected as exc:
        record.status = "parse_error"
        return refused(None, PARSE_ERROR, f"Parse error: {exc.message}", 400, record)
    try:
        kind = classify(message)
    except RpcError as exc:
        record.status = "invalid_request"
        request_id = message.get("id") if isinstance(message, dict) else None
        if hostile_value_problem(request_id):
            request_id = None
        return refused(request_id, exc.code, exc.message, 400, record)
    problem = hostile_value_problem(message)
    if problem:
        # A NUL or lone surrogate can be neither stored nor echoed: refuse it before any tool sees it.
        record.status = "invalid_params"
        request_id = message.get("id")
        if kind != "request" or hostile_value_problem(request_id):
            return refused(None, INVALID_REQUEST, problem, 400, record)
        return refused(request_id, INVALID_PARAMS, problem, 200, record)

    if kind != "request":
        record.method = message.get("method", "response")
        if message.get("method") == "notifications/cancelled":
            cancel_calls(endpoint, message.get("params") or {}, caller, record)
        return accepted(record)

    revision = decide(message, caller.headers, caller.raw_headers)
    if isinstance(revision, Rejection):
        # record.revision stays unset: the log names the revision the request claimed; it was refused before dispatch.
        record.method, record.status = message["method"], f"rejected {revision.code}"
        return refused(message["id"], revision.code, revision.message, revision.http_status, record, revision.data)
    return Call(endpoint, message, revision, caller, record)


def cancel_calls(endpoint: Endpoint, params: JSON, caller: Caller, record: CallRecord) -> None:
    """`notifications/cancelled`: stop the caller's matching calls here, and record it for the other replicas."""
    record.extra["cancelled_calls"] = RUNNING.cancel(endpoint.name, params.get("requestId"), caller.key)
    try:
        # The call may run on another replica: leave the cancellation where it can see it.
        do_record_mcp_cancellation(
            endpoint.name, request_id_key(params.get("requestId"), caller.key), str(params.get("reason", ""))
        )
    except Exception:  # a notification is answered 202 whatever happens
        logger.exception("could not record the cancellation (revision %s)", record.revision)


class Call:
    """A request that passed every check. The transport chooses how its answer travels (`streams`), then `run`s it."""

    def __init__(self, endpoint: Endpoint, message: JSON, revision: Revision, caller: Caller, record: CallRecord):
        self.endpoint = endpoint
        self.message = message
        self.revision = revision
        self.caller = caller
        self.record = record
        params: JSON = message.get("params") or {}
        meta = params.get("_meta")
        self.progress_token: Any = meta.get("progressToken") if isinstance(meta, dict) else None
        # Set by `cancel` (the client went away) at any time, even before `run` started.
        self.cancelled = threading.Event()

    @property
    def request_id(self) -> Any:
        return self.message["id"]

    @property
    def streams(self) -> bool:
        """A tool call whose client asked for progress: its answer is worth a stream, if the client takes one."""
        return self.message["method"] == "tools/call" and self.progress_token is not None

    def cancel(self) -> None:
        self.cancelled.set()

    def run(self, emit: Callable[[JSON], None] | None = None) -> Answer:
        """Dispatch the request; `emit` receives its progress notifications. Never raises."""
        revision = self.revision
        try:
            ctx = ToolContext(
                endpoint=self.endpoint.name,
                request_id=self.request_id,
                progress_token=self.progress_token,
                emit=emit,
                caller=self.caller.key,
                identity=self.caller.identity,
            )
            ctx.cancelled = self.cancelled  # one flag, so a `cancel` before the handler started still stops it
            with mcp_span(self.endpoint.name, self.message, person_id=self.caller.person_id, revision=revision.version):
                response = Dispatcher(self.endpoint, self.caller.owner).handle(self.message, ctx, self.record, revision)
        except Exception:  # never leave a client without an answer
            incident = uuid.uuid4().hex[:16]
            logger.exception("MCP dispatch failed (request id %s, revision %s)", incident, self.record.revision)
            response = error_response(
                self.request_id,
                INTERNAL_ERROR,
                f"Internal error; the server log has the detail (request id {incident})",
            )
        status = http_status_for(response["error"]["code"]) if revision.modern and "error" in response else 200
        opens_session = self.message["method"] == "initialize" and not revision.modern
        return Answer(response, status, self.record, opens_session=opens_session)
