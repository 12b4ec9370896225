"""Training candidates from what the supervisor verified: SFT and DPO examples, stored redacted.

    extract_from_runs(runs)          -> [(TrainingExample, created)]
    extract_from_routing(session_id) -> [(TrainingExample, created)]

Where examples come from:
- **SFT**: a SkillRun that passed and that the supervisor verified itself
  (`status=pass, verified=True`) with a worker report. For a TDD phase (and
  debug) that recorded its change (`SkillRun.change`), the answer is the
  change itself: the worker's one-line summary and a ```diff block (the system line asks for that shape, and only that one); the
  prompt carries the task and the pre-state texts of the files involved. A
  review's answer is its grounded findings, with the grounding check that
  passed them. Runs recorded before changes were captured keep the worker's
  report as the answer.
- **DPO, across runs**: runs of the same task (skill, project root and
  arguments other than model/session) where one failed verification and a
  later one passed: rejected = the failed run's change, chosen = the change
  from the same pre-state (the failed run's) to the state the passing run
  verified, so both sides apply to one pre-state.
- **DPO, within a run**: an attempt in `attempt_log` rejected by the
  supervisor followed by a verified attempt of the same run (changes from
  the state before the rejected attempt).
- **Apply** (`supervisor.apply`): each committed patch is an SFT example
  (prompt: the finding and the files before it; answer: the diff, which
  the supervisor's tests passed); a patch the tests refused is the rejected
  side of a DPO pair with a committed patch for the same finding (file and
  bug fingerprint) from the same files. Both replay like TDD changes.
- **DPO, routing**: a RoutingEntry that answered but failed its check and
  was retried (fail-open) on the other model, whose answer passed: its
  stored request is the prompt, the two responses are rejected and chosen.

The prompt is rebuilt from what the run recorded (the worker's own prompt
text is not stored): a system line naming the skill and a user message
with the task arguments. Provenance names the runs, the models that
really answered, the pre-state (`pre_state`: run, attempt, file count and
digest; what `trainer_verify` rebuilds) and the verification (test command,
exit codes before and after). Every example is keyed by its source
(`source_key`), so extracting again stores nothing twice. Secrets are
redacted (`sessions.redaction`) before anything is stored; a redacted
example is flagged and says which field and pattern.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, cast

from django.conf import settings

from hyperguild.lib.diffs import BINARY, fenced
from hyperguild.lib.typed import JSON
from sessions.actions import do_store_training_example
from sessions.models import TrainingExample
from sessions.redaction import redact_value
from sessions.replay import ContentStore, ReplayError, diff_between, state_hashes
from supervisor.models import RoutingEntry, SkillRun

# One answer shape per example, asked for once (in the system line): a model trained on a prompt that asks for
# two shapes at once learns both. A change is a one-line summary and a diff; anything else is the worker's report.
SYSTEM_PROMPT = (
    "You are the hyperguild {skill} worker. Do the task and answer with the JSON report the supervisor asks for."
)
CHANGE_SYSTEM_PROMPT = (
    "You are the hyperguild {skill} worker. Do the task and answer with a one-line summary, then the change as a "
    "unified diff in a ```diff block."
)
# Arguments that say how a run was made, not what was asked.
NOT_TASK_ARGUMENTS = frozenset({"model", "session_id"})
# How much of a runner's output an example's provenance keeps.
OUTPUT_TAIL_CHARS = 500

# Skills whose answer is a change to the project (replayable by trainer_verify).
CHANGE_SKILLS = frozenset({"tdd_red", "tdd_green", "tdd_refactor", "debug"})
# Pre-state texts shown in a prompt: per file and in all.
PROMPT_FILE_CHARS = 20_000
PROMPT_FILES_CHARS = 60_000

Stored = tuple[TrainingExample, bool]
Message = dict[str, Any]  # one chat message: {"role": …, "content": …}


def _as_text(report: Any) -> str:
    return report if isinstance(report, str) else json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True)


def _task_arguments(run: SkillRun) -> JSON:
    # The run's stored arguments (each skill has its own): JSON by nature, read here to key and show the task.
    return {k: v for k, v in sorted((run.arguments or {}).items()) if k not in NOT_TASK_ARGUMENTS}


def task_key(run: SkillRun) -> str:
    return json.dumps([run.skill, run.project_root, _task_arguments(run)], sort_keys=True, ensure_ascii=False)


def prompt_messages(
    run: SkillRun, files: dict[str, str] | None = None, *, change: bool = False, task: str | None = None
) -> list[Message]:
    """System line (asking for a change or for the report, `change`) + the task (default: the run's arguments);
    `files` (path -> text before the change) are shown after it."""
    if task is None:
        task = "\n".join(f"{k}: {_as_text(v)}" for k, v in _task_arguments(run).items())
    user = f"Skill: {run.skill}\n" + (f"Project root: {run.project_root}\n" if run.project_root else "") + task
    if files:
        shown, budget = [], PROMPT_FILES_CHARS
        for path, text in sorted(files.items()):
            text = text[:PROMPT_FILE_CHARS]
            if budget - len(text) < 0:
                shown.append(f"--- {path}: left out (the prompt's file budget is spent)")
                continue
            budget -= len(text)
            shown.append(f"--- {path}\n```\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}```")
        user = user.strip() + "\n\nFiles before the change:\n" + "\n".join(shown)
    system = CHANGE_SYSTEM_PROMPT if change else SYSTEM_PROMPT
    return [
        {"role": "system", "content": system.format(skill=run.skill)},
        {"role": "user", "content": user.strip()},
    ]


def _answer(report: Any) -> list[Message]:
    return [{"role": "assistant", "content": _as_text(report)}]


def _verification(run: SkillRun, attempt: JSON | None = None) -> JSON:
    source = attempt or {}
    output = source.get("runner_output") if attempt else run.runner_output
    return {
        "run_id": run.pk,
        "status": run.status,
        "verified": source.get("verified") if attempt else run.verified,
        "reason": source.get("reason") if attempt else run.message,
        "exit_code": source.get("test_exit_code") if attempt else run.exit_code,
        "runner_output_tail": (output or "")[-OUTPUT_TAIL_CHARS:],
        **({"attempt": attempt.get("attempt")} if attempt else {}),
        **_test_runs(run),
    }


def _test_runs(run: SkillRun) -> JSON:
    """The test command and the supervisor's own exit codes before and after the worker, when recorded."""
    change = run.change or {}
    if not change.get("test_cmd"):
        return {}
    return {
        "test_cmd": change["test_cmd"],
        "exit_code_before": (change.get("before") or {}).get("exit_code"),
        "exit_code_after": (change.get("after") or {}).get("exit_code"),
    }


def _pre_state(run: SkillRun, after_attempt: int, hashes: Mapping[str, str]) -> JSON:
    """What trainer_verify rebuilds: the run and attempt the state was recorded at, and a digest of it."""
    digest = hashlib.sha1(json.dumps(sorted(hashes.items())).encode()).hexdigest()
    return {
        "run": run.pk,
        "after_attempt": after_attempt,
        "files": len(hashes),
        "digest": digest,
        "complete": bool((run.change or {}).get("pre_state_complete", True)),
    }


def _summary_line(report: Any) -> str:
    summary = report.get("summary") if isinstance(report, dict) else None
    if not isinstance(summary, str) and isinstance(report, dict):
        summary = report.get("root_cause") or report.get("fix")
    return (summary or "").strip().splitlines()[0][:300] if (summary or "").strip() else ""


def _change_answer(report: Any, diff: str) -> list[Message]:
    summary = _summary_line(report)
    return [{"role": "assistant", "content": (summary + "\n\n" if summary else "") + fenced(diff)}]


def _has_change(run: SkillRun) -> bool:
    return run.skill in CHANGE_SKILLS and "pre_state" in (run.change or {})


def _prompt_files(run: SkillRun, hashes: Mapping[str, str], store: ContentStore, changed: set[str]) -> dict[str, str]:
    """Texts, at `hashes`, of the files the change touches and of the task's test/impl files."""
    args = run.arguments or {}
    wanted = set(changed) | {args.get(k) for k in ("test_path", "impl_path") if isinstance(args.get(k), str)}
    files = {}
    for path in sorted(p for p in wanted if p and p in hashes):
        text = store.text(path, hashes[path])
        files[path] = f"[binary or unrecorded file: {path}]" if text is None or text is BINARY else text
    return files


def _recorded_state(run: SkillRun, after_attempt: int | None) -> Mapping[str, str]:
    """state_hashes of a run whose pre-state is recorded (every caller checks `pre_state` first)."""
    hashes = state_hashes(run, after_attempt)
    if hashes is None:
        raise ReplayError(f"run {run.pk} has no recorded pre-state")
    return hashes


def _changed_paths(before: Mapping[str, str], after: Mapping[str, str]) -> set[str]:
    return {p for p in set(before) | set(after) if before.get(p) != after.get(p)}


def _sft_answer(run: SkillRun, stores: dict[str, ContentStore]) -> tuple[list[Message], list[Message], JSON]:
    """(prompt, completion, extra provenance) of a verified run: the change, the grounded review, or the report."""
    if _has_change(run):
        store = _store_for(run, stores)
        before, after = _recorded_state(run, 0), _recorded_state(run, None)
        prompt = prompt_messages(run, _prompt_files(run, before, store, _changed_paths(before, after)), change=True)
        change = run.change or {}  # recorded: _has_change
        extra = {"pre_state": _pre_state(run, 0, before), "change": _change_facts(change)}
        return prompt, _change_answer(run.worker_report, change.get("diff") or ""), extra
    if run.skill == "review" and isinstance(run.result, dict):
        answer = {k: run.result.get(k) for k in ("verdict", "summary", "findings")}
        check = {
            "check": "grounding",
            "grounded_findings": len(answer["findings"] or []),
            "dropped_findings": run.result.get("dropped_findings", 0),
        }
        return prompt_messages(run), _answer(answer), {"check": check}
    return prompt_messages(run), _answer(run.worker_report), {}


def _change_facts(change: JSON) -> JSON:
    return {
        "files": [
            {"path": f["path"], "status": f["status"], "binary": f.get("binary", False)}
            for f in change.get("files") or []
        ],
        "truncated": bool(change.get("truncated")),
    }


def _store(
    source_key: str, *, kind: str, skill: str, prompt: list[Message], provenance: JSON, **answers: list[Message]
) -> Stored:
    """Redact every field, flag what was redacted (field, pattern, count), store once per `source_key`."""
    flags: list[dict[str, Any]] = []

    def clean(name: str, value: Any) -> Any:
        value, found = redact_value(value)
        flags.extend({"field": name, "pattern": pattern, "count": count} for pattern, count in sorted(found.items()))
        return value

    prompt = clean("prompt", prompt)
    cleaned = {name: clean(name, messages) for name, messages in answers.items()}
    provenance = clean("provenance", provenance)
    return do_store_training_example(
        source_key=source_key, kind=kind, skill=skill, prompt=prompt, provenance=provenance, flags=flags, **cleaned
    )


def _store_dpo(source_key: str, run: SkillRun, *, chosen: Any, rejected: Any, **provenance: Any) -> Stored:
    """A DPO pair of two worker reports for the task of `run` (runs recorded before changes were captured)."""
    return _store(
        source_key,
        kind="dpo",
        skill=run.skill,
        prompt=prompt_messages(run),
        chosen=_answer(chosen),
        rejected=_answer(rejected),
        provenance={"session_id": run.session_id, **provenance},
    )


def finished_runs(session_id: str | None) -> list[SkillRun]:
    runs = SkillRun.objects.finished().order_by("created_at", "id")
    return list(runs.in_session(session_id) if session_id else runs)


def _store_for(run: SkillRun, stores: dict[str, ContentStore]) -> ContentStore:
    """One ContentStore per project root for a whole extraction pass (it reads every recorded run of the project)."""
    if run.project_root not in stores:
        stores[run.project_root] = ContentStore(run.project_root)
    return stores[run.project_root]


def extract_from_runs(runs: list[SkillRun]) -> list[Stored]:
    stored: list[Stored] = []
    stores: dict[str, ContentStore] = {}
    pending_failures: dict[str, list[SkillRun]] = {}
    patches = _ApplyPatches()
    for run in runs:
        if run.skill == "apply":
            stored += _apply_examples(run, stores, patches)
            continue
        report = run.worker_report
        if run.status == SkillRun.Status.PASS and run.verified is True and report is not None:
            prompt, completion, extra = _sft_answer(run, stores)
            stored.append(
                _store(
                    f"sft:run:{run.pk}",
                    kind="sft",
                    skill=run.skill,
                    prompt=prompt,
                    completion=completion,
                    provenance={
                        "origin": "skill_run",
                        "session_id": run.session_id,
                        "runs": [run.pk],
                        "models": [run.model] if run.model else [],
                        "verification": {**_verification(run), **extra.pop("check", {})},
                        **extra,
                    },
                )
            )
            failed_before = pending_failures.pop(task_key(run), [])
            if failed_before:
                failed = failed_before[-1]  # the attempt closest to the one that worked
                stored.append(_across_runs_pair(failed, run, stores))
        elif run.status == SkillRun.Status.FAIL and run.verified is False and report is not None:
            pending_failures.setdefault(task_key(run), []).append(run)
        stored += _within_run_pairs(run, stores)
    return stored + _apply_pairs(patches, stores)


def _across_runs_pair(failed: SkillRun, run: SkillRun, stores: dict[str, ContentStore]) -> Stored:
    """DPO of a failed run and the later run of the same task that passed."""
    common = {
        "origin": "skill_runs",
        "runs": [failed.pk, run.pk],
        "models": sorted({m for m in (failed.model, run.model) if m}),
        "answered_by": {"chosen": run.model, "rejected": failed.model},
        "verification": {"rejected": _verification(failed), "chosen": _verification(run)},
    }
    if _has_change(failed) and _has_change(run):
        store = _store_for(run, stores)
        base, target = _recorded_state(failed, 0), _recorded_state(run, None)
        chosen = diff_between(base, target, store, cap=settings.SUPERVISOR_DIFF_CAP)
        if chosen is not None:
            changed = _changed_paths(base, target) | _changed_paths(base, _recorded_state(failed, None))
            return _store(
                f"dpo:runs:{failed.pk}:{run.pk}",
                kind="dpo",
                skill=run.skill,
                prompt=prompt_messages(run, _prompt_files(run, base, store, changed), change=True),
                chosen=_change_answer(run.worker_report, chosen),
                rejected=_change_answer(failed.worker_report, (failed.change or {}).get("diff") or ""),
                provenance={**common, "session_id": run.session_id, "pre_state": _pre_state(failed, 0, base)},
            )
    return _store_dpo(
        f"dpo:runs:{failed.pk}:{run.pk}", run, chosen=run.worker_report, rejected=failed.worker_report, **common
    )


def _within_run_pairs(run: SkillRun, stores: dict[str, ContentStore]) -> list[Stored]:
    attempts = [a for a in (run.attempt_log or []) if isinstance(a, dict) and a.get("report") is not None]
    rejected = [a for a in attempts if a.get("verified") is False]
    passed = [a for a in attempts if a.get("verified") is True]
    if not rejected or not passed:
        return []
    chosen = passed[-1]
    earlier = [a for a in rejected if (a.get("attempt") or 0) < (chosen.get("attempt") or 0)]
    if not earlier:
        return []
    worst = earlier[-1]
    key = f"dpo:attempts:{run.pk}:{worst.get('attempt')}:{chosen.get('attempt')}"
    common = {
        "origin": "attempts",
        "runs": [run.pk],
        "models": [run.model] if run.model else [],
        "answered_by": {"chosen": run.model, "rejected": run.model},
        "verification": {"rejected": _verification(run, worst), "chosen": _verification(run, chosen)},
    }
    if _has_change(run) and "change" in worst:
        store = _store_for(run, stores)
        base_attempt = (worst.get("attempt") or 1) - 1
        base, target = _recorded_state(run, base_attempt), _recorded_state(run, chosen.get("attempt"))
        chosen_diff = diff_between(base, target, store, cap=settings.SUPERVISOR_DIFF_CAP)
        if chosen_diff is not None:
            changed = _changed_paths(base, target) | {f["path"] for f in worst["change"].get("files") or []}
            return [
                _store(
                    key,
                    kind="dpo",
                    skill=run.skill,
                    prompt=prompt_messages(run, _prompt_files(run, base, store, changed), change=True),
                    chosen=_change_answer(chosen["report"], chosen_diff),
                    rejected=_change_answer(worst["report"], worst["change"].get("diff") or ""),
                    provenance={
                        **common,
                        "session_id": run.session_id,
                        "pre_state": _pre_state(run, base_attempt, base),
                    },
                )
            ]
    return [_store_dpo(key, run, chosen=chosen["report"], rejected=worst["report"], **common)]


def _routing_prompt(request: Any) -> list[Message] | None:
    messages = request.get("messages") if isinstance(request, dict) else request
    if not isinstance(messages, list) or not messages:
        return None
    cleaned = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            return None
        cleaned.append({"role": message.get("role", "user"), "content": message["content"]})
    return cleaned


def extract_from_routing(session_id: str | None) -> list[Stored]:
    """Fail-open retries whose first model answered but failed the check while the retry passed."""
    retries = RoutingEntry.objects.filter(
        attempt_of__isnull=False, status=RoutingEntry.Status.PASS, attempt_of__status=RoutingEntry.Status.FAIL
    )
    if session_id:
        retries = retries.filter(session_id=session_id)
    stored: list[Stored] = []
    for retry in retries.select_related("attempt_of").order_by("created_at", "id"):
        failed = cast(RoutingEntry, retry.attempt_of)  # the filter keeps only retries (attempt_of is set)
        prompt = _routing_prompt(retry.request) or _routing_prompt(failed.request)
        if prompt is None or not retry.response or not failed.response:
            continue
        stored.append(
            _store(
                f"dpo:routing:{failed.pk}:{retry.pk}",
                kind="dpo",
                skill=retry.skill,
                prompt=prompt,
                chosen=[{"role": "assistant", "content": retry.response}],
                rejected=[{"role": "assistant", "content": failed.response}],
                provenance={
                    "origin": "routing",
                    "session_id": retry.session_id,
                    "routing_entries": [failed.pk, retry.pk],
                    "models": [failed.model, retry.model],
                    # the model whose answer each side is (the entries record the model really asked)
                    "answered_by": {"chosen": retry.model, "rejected": failed.model},
                    "verification": {
                        "rejected": {"status": failed.status, "error": failed.error},
                        "chosen": {"status": retry.status},
                    },
                },
            )
        )
    return stored


# --- apply: each committed patch, and a patch the tests refused for the same finding -------------


_Finding = tuple[str, Any, Any]  # project root, file, bug fingerprint
_Patch = tuple[SkillRun, JSON, Mapping[str, str]]  # the apply run, its attempt entry, the file hashes before


class _ApplyPatches:
    """Patches of apply runs by finding (project, file, bug fingerprint): applied ones and ones the tests refused."""

    def __init__(self) -> None:
        self.applied: dict[_Finding, list[_Patch]] = {}
        self.refused: dict[_Finding, list[_Patch]] = {}

    @staticmethod
    def key(run: SkillRun, entry: JSON) -> _Finding:
        return run.project_root, entry.get("file"), entry.get("fingerprint")


def _apply_entries(run: SkillRun) -> list[JSON]:
    return [e for e in run.attempt_log or [] if isinstance(e, dict) and isinstance(e.get("attempt"), int)]


def _finding_task(run: SkillRun, entry: JSON) -> str:
    source = (run.change or {}).get("source_run_id")
    quote = str(entry.get("quote") or "")
    return (
        f"Fix this grounded review finding{f' (review run {source})' if source else ''} with the smallest patch.\n"
        f"File: {entry.get('file')}, line {entry.get('line')}\n"
        f"Kind: {entry.get('kind') or entry.get('severity') or ''}\n"
        f"Title: {entry.get('title') or ''}\n"
        f"Rationale: {entry.get('rationale') or ''}\n"
        f"Quoted code:\n```\n{quote}{'' if quote.endswith(chr(10)) else chr(10)}```"
    )


def _apply_prompt(
    run: SkillRun, entry: JSON, before: Mapping[str, str], store: ContentStore, changed: set[str]
) -> list[Message]:
    return prompt_messages(run, _prompt_files(run, before, store, changed), change=True, task=_finding_task(run, entry))


def _apply_answer(entry: JSON, diff: str) -> list[Message]:
    return _change_answer({"summary": f"Fix: {entry.get('title') or 'the finding'}"}, diff)


def _apply_examples(run: SkillRun, stores: dict[str, ContentStore], patches: _ApplyPatches) -> list[Stored]:
    """One SFT example per committed patch (the supervisor's tests passed on it); refused-by-tests patches noted."""
    if "pre_state" not in (run.change or {}):
        return []
    stored: list[Stored] = []
    store = _store_for(run, stores)
    for entry in _apply_entries(run):
        before = _recorded_state(run, entry["attempt"] - 1)
        if entry.get("outcome") == "applied" and isinstance(entry.get("change"), dict):
            patches.applied.setdefault(_ApplyPatches.key(run, entry), []).append((run, entry, before))
            diff = entry["change"].get("diff") or ""
            changed = {f["path"] for f in entry["change"].get("files") or []}
            stored.append(
                _store(
                    f"sft:apply:{run.pk}:{entry['attempt']}",
                    kind="sft",
                    skill="apply",
                    prompt=_apply_prompt(run, entry, before, store, changed),
                    completion=_apply_answer(entry, diff),
                    provenance={
                        "origin": "apply",
                        "session_id": run.session_id,
                        "runs": [r for r in ((run.change or {}).get("source_run_id"), run.pk) if r],
                        "models": [],
                        "finding": {
                            k: entry.get(k) for k in ("file", "line", "title", "kind", "fingerprint", "commit")
                        },
                        "verification": {**_verification(run, entry), "gates": entry.get("gates") or []},
                        "pre_state": _pre_state(run, entry["attempt"] - 1, before),
                        "change": _change_facts(entry["change"]),
                    },
                )
            )
        elif entry.get("gate") == "tests" and isinstance(entry.get("attempted_change"), dict):
            patches.refused.setdefault(_ApplyPatches.key(run, entry), []).append((run, entry, before))
    return stored


def _apply_pairs(patches: _ApplyPatches, stores: dict[str, ContentStore]) -> list[Stored]:
    """DPO: a patch the tests refused (rejected) and a committed patch for the same finding (chosen).

    Both sides must start from the same files: every file either patch touches has the same content in the
    refused patch's pre-state and the committed one's (which the pair records, and trainer_verify rebuilds).
    """
    stored: list[Stored] = []
    for key, refused in patches.refused.items():
        for bad_run, bad, bad_before in refused:
            bad_files = {f["path"] for f in bad["attempted_change"].get("files") or []}
            for run, good, before in patches.applied.get(key, []):
                changed = bad_files | {f["path"] for f in good["change"].get("files") or []}
                if any(bad_before.get(path) != before.get(path) for path in changed):
                    continue
                store = _store_for(run, stores)
                stored.append(
                    _store(
                        f"dpo:apply:{bad_run.pk}:{bad['attempt']}:{run.pk}:{good['attempt']}",
                        kind="dpo",
                        skill="apply",
                        prompt=_apply_prompt(run, good, before, store, changed),
                        chosen=_apply_answer(good, good["change"].get("diff") or ""),
                        rejected=_apply_answer(bad, bad["attempted_change"].get("diff") or ""),
                        provenance={
                            "origin": "apply",
                            "session_id": run.session_id,
                            "runs": sorted({bad_run.pk, run.pk}),
                            "models": [],
                            "finding": {k: good.get(k) for k in ("file", "line", "title", "kind", "fingerprint")},
                            "verification": {
                                "rejected": _verification(bad_run, bad),
                                "chosen": _verification(run, good),
                            },
                            "pre_state": _pre_state(run, good["attempt"] - 1, before),
                        },
                    )
                )
                break  # one pair per refused patch
    return stored
