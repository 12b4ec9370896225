"""`manage.py serve`: what `make run` runs.

Migrates (when a migration is unapplied), makes an admin account if there is none, starts the web server
and the django-q2 cluster as child processes, prints the endpoint
URLs, the Claude Code plugin lines and the `claude mcp add` lines, and stops everything on Ctrl-C.

The web server is HYPERGUILD_SERVER (or `--server`), a stock server running Django's own
handler: `granian` (WSGI, `hyperguild.wsgi:application`, the default), `gunicorn` (WSGI, gthread
workers) or `uvicorn` (ASGI, `hyperguild.asgi:application`). Each runs HYPERGUILD_WEB_WORKERS
processes on one listening socket and replaces a process that dies; `serve` starts the server
again if it stops altogether.

Without DATABASE_URL it also supervises the embedded PostgreSQL: checked
every `DB_CHECK_SECONDS`, started again if its postmaster died (the web
server and the worker reconnect on their next query).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django_q.tasks import async_task

from hyperguild.actions import do_ensure_admin_account, do_ensure_schedules
from hyperguild.checks import public_bind_problem
from hyperguild.contributions import serve_banner_lines, serve_start_hooks
from hyperguild.lib.embedded_db import (
    embedded_database_url,
    ensure_embedded_database,
    release_database,
    started_by_this_process,
    stop_embedded_database,
)
from hyperguild.lib.llm import gateway_status
from hyperguild.management.commands.plugin_setup import setup_lines
from hyperguild.mcp.registry import all_endpoints
from hyperguild.serving import SERVE_GATE, SERVE_PID, WEB_PROCESS

WORKER_RESTART_SECONDS = 5  # at most one restart of a dying worker cluster this often
DB_CHECK_SECONDS = 1.0


def unapplied_migrations() -> int:
    """How many migrations `migrate` would apply to the default database (the same plan it makes), plus one if an
    app without migrations has models (`migrate` creates their tables every time: `--run-syncdb`)."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    synced = any(next(iter(apps.get_app_config(label).get_models()), None) for label in executor.loader.unmigrated_apps)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes())) + int(synced)


def port_taken(host: str, port: int) -> bool:
    """True if something already listens on (host, port) — another program, or another serve."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def web_command(server: str, host: str, port: int, workers: int) -> list[str]:
    """The command line of the web server `serve` starts: `workers` processes on (host, port)."""
    threads = str(settings.HYPERGUILD_WEB_THREADS)
    if server == "granian":
        # Django's WSGI handler on granian's processes, HYPERGUILD_WEB_THREADS threads each (bench/RESULTS.md,
        # "Stock and custom web serving", has the figures that made it the default).
        return [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "wsgi",
            "hyperguild.wsgi:application",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--blocking-threads",
            threads,
            "--respawn-failed-workers",
            "--respawn-interval",
            "1",
            "--workers-kill-timeout",
            "5",
        ]
    if server == "gunicorn":
        bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "hyperguild.wsgi:application",
            "--bind",
            bind,
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            threads,
            "--graceful-timeout",
            "5",
        ]
    # uvicorn: Django's ASGI handler.
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "hyperguild.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--lifespan",
        "off",
        "--timeout-graceful-shutdown",
        "5",
    ]


def metrics_dir(port: int) -> Path:
    """An empty folder for the web processes' metric files (PROMETHEUS_MULTIPROC_DIR), unless one is set."""
    configured = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    folder = Path(configured) if configured else settings.DATA_DIR / "metrics" / str(port)
    if folder.exists() and not configured:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def gateway_lines() -> list[str]:
    """What the banner says about the model gateway: where, which models, reachable or not."""
    status = gateway_status(fresh=True)
    models = status["models"]
    if not status["configured"]:
        return [f"model gateway: none ({status['note']})."]
    state = "reachable" if status["reachable"] else f"NOT reachable ({status.get('error', '')})"
    lines = [
        f"model gateway: {status['url']} ({state}); answer model: {models['answer'] or 'none (extractive answers)'}, "
        f"fast: {models['fast']}, thinking: {models['thinking']}."
    ]
    if status.get("single_model"):
        lines.append(
            f"  one model, {models['fast']}, serves both routing roles: routing always uses it, no fail-open retry."
        )
    return lines


