"""The routed skills of /mcp/routing (Mode 2): what `review` and `debug` do once called.

`supervisor/routing_tools.py` declares the tools and hands each call here:

    result = review(params, progress, cancelled)    # a ReviewInput in, a ReviewResult out

with `progress(done, total, text)` to tell the caller how far it got and
`cancelled()` to ask whether the caller went away. Refusals are
`SupervisorError`s (the endpoint answers them as tool errors).

`review` and `debug` are the skill steps of `supervisor.skill_steps`, the
same the /mcp/supervisor twins run; here their backend is the routed model
(`RoutedBackend`) instead of Claude Code. It is shown the project (the
files, `git diff`, tree-split when long) rather than reading it, and only
answers: `debug` runs `failing_cmd` here first (as the supervisor's tests
run: own process group, deadline, allow-listed environment) and shows the
model its output. An answer passes only if it validates against the skill's
worker schema and survives the skill's check (a review's findings must be
grounded in the files); otherwise the call fails open onto the thinking
model (see `supervisor.routing`).

`retrospective` and `trainer` on this endpoint are registered by the sessions
app (`sessions/tools.py`), which runs its own logic with the routed model.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from hyperguild.lib.llm import LLMClient, generation_limit, get_llm_client
from hyperguild.lib.typed import JsonSchema
from supervisor import skill_steps, skills, tree_split
from supervisor.actions import do_add_pathway_fingerprints
from supervisor.errors import GatewayMissing
from supervisor.executor import ProcessOutcome
from supervisor.grounding import Grounding, fingerprint
from supervisor.model_table import consensus_models, load_table
from supervisor.models import Pathway, RoutingEntry
from supervisor.project_tests import TestRun, run_command
from supervisor.prompts import read_discipline
from supervisor.roots import RootRefused, relative_to_root, resolve_inside
from supervisor.routing import Attempt, PathwayKey, Routed, RoutingFailed, llm_attempt, route
from supervisor.run_results import SkillRunResult
from supervisor.shell_reach import check_command_right
from supervisor.skills import (
    DebugInput,
    DebugResult,
    ReviewInput,
    ReviewResult,
    SkillFailed,
    SkillResult,
    Verdict,
)

# progress(done, total or None, text): what the caller is told while a call runs.
Progress = Callable[[float, float | None, str], None]
# cancelled(): True once the caller has gone away.
Cancelled = Callable[[], bool]

# What the model may see of the project: enough for a focused review, bounded
# so one call cannot send a whole repository to the gateway. Files longer than
# SUPERVISOR_TREE_SPLIT_CHARS are tree-split (supervisor.tree_split), not cut.
MAX_FILE_CHARS = 2 * 1024 * 1024
MAX_PROMPT_FILE_CHARS = 200_000
# Fingerprints shown to the next review of an area ("seen here before").
SEEN_BEFORE_LIMIT = 10
MAX_DEBUG_FILES = 5
# What the model is shown of a diff or of failing_cmd's output: the last part.
COMMAND_OUTPUT_CHARS = 8_000

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
    """The skill's discipline file, read as the `claude` worker's is (`prompts.read_discipline`), else a short
    built-in one: a routed call does not fail for a missing file.

    `rules.md` is left out: it tells a `claude` worker how to behave in a
    repository, and the routed model only reads and answers.
    """
    name = skills.SKILLS[skill].discipline
    if name:
        try:
            return read_discipline(name)
        except SkillFailed:
            pass
    return _FALLBACK_DISCIPLINE.get(skill, "")


def _system_prompt(skill: str) -> str:
    return (
        f"{discipline(skill).strip()}\n\n"
        "Answer with one JSON object and nothing else, matching this JSON Schema:\n"
        f"{json.dumps(skills.worker_schema(skill))}"
    )


def routing_client() -> LLMClient:
    client = get_llm_client()
    if client is None:
        raise GatewayMissing(
            "the routing endpoint needs an OpenAI-compatible gateway: set LITELLM_BASE_URL (and LITELLM_API_KEY) "
            "and restart, or use the same skill on /mcp/supervisor"
        )
    return client


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


# check(answer): None when the answer passes, else why not (it may normalise the answer in place).
Check = Callable[[dict[str, Any]], str | None]
# merge(answers): one answer of the answers to a tree-split's parts.
Merge = Callable[[list[dict[str, Any]]], Mapping[str, Any]]


def multi_attempt(
    client: LLMClient,
    calls: list[list[dict[str, Any]]],
    schema: JsonSchema,
    check: Check | None,
    merge: Merge,
    *,
    max_tokens: int | None = None,
    purpose: str = "",
) -> Callable[[str], Attempt]:
    """An `attempt` for `route` that asks the model once per message list, merges the answers, then checks.

    One list is one call (a plain `llm_attempt`); several are the parts of a
    tree-split. Any part that fails fails the attempt.
    """
    if len(calls) == 1:
        return llm_attempt(client, calls[0], schema, check, max_tokens=max_tokens, purpose=purpose)

    def run(model: str) -> Attempt:
        answers: list[dict[str, Any]] = []
        texts: list[str] = []
        latency = 0
        usage: dict[str, int] = {}
        call_ids: list[int] = []
        request = [message for messages in calls for message in messages]
        for number, messages in enumerate(calls, start=1):
            one = llm_attempt(client, messages, schema, None, max_tokens=max_tokens, purpose=purpose)(model)
            latency += one.latency_ms
            call_ids += one.model_calls
            for name, value in (one.usage or {}).items():
                usage[name] = usage.get(name, 0) + value
            texts.append(one.response)
            if not one.passed:
                return Attempt(
                    one.status,
                    error=f"part {number} of {len(calls)}: {one.error}",
                    latency_ms=latency,
                    usage=usage or None,
                    request=request,
                    response="\n\n".join(texts),
                    model_calls=call_ids,
                    rejected=one.rejected,
                )
            answers.append(one.data)
        data = dict(merge(answers))
        problem = check(data) if check else None
        return Attempt(
            RoutingEntry.Status.FAIL if problem else RoutingEntry.Status.PASS,
            data=data,
            error=f"the answer failed a check: {problem}" if problem else "",
            latency_ms=latency,
            usage=usage or None,
            request=request,
            response="\n\n".join(texts),
            model_calls=call_ids,
        )

    return run


def seen_here_before(skill_area: PathwayKey) -> str:
    """The bug fingerprints grounded findings left in this area (any skill), as a prompt block; "" if none."""
    found: dict[str, dict[str, Any]] = {}
    for fingerprints in Pathway.objects.filter(area=skill_area.area).values_list("fingerprints", flat=True):
        for item in fingerprints:
            known = found.get(item["fingerprint"])
            if known is None or item.get("last_seen", "") > known.get("last_seen", ""):
                found[item["fingerprint"]] = {**item, "count": item.get("count", 1) + (known or {}).get("count", 0)}
            else:
                known["count"] = known.get("count", 1) + item.get("count", 1)
    if not found:
        return ""
    items = sorted(found.values(), key=lambda item: item.get("last_seen", ""), reverse=True)[:SEEN_BEFORE_LIMIT]
    lines = [
        f"Seen here before (bug fingerprints of earlier grounded findings in {skill_area.area}, newest first; "
        "check whether any recurs, but report only what the code below shows):"
    ]
    for item in items:
        where = f"{item.get('file')}:{item.get('line')}" if item.get("file") else "?"
        lines.append(f'- {item["fingerprint"]} ({item.get("count", 1)}x; last: "{item.get("title", "")}" at {where})')
    return "\n".join(lines)


def routed_result(skill: str, routed: Routed, started: float, **values: Any) -> SkillResult:
    """The skill's result for an answer that passed: the routed model's, after how many attempts."""
    return skills.typed_result(
        skill,
        skills.build_result(
            skill,
            status=Verdict.PASS,
            model_used=routed.model,
            attempts=routed.attempts,
            duration_ms=int((time.monotonic() - started) * 1000),
            message=values.pop("message", "") + answered_by(routed),
            **values,
        ),
    )


def answered_by(routed: Routed) -> str:
    """How a routed result's message ends: the model that answered and why the router chose it."""
    entry = routed.entry
    how = (
        entry.reason
        if entry.reason != RoutingEntry.Reason.FAIL_OPEN
        else f"fail-open retry after {routed.entries[0].model} failed"
    )
    return f" Answered by {entry.model} ({how})."


