"""The runner of notes' `check:` commands (brain.checks): the supervisor's test runner, with a test run's limits.

Registered with the brain at start-up (SupervisorConfig.ready): SUPERVISOR_TEST_TIMEOUT, the test command's
environment allow-list (no service secret reaches the command) and the whole process group killed when the
command ends or times out (supervisor.executor.run_process), in the throwaway tree brain.checks made.
"""

from __future__ import annotations

import time
from pathlib import Path

from brain.checks import CheckResult
from supervisor.project_tests import run_command


def run_note_check(root: Path, command: str) -> CheckResult:
    began = time.monotonic()
    run = run_command(root, command)
    return CheckResult(
        passed=run.passed,
        exit_code=run.exit_code,
        outcome=str(run.outcome),
        output=run.output,
        seconds=time.monotonic() - began,
    )
