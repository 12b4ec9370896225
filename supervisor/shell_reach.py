"""What a caller may hand to a shell or to git: checked before anything is recorded or run.

A supervisor token lets its holder run commands as the service user (the
worker edits files and a test command is a shell command); these checks
narrow what reaches a shell, they do not make the token harmless.

- `git_range` never starts with `-` (it would be read by `git diff` as an option);
- `test_cmd` and `lint_cmd` (free-form shell commands) are refused when
  SUPERVISOR_ALLOW_TEST_CMD is off: the test command is then always the one
  detected from the project's build files;
- a command from the arguments (`test_cmd`, `lint_cmd`, `failing_cmd`) needs the
  `supervisor:commands` right (people.permissions: the operator role or staff),
  whatever scope the token holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings

from people.permissions import permission_refusal
from supervisor.errors import ArgumentRefused

if TYPE_CHECKING:
    from people.auth import Identity


def check_git_range(git_range: str | None) -> None:
    if git_range and git_range.startswith("-"):
        raise ArgumentRefused(
            f"git_range {git_range[:50]!r} starts with '-', which git would read as an option; "
            "give a revision range such as main..HEAD"
        )


def check_test_cmd(test_cmd: str | None) -> None:
    if test_cmd and not settings.SUPERVISOR_ALLOW_TEST_CMD:
        raise ArgumentRefused(
            "test_cmd is turned off on this server (SUPERVISOR_ALLOW_TEST_CMD=0): leave it out and the "
            "supervisor runs the test command it detects from go.mod, package.json, pyproject.toml, …"
        )


def check_lint_cmd(lint_cmd: str | None) -> None:
    if lint_cmd and not settings.SUPERVISOR_ALLOW_TEST_CMD:
        raise ArgumentRefused(
            "lint_cmd is turned off on this server (SUPERVISOR_ALLOW_TEST_CMD=0, which governs every free-form "
            "command): leave it out, and apply skips the warnings gate"
        )


COMMAND_ARGUMENTS = ("test_cmd", "lint_cmd", "failing_cmd")


def check_command_right(arguments: Mapping[str, Any], identity: Identity | None) -> None:
    """A shell command from the arguments runs as the service's user: only a caller with the right may send one."""
    given = [name for name in COMMAND_ARGUMENTS if arguments.get(name)]
    if not given or identity is None:
        return
    refusal = permission_refusal(
        identity, "supervisor:commands", what=f"a command in the arguments ({', '.join(given)})"
    )
    if refusal:
        raise ArgumentRefused(refusal)


def check_shell_arguments(arguments: Mapping[str, Any]) -> None:
    check_git_range(arguments.get("git_range"))
    check_test_cmd(arguments.get("test_cmd"))
    check_lint_cmd(arguments.get("lint_cmd"))
