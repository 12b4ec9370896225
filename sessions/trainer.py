"""Trainer: verified skill runs → SFT and DPO candidates; export in TRL's shapes.

    run_trainer(session_id=None) -> result dict     (idempotent: `source_key`)
    export_examples(out, kind=, status=) -> summary (TRL JSONL, validated per record)
    export_training_data_dir(folder) -> summary     (brain_export's training-data/)

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
with the task arguments.

Secrets are redacted before anything is stored (`redact`): AWS keys,
OpenAI/GitHub/Slack-style tokens, private key blocks, bearer tokens and
`api_key=...`-style assignments, plus one regex a line from
`TRAINER_SECRET_PATTERNS_FILE`. A redacted example is flagged and says why.
"""

from __future__ import annotations

import json
import re
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from jsonschema import Draft202012Validator

from hyperguild.lib.schema import format_schema_error, schema_problems
from sessions.actions import do_store_training_example
from sessions.models import TrainingExample
from supervisor.models import RoutingEntry, SkillRun
from supervisor.skills import empty_result

# (name, regex). A named group `secret` limits the redaction to that part.
DEFAULT_SECRET_PATTERNS: list[tuple[str, str]] = [
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("aws_secret_key", r"(?i)aws_secret_access_key\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9/+=]{40})"),
    ("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
    ("openai_key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("bearer_token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"),
    (
        "assigned_secret",
        r"(?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password)\b"
        r"['\"]?\s*[:=]\s*['\"]?(?P<secret>[^\s'\"]{8,})",
    ),
]
REDACTED = "[REDACTED:{name}]"

SYSTEM_PROMPT = "You are the hyperguild {skill} worker. Do the task and answer with the JSON report the supervisor asks for."
# Arguments that say how a run was made, not what was asked.
NOT_TASK_ARGUMENTS = frozenset({"model", "session_id"})
PREVIEW_CHARS = 500

MESSAGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role", "content"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
        "content": {"type": "string"},
    },
}
MESSAGES = {"type": "array", "minItems": 1, "items": MESSAGE_SCHEMA}
# What TRL's SFTTrainer (conversational) and DPOTrainer (conversational, explicit prompt) read.
TRL_SFT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["messages"],
    "properties": {"messages": MESSAGES},
}
TRL_DPO_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["prompt", "chosen", "rejected"],
    "properties": {"prompt": MESSAGES, "chosen": MESSAGES, "rejected": MESSAGES},
}
TRL_SCHEMAS = {"sft": Draft202012Validator(TRL_SFT_SCHEMA), "dpo": Draft202012Validator(TRL_DPO_SCHEMA)}


# -- secrets ------------------------------------------------------------------------------


def load_pattern_file(path: str) -> list[tuple[str, str]]:
    """One regex a line; blank lines and lines starting with # are ignored."""
    patterns = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            re.compile(text)
        except re.error as exc:
            raise ImproperlyConfigured(f"TRAINER_SECRET_PATTERNS_FILE {path}, line {number}: bad regex ({exc}).")
        patterns.append((f"custom_{number}", text))
    return patterns


@lru_cache(maxsize=4)
def _compiled(extra_file: str) -> tuple[tuple[str, re.Pattern], ...]:
    patterns = list(DEFAULT_SECRET_PATTERNS)
    if extra_file:
        patterns += load_pattern_file(extra_file)
    return tuple((name, re.compile(regex)) for name, regex in patterns)


def secret_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    return _compiled(settings.TRAINER_SECRET_PATTERNS_FILE or "")


def redact_text(text: str, found: dict[str, int]) -> str:
    for name, pattern in secret_patterns():
        replacement = REDACTED.format(name=name)

        def substitute(match: re.Match, name=name, replacement=replacement) -> str:
            found[name] = found.get(name, 0) + 1
            if "secret" in match.re.groupindex and match.group("secret") is not None:
                start, end = match.span("secret")
                offset = match.start()
                whole = match.group(0)
                return whole[: start - offset] + replacement + whole[end - offset :]
            return replacement

        text = pattern.sub(substitute, text)
    return text


