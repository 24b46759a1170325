"""``mcpkit read URI``: read one resource and print its contents."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .client_args import Selection, UsageError, add_server_options, run_with_client

if TYPE_CHECKING:
    from ..client.mcp_client import MCPClient

__all__ = ["HELP", "configure", "run"]

HELP = "read a resource of an MCP server and print its contents"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uri", metavar="URI", help="the resource's URI")
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    def narrow(selection: Selection) -> Selection:
        if len(selection.servers) > 1:
            raise UsageError(
                f"{', '.join(selection.servers)} are configured: choose the server "
                "to read from with --server NAME"
            )
        return selection

    async def action(mcp: MCPClient, selection: Selection) -> int:
        from .render import pretty, resource_text

        result = await mcp.resources.read(mcp.server_names[0], args.uri)
        if args.json:
            print(pretty(result))
        else:
            text = resource_text(result.get("contents") or ())
            sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return 0

    return run_with_client(args, action, narrow=narrow)
