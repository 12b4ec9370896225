"""MCP tools of this app (registered on import, from AppConfig.ready).

- `session_log` on /mcp/brain;
- `retrospective` and `trainer` on /mcp/supervisor (their logic lives in
  `sessions.retrospective` and `sessions.trainer`);
- their routed twins on /mcp/routing, which call the same functions with the
  model the router picks (`sessions.routed_skills`).
"""

from __future__ import annotations

from hyperguild.mcp.registry import ToolContext, get_endpoint
from hyperguild.permissions import register_right
from sessions.actions import do_log_checked_entry
from sessions.errors import SessionsError
from sessions.inputs import ENTRY_FIELDS_SCHEMA, SESSION_ID_SCHEMA
from sessions.retrospective import run_retrospective
from sessions.routed_skills import routed_retrospective_result
from sessions.trainer import run_trainer
from supervisor import skills as _skills
from supervisor.routing_tools import routed_model_tool, routing
from supervisor.tools import supervisor

# EntryRefused, SessionNotFound… reach the caller as tool errors on every endpoint with sessions tools.
for _endpoint in ("brain", "supervisor", "routing"):
    get_endpoint(_endpoint).translate_errors(SessionsError)

# Logging and reading back one's own sessions is every account's; a session is its owner's (sessions.actions).
register_right("sessions:write", scope="sessions:write",
               description="log your own sessions: session_log, POST /sessions/<id>/entries, the hook route")
register_right("sessions:read", scope="sessions:read",
               description="read your own sessions' entries (staff: every session): GET /sessions/<id>/entries")

# The arguments: the session id plus the entry fields, both from the one limit table in sessions.actions.
SESSION_LOG_INPUT = {
    **ENTRY_FIELDS_SCHEMA,
    "required": ["session_id", *ENTRY_FIELDS_SCHEMA["required"]],
    "properties": {"session_id": SESSION_ID_SCHEMA, **ENTRY_FIELDS_SCHEMA["properties"]},
}

SESSION_LOG_OUTPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["session_id", "seq", "created", "entry_id"],
    "properties": {
        "session_id": {"type": "string"},
        "seq": {"type": "integer", "minimum": 1},
        "created": {"type": "boolean", "description": "False when an idempotency_key matched an earlier entry."},
        "entry_id": {"type": "integer"},
    },
}


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
    input_schema=SESSION_LOG_INPUT,
    output_schema=SESSION_LOG_OUTPUT,
    read_only=False,
    destructive=False,
    idempotent=False,
)
def session_log(arguments: dict, ctx: ToolContext) -> dict:
    fields = {key: value for key, value in arguments.items() if key != "session_id"}
    return do_log_checked_entry(arguments["session_id"], fields, source="mcp", user=ctx.actor)



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
)
def retrospective(arguments: dict, ctx: ToolContext) -> dict:
    ctx.report_progress(0, 1, "reading the session")
    result = run_retrospective(arguments["session_id"], llm_model=arguments.get("model"))
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
def trainer(arguments: dict, ctx: ToolContext) -> dict:
    return run_trainer(arguments["session_id"])


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
def routed_retrospective(arguments: dict, ctx: ToolContext) -> dict:
    ctx.report_progress(0, 1, "asking the routed model")
    return routed_retrospective_result(arguments, requested_by=ctx.actor)


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
def routed_trainer(arguments: dict, ctx: ToolContext) -> dict:
    return run_trainer(arguments["session_id"])
