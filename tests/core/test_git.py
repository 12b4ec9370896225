"""hyperguild.lib.git: the one way the apps run git (issue 49), with a real git on real repositories."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil
import pytest

from hyperguild.lib.git import RepositoryUnreadable, git, run_git

IDENTITY = ("-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("one\r\ntwo\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first", config=IDENTITY)
    return tmp_path


def test_a_hook_of_the_repository_never_runs(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\ntouch {repo / 'hook-ran'}\n")
    hook.chmod(0o755)
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "second", config=IDENTITY)
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "2"
    assert not (repo / "hook-ran").exists()
    subprocess.run(["git", "-C", str(repo), *IDENTITY, "commit", "-q", "--allow-empty", "-m", "third"], check=True)
    assert (repo / "hook-ran").exists()  # the same hook runs under a plain git: the hardening is what stopped it


def test_text_and_bytes_of_a_file(repo: Path) -> None:
    assert run_git(repo, "show", "HEAD:a.txt") == "one\ntwo\n"  # line ends as a text-mode pipe gives them
    assert git(repo, "show", "HEAD:a.txt").output == b"one\r\ntwo\n"  # the bytes as stored


def test_a_failure_says_what_git_said_and_unchecked_gives_the_exit_code(repo: Path) -> None:
    with pytest.raises(RepositoryUnreadable, match=r"^git rev-parse: fatal: Needed a single revision"):
        git(repo, "rev-parse", "--verify", "no-such-branch^{commit}")
    done = git(repo, "rev-parse", "--verify", "--quiet", "no-such-branch", check=False)
    assert done.exit_code == 1 and not done.ok and done.stdout == ""


def gone(pid: int, within: float = 1.0) -> bool:
    """Whether the process is dead (or a zombie) within `within` seconds: a SIGKILL is delivered asynchronously,
    and on a loaded machine the process can still be listed for a moment after its group was killed."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def test_past_its_deadline_git_and_what_it_started_are_killed(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    shell = tmp_path / "shell-pid"
    slow = ("-c", f"alias.slow=!echo $$ > {shell} && sleep 3 && touch {marker}")
    started = time.monotonic()
    with pytest.raises(RepositoryUnreadable, match=r"git slow took longer than 0.5 s"):
        git(repo, "slow", config=slow, timeout=0.5)
    assert time.monotonic() - started < 2.5
    # The shell git started, which would touch the marker after its sleep, dies at once: it was killed with git
    # (its process group), so the marker can never come. (No pid: git was killed before it started a shell.) Left
    # alive it would sleep on for 2.5 s more, well past the second `gone` allows.
    assert not shell.exists() or gone(int(shell.read_text())), "the shell git started outlived the deadline"
    assert not marker.exists()


def test_no_repository_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(RepositoryUnreadable, match="not a git repository"):
        run_git(tmp_path / "plain", "status")
