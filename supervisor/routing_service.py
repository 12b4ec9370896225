"""The routed skills of /mcp/routing (Mode 2): what `review` and `debug` do once called.

`supervisor/routing_tools.py` declares the tools and hands each call here:

    result = review(params, progress, cancelled)    # a ReviewInput in, a ReviewResult out

with `progress(done, total, text)` to tell the caller how far it got and
`cancelled()` to ask whether the caller went away. Refusals are
`SupervisorError`s (the endpoint answers them as tool errors).

`review` and `debug` have the same arguments and results as their
/mcp/supervisor twins (both take their schemas from `supervisor.skills`), but
instead of spawning Claude Code they ask the model the router picks for a
JSON answer. The project is read here (files, `git diff`) and `debug` runs
`failing_cmd` here, through the executor's process runner (own process group,
deadline, allow-listed environment). The answer passes only if it validates against the skill's
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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from django.conf import settings

from hyperguild.lib.git import RepositoryUnreadable, git
from hyperguild.lib.llm import LLMClient, generation_limit, get_llm_client
from hyperguild.lib.typed import JsonSchema
from supervisor import executor, skills, tree_split
from supervisor.actions import do_add_pathway_fingerprints
from supervisor.apply import head_commit
from supervisor.consensus import ReviewAnswer, agree
from supervisor.errors import GatewayMissing, ProjectCommandFailed
from supervisor.executor import ProcessOutcome
from supervisor.grounding import (
    GATE_FILE,
    GATE_LINE,
    GATE_QUOTE,
    Grounding,
    fingerprint,
    ground_findings,
    review_verified,
)
from supervisor.model_table import consensus_models, load_table
from supervisor.models import Pathway, RoutingEntry
from supervisor.roots import RootRefused, relative_to_root, resolve_inside, resolve_project_root
from supervisor.routing import Attempt, PathwayKey, Routed, RoutingFailed, llm_attempt, route
from supervisor.shell_reach import check_command_right, check_git_range
from supervisor.skills import (
    DebugInput,
    DebugResult,
    GroundedDiagnosis,
    GroundedReview,
    ResultFinding,
    ReviewInput,
    ReviewResult,
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
# A review whose findings are mostly invented (not grounded) is a failed answer.
MAX_UNGROUNDED_SHARE = 0.5
COMMAND_TIMEOUT_SECONDS = 60
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


def _run(command: list[str] | str, cwd: Path, *, shell: bool = False) -> tuple[int | None, str]:
    """Run a command through the executor's process runner; (exit code or None on timeout, capped output)."""
    argv = ["/bin/sh", "-c", command] if shell and isinstance(command, str) else command
    assert isinstance(argv, list), "a command without shell=True is an argument list"
    ran = executor.run_process(argv, cwd=cwd, timeout=COMMAND_TIMEOUT_SECONDS, merge_stderr=True)
    output = ran.stdout[-COMMAND_OUTPUT_CHARS:]
    if ran.outcome == ProcessOutcome.TIMEOUT:
        return None, output + f"\n[killed after {COMMAND_TIMEOUT_SECONDS}s]"
    return ran.exit_code, output


def _git_diff(root: Path, option: str, git_range: str) -> str:
    """`git diff <option> <range>` in the project (through hyperguild.lib.git), capped like a command's output."""
    try:
        ran = git(
            root,
            *("diff", option, "--end-of-options", git_range, "--"),
            check=False,
            timeout=COMMAND_TIMEOUT_SECONDS,
            env=executor.child_environment(),
        )
    except RepositoryUnreadable as exc:
        raise ProjectCommandFailed(f"git diff {git_range} failed in {root}: {exc}") from None
    if not ran.ok:
        output = (ran.stdout + ran.stderr)[-COMMAND_OUTPUT_CHARS:]
        raise ProjectCommandFailed(f"git diff {git_range} failed in {root}: {output.strip()[:500]}")
    return ran.stdout[-COMMAND_OUTPUT_CHARS:]


# check(answer): None when the answer passes, else why not (it may normalise the answer in place).
Check = Callable[[dict[str, Any]], str | None]


