"""Benchmark (not collected by default): change capture, diff/apply, near-duplicate splitting, redaction at the door.

    HYPERGUILD_TEST_DB_NAME=test_training_bench nice .venv/bin/python -m pytest tests/sessions/bench_training.py -q -s

Prints figures; asserts only that the work was right (the diff applies back, every secret is gone), nothing about time.
"""

from __future__ import annotations

import time

from hyperguild.lib.diffs import apply_diff
from sessions.actions import do_log_entry
from sessions.models import SessionEntry
from sessions.trl_export import near_duplicate_groups
from supervisor.changes import ChangeRecorder

FILES = 2000
PROMPTS = 2000
ENTRIES = 300


def test_training_figures(db, tmp_path, settings):
    project = tmp_path / "project"
    for n in range(FILES):
        path = project / f"pkg{n % 40}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(50)))
    started = time.perf_counter()
    recorder = ChangeRecorder(project)
    capture_s = time.perf_counter() - started
    for n in range(0, FILES, 100):  # the worker changes 20 files
        path = project / f"pkg{n % 40}" / f"mod{n}.py"
        path.write_text(path.read_text().replace("return 7\n", "return 'seven'\n"))
    started = time.perf_counter()
    part = recorder.attempt()
    change = recorder.record(test_cmd="true", before=None, after=None)
    diff_s = time.perf_counter() - started
    copy = tmp_path / "copy"
    for n in range(0, FILES, 100):
        path = copy / f"pkg{n % 40}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(50)))
    started = time.perf_counter()
    written = apply_diff(copy, change["diff"])
    apply_s = time.perf_counter() - started
    assert len(part["files"]) == len(written) == FILES // 100

    prompts = [
        f"Skill: tdd_green\nspec: feature {n // 3} of the billing module, case {n % 3 and 'x'}" for n in range(PROMPTS)
    ]
    started = time.perf_counter()
    groups = near_duplicate_groups(prompts)
    group_s = time.perf_counter() - started

    secret = "AKIAIOSFODNN7EXAMPLE and sk-proj-" + "Q" * 30
    started = time.perf_counter()
    for n in range(ENTRIES):
        do_log_entry("bench-clean", kind="note", message=f"step {n}: nothing secret", data={"n": n, "token": "none"})
    clean_s = time.perf_counter() - started
    started = time.perf_counter()
    for n in range(ENTRIES):
        do_log_entry("bench", kind="note", message=f"step {n}: {secret}", data={"n": n, "token": secret})
    log_s = time.perf_counter() - started
    assert not SessionEntry.objects.filter(message__contains="AKIA").exists()

    print(
        f"\ncapture of {FILES} files: {capture_s * 1000:.0f} ms; diff of {len(part['files'])} changed files "
        f"({len(change['diff'])} chars): {diff_s * 1000:.0f} ms; apply: {apply_s * 1000:.1f} ms"
        f"\nnear-duplicate grouping of {PROMPTS} prompts: {group_s * 1000:.0f} ms ({len(set(groups))} groups)"
        f"\n{ENTRIES} session entries with secrets, redacted at the door: {log_s / ENTRIES * 1000:.2f} ms per entry "
        f"(without secrets: {clean_s / ENTRIES * 1000:.2f} ms)"
    )
