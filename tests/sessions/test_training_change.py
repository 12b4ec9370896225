"""Training data that teaches: a run's change captured, turned into examples, replayed, exported as a dataset.

Real parts: the fake `claude` writes files in a real Python project, the
supervisor runs pytest itself, trainer_verify replays in a scratch folder
with pytest again, and the export is read back by Hugging Face `datasets`.
"""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from sessions.actions import do_approve_example, do_log_entry
from sessions.models import TrainingExample
from sessions.trainer import run_trainer
from supervisor.models import SkillRun
from tests.fakes.helpers import run_skill_inline
from tests.supervisor.conftest import allowed_root, fake_claude, python_project  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

SESSION = "teach-1"
FAILING_TEST = "from calc import add\n\n\ndef test_add_sums_two_numbers():\n    assert add(2, 3) == 5\n"
WRONG_IMPL = "def double(x):\n    return 2 * x\n\n\ndef add(a, b):\n    return a - b\n"
RIGHT_IMPL = "def double(x):\n    return 2 * x\n\n\ndef add(a, b):\n    return a + b\n"


def report(summary: str, path: str) -> dict:
    return {"status": "done", "file_path": path, "summary": summary}


def run(skill: str, arguments: dict) -> SkillRun:
    return run_skill_inline(skill, {**arguments, "session_id": SESSION})


@pytest.fixture
def red_then_failed_green_then_green(fake_claude, python_project, settings):  # noqa: F811
    """tdd_red writes a test; a first tdd_green writes a wrong add (not verified); a second writes the right one."""
    fake_claude.script(
        [
            {
                "write": {"tests/test_add.py": FAILING_TEST},
                "report": report("wrote a failing test for add", "tests/test_add.py"),
            },
            {"write": {"calc.py": WRONG_IMPL}, "report": report("add subtracts", "calc.py")},
            {"write": {"calc.py": RIGHT_IMPL}, "report": report("add returns the sum", "calc.py")},
        ]
    )
    root = str(python_project)
    do_log_entry(SESSION, kind="start", message="add(a, b), test first")
    red = run("tdd_red", {"project_root": root, "spec": "add(a, b) returns the sum", "test_path": "tests/test_add.py"})
    settings.SUPERVISOR_MAX_ATTEMPTS = 1
    task = {"project_root": root, "test_path": "tests/test_add.py", "impl_path": "calc.py"}
    failed = run("tdd_green", task)
    passed = run("tdd_green", task)
    assert (red.status, failed.status, passed.status) == ("pass", "fail", "pass")
    return red, failed, passed


def verify(*args) -> str:
    out = StringIO()
    call_command("trainer_verify", *args, stdout=out)
    return out.getvalue()


def check_recorded_change(red: SkillRun, passed: SkillRun) -> None:
    """A TDD run records pre-state hashes, the bytes before, the diff and the supervisor's test runs before/after."""
    change = passed.change
    assert change["test_cmd"] and "pytest" in change["test_cmd"]
    assert change["before"]["exit_code"] != 0 and change["after"]["exit_code"] == 0  # the supervisor's own runs
    assert "test_add_sums_two_numbers" in change["before"]["output"]
    assert set(change["pre_state"]) >= {"calc.py", "tests/test_add.py", "pyproject.toml"}
    assert [(f["path"], f["status"]) for f in change["files"]] == [("calc.py", "modified")]
    assert "-    return a - b\n+    return a + b\n" in change["diff"] and change["truncated"] is False
    assert change["blobs"][change["files"][0]["before"]] == WRONG_IMPL  # the bytes before the worker
    assert red.change["files"] == [
        {
            "path": "tests/test_add.py",
            "status": "added",
            "before": None,
            "after": red.change["files"][0]["after"],
            "binary": False,
        }
    ]
    assert "new file mode" in red.change["diff"] and "--- /dev/null" in red.change["diff"]
    assert passed.attempt_log[0]["change"]["diff"] == change["diff"]


