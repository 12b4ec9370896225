"""One definition per skill: its arguments, its result, what its worker must return.

Each is a pydantic model (`hyperguild.mcp.contracts`), and the JSON Schemas
the tools declare and the workers are held to are generated from them. Every
skill result shares one shape (`SkillResult`):

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal, TypedDict, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from hyperguild.mcp import contracts
from hyperguild.mcp.contracts import CallProject, CallSession, ToolInput, ToolResult
from ledger.usage import UsageReport
from supervisor.run_results import SkillRunResult


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


# --- the parts the models are made of --------------------------------------------------------


def _null() -> None:
    return None


def nullable(description: str | None = None) -> Any:
    """A result field that is always there and null until set: `{"type": [X, "null"]}`, required.

    (A default of None would make it optional and leave it out of the result when None:
    `hyperguild.mcp.contracts.ToolResult`.)
    """
    return Field(default_factory=_null, description=description)


ProjectRoot = Annotated[
    str,
    CallProject(),
    Field(
        min_length=1,
        max_length=1000,
        description="absolute path of the project; must lie under SUPERVISOR_ALLOWED_ROOTS",
    ),
]
ModelName = Annotated[str, Field(min_length=1, max_length=200, description="model override (else the model table)")]
SessionId = Annotated[
    str,
    CallSession(),
    Field(min_length=1, max_length=200, description="your session id, to link the run to the session log"),
]
TestCmd = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2000,
        description="shell command that runs the tests (default: detected from go.mod, package.json, pyproject.toml, …)",
    ),
]
RelPath = Annotated[str, Field(min_length=1, max_length=1000)]
Count = Annotated[int, Field(ge=0)]
Confidence = Annotated[float, Field(ge=0, le=1)]


class _Open(ToolResult):
    """A nested object of a report or a result: the named fields, and whatever else it carries kept as is.

    An optional field (default None) is left out when None, as in any ToolResult."""

    model_config = ConfigDict(extra="allow")


class Finding(_Open):
    file: str = Field(description="path relative to the project root")
    line: int = Field(ge=1)
    severity: Literal["critical", "major", "minor", "nit"]
    title: str
    rationale: str
    suggestion: str
    confidence: Confidence
    quote: str | None = Field(
        None, description="the code at that line, copied exactly (required: a finding without it is dropped)"
    )
    kind: str | None = Field(None, description="the class of bug, e.g. off-by-one, null-deref, injection")


class ResultFinding(Finding):
    """A finding as the supervisor returns it: grounded, with the patch gate's verdict."""

    patch: str | None = nullable("the suggestion, if small enough to be a patch")
    patch_refused: str | None = Field(None, description="why the suggestion is not offered as a patch")
    agreed_by: list[Annotated[int, Field(ge=1)]] | None = Field(
        None, description="consensus reviews only: the reviews (1-based) that reported this finding"
    )


class DroppedFinding(_Open):
    """A finding the gates dropped: whatever it said, plus which gate and why."""

    gate: Literal["file", "line", "quote", "rationale", "confidence", "consensus"]
    reason: str
    review: Annotated[int, Field(ge=1)] | None = Field(
        None, description="consensus reviews only: which review reported it"
    )


class Hypothesis(_Open):
    hypothesis: str
    evidence: str
    ruled_out: bool | None = None


class Learning(_Open):
    """A candidate note of a retrospective."""

    title: str
    body: str
    kind: Literal["decision", "correction", "surprise", "pattern"]
    # The session entries (their seq numbers) the learning rests on.
    evidence: list[Annotated[int, Field(ge=1)]]
    runs: list[int] | None = None
    method: str | None = None
    # written: a new raw note; merge: a near-duplicate of merge_into; exists: written by an earlier run;
    # withheld: not written, because the session's owner may not write raw notes (docs/people.md).
    outcome: Literal["written", "merge", "exists", "withheld"] | None = None
    note_slug: str | None = None
    merge_into: dict[str, Any] | None = None


class Example(_Open):
    """A training candidate of the trainer."""

    kind: Literal["sft", "dpo"]
    prompt: str
    chosen: str
    rejected: str | None = nullable()
    source_run_id: int | None = nullable()


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
    file: str | None = nullable()
    line: int | None = nullable()
    title: str | None = nullable()
    kind: str | None = nullable()
    confidence: float | None = nullable()
    fingerprint: str | None = None
    outcome: Literal["applied", "refused"]
    commit: str | None = nullable("the commit on the branch (applied only)")
    gate: Annotated[
        ApplyGateName | None,
        WithJsonSchema({"type": ["string", "null"], "enum": [*APPLY_GATE_NAMES, None]}),
        Field(description="the gate that refused it"),
    ]
    reason: str
    output: str | None = Field(None, description="excerpt of the evidence: test or lint output, git's message")
    gates: list[GateTried] = Field(description="every gate tried, in order")


