"""CPU per `brain_query` call with metrics and tracing off and on, arms interleaved in blocks inside one process.

    .venv/bin/python bench/overhead_cpu.py --runs 2 --arms off,metrics,both

Each run is a fresh process of `bench/overhead_cpu_probe.py` (pytest, the test database, `--reuse-db`) set up as
`serve` sets up a web process (prometheus-client's multiprocess files, tracing configured): 300 notes, then
`--blocks` blocks of `--block` calls per arm, the arms in turn (A B C C B A …), the process's CPU time per call of
each block (all its threads: the span exporter's too, flushed at each block's end), and the minor page faults per call. Spans go over OTLP/HTTP to a
sink in this process that reads and drops them. Unlike bench/tracing_cpu.py (one process per arm), the machine's
other load falls on every arm alike, so a few per cent show. Arms: see the probe.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tracing_cpu import print_medians  # noqa: E402 (after the path set-up)
from tests.fakes.http import FakeHTTPServer, Response  # noqa: E402 (after the path set-up)

FIGURE = re.compile(r"^ARM (\w+) ([\d.]+) ([\d.]+) ", re.M)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--arms", default="off,metrics,both")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--block", type=int, default=25)
    args = parser.parse_args()
    names = args.arms.split(",")
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"BRAIN_EMBEDDER": "off"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "bench/overhead_cpu_probe.py",
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
    figures: dict[str, list[float]] = {name: [] for name in names}
    exports: list[int] = []
    with FakeHTTPServer(lambda request: exports.append(len(request.raw)) or Response(200, raw=b"")) as sink:
        for run in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="overhead-cpu-") as metrics_dir:
                env = base | {
                    "HYPERGUILD_METRICS": "1",
                    "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
                    "PROMETHEUS_MULTIPROC_DIR": metrics_dir,
                    "PROBE_ARMS": ",".join(names),
                    "PROBE_BLOCKS": str(args.blocks),
                    "PROBE_BLOCK": str(args.block),
                }
                out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
            found = {name: (float(ms), float(faults)) for name, ms, faults in FIGURE.findall(out.stdout)}
            if out.returncode != 0 or set(found) != set(names):
                raise SystemExit(f"the probe failed:\n{out.stdout[-3000:]}\n{out.stderr[-2000:]}")
            for name in names:
                figures[name].append(found[name][0])
            print(
                f"run {run}: " + ", ".join(f"{n} {found[n][0]:.3f} ms ({found[n][1]:.0f} faults)" for n in names),
                flush=True,
            )
    print_medians(figures, exports, "runs")


if __name__ == "__main__":
    main()