def test_red_green_gives_sft_with_the_diff_and_a_dpo_pair_of_differing_changes_that_replay(
    red_then_failed_green_then_green, tmp_path, client
):
    red, failed, passed = red_then_failed_green_then_green
    check_recorded_change(red, passed)
    run_trainer(SESSION)

    green_sft = TrainingExample.objects.get(source_key=f"sft:run:{passed.pk}")
    completion = green_sft.completion[0]["content"]
    assert completion.startswith("add returns the sum\n\n```diff\n")
    assert "+    return a + b" in completion and "--- a/calc.py" in completion
    user = green_sft.prompt[-1]["content"]
    assert "Files before the change:" in user and "return a - b" in user and "def test_add_sums_two_numbers" in user
    # One answer shape, asked for once (issue 31): the system line asks for the summary and the diff, and
    # nothing in the prompt asks for the JSON report as well.
    system = green_sft.prompt[0]["content"]
    assert "one-line summary, then the change as a unified diff" in system
    assert "JSON report" not in system and "Answer with" not in user
    provenance = green_sft.provenance
    assert provenance["runs"] == [passed.pk] and provenance["pre_state"]["run"] == passed.pk
    assert provenance["verification"]["exit_code_after"] == 0 and provenance["verification"]["test_cmd"]

    red_sft = TrainingExample.objects.get(source_key=f"sft:run:{red.pk}")
    assert "+++ b/tests/test_add.py" in red_sft.completion[0]["content"]

    dpo = TrainingExample.objects.get(source_key=f"dpo:runs:{failed.pk}:{passed.pk}")
    chosen, rejected = dpo.chosen[0]["content"], dpo.rejected[0]["content"]
    assert "+    return a + b" in chosen and "+    return a - b" in rejected and chosen != rejected
    assert dpo.provenance["pre_state"]["run"] == failed.pk  # both sides apply to the failed run's pre-state
    assert dpo.provenance["answered_by"] == {"chosen": passed.model, "rejected": failed.model}

    output = verify()
    assert "3 valid, 0 invalid" in output, output
    for example in (red_sft, green_sft, dpo):
        example.refresh_from_db()
        assert example.replay_status == "valid", example.replay
    assert dpo.replay["sides"]["chosen"]["verifies"] is True and dpo.replay["sides"]["rejected"]["verifies"] is False

    # The curation page shows the diffs, highlighted, side by side for DPO, with the replay result under each.
    client.force_login(get_user_model().objects.create_user("curator", password="x" * 12, is_staff=True))
    page = client.get(reverse("sessions-training-detail", args=[dpo.pk])).content.decode()
    assert 'class="grid two pair"' in page and "replay: replays" in page
    assert page.count('<pre class="diff">') == 2 and 'id="pair-diff"' not in page  # one diff a side, once (issue 31)
    assert 'id="replay-form"' in page
    assert (
        '<span class="d-add">+    return a + b</span>' in page
        and '<span class="d-add">+    return a - b</span>' in page
    )
    assert page.count("does not verify") == 1 and page.count(">verifies<") == 1
    timeline = client.get(reverse("sessions-detail", args=[SESSION])).content.decode()
    assert "change: 1 file(s)" in timeline and '<span class="d-del">-    return a - b</span>' in timeline

    # Tampering with a stored diff makes the example invalid, and an invalid example stays out of exports.
    sft = green_sft
    tampered = sft.completion[0]["content"].replace("+    return a + b", "+    return a * b")
    TrainingExample.objects.filter(pk=sft.pk).update(completion=[{"role": "assistant", "content": tampered}])
    dpo = TrainingExample.objects.get(kind="dpo")
    garbled = dpo.chosen[0]["content"].replace("+    return a + b", "+    return a + b + 1")
    TrainingExample.objects.filter(pk=dpo.pk).update(chosen=[{"role": "assistant", "content": garbled}])

    output = verify("--kind", "sft")
    assert "1 valid, 1 invalid" in output, output  # red still replays; the tampered green does not
    sft.refresh_from_db()
    assert sft.replay_status == "invalid" and "tests fail" in sft.replay["reason"]
    verify("--kind", "dpo", "--limit", "1")
    dpo.refresh_from_db()
    assert dpo.replay_status == "invalid" and "chosen does not verify" in dpo.replay["reason"]

    for example in TrainingExample.objects.all():
        do_approve_example(example, reviewer=None)
    out = StringIO()
    call_command("trainer_export", str(tmp_path / "sft.jsonl"), kind="sft", stdout=out)
    lines = (tmp_path / "sft.jsonl").read_text().splitlines()
    assert len(lines) == 1 and "return a * b" not in lines[0] and "1 left out" in out.getvalue()
    call_command("trainer_export", str(tmp_path / "all.jsonl"), kind="sft", include_invalid=True, stdout=StringIO())
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 2


