"""MCP tools of this app (registered on import, from AppConfig.ready)."""
from supervisor import routing_tools  # noqa: E402,F401  (the /mcp/routing tools)