def granian_thread_note(threads: int) -> str:
    """granian warns when a WSGI worker may run more threads than 2 × cores + 1; say why that is intended."""
    cores = os.cpu_count() or 1
    if threads <= cores * 2 + 1:
        return ""
    return (
        f"note: granian will warn that {threads} Python threads seem high for {cores} core(s). That is intended: "
        "Django's handler spends most of a request waiting on PostgreSQL or a model, not on the CPU "
        "(bench/RESULTS.md has the figures); set HYPERGUILD_WEB_THREADS to change it."
    )


def masked(token: str) -> str:
    return f"set, {len(token)} characters, not shown" if token else "empty"


class Command(BaseCommand):
    help = "Set up the database and run the web server and the task worker until Ctrl-C."
    _run_checks = True  # unless --skip-checks (execute)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.HYPERGUILD_HOST, help="address to bind (default: %(default)s)")
        parser.add_argument("--port", type=int, default=settings.HYPERGUILD_PORT, help="port (default: %(default)s)")
        parser.add_argument("--no-worker", action="store_true", help="do not start the django-q2 cluster")
        parser.add_argument(
            "--server",
            choices=settings.HYPERGUILD_SERVERS,
            default=settings.HYPERGUILD_SERVER,
            help="web server (default: HYPERGUILD_SERVER = %(default)s)",
        )
        parser.add_argument(
            "--web-workers",
            type=int,
            default=settings.HYPERGUILD_WEB_WORKERS,
            help="web server processes (default: HYPERGUILD_WEB_WORKERS = %(default)s)",
        )

    def execute(self, *args: Any, **options: Any) -> str | None:
        """Run `handle` (which runs the system checks while the web processes load); a start that fails stops the
        database it started (no process left)."""
        self._run_checks = not options.get("skip_checks")
        options["skip_checks"] = True
        try:
            return super().execute(*args, **options)
        except BaseException:
            # A failed system check, a taken port, a failed migration: the embedded PostgreSQL that this
            # process started (manage.py's prepare_process) must not outlive it, or the next `make run` would
            # reuse a server that its Ctrl-C then never stops.
            if self._started_embedded_db():
                stop_embedded_database(settings.DATA_DIR)
            raise

    def _started_embedded_db(self) -> bool:
        return not os.environ.get("DATABASE_URL") and started_by_this_process(settings.DATA_DIR)

    def handle(
        self, *args: Any, host: str, port: int, no_worker: bool, web_workers: int = 1, server: str = "", **options: Any
    ) -> None:
        server = server or settings.HYPERGUILD_SERVER
        problem = public_bind_problem(host)
        if problem:
            raise CommandError(problem)
        if port_taken(host, port):
            raise CommandError(
                f"Port {port} on {host} is already in use: stop what listens there, or choose another port with "
                f"HYPERGUILD_PORT (e.g. `HYPERGUILD_PORT={port + 1} make run`; `manage.py serve --port {port + 1}` "
                "works too)."
            )
        db_was_running = self._embedded_db_running()
        web_started: dict[int, float] = {}
        supervise_db = not os.environ.get("DATABASE_URL")
        child_env = dict(os.environ)
        if supervise_db:
            # The children get the address of the server this process supervises; they never start it, so
            # a web or worker process started again after a crash of the database cannot race the check
            # below (which logs the restart and resets this process's connections).
            child_env["HYPERGUILD_EMBEDDED_DB_URL"] = embedded_database_url(settings.DATA_DIR)
        # Several web processes answer /metrics: each keeps its counters in files here, a scrape adds them up
        # (observability.metrics). Emptied at each start, so the counters start at 0 with the service.
        child_env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir(port))
        # The web processes load the application (seconds of imports each) and then wait at this gate, which
        # opens once the checks, the migrations, the admin account and the schedules below are done: they load
        # while this process works instead of after it, and none answers a request before it opens.
        gate = settings.DATA_DIR / "serve" / f"{port}.open"
        gate.unlink(missing_ok=True)
        gate.parent.mkdir(parents=True, exist_ok=True)
        child_env[SERVE_GATE] = str(gate)
        child_env[SERVE_PID] = str(os.getpid())

        def start_web() -> subprocess.Popen[bytes]:
            web = subprocess.Popen(
                web_command(server, host, port, max(1, web_workers)),
                cwd=settings.BASE_DIR,
                env=child_env,
                start_new_session=True,
            )
            web_started[web.pid] = time.monotonic()
            return web

        def start_web_processes() -> subprocess.Popen[bytes]:
            processes = max(1, web_workers)
            self._step(f"starting {processes} web process{'es' if processes > 1 else ''} ({server}) on {host}:{port}…")
            if server == "granian" and (note := granian_thread_note(settings.HYPERGUILD_WEB_THREADS)):
                self._step(note)
            return start_web()

        pending = unapplied_migrations()
        # With nothing to migrate (a restart), the web processes start now and load while the checks run; with
        # migrations to apply, after them (a long migration would otherwise keep them waiting at the gate).
        web = None if pending else start_web_processes()
        try:
            if self._run_checks:
                self.check()  # what BaseCommand.execute would have run before handle()
            if pending:
                self._step(f"database ready; applying {pending} migration{'s' if pending > 1 else ''}…")
                call_command("migrate", interactive=False, verbosity=0)
                self._step("migrations applied")
            else:
                # A restart: the schema is up to date, and `migrate` (its post-migrate pass over every model's
                # content type and permissions) would only cost the start time (bench/RESULTS.md, "Restart").
                self._step("database ready; no migration to apply")
            user, generated = do_ensure_admin_account(
                settings.HYPERGUILD_ADMIN_USER, settings.HYPERGUILD_ADMIN_PASSWORD
            )
            if user is not None:
                name = settings.HYPERGUILD_ADMIN_USER  # the account was made with this username
                if generated:
                    self.stdout.write(
                        self.style.WARNING(
                            f"created admin account {name!r} with password {generated} (shown once; "
                            "set HYPERGUILD_ADMIN_PASSWORD to choose it)"
                        )
                    )
                else:
                    self.stdout.write(f"created admin account {name!r} (password from HYPERGUILD_ADMIN_PASSWORD)")
            do_ensure_schedules()
            if not no_worker:
                for hook in serve_start_hooks():
                    hook()  # work the last stop left (an embedding backlog) is queued again, not left waiting
        except BaseException:
            if web is not None:  # a failed check or step: the web processes never open
                os.killpg(web.pid, signal.SIGKILL)
                web.wait()
            gate.unlink(missing_ok=True)
            raise
        gate.touch()
        if web is None:
            web = start_web_processes()
        children: list[subprocess.Popen[bytes]] = [web]

        # The cluster connects without a pool (only web processes pool; see settings' _database): django-q2
        # forks its workers, and a pool opened before the fork would share its sockets between them.
        worker_env = {
            name: value for name, value in child_env.items() if name not in (WEB_PROCESS, SERVE_GATE, SERVE_PID)
        }

        def start_worker(queue: str = "") -> subprocess.Popen[bytes]:
            # Q_CLUSTER_NAME picks django-q2's ALT_CLUSTERS entry: the embedding cluster, or the default one.
            env = {**worker_env, "Q_CLUSTER_NAME": queue} if queue else worker_env
            process = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=settings.BASE_DIR,
                env=env,
                start_new_session=True,
            )
            worker_queues[process.pid] = queue
            return process

        worker_queues: dict[int, str] = {}
        if not no_worker:
            if settings.BRAIN_EMBEDDER == "off":
                self._step("starting the task worker (django-q2 cluster)…")
                children.append(start_worker())
            else:
                self._step("starting the task workers (django-q2 clusters: the default queue and the embedding one)…")
                children.append(start_worker())
                children.append(start_worker(settings.EMBED_QUEUE))
            async_task("hyperguild.tasks.heartbeat")  # healthy as soon as the worker runs, not a minute later

        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
            self._step("waiting for the web server to answer…")
            if self._wait_ready(base, web):
                self._print_banner(settings.HYPERGUILD_PUBLIC_URL or base)
                self._warn_open_endpoints()
            next_db_check = time.monotonic() + DB_CHECK_SECONDS
            last_worker_start = time.monotonic()
            while not stopping:
                for index, child in enumerate(children):
                    if child.poll() is None:
                        continue
                    if child is web:
                        # The server replaces a web process that dies; if the server itself stops, it is
                        # started again, unless it could not start at all.
                        if time.monotonic() - web_started.pop(child.pid, 0.0) < WORKER_RESTART_SECONDS:
                            self.stderr.write(f"the web server exited with {child.returncode} at start; stopping")
                            stopping = True
                            break
                        self.stderr.write(f"the web server exited with {child.returncode}; starting it again")
                        web = children[index] = start_web()
                    elif time.monotonic() - last_worker_start >= WORKER_RESTART_SECONDS:
                        # The worker cluster can die with the database (an outage mid-poll): start it
                        # again rather than take the web server down with it.
                        queue = worker_queues.pop(child.pid, "")
                        self.stderr.write(
                            f"the worker (qcluster {queue or 'default'}) exited with {child.returncode}; starting it again"
                        )
                        children[index] = start_worker(queue)
                        last_worker_start = time.monotonic()
                if supervise_db and time.monotonic() >= next_db_check:
                    self.supervise_database()
                    next_db_check = time.monotonic() + DB_CHECK_SECONDS
                time.sleep(0.3)
        finally:
            self.stdout.write("stopping…")
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 15
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
            gate.unlink(missing_ok=True)
            if not db_was_running and supervise_db:
                # Stopped unless a one-off command still uses it (then the last of them stops it).
                release_database(settings.DATA_DIR)
            self.stdout.write(self.style.SUCCESS("stopped"))

    def supervise_database(self) -> bool:
        """Start the embedded PostgreSQL again if it died; True if it was restarted."""
        try:
            restarted = ensure_embedded_database(settings.DATA_DIR)
        except Exception as exc:  # noqa: BLE001 - not startable yet (old backends exiting): next check
            self.stderr.write(f"the embedded PostgreSQL is down and did not start yet ({type(exc).__name__}); retrying")
            return False
        if restarted:
            connections.close_all()  # this process's own connections point at the dead server
            self.stderr.write(self.style.WARNING("the embedded PostgreSQL had stopped; started it again"))
        return restarted

    def _embedded_db_running(self) -> bool:
        # manage.py (prepare_process) already started the embedded server if it was down; True if it ran before.
        return not started_by_this_process(settings.DATA_DIR)

    def _step(self, message: str) -> None:
        """One line of progress, shown at once even when stdout is a pipe (`make run | tee`)."""
        self.stdout.write(message)
        self.stdout.flush()

    def _warn_open_endpoints(self) -> None:
        """Loudly name every endpoint that any local process can call: no token is set for it."""
        open_endpoints = [e for e in all_endpoints() if e.token_setting and not e.token()]
        if not open_endpoints:
            return
        names = ", ".join(f"/mcp/{e.name} ({e.token_setting} is empty)" for e in open_endpoints)
        lines = [
            "",
            f"WARNING: NO TOKEN: {names}.",
            "  Every program on this machine can call "
            + ("it" if len(open_endpoints) == 1 else "them")
            + " without a password.",
        ]
        if any(e.name == "supervisor" for e in open_endpoints):
            lines.append("  /mcp/supervisor runs Claude Code and test commands in your projects: that is shell access.")
        lines.append(
            "  Set the tokens in the environment of `make run`, e.g. "
            + " ".join(f"{e.token_setting}=$(openssl rand -hex 32)" for e in open_endpoints[:1])
            + ", and export the same values where you run `claude`."
        )
        for line in lines:
            self.stdout.write(self.style.ERROR(line) if line.startswith("WARNING") else self.style.WARNING(line))
        self.stdout.flush()

    def _wait_ready(self, base: str, server: subprocess.Popen[bytes]) -> bool:
        # /health/live, not /health: /health answers 503 until the worker's first heartbeat, and every
        # 503 is an ERROR line in the log, which would greet each start.
        for _ in range(100):
            if server.poll() is not None:
                return False
            try:
                httpx.get(f"{base}/health/live", timeout=1.0)
                return True
            except httpx.HTTPError:
                time.sleep(0.2)
        return False

    def _print_banner(self, base: str) -> None:
        self.stdout.write(self.style.SUCCESS(f"hyperguild {settings.VERSION} is running at {base}/"))
        self.stdout.write(f"  review UI and admin: {base}/  {base}/admin/   health: {base}/health")
        for line in setup_lines(base):
            self.stdout.write(f"  {line}")
        endpoints = all_endpoints()
        with_token = [e for e in endpoints if e.token_setting and e.token()]
        if with_token:
            self.stdout.write(
                "  Tokens are not printed: "
                + ", ".join(f"{e.token_setting} ({masked(e.token())})" for e in with_token)
                + "."
            )
            self.stdout.write(
                "  Each line reads its token from the shell variable of the same name: export it, "
                "with the value this server was started with, before pasting."
            )
        self.stdout.write(
            f"  People sign in at {base}/login/ and make their own tokens at {base}/tokens/; "
            "without a header, Claude Code signs in through the browser (docs/people.md)."
        )
        for line in gateway_lines():
            self.stdout.write(f"  {line}")
        for line in serve_banner_lines():
            self.stdout.write(f"  {line}")
        self.stdout.write("Press Ctrl-C to stop.")
