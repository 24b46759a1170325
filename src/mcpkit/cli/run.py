"""``mcpkit run FILE[:OBJECT]``: load a server and serve it (stdio by default)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["HELP", "configure", "run"]

HELP = "serve an MCP server from a Python file or module"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_PATH = "/mcp"
DEFAULT_RETRY_MS = 1000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module (pkg.module) and the server object in it "
        "(default: 'server'); a function that returns a server also works",
    )
    parser.add_argument(
        "--transport",
        "-t",
        choices=("stdio", "http", "sse"),
        default="stdio",
        help="stdio (default), http (Streamable HTTP) or sse (legacy HTTP+SSE, 2024-11-05)",
    )
    parser.add_argument("--host", help=f"address to listen on (http, sse; default {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, help=f"port to listen on (http, sse; default {DEFAULT_PORT})"
    )
    parser.add_argument("--path", help=f"the MCP endpoint's path (http; default {DEFAULT_PATH})")
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions: every request stands alone (http)",
    )
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="answer POSTs with plain JSON instead of an SSE stream (http)",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="keep SSE events in a bounded in-memory event store so clients can resume "
        "cut streams with Last-Event-ID, and ask them to reconnect after --retry-ms (http)",
    )
    parser.add_argument(
        "--retry-ms",
        type=int,
        help=f"SSE reconnection delay sent to clients with --resumable (default {DEFAULT_RETRY_MS})",
    )


def _misplaced_options(args: argparse.Namespace) -> list[str]:
    given = {
        "--host": args.host is not None,
        "--port": args.port is not None,
        "--path": args.path is not None,
        "--stateless": args.stateless,
        "--json-response": args.json_response,
        "--resumable": args.resumable,
        "--retry-ms": args.retry_ms is not None,
    }
    applies = {
        "stdio": set(),
        "sse": {"--host", "--port"},
        "http": set(given),
    }[args.transport]
    return [name for name, on in given.items() if on and name not in applies]


def _fail(message: str, status: int = 2) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    misplaced = _misplaced_options(args)
    if misplaced:
        return _fail(f"{', '.join(misplaced)} cannot be used with --transport {args.transport}")
    server = _load(args.target, quiet_stdout=args.transport == "stdio")
    if isinstance(server, int):
        return server
    if args.retry_ms is not None and not args.resumable:
        return _fail("--retry-ms needs --resumable")
    if args.transport == "stdio":
        server.run_stdio()
    elif args.transport == "http":
        options: dict[str, object] = {}
        if args.resumable:
            from ..transports.event_store import InMemoryEventStore

            options["event_store"] = InMemoryEventStore()
            options["retry_interval_ms"] = (
                DEFAULT_RETRY_MS if args.retry_ms is None else args.retry_ms
            )
        host = args.host or DEFAULT_HOST
        port = DEFAULT_PORT if args.port is None else args.port
        path = args.path or DEFAULT_PATH
        _announce(server, f"http://{_netloc(host, port)}{path} (Streamable HTTP)")
        server.run_http(
            host,
            port,
            path,
            stateless=args.stateless,
            json_response=True if args.json_response else None,
            **options,
        )
    else:
        host = args.host or DEFAULT_HOST
        port = DEFAULT_PORT if args.port is None else args.port
        _announce(server, f"http://{_netloc(host, port)}/sse (legacy HTTP+SSE)")
        server.run_sse(host, port)
    return 0


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _announce(server: MCPServer, where: str) -> None:
    # stderr: a person starting a server wants to know where it listens.
    print(f"mcpkit: serving {server.name!r} on {where}; Ctrl+C stops it", file=sys.stderr)


def _load(target: str, *, quiet_stdout: bool) -> MCPServer | int:
    """The server, or the exit status after reporting why it could not be loaded."""
    from .loader import LoadError, UserCodeError, load_server

    # On stdio, stdout belongs to the protocol from the start: whatever the
    # user's module prints while it is imported goes to stderr.
    redirect = contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()
    try:
        with redirect:
            return load_server(target)
    except LoadError as exc:
        return _fail(str(exc))
    except UserCodeError as exc:
        if exc.report():
            print(exc.report(), file=sys.stderr)
        return _fail(str(exc), status=1)
