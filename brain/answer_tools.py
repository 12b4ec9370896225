"""brain_answer and brain_context on the brain endpoint (imported by BrainConfig.ready(), after brain/tools.py)."""

from __future__ import annotations

from brain.answers import answer
from brain.context import context
from brain.limits import MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT
from brain.presenters import UNREVIEWED_HINT_SCHEMA, UNREVIEWED_LIST_SCHEMA, UNREVIEWED_MATCHES_SCHEMA
from brain.tools import brain
from brain.truth import VERIFICATION_SCHEMA
from hyperguild.lib.schema import STRING, closed_object
from hyperguild.mcp.registry import ToolContext

SOURCE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "n": {"type": "integer", "minimum": 1, "description": "the number the answer cites, as [n]"},
        "slug": {"type": "string"},
        "title": {"type": "string"},
        "path": {"type": "string"},
        "excerpt": {"type": "string"},
        "verification": VERIFICATION_SCHEMA,
    },
    "required": ["n", "slug", "title", "path", "excerpt"],
}


@brain.tool(
    name="brain_answer",
    title="Answer a question from the brain",
    description=(
        "Answer a question from the team's wiki notes, citing them as [1], [2]… (the numbers of `sources`). "
        "Candidates are retrieved by search, filtered by the reranker when one is configured, and the LLM "
        "(BRAIN_ANSWER_MODEL) answers from the kept notes only. Without an LLM the answer is the best passage "
        "of each source and `synthesized` is false; so it is, with a `reason`, when the model's answer was cut off, "
        "cites no existing source or is degenerate. When no note fits, `sources` is empty and the answer says so."
    ),
    input_schema=closed_object(
        {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_LENGTH, "pattern": "\\S"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                      "description": "most sources to use (an LLM gets at most 5)"},
        },
        required=["question"],
    ),
    output_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "answer": {"type": "string"},
            "sources": {"type": "array", "items": SOURCE_SCHEMA},
            "model": {"type": ["string", "null"], "description": "the model that wrote the answer; null if none did"},
            "reranked": {"type": "boolean", "description": "whether the reranker filtered the candidates"},
            "synthesized": {"type": "boolean", "description": "true: written by the LLM; false: extracted passages"},
            "reason": {"type": "string", "description": "why the model's answer was not used (cut off, uncited, "
                       "degenerate), when it was not"},
            "unreviewed_matches": UNREVIEWED_MATCHES_SCHEMA,
            "unreviewed": UNREVIEWED_LIST_SCHEMA,
            "unreviewed_hint": UNREVIEWED_HINT_SCHEMA,
        },
        "required": [
            "answer", "sources", "model", "reranked", "synthesized", "unreviewed_matches", "unreviewed",
            "unreviewed_hint",
        ],
    },
    read_only=True,
    idempotent=True,
    # It may call an outside LLM and reranker with the question and notes.
    open_world=True,
    reports_usage=True,
)
def brain_answer(arguments: dict, ctx: ToolContext) -> dict:
    return answer(arguments["question"], limit=arguments.get("limit", 5))


@brain.tool(
    name="brain_context",
    title="Context for a project",
    description=(
        "At session start: the wiki notes (decisions, corrections, surprises) that apply to a project. "
        "The project's folder name seeds a search, the best hits pull in notes linked within 2 hops, "
        "and notes mentioning words of `recent_files` paths rank higher. Each entry says whether it still holds "
        "against the project's code (`verification`: verified at a commit, stale with the evidence, or "
        "unverified); stale notes rank below the others and superseded notes are left out. `unreviewed` is a separate list: this "
        "project's own recent raw notes (written in its sessions, or matching its name), not reviewed by a person yet."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "project_root": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1000,
                "description": "absolute path of the project; its last folder name is the project name",
            },
            "recent_files": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 1000},
                "maxItems": 100,
                "description": "paths recently opened or edited; notes sharing words with them are boosted",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 10},
        },
        "required": ["project_root"],
    },
    output_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "project": {"type": "string"},
            "entries": {
                "type": "array",
                "items": closed_object({
                    "slug": STRING, "title": STRING, "doc_path": STRING, "excerpt": STRING,
                    "verification": VERIFICATION_SCHEMA,
                }),  # fmt: skip
            },
            "degraded": {"type": "boolean", "description": "true when vector search failed and BM25 answered alone"},
            "reason": {"type": ["string", "null"]},
            "unreviewed": {
                "type": "array",
                "description": "NOT REVIEWED: this project's recent raw notes, newest first; treat them as unchecked",
                "items": closed_object(
                    {"slug": STRING, "title": STRING, "status": STRING, "created_at": STRING, "excerpt": STRING}
                ),
            },
            "unreviewed_matches": UNREVIEWED_MATCHES_SCHEMA,
            "unreviewed_hint": UNREVIEWED_HINT_SCHEMA,
        },
        "required": ["project", "entries", "degraded", "reason", "unreviewed", "unreviewed_matches", "unreviewed_hint"],
    },
    read_only=True,
    idempotent=True,
)
def brain_context(arguments: dict, ctx: ToolContext) -> dict:
    return context(
        arguments["project_root"],
        recent_files=arguments.get("recent_files"),
        limit=arguments.get("limit", 10),
    )