def multi_attempt(
    client: LLMClient,
    calls: list[list[dict[str, Any]]],
    schema: JsonSchema,
    check: Check | None,
    merge: Callable[[list[dict[str, Any]]], Mapping[str, Any]],
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
    found: dict[str, dict] = {}
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


def remember_fingerprints(key: PathwayKey, findings: list[ResultFinding]) -> None:
    found = [
        {"fingerprint": fingerprint(_plain(f)), "title": f.title[:200], "file": f.file, "line": f.line}
        for f in findings
    ]
    do_add_pathway_fingerprints(key, found)


def _plain(finding: ResultFinding) -> dict[str, Any]:
    """A finding as the grounding module reads it (a dict: the named fields and the others it carried)."""
    return finding.model_dump(mode="json")


def routed_result(skill: str, routed: Routed, started: float, **values: Any) -> SkillResult:
    """The skill's result for an answer that passed: the routed model's, after how many attempts."""
    entry = routed.entry
    how = (
        entry.reason
        if entry.reason != RoutingEntry.Reason.FAIL_OPEN
        else f"fail-open retry after {routed.entries[0].model} failed"
    )
    return skills.typed_result(
        skill,
        skills.build_result(
            skill,
            status=Verdict.PASS,
            model_used=entry.model,
            attempts=routed.attempts,
            duration_ms=int((time.monotonic() - started) * 1000),
            message=values.pop("message", "") + f" Answered by {entry.model} ({how}).",
            **values,
        ),
    )


# --- review ----------------------------------------------------------------------


_UNGROUNDED_GATES = (GATE_FILE, GATE_LINE, GATE_QUOTE)


def review_check(root: Path) -> Check:
    """Ground and gate the findings in place; fail the answer if it rests on dropped findings alone or mostly invents."""

    def check(data: dict) -> str | None:
        findings = data.get("findings", [])
        grounding = ground_findings(root, findings)
        data["findings"], data["dropped_findings"] = grounding.kept, grounding.dropped
        verified, why = review_verified(grounding, data.get("verdict", "comment"))
        if not verified:
            return f"the answer is not grounded: {why}"
        invented = [d for d in grounding.dropped if d["gate"] in _UNGROUNDED_GATES]
        if findings and len(invented) / len(findings) > MAX_UNGROUNDED_SHARE:
            return (
                f"{len(invented)} of {len(findings)} findings are not grounded in the files "
                f"(wrong file, line or quote): {grounding.reasons()}"
            )
        return None

    return check


class MergedReview(TypedDict):
    """The review report of a tree-split's parts, in the worker report's shape."""

    findings: list[dict[str, Any]]
    verdict: str
    summary: str


def merge_reviews(answers: list[dict]) -> MergedReview:
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


def _review_files(root: Path, params: ReviewInput) -> tuple[list[tuple[str, str]], str]:
    files: list[tuple[str, str]] = []
    diff = ""
    for relative in params.paths or []:
        files.append(read_project_file(root, relative))
    git_range = params.git_range
    if git_range:
        check_git_range(git_range)
        diff = _git_diff(root, "--no-color", git_range)
        names = _git_diff(root, "--name-only", git_range)
        known = {name for name, _ in files}
        for name in names.splitlines():
            if name and name not in known:
                try:
                    files.append(read_project_file(root, name))
                except RootRefused:
                    continue  # deleted or binary in the working tree: the diff still shows it
    return files, diff


def review(params: ReviewInput, progress: Progress, cancelled: Cancelled, requested_by: Any = None) -> ReviewResult:
    """A routed review: ground the model's findings; a mostly ungrounded answer fails over to the thinking model.

    `requested_by`: the person behind the call (a User), or None for the service identity; a session it names
    must be theirs (skills.check_session)."""
    skills.check_session(params.session_id, requested_by)
    started = time.monotonic()
    root = resolve_project_root(params.project_root)
    files, diff = _review_files(root, params)
    client = routing_client()
    pathway = review_pathway(params, files)
    preface = [block for block in (seen_here_before(pathway),) if block]
    if params.focus:
        preface.append(f"Focus: {params.focus}")
    calls = review_calls(client, params, files, diff, preface, lambda text: progress(0, 1, text))
    attempt = multi_attempt(
        client,
        calls,
        skills.worker_schema("review"),
        review_check(root),
        merge_reviews,
        max_tokens=generation_limit("review"),
        purpose="review",
    )
    if (params.consensus or 1) > 1:
        return _consensus_review(params, progress, cancelled, root, attempt, pathway, started, requested_by)
    progress(0, 1, "asking the routed model")
    try:
        routed = route(
            "review",
            attempt,
            override=params.model,
            session_id=params.session_id or "",
            cancelled=cancelled,
            pathway=pathway,
            requested_by=requested_by,
        )
    except RoutingFailed as exc:
        answer = _grounded_answer(exc)
        # The models answered, but nothing they said is grounded: a review, verified false.
        return _review_result(
            skills.build_result(
                "review",
                status=Verdict.FAIL,
                verified=False,
                model_used=exc.entries[-1].model,
                attempts=len(exc.entries),
                duration_ms=int((time.monotonic() - started) * 1000),
                findings=answer.findings,
                verdict=answer.verdict,
                dropped_findings=answer.dropped_findings,
                summary=answer.summary,
                reviewed_commit=head_commit(root),
                message="not verified: no model gave a grounded review. "
                + " Then ".join(f"{entry.model} ({entry.reason}): {entry.error}" for entry in exc.entries),
            )
        )
    review = GroundedReview.model_validate(routed.data)
    remember_fingerprints(pathway, review.findings)
    split = f" Tree-split into {len(calls)} calls." if len(calls) > 1 else ""
    return _review_result(
        routed_result(
            "review",
            routed,
            started,
            verified=True,
            findings=review.findings,
            verdict=review.verdict,
            dropped_findings=review.dropped_findings,
            summary=review.summary,
            reviewed_commit=head_commit(root),
            message=f"{len(review.findings)} grounded findings, {len(review.dropped_findings)} dropped.{split}",
        )
    )


def _review_result(result: SkillResult | dict[str, Any]) -> ReviewResult:
    """A review's result as its model (from `build_result`'s dict or `routed_result`)."""
    typed = result if isinstance(result, SkillResult) else skills.typed_result("review", result)
    assert isinstance(typed, ReviewResult)
    return typed


def _grounded_answer(exc: RoutingFailed) -> GroundedReview:
    """The last answer of a failed routed review, if it was grounded at all; else the error goes to the caller."""
    answer = exc.answer
    if not (isinstance(answer, dict) and isinstance(answer.get("dropped_findings"), list)):
        raise exc  # no answer to show (gateway error, not JSON): a tool error naming both models
    return GroundedReview.model_validate(answer)


def _consensus_review(
    params: ReviewInput,
    progress: Progress,
    cancelled: Cancelled,
    root: Path,
    attempt: Callable[[str], Attempt],
    pathway: PathwayKey,
    started: float,
    requested_by: Any = None,
) -> ReviewResult:
    """`consensus` independent routed reviews (each a routed call with its entries and pathway count), then agreement.

    The reviewers are the model table's `consensus` models when it lists them (as overrides), else the router
    chooses for each review as for any call.
    """
    count = params.consensus or 1
    listed = consensus_models("review", count, params.model) if _table_lists_consensus() else []
    overrides: list[str | None] = [*listed] or [params.model] * count
    reviews, attempts, models = [], 0, []
    for number, override in enumerate(overrides, start=1):
        progress(number - 1, count, f"review {number} of {count}: asking the routed model")
        try:
            routed = route(
                "review",
                attempt,
                override=override,
                session_id=params.session_id or "",
                cancelled=cancelled,
                pathway=pathway,
                requested_by=requested_by,
            )
            answer = GroundedReview.model_validate(routed.data)
            model, used = routed.entry.model, routed.attempts
        except RoutingFailed as exc:
            answer, model, used = _grounded_answer(exc), exc.entries[-1].model, len(exc.entries)
        attempts += used
        models.append(model)
        grounding = Grounding(
            kept=[_plain(finding) for finding in answer.findings],
            dropped=[dropped.model_dump(mode="json") for dropped in answer.dropped_findings],
        )
        reviews.append(ReviewAnswer(number, model, grounding, answer.verdict, answer.summary))
    outcome = agree(root, reviews)
    verified, why = review_verified(outcome.grounding, outcome.verdict)
    agreed = [ResultFinding.model_validate(finding) for finding in outcome.grounding.kept]
    remember_fingerprints(pathway, agreed)
    return _review_result(
        skills.build_result(
            "review",
            status=Verdict.PASS if verified else Verdict.FAIL,
            verified=verified,
            model_used=", ".join(dict.fromkeys(models)),
            attempts=attempts,
            duration_ms=int((time.monotonic() - started) * 1000),
            findings=agreed,
            verdict=outcome.verdict,
            dropped_findings=outcome.grounding.dropped,
            summary=outcome.summary,
            reviewed_commit=head_commit(root),
            message=f"consensus of {count} routed reviews ({', '.join(models)}): {why}",
        )
    )


def _table_lists_consensus() -> bool:
    return bool(load_table().consensus)


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


def debug_check(root: Path) -> Check:
    def check(data: dict) -> str | None:
        findings = data.get("findings", [])
        grounding = ground_findings(root, findings)
        data["findings"], data["dropped_findings"] = grounding.kept, grounding.dropped
        if grounding.all_dropped:
            return f"the diagnosis quotes no real code: {grounding.reasons()}"
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
    started = time.monotonic()
    root = resolve_project_root(params.project_root)
    client = routing_client()
    progress(0, 2, "running failing_cmd")
    code, output = _run(params.failing_cmd, root, shell=True)
    evidence = f"{params.symptom}\n{output}"
    files = files_named_in(root, evidence)
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
    attempt = llm_attempt(
        client,
        messages,
        skills.worker_schema("debug"),
        debug_check(root),
        max_tokens=generation_limit("debug"),
        purpose="debug",
    )
    progress(1, 2, "asking the routed model")
    routed = route(
        "debug",
        attempt,
        override=params.model,
        session_id=params.session_id or "",
        cancelled=cancelled,
        pathway=pathway,
        requested_by=requested_by,
    )
    diagnosis = GroundedDiagnosis.model_validate(routed.data)
    remember_fingerprints(pathway, diagnosis.findings)
    result = routed_result(
        "debug",
        routed,
        started,
        runner_output=output,
        verified=None,
        hypotheses=diagnosis.hypotheses,
        root_cause=diagnosis.root_cause,
        fix=diagnosis.fix,
        files_changed=diagnosis.files_changed,
        failing_cmd_passes=None if code != 0 else True,
        worker_report=routed.data,
        findings=diagnosis.findings,
        dropped_findings=diagnosis.dropped_findings,
        reviewed_commit=head_commit(root),
        message=f"Diagnosis only (failing_cmd {exit_text} before): apply the fix, then re-run failing_cmd.",
    )
    assert isinstance(result, DebugResult)
    return result
