"""MCP tools of this app (registered on import, from AppConfig.ready)."""
