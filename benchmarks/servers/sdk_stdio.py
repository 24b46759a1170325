"""The official MCP Python SDK on stdio with the same ``echo`` tool.

mcp 2.x renamed ``FastMCP`` to ``mcp.server.mcpserver.MCPServer``; 1.x is
still accepted so the script runs on either major version.
"""

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

server = Server("bench")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
