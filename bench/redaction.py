"""How long one redaction pass takes (it runs on every write: notes, session entries, worker output, bodies).

    .venv/bin/python bench/redaction.py [--repeat 200]

Prints the time per call for three texts: a 200-byte session entry, a 10 KB note of prose and code, and
100 KB of worker output, and 10 KB of JSON text (escapes decoded for a second look), each without a secret (the common case) and with three secrets in it.
Run it before and after a change to hyperguild/lib/redaction.py (issue 35: the detect-secrets plugins).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hyperguild.boot import setup_django  # noqa: E402

setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)

from hyperguild.lib.redaction import redact  # noqa: E402

PROSE = (
    "Use pg advisory locks to serialise migrations; the runner takes the lock before it reads the plan. "
    "See docs/operations.md for the settings, and the commit 3f9a2c1b7d0e4c55a9e1 for the change.\n"
    "def handler(request):\n    return JsonResponse({'ok': True, 'id': request.id})\n"
)
SECRETS = " key AKIAIOSFODNN7EXAMPLE url postgres://app:s3cret@db:5432/x token hgp_3f9a2c1bq8w7e6r5t4y3u2i1o0p9 "


def per_call(text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        redact(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    texts = {
        "200 B entry": PROSE[:200],
        "10 KB note": (PROSE * 60)[:10_000],
        "100 KB output": (PROSE * 600)[:100_000],
        # Text with JSON escapes (`\n`, `\"`) is read a second time, decoded (issue 46): a raw model response.
        "10 KB JSON text": json.dumps({"content": (PROSE * 60)[:9_000]}),
    }
    print(f"{'text':<16} {'clean (median)':>16} {'3 secrets (median)':>20}")
    for name, text in texts.items():
        clean = per_call(text, args.repeat)
        dirty = per_call(text[: len(text) // 2] + SECRETS + text[len(text) // 2 :], args.repeat)
        print(f"{name:<16} {clean * 1000:>13.3f} ms {dirty * 1000:>17.3f} ms")


if __name__ == "__main__":
    main()
