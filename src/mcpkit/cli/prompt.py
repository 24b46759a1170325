"""``mcpkit prompt SERVER_PROMPT --args JSON``: get one prompt and print its messages."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .client_args import add_server_options, run_named

if TYPE_CHECKING:
    from ..client.mcp_client import MCPClient

__all__ = ["HELP", "configure", "run"]

HELP = "get a prompt of an MCP server and print its messages"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "prompt", metavar="SERVER_PROMPT", help="the prompt, named as 'mcpkit prompts' shows it"
    )
    parser.add_argument(
        "--args", "-a", metavar="JSON", help="the arguments as a JSON object of strings"
    )
    parser.add_argument("--prompt-version", metavar="V", help="a version of the prompt")
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    async def act(mcp: MCPClient, server: str, name: str, arguments: dict[str, Any]) -> int:
        from .render import content_text, pretty

        got = await mcp.prompts.get(
            server_name=server, name=name, args=arguments, version=args.prompt_version
        )
        if args.json:
            print(pretty(got))
            return 0
        for message in got["messages"]:
            content = message.get("content")
            text = content_text([content] if isinstance(content, dict) else content or ())
            print(f"{message.get('role', '?')}: {text}")
        return 0

    return run_named(
        args, args.prompt, lambda c: c.list_prompts(), act, kind="prompt", listing="prompts"
    )
