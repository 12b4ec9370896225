"""Benchmarks and simulations live in bench/, outside the product: `manage.py` offers none of them, and each
script runs from the command line (`python bench/<name>.py`, `python -m bench.<name>`) with Django set up by
itself. (bench/load.py has tests/core/test_bench_load.py, bench/routing_sim.py tests/routing/test_routing_sim.py.)"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError
from django.db import connection

from bench import registration, review, search_cpu, search_scale, spool_flood
from brain.models import Note, NoteRevision
from supervisor.models import RoutingEntry

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
MOVED = ("bench_load", "bench_registration", "review_bench", "routing_sim")


def test_no_command_of_the_apps_is_a_benchmark_or_a_simulation():
    ours = {name for name, app in get_commands().items() if app.split(".")[0] in PRODUCT}
    assert "brain_eval" in ours  # an operator's command: search on the team's own judged queries
    assert not set(MOVED) & ours
    assert [name for name in ours if "bench" in name or name.endswith("_sim")] == []


def scratch_database_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [f"hyperguild_eval_{os.getpid()}"])
        return cursor.fetchone() is not None


def test_search_scale_prints_the_index_build_and_search_latency_and_drops_its_scratch_database(transactional_db):
    out = io.StringIO()
    call_command(search_scale.Command(), "--notes", "60", stdout=out, stderr=io.StringIO())
    printed = out.getvalue()
    for line in (
        "60 notes generated and stored in",
        "BM25 base segment build:",
        "for 60 notes",
        "brain_query (search(), server side, limit 10) over 60 notes: p50",
        "BM25 refresh after one edit:",
        "search_scale done; scratch database dropped.",
    ):
        assert line in printed, printed
    assert not Note.objects.exists()  # the notes were in the scratch database
    assert not scratch_database_exists()


def test_search_cpu_prints_the_cpu_of_search_and_its_parts_both_ways_and_drops_its_scratch_database(transactional_db):
    out = io.StringIO()
    call_command(search_cpu.Command(), "--notes", "60", "--queries", "5", "--rounds", "2", stdout=out)
    printed = out.getvalue()
    assert "60 notes stored and indexed in" in printed
    for arm in ("pruned", "exhaustive"):
        assert f"{arm}: search(limit=10) CPU per call over 60 notes (10 calls): p50" in printed, printed
    assert printed.count("  bm25 ranking :") == 2 and printed.count("  excerpts     :") == 2
    hits = float(printed.split("hits per call: mean ")[1].split()[0])
    assert hits > 0  # the queries' words are the notes' words: the thread searched the scratch database
    assert not Note.objects.exists()
    assert not scratch_database_exists()


def test_search_scale_refuses_no_notes_before_it_creates_anything(transactional_db):
    out = io.StringIO()
    with pytest.raises(CommandError, match="positive number"):
        call_command(search_scale.Command(), "--notes", "0", stdout=out)
    assert "scratch database" not in out.getvalue()


def test_the_review_benchmark_times_each_page_and_rolls_back_everything_it_wrote(db):
    out = io.StringIO()
    call_command(review.Command(), "--notes", "30", "--bulk", "10", "--repeat", "1", stdout=out)
    printed = out.getvalue()
    for line in (
        "created 30 raw notes",
        "queue, newest first, 25 a page",
        "note page opened from a filter",
        "raw note page, long body (ranking stored)",
        "bulk reject, select all 10 matching",
        "undo of the bulk reject",
        "everything the benchmark wrote was rolled back",
    ):
        assert line in printed, printed
    assert "HTTP 302, 10 rejected" in printed, printed  # the bulk action redirects back to the queue
    assert not Note.objects.exists() and not NoteRevision.objects.exists()


def test_the_registration_benchmark_refuses_a_bad_client_count_before_it_creates_anything(db):
    out = io.StringIO()
    with pytest.raises(CommandError, match="--clients takes 1 to 250"):
        call_command(registration.Command(), "--clients", "0", stdout=out)
    assert out.getvalue() == ""


@pytest.mark.parametrize("option", [("--senders", "0"), ("--ids", "0")])
def test_the_spool_flood_benchmark_refuses_bad_counts_before_it_creates_anything(db, option):
    out = io.StringIO()
    with pytest.raises(CommandError, match=f"{option[0]} takes 1 to"):
        call_command(spool_flood.Command(), *option, stdout=out)
    assert out.getvalue() == ""


@pytest.mark.parametrize("invocation", [["bench/routing_sim.py"], ["-m", "bench.routing_sim"]])
def test_a_bench_script_sets_up_django_itself_and_runs_from_the_command_line(invocation, child_env, db):
    completed = subprocess.run(
        [sys.executable, *invocation, "--skills", "review:1.0/1.0", "--calls", "20", "--no-progress"],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "thinking calls saved" in completed.stdout
    assert "nothing was kept in the database" in completed.stdout
    assert RoutingEntry.objects.count() == 0


def test_a_bench_scripts_errors_name_the_script_and_exit_with_status_1(child_env):
    completed = subprocess.run(
        [sys.executable, "bench/routing_sim.py", "--calls", "5"],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert "CommandError: give --skills (or --areas)" in completed.stderr
    usage = subprocess.run(
        [sys.executable, "bench/routing_sim.py", "--help"],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert usage.startswith("usage: bench/routing_sim.py ")
