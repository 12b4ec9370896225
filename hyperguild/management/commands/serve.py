"""`manage.py serve`: what `make run` runs.

Migrates, makes an admin account if there is none, starts the ASGI server
(uvicorn) and the django-q2 cluster as child processes, prints the endpoint
URLs and the `claude mcp add` lines, and stops everything on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from hyperguild.actions import do_ensure_admin_account, do_ensure_schedules
from hyperguild.checks import public_bind_problem
from hyperguild.lib.embedded_db import stop_embedded_database
from hyperguild.mcp.registry import all_endpoints


def claude_mcp_add_line(name: str, url: str, token: str) -> str:
    line = f"claude mcp add --transport http hyperguild-{name} {url}"
    if token:
        line += f' --header "Authorization: Bearer {token}"'
    return line


class Command(BaseCommand):
    help = "Set up the database and run the web server and the task worker until Ctrl-C."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=settings.HYPERGUILD_HOST, help="address to bind (default: %(default)s)")
        parser.add_argument("--port", type=int, default=settings.HYPERGUILD_PORT, help="port (default: %(default)s)")
        parser.add_argument("--no-worker", action="store_true", help="do not start the django-q2 cluster")

    def handle(self, *args, host: str, port: int, no_worker: bool, **options) -> None:
        problem = public_bind_problem(host)
        if problem:
            raise CommandError(problem)
        db_was_running = self._embedded_db_running()
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("database ready, migrations applied")
        user, generated = do_ensure_admin_account(settings.HYPERGUILD_ADMIN_USER, settings.HYPERGUILD_ADMIN_PASSWORD)
        if user is not None:
            if generated:
                self.stdout.write(self.style.WARNING(
                    f"created admin account {user.username!r} with password {generated} (shown once; "
                    "set HYPERGUILD_ADMIN_PASSWORD to choose it)"
                ))
            else:
                self.stdout.write(f"created admin account {user.username!r} (password from HYPERGUILD_ADMIN_PASSWORD)")
        do_ensure_schedules()

        children: list[subprocess.Popen] = []
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "hyperguild.asgi:application", "--host", host, "--port", str(port),
             "--timeout-graceful-shutdown", "5", "--no-access-log", "--lifespan", "off"],
            start_new_session=True,
        )
        children.append(server)
        if not no_worker:
            worker = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=settings.BASE_DIR, start_new_session=True)
            children.append(worker)
            from django_q.tasks import async_task

            async_task("hyperguild.tasks.heartbeat")  # healthy as soon as the worker runs, not a minute later

        stopping = False

        def stop(signum, frame) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
            if self._wait_ready(base, server):
                self._print_banner(settings.HYPERGUILD_PUBLIC_URL or base)
            while not stopping:
                for child in children:
                    if child.poll() is not None:
                        self.stderr.write(f"process {child.args[2] if len(child.args) > 2 else child.args} exited with {child.returncode}; stopping")
                        stopping = True
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
            if not db_was_running and not os.environ.get("DATABASE_URL"):
                stop_embedded_database(settings.DATA_DIR)
            self.stdout.write(self.style.SUCCESS("stopped"))

    def _embedded_db_running(self) -> bool:
        # settings already started the embedded server if it was down; the
        # marker tells whether this process was the one that started it.
        return os.environ.get("HYPERGUILD_DB_STARTED_HERE") != "1"

    def _wait_ready(self, base: str, server: subprocess.Popen) -> bool:
        for _ in range(100):
            if server.poll() is not None:
                return False
            try:
                httpx.get(f"{base}/health", timeout=1.0)
                return True
            except httpx.HTTPError:
                time.sleep(0.2)
        return False

    def _print_banner(self, base: str) -> None:
        self.stdout.write(self.style.SUCCESS(f"hyperguild {settings.VERSION} is running at {base}/"))
        self.stdout.write(f"  review UI and admin: {base}/  {base}/admin/   health: {base}/health")
        self.stdout.write("  MCP endpoints, ready to paste:")
        for endpoint in all_endpoints():
            url = f"{base}/mcp/{endpoint.name}"
            self.stdout.write(f"    {claude_mcp_add_line(endpoint.name, url, endpoint.token())}")
        self.stdout.write("Press Ctrl-C to stop.")
