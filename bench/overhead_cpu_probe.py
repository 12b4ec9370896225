"""The probe `bench/overhead_cpu.py` runs: CPU per `brain_query` call with metrics and tracing off and on, the arms
interleaved in blocks inside one process (so the machine's other load falls on every arm alike).

The process starts as `serve` starts a web process: PROMETHEUS_MULTIPROC_DIR set (prometheus-client's mmap files),
and tracing configured (OTEL_EXPORTER_OTLP_ENDPOINT, a sink in the driver). Between blocks only what the arms differ
in is switched: each arm has its own Django handler (built with HYPERGUILD_METRICS as the arm has it), the setting is
overridden for the MCP view's counts, and the tracing globals are set as configure_tracing() would (tracing off: the
API's no-op tracer and RequestSpans standing aside; the psycopg instrumentation, installed once, stands down as in a
dropped trace, which leaves a wrapper call per query that a process with tracing off does not have). Arms:

    off        metrics off, tracing off
    metrics    metrics on, tracing off
    both       metrics on, tracing on at the service's default sampling (HYPERGUILD_TRACE_SAMPLE, 0.01)
    dropped    metrics on, tracing on, every new trace dropped (sample 0)
    sampled    metrics on, tracing on, every request traced (sample 1)

"off_2" is a second arm like "off" (its own handler): the spread between twins. Prints, per arm,
`ARM <name> <median ms CPU per call> <minor page faults per call> <each block's ms>`. Not part of the suite.
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.test import Client, override_settings
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation

import observability.tracing as tracing
from bench.tracing_cpu_probe import WORDS, query  # the same notes' words and the same call
from brain.actions import do_ingest_note


@contextmanager
def arm(label: str, sdk_tracer: trace.Tracer) -> Iterator[None]:
    name = label.split("_")[0]
    traced = name in ("both", "dropped", "sampled")
    rate = {"both": float(os.environ.get("HYPERGUILD_TRACE_SAMPLE", "0.01")), "dropped": 0.0, "sampled": 1.0}.get(name)
    tracing._configured, tracing._sample_rate = traced, rate
    tracing._TRACER = sdk_tracer if traced else trace.NoOpTracer()
    with override_settings(HYPERGUILD_METRICS=name != "off"):
        if traced:
            yield
        else:
            with suppress_instrumentation():
                yield


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@pytest.mark.django_db(transaction=True)
def test_cpu_per_brain_query_call_by_arm() -> None:
    assert tracing._configured and os.environ.get("PROMETHEUS_MULTIPROC_DIR"), "run it through bench/overhead_cpu.py"
    sdk_tracer = tracing._TRACER
    names = os.environ.get("PROBE_ARMS", "off,metrics,both").split(",")
    blocks, size = int(os.environ.get("PROBE_BLOCKS", "20")), int(os.environ.get("PROBE_BLOCK", "25"))
    rng = random.Random(7)
    for number in range(300):
        body = " ".join(rng.choice(WORDS) for _ in range(60))
        do_ingest_note(title=f"Note {number} {rng.choice(WORDS)}", body=body, wing="bench", hall="cpu")
    clients = {}
    for name in names:
        with arm(name, sdk_tracer):
            clients[name] = Client()  # its handler (and middleware chain) is built on the first request
            for number in range(20):
                query(clients[name], " ".join(rng.sample(WORDS, 2)), number)
    tracing.flush_traces()
    figures: dict[str, list[float]] = {name: [] for name in names}
    faulted: dict[str, list[float]] = {name: [] for name in names}
    for block in range(blocks):
        for name in names if block % 2 == 0 else reversed(names):
            queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(size)]
            with arm(name, sdk_tracer):
                started, faults_before = time.process_time(), faults()
                for number, words in enumerate(queries):
                    query(clients[name], words, number)
                tracing.flush_traces()  # the exporter's encoding is part of the cost
                figures[name].append((time.process_time() - started) / size * 1000)
                faulted[name].append((faults() - faults_before) / size)
    for name, values in figures.items():
        print(
            f"\nARM {name} {statistics.median(values):.4f} {statistics.median(faulted[name]):.1f} "
            f"{' '.join(f'{v:.3f}' for v in values)}"
        )
