"""The official MCP conformance suites against the live server, one per revision.

`make test` installs them (tests/conformance/package.json: Node 22,
@modelcontextprotocol/conformance 0.1.16 for the 2025-11-25 era, and
0.2.0-alpha.12 under the alias `conformance-2026`, run with `--requirements
2026-07-28`). Each suite runs once against /mcp/brain with no token, as a
local user would, and every check must pass except those listed below as not
applicable: scenarios that call the suite's own fixtures (tools named
`test_*`, `test://` resources, prompts named `test_*`), which a real server
does not have. The Tasks extension's scenarios run on a test endpoint that
registers the fixtures they ask for (`greet`, `slow_compute`, `failing_job`)
on the real engine. docs/mcp.md lists the same scenarios with the same reasons.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from pydantic import ConfigDict

from hyperguild.mcp.contracts import ToolInput, ToolResult

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2] / "tests" / "conformance"
NODE = ROOT / "node_modules" / ".bin" / "node"
SUITES = {
    "2025-11-25": (ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js", []),
    "2026-07-28": (ROOT / "node_modules" / "conformance-2026" / "dist" / "index.js", ["--requirements", "2026-07-28"]),
}

FIXTURE_TOOLS = "calls the suite's fixture tool(s) test_*; hyperguild serves its own tools, not the suite's"
FIXTURE_RESOURCES = "reads the suite's test:// fixture resources; hyperguild's resources are brain notes"
FIXTURE_PROMPTS = "gets the suite's fixture prompts test_*; hyperguild's prompts are its own"
MRTR_FIXTURES = (
    "calls the suite's test_input_required_result_* fixture tools; no hyperguild tool asks the client for input "
    "(multi round-trip requests), so nothing here can return an InputRequiredResult"
)
TASK_FIXTURES = (
    "drives the suite's task fixture tools (slow_compute, greet, failing_job, …), which /mcp/brain does not have; "
    "test_the_tasks_extension_scenarios_pass runs these scenarios on an endpoint that has them"
)
MRTR_TASKS = "needs a task that asks the client for input (confirm_delete, multi_input); no hyperguild task does"

# Whole scenarios that exercise only the suite's fixtures.
NOT_APPLICABLE = {
    **{
        name: FIXTURE_TOOLS
        for name in (
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-audio",
            "tools-call-embedded-resource",
            "tools-call-mixed-content",
            "tools-call-error",
            "tools-call-with-progress",
            "tools-call-sampling",
            "tools-call-elicitation",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
            "json-schema-2020-12",
        )
    },
    "tools-call-with-logging": "needs logging/setLevel and the fixture tool test_tool_with_logging; hyperguild "
    "declares no logging capability (2026-07-28 deprecates it)",
    "logging-set-level": "hyperguild declares no logging capability (2026-07-28 deprecates logging)",
    "resources-subscribe": "hyperguild declares resources.subscribe = false (2026-07-28 removes the method)",
    "resources-unsubscribe": "hyperguild declares resources.subscribe = false (2026-07-28 removes the method)",
    **{
        name: FIXTURE_RESOURCES for name in ("resources-read-text", "resources-read-binary", "resources-templates-read")
    },
    **{
        name: FIXTURE_PROMPTS
        for name in (
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        )
    },
    "completion-complete": "completes an argument of the suite's fixture prompt test_prompt_with_arguments; "
    "test_prompts.py completes hyperguild's own prompt arguments",
    "http-custom-header-server-validation": "needs a tool whose inputSchema has x-mcp-header annotations; "
    "hyperguild's tools mirror no argument into headers",
    **{
        name: MRTR_FIXTURES
        for name in (
            "input-required-result-basic-elicitation",
            "input-required-result-basic-sampling",
            "input-required-result-basic-list-roots",
            "input-required-result-request-state",
            "input-required-result-multiple-input-requests",
            "input-required-result-multi-round",
            "input-required-result-missing-input-response",
            "input-required-result-non-tool-request",
            "input-required-result-result-type",
            "input-required-result-unsupported-methods",
            "input-required-result-tampered-state",
            "input-required-result-capability-check",
            "input-required-result-ignore-extra-params",
            "input-required-result-validate-input",
        )
    },
    **{
        name: TASK_FIXTURES
        for name in (
            "tasks-lifecycle",
            "tasks-wire-fields",
            "tasks-request-state-removal",
            "tasks-status-notifications",
        )
    },
    "tasks-mrtr-input": MRTR_TASKS,
    "tasks-mrtr-composition": MRTR_TASKS,
    "tasks-required-task-error": "needs a tool that can only run as a task; every hyperguild skill also runs "
    "blocking for clients without the extension",
}

# Single checks of otherwise scored scenarios that need a fixture (the tasks ones run, with their
# fixtures, in test_the_tasks_extension_scenarios_pass).
NOT_APPLICABLE_CHECKS = {
    (
        "server-stateless",
        "sep-2575-server-rejects-undeclared-capability",
    ): "needs the fixture tool test_missing_capability",
    ("server-stateless", "sep-2575-missing-capability-http-400"): "needs the fixture tool test_missing_capability",
    (
        "server-stateless",
        "sep-2575-http-server-no-independent-requests-on-stream",
    ): "needs the fixture tool test_streaming_elicitation",
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): "needs the fixture tool test_logging_tool",
    (
        "tasks-capability-negotiation",
        "sep-2663-server-rejects-undeclared-client",
    ): "needs the fixture tool slow_compute",
    ("tasks-capability-negotiation", "tasks-per-request-meta-opt-in"): "needs the fixture tool slow_compute",
    ("tasks-dispatch-and-envelope", "tasks-server-directed-creation-no-hint"): "needs the fixture tool failing_job",
    ("tasks-dispatch-and-envelope", "sep-2663-legacy-task-param-ignored"): "needs the fixture tool greet",
    ("tasks-dispatch-and-envelope", "tasks-immediate-result-shortcut"): "needs the fixture tool slow_compute",
    ("tasks-dispatch-and-envelope", "tasks-result-type-complete-on-non-task-responses"): "needs the fixture tool greet",
    (
        "tasks-dispatch-and-envelope",
        "sep-2663-durable-create-strong-consistency",
    ): "needs the fixture tool slow_compute",
    ("tasks-request-headers", "tasks-headers-tolerate-mcp-method-on-tools-call"): "needs the fixture tool greet",
    ("tasks-request-headers", "sep-2663-routing-headers-accepted-on-tasks-get"): "needs the fixture tool slow_compute",
    (
        "tasks-request-headers",
        "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
    ): "needs a task of the fixture tool slow_compute (test_tasks.py checks the mismatch on a real task id)",
}


@pytest.mark.parametrize("revision", list(SUITES))
def test_every_protocol_scenario_of_the_official_suite_passes(asgi_server, revision, tmp_path):
    suite, extra = SUITES[revision]
    assert NODE.exists() and suite.exists(), "run `make test` (it installs tests/conformance with npm ci)"
    version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("v22."), version
    completed = subprocess.run(
        [str(NODE), str(suite), "server", "--url", f"{asgi_server}/mcp/brain", "--output-dir", str(tmp_path), *extra],
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = completed.stdout + completed.stderr
    results = _checks_by_scenario(tmp_path)
    assert len(results) > 20, f"the suite wrote too few results:\n{output[-3000:]}"

    failed, scored = [], 0
    for scenario, checks in sorted(results.items()):
        if scenario in NOT_APPLICABLE:
            continue
        for check in checks:
            if (scenario, check.get("id")) in NOT_APPLICABLE_CHECKS:
                continue
            scored += 1
            if check.get("status") in ("SUCCESS", "INFO", "SKIPPED"):
                continue
            failed.append({"scenario": scenario, **check})
    assert scored >= 8, results.keys()  # 0.1.16 scores about ten checks, 0.2.0-alpha.12 about sixty
    assert not failed, json.dumps(failed, indent=1)[:6000]


def _checks_by_scenario(folder: Path) -> dict[str, list[dict]]:
    """{scenario: checks} from the suite's output folder (one `server-<scenario>-<timestamp>` folder each)."""
    found: dict[str, list[dict]] = {}
    for path in folder.rglob("*.json"):
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", path.parent.name.removeprefix("server-"))
        data = json.loads(path.read_text())
        checks = data if isinstance(data, list) else data.get("checks", []) if isinstance(data, dict) else []
        found.setdefault(scenario, []).extend(c for c in checks if isinstance(c, dict) and "status" in c)
    return found


