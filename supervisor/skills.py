"""One definition per skill: its arguments, its result, what its worker must return.

Each is a pydantic model, and the JSON Schemas the tools declare and the
workers are held to are generated from them (`json_schema`). Every skill
result shares one shape (`SkillResult`):

    {status: pass|fail|error|timeout, phase, skill, file_path, runner_output,
     verified, model_used, message, run_id, attempts, duration_ms}

plus fields of its own. `status` is the supervisor's verdict: `pass` means
the work was done and (where something can be checked) verified; `fail`
means the worker answered but verification failed after every attempt;
`error` means the worker could not be run or answered nonsense; `timeout`
means it was killed at the deadline or for going silent.

`SKILLS[name].worker_model` is what a worker must return; its schema
(`worker_schema(name)`) is passed to `claude --json-schema` and to the routed
model: the worker's own report, recorded but never trusted.

The routing endpoint reuses `input_schema()` / `result_schema()` for
`review`, `debug`, `retrospective` and `trainer`. The logic of
`retrospective` and `trainer` lives in the sessions app
(`sessions/retrospective.py`, `sessions/trainer.py`), which registers those
tools; only their models are defined here:

- inputs `{session_id, model?}`;
- results: the shared shape plus `learnings` (retrospective: candidate notes
  `{title, body, kind, evidence}`) or `examples` (trainer: training
  candidates `{kind: sft|dpo, prompt, chosen, rejected?, source_run_id?}`),
  and `count`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic.json_schema import JsonSchemaMode, SkipJsonSchema


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


# --- JSON Schema from the models ---------------------------------------------------------

# pydantic's own additions that say nothing to a client or a worker: dropped from the generated schemas.
_NOISE = frozenset({"title", "default", "$defs"})


@cache
def _generated_schema(model: type[BaseModel], mode: JsonSchemaMode) -> dict[str, Any]:
    raw = model.model_json_schema(mode=mode)
    # A model's docstring is for readers of the code; the schema's words are its fields' descriptions.
    definitions = {
        name: {key: value for key, value in schema.items() if key != "description"}
        for name, schema in raw.get("$defs", {}).items()
    }
    raw.pop("description", None)
    plain = _plain(raw, definitions)
    assert isinstance(plain, dict)
    return plain


def json_schema(model: type[BaseModel], *, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
    """`model`'s JSON Schema in the plain form the tools have always declared (a fresh copy).

    References are inlined, pydantic's titles and defaults dropped, `X | None`
    written `{"type": [X, "null"]}`, and every object with properties names
    its required ones (`[]` when none). Results use `mode="serialization"`:
    a field with a default is always present in the output, so it is required.
    """
    return copy.deepcopy(_generated_schema(model, mode))


def _plain(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = definitions[node["$ref"].rsplit("/", 1)[-1]]
        return _plain({**target, **{k: v for k, v in node.items() if k != "$ref"}}, definitions)
    plain: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NOISE or (key == "additionalProperties" and value is True):
            continue
        if key == "properties":  # property names are not keywords: a property may be called "title"
            plain[key] = {name: _plain(schema, definitions) for name, schema in value.items()}
        else:
            plain[key] = _plain(value, definitions)
    branches = plain.get("anyOf")
    if branches and all(set(branch) == {"type"} and isinstance(branch["type"], str) for branch in branches):
        del plain["anyOf"]
        plain["type"] = [branch["type"] for branch in branches]
    if "properties" in plain:
        plain.setdefault("required", [])
    return plain


# --- the parts the models are made of --------------------------------------------------------

_T = TypeVar("_T")


def _is_none(value: object) -> bool:
    return value is None


# An optional field: absent (None in Python), never null on the wire. The schema shows only its type,
# and a dump leaves it out while it is None.
Maybe = Annotated[_T | SkipJsonSchema[None], Field(exclude_if=_is_none)]

ProjectRoot = Annotated[
    str,
    Field(
        min_length=1, max_length=1000,
        description="absolute path of the project; must lie under SUPERVISOR_ALLOWED_ROOTS",
    ),
]  # fmt: skip
ModelName = Annotated[str, Field(min_length=1, max_length=200, description="model override (else the model table)")]
SessionId = Annotated[
    str, Field(min_length=1, max_length=200, description="your session id, to link the run to the session log")
]
TestCmd = Annotated[
    str,
    Field(
        min_length=1, max_length=2000,
        description="shell command that runs the tests (default: detected from go.mod, package.json, pyproject.toml, …)",
    ),
]  # fmt: skip
RelPath = Annotated[str, Field(min_length=1, max_length=1000)]
Count = Annotated[int, Field(ge=0)]
Confidence = Annotated[float, Field(ge=0, le=1)]


class _Open(BaseModel):
    """A nested object of a report or a result: the named fields, and whatever else it carries kept as is."""

    model_config = ConfigDict(extra="allow")


class Finding(_Open):
    file: str = Field(description="path relative to the project root")
    line: int = Field(ge=1)
    severity: Literal["critical", "major", "minor", "nit"]
    title: str
    rationale: str
    suggestion: str
    confidence: Confidence
    quote: Maybe[str] = Field(
        None, description="the code at that line, copied exactly (required: a finding without it is dropped)"
    )
    kind: Maybe[str] = Field(None, description="the class of bug, e.g. off-by-one, null-deref, injection")


class ResultFinding(Finding):
    """A finding as the supervisor returns it: grounded, with the patch gate's verdict."""

    patch: str | None = Field(None, description="the suggestion, if small enough to be a patch")
    patch_refused: Maybe[str] = Field(None, description="why the suggestion is not offered as a patch")
    agreed_by: Maybe[list[Annotated[int, Field(ge=1)]]] = Field(
        None, description="consensus reviews only: the reviews (1-based) that reported this finding"
    )


