"""The probe `bench/tracing_cpu.py` runs once per arm, in a fresh process (pytest, the test database).

It stores 300 notes, sends 30 warm-up `brain_query` calls through Django's test client to /mcp/brain,
then 300 measured ones, and prints the process CPU time per call (every thread of the process: the
span exporter's too) as `CPU_PER_CALL_MS <value>`. Not part of the suite (testpaths is tests/).
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import random
import time

import pytest
from django.test import Client

from brain.actions import do_ingest_note
from observability.tracing import flush_traces

WORDS = (
    "vacuum index planner replica lock queue cache shard backup migration tuple page "
    "latency token budget review spec trace metric worker cluster segment posting"
).split()
HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream"}


def query(client: Client, words: str, request_id: int) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "brain_query", "arguments": {"query": words}},
    }
    response = client.post("/mcp/brain", json.dumps(message), content_type="application/json", **HEADERS)
    assert response.status_code == 200, response.content[:500]
    assert b'"isError":false' in response.content.replace(b" ", b""), response.content[:500]


@pytest.mark.django_db(transaction=True)
def test_cpu_per_brain_query_call() -> None:
    rng = random.Random(7)
    for number in range(300):
        body = " ".join(rng.choice(WORDS) for _ in range(60))
        do_ingest_note(title=f"Note {number} {rng.choice(WORDS)}", body=body, wing="bench", hall="cpu")
    client = Client()
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(330)]
    for number, words in enumerate(queries[:30]):
        query(client, words, number)
    profile = cProfile.Profile(time.process_time) if os.environ.get("PROBE_PROFILE") else None
    started = time.process_time()
    if profile:
        profile.enable()
    for number, words in enumerate(queries[30:], start=30):
        query(client, words, number)
    if profile:
        profile.disable()
        if os.environ.get("PROBE_PROFILE_OUT"):
            profile.dump_stats(os.environ["PROBE_PROFILE_OUT"])
        pstats.Stats(profile).sort_stats(os.environ["PROBE_PROFILE"]).print_stats(80)
    flush_traces()  # the exporter's encoding is part of the cost
    spent = time.process_time() - started
    print(f"\nCPU_PER_CALL_MS {spent / 300 * 1000:.3f}")