class RoutedBackend:
    """The routed model as the backend of a skill step (`supervisor.skill_steps.Backend`).

    Each ask is one routed call (`route`: the fast or the thinking model, failing open onto the thinking
    model when the skill's check refuses the answer), asking with `calls`: the message lists of one
    attempt (several: the parts of a tree-split, answers merged by `merge`). The model edits nothing."""

    edits_files = False
    reviews = "routed reviews"

    def __init__(
        self,
        skill: str,
        client: LLMClient,
        calls: list[list[dict[str, Any]]],
        *,
        pathway: PathwayKey,
        progress: Progress,
        cancelled: Cancelled,
        session_id: str | None,
        requested_by: Any,
        merge: Merge = lambda answers: answers[0],
        step: tuple[float, float] = (0, 1),
    ) -> None:
        self.skill, self.client, self.calls, self.merge = skill, client, calls, merge
        self.pathway, self.progress, self.cancelled = pathway, progress, cancelled
        self.session_id, self.requested_by, self.step = session_id or "", requested_by, step
        self.started = time.monotonic()

    def ask(
        self,
        ask: skill_steps.SkillAsk,
        check: skill_steps.Check,
        *,
        number: int = 1,
        of: int = 1,
        model: str | None = None,
    ) -> skill_steps.Answer:
        if of > 1:
            self.progress(number - 1, of, f"review {number} of {of}: asking the routed model")
        else:
            self.progress(*self.step, "asking the routed model")

        def grounded(answer: dict[str, Any]) -> str | None:
            checked = check(ask.root, answer)
            answer["findings"], answer["dropped_findings"] = checked.grounding.kept, checked.grounding.dropped
            return checked.problem

        attempt = multi_attempt(
            self.client,
            self.calls,
            skills.worker_schema(self.skill),
            grounded,
            self.merge,
            max_tokens=generation_limit(self.skill),
            purpose=self.skill,
        )
        try:
            routed = route(
                self.skill,
                attempt,
                override=model,
                session_id=self.session_id,
                cancelled=self.cancelled,
                pathway=self.pathway,
                requested_by=self.requested_by,
            )
        except RoutingFailed as exc:
            answer = exc.answer
            # The models answered, but nothing they said is grounded: a review, verified false. Without a checked
            # answer to show (gateway error, not JSON), or for a diagnosis, the error names both models.
            checked = isinstance(answer, dict) and isinstance(answer.get("dropped_findings"), list)
            if not (checked and isinstance(ask, skill_steps.ReviewAsk)):
                raise
            return skill_steps.Answer(
                model=exc.entries[-1].model,
                report=answer,
                grounding=_grounding(answer),
                attempts=len(exc.entries),
                refused="not verified: no model gave a grounded review. "
                + " Then ".join(f"{entry.model} ({entry.reason}): {entry.error}" for entry in exc.entries),
            )
        split = f" Tree-split into {len(self.calls)} calls." if len(self.calls) > 1 else ""
        return skill_steps.Answer(
            model=routed.model,
            report=routed.data,
            grounding=_grounding(routed.data),
            attempts=routed.attempts,
            note=split + answered_by(routed),
        )

    def consensus_models(self, count: int, override: str | None) -> list[str | None]:
        """The model table's `consensus` models when it lists them (as overrides), else the router's choice each time."""
        if load_table().consensus:
            return [*consensus_models("review", count, override)]
        return [override] * count

    def remember(self, findings: list[dict[str, Any]]) -> None:
        """The fingerprints of grounded findings, kept on the pathway for the next call in this area."""
        found = [
            {
                "fingerprint": fingerprint(f),
                "title": str(f.get("title", ""))[:200],
                "file": f["file"],
                "line": f["line"],
            }
            for f in findings
        ]
        do_add_pathway_fingerprints(self.pathway, found)

    def verify(self, command: str) -> TestRun:
        raise NotImplementedError("the routed model edits nothing: there is no fix of its to verify")

    def result(self, skill: str, /, **values: Any) -> SkillRunResult:
        return skills.build_result(skill, duration_ms=int((time.monotonic() - self.started) * 1000), **values)


