"""What the client commands (``tools``, ``call``, ``resources``, ``read``, ``prompts``,
``prompt``) share: which servers to talk to, and how a failure is reported.

Servers come from ``--config FILE`` (the ``mcpServers`` format of Claude
Desktop and Cursor; ``--server NAME`` picks some), ``--url URL`` or
``--stdio "command args"``. Failures are one line on stderr,
``mcpkit: error: ...``: status 2 for a usage mistake (bad options, a config
file or tool name that does not exist), 1 when a server or a call fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .. import loops
from ..client.deadlines import timeout_problem, valid_timeout

if TYPE_CHECKING:
    from ..client.client import Client
    from ..client.config import ServerConfig
    from ..client.mcp_client import MCPClient

__all__ = [
    "SINGLE",
    "CommandTimeout",
    "Selection",
    "UsageError",
    "add_server_options",
    "by_server",
    "doing",
    "fail",
    "list_per_server",
    "one_line",
    "owners_of",
    "parse_json_object",
    "resolve",
    "run_named",
    "run_with_client",
    "select_servers",
]

#: The key of a ``--url`` or ``--stdio`` server in ``--json`` listings.
SINGLE = "server"


class UsageError(Exception):
    """A mistake in the command line (exit status 2)."""


def add_server_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("servers (one of)")
    exclusive = where.add_mutually_exclusive_group(required=True)
    exclusive.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        help='a JSON file of servers: {"mcpServers": {NAME: {"command"|"url": ...}}}',
    )
    exclusive.add_argument("--url", help="an MCP server's URL (Streamable HTTP, or legacy SSE)")
    exclusive.add_argument(
        "--stdio", metavar="COMMAND", help='a command that runs a stdio server, e.g. "npx -y pkg"'
    )
    where.add_argument(
        "--server",
        "-s",
        action="append",
        metavar="NAME",
        help="with --config: only this server (repeatable)",
    )
    where.add_argument(
        "--header",
        "-H",
        action="append",
        metavar="'NAME: VALUE'",
        help="with --url: an HTTP header for every request (repeatable)",
    )
    where.add_argument(
        "--auth",
        choices=("oauth",),
        help="with --url: authorize with OAuth (opens the browser, or prints the URL; "
        "tokens are kept in the user's private token file)",
    )
    where.add_argument(
        "--auth-scope",
        action="append",
        metavar="SCOPE",
        help="with --auth oauth: a scope to ask for (repeatable; default: the server's)",
    )
    where.add_argument(
        "--transport",
        choices=("auto", "streamable-http", "sse"),
        default="auto",
        help="with --url: the HTTP transport (default auto: Streamable HTTP, else SSE)",
    )
    where.add_argument(
        "--protocol-version",
        metavar="VERSION",
        help="with --url or --stdio: the protocol revision to ask for, e.g. 2026-07-28 "
        "(the stateless one; an older server gets the handshake)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds the whole command may take: starting and connecting to the servers, "
        "signing in, and the answers (default 60)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="show the servers' logs and stderr"
    )


class Selection:
    """The servers a command line names; ``single`` when it named one server directly.

    A ``--url`` or ``--stdio`` server is named after its URL or command, so that
    messages say which server failed.
    """

    def __init__(self, servers: dict[str, ServerConfig], *, single: bool) -> None:
        self.servers = servers
        self.single = single


def select_servers(args: argparse.Namespace) -> Selection:
    from ..client.config import ServerConfig, load_config
    from ..errors import ConfigurationError

    if args.header and not args.url:
        raise UsageError("--header only applies with --url")
    if (args.auth or args.auth_scope) and not args.url:
        raise UsageError("--auth only applies with --url")
    if args.auth_scope and not args.auth:
        raise UsageError("--auth-scope needs --auth oauth")
    if args.transport != "auto" and not args.url:
        raise UsageError("--transport only applies with --url")
    if args.server and not args.config:
        raise UsageError("--server only applies with --config")
    if not valid_timeout(args.timeout):
        raise UsageError(timeout_problem("--timeout", args.timeout))
    version = args.protocol_version
    if version is not None:
        from ..client.stateless.discover import ALL_VERSIONS

        if args.config:
            raise UsageError("--protocol-version only applies with --url or --stdio")
        if version not in ALL_VERSIONS:
            raise UsageError(
                f"--protocol-version {version!r}: use one of {', '.join(ALL_VERSIONS)}"
            )
    if args.url:
        headers = dict(_header(h) for h in args.header or ())
        auth = None
        if args.auth == "oauth":
            from ..auth.client.settings import oauth_from_config

            auth = oauth_from_config({"scopes": args.auth_scope} if args.auth_scope else "oauth")
        config = ServerConfig(
            url=args.url,
            headers=headers or None,
            auth=auth,
            http_transport=args.transport,
            protocol_version=version,
        )
        return Selection({args.url: config}, single=True)
    if args.stdio:
        try:
            words = shlex.split(args.stdio)
        except ValueError as exc:
            raise UsageError(f"--stdio: {exc}") from None
        if not words:
            raise UsageError("--stdio needs a command")
        config = ServerConfig(command=words[0], args=tuple(words[1:]), protocol_version=version)
        return Selection({_command_label(words): config}, single=True)
    try:
        servers = load_config(args.config)
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from None
    if args.server:
        unknown = [name for name in args.server if name not in servers]
        if unknown:
            raise UsageError(
                f"no server {', '.join(map(repr, unknown))} in {args.config} "
                f"(it has: {', '.join(servers) or 'none'})"
            )
        servers = {name: servers[name] for name in args.server}
    if not servers:
        raise UsageError(f"{args.config} configures no servers")
    return Selection(servers, single=False)


def _command_label(words: list[str]) -> str:
    """A ``--stdio`` command as messages name it: paths shortened to their file names."""
    label = shlex.join(
        [os.path.basename(w) if os.sep in w and os.path.basename(w) else w for w in words]
    )
    return label if len(label) <= 60 else label[:57] + "..."


def by_server(listings: dict[str, Any], selection: Selection) -> dict[str, Any]:
    """``--json`` listings keyed by server; a ``--url``/``--stdio`` one under ``"server"``."""
    if selection.single and listings:
        return {SINGLE: next(iter(listings.values()))}
    return listings


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--header {text!r}: use 'Name: value'")
    return name.strip(), value.strip()


def run_with_client(
    args: argparse.Namespace,
    action: Callable[[MCPClient, Selection], Awaitable[int]],
    *,
    narrow: Callable[[Selection], Selection] | None = None,
    prepare: Callable[[MCPClient], None] | None = None,
) -> int:
    """Select servers, connect, run ``action``; every failure becomes one line and a status.

    ``narrow`` may drop servers a command does not need before any is started;
    ``prepare`` installs handlers before the servers connect (capabilities are
    declared when they do).
    """
    _quiet_logs(args.verbose)
    try:
        selection = select_servers(args)
        if narrow is not None:
            selection = narrow(selection)
    except UsageError as exc:
        return fail(one_line(exc), 2)
    try:
        return loops.run(_capped(args, selection, action, prepare))  # uvloop when installed
    except CommandTimeout as exc:
        return fail(str(exc), 1)
    except UsageError as exc:
        return fail(one_line(exc), 2)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        raise  # stdout's reader is gone: the command line's end (mcpkit.cli.main) says nothing
    except Exception as exc:
        return fail(one_line(exc) + _auth_hint(exc, args), 1)


class CommandTimeout(Exception):
    """The whole command took longer than ``--timeout``."""


#: What the command is doing, for the message when --timeout ends it.
_DOING: contextvars.ContextVar[str] = contextvars.ContextVar("mcpkit_cli_doing", default="")


def doing(what: str) -> None:
    """Say what the command waits for now (``tool 'x' to finish``), should --timeout end it."""
    _DOING.set(what)


async def _capped(
    args: argparse.Namespace,
    selection: Selection,
    action: Callable[[MCPClient, Selection], Awaitable[int]],
    prepare: Callable[[MCPClient], None] | None = None,
) -> int:
    """:func:`_run` within ``--timeout`` for the whole command; the message says so. Every
    wait inside (a request, a sign-in) started later than the command, so ends later."""
    deadline = asyncio.get_running_loop().time() + args.timeout
    names = list(selection.servers)
    doing(
        f"starting and connecting to server {names[0]!r}"
        if len(names) == 1
        else f"starting and connecting to the servers {', '.join(map(repr, names))}"
    )
    for config in selection.servers.values():
        sign_in_until(config.auth, deadline)
    try:
        async with asyncio.timeout_at(deadline) as scope:
            return await _run(args, selection, action, prepare)
    except TimeoutError:
        if not scope.expired():
            raise
        raise CommandTimeout(
            f"stopped after {args.timeout:g} s (--timeout, the limit of the whole command) "
            f"while {_DOING.get()}; give a larger --timeout to wait longer"
        ) from None


def sign_in_until(auth: object, deadline: float) -> None:
    """Make an OAuth flow's wait for the browser end before the command's ``deadline``, with
    the authorizer's own message (not a request's timeout)."""
    grant = getattr(auth, "grant", None)
    authorizer = getattr(grant, "authorizer", None)
    if authorizer is not None and hasattr(authorizer, "timeout"):
        grant.authorizer = _SignInUntil(authorizer, deadline)  # type: ignore[union-attr]


class _SignInUntil:
    """An authorizer (a loopback one) whose wait for the person ends a second before the
    command's deadline, so the failure is its own: "no authorization response within N s"."""

    def __init__(self, inner: Any, deadline: float) -> None:
        self.inner = inner
        self.deadline = deadline

    @property
    def redirect_uri(self) -> str:
        return str(self.inner.redirect_uri)

    async def authorize(self, url: str) -> str:
        left = self.deadline - asyncio.get_running_loop().time() - 1.0
        self.inner.timeout = max(float(int(left)), 0.1)  # whole seconds read better
        doing("waiting for the OAuth sign-in in the browser")
        redirected: str = await self.inner.authorize(url)
        doing("waiting for the server's answer")
        return redirected


