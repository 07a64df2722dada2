"""Serving a database to agents: MCP over stdio (``chronos mcp``)."""