def _grounding(answer: Mapping[str, Any]) -> Grounding:
    """The grounding the check left in a routed answer (`findings` kept, `dropped_findings`)."""
    return Grounding(kept=list(answer.get("findings") or []), dropped=list(answer.get("dropped_findings") or []))


# --- review ----------------------------------------------------------------------


class MergedReview(TypedDict):
    """The review report of a tree-split's parts, in the worker report's shape."""

    findings: list[dict[str, Any]]
    verdict: str
    summary: str


def merge_reviews(answers: list[dict[str, Any]]) -> MergedReview:
    """One review from the reviews of a tree-split's parts."""
    verdicts = [answer.get("verdict", "comment") for answer in answers]
    verdict = next((v for v in ("request_changes", "comment") if v in verdicts), "approve")
    return {
        "findings": [finding for answer in answers for finding in answer.get("findings", [])],
        "verdict": verdict,
        "summary": " | ".join(answer.get("summary", "") for answer in answers if answer.get("summary")),
    }


def review_pathway(params: ReviewInput, files: list[tuple[str, str]]) -> PathwayKey:
    """skill + first two segments of the first file + signal ("git-range" or "paths")."""
    first = files[0][0] if files else "."
    return PathwayKey.of("review", first, "git-range" if params.git_range else "paths")


