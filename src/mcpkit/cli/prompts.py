"""``mcpkit prompts``: list the prompts of MCP servers."""

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

HELP = "list the prompts of MCP servers, with their arguments"


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    async def action(mcp: MCPClient, selection: Selection) -> int:
        from .render import pretty

        async def fetch(server: str) -> list[dict[str, Any]]:
            client = mcp.client(server)
            if "prompts" not in client.server_capabilities:
                return []
            return await client.list_prompts()

        listings, status = await list_per_server(mcp, fetch)
        if args.json:
            print(pretty(by_server(listings, selection)))
            return status
        for server, prompts in listings.items():
            for prompt in prompts:
                name = prompt["name"] if selection.single else f"{server}_{prompt['name']}"
                arguments = [
                    a.get("name", "") + ("" if a.get("required") else "?")
                    for a in prompt.get("arguments") or ()
                    if isinstance(a, dict)
                ]
                version = f"  [version {prompt['version']}]" if prompt.get("version") else ""
                print(f"{name}({', '.join(arguments)}){version}")
                for line in str(prompt.get("description") or "").strip().splitlines():
                    print(f"    {line}".rstrip())
        return status

    return run_with_client(args, action)