# --- what each worker must return ------------------------------------------------------------


class WorkerReport(BaseModel):
    """A worker's answer: exactly these fields (the schema `claude --json-schema` enforces)."""

    model_config = ConfigDict(extra="forbid")


class TddReport(WorkerReport):
    status: Literal["done", "blocked"]
    file_path: str = Field(description="main file written, relative to the project root")
    files_changed: list[str] | None = None
    test_name: str | None = None
    summary: str


class ReviewReport(WorkerReport):
    findings: list[Finding]
    verdict: Literal["approve", "request_changes", "comment"]
    summary: str


class DebugReport(WorkerReport):
    hypotheses: list[Hypothesis]
    root_cause: str
    fix: str
    files_changed: list[str] | None = None
    summary: str | None = None
    # The code the root cause is in, quoted: grounded like a review's findings.
    findings: list[Finding] | None = None


class SpecReport(WorkerReport):
    title: str
    spec: str
    acceptance_criteria: list[str] = Field(min_length=1)
    open_questions: list[str] | None = None


class GroundedReview(_Open):
    """A review's answer once the supervisor grounded it: the findings kept (with the patch gate's verdict)
    and the ones dropped, with why (`supervisor.grounding`)."""

    findings: list[ResultFinding] = Field(default_factory=list)
    verdict: Literal["approve", "request_changes", "comment"] = "comment"
    summary: str = ""
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)


class GroundedDiagnosis(_Open):
    """A debug answer once the supervisor grounded the code it quotes."""

    hypotheses: list[Hypothesis]
    root_cause: str
    fix: str
    files_changed: list[str] = Field(default_factory=list)
    findings: list[ResultFinding] = Field(default_factory=list)
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)


# --- the arguments of each skill -------------------------------------------------------------


class SkillInput(ToolInput):
    """A skill's arguments: exactly these fields (an optional one is None when not given)."""


class TddRedInput(SkillInput):
    project_root: ProjectRoot
    spec: str = Field(min_length=1, max_length=20000, description="the behaviour to test")
    test_path: Annotated[RelPath, Field(description="where the test should go (optional hint)")] | None = None
    test_cmd: TestCmd | None = None
    model: ModelName | None = None
    session_id: SessionId | None = None


class TddGreenInput(SkillInput):
    project_root: ProjectRoot
    test_path: RelPath = Field(description="the failing test, relative to the project root")
    impl_path: Annotated[RelPath, Field(description="where the implementation goes (optional hint)")] | None = None
    notes: Annotated[str, Field(max_length=20000)] | None = None
    test_cmd: TestCmd | None = None
    model: ModelName | None = None
    session_id: SessionId | None = None


class TddRefactorInput(SkillInput):
    project_root: ProjectRoot
    test_path: RelPath
    impl_path: RelPath
    goal: Annotated[str, Field(max_length=20000, description="what to improve (optional)")] | None = None
    test_cmd: TestCmd | None = None
    model: ModelName | None = None
    session_id: SessionId | None = None


GIT_RANGE_PATTERN = r"^[A-Za-z0-9_./~^@{}-]+(\.\.\.?[A-Za-z0-9_./~^@{}-]+)?$"


class ReviewInput(SkillInput):
    model_config = ConfigDict(json_schema_extra={"anyOf": [{"required": ["paths"]}, {"required": ["git_range"]}]})

    project_root: ProjectRoot
    paths: Annotated[list[RelPath], Field(min_length=1, max_length=200)] | None = None
    git_range: Annotated[str, Field(min_length=1, max_length=200, pattern=GIT_RANGE_PATTERN)] | None = None
    focus: Annotated[str, Field(max_length=2000)] | None = None
    consensus: Literal[2, 3] | None = Field(
        None,
        description=(
            "run this many independent reviews (the model table's `consensus` models when configured, "
            "else independent samples) and keep a finding only when at least 2 agree on file, "
            "overlapping lines and kind; the others are dropped with gate consensus"
        ),
    )
    model: ModelName | None = None
    session_id: SessionId | None = None

    @model_validator(mode="after")
    def _paths_or_range(self) -> ReviewInput:
        if self.paths is None and self.git_range is None:
            raise ValueError("give paths or git_range: what to review")
        return self


class DebugInput(SkillInput):
    project_root: ProjectRoot
    symptom: str = Field(min_length=1, max_length=20000)
    failing_cmd: str = Field(min_length=1, max_length=2000)
    model: ModelName | None = None
    session_id: SessionId | None = None