class DroppedFinding(_Open):
    """A finding the gates dropped: whatever it said, plus which gate and why."""

    gate: Literal["file", "line", "quote", "rationale", "confidence", "consensus"]
    reason: str
    review: Maybe[Annotated[int, Field(ge=1)]] = Field(
        None, description="consensus reviews only: which review reported it"
    )


class Hypothesis(_Open):
    hypothesis: str
    evidence: str
    ruled_out: Maybe[bool] = None


class Learning(_Open):
    """A candidate note of a retrospective."""

    title: str
    body: str
    kind: Literal["decision", "correction", "surprise", "pattern"]
    # The session entries (their seq numbers) the learning rests on.
    evidence: list[Annotated[int, Field(ge=1)]]
    runs: Maybe[list[int]] = None
    method: Maybe[str] = None
    # written: a new raw note; merge: a near-duplicate of merge_into; exists: written by an earlier run.
    outcome: Maybe[Literal["written", "merge", "exists"]] = None
    note_slug: Maybe[str] = None
    merge_into: Maybe[dict[str, Any]] = None


class Example(_Open):
    """A training candidate of the trainer."""

    kind: Literal["sft", "dpo"]
    prompt: str
    chosen: str
    rejected: str | None = None
    source_run_id: int | None = None


ApplyGateName = Literal[
    "confidence", "size", "apply", "tests", "warnings", "rationale", "time", "file", "line", "quote", "consensus"
]
APPLY_GATE_NAMES: list[str] = list(get_args(ApplyGateName))


class GateTried(_Open):
    gate: str
    passed: bool
    detail: str


class ApplyFinding(_Open):
    """One finding as `apply` answers it: applied (with its commit) or refused (with the gate, why, the evidence)."""

    index: int = Field(ge=1)
    file: str | None = None
    line: int | None = None
    title: str | None = None
    kind: str | None = None
    confidence: float | None = None
    fingerprint: Maybe[str] = None
    outcome: Literal["applied", "refused"]
    commit: str | None = Field(None, description="the commit on the branch (applied only)")
    gate: Annotated[
        ApplyGateName | None,
        WithJsonSchema({"type": ["string", "null"], "enum": [*APPLY_GATE_NAMES, None]}),
        Field(description="the gate that refused it"),
    ]
    reason: str
    output: Maybe[str] = Field(None, description="excerpt of the evidence: test or lint output, git's message")
    gates: list[GateTried] = Field(description="every gate tried, in order")


# --- what each worker must return ------------------------------------------------------------


class WorkerReport(BaseModel):
    """A worker's answer: exactly these fields (the schema `claude --json-schema` enforces)."""

    model_config = ConfigDict(extra="forbid")


class TddReport(WorkerReport):
    status: Literal["done", "blocked"]
    file_path: str = Field(description="main file written, relative to the project root")
    files_changed: Maybe[list[str]] = None
    test_name: Maybe[str] = None
    summary: str


class ReviewReport(WorkerReport):
    findings: list[Finding]
    verdict: Literal["approve", "request_changes", "comment"]
    summary: str


