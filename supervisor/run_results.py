"""The result of a worker run as the runners build it and `SkillRun.result` keeps it (`supervisor.skills.build_result`)."""

from __future__ import annotations

from typing import Any, TypedDict


class SkillRunResult(TypedDict, total=False):
    """A worker run's result as the runners build it and `SkillRun.result` (a JSONField) keeps it: the fields of
    the skill's result model (`build_result` fills them; `typed_result` makes the model of it), nested parts as
    JSON. Each key is optional here because each skill has its own; the models say which one has which."""

    status: str  # a Verdict
    phase: str
    skill: str
    message: str
    model_used: str
    run_id: int | None
    attempts: int
    duration_ms: int
    verified: bool | None
    usage: dict[str, Any] | None
    budget_warning: str | None
    # TDD
    file_path: str | None
    runner_output: str
    files_changed: list[str]
    test_cmd: str | None
    test_name: str | None
    worker_report: dict[str, Any] | None
    # review, debug, apply
    findings: list[dict[str, Any]]
    dropped_findings: list[dict[str, Any]]
    verdict: str
    summary: str
    reviewed_commit: str | None
    hypotheses: list[Any]
    root_cause: str
    fix: str
    failing_cmd_passes: bool | None
    branch: str | None
    base_commit: str | None
    source_run_id: int | None
    applied: int
    refused: int
    lint_cmd: str | None
    # spec
    title: str
    spec: str
    acceptance_criteria: list[str]
    note_id: int | str | None
