"""Endpoints and the tools (and prompts, and resources) each one offers.

The engine knows nothing about notes or skills: each app's `tools.py`
registers its endpoints (name, title, instructions, token setting) and
declares its tools on them; the engine serves whatever is there.

    notes = register_endpoint(Endpoint("notes", title="hyperguild notes",
                                       token_setting="NOTES_MCP_TOKEN", instructions=...))

    @notes.tool(name="notes_query", title="Search the notes", description=...,
                input_schema={...}, output_schema={...}, read_only=True)
    def notes_query(arguments: dict, ctx: ToolContext) -> dict:
        ...

Prompts (slash commands in Claude Code) are declared the same way and answer
`prompts/get` with messages:

    @notes.prompt(name="recall", title=..., description=...,
                  arguments=(PromptArgument("topic", "what to recall", required=True),))
    def recall(arguments: dict) -> list[dict]:
        ...

A handler returns the structured result (a dict matching `output_schema`)
or raises `ToolError` with a message the caller can act on. Domain code raises
its app's own errors instead; the app's tools.py declares them once per
endpoint (`brain.translate_errors(BrainError)`) and they reach the caller the
same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from jsonschema import Draft202012Validator


class ToolError(Exception):
    """A failure the caller should see as an `isError: true` tool result."""

    def __init__(self, message: str, *, data: dict | None = None):
        super().__init__(message)
        self.message = message
        self.data = data


class ToolCancelled(ToolError):
    """Raised by `ToolContext.check_cancelled()` once the client cancelled."""

    def __init__(self) -> None:
        super().__init__("the call was cancelled by the client")


class ToolContext:
    """What a handler may know about and do to the call that runs it."""

    def __init__(
        self,
        *,
        endpoint: str,
        request_id: Any = None,
        progress_token: Any = None,
        emit: Callable[[dict], None] | None = None,
        client: dict | None = None,
        caller: str = "",
        identity: Any = None,
    ) -> None:
        self.endpoint = endpoint
        # Who the bearer token belongs to (hyperguild.auth.Identity); None outside an HTTP call.
        self.identity = identity
        # Who sent the call (hyperguild.mcp.cancellation.client_key): cancellations match on it and the id.
        self.caller = caller
        self.request_id = request_id
        self.progress_token = progress_token
        self.client = client or {}
        self.cancelled = threading.Event()
        self.started_at = time.time()
        self._emit = emit
        self._last_progress: float | None = None

    @property
    def actor(self) -> Any:
        """The person behind the call (a User), or None for the service identity: what actions record as "who"."""
        return getattr(self.identity, "user", None)

    @property
    def streams_progress(self) -> bool:
        return self._emit is not None and self.progress_token is not None

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send `notifications/progress` if the client asked for it; else a no-op.

        Progress must increase (the spec says so); a value that does not is
        nudged just above the previous one so that messages still get through.
        """
        if not self.streams_progress:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            progress = self._last_progress + 1e-6
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message:
            params["message"] = message
        assert self._emit is not None
        self._emit({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()

    def check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise ToolCancelled()


Handler = Callable[[dict, ToolContext], dict]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict
    output_schema: dict
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    # The call may take minutes (a skill worker, a model): a client that can poll gets a task handle instead.
    long_running: bool = False
    # The token scope a caller needs (e.g. "brain:write"); empty: the endpoint's first scope (Endpoint.add).
    scope: str = ""
    # The right (hyperguild.permissions) a caller needs, scope and role: empty means the right named as `scope`.
    right: str = ""
    input_validator: Draft202012Validator = field(init=False, repr=False, compare=False)
    output_validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for label, schema in (("input_schema", self.input_schema), ("output_schema", self.output_schema)):
            if schema.get("type") != "object":
                raise ValueError(f"tool {self.name}: {label} must be a JSON Schema of type object")
            Draft202012Validator.check_schema(schema)
        object.__setattr__(self, "input_validator", Draft202012Validator(self.input_schema))
        object.__setattr__(self, "output_validator", Draft202012Validator(self.output_schema))

    def scope_refusal(self, ctx: ToolContext) -> str | None:
        """Why the caller may not run this tool (a message it can act on), or None when it may.

        The one permission check (hyperguild.permissions): the credential's scope and its person's role now."""
        right = self.right or self.scope
        if not right or ctx.identity is None:
            return None
        from hyperguild.permissions import permission_refusal

        return permission_refusal(ctx.identity, right, what=self.name)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            },
        }


PromptHandler = Callable[[dict], list[dict]]
Completer = Callable[[str], list[str]]


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False
    # Suggestions for `completion/complete`: given what the user typed, the values to offer.
    complete: Completer | None = field(default=None, compare=False)

    def describe(self) -> dict:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True)
