"""Template filters for changes, replays and redactions (the curation UI and the session timeline)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from django import template

from hyperguild.lib.diffs import TRUNCATED_MARKER, diff_block
from hyperguild.lib.redaction import redaction_summary
from sessions.models import TrainingExample

if TYPE_CHECKING:
    from sessions.replay import SideReplay

register = template.Library()


@register.filter
def redactions_text(flags: object) -> str:
    """'3 redacted: message (aws_access_key ×1), …' or ''."""
    return redaction_summary(flags if isinstance(flags, list) else [])


@register.filter
def diff_of(messages: object) -> str | None:
    """The ```diff block of an example side's assistant messages, or None."""
    if not isinstance(messages, list):
        return None
    return diff_block(
        "\n".join(m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    )


@register.filter
def diff_lines(diff: str | None) -> list[tuple[str, str]]:
    """(css class, line) per diff line: file headers, hunk headers, added, removed, context, cut marker."""
    lines = []
    for line in (diff or "").splitlines():
        if line.startswith(TRUNCATED_MARKER):
            kind = "cut"
        elif line.startswith(("diff --git", "--- ", "+++ ", "new file mode", "deleted file mode", "Binary files")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("\\"):
            kind = "meta"
        else:
            kind = "ctx"
        lines.append((kind, line))
    return lines


@register.filter
def replay_side(replay: object, side: str) -> SideReplay | None:
    """One side's replay result ({applied, verifies, why, exit_code, output}) from an example's `replay`."""
    if not isinstance(replay, dict):
        return None
    # `replay` is the ReplayOutcome that do_record_replay stored (sessions.replay): its sides are SideReplays.
    return cast("SideReplay | None", (replay.get("sides") or {}).get(side))


_DIFF_FENCE = re.compile(r"```diff\n.*?```", re.S)
# Lines every prompt starts with: the same in every example of a skill, so no use in a list preview.
_SAME_IN_EVERY_PROMPT = ("Skill:", "Project root:")


@register.filter
def without_diff(content: object) -> str:
    """A message with its ```diff block left out (the page shows that diff once, coloured, below it)."""
    if not isinstance(content, str):
        return ""
    return _DIFF_FENCE.sub("", content).strip()


@register.filter
def example_preview(example: TrainingExample) -> str:
    """What tells one example from the next in a list: the task's first own line, and the answer's first line."""
    prompt = example.prompt if isinstance(example.prompt, list) else []
    user = next((m.get("content", "") for m in reversed(prompt) if isinstance(m, dict) and m.get("role") == "user"), "")
    task = next(
        (
            line.strip()
            for line in str(user).splitlines()
            if line.strip() and not line.startswith(_SAME_IN_EVERY_PROMPT)
        ),
        "",
    )
    answer_side = example.completion if example.kind == "sft" else example.chosen
    answer = next(
        (m.get("content", "") for m in answer_side or [] if isinstance(m, dict) and m.get("role") == "assistant"), ""
    )
    first = next((line.strip() for line in without_diff(answer).splitlines() if line.strip()), "")
    return f"{task} → {first}" if task and first else task or first
