"""The supervisor's own checks on a worker: it never trusts the worker's report.

- `detect_test_command(root)`: the project's test command from its build files;
- `run_command(root, command)`: run a test (or any) command under
  SUPERVISOR_TEST_TIMEOUT through the executor's process runner;
- `capture` / `snapshot` / `changed_files`: what the project holds (hashes, and bytes for `supervisor.changes`),
  and did the worker write anything;
- `judge_tdd_attempt` / `baseline_allows`: whether a test run is what a TDD
  phase requires.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from supervisor import executor
from supervisor.executor import ProcessOutcome

# Directories whose content never counts as "the worker wrote something".
_IGNORED_DIRS = {
    ".git",
    "__pycache__",
    ".pytest_cache",
    "node_modules",
    ".venv",
    "venv",
    "target",
    "_build",
    ".mypy_cache",
}
_SNAPSHOT_LIMIT = 20000

# Red and refactor start from a passing suite: otherwise a red run could be "verified"
# by a failure that was already there, and a refactor could hide a break behind one.
BASELINE_MUST_PASS = ("tdd_red", "tdd_refactor")

NO_TEST_COMMAND = (
    "no test command: pass test_cmd, or add go.mod, package.json, pyproject.toml/pytest.ini, "
    "Cargo.toml, Gemfile or mix.exs to the project root"
)


def detect_test_command(root: Path) -> str | None:
    if (root / "go.mod").exists():
        return "go test ./..."
    if (root / "package.json").exists():
        return "npm test"
    if any((root / name).exists() for name in ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")):
        pytest = shutil.which("pytest")
        return shlex.quote(pytest) if pytest else f"{shlex.quote(sys.executable)} -m pytest"
    if (root / "Cargo.toml").exists():
        return "cargo test"
    if (root / "Gemfile").exists():
        return "bundle exec rspec"
    if (root / "mix.exs").exists():
        return "mix test"
    return None


@dataclass
class TestRun:
    command: str
    exit_code: int | None
    output: str
    outcome: ProcessOutcome

    @property
    def passed(self) -> bool:
        return self.outcome == ProcessOutcome.EXITED and self.exit_code == 0

    @property
    def no_tests(self) -> bool:
        # pytest says 5 when it collected nothing; a red phase with no test is not red.
        return "pytest" in self.command and self.exit_code == 5


def run_command(root: Path, command: str, cancel_check: Callable[[], bool] | None = None) -> TestRun:
    forget_bytecode(root)
    ran = executor.run_process(
        ["/bin/sh", "-c", command],
        cwd=root,
        timeout=settings.SUPERVISOR_TEST_TIMEOUT,
        cancel_check=cancel_check,
    )
    output = ran.stdout + (("\n" + ran.stderr) if ran.stderr.strip() else "")
    if ran.outcome == ProcessOutcome.TIMEOUT:
        output += f"\n[supervisor: killed after SUPERVISOR_TEST_TIMEOUT={settings.SUPERVISOR_TEST_TIMEOUT} s]"
    return TestRun(command=command, exit_code=ran.exit_code, output=executor.cap(output), outcome=ran.outcome)


def forget_bytecode(root: Path) -> int:
    """Delete the project's `__pycache__` folders; returns how many. Python trusts a cached module while
    its source keeps the size and modification second it was compiled from, so a worker that rewrites
    `a - b` as `a + b` within a second of the previous test run would be judged on its previous code."""
    removed = 0
    for folder, dirs, _files in os.walk(root):
        if "__pycache__" in dirs:
            shutil.rmtree(Path(folder) / "__pycache__", ignore_errors=True)
            removed += 1
        # Not into dependencies and tool caches (.venv, node_modules, ...), nor the folders just deleted.
        dirs[:] = [d for d in dirs if d not in _IGNORED_DIRS]
    return removed


@dataclass
class Capture:
    """The project's files at one moment: a content hash per file and, for files up to CONTENT_LIMIT, their bytes."""

    hashes: dict[str, str]
    contents: dict[str, bytes]
    complete: bool = True  # False when the project has more than _SNAPSHOT_LIMIT files


# Bytes of a file kept in memory while a run goes (to record what it was before the worker).
CONTENT_LIMIT = 1024 * 1024


def capture(root: Path) -> Capture:
    """Hash every project file (ignored directories left out) and keep the bytes of files up to CONTENT_LIMIT."""
    hashes: dict[str, str] = {}
    contents: dict[str, bytes] = {}
    stack = [root]
    while stack and len(hashes) < _SNAPSHOT_LIMIT:
        directory = stack.pop()
        try:
            entries = list(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            # A `.git` file (a worktree's or a submodule's pointer to its repository) is git's, not the project's.
            if entry.is_symlink() or entry.name == ".git":
                continue
            if entry.is_dir():
                if entry.name not in _IGNORED_DIRS:
                    stack.append(entry)
            elif entry.is_file():
                try:
                    data = entry.read_bytes()
                except OSError:
                    continue
                path = str(entry.relative_to(root))
                hashes[path] = hashlib.sha1(data).hexdigest()
                if len(data) <= CONTENT_LIMIT:
                    contents[path] = data
    return Capture(hashes, contents, complete=not stack)


def snapshot(root: Path) -> Mapping[str, str]:
    """Content hashes of the project's files, to see whether the worker wrote anything."""
    return capture(root).hashes


def changed_files(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def baseline_allows(skill: str, run: TestRun) -> bool:
    """Whether the suite's state before the worker lets `skill` start (a project with no tests yet is a fine start for red)."""
    return run.passed or (skill == "tdd_red" and run.no_tests)


def judge_tdd_attempt(expect: str, run: TestRun, changed: list[str], attempt: int) -> tuple[bool, str]:
    """(verified, why) for one attempt of a TDD phase whose tests must `expect` ("fail" or "pass")."""
    if run.outcome == ProcessOutcome.TIMEOUT:
        return False, f"attempt {attempt}: the test command timed out"
    if expect == "fail":
        if run.passed:
            return False, f"attempt {attempt}: the tests pass, but red needs a failing test"
        if run.no_tests:
            return False, f"attempt {attempt}: the test runner collected no tests"
        if not changed:
            return False, f"attempt {attempt}: the worker changed no file, so there is no new failing test"
        return True, f"verified: the supervisor's test run failed as red requires (exit code {run.exit_code})"
    if run.passed:
        return True, "verified: the supervisor's test run passed (exit code 0)"
    return False, f"attempt {attempt}: the tests fail (exit code {run.exit_code}), but {expect} requires them to pass"
