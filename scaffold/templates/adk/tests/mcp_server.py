"""A tiny MCP server over stdio, for tests/test_adk.py: one tool, open_ticket.

Run by ADK's McpToolset as `python tests/mcp_server.py`.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("tickets")


@server.tool()
def open_ticket(team: str, priority: int) -> str:
    """Open a ticket for a team, with a priority from 1 (urgent) to 4."""
    return f"opened a priority {priority} ticket for the {team} team"


if __name__ == "__main__":
    server.run("stdio")
