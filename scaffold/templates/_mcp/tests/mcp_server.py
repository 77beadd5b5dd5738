"""A tiny MCP server over stdio, for test_mcp.py: one tool, lookup_order, that writes each call
it runs to calls.txt in its working directory (the session's), so a test sees what ran.

mcp 2 names FastMCP MCPServer (mcp.server.mcpserver).
"""

from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("orders")


# Its answer as text alone: a str result is otherwise structured as {"result": ...} too, which
# Agent Framework gives the model in place of the text.
@server.tool(structured_output=False)
def lookup_order(order_id: str) -> str:
    """Look up a customer's order by its ID."""
    with Path("calls.txt").open("a", encoding="utf-8") as calls:
        calls.write(f"lookup_order {order_id}\n")
    return f"order {order_id}: charged twice"


if __name__ == "__main__":
    server.run()  # stdio
