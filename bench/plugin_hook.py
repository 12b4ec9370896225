"""How long one run of the plugin's hook script takes, against a stub service that answers `{}` at once.

    .venv/bin/python bench/plugin_hook.py [--runs 100] [--against OTHER_SCRIPT]

Prints the median and p95 wall time of `sh hyperguild-hook Stop` (the hook's input on stdin, as Claude
Code runs it) with the service up, and with it down (connection refused: the event goes to the spool).
`--against` times another copy of the script the same way, e.g. the one on main
(`git show main:claude-plugin/hyperguild/hooks/hyperguild-hook > /tmp/old-hook`). Only the script's own
cost is measured: the stub does no work.

    .venv/bin/python bench/plugin_hook.py --edit-hook [--notes 10000] [--runs 200]

times the edit hook (`hyperguild-edit-hook`, PostToolUse of an Edit, issue 48) against the real service
(uvicorn in this process, a scratch database dropped at the end): a git repository of `--notes / 20` files
with 20 functions each, a project with one wiki note anchored to each function (`--notes` notes, verified
once), and the same hook for an Edit in a project with no notes at all. Prints median and p95 for an edit
that renames an anchored function (the answer names the note), an edit beside the anchors (no answer),
and the project without anchors; the difference of the p95s is the anchors' cost.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "claude-plugin" / "hyperguild" / "hooks" / "hyperguild-hook"
PAYLOAD = json.dumps(
    {"session_id": "bench-1", "cwd": "/tmp/x", "hook_event_name": "Stop", "transcript_path": "/tmp/t.jsonl"}
)


class Answer(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args) -> None:
        pass


def timed_runs(script: Path, url: str, runs: int, spool: str) -> list[float]:
    env = {"PATH": os.environ["PATH"], "HOME": spool, "HYPERGUILD_URL": url, "HYPERGUILD_SPOOL_DIR": spool}
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(["sh", str(script), "Stop"], input=PAYLOAD, text=True, env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - began) * 1000)
    return times


def line(label: str, times: list[float]) -> str:
    return f"{label:45s} median {statistics.median(times):6.1f} ms   p95 {sorted(times)[int(len(times) * 0.95) - 1]:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--against", type=Path, help="another copy of the hook script to time the same way")
    parser.add_argument("--edit-hook", action="store_true", help="time the edit hook against the real service")
    parser.add_argument("--notes", type=int, default=10000, help="anchored notes for --edit-hook")
    args = parser.parse_args()
    if args.edit_hook:
        edit_hook_bench(args.notes, args.runs)
        return
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    up = f"http://127.0.0.1:{server.server_address[1]}"
    closed = socket_port_closed()
    with tempfile.TemporaryDirectory() as spool:
        if args.against:
            print(line(f"{args.against.name}, service up", timed_runs(args.against, up, args.runs, spool)))
        print(line("hyperguild-hook, service up", timed_runs(SCRIPT, up, args.runs, spool)))
        print(line("hyperguild-hook, service down (spooling)", timed_runs(SCRIPT, closed, args.runs, spool)))
    server.shutdown()


EDIT_HOOK = SCRIPT.parent / "hyperguild-edit-hook"
FUNCTIONS_PER_FILE = 20


def edit_payload(cwd: Path, path: str, old: str, new: str) -> str:
    file_path = str(cwd / path)
    return json.dumps(
        {
            "session_id": "bench-edit-1",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_use_id": "toolu_bench",
            "tool_input": {"file_path": file_path, "old_string": old, "new_string": new, "replace_all": False},
            "tool_response": {"filePath": file_path, "oldString": old, "newString": new},
        }
    )


def timed_edit_hook(url: str, payload: str, runs: int, expect_answer: bool) -> list[float]:
    env = {"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir(), "HYPERGUILD_URL": url}
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(
            ["sh", str(EDIT_HOOK)], input=payload, text=True, env=env, capture_output=True, check=True
        )
        times.append((time.perf_counter() - began) * 1000)
        if bool(done.stdout.strip()) != expect_answer:
            raise SystemExit(
                f"the edit hook answered {done.stdout!r}; expected {'an answer' if expect_answer else 'none'}"
            )
    return times


def edit_hook_bench(note_count: int, runs: int) -> None:
    """The edit hook's added latency with `note_count` anchored notes (see the module's docstring)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from hyperguild.boot import setup_django

    setup_django()
    from django.conf import settings

    from brain.actions import do_sync_project
    from brain.models import Anchor, Note, NoteStatus, Project
    from brain.scratch import ScratchDatabase
    from hyperguild.asgi import application
    from tests.conftest import ThreadedServer, free_port

    files = max(1, note_count // FUNCTIONS_PER_FILE)
    with tempfile.TemporaryDirectory(prefix="edit-hook-bench-") as tmp, ScratchDatabase(sys.stdout):
        settings.SUPERVISOR_ALLOWED_ROOTS = [tmp]
        settings.BRAIN_MCP_TOKEN = ""  # the endpoint open, as on a laptop without tokens: no auth cost in the figure
        settings.BRAIN_EMBEDDER = "off"
        repo, empty = Path(tmp) / "anchored", Path(tmp) / "plain"
        for folder in (repo, empty):
            (folder / "pkg").mkdir(parents=True)
            for number in range(files):
                lines = [
                    f"def func_{number}_{n}(value):\n    return value + {n}\n\n" for n in range(FUNCTIONS_PER_FILE)
                ]
                (folder / "pkg" / f"mod_{number}.py").write_text("\n".join(lines))
            for command in (
                ["init", "-q", "-b", "main"],
                ["add", "-A"],
                ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "first"],
            ):
                subprocess.run(["git", "-C", str(folder), *command], check=True)
        project = Project.objects.create(name="anchored", repo=str(repo), branch="main")
        Project.objects.create(name="plain", repo=str(empty), branch="main")
        Note.objects.bulk_create(
            [
                Note(
                    slug=f"bench/func-{number}-{n}",
                    title=f"func_{number}_{n}",
                    status=NoteStatus.WIKI,
                    wing="concepts",
                    body=f"`pkg/mod_{number}.py` defines `func_{number}_{n}`.",
                    project=project,
                )
                for number in range(files)
                for n in range(FUNCTIONS_PER_FILE)
            ],
            batch_size=2000,
        )
        began = time.perf_counter()
        do_sync_project(project)
        print(
            f"{Note.objects.count()} notes, {Anchor.objects.count()} anchors, verified in "
            f"{time.perf_counter() - began:.1f} s"
        )
        server = ThreadedServer(application, free_port())
        server.start()
        target = f"pkg/mod_{files // 2}.py"
        rename = edit_payload(repo, target, f"def func_{files // 2}_3(value):", f"def renamed_{files // 2}_3(value):")
        beside = edit_payload(repo, target, "    return value + 3\n", "    return value + 3  # same\n")
        plain = edit_payload(empty, target, f"def func_{files // 2}_3(value):", f"def renamed_{files // 2}_3(value):")
        for payload, answer in ((rename, True), (beside, False), (plain, False)):
            timed_edit_hook(server.url, payload, 5, answer)  # warm: connections, caches
        results = {
            "rename of an anchored function (answer)": timed_edit_hook(server.url, rename, runs, True),
            "edit beside the anchors (no answer)": timed_edit_hook(server.url, beside, runs, False),
            "project without anchors (no answer)": timed_edit_hook(server.url, plain, runs, False),
        }
        for label, times in results.items():
            print(line(f"edit hook, {label}", times))
        base = p95(results["project without anchors (no answer)"])
        for label in ("rename of an anchored function (answer)", "edit beside the anchors (no answer)"):
            print(f"added p95, {label}: {p95(results[label]) - base:+.1f} ms")
        server.stop()


def p95(times: list[float]) -> float:
    return sorted(times)[int(len(times) * 0.95) - 1]


def socket_port_closed() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


if __name__ == "__main__":
    main()
