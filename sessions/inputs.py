"""The input of a session-log entry, defined once: the MCP `session_log` arguments and the REST body are this.

`EntryFields` is the model; `sessions.actions.do_log_checked_entry` validates every entry from outside
against its schema (with jsonschema), whichever door it came through; the MCP tool takes
`SessionLogInput`, the same fields with the session id added.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from hyperguild.mcp import contracts
from hyperguild.mcp.contracts import CallProject, CallSession, ToolInput

# A session id becomes a file name on export (`sessions/<id>.jsonl`): keep it path-safe.
SESSION_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$"
SESSION_ID_RULE = "Use letters, digits, '_', '.', '-' (at most 200 characters)."
# Largest `data` payload of one entry, serialised.
MAX_ENTRY_DATA_BYTES = 64 * 1024
MAX_CLIENT_BYTES = 4096
# The longest message of an entry (a hook's prompt is cut to it).
MAX_MESSAGE_CHARS = 20000


class EntryFields(ToolInput):
    """The fields of one entry (the session id travels apart: an argument on MCP, the URL on REST)."""

    kind: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="What happened: e.g. start, skill, decision, correction, error, fix, note, end.",
    )
    skill: str | None = Field(None, max_length=100)
    phase: str | None = Field(None, max_length=64)
    status: str | None = Field(None, max_length=64, description="e.g. pass, fail, error.")
    message: str | None = Field(None, max_length=MAX_MESSAGE_CHARS)
    data: Any = Field(None, description=f"Any JSON value, at most {MAX_ENTRY_DATA_BYTES} bytes serialised.")
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Repeat it on a retry: the first entry is returned and nothing new is written.",
    )
    project: str | None = Field(None, max_length=200)
    project_root: Annotated[str | None, CallProject()] = Field(None, max_length=1000)
    client: dict[str, Any] | None = Field(None, max_length=20, description="Client metadata (name, version, ...).")


def _session_id_first(schema: dict[str, Any]) -> None:
    # The id is declared last (the entry's fields come first by inheritance) but is the first thing required.
    schema["required"] = ["session_id", *(name for name in schema["required"] if name != "session_id")]


class SessionLogInput(EntryFields):
    """`session_log`'s arguments: the session id plus one entry's fields."""

    model_config = ConfigDict(json_schema_extra=_session_id_first)

    session_id: Annotated[str, CallSession()] = Field(
        pattern=SESSION_ID_PATTERN,
        description="The session's id (letters, digits, '_', '.', '-'; at most 200 characters).",
    )


# The same as JSON Schema, for the REST body and the hook route (`sessions.actions` validates with jsonschema).
ENTRY_FIELDS_SCHEMA: contracts.JsonSchema = contracts.input_schema(EntryFields)
SESSION_ID_SCHEMA: dict[str, Any] = contracts.input_schema(SessionLogInput)["properties"]["session_id"]

# What the plugin's spool sends when the service answers again (`POST /api/hooks/spool`): its oldest
# lines as they are in the spool file, and how many entries of which session its cap dropped.
MAX_SPOOL_BATCH = 500
# Sessions one drop report may name (each is a gap entry to write: a ceiling on work, not only on bytes),
# and the largest count it may give (more than a full spool of the smallest lines ever holds).
MAX_SPOOL_GAPS = 100
MAX_SPOOL_GAP_COUNT = 1_000_000
SPOOL_BATCH_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["entries"],
    "properties": {
        "entries": {
            "type": "array",
            "maxItems": MAX_SPOOL_BATCH,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["event", "at", "input"],
                "properties": {
                    "hyperguild_spool": {"const": 1, "description": "The spool line's format version."},
                    "event": {"type": "string", "maxLength": 64},
                    "at": {
                        "type": "string",
                        "maxLength": 64,
                        "description": "When the hook ran (ISO 8601, with zone).",
                    },
                    "session": {"type": "string", "maxLength": 200},
                    "input": {"type": "object", "description": "The hook's JSON input, as Claude Code gave it."},
                },
            },
        },
        "dropped": {
            "type": "object",
            "maxProperties": MAX_SPOOL_GAPS,
            "additionalProperties": {"type": "integer", "minimum": 0, "maximum": MAX_SPOOL_GAP_COUNT},
            "description": "Session id → entries of it the spool dropped over its cap since the last report.",
        },
        "drop_key": {
            "type": "string",
            "maxLength": 100,
            "pattern": r"^[A-Za-z0-9_.:-]*$",
            "description": "The drop report's own key: a report sent twice is logged once.",
        },
    },
}


# When a logged entry may have happened: a hook from the plugin's spool, what a machine kept offline
# (weeks, not years); a line of an import, any time since 1970 (IMPORT_OLDEST); either a little ahead for a
# fast clock. Offsets as far as real zones go (UTC-12:00 to UTC+14:00). Outside, the time is a
# typo or an attack: stored, it made every read of its session fail (issue 46, finding 6).
SPOOL_OLDEST = timedelta(days=365)
SPOOL_NEWEST = timedelta(days=1)
MAX_UTC_OFFSET = timedelta(hours=14)
IMPORT_OLDEST = datetime(1970, 1, 1, tzinfo=UTC)


def time_in_range(
    at: datetime, now: datetime, where: str, *, oldest: datetime | None = None
) -> tuple[datetime | None, str]:
    """(the time in UTC, "") when it is one an entry can have happened at (from `oldest`, by default
    SPOOL_OLDEST ago, to SPOOL_NEWEST ahead); else (None, why not)."""
    offset = at.utcoffset() or timedelta(0)
    if abs(offset) > MAX_UTC_OFFSET:
        hours, minutes = divmod(abs(offset) // timedelta(minutes=1), 60)
        sign = "-" if offset < timedelta(0) else "+"
        return (
            None,
            f"{where}: the offset {sign}{hours:02d}:{minutes:02d} is beyond ±14:00; no zone is that far from UTC.",
        )
    try:
        utc = at.astimezone(UTC)
    except OverflowError:
        utc = None
    oldest = oldest or now - SPOOL_OLDEST
    if utc is None or not oldest <= utc <= now + SPOOL_NEWEST:
        return None, (
            f"{where}: {at.isoformat()} is outside the window an entry can have happened in "
            f"({oldest:%Y-%m-%d} to {SPOOL_NEWEST.days} day ahead of now, for a fast clock)."
        )
    return utc, ""