def review_calls(
    client: LLMClient,
    params: ReviewInput,
    files: list[tuple[str, str]],
    diff: str,
    preface: list[str],
    progress: Callable[[str], None],
) -> list[list[dict[str, Any]]]:
    """The message lists of one review attempt: one for the short files, one per part of each long file."""
    system = {"role": "system", "content": _system_prompt("review")}
    short = [(name, text) for name, text in files if not tree_split.needs_split(text)]
    long = [(name, text) for name, text in files if tree_split.needs_split(text)]
    diff_block = [f"The change to review (git diff {params.git_range}):\n{diff}"] if diff else []
    calls = []
    if short or not long:
        body = preface + diff_block + ["The files:\n" + _files_block(short)]
        calls.append([system, {"role": "user", "content": "\n\n".join(body)}])
        diff_block = []
    for name, text in long:
        parts = tree_split.split_parts(text)
        progress(f"tree-split: summarising {len(parts)} parts of {name}")
        summaries = tree_split.summarise_parts(client, name, parts)
        for index in range(len(parts)):
            body = (
                preface
                + diff_block
                + [
                    f"{name} is long: it is reviewed in {len(parts)} parts. Review only the real code of this part; "
                    "the scratchpad tells you what the other parts hold, so do not report something as missing "
                    "when the scratchpad says it is elsewhere.",
                    tree_split.part_block(name, parts, summaries, index),
                ]
            )
            calls.append([system, {"role": "user", "content": "\n\n".join(body)}])
            diff_block = []
    return calls


def _review_files(ask: skill_steps.ReviewAsk) -> list[tuple[str, str]]:
    """The files the model is shown: the paths asked for, then the files the range changes."""
    files = [read_project_file(ask.root, relative) for relative in ask.paths]
    if ask.git_range:
        known = {name for name, _ in files}
        for name in skill_steps.git_diff(ask.root, "--name-only", ask.git_range).splitlines():
            if name and name not in known:
                try:
                    files.append(read_project_file(ask.root, name))
                except RootRefused:
                    continue  # deleted or binary in the working tree: the diff still shows it
    return files


def review(params: ReviewInput, progress: Progress, cancelled: Cancelled, requested_by: Any = None) -> ReviewResult:
    """A routed review: ground the model's findings; a mostly ungrounded answer fails over to the thinking model.

    `requested_by`: the person behind the call (a User), or None for the service identity; a session it names
    must be theirs (skills.check_session)."""
    skills.check_session(params.session_id, requested_by)
    ask = skill_steps.review_ask(
        params.project_root,
        paths=params.paths,
        git_range=params.git_range,
        focus=params.focus,
        consensus=params.consensus,
        model=params.model,
    )
    files = _review_files(ask)
    client = routing_client()
    pathway = review_pathway(params, files)
    preface = [block for block in (seen_here_before(pathway),) if block]
    if params.focus:
        preface.append(f"Focus: {params.focus}")
    diff = (ask.diff or "")[-COMMAND_OUTPUT_CHARS:]
    calls = review_calls(client, params, files, diff, preface, lambda text: progress(0, 1, text))
    backend = RoutedBackend(
        "review",
        client,
        calls,
        merge=merge_reviews,
        pathway=pathway,
        progress=progress,
        cancelled=cancelled,
        session_id=params.session_id,
        requested_by=requested_by,
    )
    return ReviewResult.model_validate(skill_steps.review(backend, ask))


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


