"""Tools on /mcp/routing: the supervisor's skills answered by a routed model (Mode 2).

This module only declares the tools; what they do is `supervisor.routing_service`.
`retrospective` and `trainer` on this endpoint are registered by the sessions
app (`sessions/tools.py`), which runs its own logic with the routed model.
"""

from __future__ import annotations

from functools import partial

from hyperguild.mcp.registry import Endpoint, ToolContext, register_endpoint
from people.permissions import register_right
from people.roles import OPERATOR
from supervisor import routing_service, skills
from supervisor.errors import SupervisorError
from supervisor.skills import DebugInput, DebugResult, ReviewInput, ReviewResult

routing = register_endpoint(
    Endpoint(
        "routing",
        title="hyperguild routing",
        token_setting="ROUTING_MCP_TOKEN",
        scopes=("routing:run",),
        instructions="Skills answered by a fast or a thinking model, chosen by each skill's observed pass rate.",
    )
)
register_right(
    "routing:run",
    scope="routing:run",
    permission="supervisor.run_skill",
    roles=(OPERATOR,),
    description="run the routed skills on /mcp/routing and read GET /routing/stats",
)
routing.translate_errors(SupervisorError)  # RootRefused, RoutingFailed, GatewayMissing reach the caller as tool errors

# A tool that asks the model the router picks: it reaches outside (open world) and may take minutes.
# Its result says what the model calls used and cost (`usage`).
routed_model_tool = partial(routing.tool, open_world=True, long_running=True, reports_usage=True)


@routed_model_tool(
    **skills.tool_declaration("review", routed=True),
    description=(
        skills.SKILLS["review"].description
        + " Answered by the fast or the thinking model, chosen by the skill's observed pass rate; an answer whose "
        "findings are mostly ungrounded fails and is retried on the thinking model."
    ),
    read_only=True,
)
def review(params: ReviewInput, ctx: ToolContext) -> ReviewResult:
    return routing_service.review(params, ctx.report_progress, ctx.is_cancelled, ctx.actor)


@routed_model_tool(
    **skills.tool_declaration("debug", routed=True),
    description=(
        "The routed model diagnoses `symptom`: the server runs `failing_cmd` in the project root, shows the model "
        "its output and the files it mentions, and returns hypotheses, the root cause and the fix. The routing "
        "endpoint does not edit files: apply the fix, then re-run failing_cmd (failing_cmd_passes stays null)."
    ),
    read_only=False,
)
def debug(params: DebugInput, ctx: ToolContext) -> DebugResult:
    return routing_service.debug(params, ctx.report_progress, ctx.is_cancelled, ctx.actor, identity=ctx.identity)
