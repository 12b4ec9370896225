"""brain_answer and brain_context on the brain endpoint (imported by BrainConfig.ready(), after brain/tools.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from brain.answers import answer
from brain.context import context
from brain.limits import MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT
from brain.presenters import Unreviewed, UnreviewedHint, UnreviewedMatches, UnreviewedNote, VerificationField
from brain.tools import brain
from hyperguild.mcp.contracts import CallProject, ToolInput, ToolResult
from hyperguild.mcp.registry import ToolContext
from ledger.usage import UsageReport


class AnswerInput(ToolInput):
    question: str = Field(min_length=1, max_length=MAX_QUERY_LENGTH, pattern="\\S")
    limit: int = Field(5, ge=1, le=10, description="most sources to use (an LLM gets at most 5)")


class Source(ToolResult):
    n: int = Field(ge=1, description="the number the answer cites, as [n]")
    slug: str
    title: str
    path: str
    excerpt: str
    verification: VerificationField | None = None


class AnswerResult(Unreviewed, UsageReport):
    answer: str
    sources: list[Source]
    model: str | None = Field(description="the model that wrote the answer; null if none did")
    reranked: bool = Field(description="whether the reranker filtered the candidates")
    synthesized: bool = Field(description="true: written by the LLM; false: extracted passages")
    reason: str | None = Field(
        None, description="why the model's answer was not used (cut off, uncited, degenerate), when it was not"
    )


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
    input_model=AnswerInput,
    result_model=AnswerResult,
    read_only=True,
    idempotent=True,
    # It may call an outside LLM and reranker with the question and notes.
    open_world=True,
    reports_usage=True,
)
def brain_answer(arguments: AnswerInput, ctx: ToolContext) -> AnswerResult:
    return AnswerResult.model_validate(answer(arguments.question, limit=arguments.limit))


MAX_PATH_LENGTH = 1000  # a project root or a recent file's path
MAX_RECENT_FILES = 100


class ContextInput(ToolInput):
    project_root: Annotated[str, CallProject()] = Field(
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description="absolute path of the project; its last folder name is the project name",
    )
    recent_files: list[Annotated[str, Field(min_length=1, max_length=MAX_PATH_LENGTH)]] | None = Field(
        None,
        max_length=MAX_RECENT_FILES,
        description="paths recently opened or edited; notes sharing words with them are boosted",
    )
    limit: int = Field(10, ge=1, le=MAX_SEARCH_LIMIT)


class ContextEntry(ToolResult):
    slug: str
    title: str
    doc_path: str
    excerpt: str
    verification: VerificationField


class ProjectRawNote(UnreviewedNote):
    created_at: str
    excerpt: str


class ContextResult(ToolResult):
    project: str
    entries: list[ContextEntry]
    degraded: bool = Field(description="true when vector search failed and BM25 answered alone")
    reason: str | None
    unreviewed: list[ProjectRawNote] = Field(
        description="NOT REVIEWED: this project's recent raw notes, newest first; treat them as unchecked"
    )
    unreviewed_matches: UnreviewedMatches
    unreviewed_hint: UnreviewedHint


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
    input_model=ContextInput,
    result_model=ContextResult,
    read_only=True,
    idempotent=True,
)
def brain_context(arguments: ContextInput, ctx: ToolContext) -> ContextResult:
    return ContextResult.model_validate(
        context(arguments.project_root, recent_files=arguments.recent_files, limit=arguments.limit)
    )
