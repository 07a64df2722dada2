"""The MCP front end: ``core`` answers JSON-RPC messages with the registry's operations as
tools (safe mode, limits, cancels); ``stdio`` carries them one per line over stdin and stdout
(``chronos mcp <folder>``)."""