def redact(value: Any, found: dict[str, int]) -> Any:
    """`value` with every string redacted; `found` counts hits per pattern name."""
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, list):
        return [redact(item, found) for item in value]
    if isinstance(value, dict):
        return {key: redact(item, found) for key, item in value.items()}
    return value


# -- building examples ----------------------------------------------------------------------


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
        "runner_output_tail": (output or "")[-PREVIEW_CHARS:],
        **({"attempt": attempt.get("attempt")} if attempt else {}),
    }


def _store(source_key: str, *, kind: str, skill: str, prompt, provenance: dict, **answers) -> tuple[TrainingExample, bool]:
    found: dict[str, int] = {}
    prompt = redact(prompt, found)
    flags = [{"field": "prompt", "pattern": n, "count": c} for n, c in sorted(found.items())]
    cleaned = {}
    for name, messages in answers.items():
        hits: dict[str, int] = {}
        cleaned[name] = redact(messages, hits)
        flags += [{"field": name, "pattern": n, "count": c} for n, c in sorted(hits.items())]
    provenance_hits: dict[str, int] = {}
    provenance = redact(provenance, provenance_hits)
    flags += [{"field": "provenance", "pattern": n, "count": c} for n, c in sorted(provenance_hits.items())]
    return do_store_training_example(
        source_key=source_key, kind=kind, skill=skill, prompt=prompt, provenance=provenance, flags=flags, **cleaned
    )


def _runs(session_id: str | None):
    runs = SkillRun.objects.finished().order_by("created_at", "id")
    return list(runs.in_session(session_id) if session_id else runs)


def _report_of(run) -> Any:
    return run.worker_report


def extract_from_runs(runs: list) -> list[tuple[TrainingExample, bool]]:
    stored = []
    pending_failures: dict[str, list] = {}
    for run in runs:
        report = _report_of(run)
        models = [run.model] if run.model else []
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
                        "models": models,
                        "verification": _verification(run),
                    },
                )
            )
            failed_before = pending_failures.pop(task_key(run), [])
            if failed_before:
                failed = failed_before[-1]  # the attempt closest to the one that worked
                stored.append(
                    _store(
                        f"dpo:runs:{failed.pk}:{run.pk}",
                        kind="dpo",
                        skill=run.skill,
                        prompt=prompt_messages(run),
                        chosen=_answer(report),
                        rejected=_answer(_report_of(failed)),
                        provenance={
                            "origin": "skill_runs",
                            "session_id": run.session_id,
                            "runs": [failed.pk, run.pk],
                            "models": sorted({m for m in (failed.model, run.model) if m}),
                            "verification": {"rejected": _verification(failed), "chosen": _verification(run)},
                        },
                    )
                )
        elif run.status == "fail" and run.verified is False and report is not None:
            pending_failures.setdefault(task_key(run), []).append(run)
        stored += _within_run_pairs(run)
    return stored


