"""Approved training examples written as JSONL in the shapes TRL's trainers read.

    export_examples(out, kind=, status=) -> summary (each record validated; a bad one is left out and reported)
    export_training_data_dir(folder)     -> {"sft": summary, "dpo": summary}, for brain_export's training-data/

SFT records are `{"messages": [...]}` (SFTTrainer, conversational); DPO
records are `{"prompt", "chosen", "rejected"}` message lists (DPOTrainer,
conversational with an explicit prompt). A file is rewritten only when its
content changes.
"""

from __future__ import annotations

import json
from pathlib import Path

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
