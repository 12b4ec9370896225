"""Training-data curation pages: the list, one example, approve/reject/edit/swap, the JSONL export."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from sessions.models import TrainingExample
from tests.ui.conftest import make_example

pytestmark = pytest.mark.django_db
LIST = "/training/"


def test_the_list_shows_candidates_first_and_filters_by_kind_and_status(staff_client, staff_user):
    sft, dpo = make_example("sft"), make_example("dpo")
    done = make_example("sft")
    staff_client.post(reverse("sessions-training-approve", args=[done.pk]))
    page = staff_client.get(LIST).content.decode()
    assert f">#{sft.pk}<" in page and f">#{dpo.pk}<" in page and f">#{done.pk}<" not in page
    page = staff_client.get(LIST, {"kind": "dpo", "status": "candidate"}).content.decode()
    assert f">#{dpo.pk}<" in page and f">#{sft.pk}<" not in page
    page = staff_client.get(LIST, {"status": "approved"}).content.decode()
    assert f">#{done.pk}<" in page and f">#{sft.pk}<" not in page


def test_the_list_runs_the_same_number_of_queries_for_3_or_40_examples(staff_client, django_assert_max_num_queries):
    for kind in ("sft", "dpo", "sft"):
        make_example(kind)
    staff_client.get(LIST)
    with django_assert_max_num_queries(8) as few:
        staff_client.get(LIST)
    for i in range(37):
        make_example("dpo" if i % 2 else "sft")
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = staff_client.get(LIST).content.decode()
    assert "page 1 of 2" in page
    assert "page 2 of 2" in staff_client.get(LIST, {"page": 2}).content.decode()


def test_an_sft_example_shows_the_conversation(staff_client):
    example = make_example("sft")
    page = staff_client.get(reverse("sessions-training-detail", args=[example.pk])).content.decode()
    assert example.prompt[0]["content"] in page and "def test_feature_" in page


def test_a_dpo_pair_shows_chosen_and_rejected_side_by_side_with_the_evidence(staff_client):
    example = make_example(
        "dpo",
        provenance={
            "runs": [],
            "verification": {
                "chosen": {"verified": True, "status": "pass", "runner_output_tail": "1 passed"},
                "rejected": {"verified": False, "status": "fail", "runner_output_tail": "1 failed: AssertionError"},
            },
        },
    )
    page = staff_client.get(reverse("sessions-training-detail", args=[example.pk])).content.decode()
    chosen_at, rejected_at = page.index("side chosen"), page.index("side rejected")
    assert chosen_at < page.index("good answer") < rejected_at < page.index("bad answer")
    assert "1 passed" in page and "1 failed: AssertionError" in page


def test_approve_reject_and_swap_record_the_reviewer(staff_client, staff_user):
    a, b, c = make_example("sft"), make_example("sft"), make_example("dpo")
    staff_client.post(reverse("sessions-training-approve", args=[a.pk]))
    staff_client.post(reverse("sessions-training-reject", args=[b.pk]), {"reason": "answer is wrong"})
    staff_client.post(reverse("sessions-training-swap", args=[c.pk]), {"confirm": "1"})
    a.refresh_from_db(), b.refresh_from_db(), c.refresh_from_db()
    assert (a.status, a.reviewer) == ("approved", staff_user)
    assert (b.status, b.review_note, b.reviewer) == ("rejected", "answer is wrong", staff_user)
    assert c.chosen[0]["content"].startswith("bad answer") and c.rejected[0]["content"].startswith("good answer")
    assert [e["action"] for e in c.edits] == ["swap"]


def test_swapping_an_sft_example_is_refused_and_changes_nothing(staff_client):
    example = make_example("sft")
    response = staff_client.post(reverse("sessions-training-swap", args=[example.pk]), {"confirm": "1"})
    assert response.status_code == 400 and "Only DPO examples" in response.content.decode()
    example.refresh_from_db()
    assert example.edits == []


def test_editing_keeps_the_history_and_bad_roles_are_refused(staff_client, staff_user):
    example = make_example("sft")
    response = staff_client.post(
        reverse("sessions-training-edit", args=[example.pk]),
        {
            "prompt-0-role": "user",
            "prompt-0-content": "Write a failing test.\r\nPlease.",
            "completion-0-role": "assistant",
            "completion-0-content": "def test_x(): assert 0",
        },
    )
    assert response.status_code == 302
    example.refresh_from_db()
    assert example.prompt == [{"role": "user", "content": "Write a failing test.\nPlease."}]
    assert example.edits[-1]["action"] == "edit" and example.edits[-1]["by"] == "reviewer"

    response = staff_client.post(
        reverse("sessions-training-edit", args=[example.pk]),
        {
            "completion-0-role": "wizard",
            "completion-0-content": "nope",
        },
    )
    assert response.status_code == 400 and "role must be one of" in response.content.decode()
    example.refresh_from_db()
    assert example.completion[0]["role"] == "assistant" and len(example.edits) == 1


def test_the_export_downloads_approved_examples_in_trl_shapes(staff_client):
    sft, dpo, waiting = make_example("sft"), make_example("dpo"), make_example("dpo")
    for example in (sft, dpo):
        staff_client.post(reverse("sessions-training-approve", args=[example.pk]))
    response = staff_client.get(reverse("sessions-training-export", args=["dpo"]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    records = [json.loads(line) for line in response.content.decode().splitlines()]
    assert records == [{"prompt": dpo.prompt, "chosen": dpo.chosen, "rejected": dpo.rejected}]
    response = staff_client.get(reverse("sessions-training-export", args=["sft"]))
    assert [json.loads(line) for line in response.content.decode().splitlines()] == [
        {"messages": [*sft.prompt, *sft.completion]}
    ]
    assert TrainingExample.objects.get(pk=waiting.pk).status == "candidate"


def test_an_unknown_export_kind_is_a_400(staff_client):
    assert staff_client.get("/training/export/kto.jsonl").status_code == 400
