"""brain_export also writes the approved training examples under training-data/."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from model_bakery import baker

from sessions.models import TrainingExample

pytestmark = pytest.mark.django_db

PROMPT = [{"role": "system", "content": "You write failing tests."}, {"role": "user", "content": "add(a, b)"}]
ANSWER = [{"role": "assistant", "content": "def test_add(): assert add(2, 3) == 5"}]
WORSE = [{"role": "assistant", "content": "def test_add(): assert True"}]


def test_brain_export_writes_approved_examples_in_trl_shapes(tmp_path):
    baker.make(TrainingExample, kind="sft", prompt=PROMPT, completion=ANSWER, status="approved", source_key="a")
    baker.make(TrainingExample, kind="sft", prompt=PROMPT, completion=WORSE, status="candidate", source_key="b")
    baker.make(
        TrainingExample, kind="dpo", prompt=PROMPT, chosen=ANSWER, rejected=WORSE, status="approved", source_key="c"
    )

    call_command("brain_export", str(tmp_path), "--no-progress")

    sft = [json.loads(line) for line in (tmp_path / "training-data" / "sft.jsonl").read_text().splitlines()]
    dpo = [json.loads(line) for line in (tmp_path / "training-data" / "dpo.jsonl").read_text().splitlines()]
    assert sft == [{"messages": PROMPT + ANSWER}]
    assert dpo == [{"prompt": PROMPT, "chosen": ANSWER, "rejected": WORSE}]


def test_brain_export_writes_no_training_data_folder_when_nothing_is_approved(tmp_path):
    baker.make(TrainingExample, kind="sft", prompt=PROMPT, completion=ANSWER, status="candidate", source_key="a")
    call_command("brain_export", str(tmp_path), "--no-progress")
    assert not (tmp_path / "training-data").exists()
