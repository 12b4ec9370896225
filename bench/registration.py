"""OAuth registration under abuse: does `/query` stay quick while many addresses register clients?

    .venv/bin/python bench/registration.py                       # 50 addresses, 30 s, /query 5/s
    .venv/bin/python bench/registration.py --clients 50 --seconds 30 --query-rate 5

(Formerly `manage.py bench_registration`; the options are the same.)

Issue 35, finding 7: one dynamic registration (RFC 7591) cost about 0.3 s of CPU (a hashed client
secret), and 50 clients registering for 30 s took `/query` from 0.34 s to time-outs.

It creates a scratch database (`hyperguild_eval_<pid>`, dropped at the end) with 2,000 synthetic notes,
then prints:

1. the CPU one registration costs in this process (`time.process_time`, through Django's whole request
   stack): a public client (`token_endpoint_auth_method: none`, as Claude Code registers) and, for
   comparison, a confidential one (its secret is still hashed);
2. with the real server started as `make run` does (`manage.py serve --no-worker`): `/query` p50/p95/p99
   at `--query-rate` calls/s (open loop) for 10 s alone, then for `--seconds` while `--clients` clients,
   each from its own loopback address (127.0.0.2, 127.0.0.3, … bound as the socket's source address),
   register clients back to back; the answers they got (201, 429 from the per-address limit, other,
   no answer) and the web processes' CPU per registration call.

The machine's load average is printed first: other programs share its cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.conf import settings  # noqa: E402
from django.core.management.base import CommandError, CommandParser  # noqa: E402
from django.db import connections  # noqa: E402
from django.test import Client  # noqa: E402

from bench.serving import cpu_model, database_url, free_port, server_cpu_seconds  # noqa: E402
from bench.synthetic import SyntheticCorpus, store_synthetic_notes  # noqa: E402
from brain.evaluation import percentile  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402

TOKEN = "bench-registration-token"
NOTES = 2000
REQUEST_TIMEOUT = 30.0


def registration_body(number: int, auth_method: str = "none") -> bytes:
    return json.dumps(
        {
            "client_name": f"bench client {number}",
            "redirect_uris": [f"http://127.0.0.1:{20000 + number % 1000}/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method,
        }
    ).encode()


async def http_post(port: int, path: str, body: bytes, *, source: str = "127.0.0.1", token: str = "") -> int:
    """One POST on a new connection from `source`; the status, 0 when no answer came in REQUEST_TIMEOUT."""
    writer = None
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            auth = f"Authorization: Bearer {token}\r\n" if token else ""
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n"
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


class Command(BenchCommand):
    help = "OAuth dynamic registration from many addresses against /query latency (issue 35, finding 7)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--clients", type=int, default=50, help="registering clients, one loopback address each")
        parser.add_argument("--seconds", type=float, default=30.0, help="how long they register")
        parser.add_argument("--query-rate", type=float, default=5.0, help="/query calls started per second")
        parser.add_argument("--samples", type=int, default=20, help="registrations timed in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["clients"] <= 250:
            raise CommandError("--clients takes 1 to 250 (addresses 127.0.0.2 onwards)")
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
            self.cpu_per_registration(options["samples"])
            connections["default"].close()
            self.against_the_server(corpus, options)
        self.stdout.write(self.style.SUCCESS("bench_registration done; scratch database dropped"))

    def cpu_per_registration(self, samples: int) -> None:
        settings.HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR = 10**6  # this measurement only, in this process
        client = Client()
        for auth_method, label in (
            ("none", "public client (Claude Code's kind)"),
            ("client_secret_post", "confidential client (secret hashed)"),
        ):
            spent = []
            for number in range(samples):
                started = time.process_time()
                answer = client.post(
                    "/oauth/register/",
                    registration_body(number, auth_method),
                    content_type="application/json",
                    REMOTE_ADDR=f"10.0.{number}.1",
                    HTTP_HOST="127.0.0.1",
                )
                spent.append(time.process_time() - started)
                if answer.status_code != 201:
                    raise CommandError(f"registration answered {answer.status_code}: {answer.content[:300]!r}")
            spent.sort()
            self.stdout.write(
                f"CPU per registration, {label}: median {spent[len(spent) // 2] * 1000:.1f} ms, "
                f"max {spent[-1] * 1000:.1f} ms ({samples} in this process)"
            )

    def against_the_server(self, corpus: SyntheticCorpus, options: dict[str, Any]) -> None:
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connections["default"].settings_dict),
            "BRAIN_EMBEDDER": "off",
            "BRAIN_MCP_TOKEN": TOKEN,
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
            asyncio.run(self.drive(port, server, corpus, options))
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)

    async def drive(
        self, port: int, server: subprocess.Popen[bytes], corpus: SyntheticCorpus, options: dict[str, Any]
    ) -> None:
        for _ in range(600):
            if server.poll() is not None:
                raise CommandError(f"the server exited with {server.returncode}")
            if await http_post(port, "/query", b'{"query": "warm up"}', token=TOKEN) == 200:
                break
            await asyncio.sleep(0.2)
        queries = [corpus.query() for _ in range(500)]
        # Each web process builds its search index on its first query: warm them all before measuring.
        for _ in range(3):
            await asyncio.gather(
                *(http_post(port, "/query", json.dumps({"query": text}).encode(), token=TOKEN) for text in queries[:20])
            )

        async def query_phase(seconds: float) -> tuple[list[float], int]:
            latencies: list[float] = []
            failed = 0
            tasks = []

            async def one(number: int) -> None:
                nonlocal failed
                body = json.dumps({"query": queries[number % len(queries)], "limit": 10}).encode()
                started = time.perf_counter()
                status = await http_post(port, "/query", body, token=TOKEN)
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    failed += 1

            begun = time.perf_counter()
            number = 0
            while time.perf_counter() - begun < seconds:  # open loop: started on time, whatever the latency
                tasks.append(asyncio.create_task(one(number)))
                number += 1
                await asyncio.sleep(max(0.0, begun + number / options["query_rate"] - time.perf_counter()))
            await asyncio.gather(*tasks)
            return latencies, failed

        def line(name: str, latencies: list[float], failed: int) -> str:
            if not latencies:
                return f"/query {name}: no answer ({failed} failed)"
            return (
                f"/query {name}: {len(latencies)} answered, {failed} failed; p50 {percentile(latencies, 50):.3f} s, "
                f"p95 {percentile(latencies, 95):.3f} s, p99 {percentile(latencies, 99):.3f} s, "
                f"max {max(latencies):.3f} s"
            )

        quiet = await query_phase(10.0)
        self.stdout.write(line("alone, 10 s", *quiet))

        statuses: Counter[int] = Counter()
        stop = asyncio.Event()

        async def registrar(index: int) -> None:
            source = f"127.0.0.{index + 2}"
            number = index * 100_000
            while not stop.is_set():
                statuses[await http_post(port, "/oauth/register/", registration_body(number), source=source)] += 1
                number += 1

        cpu_before = server_cpu_seconds(server)
        registrars = [asyncio.create_task(registrar(index)) for index in range(options["clients"])]
        loaded = await query_phase(options["seconds"])
        stop.set()
        await asyncio.gather(*registrars)
        cpu = server_cpu_seconds(server) - cpu_before
        self.stdout.write(line(f"while {options['clients']} addresses register, {options['seconds']:g} s", *loaded))
        calls = sum(statuses.values())
        shown = ", ".join(
            f"{'no answer' if status == 0 else status}: {count}" for status, count in sorted(statuses.items())
        )
        self.stdout.write(
            f"registration calls: {calls} ({shown}); web processes' CPU {cpu:.1f} s, "
            f"{cpu / max(calls, 1) * 1000:.1f} ms per call (queries included)"
        )


if __name__ == "__main__":
    run(Command())
