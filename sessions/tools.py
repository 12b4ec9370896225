"""MCP tools of this app (registered on import, from AppConfig.ready).

- `session_log` on /mcp/brain;
- `retrospective` and `trainer` on /mcp/supervisor (their logic lives in
  `sessions.retrospective` and `sessions.trainer`);
- their routed twins on /mcp/routing, which call the same functions with the
  model the router picks (`sessions.routed_skills`).
"""

from __future__ import annotations

from pydantic import Field

from hyperguild.mcp.contracts import ToolResult
from hyperguild.mcp.registry import ToolContext, get_endpoint
from people.permissions import register_right
from sessions.actions import check_session_named, do_log_checked_entry
from sessions.errors import SessionsError
from sessions.inputs import SessionLogInput
from sessions.retrospective import run_retrospective
from sessions.routed_skills import routed_retrospective_result
from sessions.trainer import run_trainer
from supervisor import skills as _skills
from supervisor.routing_tools import routed_model_tool, routing
from supervisor.skills import RetrospectiveInput, RetrospectiveResult, TrainerInput, TrainerResult
from supervisor.tools import supervisor

# EntryRefused, SessionNotFound… reach the caller as tool errors on every endpoint with sessions tools.
for _endpoint in ("brain", "supervisor", "routing"):
    get_endpoint(_endpoint).translate_errors(SessionsError)

# A supervisor or routing skill that names a session (session_id) is refused on another person's session.
_skills.SESSION_CHECKS.append(check_session_named)

# Logging and reading back one's own sessions is every account's; a session is its owner's (sessions.actions).
register_right(
    "sessions:write",
    scope="sessions:write",
    description="log your own sessions: session_log, POST /sessions/<id>/entries, the hook route",
)
register_right(
    "sessions:read",
    scope="sessions:read",
    description="read your own sessions' entries (staff: every session): GET /sessions/<id>/entries",
)


class SessionLogResult(ToolResult):
    """The entry `session_log` wrote (or found: a retried idempotency_key)."""

    session_id: str
    seq: int = Field(ge=1)
    created: bool = Field(description="False when an idempotency_key matched an earlier entry.")
    entry_id: int


@get_endpoint("brain").tool(
    name="session_log",
    scope="sessions:write",
    title="Log a session event",
    description=(
        "Append a structured entry {kind, skill?, phase?, status?, message?, data?} to a session (created on "
        "first use). Entries are numbered 1, 2, 3… per session and never edited. Pass idempotency_key so a "
        "retried call returns the first entry instead of writing twice. Log decisions (kind=decision) and "
        "corrections (kind=correction) explicitly: the retrospective turns them into notes."
    ),
    input_model=SessionLogInput,
    result_model=SessionLogResult,
    read_only=False,
    destructive=False,
    idempotent=False,
)
def session_log(params: SessionLogInput, ctx: ToolContext) -> SessionLogResult:
    # The action checks the entry's fields as a door from outside does (the REST body is the same dict).
    fields = params.model_dump(exclude_none=True, exclude={"session_id"})
    logged = do_log_checked_entry(params.session_id, fields, source="mcp", user=ctx.actor)
    return SessionLogResult.model_validate(logged)


# --- retrospective and trainer on /mcp/supervisor (schemas from supervisor/skills.py) -----------


@supervisor.tool(
    **_skills.tool_declaration("retrospective"),
    description=(
        "Look back on a session's log and skill runs and propose learnings {title, body, kind: decision|correction|"
        "surprise|pattern, evidence}. New ones are written to the brain as raw notes for review; one an existing "
        "note already covers comes back as a merge suggestion (merge_into). Uses the LLM when LITELLM_BASE_URL is "
        "set (model: the model argument, else BRAIN_ANSWER_MODEL, else HYPERGUILD_THINKING_MODEL), rules otherwise. "
        "Running it again on the same session writes nothing new."
    ),
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
    reports_usage=True,
)
def retrospective(params: RetrospectiveInput, ctx: ToolContext) -> RetrospectiveResult:
    ctx.report_progress(0, 1, "reading the session")
    # As the caller: their own sessions only (staff: any), as REST's GET /sessions/<id>/entries.
    result = run_retrospective(params.session_id, llm_model=params.model, requested_by=ctx.actor)
    ctx.report_progress(1, 1, "done")
    return result


@supervisor.tool(
    **_skills.tool_declaration("trainer"),
    description=(
        "Turn a session's verified skill runs into training candidates: SFT from runs that passed verification, "
        "DPO from a failed attempt followed by a passing one on the same task (and from routed calls where one "
        "model failed its check and the other passed). Secrets are redacted and such examples flagged. Everything "
        "starts as a candidate for curation in the UI; running it again stores nothing twice."
    ),
    read_only=False,
    destructive=False,
    idempotent=True,
    long_running=True,
)
def trainer(params: TrainerInput, ctx: ToolContext) -> TrainerResult:
    check_session_named(params.session_id, ctx.actor)  # another person's session: as if it did not exist
    return run_trainer(params.session_id, requested_by=ctx.actor)


# --- the routed twins on /mcp/routing (the model is the router's choice) ---------------------


@routed_model_tool(
    **_skills.tool_declaration("retrospective", routed=True),
    description=(
        "Look back on a session's log and skill runs and propose learnings, written to the brain as raw notes "
        "(as the supervisor's retrospective does), with the model chosen by the router. The answer passes when "
        "the model answered valid JSON whose evidence names real entries; otherwise the thinking model retries."
    ),
    idempotent=True,
)
def routed_retrospective(params: RetrospectiveInput, ctx: ToolContext) -> RetrospectiveResult:
    ctx.report_progress(0, 1, "asking the routed model")
    return routed_retrospective_result(params, requested_by=ctx.actor)


@routing.tool(
    **_skills.tool_declaration("trainer", routed=True),
    description=(
        "Turn a session's verified skill runs and routed retries into SFT/DPO candidates for curation, as the "
        "supervisor's trainer does. Extraction asks no model, so nothing is routed: no routing decision is "
        "logged and model_used is empty (a pass credited to a model that was never asked would skew routing)."
    ),
    idempotent=True,
    long_running=True,
)
def routed_trainer(params: TrainerInput, ctx: ToolContext) -> TrainerResult:
    check_session_named(params.session_id, ctx.actor)  # another person's session: as if it did not exist
    return run_trainer(params.session_id, requested_by=ctx.actor)
