"""The MCP protocol engine: transport, JSON-RPC and the tool registry. It names no app."""
