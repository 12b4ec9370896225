"""`manage.py migrate_from_go DIR --env FILE`: a Go hyperguild's folder, .env and models.yaml, imported twice.

The fixture under tests/go/fixtures/ is a small Go deployment: a brain folder
with two notes named `pgvector` in different wings, `_index.md` files, a
raw note, a session log and training data, and the service's `.env`,
`models.yaml` and discipline folder (CLAUDE.md + tdd.md).
"""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from brain.models import AreaDescription, Note, NoteLink
from sessions.models import AgentSession, SessionEntry

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.fixture
def go_deployment(tmp_path) -> tuple[Path, Path]:
    brain = tmp_path / "go-brain"
    service = tmp_path / "go-service"
    shutil.copytree(FIXTURES / "go-brain", brain)
    shutil.copytree(FIXTURES / "go-service", service)
    (service / "go.env").rename(service / ".env")
    return brain, service / ".env"


def migrate(brain: Path, env_file: Path | None = None, *extra: str) -> str:
    out = StringIO()
    args = [str(brain), "--no-progress", *extra]
    if env_file is not None:
        args += ["--env", str(env_file)]
    call_command("migrate_from_go", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def state() -> dict:
    return {
        "notes": sorted(
            Note.objects.values_list("slug", "status", "wing", "hall", "path", "content_hash", "updated_at")
        ),
        "links": sorted(NoteLink.objects.values_list("source__slug", "target_slug", "target__slug")),
        "descriptions": sorted(AreaDescription.objects.values_list("wing", "hall", "content_hash", "updated_at")),
        "entries": sorted(SessionEntry.objects.values_list("session__external_id", "seq", "raw_line")),
    }


def test_a_go_deployment_imports_without_error_or_collision_and_reports_what_it_did(go_deployment):
    brain, env_file = go_deployment

    output = migrate(brain, env_file)

    notes = {note.path: note for note in Note.objects.all()}
    assert set(notes) == {
        "wiki/concepts/pgvector.md",
        "wiki/entities/pgvector.md",
        "wiki/concepts/patterns/retry-budget.md",
        "wiki/sources/circuit-breaker.md",
        "raw/2026-01-05-flaky-embedder.md",
    }  # both pgvector notes, and no _index.md note
    assert notes["wiki/concepts/pgvector.md"].slug == "pgvector"
    assert notes["wiki/entities/pgvector.md"].slug == "entities/pgvector"
    assert notes["raw/2026-01-05-flaky-embedder.md"].status == "raw"
    links = set(NoteLink.objects.values_list("source__slug", "target_slug", "target__slug"))
    assert links == {
        ("entities/pgvector", "pgvector", "pgvector"),  # the concept, not itself
        ("entities/pgvector", "circuit-breaker", "circuit-breaker"),
        ("retry-budget", "circuit-breaker", "circuit-breaker"),
        ("retry-budget", "pgvector", "pgvector"),  # same wing (concepts) is the most specific
        ("pgvector", "retry-budget", "retry-budget"),
    }
    descriptions = {(d.wing, d.hall): d for d in AreaDescription.objects.all()}
    assert set(descriptions) == {("", ""), ("concepts", ""), ("concepts", "patterns"), ("entities", "")}
    assert descriptions[("concepts", "patterns")].title == "Patterns"  # from the # heading
    assert "Products, services and libraries" in descriptions[("entities", "")].body
    session = AgentSession.objects.get(external_id="go-sess-1")
    assert [entry.kind for entry in session.entries.order_by("seq")] == ["decision", "correction"]

    took, rest = output.split("Mapped:\n", 1)
    mapped, rest = rest.split("Cannot use:\n", 1)
    cannot_use, lines = rest.split("Put these lines in this service's environment (.env):\n", 1)
    assert "wing/hall descriptions from _index.md: 4 (4 added or changed)" in took
    assert "added 5" in took and "go-sess-1" not in took and "2 new entries" in took
    assert "LITELLM_BASE_URL (same name here)" in took and "(default sonnet, 4 skill entries used)" in took
    assert "ollama/qwen3-coder-30b-tuned: provider/name models run the Claude Code worker" in mapped
    assert "ollama/llama3" not in mapped  # only the Go-only `summarize` skill named it
    for mapping in (
        "BRAIN_PG_DSN → DATABASE_URL",
        "INGEST_BRAIN_DIR → BRAIN_DIR",
        "INGEST_PORT → HYPERGUILD_PORT",
        "INGEST_BASE_URL → HYPERGUILD_PUBLIC_URL",
        "SUPERVISOR_SESSIONS_DIR → BRAIN_SESSIONS_DIR",
        "BRAIN_EMBEDDER=ollama",
        "tdd: ollama/qwen3-coder-30b-tuned → tdd_red, tdd_green, tdd_refactor",
        "Go layout (CLAUDE.md, tdd.md)",
    ):
        assert mapping in mapped, mapping
    assert "wiki/" not in cannot_use and "collision" not in output and "already taken" not in output
    for refusal in (
        "GO_LOG_FORMAT: not read by this service",
        "ROUTING_PORT: HYPERGUILD_PORT already comes",
        "BRAIN_URL: HYPERGUILD_PUBLIC_URL already comes",
        "skills.summarize: no such skill",
        "training-data/ (sft.jsonl): not imported",
        "HYPERGUILD_FAST_MODEL and HYPERGUILD_THINKING_MODEL",
    ):
        assert refusal in cannot_use, refusal
    env_lines = [line.strip() for line in lines.splitlines() if "=" in line and not line.startswith("Migrated")]
    assert f"BRAIN_DIR={brain.resolve()}" in env_lines
    assert f"BRAIN_SESSIONS_DIR={(brain / 'sessions').resolve()}" in env_lines
    assert "DATABASE_URL=postgres://go:go-pw@db.lan:5432/brain" in env_lines
    assert "BRAIN_EMBED_URL=http://ollama.lan:11434" in env_lines and "BRAIN_EMBEDDER=ollama" in env_lines
    assert "HYPERGUILD_PORT=8081" in env_lines and "HYPERGUILD_PUBLIC_URL=http://brain.lan:8081" in env_lines
    assert f"SUPERVISOR_CONFIG_DIR={(env_file.parent / 'config').resolve()}" in env_lines
    assert f"SUPERVISOR_MODELS_FILE={(env_file.parent / 'models.yaml').resolve()}" in env_lines
    assert "LITELLM_API_KEY=sk-go-gateway" in env_lines
    assert not any(line.startswith(("BRAIN_PG_DSN", "INGEST_", "ROUTING_PORT", "GO_LOG")) for line in env_lines)


def test_running_it_again_changes_nothing(go_deployment):
    brain, env_file = go_deployment
    first = migrate(brain, env_file)
    before = state()

    second = migrate(brain, env_file)

    assert state() == before
    assert "0 change(s)" in second and "0 change(s)" not in first
    assert (
        "added 0, updated 0, unchanged 5" in second
        and "(0 added or changed)" in second
        and "0 new entries, 2 already here" in second
    )
    assert first.split("Put these lines")[1].splitlines()[1:-1] == second.split("Put these lines")[1].splitlines()[1:-1]


def test_the_printed_lines_configure_the_service_as_the_go_one_was(go_deployment, monkeypatch):
    """The lines, read back through our settings rules, give hybrid search and the Go model table."""
    from hyperguild.lib.env import go_hybrid_rule

    brain, env_file = go_deployment
    output = migrate(brain, env_file)
    lines = dict(line.strip().split("=", 1) for line in output.split("(.env):\n")[1].splitlines()[:-1])

    assert go_hybrid_rule(lines) == (None, None)  # BRAIN_EMBEDDER is explicit: nothing left half-configured
    assert lines["BRAIN_EMBEDDER"] == "ollama"


def test_a_bad_env_line_is_refused_before_anything_is_imported(go_deployment):
    brain, env_file = go_deployment
    env_file.write_text(env_file.read_text() + "this line is not an assignment\n")

    with pytest.raises(CommandError) as caught:
        migrate(brain, env_file)

    assert ".env:14 is not a KEY=value line" in str(caught.value)
    assert Note.objects.count() == 0 and AgentSession.objects.count() == 0


def test_a_missing_folder_or_env_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="is not a folder"):
        migrate(tmp_path / "nope")
    with pytest.raises(CommandError, match="--env .* is not a file"):
        migrate(tmp_path, tmp_path / "missing.env")
    assert Note.objects.count() == 0


def test_without_an_env_file_the_folder_still_imports_and_says_what_it_did_not_read(go_deployment):
    brain, _ = go_deployment

    output = migrate(brain)

    assert "no --env FILE given" in output and f"BRAIN_DIR={brain}" in output
    assert Note.objects.count() == 5
