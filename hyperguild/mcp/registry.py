"""Endpoints and the tools (and prompts, and resources) each one offers.

The engine knows nothing about notes or skills: each app's `tools.py`
registers its endpoints (name, title, instructions, token setting) and
declares its tools on them; the engine serves whatever is there.

    notes = register_endpoint(Endpoint("notes", title="hyperguild notes",
                                       token_setting="NOTES_MCP_TOKEN", instructions=...))

    class QueryInput(ToolInput):            # hyperguild.mcp.contracts
        query: str = Field(min_length=1, description="words to search for")

    class QueryResult(ToolResult):
        hits: list[Hit]

    @notes.tool(name="notes_query", title="Search the notes", description=...,
                input_model=QueryInput, result_model=QueryResult, read_only=True)
    def notes_query(arguments: QueryInput, ctx: ToolContext) -> QueryResult:
        ...

Every tool declares both models (registering one without them raises
ToolContractError); its inputSchema and outputSchema are generated from them
(`hyperguild.mcp.contracts`). The engine checks the raw arguments against the
inputSchema (its error messages), `Tool.call` parses them into the input model,
runs the handler and dumps the result model as the structured result.

Prompts (slash commands in Claude Code) are declared the same way and answer
`prompts/get` with messages:

    @notes.prompt(name="recall", title=..., description=...,
                  arguments=(PromptArgument("topic", "what to recall", required=True),))
    def recall(arguments: dict) -> list[dict]:
        ...

A handler returns its result model or raises `ToolError` with a message the
caller can act on. Domain code raises its app's own errors instead; the app's
tools.py declares them once per endpoint (`brain.translate_errors(BrainError)`)
and they reach the caller the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

from django.conf import settings
from jsonschema import Draft202012Validator
from mcp import types
from pydantic import BaseModel, ValidationError

from hyperguild.lib.typed import JSON
from hyperguild.mcp.contracts import CallProject, CallSession, JsonSchema, declared_field, input_schema, output_schema
from hyperguild.mcp.errors import ToolCancelled, ToolError
from hyperguild.providers import permission_refusal


class ToolContractError(TypeError):
    """A tool declared without its typed contract (input and result models), or with a wrong one."""


class ToolContext:
    """What a handler may know about and do to the call that runs it."""

    def __init__(
        self,
        *,
        endpoint: str,
        request_id: Any = None,
        progress_token: Any = None,
        emit: Callable[[JSON], None] | None = None,
        client: JSON | None = None,
        caller: str = "",
        identity: Any = None,
    ) -> None:
        self.endpoint = endpoint
        # Who the bearer token belongs to (hyperguild.providers.Identity); None outside an HTTP call.
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


InputT = TypeVar("InputT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=BaseModel)
# What Tool keeps: a handler of its input model returning its result model (the decorator checks the pairing).
Handler = Callable[[Any, ToolContext], Any]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    handler: Handler
    # The tool's arguments (a hyperguild.mcp.contracts.ToolInput) and result (a ToolResult), both required
    # (None is refused with a ToolContractError, in words); its inputSchema and outputSchema are generated from them.
    input_model: type[BaseModel] | None = None
    result_model: type[BaseModel] | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    # The call may take minutes (a skill worker, a model): a client that can poll gets a task handle instead.
    long_running: bool = False
    # The token scope a caller needs (e.g. "brain:write"); empty: the endpoint's first scope (Endpoint.add).
    scope: str = ""
    # The right (people.permissions) a caller needs, scope and role: empty means the right named as `scope`.
    right: str = ""
    # It asks a model: its result carries `usage` and `budget_warning` (its result_model subclasses ledger.usage.UsageReport).
    reports_usage: bool = False
    # Generated from the models. Whether they are valid JSON Schema is checked by a test
    # (tests/mcp/test_tool_contracts.py), not at import: the metaschema check cost a process seconds at start.
    input_schema: JsonSchema = field(init=False, compare=False)
    output_schema: JsonSchema = field(init=False, compare=False)
    input_validator: Draft202012Validator = field(init=False, repr=False, compare=False)
    output_validator: Draft202012Validator = field(init=False, repr=False, compare=False)
    # The arguments the input model marks as the call's session and project (contracts.CallSession, CallProject);
    # "" when it has none. The engine learns them here, never by an argument's name.
    session_field: str = field(init=False, compare=False)
    project_field: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if self.input_model is None and self.result_model is None:
            raise ToolContractError(
                f"tool {self.name} is registered without its typed contract: declare input_model= (a "
                "hyperguild.mcp.contracts.ToolInput) and result_model= (a ToolResult); its inputSchema and "
                "outputSchema are generated from them"
            )
        for label, model in (("input_model", self.input_model), ("result_model", self.result_model)):
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ToolContractError(
                    f"tool {self.name}: {label} must be a pydantic model class (hyperguild.mcp.contracts."
                    f"{'ToolInput' if label == 'input_model' else 'ToolResult'}), not {model!r}"
                )
        assert self.input_model is not None and self.result_model is not None
        if self.reports_usage and not {"usage", "budget_warning"} <= set(self.result_model.model_fields):
            raise ToolContractError(
                f"tool {self.name} reports usage: its result_model {self.result_model.__name__} must subclass "
                "ledger.usage.UsageReport (the `usage` and `budget_warning` fields)"
            )
        object.__setattr__(self, "input_schema", input_schema(self.input_model))
        object.__setattr__(self, "output_schema", output_schema(self.result_model))
        object.__setattr__(self, "input_validator", Draft202012Validator(self.input_schema))
        object.__setattr__(self, "output_validator", Draft202012Validator(self.output_schema))
        object.__setattr__(self, "session_field", declared_field(self.input_model, CallSession))
        object.__setattr__(self, "project_field", declared_field(self.input_model, CallProject))

    @property
    def models(self) -> tuple[type[BaseModel], type[BaseModel]]:
        """The input and result models (both present: `__post_init__` refuses a tool without them)."""
        assert self.input_model is not None and self.result_model is not None
        return self.input_model, self.result_model

    def parse(self, arguments: dict[str, Any]) -> BaseModel:
        """`arguments` (already checked against the inputSchema by the engine) as the tool's input model."""
        input_model, _ = self.models
        try:
            return input_model.model_validate(arguments)
        except ValidationError as exc:
            # A rule of the model beyond what the inputSchema says (a validator): the caller's to fix.
            raise ToolError(f"Invalid arguments for {self.name}: {contract_problems(exc)}") from None

    def call(self, arguments: dict[str, Any], ctx: ToolContext) -> BaseModel:
        """Run the tool on `arguments` (already checked against its inputSchema by the engine): parse them into
        the input model and run the handler; its result model (the engine dumps it as the structured result)."""
        return self.checked(self.handler(self.parse(arguments), ctx))

    def checked(self, result: Any) -> BaseModel:
        """The handler's (or a job's) result, refused unless it is the tool's result model."""
        _, result_model = self.models
        if not isinstance(result, result_model):
            raise ToolContractError(
                f"tool {self.name} returned {type(result).__name__}, not its result_model {result_model.__name__}"
            )
        return result

    def scope_refusal(self, ctx: ToolContext) -> str | None:
        """Why the caller may not run this tool (a message it can act on), or None when it may.

        The one permission check (people.permissions): the credential's scope and its person's role now."""
        right = self.right or self.scope
        if not right or ctx.identity is None:
            return None
        return permission_refusal(ctx.identity, right, what=self.name)

    def describe(self) -> types.Tool:
        """The tool as `tools/list` lists it."""
        return types.Tool.model_validate(
            {
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
        )


def contract_problems(error: ValidationError) -> str:
    """A pydantic validation error in the engine's wording: "'where': what; ..."."""
    problems = []
    for item in error.errors(include_url=False):
        where = "/".join(str(part) for part in item["loc"])
        problems.append(f"'{where}': {item['msg']}" if where else item["msg"])
    return "; ".join(problems)


# Arguments (strings, the required ones present) in; messages out, as `mcp.types.PromptMessage`s or their JSON.
PromptHandler = Callable[[dict[str, str]], Sequence[types.PromptMessage | Mapping[str, object]]]
Completer = Callable[[str], list[str]]


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False
    # Suggestions for `completion/complete`: given what the user typed, the values to offer.
    complete: Completer | None = field(default=None, compare=False)

    def describe(self) -> types.PromptArgument:
        return types.PromptArgument(name=self.name, description=self.description, required=self.required)


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
    # The right (people.permissions) `prompts/get` and `completion/complete` need; empty: the endpoint's first scope.
    right: str = ""

    def describe(self) -> types.Prompt:
        """The prompt as `prompts/list` lists it."""
        return types.Prompt(
            name=self.name,
            title=self.title,
            description=self.description,
            arguments=[argument.describe() for argument in self.arguments],
        )


class ResourceProvider(Protocol):
    """Read-only documents an endpoint exposes as MCP resources."""

    def list_resources(self, offset: int, limit: int) -> tuple[list[JSON], bool]:
        """One page of `{uri, name, title?, description?, mimeType?}` and whether more follow."""

    def read_resource(self, uri: str) -> list[JSON] | None:
        """The contents (`{uri, mimeType, text}` items) of `uri`, or None if unknown."""

    def resource_templates(self) -> list[JSON]:
        """`{uriTemplate, name, description?, mimeType?}` items."""


@dataclass(frozen=True)
class JobState:
    """A long tool call that runs as its app's job (a supervisor SkillRun), as `tasks/get` reports it.

    The job's own record is the task: the engine keeps no row and runs no thread for it
    (`hyperguild.mcp.mcp_tasks`), so any replica answers for it, whichever one started it."""

    task_id: str
    tool: str
    status: str  # a task status: "working", "completed" or "cancelled"
    message: str
    created_at: datetime
    updated_at: datetime
    result: BaseModel | None = None  # the tool's result model, once completed
    error: str | None = None  # once completed: the text of the error result its blocking call would answer
    requested_by: Any = None  # the person behind the call (a User), or None: whose budget the result warns about


class JobStore(Protocol):
    """An app's long tools that run as jobs of its own (its worker, its record, its heartbeat and reaper).

    The app sets it on its endpoint (`endpoint.jobs = ...`, from AppConfig.ready via its tools.py); a
    task-augmented `tools/call` of a tool it `runs` is handed to `start` after the engine's checks at the door,
    and `tasks/get` / `tasks/cancel` ask `find` / `cancel`. A call is found only with the caller's `owner`
    (a digest of its credentials), as an unknown one would be."""

    def runs(self, tool: str) -> bool:
        """Whether `tool` runs as a job when the client can poll a task."""

    def start(self, tool: str, arguments: BaseModel, ctx: ToolContext, *, task_id: str, owner: str) -> JobState:
        """Record the job under `task_id` and queue it; raises the tool's errors as its handler would."""

    def find(self, task_id: str, owner: str) -> JobState | None:
        """The job's state now, or None if there is no such job of this owner."""

    def cancel(self, task_id: str, owner: str) -> None:
        """Ask the job to stop (nothing if it has ended)."""


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
        # The app's jobs (JobStore) for long tools that run outside the web process; None: no tasks (they block).
        self.jobs: JobStore | None = None

    def translate_errors(self, *error_types: type[Exception]) -> None:
        """Answer these domain errors (and their subclasses) as tool errors, as if the handler raised ToolError."""
        self.domain_errors = tuple(dict.fromkeys((*self.domain_errors, *error_types)))

    def add(self, tool: Tool) -> Tool:
        if not tool.scope and self.scopes:
            tool = replace(tool, scope=self.scopes[0])
        if tool.name in self.tools and self.tools[tool.name].handler is not tool.handler:
            raise ValueError(f"endpoint {self.name}: tool {tool.name} is registered twice")
        if tool.scope and self.scopes and tool.scope not in self.scopes:
            raise ValueError(
                f"endpoint {self.name}: tool {tool.name} needs scope {tool.scope}, not one of {self.scopes}"
            )
        self.tools[tool.name] = tool
        return tool

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        input_model: type[InputT],
        result_model: type[ResultT],
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        open_world: bool = False,
        long_running: bool = False,
        scope: str = "",
        right: str = "",
        reports_usage: bool = False,
    ) -> Callable[[Callable[[InputT, ToolContext], ResultT]], Callable[[InputT, ToolContext], ResultT]]:
        """Declare a tool: `@endpoint.tool(name=..., title=..., description=..., input_model=..., result_model=...)`.

        The handler takes the parsed input model and the call's ToolContext and returns the result model."""
        # The endpoint's default scope is given here, not by Endpoint.add's `replace` (which would build the tool twice).
        scope = scope or (self.scopes[0] if self.scopes else "")

        def register(handler: Callable[[InputT, ToolContext], ResultT]) -> Callable[[InputT, ToolContext], ResultT]:
            self.add(
                Tool(
                    name=name,
                    title=title,
                    description=description,
                    handler=handler,
                    input_model=input_model,
                    result_model=result_model,
                    read_only=read_only,
                    destructive=destructive,
                    idempotent=idempotent,
                    open_world=open_world,
                    long_running=long_running,
                    scope=scope,
                    right=right,
                    reports_usage=reports_usage,
                )
            )
            return handler

        return register

    def prompt(
        self, *, arguments: tuple[PromptArgument, ...] = (), **spec: Any
    ) -> Callable[[PromptHandler], PromptHandler]:
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