_SIGNALS = (
    ("import", re.compile(r"ImportError|ModuleNotFoundError|cannot find (module|package)|undefined: ", re.I)),
    ("syntax", re.compile(r"SyntaxError|IndentationError|syntax error|expected .* found", re.I)),
    ("type", re.compile(r"TypeError|AttributeError|NameError|type mismatch|cannot use .* as", re.I)),
    ("assertion", re.compile(r"AssertionError|assert |FAILED|--- FAIL|expected .* (got|but)", re.I)),
    ("crash", re.compile(r"Traceback|panic:|Segmentation fault|Exception", re.I)),
)


def debug_signal(code: int | None, output: str) -> str:
    """The kind of failure a debug call starts from: timeout, import, syntax, type, assertion, crash or exit."""
    if code is None:
        return "timeout"
    for name, pattern in _SIGNALS:
        if pattern.search(output):
            return name
    return "exit"


def _cited_lines(name: str, text: str) -> list[int]:
    escaped = re.escape(name)
    pattern = re.compile(rf'{escaped}"?(?:, line |:)(\d+)')
    return [int(number) for number in pattern.findall(text)]


def debug_files_block(client: LLMClient, files: list[tuple[str, str]], evidence: str) -> str:
    """The files a debug call sees; a long one as its scratchpad plus the parts the output cites (else the last)."""
    short = [(name, text) for name, text in files if not tree_split.needs_split(text)]
    blocks = [_files_block(short)] if short else []
    for name, text in files:
        if not tree_split.needs_split(text):
            continue
        parts = tree_split.split_parts(text)
        summaries = tree_split.summarise_parts(client, name, parts)
        chosen = tree_split.parts_for_lines(parts, _cited_lines(name, evidence))
        blocks.append(
            tree_split.scratchpad(name, parts, summaries)
            + "".join(
                f"\n=== {name} ({parts[i].label}; real code, line numbers added) ===\n{tree_split.numbered(parts[i])}\n"
                for i in chosen
            )
        )
    return "\n".join(blocks)


def debug(
    params: DebugInput, progress: Progress, cancelled: Cancelled, requested_by: Any = None, *, identity: Any = None
) -> DebugResult:
    """A routed diagnosis of `symptom` from `failing_cmd`'s output and the files it names; it edits nothing.

    `failing_cmd` runs as the service's user: only a caller (`identity`, a people.auth.Identity) with the
    right may send one; a session it names must be the caller's (skills.check_session)."""
    check_command_right(params.model_dump(exclude_none=True), identity)
    skills.check_session(params.session_id, requested_by)
    ask = skill_steps.debug_ask(
        params.project_root, symptom=params.symptom, failing_cmd=params.failing_cmd, model=params.model
    )
    client = routing_client()
    progress(0, 2, "running failing_cmd")
    before = run_command(ask.root, params.failing_cmd, cancelled)
    code = before.exit_code if before.outcome == ProcessOutcome.EXITED else None
    output = before.output[-COMMAND_OUTPUT_CHARS:]
    evidence = f"{params.symptom}\n{output}"
    files = files_named_in(ask.root, evidence)
    exit_text = "timed out" if code is None else f"exit code {code}"
    pathway = PathwayKey.of("debug", files[0][0] if files else ".", debug_signal(code, output))
    seen = seen_here_before(pathway)
    messages = [
        {"role": "system", "content": _system_prompt("debug")},
        {
            "role": "user",
            "content": (
                (f"{seen}\n\n" if seen else "")
                + f"Symptom:\n{params.symptom}\n\nFailing command: {params.failing_cmd} ({exit_text})\n"
                f"Its output (last part):\n{output}\n\nFiles it mentions:\n{debug_files_block(client, files, evidence)}"
            ),
        },
    ]
    backend = RoutedBackend(
        "debug",
        client,
        [messages],
        pathway=pathway,
        progress=progress,
        cancelled=cancelled,
        session_id=params.session_id,
        requested_by=requested_by,
        step=(1, 2),
    )
    return DebugResult.model_validate(skill_steps.debug(backend, ask, before))
