"""What each worker skill does once its run is claimed: prompt, worker, verification.

`perform(run, progress)` returns the result dict (shared shape + skill
fields) and the attempt log. It never trusts the worker: TDD phases are
verified by running the tests here, `debug` by re-running `failing_cmd`,
`review` by grounding each finding.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from brain.actions import do_write_raw_note
from supervisor import executor
from supervisor.checks import ground_findings
from supervisor.model_table import resolve_model
from supervisor.roots import RootRefused, resolve_inside, resolve_project_root
from supervisor.skills import SKILLS, empty_result, worker_schema

Progress = Callable[[str], None]

# Directories whose content never counts as "the worker wrote something".
_IGNORED_DIRS = {".git", "__pycache__", ".pytest_cache", "node_modules", ".venv", "venv", "target", "_build", ".mypy_cache"}
_SNAPSHOT_LIMIT = 20000
DIFF_PROMPT_CAP = 60000


class SkillFailed(Exception):
    """The run cannot start (bad paths, no test command): status error with this message."""


def disciplines_dir() -> Path:
    return Path(settings.SUPERVISOR_CONFIG_DIR)


def read_discipline(name: str) -> str:
    path = disciplines_dir() / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillFailed(f"discipline file {path} cannot be read ({exc}); check SUPERVISOR_CONFIG_DIR") from exc


def build_prompt(skill: str, task: str) -> str:
    spec = SKILLS[skill]
    parts = [read_discipline("rules.md")]
    if spec.discipline:
        parts.append(read_discipline(spec.discipline))
    parts.append("# Task\n\n" + task)
    return "\n\n---\n\n".join(part.strip() for part in parts) + "\n"


# --- tests ---------------------------------------------------------------------------


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
    outcome: str  # exited | timeout | cancelled

    @property
    def passed(self) -> bool:
        return self.outcome == "exited" and self.exit_code == 0

    @property
    def no_tests(self) -> bool:
        # pytest says 5 when it collected nothing; a red phase with no test is not red.
        return "pytest" in self.command and self.exit_code == 5


def run_command(root: Path, command: str, cancel_check: Callable[[], bool] | None = None) -> TestRun:
    outcome, exit_code, stdout, stderr, _ = executor.run_process(
        ["/bin/sh", "-c", command],
        cwd=root,
        timeout=settings.SUPERVISOR_TEST_TIMEOUT,
        cancel_check=cancel_check,
    )
    output = stdout + (("\n" + stderr) if stderr.strip() else "")
    if outcome == "timeout":
        output += f"\n[supervisor: killed after SUPERVISOR_TEST_TIMEOUT={settings.SUPERVISOR_TEST_TIMEOUT} s]"
    return TestRun(command=command, exit_code=exit_code, output=executor.cap(output), outcome=outcome)


def snapshot(root: Path) -> dict[str, str]:
    """Content hashes of the project's files, to see whether the worker wrote anything."""
    hashes: dict[str, str] = {}
    stack = [root]
    while stack and len(hashes) < _SNAPSHOT_LIMIT:
        directory = stack.pop()
        try:
            entries = list(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name not in _IGNORED_DIRS:
                    stack.append(entry)
            elif entry.is_file():
                try:
                    hashes[str(entry.relative_to(root))] = hashlib.sha1(entry.read_bytes()).hexdigest()
                except OSError:
                    continue
    return hashes


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def _fingerprint(report: dict | None, error: str) -> str:
    return json.dumps(report, sort_keys=True) if report is not None else "error:" + error


# --- the skills ------------------------------------------------------------------------


class Context:
    def __init__(self, run, progress: Progress, cancel_check: Callable[[], bool]):
        self.run = run
        self.args = run.arguments or {}
        self.progress = progress
        self.cancel_check = cancel_check
        self.skill = run.skill
        self.spec = SKILLS[run.skill]
        self.model = resolve_model(run.skill, self.args.get("model"))
        self.attempt_log: list[dict] = []
        self.worker_pids: list[int] = []

    def worker(self, task: str, attempt: int) -> executor.WorkerResult:
        root = Path(self.run.project_root) if self.run.project_root else None
        cwd = root or Path(settings.DATA_DIR)
        cwd.mkdir(parents=True, exist_ok=True)
        self.progress(f"attempt {attempt}: worker running ({self.model})")

        def waiting(seconds: float) -> None:
            self.progress(f"attempt {attempt}: waiting for a free worker slot ({int(seconds)} s)")

        return executor.run_worker(
            prompt=build_prompt(self.skill, task),
            schema=worker_schema(self.skill),
            cwd=cwd,
            model=self.model,
            allowed_tools=self.spec.allowed_tools,
            cancel_check=self.cancel_check,
            on_wait=waiting,
            on_start=self.worker_pids.append,
        )

    def log(self, attempt: int, worker: executor.WorkerResult, **verification) -> dict:
        entry = {
            "attempt": attempt,
            "worker_status": worker.status,
            "worker_message": worker.message,
            "exit_code": worker.exit_code,
            "report": worker.report,
            "stdout": worker.stdout,
            "stderr": worker.stderr,
            "duration_ms": worker.duration_ms,
            **verification,
        }
        self.attempt_log.append(entry)
        return entry

    def result(self, **values) -> dict:
        return empty_result(self.skill, model_used=self.model, run_id=self.run.pk, **values)


def perform(run, progress: Progress, cancel_check: Callable[[], bool]) -> tuple[dict, Context]:
    ctx = Context(run, progress, cancel_check)
    try:
        if ctx.spec.expect_tests:
            result = _tdd(ctx)
        elif run.skill == "review":
            result = _review(ctx)
        elif run.skill == "debug":
            result = _debug(ctx)
        elif run.skill == "spec":
            result = _spec(ctx)
        else:
            raise SkillFailed(f"{run.skill} does not run a worker")
    except (SkillFailed, RootRefused) as exc:
        result = ctx.result(status="error", message=str(exc), attempts=len(ctx.attempt_log))
    return result, ctx


def _worker_stopped(ctx: Context, worker: executor.WorkerResult, attempt: int) -> dict | None:
    """A final result if the worker was killed (timeout/cancel), else None."""
    if worker.status in ("timeout", "cancelled"):
        return ctx.result(status=worker.status, message=worker.message, attempts=attempt)
    return None


def _tdd(ctx: Context) -> dict:
    root = resolve_project_root(ctx.run.project_root)
    args = ctx.args
    for key in ("test_path", "impl_path"):
        if args.get(key):
            resolve_inside(root, args[key], must_exist=(key == "test_path" and ctx.skill != "tdd_red"))
    test_cmd = args.get("test_cmd") or detect_test_command(root)
    if not test_cmd:
        raise SkillFailed(
            "no test command: pass test_cmd, or add go.mod, package.json, pyproject.toml/pytest.ini, "
            "Cargo.toml, Gemfile or mix.exs to the project root"
        )
    expect = ctx.spec.expect_tests
    if ctx.skill in BASELINE_MUST_PASS:
        stopped = _baseline(ctx, root, test_cmd)
        if stopped is not None:
            return stopped
    task = _tdd_task(ctx.skill, args, test_cmd)
    max_attempts = settings.SUPERVISOR_MAX_ATTEMPTS
    previous = None
    feedback = ""
    last_report: dict | None = None
    last_run: TestRun | None = None
    all_changed: set[str] = set()
    why = ""
    for attempt in range(1, max_attempts + 1):
        before = snapshot(root)
        worker = ctx.worker(task + feedback, attempt)
        stopped = _worker_stopped(ctx, worker, attempt)
        if stopped is not None:
            ctx.log(attempt, worker)
            stopped.update(test_cmd=test_cmd, worker_report=last_report, files_changed=sorted(all_changed))
            return stopped
        changed = changed_files(before, snapshot(root))
        all_changed.update(changed)
        if worker.report is not None:
            last_report = worker.report
        fingerprint = _fingerprint(worker.report, worker.message)
        if worker.status != "ok":
            why = f"attempt {attempt}: {worker.message}"
            ctx.log(attempt, worker, verified=False, reason=why, files_changed=changed)
            feedback = f"\n\n## Previous attempt rejected\n\n{worker.message}\n"
        else:
            ctx.progress(f"attempt {attempt}: verifying ({test_cmd})")
            last_run = run_command(root, test_cmd, ctx.cancel_check)
            if last_run.outcome == "cancelled":
                ctx.log(attempt, worker, verified=None, reason="cancelled while verifying")
                return ctx.result(status="cancelled", message="cancelled while the tests ran", attempts=attempt)
            verified, why = _judge(expect, last_run, changed, attempt)
            ctx.log(attempt, worker, verified=verified, reason=why, test_exit_code=last_run.exit_code,
                    runner_output=last_run.output, files_changed=changed)
            if verified:
                return ctx.result(
                    status="pass",
                    verified=True,
                    message=why,
                    attempts=attempt,
                    runner_output=last_run.output,
                    file_path=_report_path(root, last_report),
                    files_changed=sorted(all_changed),
                    test_cmd=test_cmd,
                    worker_report=last_report,
                    **({"test_name": (last_report or {}).get("test_name")} if ctx.skill == "tdd_red" else {}),
                )
            feedback = (
                f"\n\n## Previous attempt rejected by the supervisor\n\n{why}\n\n"
                f"Output of `{test_cmd}`:\n\n```\n{last_run.output[-8000:]}\n```\n"
            )
        if previous is not None and fingerprint == previous:
            why = f"stopped early after attempt {attempt}: the worker returned the same output twice in a row ({why})"
            break
        previous = fingerprint
    else:
        why = f"not verified after {max_attempts} attempts (SUPERVISOR_MAX_ATTEMPTS): {why}"
    return ctx.result(
        status="fail",
        verified=False,
        message=why,
        attempts=len(ctx.attempt_log),
        runner_output=last_run.output if last_run else "",
        file_path=_report_path(root, last_report),
        files_changed=sorted(all_changed),
        test_cmd=test_cmd,
        worker_report=last_report,
        **({"test_name": (last_report or {}).get("test_name")} if ctx.skill == "tdd_red" else {}),
    )


# Red and refactor start from a passing suite: otherwise a red run could be "verified"
# by a failure that was already there, and a refactor could hide a break behind one.
BASELINE_MUST_PASS = ("tdd_red", "tdd_refactor")


def _baseline(ctx: Context, root: Path, test_cmd: str) -> dict | None:
    """Run the tests before the worker; a result that stops the call, or None to go on."""
    ctx.progress(f"baseline: running {test_cmd} before the worker")
    run = run_command(root, test_cmd, ctx.cancel_check)
    if run.outcome == "cancelled":
        return ctx.result(status="cancelled", message="cancelled while the baseline tests ran", attempts=0)
    # A project with no tests yet is a fine start for red.
    if run.passed or (ctx.skill == "tdd_red" and run.no_tests):
        return None
    phase = "red" if ctx.skill == "tdd_red" else "refactor"
    return ctx.result(
        status="fail",
        verified=False,
        attempts=0,
        runner_output=run.output,
        test_cmd=test_cmd,
        message=(
            f"the suite already fails before any change (`{test_cmd}` exit code {run.exit_code}"
            f"{', timed out' if run.outcome == 'timeout' else ''}); {phase} starts from a passing suite: "
            "make it pass first (tdd_green, or by hand). No worker was started."
        ),
    )


def _judge(expect: str, run: TestRun, changed: list[str], attempt: int) -> tuple[bool, str]:
    if run.outcome == "timeout":
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


def _report_path(root: Path, report: dict | None) -> str | None:
    path = (report or {}).get("file_path")
    if not isinstance(path, str) or not path:
        return None
    try:
        return str(resolve_inside(root, path).relative_to(root))
    except (RootRefused, ValueError):
        return None


def _tdd_task(skill: str, args: dict, test_cmd: str) -> str:
    lines = [f"Phase: {SKILLS[skill].phase}.", f"The supervisor will verify with: `{test_cmd}`."]
    if skill == "tdd_red":
        lines.append(f"Behaviour to specify with one failing test:\n\n{args['spec']}")
        if args.get("test_path"):
            lines.append(f"Put the test in `{args['test_path']}`.")
    elif skill == "tdd_green":
        lines.append(f"Make the failing test in `{args['test_path']}` pass.")
        if args.get("impl_path"):
            lines.append(f"The implementation belongs in `{args['impl_path']}`.")
        if args.get("notes"):
            lines.append(f"Notes:\n\n{args['notes']}")
    else:
        lines.append(f"Refactor `{args['impl_path']}`; its tests are in `{args['test_path']}`.")
        if args.get("goal"):
            lines.append(f"Goal:\n\n{args['goal']}")
    return "\n\n".join(lines)


def _review(ctx: Context) -> dict:
    root = resolve_project_root(ctx.run.project_root)
    args = ctx.args
    parts = []
    if args.get("paths"):
        for path in args["paths"]:
            resolve_inside(root, path, must_exist=True)
        parts.append("Review these files:\n" + "\n".join(f"- {p}" for p in args["paths"]))
    if args.get("git_range"):
        diff = run_command(root, f"git diff --no-color {shlex.quote(args['git_range'])}")
        if diff.exit_code != 0:
            raise SkillFailed(f"git diff {args['git_range']} failed: {diff.output[-2000:]}")
        parts.append(f"Review the changes in `{args['git_range']}`:\n\n```diff\n{diff.output[:DIFF_PROMPT_CAP]}\n```")
    if args.get("focus"):
        parts.append(f"Focus on: {args['focus']}")
    worker = ctx.worker("\n\n".join(parts), 1)
    ctx.log(1, worker)
    stopped = _worker_stopped(ctx, worker, 1)
    if stopped is not None:
        return stopped
    if worker.status != "ok":
        return ctx.result(status="error", message=worker.message, attempts=1)
    report = worker.report or {}
    kept, dropped = ground_findings(root, report.get("findings", []))
    ctx.attempt_log[-1].update(kept_findings=len(kept), dropped_findings=dropped)
    message = f"{len(kept)} grounded finding(s)"
    if dropped:
        message += f"; {dropped} dropped because their file, line or quoted code does not exist"
    return ctx.result(
        status="pass",
        verified=dropped == 0,
        message=message,
        attempts=1,
        findings=kept,
        verdict=report.get("verdict", "comment"),
        dropped_findings=dropped,
        summary=report.get("summary", ""),
    )


def _debug(ctx: Context) -> dict:
    root = resolve_project_root(ctx.run.project_root)
    args = ctx.args
    task = (
        f"Symptom:\n\n{args['symptom']}\n\nFailing command (the supervisor re-runs it after you stop):\n\n"
        f"`{args['failing_cmd']}`"
    )
    before = snapshot(root)
    worker = ctx.worker(task, 1)
    stopped = _worker_stopped(ctx, worker, 1)
    if stopped is not None:
        ctx.log(1, worker)
        return stopped
    changed = changed_files(before, snapshot(root))
    report = worker.report or {}
    ctx.progress(f"attempt 1: verifying ({args['failing_cmd']})")
    rerun = run_command(root, args["failing_cmd"], ctx.cancel_check)
    passes = rerun.passed
    ctx.log(1, worker, verified=passes, test_exit_code=rerun.exit_code, runner_output=rerun.output, files_changed=changed)
    if worker.status != "ok":
        status, message = "error", worker.message
    elif passes:
        status, message = "pass", "verified: the failing command passes now"
    else:
        status, message = "fail", f"the failing command still fails (exit code {rerun.exit_code})"
    return ctx.result(
        status=status,
        verified=passes,
        message=message,
        attempts=1,
        runner_output=rerun.output,
        hypotheses=report.get("hypotheses", []),
        root_cause=report.get("root_cause", ""),
        fix=report.get("fix", ""),
        files_changed=changed,
        failing_cmd_passes=passes,
        worker_report=worker.report,
    )


def _spec(ctx: Context) -> dict:
    args = ctx.args
    task = "Turn this into a spec with acceptance criteria"
    if args.get("project"):
        task += f" for the project {args['project']}"
    task += f":\n\n{args['text']}"
    worker = ctx.worker(task, 1)
    ctx.log(1, worker)
    stopped = _worker_stopped(ctx, worker, 1)
    if stopped is not None:
        return stopped
    if worker.status != "ok":
        return ctx.result(status="error", message=worker.message, attempts=1)
    report = worker.report or {}
    criteria = report.get("acceptance_criteria", [])
    body = report["spec"].rstrip() + "\n\n## Acceptance criteria\n\n" + "\n".join(
        f"{number}. {text}" for number, text in enumerate(criteria, 1)
    )
    note_id, note_message = _write_spec_note(report["title"], body, ctx)
    return ctx.result(
        status="pass",
        message="spec written" + note_message,
        attempts=1,
        title=report["title"],
        spec=body,
        acceptance_criteria=criteria,
        note_id=note_id,
    )


def _write_spec_note(title: str, body: str, ctx: Context) -> tuple[int | str | None, str]:
    provenance = {"skill": "spec", "run_id": ctx.run.pk, "model": ctx.model, "project": ctx.args.get("project", "")}
    try:
        note = do_write_raw_note(
            title=title, body=body, source="spec", provenance=provenance, session_id=ctx.run.session_id or None
        )
    except Exception as exc:  # noqa: BLE001 - the spec itself is still returned
        return None, f" (writing the raw note failed: {exc})"
    note_id = getattr(note, "pk", None) if not isinstance(note, (int, str)) else note
    return note_id, " and saved to the brain as a raw note"
