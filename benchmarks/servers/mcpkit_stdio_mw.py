"""``mcpkit_stdio.py``'s server with one built-in middleware: what each costs per request.

``python mcpkit_stdio_mw.py <variant>``, the variant one of:

- ``ratelimit``: ``rate_limit`` keyed by session, in memory, a budget never spent;
- ``cache``: ``ResponseCache`` (``tools/call`` is not cached: its pass-through cost);
- ``log``: ``request_logging`` writing each line through a stream handler to /dev/null;
- ``log-off``: ``request_logging`` whose logger is below its level (nothing written);
- ``mask``: ``mask_errors`` (in production mode);
- ``size``: ``size_limits`` on arguments and results;
- ``state``: no middleware; the tool reads and writes ``ctx.state`` (memory store);
- ``ctx``: no middleware; the tool takes a ``Context`` and leaves it (``state``'s baseline);
- ``hooks``: a ``Hooks`` whose ``on_call_tool`` only calls ``call_next`` (and nothing on
  ``tools/list``: the ``-list`` path measures a method it does not watch);
- ``none``: no middleware (the ``-list`` paths' baseline).
- ``depends``: no middleware; the tool takes one ``Depends`` parameter, a plain function
  (issue 20: against ``stdio``, what one simple dependency costs);
- ``depends-yield``: the same dependency written as a generator (set-up and cleanup).
"""

import logging
import os
import sys
from typing import Annotated

from mcpkit import Context, Depends, MCPServer
from mcpkit.middleware import (
    Hooks,
    ResponseCache,
    by_session,
    mask_errors,
    rate_limit,
    request_logging,
    size_limits,
)

variant = sys.argv[1] if len(sys.argv) > 1 else ""
if variant == "log":
    handler = logging.StreamHandler(open(os.devnull, "w"))  # open as long as the process
    logging.getLogger("mcpkit.requests").addHandler(handler)
    logging.getLogger("mcpkit.requests").setLevel(logging.INFO)
    logging.getLogger("mcpkit.requests").propagate = False
elif variant == "log-off":
    logging.getLogger("mcpkit.requests").setLevel(logging.ERROR)


class PassingHooks(Hooks):
    async def on_call_tool(self, context, call_next):  # type: ignore[no-untyped-def]
        return await call_next(context)


MIDDLEWARE = {
    "hooks": PassingHooks,
    "ratelimit": lambda: rate_limit(rate=1e9, burst=1e9, key=by_session),
    "cache": ResponseCache,
    "log": request_logging,
    "log-off": request_logging,
    "mask": mask_errors,
    "size": lambda: size_limits(max_arguments=1_000_000, max_result=10_000_000),
}
factory = MIDDLEWARE.get(variant)
server = MCPServer(name="bench", version="1.0.0", middleware=[factory()] if factory else [])

if variant == "state":

    @server.tool
    async def echo(text: str, ctx: Context) -> str:
        """Return the text unchanged, counting calls in the session's state."""
        await ctx.state.set("calls", await ctx.state.get("calls", 0) + 1)
        return text

elif variant == "ctx":

    @server.tool
    async def echo(text: str, ctx: Context) -> str:
        """Return the text unchanged (the context unused)."""
        return text

elif variant == "depends":

    def prefix() -> str:
        return ""

    @server.tool
    async def echo(text: str, head: Annotated[str, Depends(prefix)]) -> str:
        """Return the text unchanged (after an empty prefix from a dependency)."""
        return head + text

elif variant == "depends-yield":

    def opened():  # type: ignore[no-untyped-def]
        yield ""

    @server.tool
    async def echo(text: str, head: Annotated[str, Depends(opened)]) -> str:
        """Return the text unchanged (after an empty prefix from a generator dependency)."""
        return head + text

else:

    @server.tool
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text


if __name__ == "__main__":
    server.run_stdio()