class DebugReport(WorkerReport):
    hypotheses: list[Hypothesis]
    root_cause: str
    fix: str
    files_changed: Maybe[list[str]] = None
    summary: Maybe[str] = None
    # The code the root cause is in, quoted: grounded like a review's findings.
    findings: Maybe[list[Finding]] = None


class SpecReport(WorkerReport):
    title: str
    spec: str
    acceptance_criteria: list[str] = Field(min_length=1)
    open_questions: Maybe[list[str]] = None


# --- the arguments of each skill -------------------------------------------------------------


class SkillInput(BaseModel):
    """A skill's arguments: exactly these fields."""

    model_config = ConfigDict(extra="forbid")


class TddRedInput(SkillInput):
    project_root: ProjectRoot
    spec: str = Field(min_length=1, max_length=20000, description="the behaviour to test")
    test_path: Maybe[Annotated[RelPath, Field(description="where the test should go (optional hint)")]] = None
    test_cmd: Maybe[TestCmd] = None
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None


class TddGreenInput(SkillInput):
    project_root: ProjectRoot
    test_path: RelPath = Field(description="the failing test, relative to the project root")
    impl_path: Maybe[Annotated[RelPath, Field(description="where the implementation goes (optional hint)")]] = None
    notes: Maybe[Annotated[str, Field(max_length=20000)]] = None
    test_cmd: Maybe[TestCmd] = None
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None


class TddRefactorInput(SkillInput):
    project_root: ProjectRoot
    test_path: RelPath
    impl_path: RelPath
    goal: Maybe[Annotated[str, Field(max_length=20000, description="what to improve (optional)")]] = None
    test_cmd: Maybe[TestCmd] = None
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None


GIT_RANGE_PATTERN = r"^[A-Za-z0-9_./~^@{}-]+(\.\.\.?[A-Za-z0-9_./~^@{}-]+)?$"


class ReviewInput(SkillInput):
    model_config = ConfigDict(json_schema_extra={"anyOf": [{"required": ["paths"]}, {"required": ["git_range"]}]})

    project_root: ProjectRoot
    paths: Maybe[Annotated[list[RelPath], Field(min_length=1, max_length=200)]] = None
    git_range: Maybe[Annotated[str, Field(min_length=1, max_length=200, pattern=GIT_RANGE_PATTERN)]] = None
    focus: Maybe[Annotated[str, Field(max_length=2000)]] = None
    consensus: Maybe[Literal[2, 3]] = Field(
        None,
        description=(
            "run this many independent reviews (the model table's `consensus` models when configured, "
            "else independent samples) and keep a finding only when at least 2 agree on file, "
            "overlapping lines and kind; the others are dropped with gate consensus"
        ),
    )
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None

    @model_validator(mode="after")
    def _paths_or_range(self) -> ReviewInput:
        if self.paths is None and self.git_range is None:
            raise ValueError("give paths or git_range: what to review")
        return self


class DebugInput(SkillInput):
    project_root: ProjectRoot
    symptom: str = Field(min_length=1, max_length=20000)
    failing_cmd: str = Field(min_length=1, max_length=2000)
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None


class ApplyInput(SkillInput):
    project_root: ProjectRoot
    run_id: int = Field(ge=1, description="the verified review (or debug) run to apply")
    test_cmd: Maybe[TestCmd] = None
    lint_cmd: Maybe[Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        None, description="shell command printing one line per lint finding (e.g. ruff check --output-format concise)"
    )
    min_confidence: Maybe[Confidence] = Field(
        None, description="confidence gate (default SUPERVISOR_APPLY_MIN_CONFIDENCE)"
    )
    max_patch_lines: Maybe[Annotated[int, Field(ge=0, le=500)]] = Field(
        None, description="size gate: most added + removed lines (default SUPERVISOR_MAX_PATCH_LINES)"
    )
    session_id: Maybe[SessionId] = None


class SpecInput(SkillInput):
    text: str = Field(min_length=1, max_length=100000, description="conversation or notes")
    project: Maybe[Annotated[str, Field(max_length=200, description="project name, for the note")]] = None
    project_root: Maybe[ProjectRoot] = None
    model: Maybe[ModelName] = None
    session_id: Maybe[SessionId] = None


class TierInput(SkillInput):
    refresh: Maybe[Annotated[bool, Field(description="ignore the cache")]] = None
    session_id: Maybe[SessionId] = None


class RetrospectiveInput(SkillInput):
    session_id: SessionId = Field(description="the session to look back on")
    model: Maybe[ModelName] = None


