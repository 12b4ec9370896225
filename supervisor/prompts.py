"""What a `claude` worker is told: the discipline files and each skill's task text.

    build_prompt(skill, task) -> rules.md + the skill's discipline + "# Task"

(or the Go layout: CLAUDE.md + tdd.md, see `supervisor.discipline_files`)

The discipline files live in SUPERVISOR_CONFIG_DIR (read at call time); the
task functions turn a run's arguments into the "# Task" part. Nothing here
runs a process or touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from supervisor.discipline_files import GO_TDD, describe_missing, find_discipline
from supervisor.skills import SKILLS, SkillFailed

# A skill's arguments, as its tool's input model validated them (`model_dump()`): the task texts read them by name.
SkillArguments = Mapping[str, Any]

# The most of a git diff that goes into a review prompt.
DIFF_PROMPT_CAP = 60000
# The most of the previous test output a rejected TDD attempt is shown.
FEEDBACK_OUTPUT_CHARS = 8000


def disciplines_dir() -> Path:
    return Path(settings.SUPERVISOR_CONFIG_DIR)


def read_discipline(name: str) -> str:
    """The discipline `name` (ours, or its Go-layout counterpart: CLAUDE.md, tdd.md)."""
    folder = disciplines_dir()
    path = find_discipline(folder, name)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillFailed(
            f"discipline file {describe_missing(folder, name)} cannot be read ({exc}); check SUPERVISOR_CONFIG_DIR"
        ) from exc
    if path.name == GO_TDD and name != GO_TDD:
        # One file for three phases: say which one this run is.
        text = f"{text.rstrip()}\n\nThis run is the {name.removesuffix('.md')} phase."
    return text


def build_prompt(skill: str, task: str) -> str:
    spec = SKILLS[skill]
    parts = [read_discipline("rules.md")]
    if spec.discipline:
        parts.append(read_discipline(spec.discipline))
    parts.append("# Task\n\n" + task)
    return "\n\n---\n\n".join(part.strip() for part in parts) + "\n"


def tdd_task(skill: str, args: SkillArguments, test_cmd: str) -> str:
    lines = [f"Phase: {SKILLS[skill].phase}.", f"The supervisor will verify with: `{test_cmd}`."]
    if skill == "tdd_red":
        lines.append(f"Behaviour to specify with one failing test:\n\n{args['spec']}")
        if args.get("test_path"):
            lines.append(f"Put the test in `{args['test_path']}`.")
    elif skill == "tdd_green":
        lines.append(f"Make the failing test in `{args['test_path']}` pass.")
        if args.get("impl_path"):
            lines.append(f"The implementation belongs in `{args['impl_path']}`.")
        if args.get("notes"):
            lines.append(f"Notes:\n\n{args['notes']}")
    else:
        lines.append(f"Refactor `{args['impl_path']}`; its tests are in `{args['test_path']}`.")
        if args.get("goal"):
            lines.append(f"Goal:\n\n{args['goal']}")
    return "\n\n".join(lines)


def worker_rejected_feedback(message: str) -> str:
    """Appended to the task after an attempt whose worker answer was unusable."""
    return f"\n\n## Previous attempt rejected\n\n{message}\n"


def verification_failed_feedback(why: str, test_cmd: str, output: str) -> str:
    """Appended to the task after an attempt the supervisor's own test run rejected."""
    return (
        f"\n\n## Previous attempt rejected by the supervisor\n\n{why}\n\n"
        f"Output of `{test_cmd}`:\n\n```\n{output[-FEEDBACK_OUTPUT_CHARS:]}\n```\n"
    )


def review_task(args: SkillArguments, diff: str | None) -> str:
    """`diff` is the output of `git diff` for `git_range`, when one was asked for."""
    parts = []
    if args.get("paths"):
        parts.append("Review these files:\n" + "\n".join(f"- {p}" for p in args["paths"]))
    if diff is not None:
        parts.append(f"Review the changes in `{args['git_range']}`:\n\n```diff\n{diff[:DIFF_PROMPT_CAP]}\n```")
    if args.get("focus"):
        parts.append(f"Focus on: {args['focus']}")
    return "\n\n".join(parts)


def debug_task(args: SkillArguments) -> str:
    return (
        f"Symptom:\n\n{args['symptom']}\n\nFailing command (the supervisor re-runs it after you stop):\n\n"
        f"`{args['failing_cmd']}`"
    )


def spec_task(args: SkillArguments) -> str:
    task = "Turn this into a spec with acceptance criteria"
    if args.get("project"):
        task += f" for the project {args['project']}"
    return task + f":\n\n{args['text']}"