class Prompt:
    """An MCP prompt (Claude Code shows it as a slash command): arguments in, messages out.

    The handler gets the arguments (strings, the required ones present) and returns the
    prompt's messages, each `{"role": "user"|"assistant", "content": {"type": "text", "text": ...}}`;
    it raises ToolError for an argument it cannot use.
    """

    name: str
    title: str
    description: str
    handler: PromptHandler
    arguments: tuple[PromptArgument, ...] = ()
    # The right (hyperguild.permissions) `prompts/get` and `completion/complete` need; empty: the endpoint's first scope.
    right: str = ""

    def describe(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [argument.describe() for argument in self.arguments],
        }


class ResourceProvider(Protocol):
    """Read-only documents an endpoint exposes as MCP resources."""

    def list_resources(self, offset: int, limit: int) -> tuple[list[dict], bool]:
        """One page of `{uri, name, title?, description?, mimeType?}` and whether more follow."""

    def read_resource(self, uri: str) -> list[dict] | None:
        """The contents (`{uri, mimeType, text}` items) of `uri`, or None if unknown."""

    def resource_templates(self) -> list[dict]:
        """`{uriTemplate, name, description?, mimeType?}` items."""


class Endpoint:
    """One MCP endpoint (`/mcp/<name>`) and what it serves."""

    def __init__(
        self,
        name: str,
        *,
        title: str,
        instructions: str = "",
        token_setting: str | None = None,
        scopes: tuple[str, ...] = (),
    ):
        self.name = name
        # The token scopes that reach this endpoint (the first is the default scope of its tools);
        # the environment token (token_setting) is a service identity holding all of them.
        self.scopes = tuple(scopes)
        self.title = title
        self.instructions = instructions
        self.token_setting = token_setting
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        self.resources: ResourceProvider | None = None
        # Domain exceptions the engine answers as `isError` results (message and data kept),
        # declared by the apps' tools.py with `translate_errors`.
        self.domain_errors: tuple[type[Exception], ...] = ()

    def translate_errors(self, *error_types: type[Exception]) -> None:
        """Answer these domain errors (and their subclasses) as tool errors, as if the handler raised ToolError."""
        self.domain_errors = tuple(dict.fromkeys((*self.domain_errors, *error_types)))

    def add(self, tool: Tool) -> Tool:
        if not tool.scope and self.scopes:
            tool = replace(tool, scope=self.scopes[0])
        if tool.name in self.tools and self.tools[tool.name].handler is not tool.handler:
            raise ValueError(f"endpoint {self.name}: tool {tool.name} is registered twice")
        if tool.scope and self.scopes and tool.scope not in self.scopes:
            raise ValueError(f"endpoint {self.name}: tool {tool.name} needs scope {tool.scope}, not one of {self.scopes}")
        self.tools[tool.name] = tool
        return tool

    def tool(self, **spec: Any) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.add(Tool(handler=handler, **spec))
            return handler

        return register

    def prompt(self, *, arguments: tuple[PromptArgument, ...] = (), **spec: Any) -> Callable[[PromptHandler], PromptHandler]:
        """Declare a prompt: `@endpoint.prompt(name=..., title=..., description=..., arguments=(...))`."""

        def register(handler: PromptHandler) -> PromptHandler:
            prompt = Prompt(handler=handler, arguments=tuple(arguments), **spec)
            if not prompt.right and self.scopes:
                prompt = replace(prompt, right=self.scopes[0])
            if prompt.name in self.prompts and self.prompts[prompt.name].handler is not handler:
                raise ValueError(f"endpoint {self.name}: prompt {prompt.name} is registered twice")
            self.prompts[prompt.name] = prompt
            return handler

        return register

    @property
    def read_right(self) -> str:
        """The right that reading this endpoint's resources needs: its first scope's (its tools' default)."""
        return self.scopes[0] if self.scopes else ""

    def token(self) -> str:
        if not self.token_setting:
            return ""
        from django.conf import settings

        return getattr(settings, self.token_setting, "") or ""


_ENDPOINTS: dict[str, Endpoint] = {}
_LOCK = threading.Lock()


def register_endpoint(endpoint: Endpoint) -> Endpoint:
    with _LOCK:
        existing = _ENDPOINTS.get(endpoint.name)
        if existing is not None:
            return existing
        _ENDPOINTS[endpoint.name] = endpoint
        return endpoint


def get_endpoint(name: str) -> Endpoint:
    """The endpoint called `name`, registered by an app's `tools.py` (KeyError if none is)."""
    with _LOCK:
        return _ENDPOINTS[name]


def all_endpoints() -> list[Endpoint]:
    """Every registered endpoint, in registration order (INSTALLED_APPS order)."""
    with _LOCK:
        return list(_ENDPOINTS.values())


def token_settings() -> list[str]:
    """The settings that hold the endpoints' bearer tokens, e.g. ["BRAIN_MCP_TOKEN", ...]."""
    return list(dict.fromkeys(endpoint.token_setting for endpoint in all_endpoints() if endpoint.token_setting))


def find_endpoint(name: str) -> Endpoint | None:
    with _LOCK:
        return _ENDPOINTS.get(name)


def unregister_endpoint(name: str) -> None:
    """For tests that mount a throw-away endpoint."""
    with _LOCK:
        _ENDPOINTS.pop(name, None)
