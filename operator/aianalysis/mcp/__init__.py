"""``aianalysis mcp``: the workflow catalog served to other agents over MCP."""
