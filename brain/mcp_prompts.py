"""MCP prompts of /mcp/brain (Claude Code lists them as slash commands: /mcp__plugin_hyperguild_brain__recall …).

- `recall <topic>`: the brain's best notes on a topic, searched here, with the ask to summarise them;
- `remember <what>`: the ask to write what the conversation established as a raw note (brain_write);
- `context [project_root]`: this project's notes, ranked as brain_context ranks them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from brain.context import context
from brain.models import Note
from brain.search import search
from brain.tools import brain
from hyperguild.lib.typed import JSON
from hyperguild.mcp.registry import PromptArgument, ToolError

RECALL_HITS = 8
MAX_TOPIC_CHARS = 2000  # brain_query's limit on a query
TITLE_SUGGESTIONS = 20


class NoteLine(TypedDict):
    """What a prompt lists of a note (a search hit, a brain_context entry)."""

    slug: str
    title: str
    excerpt: str


def user_message(text: str) -> list[JSON]:
    return [{"role": "user", "content": {"type": "text", "text": text}}]


def note_lines(entries: Sequence[NoteLine]) -> str:
    """One line a note: `- Title (slug): excerpt`."""
    lines = []
    for entry in entries:
        summary = " ".join((entry.get("excerpt") or "").split())
        lines.append(f"- {entry['title']} (`{entry['slug']}`): {summary}")
    return "\n".join(lines)


def wiki_titles(prefix: str) -> list[str]:
    return list(
        Note.objects.wiki()
        .filter(title__istartswith=prefix.strip())
        .order_by("title")
        .values_list("title", flat=True)[:TITLE_SUGGESTIONS]
    )


@brain.prompt(
    name="recall",
    title="Recall what the brain knows about a topic",
    description="Search the team's wiki for a topic and summarise what it says, citing the notes.",
    arguments=(PromptArgument("topic", "what to recall (words to search for)", required=True, complete=wiki_titles),),
)
def recall(arguments: Mapping[str, str]) -> list[JSON]:
    topic = arguments["topic"].strip()
    if len(topic) > MAX_TOPIC_CHARS:
        raise ToolError(f"topic is {len(topic)} characters; give at most {MAX_TOPIC_CHARS} (a few words work best).")
    found = search(topic, limit=RECALL_HITS)
    if not found.hits:
        return user_message(
            f"The hyperguild brain has nothing relevant on “{topic}” ({found.reason or 'no note matched'}). "
            "Say so plainly; do not guess. If we learn something about it in this session, offer to record it "
            "with brain_write."
        )
    hits: list[NoteLine] = [{"slug": hit.slug, "title": hit.title, "excerpt": hit.excerpt} for hit in found.hits]
    return user_message(
        f"Summarise what the team's brain says about “{topic}”. These notes matched, best first:\n\n"
        f"{note_lines(hits)}\n\n"
        "Read the ones that matter with brain_get (by slug) before you rely on them, cite each claim with its "
        "slug, and say where the notes disagree or are silent."
    )


@brain.prompt(
    name="remember",
    title="Remember this as a raw note",
    description="Write what this conversation established as a new raw note for review (brain_write).",
    arguments=(PromptArgument("what", "what to remember; empty means the conversation's main learning"),),
)
def remember(arguments: Mapping[str, str]) -> list[JSON]:
    what = (arguments.get("what") or "").strip() or "the main thing this conversation established"
    return user_message(
        f"Record {what!r} in the hyperguild brain: call brain_write with a short, specific title and a body "
        "that states the fact or decision, why it holds, and the evidence (files, commands, outcomes) from this "
        "conversation. Link related notes as [[slug]]. Pass this session's id as session_id if you know it. "
        "The note lands in raw, where a person reviews it before it enters the wiki; say so in your reply."
    )


@brain.prompt(
    name="context",
    title="This project's brain",
    description="The wiki notes a session on this project should know (the same ranking as brain_context).",
    arguments=(PromptArgument("project_root", "the project's folder; empty means the current working directory"),),
)
def project_context(arguments: Mapping[str, str]) -> list[JSON]:
    root = (arguments.get("project_root") or "").strip()
    if not root:
        return user_message(
            "Call brain_context with project_root set to the current working directory (and recent_files if you "
            "have touched any), then tell me in a few lines what the brain knows about this project, citing slugs."
        )
    found = context(root)
    if not found["entries"]:
        return user_message(
            f"The hyperguild brain knows nothing about project {found['project']!r} yet. Say so; as we learn "
            "things worth keeping, record them with brain_write."
        )
    return user_message(
        f"The hyperguild brain's notes for project {found['project']!r}, most relevant first:\n\n"
        f"{note_lines(found['entries'])}\n\n"
        "Tell me in a few lines what they mean for the work here; read a note in full with brain_get."
    )
