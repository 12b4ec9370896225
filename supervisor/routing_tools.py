"""Tools on /mcp/routing: the supervisor's skills answered by a routed model (Mode 2).

`review` and `debug` have the same arguments and results as their
/mcp/supervisor twins (both take their schemas from `supervisor.skills`), but
instead of spawning Claude Code they ask the model the router picks for a
JSON answer. The answer passes only if it validates against the skill's
worker schema and survives the skill's checks (a review's findings must be
grounded in the files); otherwise the call fails open onto the thinking
model (see `supervisor.routing`).

`retrospective` and `trainer` on this endpoint are registered by the sessions
app (`sessions/tools.py`), which runs its own logic with the routed model.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from django.conf import settings

from hyperguild.lib.llm import get_llm_client
from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint
from supervisor import executor, skills
from supervisor.errors import SupervisorError
from supervisor.grounding import ground_findings
from supervisor.models import RoutingEntry
from supervisor.roots import RootRefused, relative_to_root, resolve_inside, resolve_project_root
from supervisor.routing import Routed, llm_attempt, route
from supervisor.shell_reach import check_git_range

routing = register_endpoint(
    Endpoint(
        "routing",
        title="hyperguild routing",
        token_setting="ROUTING_MCP_TOKEN",
        instructions="Skills answered by a fast or a thinking model, chosen by each skill's observed pass rate.",
    )
)
routing.translate_errors(SupervisorError)  # RootRefused, RoutingFailed reach the caller as tool errors

# What the model may see of the project: enough for a focused review, bounded
# so one call cannot send a whole repository to the gateway.
MAX_FILE_CHARS = 60_000
MAX_PROMPT_FILE_CHARS = 200_000
MAX_DEBUG_FILES = 5
# A review whose findings are mostly invented (not grounded) is a failed answer.
MAX_UNGROUNDED_SHARE = 0.5
COMMAND_TIMEOUT_SECONDS = 60
COMMAND_OUTPUT_CHARS = 8_000
ANSWER_MAX_TOKENS = 4096

_FALLBACK_DISCIPLINE = {
    "review": (
        "You review code. Report only real problems you can point to: each finding names the file, the line, "
        "quotes the code at that line exactly, says why it is a problem and how to fix it. No style nits unless "
        "asked. If nothing is wrong, return no findings and verdict approve."
    ),
    "debug": (
        "You debug a failure. Form hypotheses, weigh each against the evidence (the command output and the code), "
        "rule out the wrong ones, name the root cause and the smallest fix. Do not guess past the evidence."
    ),
}


def discipline(skill: str) -> str:
    """The skill's discipline file from SUPERVISOR_CONFIG_DIR (the supervisor's own), else a short built-in one.

    `rules.md` is left out: it tells a `claude` worker how to behave in a
    repository, and the routed model only reads and answers.
    """
    name = skills.SKILLS[skill].discipline
    if name:
        path = Path(settings.SUPERVISOR_CONFIG_DIR) / name
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            pass
    return _FALLBACK_DISCIPLINE.get(skill, "")


def _system_prompt(skill: str) -> str:
    return (
        f"{discipline(skill).strip()}\n\n"
        "Answer with one JSON object and nothing else, matching this JSON Schema:\n"
        f"{json.dumps(skills.worker_schema(skill))}"
    )


def routing_client():
    client = get_llm_client()
    if client is None:
        raise ToolError(
            "the routing endpoint needs an OpenAI-compatible gateway: set LITELLM_BASE_URL (and LITELLM_API_KEY) "
            "and restart, or use the same skill on /mcp/supervisor"
        )
    return client


def _root(arguments: dict) -> Path:
    return resolve_project_root(arguments["project_root"])


def _numbered(text: str) -> str:
    return "\n".join(f"{number:>5}  {line}" for number, line in enumerate(text.splitlines(), start=1))


def read_project_file(root: Path, relative: str) -> tuple[str, str]:
    """(path relative to the root, text) of a file under the root, or RootRefused."""
    path = resolve_inside(root, relative, must_exist=True)
    if not path.is_file():
        raise RootRefused(f"{relative} is not a file under {root}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RootRefused(f"{relative} is not a UTF-8 text file") from None
    return relative_to_root(root, path), text[:MAX_FILE_CHARS]


def _files_block(files: list[tuple[str, str]]) -> str:
    parts, used = [], 0
    for name, text in files:
        block = f"=== {name} (line numbers added) ===\n{_numbered(text)}\n"
        if used + len(block) > MAX_PROMPT_FILE_CHARS:
            parts.append(f"=== {name}: left out, the prompt is full ===\n")
            continue
        parts.append(block)
        used += len(block)
    return "\n".join(parts)


def _run(command: list[str] | str, cwd: Path, *, shell: bool = False) -> tuple[int | None, str]:
    """Run a command through the executor's process runner; (exit code or None on timeout, capped output)."""
    argv = ["/bin/sh", "-c", command] if shell else command
    outcome, exit_code, output, _, _ = executor.run_process(
        argv, cwd=cwd, timeout=COMMAND_TIMEOUT_SECONDS, merge_stderr=True
    )
    if outcome == "timeout":
        return None, output[-COMMAND_OUTPUT_CHARS:] + f"\n[killed after {COMMAND_TIMEOUT_SECONDS}s]"
    return exit_code, output[-COMMAND_OUTPUT_CHARS:]


