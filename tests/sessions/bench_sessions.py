"""Benchmark (not collected by default): session file import/export and concurrent session_log.

    HYPERGUILD_TEST_DB_NAME=test_sessions nice .venv/bin/python -m pytest tests/sessions/bench_sessions.py -q -s

Prints figures; asserts only that the round trip is exact, nothing about time.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

from django.db import connection

from sessions.actions import do_log_entry
from sessions.folder import export_sessions_dir, import_sessions_dir

LINES = 5000
LOG_CALLS = 400
THREADS = 8


def test_session_figures(transactional_db, tmp_path):
    lines = [
        json.dumps(
            {
                "ts": f"2025-01-01T00:00:{i % 60:02d}Z",
                "kind": "skill",
                "skill": "tdd_green",
                "status": "pass" if i % 3 else "fail",
                "message": f"step {i} ✅",
            },
            ensure_ascii=False,
        )
        for i in range(LINES)
    ]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    started = time.perf_counter()
    import_sessions_dir(tmp_path / "in")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    import_sessions_dir(tmp_path / "in")
    reimported = time.perf_counter() - started
    started = time.perf_counter()
    export_sessions_dir(tmp_path / "out")
    exported = time.perf_counter() - started
    assert (tmp_path / "out" / "big.jsonl").read_bytes() == (tmp_path / "in" / "big.jsonl").read_bytes()

    def log(i: int) -> int:
        try:
            return do_log_entry("bench", kind="note", message=str(i))[0].seq
        finally:
            connection.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        seqs = list(pool.map(log, range(LOG_CALLS)))
    logged = time.perf_counter() - started
    assert sorted(seqs) == list(range(1, LOG_CALLS + 1))
    print(
        f"\nimport {LINES} lines: {imported:.2f}s; re-import (nothing new): {reimported:.2f}s; export: {exported:.2f}s; "
        f"{LOG_CALLS} do_log_entry calls on {THREADS} threads into one session: {logged:.2f}s ({LOG_CALLS / logged:.0f}/s)"
    )
