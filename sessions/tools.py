"""MCP tools of this app (registered on import, from AppConfig.ready).

- `session_log` on /mcp/brain;
- `retrospective` and `trainer` on /mcp/supervisor (their logic lives in
  `sessions.retrospective` and `sessions.trainer`; the routed twins on
  /mcp/routing call the same functions).
"""

from __future__ import annotations

import json

from hyperguild.mcp.registry import ToolContext, ToolError, get_endpoint
from sessions.actions import do_log_entry

# A session id becomes a file name on export (`sessions/<id>.jsonl`): keep it path-safe.
SESSION_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$"
# Largest `data` payload of one entry, serialised.
MAX_ENTRY_DATA_BYTES = 64 * 1024

SESSION_LOG_INPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["session_id", "kind"],
    "properties": {
        "session_id": {
            "type": "string",
            "pattern": SESSION_ID_PATTERN,
            "description": "The session's id (letters, digits, '_', '.', '-'; at most 200 characters).",
        },
        "kind": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "pattern": r"^[A-Za-z0-9_.:-]+$",
            "description": "What happened: e.g. start, skill, decision, correction, error, fix, note, end.",
        },
        "skill": {"type": "string", "maxLength": 100},
        "phase": {"type": "string", "maxLength": 64},
        "status": {"type": "string", "maxLength": 64, "description": "e.g. pass, fail, error."},
        "message": {"type": "string", "maxLength": 20000},
        "data": {"description": f"Any JSON value, at most {MAX_ENTRY_DATA_BYTES} bytes serialised."},
        "idempotency_key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "Repeat it on a retry: the first entry is returned and nothing new is written.",
        },
        "project": {"type": "string", "maxLength": 200},
        "project_root": {"type": "string", "maxLength": 1000},
        "client": {"type": "object", "maxProperties": 20, "description": "Client metadata (name, version, ...)."},
    },
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


def check_entry_size(arguments: dict) -> None:
    if "data" in arguments:
        size = len(json.dumps(arguments["data"], ensure_ascii=False).encode())
        if size > MAX_ENTRY_DATA_BYTES:
            raise ToolError(f"data is {size} bytes; the limit is {MAX_ENTRY_DATA_BYTES}. Log a summary instead.")
    client = arguments.get("client")
    if client is not None and len(json.dumps(client).encode()) > 4096:
        raise ToolError("client metadata is over 4096 bytes; send name and version only.")


def log_entry_from_arguments(arguments: dict, *, source: str) -> dict:
    """Shared by the MCP tool and the REST view (both validate `arguments` first)."""
    check_entry_size(arguments)
    entry, created = do_log_entry(
        arguments["session_id"],
        kind=arguments["kind"],
        skill=arguments.get("skill"),
        phase=arguments.get("phase"),
        status=arguments.get("status"),
        message=arguments.get("message"),
        data=arguments.get("data"),
        idempotency_key=arguments.get("idempotency_key"),
        project=arguments.get("project"),
        project_root=arguments.get("project_root"),
        client=arguments.get("client"),
        source=source,
    )
    return {"session_id": arguments["session_id"], "seq": entry.seq, "created": created, "entry_id": entry.pk}


@get_endpoint("brain").tool(
    name="session_log",
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
    return log_entry_from_arguments(arguments, source="mcp")



# --- retrospective and trainer on /mcp/supervisor (schemas from supervisor/skills.py) -----------

from supervisor import skills as _skills  # noqa: E402

supervisor = get_endpoint("supervisor")


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
    from sessions.retrospective import SessionNotFound, run_retrospective

    ctx.report_progress(0, 1, "reading the session")
    try:
        result = run_retrospective(arguments["session_id"], llm_model=arguments.get("model"))
    except SessionNotFound as exc:
        raise ToolError(str(exc))
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
    from sessions.trainer import run_trainer

    return run_trainer(arguments["session_id"])