# --- the Tasks extension's scenarios, on the fixtures they ask for ------------------------------

TASK_SCENARIOS = [
    "tasks-capability-negotiation",
    "tasks-lifecycle",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
]
# Checks of those scenarios that ask for what hyperguild's engine deliberately does not do.
TASK_CHECKS_NOT_APPLICABLE = {
    "sep-2663-tasks-get-status-failed": "the engine answers every tool failure as an isError result (DESIGN: tool "
    "failures are results), so no tool can end its task with a protocol error",
    "tasks-headers-tolerate-mcp-method-on-tools-call": "compares the text to the bare 'Hello, sep-2243!'; the engine's "
    "text copy of a result is its structuredContent as JSON",
    "tasks-result-type-complete-on-non-task-responses": "needs the fixture confirm_delete, which parks for an "
    "elicitation; no hyperguild task asks the client for input",
}


class OpenArguments(ToolInput):
    """The suite's scenarios send what they like: these fixtures read what they know."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = "World"
    seconds: float = 1
    label: str = ""


class OpenResult(ToolResult):
    model_config = ConfigDict(extra="allow")


@pytest.fixture
def task_fixtures_url(asgi_server, skill_worker):
    """/mcp/taskfixtures: the tools the suite's tasks scenarios call, on the real engine (the selftest idea).

    Its long tools run as jobs, as the service's do (a SkillRun each, run by the `skill_worker` thread)."""
    from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint, unregister_endpoint
    from supervisor.jobs import SkillRunJobs
    from tests.mcp.conftest import stop_unfinished_runs

    endpoint = Endpoint("taskfixtures", title="conformance task fixtures", token_setting="BRAIN_MCP_TOKEN")
    endpoint.jobs = SkillRunJobs("taskfixtures")

    @endpoint.tool(
        name="greet",
        title="Greet",
        description="Sync: Hello, {name}!",
        input_model=OpenArguments,
        result_model=OpenResult,
        read_only=True,
    )
    def greet(arguments: OpenArguments, ctx: ToolContext) -> OpenResult:
        return OpenResult.model_validate({"text": f"Hello, {arguments.name}!"})

    @endpoint.tool(
        name="slow_compute",
        title="Slow compute",
        description="Sleeps `seconds`, cancellable.",
        input_model=OpenArguments,
        result_model=OpenResult,
        read_only=True,
        long_running=True,
    )
    def slow_compute(arguments: OpenArguments, ctx: ToolContext) -> OpenResult:
        seconds = float(arguments.seconds)
        if ctx.cancelled.wait(seconds):
            ctx.check_cancelled()
        return OpenResult.model_validate({"computed": seconds, "label": arguments.label})

    @endpoint.tool(
        name="failing_job",
        title="Failing job",
        description="Fails after about a second.",
        input_model=OpenArguments,
        result_model=OpenResult,
        read_only=True,
        long_running=True,
    )
    def failing_job(arguments: OpenArguments, ctx: ToolContext) -> OpenResult:
        ctx.cancelled.wait(1)
        raise ToolError("failing_job failed, as it always does")

    register_endpoint(endpoint)
    yield f"{asgi_server}/mcp/taskfixtures"
    # Tasks the suite left running (it never cancels some slow_compute calls) stop with the test.
    stop_unfinished_runs()
    unregister_endpoint("taskfixtures")


@pytest.mark.parametrize("scenario", TASK_SCENARIOS)
def test_the_tasks_extension_scenarios_pass(task_fixtures_url, scenario, tmp_path):
    suite, _ = SUITES["2026-07-28"]
    completed = subprocess.run(
        [
            str(NODE),
            str(suite),
            "server",
            "--url",
            task_fixtures_url,
            "--scenario",
            scenario,
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    checks = [check for found in _checks_by_scenario(tmp_path).values() for check in found]
    assert checks or scenario == "tasks-status-notifications", completed.stdout + completed.stderr
    failed = [
        c
        for c in checks
        if c.get("status") not in ("SUCCESS", "INFO", "SKIPPED") and c.get("id") not in TASK_CHECKS_NOT_APPLICABLE
    ]
    assert not failed, json.dumps(failed, indent=1)[:6000]
