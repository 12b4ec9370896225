"""brain_verify and brain_supersede: a person decides about a note's truth (docs/truth.md).

Imported by BrainConfig.ready(), after brain/tools.py. Both need the brain:write scope and a person who
may decide: TRUTH_DECISION_PERMISSION, below, is the one place that names the requirement (the permission
matrix of docs/people.md takes it over). The service identity (an environment token) names nobody, so
it is refused.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from brain.actions import do_supersede_note, do_verify_note
from brain.inputs import NoteSlug, Reason
from brain.models import Note
from brain.presenters import NoteRef, Supersession, Verification, VerificationField, note_ref, supersession
from brain.tools import brain
from brain.truth import verification_dict
from hyperguild.mcp.contracts import ToolInput, ToolResult
from hyperguild.mcp.registry import ToolContext, ToolError
from hyperguild.ui import may

# Who may re-check a note now and retire it in favour of another: reviewers (this permission) and staff.
TRUTH_DECISION_PERMISSION = "brain.review_note"


def require_truth_decider(ctx: ToolContext, tool: str) -> None:
    user = ctx.actor
    if user is None or not may(user, TRUTH_DECISION_PERMISSION):
        who = "the service token names no person" if user is None else f"{user.get_username()} is not a reviewer"
        raise ToolError(
            f"{tool} is for reviewers and staff ({who}): use a personal token of someone with the reviewer role "
            "(docs/people.md)."
        )


def _note(slug: str) -> Note:
    note = Note.objects.filter(slug=slug).first()
    if note is None:
        raise ToolError(f"No note with slug {slug!r}; find slugs with brain_query.")
    return note


class VerifyInput(ToolInput):
    slug: NoteSlug


class VerifyResult(ToolResult):
    slug: str
    verification: VerificationField
    anchors: list[dict[str, Any]]


@brain.tool(
    name="brain_verify",
    title="Re-check a note against the code now",
    description=(
        "Check every anchor of a note (the files, symbols, quoted lines, commands and settings it cites) against "
        "its project's branch head now, run its `check:` command there if it has one and it has not run at that "
        "head (waits for it), and return its verification: proven or verified at a commit, stale with the "
        "evidence, or unverified and why; what it cites that is not in the project's code is listed as "
        "`unresolved` (never stale). Reviewers and staff only."
    ),
    input_model=VerifyInput,
    result_model=VerifyResult,
    idempotent=True,
    scope="brain:write",
    right="brain:review",
)
def brain_verify(arguments: VerifyInput, ctx: ToolContext) -> VerifyResult:
    require_truth_decider(ctx, "brain_verify")
    note = do_verify_note(_note(arguments.slug))
    anchors = [
        {"kind": a.kind, "value": a.value, "state": a.state, "location": a.location, "commit": a.commit}
        for a in note.anchors.all()
    ]
    return VerifyResult(slug=note.slug, verification=Verification(**verification_dict(note)), anchors=anchors)


class SupersedeInput(ToolInput):
    slug: Annotated[NoteSlug, Field(description="the note that is no longer true")]
    by: Annotated[NoteSlug, Field(description="the note that replaces it")]
    reason: Annotated[Reason, Field(min_length=1, description="what changed")]


class SupersedeResult(Supersession, NoteRef):
    change: str = Field(description="the revision group (undo it in the browser)")


@brain.tool(
    name="brain_supersede",
    title="Supersede a note",
    description=(
        "Mark note `slug` as superseded by note `by`, with the reason: it leaves default search, brain_context and "
        "the session-start context, keeps its history, and brain_get names its successor. One revision; undo it "
        "in the browser. Reviewers and staff only."
    ),
    input_model=SupersedeInput,
    result_model=SupersedeResult,
    scope="brain:write",
    right="brain:review",
)
def brain_supersede(arguments: SupersedeInput, ctx: ToolContext) -> SupersedeResult:
    require_truth_decider(ctx, "brain_supersede")
    old, new = _note(arguments.slug), _note(arguments.by)
    note = do_supersede_note(old, new, reason=arguments.reason, user=ctx.actor)
    change = str(note.revisions.order_by("-id").values_list("group", flat=True).first())
    return SupersedeResult(**note_ref(note).model_dump(), **supersession(note).model_dump(), change=change)