class ApplyInput(SkillInput):
    project_root: ProjectRoot
    run_id: int = Field(ge=1, description="the verified review (or debug) run to apply")
    test_cmd: TestCmd | None = None
    lint_cmd: Annotated[str, Field(min_length=1, max_length=2000)] | None = Field(
        None, description="shell command printing one line per lint finding (e.g. ruff check --output-format concise)"
    )
    min_confidence: Confidence | None = Field(
        None, description="confidence gate (default SUPERVISOR_APPLY_MIN_CONFIDENCE)"
    )
    max_patch_lines: Annotated[int, Field(ge=0, le=500)] | None = Field(
        None, description="size gate: most added + removed lines (default SUPERVISOR_MAX_PATCH_LINES)"
    )
    session_id: SessionId | None = None


class SpecInput(SkillInput):
    text: str = Field(min_length=1, max_length=100000, description="conversation or notes")
    project: Annotated[str, Field(max_length=200, description="project name, for the note")] | None = None
    project_root: ProjectRoot | None = None
    model: ModelName | None = None
    session_id: SessionId | None = None


class TierInput(SkillInput):
    model_config = ConfigDict(json_schema_extra={"required": []})  # the surface has always said it

    refresh: Annotated[bool, Field(description="ignore the cache")] | None = None
    session_id: SessionId | None = None


class RetrospectiveInput(SkillInput):
    session_id: SessionId = Field(description="the session to look back on")
    model: ModelName | None = None


class TrainerInput(SkillInput):
    session_id: SessionId = Field(description="the session to mine")
    model: ModelName | None = None


# --- the result of each skill ----------------------------------------------------------------


class SkillResult(ToolResult):
    """The shape every skill result shares; a skill's result adds its own fields.

    Every field has a neutral value (`build_result` fills them) and is in every
    result; a skill that asks a model also subclasses `UsageReport` (`usage`,
    `budget_warning`: optional, left out until the engine fills them).
    """

    status: Annotated[
        Verdict, WithJsonSchema({"type": "string", "enum": STATUSES}), Field(description="the supervisor's verdict")
    ] = Verdict.ERROR
    phase: str = Field("", description="red, green, refactor, review, debug, spec, …")
    skill: str = ""
    file_path: str | None = nullable("main file the worker wrote, relative to the project root")
    runner_output: str = Field("", description="output of the supervisor's own check (tests, failing_cmd)")
    verified: bool | None = nullable("true/false from the supervisor's own check; null: nothing to check")
    model_used: str = ""
    message: str = Field("", description="what happened, and why the status is what it is")
    run_id: int | None = nullable("the SkillRun record (admin: /admin/supervisor/skillrun/<id>/)")
    attempts: Count = 0
    duration_ms: Count = 0


_REVIEWED_COMMIT = "the git commit checked out when the findings were grounded (what `apply` branches from)"


class TddResult(SkillResult, UsageReport):
    files_changed: list[str] = Field(default_factory=list, description="files the worker says it touched")
    test_cmd: str = Field("", description="the command the supervisor ran")
    worker_report: dict[str, Any] | None = nullable("the worker's own claim (not trusted)")


class TddRedResult(TddResult):
    test_name: str | None = nullable()


class ReviewResult(SkillResult, UsageReport):
    findings: list[ResultFinding] = Field(default_factory=list)
    verdict: Literal["approve", "request_changes", "comment", "none"] = "none"
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)
    summary: str = ""
    reviewed_commit: str | None = nullable(_REVIEWED_COMMIT)


class DebugResult(SkillResult, UsageReport):
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    root_cause: str = ""
    fix: str = ""
    files_changed: list[str] = Field(default_factory=list)
    failing_cmd_passes: bool | None = nullable()
    worker_report: dict[str, Any] | None = nullable()
    findings: list[ResultFinding] = Field(default_factory=list)
    dropped_findings: list[DroppedFinding] = Field(default_factory=list)
    reviewed_commit: str | None = nullable(_REVIEWED_COMMIT)


class ApplyResult(SkillResult):
    findings: list[ApplyFinding] = Field(default_factory=list)
    branch: str | None = nullable("the branch holding the commits (null: nothing applied)")
    base_commit: str | None = nullable("the reviewed commit the branch starts from")
    source_run_id: int | None = nullable()
    applied: Count = 0
    refused: Count = 0
    test_cmd: str | None = nullable()
    lint_cmd: str | None = nullable()


class SpecResult(SkillResult, UsageReport):
    title: str = ""
    spec: str = ""
    acceptance_criteria: list[str] = Field(default_factory=list)
    note_id: Annotated[int | str | None, WithJsonSchema({"type": ["integer", "string", "null"]})] = nullable(
        "the raw note in the brain, if written"
    )


