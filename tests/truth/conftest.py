"""Real git repositories built in tmp dirs, and a project ("ledgerly") whose ten wiki notes cite them."""

from __future__ import annotations

import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.people.conftest import live  # noqa: F401 - the live server with every token set

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Ana",
    "GIT_AUTHOR_EMAIL": "ana@example.com",
    "GIT_COMMITTER_NAME": "Ana",
    "GIT_COMMITTER_EMAIL": "ana@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=GIT_ENV, check=True)
    return done.stdout.strip()


FILES = {
    "ledgerly/workers.py": (
        "from ledgerly.settings import LEDGER_TIMEOUT_SECONDS\n\n\n"
        "def spawn_worker(task):\n    return Worker(task).start()\n\n\n"
        "class Worker:\n    def __init__(self, task):\n        self.task = task\n\n"
        "    def start(self):\n        return self.run(timeout=LEDGER_TIMEOUT_SECONDS)\n"
    ),
    "ledgerly/rounding.py": (
        "from decimal import Decimal\n\nCENT = Decimal('0.01')\nROUNDING = 'ROUND_HALF_UP'\n\n\n"
        "def round_line(amount):\n    return amount.quantize(CENT, rounding=ROUNDING)\n"
    ),
    "ledgerly/legacy_export.py": "import csv\n\n\ndef export_csv(rows, out):\n    csv.writer(out).writerows(rows)\n",
    "ledgerly/settings.py": "LEDGER_TIMEOUT_SECONDS = 30\n",
    "ledgerly/invoices.py": "def invoice_total(lines):\n    return sum(line.amount for line in lines)\n",
    "Makefile": "test:\n\tpytest -q\n",
    "README.md": "# ledgerly\n\nRun `make test`.\n",
}

# Ten wiki notes citing the files above: paths, symbols, quoted lines (fenced and backtick), a command, a setting.
NOTES = {
    "spawn": ("How workers start", "Workers are started by `spawn_worker` in `ledgerly/workers.py`."),
    "worker-start": ("Worker.start", "`Worker.start` runs the task with `self.run(timeout=LEDGER_TIMEOUT_SECONDS)`."),
    "rounding-quote": (
        "Rounding per line",
        "Each invoice line is rounded in `ledgerly/rounding.py`:\n\n```python\n"
        "return amount.quantize(CENT, rounding=ROUNDING)\n```\n",
    ),
    "round-line": ("round_line", "Call `round_line` for one amount; never round a total."),
    "export": ("CSV export", "The CSV export lives in `ledgerly/legacy_export.py` (`export_csv`)."),
    "timeout": ("Worker timeout", "The worker deadline is `LEDGER_TIMEOUT_SECONDS`, in seconds."),
    "make-test": ("Tests", "Run `make test` before you push."),
    "invoices": ("Invoice totals", "`ledgerly/invoices.py` sums the lines (`invoice_total`)."),
    "readme": ("Where to start", "`README.md` explains the set-up; read it first."),
    "explicit": ("The worker class", "There is one class for the work itself."),
}
EXPLICIT_ANCHORS = ["symbol: Worker"]
# What the second commit does: rename a function, edit a quoted line, delete a file.
STALE_AFTER_CHANGE = {"spawn", "rounding-quote", "export"}


@dataclass
class Ledgerly:
    repo: Path
    first: str

    def change(self) -> str:
        """Rename spawn_worker, edit the quoted rounding line, delete legacy_export.py; return the new head."""
        workers = self.repo / "ledgerly/workers.py"
        workers.write_text(workers.read_text().replace("def spawn_worker(", "def start_worker("))
        rounding = self.repo / "ledgerly/rounding.py"
        rounding.write_text(rounding.read_text().replace("rounding=ROUNDING)", "rounding=ROUND_HALF_EVEN)"))
        git(self.repo, "rm", "-q", "ledgerly/legacy_export.py")
        git(self.repo, "commit", "-qam", "Rename spawn_worker, round half-even, drop the CSV export")
        return git(self.repo, "rev-parse", "HEAD")


def make_repo(root: Path, files: dict[str, str] = FILES, name: str = "ledgerly") -> Path:
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"{name}: first version")
    return repo


@pytest.fixture
def code_root(tmp_path, settings) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(root)]
    settings.HYPERGUILD_REPO_MIRRORS_DIR = str(tmp_path / "mirrors")
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.LITELLM_BASE_URL = ""
    return root


def add_project(name: str, repo: str, *folders: str) -> str:
    out = io.StringIO()
    call_command("project", "add", name, "--repo", repo, *[arg for f in folders for arg in ("--folder", f)], stdout=out)
    return out.getvalue()


def write_notes() -> dict:
    from brain.actions import do_ingest_note

    return {
        key: do_ingest_note(
            title=title,
            body=body,
            wing="concepts",
            slug=key,
            frontmatter={"project": "ledgerly"},
            anchors=EXPLICIT_ANCHORS if key == "explicit" else None,
        )
        for key, (title, body) in NOTES.items()
    }


@pytest.fixture
def ledgerly(code_root) -> Ledgerly:
    from brain import bm25

    bm25.reset()
    repo = make_repo(code_root)
    add_project("ledgerly", str(repo), "ledgerly")
    write_notes()
    yield Ledgerly(repo=repo, first=git(repo, "rev-parse", "HEAD"))
    bm25.reset()
