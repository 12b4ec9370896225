"""Every `git` the apps run goes through `git()` here: the one place a git subprocess is started.

Hardened the same way for every caller: no hooks of the repository run (`core.hooksPath=/dev/null`: they are
code nobody asked to run), no pager, no terminal prompt, no system-wide config, no optional locks, C locale
(git's own words, in English), a deadline after which git's whole process group is killed, and stdin empty
unless text is given. A git that cannot run to the end (missing, past its deadline) raises
`RepositoryUnreadable`; so does a non-zero exit when `check` is on. No app knowledge.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_SECONDS = 60
HARDENING = ("-c", "core.hooksPath=/dev/null")
GIT_ENVIRONMENT = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}


class RepositoryUnreadable(Exception):
    """git could not do what was asked (missing, not a repository, no such object, git failed or too slow)."""


@dataclass(frozen=True)
class GitResult:
    exit_code: int
    output: bytes  # stdout as git wrote it
    stderr: str

    @property
    def stdout(self) -> str:
        """stdout as text (undecodable bytes replaced, line ends made `\\n` as text-mode pipes do)."""
        return _text(self.output)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def git(
    cwd: str | Path,
    *args: str,
    check: bool = True,
    input_text: str | None = None,
    timeout: float = GIT_TIMEOUT_SECONDS,
    config: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> GitResult:
    """`git -C cwd <config> <args>` (cwd a work tree or a bare repository) with the hardening above.

    `config` adds `-c name=value` pairs after the hardening; `env` is the environment to start from (default
    this process's), the hardening variables set on top. Raises `RepositoryUnreadable` when git cannot run
    to the end, or (with `check`) exits non-zero, with the last line of git's message."""
    command = ["git", *HARDENING, *config, "-C", str(cwd), *args]
    environment = {**(os.environ if env is None else env), **GIT_ENVIRONMENT}
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            start_new_session=True,  # its own process group: a deadline kills git and whatever it started
        )
    except OSError as exc:
        raise RepositoryUnreadable(f"git could not run: {exc}") from None
    try:
        stdout, stderr = process.communicate(
            input=input_text.encode("utf-8") if input_text is not None else None, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise RepositoryUnreadable(f"git {args[0] if args else ''} took longer than {timeout:g} s") from None
    except BaseException:
        _kill_group(process)
        raise
    done = GitResult(exit_code=process.returncode, output=stdout, stderr=_text(stderr))
    if check and not done.ok:
        message = (done.stderr.strip() or done.stdout.strip() or f"exit {done.exit_code}").splitlines()
        raise RepositoryUnreadable(f"git {args[0] if args else ''}: {message[-1] if message else 'failed'}")
    return done


def run_git(git_dir: str | Path, *args: str, check: bool = True, input_text: str | None = None) -> str:
    """stdout of `git(git_dir, *args)` as text: the common case of reading a repository."""
    return git(git_dir, *args, check=check, input_text=input_text).stdout


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.communicate()