class TierResult(SkillResult):
    tier: Literal[1, 2, 3] = 3
    label: Literal["full-online", "lan-only", "airplane"] = "full-online"
    anthropic_reachable: bool = False
    litellm_reachable: bool = False
    cached: bool = False


class RetrospectiveResult(SkillResult, UsageReport):
    learnings: list[Learning] = Field(default_factory=list)
    count: Count = 0
    method: Literal["llm", "rules"] | None = Field(None, description="who proposed the learnings")
    written: list[str] | None = Field(None, description="the raw notes this run wrote (slugs)")
    merge_suggestions: list[dict[str, Any]] | None = Field(
        None, description="learnings an existing note already says: {learning, slug, title, status, score}"
    )


class TrainerResult(SkillResult):
    examples: list[Example] = Field(default_factory=list)
    count: Count = 0
    created: Count | None = Field(None, description="how many of the examples are new")


# --- the skills ------------------------------------------------------------------------------


# Checks a skill naming a session passes (session_id, the caller: a User or None for the service), each raising
# a domain error for one the caller may not name: the sessions app adds the ownership check (a session is its
# owner's; staff and the service reach every one), since the supervisor knows no sessions.
SESSION_CHECKS: list[Callable[[str, Any], None]] = []


def check_session(session_id: str | None, user: Any) -> None:
    """Refuse, before anything is recorded or run, a skill that names a session `user` may not reach."""
    if session_id:
        for check in SESSION_CHECKS:
            check(session_id, user)


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

    def input_schema(self) -> contracts.JsonSchema:
        return contracts.input_schema(self.input_model)

    def result_schema(self) -> contracts.JsonSchema:
        return contracts.output_schema(self.result_model)

    @property
    def worker_schema(self) -> contracts.JsonSchema | None:
        """What `claude --json-schema` must return (None: no claude worker)."""
        return None if self.worker_model is None else contracts.input_schema(self.worker_model)


SKILLS: dict[str, SkillSpec] = {}


def _add(spec: SkillSpec) -> None:
    SKILLS[spec.name] = spec


def _tdd_skill(
    *,
    name: str,
    title: str,
    description: str,
    input_model: type[SkillInput],
    phase: str,
    expect_tests: str,
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
            "Cached for 60 s; refresh probes again."
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


def input_schema(skill: str) -> contracts.JsonSchema:
    return SKILLS[skill].input_schema()


def result_schema(skill: str) -> contracts.JsonSchema:
    return SKILLS[skill].result_schema()


class ToolDeclaration(TypedDict):
    """The keyword arguments of `Endpoint.tool` a skill fixes (PEP 692's typed `**kwargs`)."""

    name: str
    title: str
    # type[Any]: the handler the declaration goes with takes the skill's own input model, a subclass of SkillInput.
    input_model: type[Any]
    result_model: type[Any]


def tool_declaration(skill: str, *, routed: bool = False) -> ToolDeclaration:
    """The name, title and models of an MCP tool serving `skill` (`routed`: the /mcp/routing twin).

    For `endpoint.tool(**tool_declaration("review"), description=..., read_only=...)`.
    """
    spec = SKILLS[skill]
    title = spec.title + (" (routed)" if routed else "")
    return {"name": skill, "title": title, "input_model": spec.input_model, "result_model": spec.result_model}


def worker_schema(skill: str) -> contracts.JsonSchema:
    schema = SKILLS[skill].worker_schema
    if schema is None:
        raise KeyError(f"{skill} has no worker")
    return schema


def build_result(skill: str, *, status: Verdict | str = Verdict.ERROR, **values: Any) -> SkillRunResult:
    """A result in the shared shape with every field present: `values`, and the model's neutral values for the rest.

    The result as it is stored (`SkillRun.result`) and passed between the
    runners and the skill steps: a `SkillRunResult` in the shape of the
    skill's `result_model`, built only here; `typed_result` makes the tool's
    result of it (`model_dump` is left to the wire). The optional fields
    (default None: `usage`, `budget_warning`) stay out until set. A status
    that is not a `Verdict` raises ValueError rather than reaching a caller.
    """
    spec = SKILLS[skill]
    result = {
        name: field.get_default(call_default_factory=True)
        for name, field in spec.result_model.model_fields.items()
        if field.default is not None
    }
    result.update(status=Verdict(status), phase=spec.phase, skill=skill, **values)
    # The keys are the result model's fields, filled from the model itself (SkillRunResult names the worker skills').
    return cast(SkillRunResult, result)


def typed_result(skill: str, result: Mapping[str, Any]) -> SkillResult:
    """`result` (from `build_result`, or stored on a run) as the skill's result model: what its tool returns."""
    return SKILLS[skill].result_model.model_validate(result)
