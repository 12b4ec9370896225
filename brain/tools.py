"""MCP tools of this app (registered on import, from AppConfig.ready)."""

from brain import answer_tools  # noqa: E402,F401  (brain_answer and brain_context)
