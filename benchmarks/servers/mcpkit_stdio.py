"""mcpkit on stdio with one ``echo`` tool (what a user would write)."""

from mcpkit import MCPServer

server = MCPServer(name="bench", version="1.0.0")


@server.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run_stdio()
