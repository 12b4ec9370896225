"""Problems 1, 3 and 12: swap keeps the evidence with its text, the secret flag follows the text,
a flagged example is never approved by accident, and messages keep their whitespace."""

from __future__ import annotations

import pytest

from sessions.actions import do_store_training_example
from sessions.models import TrainingExample
from sessions.redaction import redact_value
from tests.ui.conftest import make_example

pytestmark = pytest.mark.django_db

PASS = {"verified": True, "status": "pass", "exit_code": 0, "runner_output_tail": "3 passed"}
FAIL = {"verified": False, "status": "fail", "exit_code": 1, "runner_output_tail": "1 failed"}


def _dpo_with_evidence():
    return make_example("dpo", provenance={"session_id": "s-1", "verification": {"chosen": PASS, "rejected": FAIL}})


def test_swap_moves_the_verification_evidence_with_the_texts(staff_client):
    example = _dpo_with_evidence()
    good, bad = example.chosen, example.rejected
    assert staff_client.post(f"/training/{example.pk}/swap/", {"confirm": "1"}).status_code == 302
    example.refresh_from_db()
    assert (example.chosen, example.rejected) == (bad, good)
    # The useless answer is now "chosen" and carries its own failing check, not the pass badge.
    assert example.provenance["verification"] == {"chosen": FAIL, "rejected": PASS}

    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    chosen_panel = page[page.index('class="panel side chosen"') : page.index('class="panel side rejected"')]
    assert bad[0]["content"] in chosen_panel and "supervisor's own check: failed" in chosen_panel
    assert "1 failed" in chosen_panel


def _flagged_example():
    completion, found = redact_value(
        [{"role": "assistant", "content": "export AWS_KEY=AKIAABCDEFGHIJKLMNOP\nthen run it"}]
    )
    example, _ = do_store_training_example(
        source_key="test:flagged",
        kind="sft",
        skill="tdd_green",
        prompt=[{"role": "user", "content": "deploy it"}],
        completion=completion,
        provenance={"session_id": "s-1"},
        flags=[{"field": "completion", "pattern": p, "count": c} for p, c in found.items()],
    )
    return example


def test_editing_the_redacted_secret_out_clears_the_flag(staff_client):
    example = _flagged_example()
    assert example.flagged and "[REDACTED:aws_access_key]" in example.completion[0]["content"]
    response = staff_client.post(
        f"/training/{example.pk}/edit/",
        {
            "prompt-0-role": "user",
            "prompt-0-content": "deploy it",
            "completion-0-role": "assistant",
            "completion-0-content": "export AWS_KEY=$AWS_KEY\nthen run it",
        },
    )
    assert response.status_code == 302
    example.refresh_from_db()
    assert not example.flagged and example.flags == []
    assert "possible secret" not in staff_client.get(f"/training/{example.pk}/").content.decode()


def test_an_edit_that_keeps_the_redaction_or_pastes_a_secret_stays_flagged(staff_client):
    example = make_example("sft")
    assert not example.flagged
    staff_client.post(
        f"/training/{example.pk}/edit/",
        {
            "prompt-0-role": "user",
            "prompt-0-content": example.prompt[0]["content"],
            "completion-0-role": "assistant",
            "completion-0-content": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        },
    )
    example.refresh_from_db()
    assert example.flagged and example.flags == [{"field": "completion", "pattern": "github_token", "count": 1}]
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in example.completion[0]["content"]  # redacted on save


def test_a_flagged_example_is_not_approved_without_an_explicit_confirmation(staff_client):
    example = _flagged_example()
    response = staff_client.post(f"/training/{example.pk}/approve/")
    assert response.status_code == 400 and "possible secret" in response.content.decode()
    example.refresh_from_db()
    assert example.status == TrainingExample.Status.CANDIDATE

    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    assert 'name="confirm_flagged"' in page
    assert staff_client.post(f"/training/{example.pk}/approve/", {"confirm_flagged": "1"}).status_code == 302
    example.refresh_from_db()
    assert example.status == TrainingExample.Status.APPROVED
    assert example.edits[-1]["confirmed_flagged"] is True


def test_messages_keep_their_whitespace_and_a_pair_shows_its_diff(staff_client):
    code = 'def f():\n    return {\n        "a": 1,\n    }'
    example, _ = do_store_training_example(
        source_key="test:ws",
        kind="dpo",
        skill="review",
        prompt=[{"role": "user", "content": "fix it"}],
        chosen=[{"role": "assistant", "content": code}],
        rejected=[{"role": "assistant", "content": "def f():\n    return None"}],
        provenance={},
    )
    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    assert '<pre class="message-text">def f():\n    return {\n        &quot;a&quot;: 1,\n    }</pre>' in page
    diff = page[page.index('id="pair-diff"') :]
    assert '<del class="diff">    return None</del>' in diff
    assert '<ins class="diff">        &quot;a&quot;: 1,</ins>' in diff


def test_approve_goes_on_in_the_same_order_as_j_and_k_goes_back(staff_client):
    oldest, middle, newest = make_example("sft"), make_example("sft"), make_example("sft")
    page = staff_client.get(f"/training/{middle.pk}/").content.decode()
    assert f'id="next-note" href="/training/{oldest.pk}/"' in page
    assert f'id="prev-note" href="/training/{newest.pk}/"' in page
    response = staff_client.post(f"/training/{middle.pk}/approve/")
    assert response["Location"] == f"/training/{oldest.pk}/"  # where j pointed, not the newest candidate
