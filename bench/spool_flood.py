"""The spool's drop report as a flood: do `/health/live` and `/query` stay quick while a reader floods it?

    .venv/bin/python bench/spool_flood.py                       # 4 senders, 1,500 new session ids each, 30 s
    .venv/bin/python bench/spool_flood.py --senders 4 --ids 1500 --seconds 30 --probe-rate 5

Issue 46, finding 1: a reader sent 4 concurrent ~95 KB bodies `{"entries": [], "dropped": {<1,500 new
session ids>: 1}, "drop_key": …}` to `POST /api/hooks/spool`; each gap was its own transaction at ~4/s, the
four requests held every admission place, and `/health/live` and `/query` timed out at 60 s for minutes.

It creates a scratch database (`hyperguild_eval_<pid>`, dropped at the end) with 2,000 synthetic notes and a
reader with a `sessions:write` token, starts the real server as `make run` does (`manage.py serve
--no-worker`), then prints `/health/live` and `/query` p50/p95/p99 (each at `--probe-rate` calls/s, open loop):

1. alone, 10 s;
2. while `--senders` senders, with the reader's token, post the flood body back to back (new ids every time);
3. while they post bodies within the ceiling (100 new session ids each, the most a request may name),
   back to back, so the lane and the person's rate are what holds them.

with the answers the senders got (200, 400, 429, …) and the gap entries written.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.base import CommandError, CommandParser  # noqa: E402
from django.db import connections  # noqa: E402

from bench.serving import cpu_model, database_url, free_port  # noqa: E402
from bench.synthetic import SyntheticCorpus, store_synthetic_notes  # noqa: E402
from brain.evaluation import percentile  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402
from sessions.inputs import MAX_SPOOL_GAPS  # noqa: E402

SERVICE_TOKEN = "bench-spool-flood-token"
NOTES = 2000
REQUEST_TIMEOUT = 60.0


async def http(port: int, method: str, path: str, body: bytes = b"", *, token: str = "") -> int:
    """One request on a new connection; the status, 0 when no answer came in REQUEST_TIMEOUT."""
    writer = None
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            auth = f"Authorization: Bearer {token}\r\n" if token else ""
            writer.write(
                f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            await reader.read()
            return status
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
        return 0
    finally:
        if writer is not None:
            writer.close()


def flood_body(ids: int) -> bytes:
    """The attacker's body: no entries, `ids` session ids never seen before, each with one dropped entry."""
    run_id = uuid.uuid4().hex[:12]
    dropped = {f"flood-{run_id}-{number:05d}-{uuid.uuid4().hex}": 1 for number in range(ids)}
    return json.dumps({"entries": [], "dropped": dropped, "drop_key": f"k-{run_id}"}).encode()