def test_the_exported_dataset_loads_with_hf_datasets_and_its_splits_share_no_prompt(tmp_path):
    from datasets import load_dataset

    def example(kind: str, skill: str, key: str, text: str, **fields) -> None:
        answer = [{"role": "assistant", "content": f"answer to {key}"}]
        sides = (
            {"completion": answer}
            if kind == "sft"
            else {"chosen": answer, "rejected": [{"role": "assistant", "content": "no"}]}
        )
        TrainingExample.objects.create(
            kind=kind,
            skill=skill,
            source_key=key,
            prompt=[{"role": "system", "content": "sys"}, {"role": "user", "content": text}],
            provenance={"models": ["sonnet"], "runs": [len(key)], "session_id": SESSION, "origin": "skill_run"},
            status="approved",
            **sides,
            **fields,
        )

    example("sft", "tdd_red", "red", "Skill: tdd_red\nspec: add returns the sum")
    example("dpo", "tdd_green", "pair", "Skill: tdd_green\nspec: add returns the sum")
    example("sft", "tdd_green", "bad", "Skill: tdd_green\nspec: does not replay", replay_status="invalid")
    # Near-duplicate prompts (same words, other case and spacing) beside distinct ones.
    for n in range(12):
        text = f"Skill: tdd_green\nspec: make feature {n // 2} work"
        if n % 2:
            text = "  " + text.upper().replace("\n", "  \n ")
        example(
            "sft",
            "tdd_green",
            f"extra-{n}",
            text,
            flags=[{"field": "prompt", "pattern": "openai_key", "count": 1}] if n == 0 else [],
        )

    out = StringIO()
    call_command("trainer_export", str(tmp_path / "ds"), eval_share=0.3, license="apache-2.0", stdout=out)

    sft = load_dataset(
        "json", data_files={"train": str(tmp_path / "ds/sft/train.jsonl"), "eval": str(tmp_path / "ds/sft/eval.jsonl")}
    )
    assert sft["train"].num_rows + sft["eval"].num_rows == 13  # the example that does not replay is left out
    assert sft["train"].num_rows > 0 and sft["eval"].num_rows > 0
    dpo = load_dataset("json", data_files=str(tmp_path / "ds/dpo/train.jsonl"))["train"]
    dpo_eval = (tmp_path / "ds/dpo/eval.jsonl").read_text().splitlines()
    assert (dpo.num_rows, dpo_eval) == (1, []) and set(dpo.column_names) == {"prompt", "chosen", "rejected"}

    def normalised(row) -> str:
        return " ".join(re.findall(r"[a-z0-9_]+", " ".join(m["content"] for m in row["messages"][:-1]).lower()))

    train_prompts = {normalised(row) for row in sft["train"]}
    eval_prompts = {normalised(row) for row in sft["eval"]}
    assert train_prompts.isdisjoint(eval_prompts)

    card = (tmp_path / "ds/README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n")
    assert "| sft | tdd_green | 12 |" in card and "| sft | tdd_red | 1 |" in card and "| dpo | tdd_green | 1 |" in card
    assert "| openai_key | 1 |" in card and "## Provenance" in card and "sessions: 1" in card
    assert json.loads((tmp_path / "ds/sft/train.jsonl").read_text().splitlines()[0])["messages"]


def test_near_duplicate_prompts_share_a_group_so_they_never_straddle_the_split():
    from sessions.trl_export import near_duplicate_groups

    long = " ".join(f"word{n}" for n in range(60))
    texts = [
        long,
        long.replace("word30", "changed"),  # one word of sixty differs: a near duplicate
        long.upper().replace(" ", "   "),  # same words, other case and spacing
        " ".join(f"other{n}" for n in range(60)),
        "short prompt",
    ]
    groups = near_duplicate_groups(texts)
    assert groups[0] == groups[1] == groups[2]
    assert len({groups[0], groups[3], groups[4]}) == 3


def test_a_rejected_attempt_then_a_verified_one_in_one_run_gives_a_replayable_pair(fake_claude, python_project):  # noqa: F811
    (python_project / "tests" / "test_add.py").write_text(FAILING_TEST)  # red done by hand
    fake_claude.script(
        [
            {"write": {"calc.py": WRONG_IMPL}, "report": report("add subtracts", "calc.py")},
            {"write": {"calc.py": RIGHT_IMPL}, "report": report("add returns the sum", "calc.py")},
        ]
    )
    green = run("tdd_green", {"project_root": str(python_project), "test_path": "tests/test_add.py"})
    assert green.status == "pass" and [a["verified"] for a in green.attempt_log] == [False, True]
    assert "-    return a - b\n+    return a + b\n" in green.attempt_log[1]["change"]["diff"]

    run_trainer(SESSION)
    pair = TrainingExample.objects.get(source_key=f"dpo:attempts:{green.pk}:1:2")
    assert pair.provenance["pre_state"] == {**pair.provenance["pre_state"], "run": green.pk, "after_attempt": 0}
    assert "+    return a + b" in pair.chosen[0]["content"] and "+    return a - b" in pair.rejected[0]["content"]
    sft = TrainingExample.objects.get(source_key=f"sft:run:{green.pk}")
    assert "+    return a + b" in sft.completion[0]["content"] and "return a - b" not in sft.completion[0]["content"]

    assert "2 valid, 0 invalid" in verify()


def test_a_verified_debug_run_teaches_its_fix_as_a_diff_that_replays(fake_claude, python_project):  # noqa: F811
    (python_project / "calc.py").write_text("def double(x):\n    return x\n")
    fake_claude.script(
        [
            {
                "write": {"calc.py": "def double(x):\n    return 2 * x\n"},
                "report": {
                    "hypotheses": [{"hypothesis": "double returns x", "evidence": "assert 2 == 4"}],
                    "root_cause": "double forgot the factor 2",
                    "fix": "multiply by 2",
                    "files_changed": ["calc.py"],
                },
            }
        ]
    )
    debug = run(
        "debug",
        {
            "project_root": str(python_project),
            "symptom": "test_double fails",
            "failing_cmd": "python -m pytest -q tests/test_double.py",
        },
    )
    assert debug.status == "pass" and debug.change["after"]["exit_code"] == 0

    run_trainer(SESSION)
    sft = TrainingExample.objects.get(source_key=f"sft:run:{debug.pk}")
    completion = sft.completion[0]["content"]
    assert completion.startswith("double forgot the factor 2\n\n```diff\n") and "+    return 2 * x" in completion
    assert sft.provenance["verification"]["test_cmd"] == "python -m pytest -q tests/test_double.py"

    assert "1 valid, 0 invalid" in verify()
