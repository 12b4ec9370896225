"""Tools on /mcp/routing: the supervisor's skills answered by a routed model (Mode 2).

This module only declares the tools; what they do is `supervisor.routing_service`.
`retrospective` and `trainer` on this endpoint are registered by the sessions
app (`sessions/tools.py`), which runs its own logic with the routed model.
"""

from __future__ import annotations

from hyperguild.mcp.registry import Endpoint, Handler, ToolContext, register_endpoint
from supervisor import routing_service, skills
from supervisor.errors import SupervisorError

routing = register_endpoint(
    Endpoint(
        "routing",
        title="hyperguild routing",
        token_setting="ROUTING_MCP_TOKEN",
        scopes=("routing:run",),
        instructions="Skills answered by a fast or a thinking model, chosen by each skill's observed pass rate.",
    )
)
routing.translate_errors(SupervisorError)  # RootRefused, RoutingFailed, GatewayMissing reach the caller as tool errors


def _routed_tool(skill: str, description: str, *, read_only: bool = False) -> Handler:
    """Declare `skill` on this endpoint: `routing_service.<skill>` answers it with the model the router picks
    (a model call, so open world, and it may take minutes: long running)."""
    service = getattr(routing_service, skill)

    def handler(arguments: dict, ctx: ToolContext) -> dict:
        return service(arguments, ctx.report_progress, ctx.is_cancelled, ctx.actor)

    handler.__name__ = skill
    routing.tool(
        **skills.tool_declaration(skill, routed=True), description=description, read_only=read_only,
        open_world=True, long_running=True,
    )(handler)  # fmt: skip
    return handler


review = _routed_tool(
    "review",
    skills.SKILLS["review"].description
    + " Answered by the fast or the thinking model, chosen by the skill's observed pass rate; an answer whose "
    "findings are mostly ungrounded fails and is retried on the thinking model.",
    read_only=True,
)
debug = _routed_tool(
    "debug",
    "The routed model diagnoses `symptom`: the server runs `failing_cmd` in the project root, shows the model "
    "its output and the files it mentions, and returns hypotheses, the root cause and the fix. The routing "
    "endpoint does not edit files: apply the fix, then re-run failing_cmd (failing_cmd_passes stays null).",
)
