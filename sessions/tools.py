"""MCP tools of this app (registered on import, from AppConfig.ready).

- `session_log` on /mcp/brain;
- `retrospective` and `trainer` on /mcp/supervisor (their logic lives in
  `sessions.retrospective` and `sessions.trainer`);
- their routed twins on /mcp/routing, which call the same functions with the
  model the router picks.
"""

from __future__ import annotations

import json
import time

from hyperguild.mcp.registry import ToolContext, ToolError, get_endpoint
from sessions.actions import ENTRY_FIELDS_SCHEMA, SESSION_ID_SCHEMA, do_log_checked_entry
from sessions.errors import SessionsError
from sessions.retrospective import SessionNotFound, run_retrospective
from sessions.trainer import run_trainer
from supervisor import skills as _skills
from supervisor.models import RoutingEntry
from supervisor.routing import Attempt, route
from supervisor.routing_tools import routed_result, routing, routing_client
from supervisor.tools import supervisor

# EntryRefused, SessionNotFound… reach the caller as tool errors on every endpoint with sessions tools.
for _endpoint in ("brain", "supervisor", "routing"):
    get_endpoint(_endpoint).translate_errors(SessionsError)

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
    name="retrospective",
    title=_skills.SKILLS["retrospective"].title,
    description=(
        "Look back on a session's log and skill runs and propose learnings {title, body, kind: decision|correction|"
        "surprise|pattern, evidence}. New ones are written to the brain as raw notes for review; one an existing "
        "note already covers comes back as a merge suggestion (merge_into). Uses the LLM when LITELLM_BASE_URL is "
        "set (model: the model argument, else BRAIN_ANSWER_MODEL, else HYPERGUILD_THINKING_MODEL), rules otherwise. "
        "Running it again on the same session writes nothing new."
    ),
    input_schema=_skills.input_schema("retrospective"),
    output_schema=_skills.result_schema("retrospective"),
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
)
def retrospective(arguments: dict, ctx: ToolContext) -> dict:
    ctx.report_progress(0, 1, "reading the session")
    result = run_retrospective(arguments["session_id"], llm_model=arguments.get("model"))
    ctx.report_progress(1, 1, "done")
    return result


@supervisor.tool(
    name="trainer",
    title=_skills.SKILLS["trainer"].title,
    description=(
        "Turn a session's verified skill runs into training candidates: SFT from runs that passed verification, "
        "DPO from a failed attempt followed by a passing one on the same task (and from routed calls where one "
        "model failed its check and the other passed). Secrets are redacted and such examples flagged. Everything "
        "starts as a candidate for curation in the UI; running it again stores nothing twice."
    ),
    input_schema=_skills.input_schema("trainer"),
    output_schema=_skills.result_schema("trainer"),
    read_only=False,
    destructive=False,
    idempotent=True,
)
def trainer(arguments: dict, ctx: ToolContext) -> dict:
    return run_trainer(arguments["session_id"])


# --- the routed twins on /mcp/routing (the model is the router's choice) ---------------------


def _routed_session_skill(
    skill: str, arguments: dict, run_with_model, judge, list_key: str, *, requested_by=None
) -> dict:
    """Route a sessions-app skill: `run_with_model(session_id, model)` does the work with the given model,
    `judge(outcome)` returns None if it passed or why it did not."""
    started = time.monotonic()
    routing_client()

    def attempt(model: str) -> Attempt:
        began = time.monotonic()
        try:
            outcome = run_with_model(arguments["session_id"], model)
        except SessionNotFound:
            raise  # the caller's mistake, not the model's: out of route() before anything is logged
        except ToolError as exc:
            return Attempt(RoutingEntry.ERROR, error=exc.message, latency_ms=_ms(began))
        except Exception as exc:  # the sessions logic broke: this attempt errs, the call still ends cleanly
            return Attempt(RoutingEntry.ERROR, error=f"{exc.__class__.__name__}: {exc}", latency_ms=_ms(began))
        problem = judge(outcome)
        return Attempt(
            RoutingEntry.FAIL if problem else RoutingEntry.PASS,
            data=outcome,
            error=problem or "",
            latency_ms=_ms(began),
            response=json.dumps(outcome, default=str)[: RoutingEntry.BODY_CAP],
        )

    try:
        routed = route(
            skill, attempt, override=arguments.get("model"), session_id=arguments["session_id"], requested_by=requested_by
        )
    except SessionNotFound as exc:
        raise ToolError(str(exc)) from None
    values = {
        key: value
        for key, value in routed.data.items()
        if key not in {"status", "model_used", "attempts", "duration_ms", "phase", "skill"}
    }
    values["count"] = len(values.get(list_key) or [])
    return routed_result(skill, routed, started, **values)


def _ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)


def retrospective_judge(outcome: dict) -> str | None:
    if outcome.get("status") != "pass":
        return outcome.get("message") or f"the retrospective ended {outcome.get('status')}"
    if outcome.get("method") != "llm":
        # The sessions logic falls back to rules when the model fails: for routing, that model failed.
        return "the model did not answer; the rules answered instead. " + str(outcome.get("message", ""))[:500]
    return None


@routing.tool(
    name="retrospective",
    title=_skills.SKILLS["retrospective"].title + " (routed)",
    description=(
        "Look back on a session's log and skill runs and propose learnings, written to the brain as raw notes "
        "(as the supervisor's retrospective does), with the model chosen by the router. The answer passes when "
        "the model answered valid JSON whose evidence names real entries; otherwise the thinking model retries."
    ),
    input_schema=_skills.input_schema("retrospective"),
    output_schema=_skills.result_schema("retrospective"),
    idempotent=True,
    open_world=True,
)
def routed_retrospective(arguments: dict, ctx: ToolContext) -> dict:
    ctx.report_progress(0, 1, "asking the routed model")
    return _routed_session_skill(
        "retrospective",
        arguments,
        lambda session_id, model: run_retrospective(session_id, llm_model=model),
        retrospective_judge,
        "learnings",
        requested_by=ctx.actor,
    )


@routing.tool(
    name="trainer",
    title=_skills.SKILLS["trainer"].title + " (routed)",
    description=(
        "Turn a session's verified skill runs and routed retries into SFT/DPO candidates for curation, as the "
        "supervisor's trainer does. Extraction asks no model, so nothing is routed: no routing decision is "
        "logged and model_used is empty (a pass credited to a model that was never asked would skew routing)."
    ),
    input_schema=_skills.input_schema("trainer"),
    output_schema=_skills.result_schema("trainer"),
    idempotent=True,
)
def routed_trainer(arguments: dict, ctx: ToolContext) -> dict:
    return run_trainer(arguments["session_id"])
