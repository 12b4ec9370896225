"""What the typed tool contract costs one `brain_query` result, in CPU: parse the arguments into `QueryInput`,
validate the search's values into `QueryResult` and dump it, against building the same dict by hand (the code
before issue 40). No database: 10 synthetic hits of 300-character excerpts.

    .venv/bin/python bench/contract_overhead.py --results 3000 --rounds 5

Prints the median (min, max) CPU per result over the rounds, the two paths alternating, and the parts of the
typed path.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://bench@127.0.0.1:1/none")  # settings must not start a database
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")

import django  # noqa: E402 (after the path and settings set-up)

django.setup()

from brain.inputs import QueryInput  # noqa: E402
from brain.presenters import QueryResult, query_result  # noqa: E402
from brain.search import Hit, SearchResponse  # noqa: E402

VERIFICATION = {
    "state": "unverified",
    "commit": None,
    "label": "unverified: no anchors",
    "reason": "no anchors",
    "evidence": [],
    "unresolved": [],
}
RESPONSE = SearchResponse(
    hits=[
        Hit(
            note_id=i,
            slug=f"concepts/note-{i}",
            title=f"Note {i}",
            path=f"wiki/concepts/note-{i}.md",
            wing="concepts",
            hall="",
            status="wiki",
            score=0.5,
            excerpt="x" * 300,
            rankers={"bm25": i, "vector": i + 1},
            verification=dict(VERIFICATION),
        )
        for i in range(10)
    ],
    unreviewed=[{"slug": "a", "title": "A", "status": "raw"}],
    unreviewed_matches=1,
)
ARGUMENTS = {"query": "event loop", "limit": 10}


def by_hand() -> dict[str, Any]:
    hits = [hit.as_dict() for hit in RESPONSE.hits]
    return {
        "hits": hits,
        "count": len(hits),
        "abstained": RESPONSE.abstained,
        "partial": RESPONSE.partial,
        "degraded": bool(RESPONSE.degraded),
        "reason": RESPONSE.reason,
        "unreviewed_matches": RESPONSE.unreviewed_matches,
        "unreviewed": list(RESPONSE.unreviewed),
        "unreviewed_hint": RESPONSE.unreviewed_hint,
    }


def typed() -> dict[str, Any]:
    QueryInput.model_validate(ARGUMENTS)
    return query_result(RESPONSE).model_dump(mode="json")


def cpu_per_call(function: Callable[[], object], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        function()
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=3000, help="results per round and path")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    assert by_hand() == typed(), "the two paths must answer the same"
    figures: dict[str, list[float]] = {"by hand (before)": [], "typed": []}
    for _ in range(options.rounds):
        figures["by hand (before)"].append(cpu_per_call(by_hand, options.results))
        figures["typed"].append(cpu_per_call(typed, options.results))
    for name, values in figures.items():
        values.sort()
        print(
            f"{name:18}: median {values[len(values) // 2]:6.1f} µs (min {values[0]:.1f}, max {values[-1]:.1f}) CPU per result"
        )
    as_dict, model = RESPONSE.as_dict(), query_result(RESPONSE)
    for name, part in (
        ("  validate", lambda: QueryResult.model_validate(as_dict)),
        ("  dump", lambda: model.model_dump(mode="json")),
    ):
        print(f"{name:18}: {cpu_per_call(part, options.results):6.1f} µs")


if __name__ == "__main__":
    main()
