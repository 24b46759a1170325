"""``mcpkit call SERVER_TOOL --args JSON``: call one tool and print its result.

With ``--config``, tools are named ``server_tool`` as ``mcpkit tools`` lists
them; only the server(s) the name can belong to are started. With ``--url``
or ``--stdio``, the tool's own name is enough.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .client_args import add_server_options, fail, one_line, run_named

if TYPE_CHECKING:
    from ..client.mcp_client import MCPClient

__all__ = ["HELP", "configure", "run"]

HELP = "call a tool of an MCP server and print the result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tool", metavar="SERVER_TOOL", help="the tool, named as 'mcpkit tools' shows it"
    )
    parser.add_argument(
        "--args",
        "-a",
        metavar="JSON",
        help='the arguments as a JSON object, e.g. \'{"city": "Tokyo"}\'',
    )
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    async def act(mcp: MCPClient, server: str, tool: str, arguments: dict[str, Any]) -> int:
        from ..errors import RemoteError
        from .render import content_text, pretty

        try:
            result = await mcp.call_tool(server, tool, arguments)
        except RemoteError as exc:  # the server refused the call (unknown tool, bad params)
            return fail(f"server {server!r}: {one_line(exc)}", 1)
        failed = result.get("isError") is True
        if args.json:
            print(pretty(result))
        elif failed:
            text = content_text(result.get("content") or ())
            return fail(f"tool {args.tool!r} failed: {one_line(Exception(text))}", 1)
        elif result.get("structuredContent") is not None:
            print(pretty(result["structuredContent"]))
        else:
            text = content_text(result.get("content") or ())
            sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return 1 if failed else 0

    return run_named(args, args.tool, lambda c: c.list_tools(), act, kind="tool", listing="tools")