async def _run(
    args: argparse.Namespace,
    selection: Selection,
    action: Callable[[MCPClient, Selection], Awaitable[int]],
    prepare: Callable[[MCPClient], None] | None = None,
) -> int:
    from ..client.mcp_client import MCPClient

    mcp = MCPClient(servers=selection.servers, timeout=args.timeout)
    if prepare is not None:
        prepare(mcp)
    async with mcp:
        doing("waiting for the server's answer")
        errors = mcp.errors
        if selection.single and errors:
            raise next(iter(errors.values()))
        return await action(mcp, selection)


async def list_per_server(
    mcp: MCPClient, fetch: Callable[[str], Awaitable[Any]]
) -> tuple[dict[str, Any], int]:
    """``fetch(server)`` for every server; one error line per server that failed.

    Returns what was fetched and the exit status (1 when any server failed).
    """
    names = mcp.server_names
    errors = mcp.errors
    live = [name for name in names if name not in errors]
    results = await asyncio.gather(*(fetch(name) for name in live), return_exceptions=True)
    out: dict[str, Any] = {}
    failed = dict(errors)
    for name, result in zip(live, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            failed[name] = result
        else:
            out[name] = result
    for name in names:
        if name in failed:
            print(f"mcpkit: error: server {name!r}: {one_line(failed[name])}", file=sys.stderr)
    return out, 1 if failed else 0


def _auth_hint(exc: BaseException, args: argparse.Namespace) -> str:
    """What to try when a ``--url`` server answered 401 (it needs authorization)."""
    from ..errors import HTTPErrorStatus

    seen: BaseException | None = exc
    while seen is not None and not (isinstance(seen, HTTPErrorStatus) and seen.status == 401):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return _sign_in_hint(exc, args)
    if not getattr(args, "url", None):
        return ""
    if args.auth:
        return ""  # the OAuth flow ran: its own message says what went wrong
    if any(h.split(":", 1)[0].strip().lower() == "authorization" for h in args.header or ()):
        return " (the Authorization header given with --header was refused)"
    return (
        " (the server needs authorization: add --auth oauth to sign in, or "
        "--header 'Authorization: Bearer TOKEN' with a token you have)"
    )


def _sign_in_hint(exc: BaseException, args: argparse.Namespace) -> str:
    """What to do when nobody finished the OAuth sign-in before ``--timeout``."""
    from ..errors import AuthorizationFailed

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, AuthorizationFailed):
        seen = seen.__cause__ or seen.__context__
    if seen is None or seen.error != "authorization_timeout":
        return ""
    return (
        f" (the sign-in has to finish within --timeout {args.timeout:g} s, the limit of the "
        "whole command: open the URL in a browser on this machine, or give a larger --timeout)"
    )