def routed_result(skill: str, routed: Routed, started: float, **values) -> dict:
    entry = routed.entry
    how = (
        entry.reason
        if entry.reason != RoutingEntry.FAIL_OPEN
        else f"fail-open retry after {routed.entries[0].model} failed"
    )
    return skills.build_result(
        skill,
        status="pass",
        model_used=entry.model,
        attempts=routed.attempts,
        duration_ms=int((time.monotonic() - started) * 1000),
        message=values.pop("message", "") + f" Answered by {entry.model} ({how}).",
        **values,
    )


# --- review ----------------------------------------------------------------------


def review_check(root: Path):
    def check(data: dict) -> str | None:
        findings = data.get("findings", [])
        kept, dropped = ground_findings(root, findings)
        data["findings"], data["dropped_findings"] = kept, dropped
        if findings and dropped / len(findings) > MAX_UNGROUNDED_SHARE:
            return f"{dropped} of {len(findings)} findings are not grounded in the files (wrong file, line or quote)"
        if data.get("verdict") == "request_changes" and not kept:
            return "the verdict asks for changes but no grounded finding says which"
        return None

    return check


def _review_files(root: Path, arguments: dict) -> tuple[list[tuple[str, str]], str]:
    files: list[tuple[str, str]] = []
    diff = ""
    for relative in arguments.get("paths", []):
        files.append(read_project_file(root, relative))
    git_range = arguments.get("git_range")
    if git_range:
        check_git_range(git_range)
        code, diff = _run(["git", "diff", "--no-color", "--end-of-options", git_range, "--"], root)
        if code != 0:
            raise ToolError(f"git diff {git_range} failed in {root}: {diff.strip()[:500]}")
        code, names = _run(["git", "diff", "--name-only", "--end-of-options", git_range, "--"], root)
        known = {name for name, _ in files}
        for name in names.splitlines():
            if name and name not in known:
                try:
                    files.append(read_project_file(root, name))
                except RootRefused:
                    continue  # deleted or binary in the working tree: the diff still shows it
    return files, diff


@routing.tool(
    name="review",
    title=skills.SKILLS["review"].title + " (routed)",
    description=(
        skills.SKILLS["review"].description
        + " Answered by the fast or the thinking model, chosen by the skill's observed pass rate; an answer whose "
        "findings are mostly ungrounded fails and is retried on the thinking model."
    ),
    input_schema=skills.input_schema("review"),
    output_schema=skills.result_schema("review"),
    read_only=True,
    open_world=True,
)
def review(arguments: dict, ctx: ToolContext) -> dict:
    started = time.monotonic()
    root = _root(arguments)
    files, diff = _review_files(root, arguments)
    client = routing_client()
    request = []
    if arguments.get("focus"):
        request.append(f"Focus: {arguments['focus']}")
    if diff:
        request.append(f"The change to review (git diff {arguments['git_range']}):\n{diff}")
    request.append("The files:\n" + _files_block(files))
    messages = [
        {"role": "system", "content": _system_prompt("review")},
        {"role": "user", "content": "\n\n".join(request)},
    ]
    attempt = llm_attempt(
        client, messages, skills.worker_schema("review"), review_check(root), max_tokens=ANSWER_MAX_TOKENS
    )
    ctx.report_progress(0, 1, "asking the routed model")
    routed = route(
        "review",
        attempt,
        override=arguments.get("model"),
        session_id=arguments.get("session_id", ""),
        cancelled=ctx.is_cancelled,
    )
    data = routed.data
    return routed_result(
        "review",
        routed,
        started,
        verified=True,
        findings=data["findings"],
        verdict=data["verdict"],
        dropped_findings=data["dropped_findings"],
        summary=data.get("summary", ""),
        message=f"{len(data['findings'])} grounded findings, {data['dropped_findings']} dropped.",
    )