def _within_run_pairs(run) -> list[tuple[TrainingExample, bool]]:
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
        _store(
            f"dpo:attempts:{run.pk}:{worst.get('attempt')}:{chosen.get('attempt')}",
            kind="dpo",
            skill=run.skill,
            prompt=prompt_messages(run),
            chosen=_answer(chosen["report"]),
            rejected=_answer(worst["report"]),
            provenance={
                "origin": "attempts",
                "session_id": run.session_id,
                "runs": [run.pk],
                "models": [run.model] if run.model else [],
                "verification": {"rejected": _verification(run, worst), "chosen": _verification(run, chosen)},
            },
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


def extract_from_routing(session_id: str | None) -> list[tuple[TrainingExample, bool]]:
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


def _summary(example: TrainingExample, created: bool) -> dict:
    def text(messages: list[dict]) -> str:
        return "\n\n".join(m["content"] for m in messages)[:PREVIEW_CHARS]

    runs = example.provenance.get("runs") or []
    return {
        "id": example.pk,
        "kind": example.kind,
        "prompt": text([m for m in example.prompt if m["role"] != "system"] or example.prompt),
        "chosen": text(example.completion if example.kind == "sft" else example.chosen),
        "rejected": text(example.rejected) if example.kind == "dpo" else None,
        "source_run_id": runs[-1] if runs else None,
        "status": example.status,
        "flagged": example.flagged,
        "flags": example.flags,
        "created": created,
    }


def run_trainer(session_id: str | None = None, *, llm_model: str | None = None) -> dict:
    """Extract candidates from `session_id` (or every session). Safe to run again: nothing is stored twice.

    `llm_model` is accepted for symmetry with the other skills; extraction needs no model.
    """
    started = time.monotonic()
    runs = _runs(session_id)
    stored = extract_from_runs(runs) + extract_from_routing(session_id)
    new = [example for example, created in stored if created]
    flagged = [example for example in new if example.flagged]
    examples = [_summary(example, created) for example, created in stored]
    message = (
        f"{len(new)} new candidate(s) ({sum(e.kind == 'sft' for e in new)} SFT, {sum(e.kind == 'dpo' for e in new)} DPO), "
        f"{len(stored) - len(new)} already extracted, {len(flagged)} flagged for redacted secrets; "
        f"from {len(runs)} skill run(s)."
    )
    values = {
        "status": "pass",
        "model_used": "",
        "message": message,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "examples": examples,
        "count": len(examples),
        "created": len(new),
    }
    return empty_result("trainer", **values)


# -- export -----------------------------------------------------------------------------------


def trl_record(example: TrainingExample) -> dict:
    if example.kind == TrainingExample.Kind.SFT:
        return {"messages": [*example.prompt, *example.completion]}
    return {"prompt": example.prompt, "chosen": example.chosen, "rejected": example.rejected}


def trl_errors(kind: str, record: dict) -> list[str]:
    """Schema violations, then the conversational rules TRL relies on (who speaks last)."""
    errors = [format_schema_error(e) for e in schema_problems(TRL_SCHEMAS[kind], record)]
    if errors:
        return errors
    if kind == "sft":
        messages = record["messages"]
        if messages[-1]["role"] != "assistant" or all(m["role"] == "assistant" for m in messages):
            errors.append("messages: need a prompt and must end with the assistant's answer")
    else:
        if record["prompt"][-1]["role"] != "user":
            errors.append("prompt: must end with a user message")
        for name in ("chosen", "rejected"):
            if any(m["role"] != "assistant" for m in record[name]):
                errors.append(f"{name}: must hold only assistant messages")
    return errors


def export_examples(out: Path | str, *, kind: str, status: str = TrainingExample.Status.APPROVED) -> dict:
    """Write TRL JSONL for `kind` examples with `status`; a record that fails its schema is left out and reported."""
    if kind not in TRL_SCHEMAS:
        raise ValueError(f"kind must be sft or dpo, not {kind!r}.")
    if status not in TrainingExample.Status.values:
        raise ValueError(f"status must be one of {', '.join(TrainingExample.Status.values)}.")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written, invalid = 0, []
    lines = []
    for example in TrainingExample.objects.filter(kind=kind, status=status).order_by("id").iterator():
        record = trl_record(example)
        errors = trl_errors(kind, record)
        if errors:
            invalid.append({"id": example.pk, "errors": errors})
            continue
        lines.append(json.dumps(record, ensure_ascii=False))
        written += 1
    data = "".join(f"{line}\n" for line in lines).encode("utf-8")
    if not out.exists() or out.read_bytes() != data:
        out.write_bytes(data)
    return {"path": str(out), "kind": kind, "status": status, "written": written, "invalid": invalid}


def export_training_data_dir(folder: Path | str) -> dict:
    """`sft.jsonl` and `dpo.jsonl` of approved examples, for brain_export's `training-data/`."""
    folder = Path(folder)
    return {kind: export_examples(folder / f"{kind}.jsonl", kind=kind) for kind in ("sft", "dpo")}
