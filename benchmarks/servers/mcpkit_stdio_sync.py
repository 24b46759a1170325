"""mcpkit on stdio with one ``echo`` tool, written as ``async def``, ``def``, or inline ``def``.

    python mcpkit_stdio_sync.py MODE LOOP

MODE: ``async`` (``async def echo``), ``thread`` (a plain ``def echo``, which
mcpkit runs off the event loop by default) or ``inline`` (the same ``def`` with
``@server.tool(run_in_thread=False)``, called on the event loop). LOOP:
``uvloop`` (``server.run_stdio()``, which picks uvloop when installed) or
``asyncio`` (``serve_stdio`` on asyncio's own loop).
"""

import asyncio
import sys

from mcpkit import MCPServer
from mcpkit.transports.stdio import serve_stdio

mode, loop = sys.argv[1], sys.argv[2]
server = MCPServer(name="bench", version="1.0.0")

if mode == "async":

    @server.tool
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

elif mode == "thread":

    @server.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

elif mode == "inline":

    @server.tool(run_in_thread=False)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

else:
    sys.exit(f"unknown mode {mode!r}: async, thread or inline")

if __name__ == "__main__":
    if loop == "uvloop":
        server.run_stdio()
    elif loop == "asyncio":
        asyncio.run(serve_stdio(server))
    else:
        sys.exit(f"unknown loop {loop!r}: uvloop or asyncio")