class Command(BenchCommand):
    help = "The spool's drop report as a flood, against /health/live and /query latency (issue 46, finding 1)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--senders", type=int, default=4, help="concurrent flooding senders")
        parser.add_argument("--ids", type=int, default=1500, help="new session ids in each flood body")
        parser.add_argument("--seconds", type=float, default=30.0, help="how long each flood phase lasts")
        parser.add_argument(
            "--probe-rate", type=float, default=5.0, help="/health/live and /query calls a second, each"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["senders"] <= 64:
            raise CommandError("--senders takes 1 to 64")
        if not 1 <= options["ids"] <= 10_000:
            raise CommandError("--ids takes 1 to 10000 (the schema allowed 10,000 before issue 46)")
        load = os.getloadavg()
        self.stdout.write(
            f"machine: {os.cpu_count()} CPUs ({cpu_model()}), load average {load[0]:.2f} {load[1]:.2f} "
            f"{load[2]:.2f} (other programs share these cores)"
        )
        settings.BRAIN_EMBEDDER = "off"
        with ScratchDatabase(self.stdout) as scratch:
            self.stdout.write(f"scratch database {scratch.name}")
            corpus = SyntheticCorpus(seed=11)
            store_synthetic_notes(corpus, NOTES)
            reader = get_user_model().objects.create_user("flooding-reader", password="bench-only-password-46")
            reader.groups.add(*Group.objects.filter(name="reader"))
            out = io.StringIO()
            call_command("token", "create", reader.username, "--scope", "sessions:write", stdout=out)
            token = out.getvalue().strip().splitlines()[-1]
            connections["default"].close()
            self.against_the_server(corpus, token, options)
            from sessions.models import SessionEntry

            gaps = SessionEntry.objects.filter(kind="gap").count()
            self.stdout.write(f"gap entries written by the floods: {gaps}")
        self.stdout.write(self.style.SUCCESS("spool_flood done; scratch database dropped"))

    def against_the_server(self, corpus: SyntheticCorpus, token: str, options: dict[str, Any]) -> None:
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connections["default"].settings_dict),
            "BRAIN_EMBEDDER": "off",
            "BRAIN_MCP_TOKEN": SERVICE_TOKEN,
            "HYPERGUILD_ADMIN_PASSWORD": "bench-only-password",
        }
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            asyncio.run(self.drive(port, server, corpus, token, options))
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)

    async def drive(
        self, port: int, server: subprocess.Popen[bytes], corpus: SyntheticCorpus, token: str, options: dict[str, Any]
    ) -> None:
        for _ in range(600):
            if server.poll() is not None:
                raise CommandError(f"the server exited with {server.returncode}")
            if await http(port, "POST", "/query", b'{"query": "warm up"}', token=SERVICE_TOKEN) == 200:
                break
            await asyncio.sleep(0.2)
        queries = [corpus.query() for _ in range(500)]
        for _ in range(3):  # each web process builds its search index on its first query
            await asyncio.gather(
                *(
                    http(port, "POST", "/query", json.dumps({"query": text}).encode(), token=SERVICE_TOKEN)
                    for text in queries[:20]
                )
            )

        async def probes(seconds: float) -> dict[str, tuple[list[float], int]]:
            found: dict[str, tuple[list[float], int]] = {"/health/live": ([], 0), "/query": ([], 0)}
            tasks = []

            async def one(path: str, number: int) -> None:
                body = (
                    json.dumps({"query": queries[number % len(queries)], "limit": 10}).encode()
                    if path == "/query"
                    else b""
                )
                started = time.perf_counter()
                status = await http(port, "POST" if path == "/query" else "GET", path, body, token=SERVICE_TOKEN)
                latencies, failed = found[path]
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    found[path] = (latencies, failed + 1)

            begun = time.perf_counter()
            number = 0
            while time.perf_counter() - begun < seconds:  # open loop: started on time, whatever the latency
                tasks += [asyncio.create_task(one(path, number)) for path in found]
                number += 1
                await asyncio.sleep(max(0.0, begun + number / options["probe_rate"] - time.perf_counter()))
            await asyncio.gather(*tasks)
            return found

        def show(phase: str, found: dict[str, tuple[list[float], int]]) -> None:
            for path, (latencies, failed) in found.items():
                if not latencies:
                    self.stdout.write(f"{path} {phase}: no answer ({failed} failed)")
                    continue
                self.stdout.write(
                    f"{path} {phase}: {len(latencies)} answered, {failed} failed; p50 {percentile(latencies, 50):.3f} s, "
                    f"p95 {percentile(latencies, 95):.3f} s, p99 {percentile(latencies, 99):.3f} s, max {max(latencies):.3f} s"
                )

        show("alone, 10 s", await probes(10.0))
        for label, ids in (
            (f"{options['ids']:,} new ids a body", options["ids"]),
            (f"{MAX_SPOOL_GAPS} new ids a body (the ceiling)", MAX_SPOOL_GAPS),
        ):
            statuses: Counter[int] = Counter()
            stored: list[float] = []  # how long each batch the service took (200) took to answer
            stop = asyncio.Event()

            async def sender(
                ids: int = ids,
                stop: asyncio.Event = stop,
                statuses: Counter[int] = statuses,
                stored: list[float] = stored,
            ) -> None:
                while not stop.is_set():
                    body = flood_body(ids)
                    started = time.perf_counter()
                    status = await http(port, "POST", "/api/hooks/spool", body, token=token)
                    statuses[status] += 1
                    if status == 200:
                        stored.append(time.perf_counter() - started)

            senders = [asyncio.create_task(sender()) for _ in range(options["senders"])]
            found = await probes(options["seconds"])
            stop.set()
            await asyncio.gather(*senders)
            show(f"while {options['senders']} senders flood the spool, {label}, {options['seconds']:g} s", found)
            shown = ", ".join(
                f"{'no answer' if status == 0 else status}: {count}" for status, count in sorted(statuses.items())
            )
            self.stdout.write(f"  the senders' answers: {sum(statuses.values())} ({shown})")
            if stored:
                self.stdout.write(
                    f"  a batch taken (200): median {percentile(stored, 50):.2f} s, max {max(stored):.2f} s "
                    f"for {ids} gap entries"
                )


if __name__ == "__main__":
    run(Command())
