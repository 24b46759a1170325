"""``mcpkit registry FILE[:OBJECT]``: write a server's ``server.json`` for the MCP registry.

The document is built from the server's metadata (``MCPServer(metadata=ServerMetadata(
id=..., repository=..., packages=..., remotes=...))``) and validated before anything
is written; every field the registry would reject is reported, and nothing is
written then. Given a ``.json`` file instead, the command checks that file.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

__all__ = ["HELP", "configure", "run"]

HELP = "write (or check) the server.json that publishes a server in the MCP registry"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module and the server object in it (default: 'server'); "
        "or an existing server.json to check",
    )
    parser.add_argument(
        "--name",
        help="the registry name, reverse DNS with one '/' (default: the server id when it is "
        "one, else io.github.<owner>/<repo> from a GitHub repository)",
    )
    parser.add_argument(
        "--output", "-o", metavar="PATH", help="write server.json here instead of to stdout"
    )


def _fail(message: str, status: int = 2) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def _report(problems: list[str], what: str) -> int:
    lines = "\n".join(f"  - {p}" for p in problems)
    print(f"mcpkit: error: {what} would be rejected by the MCP registry:\n{lines}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    import orjson

    from ..server.metadata import ServerJsonError, validate_server_json

    if args.target.endswith(".json"):
        if args.name is not None or args.output is not None:
            return _fail("--name and --output apply to a server, not to a server.json to check")
        path = Path(args.target)
        try:
            doc = orjson.loads(path.read_bytes())
        except OSError as exc:
            return _fail(f"cannot read {path}: {exc.strerror or exc}")
        except orjson.JSONDecodeError as exc:
            return _fail(f"{path} is not JSON: {exc}", status=1)
        problems = validate_server_json(doc)
        if problems:
            return _report(problems, str(path))
        print(f"{path}: valid for the MCP registry")
        return 0

    from .loader import LoadError, UserCodeError, load_server

    try:
        # What the user's module prints must not end up in the JSON on stdout.
        with contextlib.redirect_stdout(sys.stderr):
            server = load_server(args.target)
    except LoadError as exc:
        return _fail(str(exc))
    except UserCodeError as exc:
        if exc.report():
            print(exc.report(), file=sys.stderr)
        return _fail(str(exc), status=1)
    try:
        doc = server.registry_json(name=args.name)
    except ServerJsonError as exc:
        return _report(exc.problems, f"the server.json of {server.name!r}")
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc.strerror or exc}")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
