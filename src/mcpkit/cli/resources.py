"""``mcpkit resources``: list the resources and resource templates of MCP servers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

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

HELP = "list the resources and resource templates of MCP servers"


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    async def action(mcp: MCPClient, selection: Selection) -> int:
        from .render import pretty

        async def fetch(server: str) -> dict[str, Any]:
            client = mcp.client(server)
            if "resources" not in client.server_capabilities:
                return {"resources": [], "resourceTemplates": []}
            return {
                "resources": await client.list_resources(),
                "resourceTemplates": await client.list_resource_templates(),
            }

        listings, status = await list_per_server(mcp, fetch)
        if args.json:
            print(pretty(by_server(listings, selection)))
            return status
        for server, listing in listings.items():
            prefix = "" if selection.single else f"{server}: "
            for item in listing["resources"]:
                print(prefix + _line(item.get("uri"), item))
            for item in listing["resourceTemplates"]:
                print(prefix + _line(item.get("uriTemplate"), item, template=True))
        return status

    return run_with_client(args, action)


def _line(uri: Any, item: dict[str, Any], *, template: bool = False) -> str:
    details = [str(item.get("name", ""))]
    if item.get("mimeType"):
        details.append(str(item["mimeType"]))
    if template:
        details.append("template")
    line = f"{uri}  ({', '.join(d for d in details if d)})"
    description = str(item.get("description") or "").strip().splitlines()
    return f"{line}  {description[0]}" if description else line
