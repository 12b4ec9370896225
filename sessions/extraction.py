"""Training candidates from what the supervisor verified: SFT and DPO examples, stored redacted.

    extract_from_runs(runs)          -> [(TrainingExample, created)]
    extract_from_routing(session_id) -> [(TrainingExample, created)]

Where examples come from:
- **SFT**: a SkillRun that passed and that the supervisor verified itself
  (`status=pass, verified=True`) with a worker report: the prompt (below) →
  the worker's report as the assistant's answer.
- **DPO, across runs**: runs of the same task (skill, project root and
  arguments other than model/session) where one failed verification and a
  later one passed: rejected = the failed run's report, chosen = the passing.
- **DPO, within a run**: an attempt in `attempt_log` rejected by the
  supervisor followed by a verified attempt of the same run.
- **DPO, routing**: a RoutingEntry that answered but failed its check and
  was retried (fail-open) on the other model, whose answer passed: its
  stored request is the prompt, the two responses are rejected and chosen.

The prompt is rebuilt from what the run recorded (the worker's own prompt
text is not stored): a system line naming the skill and a user message
with the task arguments. Every example is keyed by its source
(`source_key`), so extracting again stores nothing twice. Secrets are
redacted (`sessions.redaction`) before anything is stored; a redacted
example is flagged and says which field and pattern.
"""

from __future__ import annotations

import json
from typing import Any

from sessions.actions import do_store_training_example
from sessions.models import TrainingExample
from sessions.redaction import redact_value
from supervisor.models import RoutingEntry, SkillRun

SYSTEM_PROMPT = "You are the hyperguild {skill} worker. Do the task and answer with the JSON report the supervisor asks for."
# Arguments that say how a run was made, not what was asked.
NOT_TASK_ARGUMENTS = frozenset({"model", "session_id"})
# How much of a runner's output an example's provenance keeps.
OUTPUT_TAIL_CHARS = 500

Stored = tuple[TrainingExample, bool]


def _as_text(report: Any) -> str:
    return report if isinstance(report, str) else json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True)


def task_arguments(run) -> dict:
    return {k: v for k, v in sorted((run.arguments or {}).items()) if k not in NOT_TASK_ARGUMENTS}


def task_key(run) -> str:
    return json.dumps([run.skill, run.project_root, task_arguments(run)], sort_keys=True, ensure_ascii=False)


def prompt_messages(run) -> list[dict]:
    task = "\n".join(f"{k}: {_as_text(v)}" for k, v in task_arguments(run).items())
    user = f"Skill: {run.skill}\n" + (f"Project root: {run.project_root}\n" if run.project_root else "") + task
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(skill=run.skill)},
        {"role": "user", "content": user.strip()},
    ]


def _answer(report: Any) -> list[dict]:
    return [{"role": "assistant", "content": _as_text(report)}]


def _verification(run, attempt: dict | None = None) -> dict:
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
    }


def _store(source_key: str, *, kind: str, skill: str, prompt, provenance: dict, **answers) -> Stored:
    """Redact every field, flag what was redacted (field, pattern, count), store once per `source_key`."""
    flags: list[dict] = []

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


def _store_dpo(source_key: str, run, *, chosen: Any, rejected: Any, origin: str, runs: list, models: list, verification: dict) -> Stored:
    """A DPO pair of two worker reports for the task of `run`."""
    return _store(
        source_key,
        kind="dpo",
        skill=run.skill,
        prompt=prompt_messages(run),
        chosen=_answer(chosen),
        rejected=_answer(rejected),
        provenance={"origin": origin, "session_id": run.session_id, "runs": runs, "models": models, "verification": verification},
    )


def finished_runs(session_id: str | None) -> list[SkillRun]:
    runs = SkillRun.objects.finished().order_by("created_at", "id")
    return list(runs.in_session(session_id) if session_id else runs)


def extract_from_runs(runs: list[SkillRun]) -> list[Stored]:
    stored = []
    pending_failures: dict[str, list] = {}
    for run in runs:
        report = run.worker_report
        if run.status == "pass" and run.verified is True and report is not None:
            stored.append(
                _store(
                    f"sft:run:{run.pk}",
                    kind="sft",
                    skill=run.skill,
                    prompt=prompt_messages(run),
                    completion=_answer(report),
                    provenance={
                        "origin": "skill_run",
                        "session_id": run.session_id,
                        "runs": [run.pk],
                        "models": [run.model] if run.model else [],
                        "verification": _verification(run),
                    },
                )
            )
            failed_before = pending_failures.pop(task_key(run), [])
            if failed_before:
                failed = failed_before[-1]  # the attempt closest to the one that worked
                stored.append(
                    _store_dpo(
                        f"dpo:runs:{failed.pk}:{run.pk}",
                        run,
                        chosen=report,
                        rejected=failed.worker_report,
                        origin="skill_runs",
                        runs=[failed.pk, run.pk],
                        models=sorted({m for m in (failed.model, run.model) if m}),
                        verification={"rejected": _verification(failed), "chosen": _verification(run)},
                    )
                )
        elif run.status == "fail" and run.verified is False and report is not None:
            pending_failures.setdefault(task_key(run), []).append(run)
        stored += _within_run_pairs(run)
    return stored


def _within_run_pairs(run: SkillRun) -> list[Stored]:
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
    return [
        _store_dpo(
            f"dpo:attempts:{run.pk}:{worst.get('attempt')}:{chosen.get('attempt')}",
            run,
            chosen=chosen["report"],
            rejected=worst["report"],
            origin="attempts",
            runs=[run.pk],
            models=[run.model] if run.model else [],
            verification={"rejected": _verification(run, worst), "chosen": _verification(run, chosen)},
        )
    ]


def _routing_prompt(request: Any) -> list[dict] | None:
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
    retries = RoutingEntry.objects.filter(attempt_of__isnull=False, status="pass", attempt_of__status="fail")
    if session_id:
        retries = retries.filter(session_id=session_id)
    stored = []
    for retry in retries.select_related("attempt_of").order_by("created_at", "id"):
        failed = retry.attempt_of
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
                    "verification": {"rejected": {"status": failed.status, "error": failed.error}, "chosen": {"status": retry.status}},
                },
            )
        )
    return stored
