"""/mcp/<endpoint> served by the official `mcp` SDK's server (its low-level `Server` and streamable-HTTP
session manager, Starlette/ASGI) instead of hyperguild/mcp/ (engine, views, revision, tasks, cancellation),
far enough to run the same tests: tools, prompts, completion and resources of hyperguild's registry.

    app = sdk_application(django_asgi_app)  # /mcp/<endpoint> → the SDK, the rest → Django

What it leaves out, so what a replacement would still have to write on top of the SDK: bearer tokens and OAuth
scopes per endpoint (the SDK has a TokenVerifier hook), the per-call ModelCall context and usage reports, the
output check and the output budget (HYPERGUILD_MCP_MAX_OUTPUT_CHARS), the call log line, admission control,
and the Tasks extension over SkillRun. It needs ASGI: the SDK's transport cannot run under granian/gunicorn WSGI,
hyperguild's default servers. `bench/plumbing/swap.py` (HYPERGUILD_PLUMBING=mcp) puts it in front of the
tests' ASGI server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hyperguild.lib.schema import format_schema_errors, schema_problems
from hyperguild.mcp.registry import ToolContext, ToolError, find_endpoint, get_endpoint

ASGIApp = Callable[[dict[str, Any], Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]], Awaitable[None]]


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def sdk_server(name: str) -> Server[Any]:
    """A low-level SDK server answering from hyperguild's registry for the endpoint `name`, looked up at each
    call (the tests register endpoints anew between tests)."""
    first = get_endpoint(name)

    def call(tool_name: str, arguments: dict[str, Any], request_id: Any) -> types.CallToolResult:
        endpoint = get_endpoint(name)
        tool = endpoint.tools.get(tool_name)
        if tool is None:
            known = ", ".join(endpoint.tools)
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {tool_name} (this endpoint has: {known})")
        problems = schema_problems(tool.input_validator, arguments)
        if problems:
            return tool_error(f"Invalid arguments for {tool_name}: {format_schema_errors(problems)}")
        try:
            result = tool.call(arguments, ToolContext(endpoint=endpoint.name, request_id=request_id))
            structured = result.model_dump(mode="json")
        except ToolError as exc:
            return tool_error(exc.message)
        except endpoint.domain_errors as exc:
            return tool_error(str(exc))
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = get_endpoint(name).tools.values()
        return types.ListToolsResult(tools=[tool.describe() for tool in tools])

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await sync_to_async(call)(params.name, dict(params.arguments or {}), ctx.request_id)

    async def on_list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        prompts = [prompt.describe() for prompt in get_endpoint(name).prompts.values()]
        return types.ListPromptsResult(prompts=prompts)

    def prompt_messages(prompt_name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        endpoint = get_endpoint(name)
        prompt = endpoint.prompts.get(prompt_name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {prompt_name}")
        missing = [a.name for a in prompt.arguments if a.required and not arguments.get(a.name, "").strip()]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"Prompt {prompt.name} needs {', '.join(missing)}")
        try:
            messages = prompt.handler(arguments)
        except (ToolError, *endpoint.domain_errors) as exc:
            raise MCPError(types.INVALID_PARAMS, getattr(exc, "message", None) or str(exc)) from None
        return types.GetPromptResult(
            description=prompt.description, messages=[types.PromptMessage.model_validate(m) for m in messages]
        )

    async def on_get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await sync_to_async(prompt_messages)(params.name, dict(params.arguments or {}))

    async def on_completion(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        values: list[str] = []
        endpoint = get_endpoint(name)
        prompt = endpoint.prompts.get(getattr(params.ref, "name", "")) if params.ref.type == "ref/prompt" else None
        spec = next((a for a in prompt.arguments if a.name == params.argument.name), None) if prompt else None
        if spec is not None and spec.complete is not None:
            complete = spec.complete
            values = [str(v) for v in await sync_to_async(complete)(params.argument.value or "")]
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    async def on_list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        resources = get_endpoint(name).resources
        assert resources is not None
        items, _more = await sync_to_async(resources.list_resources)(0, settings.HYPERGUILD_MCP_PAGE_SIZE)
        return types.ListResourcesResult(resources=[types.Resource.model_validate(item) for item in items])

    async def on_list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        resources = get_endpoint(name).resources
        assert resources is not None
        templates = resources.resource_templates()
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate.model_validate(t) for t in templates]
        )

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        resources = get_endpoint(name).resources
        assert resources is not None
        contents = await sync_to_async(resources.read_resource)(str(params.uri))
        if contents is None:
            # -32002 up to 2025-11-25; 2026-07-28 says -32602 (as hyperguild/mcp/engine.py does).
            code = types.INVALID_PARAMS if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else -32002
            raise MCPError(code, f"Resource not found: {params.uri}", {"uri": str(params.uri)})
        return types.ReadResourceResult.model_validate({"contents": contents})

    handlers: dict[str, Any] = {"on_list_tools": on_list_tools, "on_call_tool": on_call_tool}
    if first.prompts:
        handlers |= {"on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt, "on_completion": on_completion}
    if first.resources is not None:
        handlers |= {
            "on_list_resources": on_list_resources,
            "on_read_resource": on_read_resource,
            "on_list_resource_templates": on_list_resource_templates,
        }

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        tool = get_endpoint(name).tools.get(tool_name)
        return tool.input_schema if tool else None

    return Server(
        f"hyperguild-{first.name}",
        version=settings.VERSION,
        title=first.title,
        instructions=first.instructions or None,
        get_tool_input_schema=input_schema,
        **handlers,
    )


class SdkRouter:
    """ASGI: /mcp/<name> of every registered endpoint to an SDK streamable-HTTP app, everything else to Django.

    Each SDK app is built on the first request to its path. Its session manager needs a running task group
    (the Starlette lifespan); the tests' uvicorn runs with lifespan off, so the router enters it then and keeps
    it for the life of the process."""

    def __init__(self, django_app: ASGIApp, *, stateful: bool = False) -> None:
        self.django_app = django_app
        self.stateful = stateful
        self.apps: dict[str, tuple[Any, asyncio.Event]] = {}
        self.holders: list[asyncio.Task[None]] = []
        self.security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "testserver"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )

    async def app_for(self, name: str) -> Any:
        entry = self.apps.get(name)
        if entry is None:
            if find_endpoint(name) is None:
                return None
            server = sdk_server(name)
            app = server.streamable_http_app(
                streamable_http_path=f"/mcp/{name}",
                stateless_http=not self.stateful,
                json_response=True,
                transport_security=self.security,
                max_request_body_size=settings.HYPERGUILD_MCP_MAX_BODY,
            )
            ready = asyncio.Event()
            entry = self.apps[name] = (app, ready)

            async def hold() -> None:
                async with server.session_manager.run():
                    ready.set()
                    await asyncio.Event().wait()  # for the life of the server

            self.holders.append(asyncio.get_running_loop().create_task(hold()))
        await entry[1].wait()
        return entry[0]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        parts = scope.get("path", "").rstrip("/").split("/")
        if scope["type"] == "http" and len(parts) == 3 and parts[1] == "mcp":
            app = await self.app_for(parts[2])
            if app is not None:
                await app(scope, receive, send)
                return
        await self.django_app(scope, receive, send)


def sdk_application(django_app: ASGIApp, *, stateful: bool = False) -> SdkRouter:
    """stateful: the SDK keeps a session per client (Mcp-Session-Id, in this process's memory); else stateless."""
    return SdkRouter(django_app, stateful=stateful)