def fail(message: str, status: int) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (a dying server's stderr lines joined with " | ")."""
    text = str(exc).strip() or type(exc).__name__
    joined = ""
    for line in (line.strip() for line in text.splitlines()):
        if line:
            joined += line if not joined else (" " if joined.endswith(":") else " | ") + line
    return joined if len(joined) <= 1000 else joined[:997] + "..."


def _quiet_logs(verbose: bool) -> None:
    """Without -v, the command reports failures itself: keep mcpkit's log records off stderr."""
    logger = logging.getLogger("mcpkit")
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    else:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def parse_json_object(text: str | None, option: str) -> dict[str, Any]:
    """The JSON object given to ``option`` (``{}`` when absent)."""
    import json

    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError(f'{option} must be a JSON object, like \'{{"city": "Tokyo"}}\'')
    return value


def owners_of(name: str, *, kind: str, listing: str) -> Callable[[Selection], Selection]:
    """A ``narrow`` keeping the configured servers that ``SERVER_TOOL`` (or
    ``SERVER_PROMPT``) can belong to."""

    def narrow(selection: Selection) -> Selection:
        if selection.single:
            return selection
        owners = {n: c for n, c in selection.servers.items() if name.startswith(n + "_")}
        if not owners:
            raise UsageError(
                f"no configured server owns {name!r}: names are SERVER_{kind.upper()} "
                f"(servers: {', '.join(selection.servers)}; see 'mcpkit {listing}')"
            )
        return Selection(owners, single=False)

    return narrow


async def resolve(
    mcp: MCPClient,
    selection: Selection,
    name: str,
    names_of: Callable[[Client], Awaitable[list[dict[str, Any]]]],
    *,
    kind: str,
    listing: str,
) -> tuple[str, str]:
    """(server, own name) for ``SERVER_TOOL`` (``SERVER_PROMPT``); asks the servers only
    when it is ambiguous."""
    if selection.single:
        return mcp.server_names[0], name
    owners = sorted(mcp.server_names, key=len, reverse=True)
    if len(owners) == 1:
        return owners[0], name[len(owners[0]) + 1 :]
    errors = mcp.errors
    asked: list[str] = []
    for server in owners:  # "a_b" + "c" before "a" + "b_c"
        if server in errors:
            continue
        own = name[len(server) + 1 :]
        if own in {item.get("name") for item in await names_of(mcp.client(server))}:
            return server, own
        asked.append(server)
    if not asked:
        raise next(iter(errors.values()))
    raise UsageError(f"no {kind} {name!r} on server(s) {', '.join(asked)}; see 'mcpkit {listing}'")


def run_named(
    args: argparse.Namespace,
    name: str,
    names_of: Callable[[Client], Awaitable[list[dict[str, Any]]]],
    act: Callable[[MCPClient, str, str, dict[str, Any]], Awaitable[int]],
    *,
    kind: str,
    listing: str,
    prepare: Callable[[MCPClient], None] | None = None,
    configure: Callable[[ServerConfig], ServerConfig] | None = None,
) -> int:
    """Run a command on one ``SERVER_TOOL`` or ``SERVER_PROMPT`` with ``--args JSON``.

    ``act(mcp, server, own name, arguments)`` does the work once the name is
    resolved; bad ``--args`` fail (status 2) before any server starts, and only
    the servers that can own ``name`` are started, each definition passed through
    ``configure`` first (to add client extensions, say).
    """
    try:
        arguments = parse_json_object(args.args, "--args")
    except UsageError as exc:
        return fail(str(exc), 2)

    async def action(mcp: MCPClient, selection: Selection) -> int:
        server, own = await resolve(mcp, selection, name, names_of, kind=kind, listing=listing)
        return await act(mcp, server, own, arguments)

    owners = owners_of(name, kind=kind, listing=listing)

    def narrow(selection: Selection) -> Selection:
        chosen = owners(selection)
        if configure is None:
            return chosen
        servers = {n: configure(c) for n, c in chosen.servers.items()}
        return Selection(servers, single=chosen.single)

    return run_with_client(args, action, narrow=narrow, prepare=prepare)
