"""``mcpkit call SERVER_TOOL --args JSON``: call one tool and print its result.

With ``--config``, tools are named ``server_tool`` as ``mcpkit tools`` lists
them; only the server(s) the name can belong to are started. With ``--url``
or ``--stdio``, the tool's own name is enough.

While the tool runs, its progress notifications are shown on stderr (a live
bar on a terminal, plain lines otherwise: see :mod:`.progress`), and
its questions to the user (elicitation) are answered from ``--elicit JSON``,
else on the terminal, else declined (see :mod:`.elicit`). There is no model
here: a tool that asks the client's model (sampling) gets ``--sample TEXT`` as
the answer, and without it the client does not declare sampling at all.

The client declares the tasks extension (SEP-2663): a tool the server runs as a
task is followed to its result, and each change of the task's status or status
message is shown on stderr as it is seen (``mcpkit: task ID working: ...``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from .client_args import (
    UsageError,
    add_server_options,
    doing,
    fail,
    one_line,
    parse_json_object,
    run_named,
)

if TYPE_CHECKING:
    from ..client.config import ServerConfig
    from ..client.mcp_client import MCPClient
    from ..extensions.tasks.client import TaskState

__all__ = ["HELP", "configure", "run"]

HELP = "call a tool of an MCP server and print the result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tool", metavar="SERVER_TOOL", help="the tool, named as 'mcpkit tools' shows it"
    )
    parser.add_argument(
        "pairs",
        nargs="*",
        metavar="KEY=VALUE",
        help="an argument, typed by the tool's schema (days=3 sends a number when the "
        "parameter is one, tags=a,b an array of strings); wins over --args",
    )
    parser.add_argument(
        "--args",
        "-a",
        metavar="JSON",
        help='the arguments as a JSON object, e.g. \'{"city": "Tokyo"}\'',
    )
    parser.add_argument(
        "--elicit",
        "-e",
        metavar="JSON",
        help="answers to the tool's questions (elicitation) as a JSON object of field "
        "values, e.g. '{\"confirm\": true}'; without it, questions are asked on the "
        "terminal, or declined when stdin is not one",
    )
    parser.add_argument(
        "--sample",
        metavar="TEXT",
        help="the answer to the tool's requests to the client's model (sampling); "
        "without it the client offers no sampling",
    )
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    from .arguments import split_pairs, typed_arguments
    from .elicit import Elicitor
    from .progress import ProgressDisplay

    try:
        answers = parse_json_object(args.elicit, "--elicit") if args.elicit is not None else None
        pairs = split_pairs(args.pairs)
    except UsageError as exc:
        return fail(str(exc), 2)
    elicitor = Elicitor(answers, interactive=_interactive())
    display = ProgressDisplay()  # a live bar when stderr is a terminal, else plain lines

    with_tasks, prepare = client_capabilities(elicitor, args.sample, on_status=display.task_status)

    async def act(mcp: MCPClient, server: str, tool: str, arguments: dict[str, Any]) -> int:
        from ..errors import RemoteError
        from .render import content_text, pretty

        if pairs:
            listed = {t.get("name"): t for t in await mcp.client(server).list_tools()}
            if tool not in listed:
                return fail(f"no tool {tool!r} on server {server!r}; see 'mcpkit tools'", 2)
            try:
                schema = listed[tool].get("inputSchema")
                arguments = {**arguments, **typed_arguments(pairs, schema, tool=tool)}
            except UsageError as exc:
                return fail(str(exc), 2)
        doing(f"waiting for tool {tool!r} to finish")
        try:
            result = await mcp.call_tool(server, tool, arguments, progress=display.progress)
        except RemoteError as exc:  # the server refused the call (unknown tool, bad params)
            display.finish()
            if not await _has_tool(mcp, server, tool):
                return fail(f"no tool {tool!r} on server {server!r}; see 'mcpkit tools'", 2)
            return fail(f"server {server!r}: {one_line(exc)}", 1)
        display.finish()  # the result starts on a line of its own
        failed = result.get("isError") is True
        if args.json:
            print(pretty(result))
        elif failed:
            text = content_text(result.get("content") or ())
            return fail(f"tool {args.tool!r} failed: {one_line(Exception(text))}", 1)
        elif result.get("structuredContent") is not None:
            structured = result["structuredContent"]
            if isinstance(structured, dict) and set(structured) == {"result"}:
                # A primitive or list return, wrapped because structured content is an
                # object (2025-06-18 server/tools § output schema): print the value.
                structured = structured["result"]
            print(structured if isinstance(structured, str) else pretty(structured))
        else:
            text = content_text(result.get("content") or ())
            sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return 1 if failed else 0

    with display.guarding_stderr():  # a question or an error ends the live line first
        return run_named(
            args,
            args.tool,
            lambda c: c.list_tools(),
            act,
            kind="tool",
            listing="tools",
            prepare=prepare,
            configure=with_tasks,
        )


def client_capabilities(
    elicitor: Any,
    sample: str | None,
    *,
    on_status: Callable[[TaskState], None] | None = None,
) -> tuple[Callable[[ServerConfig], ServerConfig], Callable[[MCPClient], None]]:
    """What the client declares, as (a server definition's change, handlers to install):
    the tasks extension, elicitation (form and URL mode) answered by ``elicitor``, and sampling answered with
    ``sample`` when given. ``mcpkit tools`` declares the same, so that it lists every tool
    ``mcpkit call`` can run (a server may list a task-only tool only to clients that
    declare tasks)."""

    def sampler(params: dict[str, Any]) -> dict[str, Any]:
        # 2025-11-25 client/sampling: a CreateMessageResult; the "model" is this option.
        content = {"type": "text", "text": "" if sample is None else sample}
        return {"role": "assistant", "content": content, "model": "mcpkit-call --sample"}

    def with_tasks(config: ServerConfig) -> ServerConfig:
        import dataclasses

        from ..extensions.tasks.client import tasks_client

        # Status lines come from on_status; the call's progress callback stays for the
        # progress notifications of a tool answered in place.
        ext = tasks_client(on_status=on_status or print_task_status, report_progress=False)
        # URL-mode elicitation too: the Elicitor shows the URL and opens it on consent.
        return dataclasses.replace(
            config, extensions=(*config.extensions, ext), elicitation_modes=("form", "url")
        )

    def prepare(mcp: MCPClient) -> None:
        for server in mcp.server_names:
            mcp.elicitation.on_request(server, elicitor)
            if sample is not None:
                mcp.sampling.on_request(server, sampler)

    return with_tasks, prepare


def print_task_status(state: TaskState, *, file: TextIO | None = None) -> None:
    """A task's new status (and status message), as one line on stderr."""
    from .progress import task_line

    print(task_line(state), file=file if file is not None else sys.stderr, flush=True)


def _interactive() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # a closed stdin
        return False


async def _has_tool(mcp: MCPClient, server: str, tool: str) -> bool:
    """Does ``server`` list ``tool``? (True when it cannot tell: the error stands.)"""
    try:
        listed = await mcp.client(server).list_tools()
    except Exception:
        return True
    return tool in {t.get("name") for t in listed}