# --- debug -----------------------------------------------------------------------

_PATHLIKE = re.compile(r"[\w./-]+\.[A-Za-z0-9]{1,8}")


def files_named_in(root: Path, text: str) -> list[tuple[str, str]]:
    """Files under the root that the symptom or the command output mention (bounded)."""
    found: list[tuple[str, str]] = []
    for candidate in dict.fromkeys(_PATHLIKE.findall(text)):
        if len(found) >= MAX_DEBUG_FILES:
            break
        try:
            found.append(read_project_file(root, candidate.lstrip("./") if candidate.startswith("./") else candidate))
        except (RootRefused, OSError, ValueError):
            continue
    return found


def debug_check(root: Path):
    def check(data: dict) -> str | None:
        if not data.get("hypotheses"):
            return "no hypotheses: the diagnosis must show what was considered"
        if not str(data.get("root_cause", "")).strip() or not str(data.get("fix", "")).strip():
            return "the root cause or the fix is empty"
        for name in data.get("files_changed", []):
            try:
                resolve_inside(root, name)
            except RootRefused as exc:
                return f"the fix touches a file outside the project: {exc}"
        return None

    return check


@routing.tool(
    name="debug",
    title=skills.SKILLS["debug"].title + " (routed)",
    description=(
        "The routed model diagnoses `symptom`: the server runs `failing_cmd` in the project root, shows the model "
        "its output and the files it mentions, and returns hypotheses, the root cause and the fix. The routing "
        "endpoint does not edit files: apply the fix, then re-run failing_cmd (failing_cmd_passes stays null)."
    ),
    input_schema=skills.input_schema("debug"),
    output_schema=skills.result_schema("debug"),
    read_only=False,
    open_world=True,
)
def debug(arguments: dict, ctx: ToolContext) -> dict:
    started = time.monotonic()
    root = _root(arguments)
    client = routing_client()
    ctx.report_progress(0, 2, "running failing_cmd")
    code, output = _run(arguments["failing_cmd"], root, shell=True)
    files = files_named_in(root, f"{arguments['symptom']}\n{output}")
    exit_text = "timed out" if code is None else f"exit code {code}"
    messages = [
        {"role": "system", "content": _system_prompt("debug")},
        {
            "role": "user",
            "content": (
                f"Symptom:\n{arguments['symptom']}\n\nFailing command: {arguments['failing_cmd']} ({exit_text})\n"
                f"Its output (last part):\n{output}\n\nFiles it mentions:\n{_files_block(files)}"
            ),
        },
    ]
    attempt = llm_attempt(
        client, messages, skills.worker_schema("debug"), debug_check(root), max_tokens=ANSWER_MAX_TOKENS
    )
    ctx.report_progress(1, 2, "asking the routed model")
    routed = route(
        "debug",
        attempt,
        override=arguments.get("model"),
        session_id=arguments.get("session_id", ""),
        cancelled=ctx.is_cancelled,
    )
    data = routed.data
    return routed_result(
        "debug",
        routed,
        started,
        runner_output=output,
        verified=None,
        hypotheses=data["hypotheses"],
        root_cause=data["root_cause"],
        fix=data["fix"],
        files_changed=data.get("files_changed", []),
        failing_cmd_passes=None if code != 0 else True,
        worker_report=data,
        message=f"Diagnosis only (failing_cmd {exit_text} before): apply the fix, then re-run failing_cmd.",
    )
