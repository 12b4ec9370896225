"""Tools on /mcp/routing: the supervisor's skills answered by a routed model (Mode 2).

`review` and `debug` have the same arguments and results as their
/mcp/supervisor twins (both take their schemas from `supervisor.skills`), but
instead of spawning Claude Code they ask the model the router picks for a
JSON answer. The answer passes only if it validates against the skill's
worker schema and survives the skill's checks (a review's findings must be
grounded in the files); otherwise the call fails open onto the thinking
model (see `supervisor.routing`).

`retrospective` and `trainer` run the sessions app's logic with the routed
model; they are registered only when that logic is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from django.conf import settings

from hyperguild.lib.llm import get_llm_client
from hyperguild.mcp.registry import ToolContext, ToolError, get_endpoint
from supervisor import skills
from supervisor.checks import ground_findings
from supervisor.errors import SupervisorError
from supervisor.models import RoutingEntry
from supervisor.roots import RootRefused, relative_to_root, resolve_inside, resolve_project_root
from supervisor.routing import Attempt, Routed, llm_attempt, route

routing = get_endpoint("routing")
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


def _client():
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
    """Run a command in its own process group; (exit code or None on timeout, capped output)."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        shell=shell,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
        errors="replace",
    )
    try:
        output, _ = process.communicate(timeout=COMMAND_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, (output or "")[-COMMAND_OUTPUT_CHARS:] + f"\n[killed after {COMMAND_TIMEOUT_SECONDS}s]"
    return process.returncode, (output or "")[-COMMAND_OUTPUT_CHARS:]


def _result(skill: str, routed: Routed, started: float, **values) -> dict:
    entry = routed.entry
    how = (
        entry.reason
        if entry.reason != RoutingEntry.FAIL_OPEN
        else f"fail-open retry after {routed.entries[0].model} failed"
    )
    return skills.empty_result(
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
        code, diff = _run(["git", "diff", "--no-color", git_range, "--"], root)
        if code != 0:
            raise ToolError(f"git diff {git_range} failed in {root}: {diff.strip()[:500]}")
        code, names = _run(["git", "diff", "--name-only", git_range, "--"], root)
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
    client = _client()
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
    return _result(
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
    client = _client()
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
    return _result(
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


# --- retrospective and trainer (logic in the sessions app) -------------------------


def _sessions_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(f"sessions.{name}") is not None
    except ModuleNotFoundError:
        return False


def _routed_session_skill(skill: str, arguments: dict, run_with_model, judge, list_key: str) -> dict:
    """Route a sessions-app skill: `run_with_model(session_id, model)` does the work with the given model,
    `judge(outcome)` returns None if it passed or why it did not."""
    from sessions.retrospective import SessionNotFound

    started = time.monotonic()
    _client()

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
        routed = route(skill, attempt, override=arguments.get("model"), session_id=arguments["session_id"])
    except SessionNotFound as exc:
        raise ToolError(str(exc)) from None
    values = {
        key: value
        for key, value in routed.data.items()
        if key not in {"status", "model_used", "attempts", "duration_ms", "phase", "skill"}
    }
    values["count"] = len(values.get(list_key) or [])
    return _result(skill, routed, started, **values)


def _ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)


def retrospective_judge(outcome: dict) -> str | None:
    if outcome.get("status") != "pass":
        return outcome.get("message") or f"the retrospective ended {outcome.get('status')}"
    if outcome.get("method") != "llm":
        # The sessions logic falls back to rules when the model fails: for routing, that model failed.
        return "the model did not answer; the rules answered instead. " + str(outcome.get("message", ""))[:500]
    return None


if _sessions_module("retrospective"):

    @routing.tool(
        name="retrospective",
        title=skills.SKILLS["retrospective"].title + " (routed)",
        description=(
            "Look back on a session's log and skill runs and propose learnings, written to the brain as raw notes "
            "(as the supervisor's retrospective does), with the model chosen by the router. The answer passes when "
            "the model answered valid JSON whose evidence names real entries; otherwise the thinking model retries."
        ),
        input_schema=skills.input_schema("retrospective"),
        output_schema=skills.result_schema("retrospective"),
        idempotent=True,
        open_world=True,
    )
    def retrospective(arguments: dict, ctx: ToolContext) -> dict:
        from sessions.retrospective import run_retrospective

        ctx.report_progress(0, 1, "asking the routed model")
        return _routed_session_skill(
            "retrospective",
            arguments,
            lambda session_id, model: run_retrospective(session_id, llm_model=model),
            retrospective_judge,
            "learnings",
        )


if _sessions_module("trainer"):

    @routing.tool(
        name="trainer",
        title=skills.SKILLS["trainer"].title + " (routed)",
        description=(
            "Turn a session's verified skill runs and routed retries into SFT/DPO candidates for curation, as the "
            "supervisor's trainer does. Extraction itself needs no model: the routing decision is logged so the "
            "trainer appears in /routing/stats like the other skills."
        ),
        input_schema=skills.input_schema("trainer"),
        output_schema=skills.result_schema("trainer"),
        idempotent=True,
    )
    def trainer(arguments: dict, ctx: ToolContext) -> dict:
        from sessions.trainer import run_trainer

        return _routed_session_skill(
            "trainer",
            arguments,
            lambda session_id, model: run_trainer(session_id, llm_model=model),
            lambda outcome: None if outcome.get("status") == "pass" else outcome.get("message", "trainer failed"),
            "examples",
        )
