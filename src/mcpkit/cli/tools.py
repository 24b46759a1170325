"""``mcpkit tools``: list the tools of one server or of every server in a config file."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .client_args import (
    Selection,
    add_server_options,
    by_server,
    list_per_server,
    run_with_client,
)

if TYPE_CHECKING:
    from ..client.mcp_client import MCPClient

__all__ = ["HELP", "configure", "run"]

HELP = "list the tools of MCP servers, with their schemas"


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    async def action(mcp: MCPClient, selection: Selection) -> int:
        from .render import compact, pretty, signature

        listings, status = await list_per_server(mcp, lambda name: mcp.client(name).list_tools())
        if args.json:
            print(pretty(by_server(listings, selection)))
            return status
        for server, tools in listings.items():
            for tool in tools:
                name = tool["name"] if selection.single else f"{server}_{tool['name']}"
                print(signature(name, tool.get("inputSchema")))
                description = (tool.get("description") or "").strip()
                for line in description.splitlines():
                    print(f"    {line}".rstrip())
                print(f"    input schema: {compact(tool.get('inputSchema', {}))}")
                if isinstance(tool.get("outputSchema"), dict):
                    print(f"    output schema: {compact(tool['outputSchema'])}")
                if tool.get("annotations"):
                    print(f"    annotations: {compact(tool['annotations'])}")
        return status

    from .call import client_capabilities
    from .elicit import Elicitor

    # Declared as `mcpkit call` declares them, so that a tool it can run is listed here.
    configure, prepare = client_capabilities(Elicitor(None, interactive=False), None)

    def narrow(selection: Selection) -> Selection:
        servers = {name: configure(c) for name, c in selection.servers.items()}
        return Selection(servers, single=selection.single)

    return run_with_client(args, action, narrow=narrow, prepare=prepare)
