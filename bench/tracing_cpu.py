"""CPU per MCP call with metrics and tracing off and on: one process per arm, arms interleaved.

    .venv/bin/python bench/tracing_cpu.py --rounds 3

Each arm runs `bench/tracing_cpu_probe.py` (pytest, the test database, `--reuse-db`) in a fresh process:
300 `brain_query` calls through Django's test client after 30 warm-up calls, the process's CPU time per
call (all its threads, the span exporter's included). CPU time, unlike calls/s under 50 clients, barely
moves with what else runs on the machine. Spans go over OTLP/HTTP to a sink in this process that reads and
drops them (a collector elsewhere costs the service nothing). Arms (`--arms`):

    (every arm: BRAIN_EMBEDDER=off, as bench_load serves)
    off        HYPERGUILD_METRICS=0, no OTEL_EXPORTER_OTLP_ENDPOINT
    metrics    /metrics counting every request and MCP call
    default    metrics, and tracing on with its default sampler (docs/operations.md)
    all        metrics, and every request traced (OTEL_TRACES_SAMPLER=parentbased_always_on)
    nodb       as `all`, without the per-query database spans (HYPERGUILD_TRACE_DATABASE=0)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.http import FakeHTTPServer, Response  # noqa: E402 (after the path set-up)

FIGURE = re.compile(r"CPU_PER_CALL_MS ([\d.]+)")


def run(env: dict[str, str]) -> float:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "bench/tracing_cpu_probe.py",
        "-q",
        "-s",
        "--reuse-db",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-o",
        "addopts=",
        "-p",
        "tests.session_start",
    ]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    match = FIGURE.search(out.stdout)
    if out.returncode != 0 or match is None:
        raise SystemExit(f"the probe failed:\n{out.stdout[-3000:]}\n{out.stderr[-2000:]}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--arms", default="off,metrics,default,all,nodb")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"BRAIN_EMBEDDER": "off"}
    names = args.arms.split(",")
    exports: list[int] = []
    with FakeHTTPServer(lambda request: exports.append(len(request.raw)) or Response(200, raw=b"")) as sink:
        tracing = {**base, "HYPERGUILD_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url}
        arms = {
            "off": {**base, "HYPERGUILD_METRICS": "0"},
            "metrics": {**base, "HYPERGUILD_METRICS": "1"},
            "default": tracing,
            "all": {**tracing, "OTEL_TRACES_SAMPLER": "parentbased_always_on"},
            "nodb": {**tracing, "OTEL_TRACES_SAMPLER": "parentbased_always_on", "HYPERGUILD_TRACE_DATABASE": "0"},
        }
        figures: dict[str, list[float]] = {name: [] for name in names}
        for round_number in range(1, args.rounds + 1):
            for name in names if round_number % 2 else list(reversed(names)):
                figures[name].append(run(arms[name]))
                print(f"round {round_number} {name:8}: {figures[name][-1]:.3f} ms CPU per call", flush=True)
    print_medians(figures, exports, "rounds")


def print_medians(figures: dict[str, list[float]], exports: list[int], each: str) -> None:
    """Each arm's median CPU per call against the first arm's, its `each` (rounds, runs) and what the sink got."""
    first = next(iter(figures))
    off = statistics.median(figures[first])
    for name, values in figures.items():
        median = statistics.median(values)
        print(
            f"{name:8}: median {median:.3f} ms CPU per call ({(median / off - 1) * 100:+.1f} % vs {first}); "
            f"{each} {', '.join(f'{v:.3f}' for v in values)}"
        )
    print(f"OTLP exports received: {len(exports)} ({sum(exports) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
