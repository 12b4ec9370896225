"""The `claude` worker and the reranker are model calls too: each run or judgement is a ModelCall."""

from __future__ import annotations

import pytest

from hyperguild.lib.reranker import RerankerError, get_reranker
from ledger.models import ModelCall
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run
from tests.conftest import free_port
from tests.fakes.reranker import FakeReranker
from tests.supervisor.conftest import allowed_root, fake_claude, python_project  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def test_each_worker_run_is_a_model_call_linked_from_its_skill_run(fake_claude, python_project):  # noqa: F811
    fake_claude.script(
        [
            {
                "write": {
                    "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
                },
                "report": {"status": "done", "file_path": "tests/test_add.py", "summary": f"key {AWS_KEY}"},
            }
        ]
    )
    run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add", "session_id": "s-worker"})
    run_skill(run.pk)
    run.refresh_from_db()

    call = run.model_calls.get()
    assert (call.provider, call.purpose, call.skill, call.session_id) == ("claude", "tdd_red", "tdd_red", "s-worker")
    assert call.project == str(python_project) and call.service == "supervisor worker"
    assert call.outcome == "ok" and call.latency_ms > 0
    assert "add" in call.request["prompt"] and call.request["argv"][0].endswith("fake_claude.py")
    assert AWS_KEY not in call.response and "[REDACTED:aws_access_key]" in call.response


def test_a_reranker_that_is_down_is_an_outage_and_a_pass_that_answers_is_one_record(settings):
    settings.BRAIN_RERANKER_RETRIES = 0
    with FakeReranker(lambda prompt: "yes") as ollama:
        settings.BRAIN_RERANKER_URL = ollama.url
        settings.BRAIN_RERANKER_CONCURRENCY = 3
        kept = get_reranker().filter("deploy?", ["a", "b", "c", "d"], text=lambda document: document)
    assert kept == ["a", "b", "c", "d"]
    # A pass over four candidates is one record (issue 39), holding the four requests it sent.
    (call,) = ModelCall.objects.filter(purpose="rerank")
    assert (call.outcome, call.provider, call.max_tokens) == ("ok", "ollama", 4)
    assert len(call.request) == 4 and all(request["options"]["num_predict"] == 4 for request in call.request)
    answered = [call.pk]

    settings.BRAIN_RERANKER_URL = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RerankerError):
        get_reranker().filter("deploy?", ["a", "b"], text=lambda document: document)
    assert set(ModelCall.objects.exclude(pk__in=answered).values_list("outcome", flat=True)) == {"outage"}
