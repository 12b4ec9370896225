"""One definition per skill: its arguments, its result, what its worker must return.

Every skill result shares one shape (`BASE_RESULT_PROPERTIES`):

    {status: pass|fail|error|timeout, phase, skill, file_path, runner_output,
     verified, model_used, message, run_id, attempts, duration_ms}

plus fields of its own. `status` is the supervisor's verdict: `pass` means
the work was done and (where something can be checked) verified; `fail`
means the worker answered but verification failed after every attempt;
`error` means the worker could not be run or answered nonsense; `timeout`
means it was killed at the deadline or for going silent.

`SKILLS[name].worker_schema` is the JSON Schema passed to `claude
--json-schema`: the worker's own report, recorded but never trusted.

The routing endpoint reuses `input_schema()` / `result_schema()` for
`review`, `debug`, `retrospective` and `trainer`. The logic of
`retrospective` and `trainer` lives in the sessions app
(`sessions/retrospective.py`, `sessions/trainer.py`), which registers those
tools; only their schemas are defined here:

- inputs `{session_id, model?}`;
- results: the shared shape plus `learnings` (retrospective: candidate notes
  `{title, body, kind, evidence}`) or `examples` (trainer: training
  candidates `{kind: sft|dpo, prompt, chosen, rejected?, source_run_id?}`),
  and `count`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    """A result's `status`: the supervisor's verdict (the module docstring says what each means).

    `cancelled` ends a run whose caller went away; the caller never sees that
    result, so it is not in the result schema.
    """

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


STATUSES = [verdict.value for verdict in Verdict if verdict is not Verdict.CANCELLED]

_NULLABLE_STRING = {"type": ["string", "null"]}

BASE_RESULT_PROPERTIES: dict = {
    "status": {"type": "string", "enum": STATUSES, "description": "the supervisor's verdict"},
    "phase": {"type": "string", "description": "red, green, refactor, review, debug, spec, …"},
    "skill": {"type": "string"},
    "file_path": {**_NULLABLE_STRING, "description": "main file the worker wrote, relative to the project root"},
    "runner_output": {"type": "string", "description": "output of the supervisor's own check (tests, failing_cmd)"},
    "verified": {"type": ["boolean", "null"], "description": "true/false from the supervisor's own check; null: nothing to check"},
    "model_used": {"type": "string"},
    "message": {"type": "string", "description": "what happened, and why the status is what it is"},
    "run_id": {"type": ["integer", "null"], "description": "the SkillRun record (admin: /admin/supervisor/skillrun/<id>/)"},
    "attempts": {"type": "integer", "minimum": 0},
    "duration_ms": {"type": "integer", "minimum": 0},
}
BASE_REQUIRED = list(BASE_RESULT_PROPERTIES)

_PROJECT_ROOT = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "absolute path of the project; must lie under SUPERVISOR_ALLOWED_ROOTS",
}
_MODEL = {"type": "string", "minLength": 1, "maxLength": 200, "description": "model override (else the model table)"}
_SESSION_ID = {"type": "string", "minLength": 1, "maxLength": 200, "description": "your session id, to link the run to the session log"}
_TEST_CMD = {
    "type": "string",
    "minLength": 1,
    "maxLength": 2000,
    "description": "shell command that runs the tests (default: detected from go.mod, package.json, pyproject.toml, …)",
}
_REL_PATH = {"type": "string", "minLength": 1, "maxLength": 1000}

FINDING_SCHEMA = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "description": "path relative to the project root"},
        "line": {"type": "integer", "minimum": 1},
        "severity": {"type": "string", "enum": ["critical", "major", "minor", "nit"]},
        "title": {"type": "string"},
        "rationale": {"type": "string"},
        "suggestion": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "quote": {
            "type": "string",
            "description": "the code at that line, copied exactly (required: a finding without it is dropped)",
        },
        "kind": {"type": "string", "description": "the class of bug, e.g. off-by-one, null-deref, injection"},
    },
    "required": ["file", "line", "severity", "title", "rationale", "suggestion", "confidence"],
}

# A finding as the supervisor returns it: grounded, with the patch gate's verdict.
RESULT_FINDING_SCHEMA = {
    **FINDING_SCHEMA,
    "properties": {
        **FINDING_SCHEMA["properties"],
        "patch": {"type": ["string", "null"], "description": "the suggestion, if small enough to be a patch"},
        "patch_refused": {"type": "string", "description": "why the suggestion is not offered as a patch"},
        "agreed_by": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "description": "consensus reviews only: the reviews (1-based) that reported this finding",
        },
    },
}

# A finding the gates dropped: whatever it said, plus which gate and why.
DROPPED_FINDING_SCHEMA = {
    "type": "object",
    "properties": {
        "gate": {"type": "string", "enum": ["file", "line", "quote", "rationale", "confidence", "consensus"]},
        "reason": {"type": "string"},
        "review": {"type": "integer", "minimum": 1, "description": "consensus reviews only: which review reported it"},
    },
    "required": ["gate", "reason"],
}

HYPOTHESIS_SCHEMA = {
    "type": "object",
    "properties": {"hypothesis": {"type": "string"}, "evidence": {"type": "string"}, "ruled_out": {"type": "boolean"}},
    "required": ["hypothesis", "evidence"],
}

LEARNING_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "body": {"type": "string"},
        "kind": {"type": "string", "enum": ["decision", "correction", "surprise", "pattern"]},
        # The session entries (their seq numbers) the learning rests on.
        "evidence": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "runs": {"type": "array", "items": {"type": "integer"}},
        "method": {"type": "string"},
        # written: a new raw note; merge: a near-duplicate of merge_into; exists: written by an earlier run.
        "outcome": {"type": "string", "enum": ["written", "merge", "exists"]},
        "note_slug": {"type": "string"},
        "merge_into": {"type": "object"},
    },
    "required": ["title", "body", "kind", "evidence"],
}

EXAMPLE_SCHEMA = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["sft", "dpo"]},
        "prompt": {"type": "string"},
        "chosen": {"type": "string"},
        "rejected": {"type": ["string", "null"]},
        "source_run_id": {"type": ["integer", "null"]},
    },
    "required": ["kind", "prompt", "chosen"],
}

_FILES_CHANGED = {"type": "array", "items": {"type": "string"}}

_REVIEWED_COMMIT = {
    "type": ["string", "null"],
    "description": "the git commit checked out when the findings were grounded (what `apply` branches from)",
}

# One finding as `apply` answers it: applied (with its commit) or refused (with the gate, why, the evidence).
APPLY_GATE_NAMES = ["confidence", "size", "apply", "tests", "warnings", "rationale", "time",
                    "file", "line", "quote", "consensus"]
APPLY_FINDING_SCHEMA = {
    "type": "object",
    "properties": {
        "index": {"type": "integer", "minimum": 1},
        "file": {"type": ["string", "null"]},
        "line": {"type": ["integer", "null"]},
        "title": {"type": ["string", "null"]},
        "kind": {"type": ["string", "null"]},
        "confidence": {"type": ["number", "null"]},
        "fingerprint": {"type": "string"},
        "outcome": {"type": "string", "enum": ["applied", "refused"]},
        "commit": {"type": ["string", "null"], "description": "the commit on the branch (applied only)"},
        "gate": {"type": ["string", "null"], "enum": [*APPLY_GATE_NAMES, None], "description": "the gate that refused it"},
        "reason": {"type": "string"},
        "output": {"type": "string", "description": "excerpt of the evidence: test or lint output, git's message"},
        "gates": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"gate": {"type": "string"}, "passed": {"type": "boolean"}, "detail": {"type": "string"}},
                "required": ["gate", "passed", "detail"],
            },
            "description": "every gate tried, in order",
        },
    },
    "required": ["index", "outcome", "gate", "reason", "gates"],
}


class SkillFailed(Exception):
    """The run cannot start (bad paths, no test command): status error with this message."""


def _object(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@dataclass(frozen=True)
class SkillSpec:
    name: str
    title: str
    description: str
    inputs: dict  # properties of the tool's arguments
    required_inputs: list[str]
    outputs: dict  # result fields beyond the shared shape
    worker_schema: dict | None = None  # what `claude --json-schema` must return; None: no claude worker
    # How a worker run goes (key of `supervisor.runners.RUNNERS`); None for skills without a worker.
    runner: str | None = None
    discipline: str | None = None  # file in the disciplines folder
    allowed_tools: str = "Read,Glob,Grep"
    phase: str = ""
    # For TDD phases: what the supervisor's own test run must do ("fail" / "pass").
    expect_tests: str | None = None
    read_only: bool = False
    extra_input_rules: dict = field(default_factory=dict)

    def input_schema(self) -> dict:
        schema = _object(copy.deepcopy(self.inputs), list(self.required_inputs))
        schema.update(copy.deepcopy(self.extra_input_rules))
        return schema

    def result_schema(self) -> dict:
        properties = {**copy.deepcopy(BASE_RESULT_PROPERTIES), **copy.deepcopy(self.outputs)}
        schema = {"type": "object", "properties": properties, "required": BASE_REQUIRED + list(self.outputs)}
        return schema


_TDD_OUTPUTS = {
    "files_changed": {**_FILES_CHANGED, "description": "files the worker says it touched"},
    "test_cmd": {"type": "string", "description": "the command the supervisor ran"},
    "worker_report": {"type": ["object", "null"], "description": "the worker's own claim (not trusted)"},
}

_TDD_WORKER = _object(
    {
        "status": {"type": "string", "enum": ["done", "blocked"]},
        "file_path": {"type": "string", "description": "main file written, relative to the project root"},
        "files_changed": _FILES_CHANGED,
        "test_name": {"type": "string"},
        "summary": {"type": "string"},
    },
    ["status", "file_path", "summary"],
)

SKILLS: dict[str, SkillSpec] = {}


def _add(spec: SkillSpec) -> None:
    SKILLS[spec.name] = spec


def _tdd_skill(*, name: str, outputs: dict = _TDD_OUTPUTS, **fields) -> SkillSpec:
    """A TDD phase: a worker that edits the project, reports in `_TDD_WORKER`, and is judged by the tdd runner."""
    return SkillSpec(
        name=name,
        outputs=outputs,
        **fields,
        worker_schema=_TDD_WORKER,
        discipline=f"{name}.md",
        runner="tdd",
        allowed_tools="Read,Write,Edit,Glob,Grep,Bash",
    )


_add(
    _tdd_skill(
        name="tdd_red",
        title="TDD red: write one failing test",
        description=(
            "A worker writes exactly one failing test for `spec` (no implementation). The supervisor then runs the "
            "test command itself: verified=true only if the tests FAIL. Retries with the runner output up to "
            "SUPERVISOR_MAX_ATTEMPTS times."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "spec": {"type": "string", "minLength": 1, "maxLength": 20000, "description": "the behaviour to test"},
            "test_path": {**_REL_PATH, "description": "where the test should go (optional hint)"},
            "test_cmd": _TEST_CMD,
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root", "spec"],
        outputs={**_TDD_OUTPUTS, "test_name": {"type": ["string", "null"]}},
        phase="red",
        expect_tests="fail",
    )
)
_add(
    _tdd_skill(
        name="tdd_green",
        title="TDD green: make the failing test pass",
        description=(
            "A worker writes the minimum implementation that makes the test at `test_path` pass. The supervisor runs "
            "the tests itself: verified=true only if they PASS."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "test_path": {**_REL_PATH, "description": "the failing test, relative to the project root"},
            "impl_path": {**_REL_PATH, "description": "where the implementation goes (optional hint)"},
            "notes": {"type": "string", "maxLength": 20000},
            "test_cmd": _TEST_CMD,
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root", "test_path"],
        phase="green",
        expect_tests="pass",
    )
)
_add(
    _tdd_skill(
        name="tdd_refactor",
        title="TDD refactor: improve structure, keep tests green",
        description=(
            "A worker restructures `impl_path` without changing behaviour. The supervisor runs the tests itself: "
            "verified=true only if they still PASS."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "test_path": _REL_PATH,
            "impl_path": _REL_PATH,
            "goal": {"type": "string", "maxLength": 20000, "description": "what to improve (optional)"},
            "test_cmd": _TEST_CMD,
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root", "test_path", "impl_path"],
        phase="refactor",
        expect_tests="pass",
    )
)
_add(
    SkillSpec(
        name="review",
        title="Review code",
        description=(
            "A worker reviews `paths` (or the git range `git_range`) and returns findings and a verdict. Each finding "
            "is grounded: the file and line must exist and its quoted code must be within a few lines of that line, "
            "with a rationale and confidence >= SUPERVISOR_MIN_CONFIDENCE; others are listed in dropped_findings "
            "with the reason. A review whose findings were all dropped, or that asks for changes with no grounded "
            "finding, is verified=false."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "paths": {"type": "array", "items": _REL_PATH, "minItems": 1, "maxItems": 200},
            "git_range": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^[A-Za-z0-9_./~^@{}-]+(\.\.\.?[A-Za-z0-9_./~^@{}-]+)?$"},
            "focus": {"type": "string", "maxLength": 2000},
            "consensus": {
                "type": "integer",
                "enum": [2, 3],
                "description": (
                    "run this many independent reviews (the model table's `consensus` models when configured, "
                    "else independent samples) and keep a finding only when at least 2 agree on file, "
                    "overlapping lines and kind; the others are dropped with gate consensus"
                ),
            },
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root"],
        outputs={
            "findings": {"type": "array", "items": RESULT_FINDING_SCHEMA},
            "verdict": {"type": "string", "enum": ["approve", "request_changes", "comment", "none"]},
            "dropped_findings": {"type": "array", "items": DROPPED_FINDING_SCHEMA},
            "summary": {"type": "string"},
            "reviewed_commit": _REVIEWED_COMMIT,
        },
        worker_schema=_object(
            {
                "findings": {"type": "array", "items": FINDING_SCHEMA},
                "verdict": {"type": "string", "enum": ["approve", "request_changes", "comment"]},
                "summary": {"type": "string"},
            },
            ["findings", "verdict", "summary"],
        ),
        discipline="review.md",
        runner="review",
        phase="review",
        read_only=True,
        extra_input_rules={"anyOf": [{"required": ["paths"]}, {"required": ["git_range"]}]},
    )
)
_add(
    SkillSpec(
        name="debug",
        title="Debug a failure",
        description=(
            "A worker investigates `symptom`, records hypotheses with evidence, finds the root cause and fixes it. "
            "The supervisor re-runs `failing_cmd` itself and reports whether it passes now (verified)."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "symptom": {"type": "string", "minLength": 1, "maxLength": 20000},
            "failing_cmd": {"type": "string", "minLength": 1, "maxLength": 2000},
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root", "symptom", "failing_cmd"],
        outputs={
            "hypotheses": {"type": "array", "items": HYPOTHESIS_SCHEMA},
            "root_cause": {"type": "string"},
            "fix": {"type": "string"},
            "files_changed": _FILES_CHANGED,
            "failing_cmd_passes": {"type": ["boolean", "null"]},
            "worker_report": {"type": ["object", "null"]},
            "findings": {"type": "array", "items": RESULT_FINDING_SCHEMA},
            "dropped_findings": {"type": "array", "items": DROPPED_FINDING_SCHEMA},
            "reviewed_commit": _REVIEWED_COMMIT,
        },
        worker_schema=_object(
            {
                "hypotheses": {"type": "array", "items": HYPOTHESIS_SCHEMA},
                "root_cause": {"type": "string"},
                "fix": {"type": "string"},
                "files_changed": _FILES_CHANGED,
                "summary": {"type": "string"},
                # The code the root cause is in, quoted: grounded like a review's findings.
                "findings": {"type": "array", "items": FINDING_SCHEMA},
            },
            ["hypotheses", "root_cause", "fix"],
        ),
        discipline="debug.md",
        runner="debug",
        allowed_tools="Read,Write,Edit,Glob,Grep,Bash",
        phase="debug",
    )
)
_add(
    SkillSpec(
        name="apply",
        title="Apply a review's findings behind gates",
        description=(
            "Turns the grounded findings of a verified review (or debug) run into commits on a new branch "
            "hyperguild/apply-<run_id>, made in a git worktree from the reviewed commit: the working tree, index "
            "and HEAD of the project are never touched. Each finding's patch (a unified diff in its suggestion) "
            "passes the gates in order: confidence (>= SUPERVISOR_APPLY_MIN_CONFIDENCE), size (<= "
            "SUPERVISOR_MAX_PATCH_LINES changed lines), apply, tests (the supervisor runs test_cmd itself), "
            "warnings (lint_cmd's count must not rise) and rationale (only the cited lines change). Pass: one "
            "commit; fail: reverted, with the gate, the reason and the evidence. The branch is left for a person "
            "to merge."
        ),
        inputs={
            "project_root": _PROJECT_ROOT,
            "run_id": {"type": "integer", "minimum": 1, "description": "the verified review (or debug) run to apply"},
            "test_cmd": _TEST_CMD,
            "lint_cmd": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "description": "shell command printing one line per lint finding (e.g. ruff check --output-format concise)",
            },
            "min_confidence": {
                "type": "number", "minimum": 0, "maximum": 1,
                "description": "confidence gate (default SUPERVISOR_APPLY_MIN_CONFIDENCE)",
            },
            "max_patch_lines": {
                "type": "integer", "minimum": 0, "maximum": 500,
                "description": "size gate: most added + removed lines (default SUPERVISOR_MAX_PATCH_LINES)",
            },
            "session_id": _SESSION_ID,
        },
        required_inputs=["project_root", "run_id"],
        outputs={
            "findings": {"type": "array", "items": APPLY_FINDING_SCHEMA},
            "branch": {"type": ["string", "null"], "description": "the branch holding the commits (null: nothing applied)"},
            "base_commit": {"type": ["string", "null"], "description": "the reviewed commit the branch starts from"},
            "source_run_id": {"type": ["integer", "null"]},
            "applied": {"type": "integer", "minimum": 0},
            "refused": {"type": "integer", "minimum": 0},
            "test_cmd": {"type": ["string", "null"]},
            "lint_cmd": {"type": ["string", "null"]},
        },
        runner="apply",
        phase="apply",
    )
)
_add(
    SkillSpec(
        name="spec",
        title="Write a spec",
        description=(
            "A worker turns a conversation or notes into a spec with acceptance criteria. The spec is also written "
            "to the brain as a raw note (when the brain is installed)."
        ),
        inputs={
            "text": {"type": "string", "minLength": 1, "maxLength": 100000, "description": "conversation or notes"},
            "project": {"type": "string", "maxLength": 200, "description": "project name, for the note"},
            "project_root": _PROJECT_ROOT,
            "model": _MODEL,
            "session_id": _SESSION_ID,
        },
        required_inputs=["text"],
        outputs={
            "title": {"type": "string"},
            "spec": {"type": "string"},
            "acceptance_criteria": {"type": "array", "items": {"type": "string"}},
            "note_id": {"type": ["integer", "string", "null"], "description": "the raw note in the brain, if written"},
        },
        worker_schema=_object(
            {
                "title": {"type": "string"},
                "spec": {"type": "string"},
                "acceptance_criteria": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "open_questions": {"type": "array", "items": {"type": "string"}},
            },
            ["title", "spec", "acceptance_criteria"],
        ),
        discipline="spec.md",
        runner="spec",
        phase="spec",
        read_only=True,
    )
)
_add(
    SkillSpec(
        name="tier",
        title="Connectivity tier",
        description=(
            "1 full-online (the Anthropic API answers), 2 lan-only (only LiteLLM answers), 3 airplane (neither). "
            "Cached for SUPERVISOR_TIER_CACHE_SECONDS."
        ),
        inputs={"refresh": {"type": "boolean", "description": "ignore the cache"}, "session_id": _SESSION_ID},
        required_inputs=[],
        outputs={
            "tier": {"type": "integer", "enum": [1, 2, 3]},
            "label": {"type": "string", "enum": ["full-online", "lan-only", "airplane"]},
            "anthropic_reachable": {"type": "boolean"},
            "litellm_reachable": {"type": "boolean"},
            "cached": {"type": "boolean"},
        },
        phase="tier",
        read_only=True,
    )
)


def _session_skill(name: str, title: str, description: str, session: str, found: str, item: dict) -> SkillSpec:
    """A sessions-app skill: {session_id (`session`), model?} in; the list `found` of `item`s and its count out."""
    return SkillSpec(
        name=name,
        title=title,
        description=description,
        inputs={"session_id": {**_SESSION_ID, "description": session}, "model": _MODEL},
        required_inputs=["session_id"],
        outputs={found: {"type": "array", "items": item}, "count": {"type": "integer", "minimum": 0}},
        phase=name,
    )


_add(
    _session_skill(
        "retrospective",
        "Session retrospective",
        "Turns a session log into candidate notes (raw) for people to review.",
        "the session to look back on",
        "learnings",
        LEARNING_SCHEMA,
    )
)
_add(
    _session_skill(
        "trainer",
        "Training candidates from a session",
        "Turns a session's verified skill runs into SFT/DPO candidates for curation.",
        "the session to mine",
        "examples",
        EXAMPLE_SCHEMA,
    )
)

WORKER_SKILLS = tuple(name for name, spec in SKILLS.items() if spec.worker_schema is not None)


def input_schema(skill: str) -> dict:
    return SKILLS[skill].input_schema()


def result_schema(skill: str) -> dict:
    return SKILLS[skill].result_schema()


def tool_declaration(skill: str, *, routed: bool = False) -> dict:
    """The name, title and schemas of an MCP tool serving `skill` (`routed`: the /mcp/routing twin).

    For `endpoint.tool(**tool_declaration("review"), description=..., read_only=...)`.
    """
    title = SKILLS[skill].title + (" (routed)" if routed else "")
    return {"name": skill, "title": title, "input_schema": input_schema(skill), "output_schema": result_schema(skill)}


def worker_schema(skill: str) -> dict:
    schema = SKILLS[skill].worker_schema
    if schema is None:
        raise KeyError(f"{skill} has no worker")
    return copy.deepcopy(schema)


def build_result(skill: str, *, status: Verdict | str = Verdict.ERROR, **values) -> dict:
    """A result in the shared shape with every field present: `values`, and neutral values for the rest.

    The result is the tool's structured output (and `SkillRun.result`): a dict
    in the shape `result_schema(skill)` describes, built only here. A status
    that is not a `Verdict` raises ValueError rather than reaching a caller.
    """
    spec = SKILLS[skill]
    result = {name: _neutral(schema) for name, schema in {**BASE_RESULT_PROPERTIES, **spec.outputs}.items()}
    result.update(status=Verdict(status), phase=spec.phase, skill=skill, **values)
    return result


def _neutral(schema: dict):
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "null" in kinds:
        return None
    if "array" in kinds:
        return []
    if "boolean" in kinds:
        return False
    if "integer" in kinds or "number" in kinds:
        return schema.get("enum", [0])[-1] if "enum" in schema else 0
    if "string" in kinds:
        return "none" if "none" in schema.get("enum", []) else (schema.get("enum", [""])[0])
    if "object" in kinds:
        return {}
    return None
