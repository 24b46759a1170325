"""``mcpkit proxy --url URL | --stdio "CMD"``: serve another MCP server through a local proxy.

The proxy is ``MCPServer.proxy`` (:mod:`mcpkit.compose.proxy`), served like
``mcpkit run`` serves a file: every option of ``run`` applies (``-t http --port P``,
``--stateless``, ``--workers N --redis URL``, limits). The upstream is described in
the environment variable :data:`UPSTREAM_ENV` and the server built from it by
:func:`from_environment`, the target ``run`` loads; so worker processes, which load
the target again, build the same proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["HELP", "TARGET", "UPSTREAM_ENV", "configure", "from_environment", "run"]

HELP = "serve another MCP server (a URL or a command) through a local proxy"

#: Where ``mcpkit proxy`` puts the upstream's description (JSON) for the target it runs.
UPSTREAM_ENV = "MCPKIT_PROXY_UPSTREAM"
#: What ``mcpkit proxy`` has ``run`` load.
TARGET = "mcpkit.cli.proxy:from_environment"


def configure(parser: argparse.ArgumentParser) -> None:
    upstream = parser.add_argument_group("the upstream server")
    which = upstream.add_mutually_exclusive_group(required=True)
    which.add_argument("--url", help="the upstream's Streamable HTTP (or SSE) endpoint")
    which.add_argument(
        "--stdio",
        metavar='"CMD"',
        help="the command line starting the upstream over stdio (one process per "
        "downstream session; split as a shell would)",
    )
    upstream.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="an HTTP header sent to the upstream (--url; repeatable)",
    )
    upstream.add_argument(
        "--env",
        action="append",
        metavar="KEY=VALUE",
        help="an environment variable for the upstream process (--stdio; repeatable)",
    )
    upstream.add_argument(
        "--upstream-version",
        metavar="VERSION",
        help="the protocol revision asked of the upstream: a revision, or 'auto' for the "
        "newest it speaks (default: the newest handshake revision)",
    )
    upstream.add_argument(
        "--upstream-timeout",
        type=float,
        metavar="SECONDS",
        help="how long the upstream has to answer a request (default: the client's)",
    )
    parser.add_argument("--name", default="proxy", help="the proxy's server name (default proxy)")
    from .run import add_serving_options

    add_serving_options(parser)


def _fail(message: str) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return 2


def _pairs(items: list[str] | None, sep: str, what: str) -> dict[str, str] | str:
    """``items`` split at ``sep`` into a dict, or the problem with the first bad one."""
    out: dict[str, str] = {}
    for item in items or ():
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            return f"{what} {item!r} is not {'NAME: VALUE' if sep == ':' else 'KEY=VALUE'}"
        out[key.strip()] = value.strip() if sep == ":" else value
    return out


def _upstream(args: argparse.Namespace) -> dict[str, Any] | str:
    """The upstream's description (an ``mcpServers`` entry and proxy options), or a problem."""
    headers = _pairs(args.header, ":", "--header")
    env = _pairs(args.env, "=", "--env")
    if isinstance(headers, str):
        return headers
    if isinstance(env, str):
        return env
    if args.url is not None:
        if env:
            return "--env applies to --stdio, not --url"
        entry: dict[str, Any] = {"url": args.url}
        if headers:
            entry["headers"] = headers
    else:
        if headers:
            return "--header applies to --url, not --stdio"
        import shlex

        try:
            words = shlex.split(args.stdio)
        except ValueError as exc:
            return f"--stdio {args.stdio!r} is not a command line: {exc}"
        if not words:
            return "--stdio needs a command"
        entry = {"command": words[0], "args": words[1:]}
        if env:
            entry["env"] = env
    if args.upstream_version is not None:
        from ..protocol.versions import REVISIONS

        if args.upstream_version != "auto" and args.upstream_version not in REVISIONS:
            known = ", ".join(REVISIONS)
            return (
                f"--upstream-version must be one of {known} or auto, not {args.upstream_version!r}"
            )
    if args.upstream_timeout is not None:
        if not args.upstream_timeout > 0:
            return f"--upstream-timeout must be a positive number, got {args.upstream_timeout:g}"
        entry["timeout"] = args.upstream_timeout
    return {"entry": entry, "name": args.name, "version": args.upstream_version}


def from_environment() -> MCPServer:
    """The proxy :data:`UPSTREAM_ENV` describes (what ``mcpkit proxy`` serves)."""
    from ..compose.proxy import proxy
    from ..errors import ConfigurationError
    from ..protocol.versions import LATEST_HANDSHAKE

    raw = os.environ.get(UPSTREAM_ENV)
    if not raw:
        raise ConfigurationError(f"{UPSTREAM_ENV} is not set: run this through mcpkit proxy")
    spec = json.loads(raw)
    version = spec.get("version") or LATEST_HANDSHAKE
    return proxy(
        spec["entry"],
        name=spec["name"],
        upstream_version=None if version == "auto" else version,
    )


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigurationError
    from . import run as run_command

    upstream = _upstream(args)
    if isinstance(upstream, str):
        return _fail(upstream)
    os.environ[UPSTREAM_ENV] = json.dumps(upstream)
    try:
        from_environment()  # a mistake is one line here, not a traceback in each worker
    except ConfigurationError as exc:
        return _fail(str(exc))
    args.target = TARGET
    return run_command.run(args)
