"""Approved training examples written as JSONL in the shapes TRL's trainers read.

    export_examples(out, kind=, status=) -> summary (each record validated; a bad one is left out and reported)
    export_training_data_dir(folder)     -> {"sft": summary, "dpo": summary}, for brain_export's training-data/
    export_dataset(folder, kinds=...)    -> a dataset folder: <kind>/train.jsonl, <kind>/eval.jsonl, README.md

Examples whose replay failed (`replay_status=invalid`, see trainer_verify)
are left out unless `include_invalid=True`. A dataset's train and eval
splits share no near-duplicate prompt: prompts are grouped (same words after
normalising, or word-trigram Jaccard >= NEAR_DUPLICATE_JACCARD) and a whole
group goes to one split. Its README.md is a dataset card (counts by kind,
skill and model, provenance, redaction summary, licence) that
`datasets.load_dataset` reads along with the JSON files.

SFT records are `{"messages": [...]}` (SFTTrainer, conversational); DPO
records are `{"prompt", "chosen", "rejected"}` message lists (DPOTrainer,
conversational with an explicit prompt). A file is rewritten only when its
content changes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

import yaml
from django.conf import settings
from django.utils import timezone
from jsonschema import Draft202012Validator

from hyperguild.lib.schema import format_schema_error, schema_problems
from sessions.models import TrainingExample

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


class SftRecord(TypedDict):
    """One line of TRL's conversational SFT format."""

    messages: list[dict[str, Any]]


class DpoRecord(TypedDict):
    """One line of TRL's conversational preference (DPO) format."""

    prompt: list[dict[str, Any]]
    chosen: list[dict[str, Any]]
    rejected: list[dict[str, Any]]


class InvalidExample(TypedDict):
    id: int
    errors: list[str]


class ExamplesExport(TypedDict):
    """What `export_examples` wrote (printed by trainer_export, kept in a brain export's summary)."""

    path: str
    kind: str
    status: str
    written: int
    invalid: list[InvalidExample]  # left out: they do not fit TRL's shape
    left_out_not_replaying: int


class TrainingDataExport(TypedDict):
    sft: ExamplesExport
    dpo: ExamplesExport


class KindSplit(TypedDict):
    train: int
    eval: int
    left_out_not_replaying: int


class DatasetExport(TypedDict):
    path: str
    kinds: dict[str, KindSplit]  # by kind (sft, dpo)
    invalid: list[InvalidExample]


def trl_record(example: TrainingExample) -> SftRecord | DpoRecord:
    if example.kind == TrainingExample.Kind.SFT:
        return {"messages": [*example.prompt, *example.completion]}
    return {"prompt": example.prompt, "chosen": example.chosen, "rejected": example.rejected}


def trl_errors(kind: str, record: Mapping[str, Any]) -> list[str]:
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


def export_examples(
    out: Path | str, *, kind: str, status: str = TrainingExample.Status.APPROVED, include_invalid: bool = False
) -> ExamplesExport:
    """Write TRL JSONL for `kind` examples with `status`; a record that fails its schema is left out and reported."""
    if kind not in TRL_SCHEMAS:
        raise ValueError(f"kind must be sft or dpo, not {kind!r}.")
    if status not in TrainingExample.Status.values:
        raise ValueError(f"status must be one of {', '.join(TrainingExample.Status.values)}.")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written, invalid = 0, list[InvalidExample]()
    lines = []
    examples = TrainingExample.objects.filter(kind=kind, status=status)
    left_out = 0
    if not include_invalid:
        left_out = examples.filter(replay_status=TrainingExample.ReplayStatus.INVALID).count()
        examples = examples.exclude(replay_status=TrainingExample.ReplayStatus.INVALID)
    for example in examples.order_by("id").iterator():
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
    return {
        "path": str(out),
        "kind": kind,
        "status": status,
        "written": written,
        "invalid": invalid,
        "left_out_not_replaying": left_out,
    }


def export_training_data_dir(folder: Path | str) -> TrainingDataExport:
    """`sft.jsonl` and `dpo.jsonl` of approved examples, for brain_export's `training-data/`."""
    folder = Path(folder)
    return {
        "sft": export_examples(folder / "sft.jsonl", kind="sft"),
        "dpo": export_examples(folder / "dpo.jsonl", kind="dpo"),
    }


# --- datasets: train/eval splits without near-duplicate prompts, and a dataset card ----------------

NEAR_DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"[a-z0-9_]+")


def prompt_text(example: TrainingExample) -> str:
    """What a near-duplicate is judged on: the prompt without its system line."""
    return "\n".join(m.get("content", "") for m in example.prompt or [] if m.get("role") != "system")


