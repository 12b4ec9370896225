"""Acceptance 5: bench/routing_sim.py replays a workload through the real router and prints its figures."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from bench.routing_sim import Command, calls_until_moved_off, parse_areas, parse_skills, simulate, simulate_areas
from supervisor.models import Pathway, RoutingEntry

pytestmark = pytest.mark.django_db


def test_it_prints_savings_quality_and_adaptation_and_keeps_no_rows():
    out = StringIO()
    call_command(
        Command(),
        "--skills",
        "review:0.95/0.99,debug:0.6/0.9",
        "--calls",
        "120",
        "--drop-at",
        "60",
        "--drop-to",
        "0.3",
        "--drop-skills",
        "review",
        "--window",
        "10",
        "--min-samples",
        "5",
        "--seed",
        "3",
        "--no-progress",
        stdout=out,
    )
    text = out.getvalue()
    assert "thinking calls saved:" in text
    assert "pass rate lost:" in text
    assert "quality retained" in text
    assert "adaptation (review, fast pass rate dropped at call 60)" in text
    assert "left in the database: 0" in text
    assert RoutingEntry.objects.count() == 0


def test_the_router_really_writes_entries_inside_the_rolled_back_run():
    report = simulate(parse_skills("review:1.0/1.0"), calls=30, seed=1)
    assert report.entries_written == 30  # the fast model never fails: one entry per call
    assert report.entries_left == 0
    assert report.pass_rate == 1.0
    assert RoutingEntry.objects.count() == 0


def test_a_fast_model_that_always_passes_saves_most_thinking_calls():
    report = simulate(parse_skills("review:1.0/1.0"), calls=200, seed=1)
    # min-samples phase first (even odds), then the floor keeps everything on the fast model
    assert report.thinking_saved > 0.9
    assert report.quality_retained == 1.0


def test_adaptation_counts_calls_until_fast_serves_under_half_of_the_last_20():
    assert calls_until_moved_off([True] * 30) is None
    assert calls_until_moved_off([False] * 25) == 20
    assert calls_until_moved_off([True] * 10 + [False] * 30) == 21  # 9 fast of the last 20


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--skills", "review"], "skill:fast/thinking"),
        (["--skills", "review:1.5/0.9"], "between 0 and 1"),
        (["--skills", "review:0.9/0.9", "--drop-at", "5"], "go together"),
        (["--skills", "review:0.9/0.9", "--calls", "0"], "at least 1"),
        (
            ["--skills", "review:0.9/0.9", "--drop-at", "5", "--drop-to", "0.5", "--drop-skills", "debug"],
            "not in --skills",
        ),
    ],
)
def test_it_refuses_a_bad_workload_and_writes_nothing(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command(
            Command(), *arguments, "--calls" if "--calls" not in arguments else "--seed", "10", "--no-progress"
        )
    assert RoutingEntry.objects.count() == 0


def test_the_areas_workload_prints_savings_and_quality_with_and_without_pathway_memory():
    out = StringIO()
    call_command(
        Command(),
        "--areas",
        "review:src/good:1.0/1.0,review:legacy/bad:0.0/1.0",
        "--calls",
        "120",
        "--min-samples",
        "5",
        "--window",
        "20",
        "--no-progress",
        stdout=out,
    )
    text = out.getvalue()
    assert "pass rate only" in text and "+ pathway memory" in text
    assert "thinking calls saved" in text and "quality retained" in text
    assert "calls decided by a pathway" in text and "nothing was kept in the database" in text
    assert RoutingEntry.objects.count() == 0 and Pathway.objects.count() == 0


def test_pathway_memory_sends_the_good_area_to_the_fast_model_and_the_bad_one_to_the_thinking_model():
    report = simulate_areas(
        parse_areas("review:src/good:1.0/1.0,review:legacy/bad:0.0/1.0"), calls=120, seed=2, min_samples=5, window=20
    )

    without, memory = report.without, report.with_memory
    assert memory.thinking_saved > without.thinking_saved
    assert memory.first_pass_rate > without.first_pass_rate
    assert memory.promoted == 2 and memory.pathway_decisions > 100
    assert memory.tallies["review:legacy/bad"].fast_first <= 3  # a failure or two before thinking is recommended


def test_a_bad_areas_spec_is_refused():
    with pytest.raises(CommandError, match="skill:area:fast/thinking"):
        call_command(Command(), "--areas", "review:0.5/0.9", "--no-progress")


@pytest.mark.parametrize("workload", [["--skills", "review:0.9/0.99"], ["--areas", "review:src/api:0.9/0.99"]])
def test_it_shows_progress_on_stderr_and_still_prints_the_report(workload):
    out, err = StringIO(), StringIO()
    call_command(Command(), *workload, "--calls", "6", stdout=out, stderr=err)
    assert "call" in err.getvalue()  # the progress bar
    assert "thinking calls saved" in out.getvalue()


def test_a_bad_spec_with_progress_on_is_a_command_error():
    with pytest.raises(CommandError):
        call_command(Command(), "--skills", "review:1.5/0.9", "--calls", "3", stderr=StringIO())
