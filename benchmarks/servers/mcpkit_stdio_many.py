"""mcpkit on stdio with 5,000 tools, for what visibility costs (issue 20).

``tagged``: 5,000 tools, the first 500 tagged ``beta`` and disabled by tag
(``server.disable(tags={"beta"})``); ``enabled``: only the 4,500 others registered,
the baseline. Both have the ``echo`` tool the drivers call.
"""

import sys

from mcpkit import MCPServer

TOOLS = 5_000
DISABLED = TOOLS // 10

server = MCPServer(name="bench-many", version="1.0.0")


@server.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def make(i: int) -> object:
    async def tool(a: int, b: str = "") -> str:
        return b

    tool.__name__ = f"tool_{i:04d}"
    tool.__doc__ = f"Tool number {i}, which does one small thing."
    return tool


tagged = len(sys.argv) > 1 and sys.argv[1] == "tagged"
for i in range(1, TOOLS):
    if i <= DISABLED:
        if tagged:
            server.add_tool(make(i), tags={"beta"})
        continue
    server.add_tool(make(i))
if tagged:
    server.disable(tags={"beta"})

if __name__ == "__main__":
    server.run_stdio()