class TrainerInput(SkillInput):
    session_id: SessionId = Field(description="the session to mine")
    model: Maybe[ModelName] = None


# --- the result of each skill ----------------------------------------------------------------


class SkillResult(BaseModel):
    """The shape every skill result shares; a skill's result adds its own fields.

    Every field has a neutral default, and every field is in every result
    (required in the serialization schema). Other keys (`usage`) pass through.
    """

    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)

    status: Annotated[
        Verdict, WithJsonSchema({"type": "string", "enum": STATUSES}), Field(description="the supervisor's verdict")
    ] = Verdict.ERROR
    phase: str = Field("", description="red, green, refactor, review, debug, spec, …")
    skill: str = ""
    file_path: str | None = Field(None, description="main file the worker wrote, relative to the project root")
    runner_output: str = Field("", description="output of the supervisor's own check (tests, failing_cmd)")
    verified: bool | None = Field(
        None, description="true/false from the supervisor's own check; null: nothing to check"
    )
    model_used: str = ""
    message: str = Field("", description="what happened, and why the status is what it is")
    run_id: int | None = Field(None, description="the SkillRun record (admin: /admin/supervisor/skillrun/<id>/)")
    attempts: Count = 0
    duration_ms: Count = 0


ReviewedCommit = Annotated[
    str | None,
    Field(description="the git commit checked out when the findings were grounded (what `apply` branches from)"),
]


class TddResult(SkillResult):
    files_changed: list[str] = Field(default_factory=list, description="files the worker says it touched")
    test_cmd: str = Field("", description="the command the supervisor ran")
    worker_report: dict[str, Any] | None = Field(None, description="the worker's own claim (not trusted)")


class TddRedResult(TddResult):
    test_name: str | None = None


class ReviewResult(SkillResult):
    findings: list[ResultFinding] = Field(default_factory=list)
    verdict: Literal["approve", "request_changes", "comment", "none"] = "none"
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)
    summary: str = ""
    reviewed_commit: ReviewedCommit = None


class DebugResult(SkillResult):
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    root_cause: str = ""
    fix: str = ""
    files_changed: list[str] = Field(default_factory=list)
    failing_cmd_passes: bool | None = None
    worker_report: dict[str, Any] | None = None
    findings: list[ResultFinding] = Field(default_factory=list)
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)
    reviewed_commit: ReviewedCommit = None


class ApplyResult(SkillResult):
    findings: list[ApplyFinding] = Field(default_factory=list)
    branch: str | None = Field(None, description="the branch holding the commits (null: nothing applied)")
    base_commit: str | None = Field(None, description="the reviewed commit the branch starts from")
    source_run_id: int | None = None
    applied: Count = 0
    refused: Count = 0
    test_cmd: str | None = None
    lint_cmd: str | None = None


class SpecResult(SkillResult):
    title: str = ""
    spec: str = ""
    acceptance_criteria: list[str] = Field(default_factory=list)
    note_id: int | str | None = Field(None, description="the raw note in the brain, if written")


class TierResult(SkillResult):
    tier: Literal[1, 2, 3] = 3
    label: Literal["full-online", "lan-only", "airplane"] = "full-online"
    anthropic_reachable: bool = False
    litellm_reachable: bool = False
    cached: bool = False


class RetrospectiveResult(SkillResult):
    learnings: list[Learning] = Field(default_factory=list)
    count: Count = 0


class TrainerResult(SkillResult):
    examples: list[Example] = Field(default_factory=list)
    count: Count = 0


# --- the skills ------------------------------------------------------------------------------


class SkillFailed(Exception):
    """The run cannot start (bad paths, no test command): status error with this message."""


@dataclass(frozen=True)
class SkillSpec:
    name: str
    title: str
    description: str
    input_model: type[SkillInput]
    result_model: type[SkillResult]
    worker_model: type[WorkerReport] | None = None  # what a `claude` worker must return; None: no claude worker
    # How a worker run goes (key of `supervisor.runners.RUNNERS`); None for skills without a worker.
    runner: str | None = None
    discipline: str | None = None  # file in the disciplines folder
    allowed_tools: str = "Read,Glob,Grep"
    phase: str = ""
    # For TDD phases: what the supervisor's own test run must do ("fail" / "pass").
    expect_tests: str | None = None
    read_only: bool = False

    def input_schema(self) -> dict[str, Any]:
        return json_schema(self.input_model)

    def result_schema(self) -> dict[str, Any]:
        return json_schema(self.result_model, mode="serialization")

    @property
    def worker_schema(self) -> dict[str, Any] | None:
        """What `claude --json-schema` must return (None: no claude worker)."""
        return None if self.worker_model is None else json_schema(self.worker_model)


