"""`bench/load.py` runs end to end on a tiny corpus: it starts the real server, drives every phase
and drops its scratch database. (Its figures are printed for people to read; nothing here times anything.)"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench.load import Command
from tests.conftest import test_database_url as database_url

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.timeout(360)  # every phase on a real server: it took past 180 s on a busy machine (issue 47)
def test_bench_load_prints_every_phase_and_leaves_no_scratch_database(child_env):
    completed = subprocess.run(
        [
            sys.executable,
            "bench/load.py",
            "--notes",
            "40",
            "--clients",
            "3",
            "--seconds",
            "0.5",
            "--workers",
            "1",
            "--write-rate",
            "5",
            "--query-rates",
            "10",
            "--ping-samples",
            "3",
        ],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=340,
    )
    out = completed.stdout
    assert completed.returncode == 0, completed.stderr[-3000:] + out[-3000:]
    scratch = re.search(r"scratch database (hyperguild_eval_\d+)", out).group(1)
    for line in (
        "brain_query, 3 clients          :",
        "brain_query, 3 clients + writer :",
        "writer brain_ingest at 5/s",
        "brain_query at 10/s + writer",
        "ping/bare",
        "CPU per brain_query",
        "where a brain_query call's time goes",
        "bench_load done; scratch database dropped",
        "memory per process, after the warm-up",
        "memory per process, at the end",
    ):
        assert line in out, f"{line!r} missing from:\n{out}"
    # Figures from different machines are not comparable: the first line names the processor.
    assert re.search(r"^machine: \d+ CPUs \(.+\), load average", out, flags=re.MULTILINE), out[:300]
    # Every call of every phase was answered.
    for phase in re.findall(r"^(?:brain_query|  writer).*$", out, flags=re.MULTILINE):
        assert re.search(r"\b[1-9]\d* calls, 0 errors", phase), phase
    with psycopg.connect(database_url(), autocommit=True) as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database")]
    assert scratch not in names


@pytest.mark.parametrize(
    ("rates", "message"), [("100,fast", "takes numbers separated by commas"), ("0", "rates above 0")]
)
def test_bench_load_refuses_a_bad_rate_before_it_creates_anything(rates, message):
    out = io.StringIO()
    with pytest.raises(CommandError, match=message):
        call_command(Command(), "--query-rates", rates, stdout=out)
    assert "scratch database" not in out.getvalue()


def test_bench_load_drives_several_servers_side_by_side_and_compares_them_with_the_best_stock_one(child_env):
    completed = subprocess.run(
        [
            sys.executable,
            "bench/load.py",
            "--notes",
            "40",
            "--clients",
            "3",
            "--seconds",
            "0.5",
            "--workers",
            "1",
            "--servers",
            "granian@4/2,uvicorn/0",
            "--repeat",
            "2",
        ],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    # Two servers, not three (issue 47: the suite drove whole benchmarks on a busy machine): one with a piece of
    # ours, one stock server to compare it with.
    out = completed.stdout
    assert completed.returncode == 0, completed.stderr[-3000:] + out[-3000:]
    for spec in ("granian@4/2", "uvicorn/0"):
        for kind in ("reads", "reads + writer 10/s"):
            assert re.search(
                rf"^\| {re.escape(spec)} \| {re.escape(kind)} \| \d+ \(\d+–\d+\) \| .* \| 0 \|", out, flags=re.MULTILINE
            ), f"{spec} {kind} missing from:\n{out}"
        assert (
            len(
                re.findall(
                    rf"^round \d, {re.escape(spec)}, 3 clients .*\b[1-9]\d* calls, 0 errors", out, flags=re.MULTILINE
                )
            )
            == 4
        )
    # Only the configuration with a piece of ours (the gate) is compared with the best stock figures.
    assert re.search(
        r"^granian@4/2 against the best stock server on each figure \(reads\): calls/s [+-]\d+ %",
        out,
        flags=re.MULTILINE,
    ), out
    assert "uvicorn/0 against" not in out
    scratch = re.search(r"scratch database (hyperguild_eval_\d+)", out).group(1)
    with psycopg.connect(database_url(), autocommit=True) as conn:
        assert scratch not in [row[0] for row in conn.execute("SELECT datname FROM pg_database")]


@pytest.mark.timeout(360)  # a server started twice: slow on a busy machine
def test_bench_load_serves_with_exhaustive_bm25_and_times_the_first_answer_after_a_restart(child_env):
    completed = subprocess.run(
        [
            sys.executable,
            "bench/load.py",
            "--notes",
            "40",
            "--clients",
            "3",
            "--seconds",
            "0.5",
            "--workers",
            "1",
            "--servers",
            "granian@4/2+exhaustive",
            "--reads-only",
            "--restart",
        ],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=340,
    )
    out = completed.stdout
    assert completed.returncode == 0, completed.stderr[-3000:] + out[-3000:]
    assert re.search(r"^brain_query, 3 clients .*\b[1-9]\d* calls, 0 errors", out, flags=re.MULTILINE), out
    assert re.search(
        r"^granian@4/2\+exhaustive, restarted: serving after [\d.]+ s, first brain_query answered after "
        r"[\d.]+ s \(CPU of serve and its web processes until then: [\d.]+ s\); the next \d+ calls on new "
        r"connections",
        out,
        flags=re.MULTILINE,
    ), out
    assert "bench_load done; scratch database dropped" in out


@pytest.mark.parametrize(
    "servers", ["nginx", "granian,granian", "granian@0", "granian@x/2", "granian/2/2", "", "granian+fast"]
)
def test_bench_load_refuses_an_unknown_or_malformed_server_before_it_creates_anything(servers):
    out = io.StringIO()
    with pytest.raises(CommandError, match="--servers takes distinct names"):
        call_command(Command(), "--servers", servers, stdout=out)
    assert "scratch database" not in out.getvalue()