def _shingles(text: str) -> tuple[str, frozenset[str]]:
    words = _WORD.findall(text.lower())
    grams = frozenset(" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2)))
    return " ".join(words), grams


def near_duplicate_groups(texts: list[str]) -> list[int]:
    """A group number per text; texts with the same words, or word-trigram Jaccard >= NEAR_DUPLICATE_JACCARD, share one.

    Candidates come from prefix filtering (trigrams ordered rarest first: two sets that similar must share one
    of their first |A| - ceil(t|A|) + 1 trigrams), then each candidate pair's Jaccard is computed exactly.
    """
    parent = list(range(len(texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [_shingles(text) for text in texts]
    first_by_key: dict[str, int] = {}
    for i, (key, _) in enumerate(keys):
        if key in first_by_key:
            parent[find(i)] = find(first_by_key[key])
        else:
            first_by_key[key] = i
    distinct = list(first_by_key.values())
    frequency = Counter(gram for i in distinct for gram in keys[i][1])
    index: dict[str, list[int]] = {}
    threshold = NEAR_DUPLICATE_JACCARD
    for a in distinct:
        grams_a = keys[a][1]
        ordered = sorted(grams_a, key=lambda gram: (frequency[gram], gram))
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]
        candidates = {b for gram in prefix for b in index.get(gram, ())}
        for b in candidates:
            grams_b = keys[b][1]
            small, large = sorted((len(grams_a), len(grams_b)))
            if small < threshold * large:
                continue
            union = len(grams_a | grams_b)
            if union and len(grams_a & grams_b) / union >= threshold:
                parent[find(b)] = find(a)
        for gram in prefix:
            index.setdefault(gram, []).append(a)
    return [find(i) for i in range(len(texts))]


def split_examples(
    examples: list[TrainingExample], *, eval_share: float
) -> tuple[list[TrainingExample], list[TrainingExample]]:
    """(train, eval): each near-duplicate group goes whole to one split, chosen by a hash of its first prompt."""
    texts = [prompt_text(example) for example in examples]
    groups = near_duplicate_groups(texts)
    members: dict[int, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    buckets = {g: int(hashlib.sha1(texts[min(m)].encode()).hexdigest(), 16) % 10_000 for g, m in members.items()}
    in_eval = {g for g, bucket in buckets.items() if bucket < eval_share * 10_000}
    if not in_eval and eval_share > 0 and len(members) >= 2:
        in_eval = {min(buckets, key=buckets.__getitem__)}  # a non-empty eval split whenever there are two groups
    if len(in_eval) == len(members) and len(members) >= 2:
        in_eval.discard(max(buckets, key=buckets.__getitem__))  # and a non-empty train split
    train = [examples[i] for g, m in sorted(members.items()) if g not in in_eval for i in m]
    evaluation = [examples[i] for g, m in sorted(members.items()) if g in in_eval for i in m]
    return sorted(train, key=lambda e: e.pk), sorted(evaluation, key=lambda e: e.pk)


def _write_jsonl(path: Path, examples: list[TrainingExample]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(trl_record(example), ensure_ascii=False) + "\n" for example in examples)
    if not path.exists() or path.read_text(encoding="utf-8") != data:
        path.write_text(data, encoding="utf-8")


def export_dataset(
    folder: Path | str,
    *,
    kinds: tuple[str, ...] = ("sft", "dpo"),
    status: str = TrainingExample.Status.APPROVED,
    include_invalid: bool = False,
    eval_share: float = 0.1,
    license: str | None = None,
) -> DatasetExport:
    """<kind>/train.jsonl and <kind>/eval.jsonl per kind, plus README.md (the dataset card)."""
    if not 0 <= eval_share < 1:
        raise ValueError("eval_share must be at least 0 and below 1.")
    for kind in kinds:
        if kind not in TRL_SCHEMAS:
            raise ValueError(f"kind must be sft or dpo, not {kind!r}.")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    summary: DatasetExport = {"path": str(folder), "kinds": {}, "invalid": []}
    exported: list[TrainingExample] = []
    for kind in kinds:
        examples = TrainingExample.objects.filter(kind=kind, status=status).order_by("id")
        left_out = 0
        if not include_invalid:
            left_out = examples.filter(replay_status=TrainingExample.ReplayStatus.INVALID).count()
            examples = examples.exclude(replay_status=TrainingExample.ReplayStatus.INVALID)
        fitting = []
        for example in examples:
            errors = trl_errors(kind, trl_record(example))
            if errors:
                summary["invalid"].append({"id": example.pk, "errors": errors})
            else:
                fitting.append(example)
        train, evaluation = split_examples(fitting, eval_share=eval_share)
        _write_jsonl(folder / kind / "train.jsonl", train)
        _write_jsonl(folder / kind / "eval.jsonl", evaluation)
        summary["kinds"][kind] = {"train": len(train), "eval": len(evaluation), "left_out_not_replaying": left_out}
        exported += fitting
    card = dataset_card(exported, summary, status=status, license=license or settings.TRAINER_DATASET_LICENSE)
    (folder / "README.md").write_text(card, encoding="utf-8")
    return summary


def dataset_card(examples: list[TrainingExample], summary: DatasetExport, *, status: str, license: str) -> str:
    """A Hugging Face dataset card: YAML header (licence, configs with their splits) and what the data holds."""
    configs = [
        {
            "config_name": kind,
            "data_files": [
                {"split": "train", "path": f"{kind}/train.jsonl"},
                {"split": "eval", "path": f"{kind}/eval.jsonl"},
            ],
        }
        for kind in summary["kinds"]
    ]
    header = yaml.safe_dump({"license": license, "configs": configs, "tags": ["hyperguild", "trl"]}, sort_keys=False)
    by_kind = Counter(e.kind for e in examples)
    by_skill = Counter((e.kind, e.skill or "-") for e in examples)
    by_model: Counter[tuple[str, str]] = Counter()
    for example in examples:
        for model in (example.provenance or {}).get("models") or ["(none recorded)"]:
            by_model[(example.kind, model)] += 1
    origins = Counter((example.provenance or {}).get("origin", "?") for example in examples)
    replay = Counter(example.replay_status for example in examples)
    sessions = {(e.provenance or {}).get("session_id") for e in examples} - {None, ""}
    runs = {run for e in examples for run in (e.provenance or {}).get("runs") or []}
    redactions: Counter[str] = Counter()
    for example in examples:
        for flag in example.flags or []:
            if isinstance(flag, dict) and flag.get("pattern"):
                redactions[flag["pattern"]] += int(flag.get("count") or 1)

    def table(title: str, rows: Iterable[Iterable[object]], columns: tuple[str, ...]) -> str:
        lines = [f"### {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] or [
            "| " + " | ".join("-" for _ in columns) + " |"
        ]
        return "\n".join(lines) + "\n"

    splits = [(kind, s["train"], s["eval"], s["left_out_not_replaying"]) for kind, s in summary["kinds"].items()]
    body = [
        "# hyperguild training data",
        "",
        f"Exported {timezone.now().isoformat(timespec='seconds')} from hyperguild: {status} examples, in the "
        "conversational shapes TRL's SFTTrainer (`messages`) and DPOTrainer (`prompt`, `chosen`, `rejected`) read. "
        'Load one config with `datasets.load_dataset("json", data_files={"train": "sft/train.jsonl", '
        '"eval": "sft/eval.jsonl"})`.',
        "",
        f"Licence: **{license}**",
        "",
        table("Splits", splits, ("kind", "train", "eval", "left out: did not replay")),
        "Train and eval share no near-duplicate prompt (same words, or word-trigram Jaccard >= "
        f"{NEAR_DUPLICATE_JACCARD}).",
        "",
        "## Counts",
        "",
        table("By kind", sorted(by_kind.items()), ("kind", "examples")),
        table("By skill", [(k, s, n) for (k, s), n in sorted(by_skill.items())], ("kind", "skill", "examples")),
        table("By model", [(k, m, n) for (k, m), n in sorted(by_model.items())], ("kind", "model", "examples")),
        "## Provenance",
        "",
        "Every example comes from work the hyperguild supervisor verified itself: a skill run whose tests it ran "
        "(TDD phases, debug), a review whose findings it grounded in the files, or a routed answer that passed its "
        "check after another model's failed. A TDD or debug example's answer is the change the worker made (a "
        "unified diff), replayed by `trainer_verify` on the recorded pre-state before export. Each record's full "
        "provenance (runs, models, pre-state, verification) is kept in hyperguild.",
        "",
        f"- sessions: {len(sessions)}; skill runs: {len(runs)}",
        f"- origins: {', '.join(f'{k} {v}' for k, v in sorted(origins.items())) or 'none'}",
        f"- replay: {', '.join(f'{k} {v}' for k, v in sorted(replay.items())) or 'none'}",
        "",
        "## Redaction",
        "",
        "Secrets (AWS keys, API tokens, private keys, bearer tokens, `api_key=`-style assignments and the "
        "operator's TRAINER_SECRET_PATTERNS_FILE) were replaced with `[REDACTED:<pattern>]` before anything was "
        "stored.",
        "",
        table("Redactions in these examples", sorted(redactions.items()), ("pattern", "count")),
    ]
    return "---\n" + header + "---\n\n" + "\n".join(body)