SKILLS: dict[str, SkillSpec] = {}


def _add(spec: SkillSpec) -> None:
    SKILLS[spec.name] = spec


def _tdd_skill(
    *, name: str, title: str, description: str, input_model: type[SkillInput], phase: str, expect_tests: str,
    result_model: type[SkillResult] = TddResult,
) -> SkillSpec:
    """A TDD phase: a worker that edits the project, reports a `TddReport`, and is judged by the tdd runner."""
    return SkillSpec(
        name=name,
        title=title,
        description=description,
        input_model=input_model,
        result_model=result_model,
        worker_model=TddReport,
        discipline=f"{name}.md",
        runner="tdd",
        allowed_tools="Read,Write,Edit,Glob,Grep,Bash",
        phase=phase,
        expect_tests=expect_tests,
    )  # fmt: skip


_add(
    _tdd_skill(
        name="tdd_red",
        title="TDD red: write one failing test",
        description=(
            "A worker writes exactly one failing test for `spec` (no implementation). The supervisor then runs the "
            "test command itself: verified=true only if the tests FAIL. Retries with the runner output up to "
            "SUPERVISOR_MAX_ATTEMPTS times."
        ),
        input_model=TddRedInput,
        result_model=TddRedResult,
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
        input_model=TddGreenInput,
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
        input_model=TddRefactorInput,
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
        input_model=ReviewInput,
        result_model=ReviewResult,
        worker_model=ReviewReport,
        discipline="review.md",
        runner="review",
        phase="review",
        read_only=True,
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
        input_model=DebugInput,
        result_model=DebugResult,
        worker_model=DebugReport,
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
        input_model=ApplyInput,
        result_model=ApplyResult,
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
        input_model=SpecInput,
        result_model=SpecResult,
        worker_model=SpecReport,
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
        input_model=TierInput,
        result_model=TierResult,
        phase="tier",
        read_only=True,
    )
)
# The sessions-app skills: {session_id, model?} in; the list of learnings or examples and its count out.
_add(
    SkillSpec(
        name="retrospective",
        title="Session retrospective",
        description="Turns a session log into candidate notes (raw) for people to review.",
        input_model=RetrospectiveInput,
        result_model=RetrospectiveResult,
        phase="retrospective",
    )
)
_add(
    SkillSpec(
        name="trainer",
        title="Training candidates from a session",
        description="Turns a session's verified skill runs into SFT/DPO candidates for curation.",
        input_model=TrainerInput,
        result_model=TrainerResult,
        phase="trainer",
    )
)

WORKER_SKILLS = tuple(name for name, spec in SKILLS.items() if spec.worker_model is not None)


def input_schema(skill: str) -> dict[str, Any]:
    return SKILLS[skill].input_schema()


def result_schema(skill: str) -> dict[str, Any]:
    return SKILLS[skill].result_schema()


def tool_declaration(skill: str, *, routed: bool = False) -> dict[str, Any]:
    """The name, title and schemas of an MCP tool serving `skill` (`routed`: the /mcp/routing twin).

    For `endpoint.tool(**tool_declaration("review"), description=..., read_only=...)`.
    """
    title = SKILLS[skill].title + (" (routed)" if routed else "")
    return {"name": skill, "title": title, "input_schema": input_schema(skill), "output_schema": result_schema(skill)}


def worker_schema(skill: str) -> dict[str, Any]:
    schema = SKILLS[skill].worker_schema
    if schema is None:
        raise KeyError(f"{skill} has no worker")
    return schema


def build_result(skill: str, *, status: Verdict | str = Verdict.ERROR, **values: Any) -> dict[str, Any]:
    """A result in the shared shape with every field present: `values`, and the model's neutral defaults for the rest.

    The result is the tool's structured output (and `SkillRun.result`): a dict
    in the shape of the skill's `result_model`, built only here. A status that
    is not a `Verdict` raises ValueError rather than reaching a caller.
    """
    spec = SKILLS[skill]
    result = {
        name: field.get_default(call_default_factory=True) for name, field in spec.result_model.model_fields.items()
    }
    result.update(status=Verdict(status), phase=spec.phase, skill=skill, **values)
    return result
