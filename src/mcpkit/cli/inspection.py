"""``mcpkit inspect FILE[:OBJECT]``: what a server exposes, read without a transport.

The server is driven in memory through its own request handlers, as a client
connected to it would drive it: ``initialize`` (or ``server/discover`` on a
2026-07-28 revision), then every page of ``tools/list``, ``resources/list``,
``resources/templates/list`` and ``prompts/list``. So the listing is exactly
what the protocol would send, per revision, middleware and visibility rules
included; nothing is re-serialised by hand.

The ``--json`` document is stable, for CI pipelines to diff (docs/cli.md,
``mcpkit inspect``): top-level ``protocolVersion``, ``serverInfo``,
``capabilities``, ``tools``, ``resources``, ``resourceTemplates``,
``prompts``, plus ``instructions`` and ``extensions`` when the server has them.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = ["HELP", "configure", "inspect_server", "run"]

HELP = "show what a server exposes (tools, resources, prompts, capabilities) without serving it"

#: The client the inspection speaks as.
INSPECT_CLIENT = {"name": "mcpkit-inspect", "version": "1"}

# (result key in the document, list method, capability that offers it, key in the result)
_LISTS: tuple[tuple[str, str, str, str], ...] = (
    ("tools", "tools/list", "tools", "tools"),
    ("resources", "resources/list", "resources", "resources"),
    ("resourceTemplates", "resources/templates/list", "resources", "resourceTemplates"),
    ("prompts", "prompts/list", "prompts", "prompts"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    from ..protocol.versions import LATEST_HANDSHAKE, REVISIONS

    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module and the server object in it (default: 'server')",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the stable JSON document (see docs/cli.md)"
    )
    parser.add_argument(
        "--protocol-version",
        choices=tuple(REVISIONS),
        default=LATEST_HANDSHAKE,
        help=f"the revision to inspect the server as (default {LATEST_HANDSHAKE})",
    )


class InspectError(Exception):
    """The server answered an inspection request with an error."""


def _client_capabilities(server: MCPServer) -> dict[str, Any]:
    """A client that supports everything, so the listing hides nothing a capable client sees.

    Each extension the server offers is declared back (SEP-2133: a server may hide or
    refuse what needs an extension the client did not declare, such as tasks-only tools).
    """
    caps: dict[str, Any] = {
        "roots": {"listChanged": True},
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
    }
    extensions = server.capabilities().get("extensions")
    if isinstance(extensions, dict) and extensions:
        caps["extensions"] = {name: {} for name in extensions}
    return caps


class _Driver:
    """One in-memory session; requests go through the session as a transport sends them."""

    def __init__(self, server: MCPServer, revision: str) -> None:
        from ..protocol.envelope import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
        from ..protocol.versions import STATELESS_REVISIONS

        self.stateless = revision in STATELESS_REVISIONS
        self.revision = revision
        self.capabilities = _client_capabilities(server)
        self.envelope = {
            PROTOCOL_VERSION: revision,
            CLIENT_CAPABILITIES: self.capabilities,
            CLIENT_INFO: INSPECT_CLIENT,
        }
        self.next_id = 0
        self.session: ServerSession = server.create_session(
            standalone=self._ignore,
            stateless=self.stateless,
            revision=revision if self.stateless else None,
            transport="memory",
        )

    async def _ignore(self, message: dict[str, Any]) -> None:
        """Notifications the server sends meanwhile (logs, list changes) are not listed."""

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import orjson

        from ..protocol import jsonrpc

        params = dict(params or {})
        if self.stateless:
            params["_meta"] = self.envelope
        self.next_id += 1
        # Through JSON both ways, as a transport carries it.
        wire = orjson.loads(orjson.dumps(jsonrpc.request(self.next_id, method, params)))
        self.session.receive(wire)
        reply = await self.session.serve(wire, self._ignore)
        reply = orjson.loads(orjson.dumps(reply))
        if not isinstance(reply, dict) or "result" not in reply:
            error = reply.get("error") if isinstance(reply, dict) else None
            message = error.get("message") if isinstance(error, dict) else "no answer"
            raise InspectError(f"{method} failed: {message}")
        result: dict[str, Any] = reply["result"]
        return result

    async def notify(self, method: str) -> None:
        from ..protocol import jsonrpc

        self.session.receive(jsonrpc.notification(method, None))

    async def list_all(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every page (utilities/pagination), stopping on a cursor seen before."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        seen: set[str] = set()
        while True:
            result = await self.request(method, params)
            items.extend(result.get(key) or ())
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or cursor in seen:
                return items
            seen.add(cursor)
            params = {"cursor": cursor}


async def inspect_server(
    server: MCPServer, *, protocol_version: str | None = None
) -> dict[str, Any]:
    """The inspection document of ``server`` (the ``--json`` output), its lifespan entered."""
    from ..protocol.envelope import SERVER_INFO
    from ..protocol.versions import LATEST_HANDSHAKE

    driver = _Driver(server, protocol_version or LATEST_HANDSHAKE)
    await server.enter_lifespan()
    try:
        if driver.stateless:
            hello = await driver.request("server/discover")
            meta = hello.get("_meta")
            info = hello.get("serverInfo") or (
                meta.get(SERVER_INFO) if isinstance(meta, dict) else None
            )
            version = driver.revision
        else:
            hello = await driver.request(
                "initialize",
                {
                    "protocolVersion": driver.revision,
                    "capabilities": driver.capabilities,
                    "clientInfo": INSPECT_CLIENT,
                },
            )
            await driver.notify("notifications/initialized")
            info = hello.get("serverInfo")
            version = hello.get("protocolVersion", driver.revision)
        capabilities = hello.get("capabilities") or {}
        doc: dict[str, Any] = {
            "protocolVersion": version,
            "serverInfo": info or {},
            "capabilities": capabilities,
        }
        if hello.get("instructions"):
            doc["instructions"] = hello["instructions"]
        if isinstance(capabilities.get("extensions"), dict):
            doc["extensions"] = capabilities["extensions"]
        for name, method, capability, key in _LISTS:
            offered = capability in capabilities
            doc[name] = await driver.list_all(method, key) if offered else []
    finally:
        driver.session.close()
        await server.exit_lifespan()
    return doc


def _fail(message: str, status: int = 2) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    import asyncio

    from ..errors import LifespanError
    from .loader import LoadError, UserCodeError, load_server

    try:
        # What the user's module prints must not end up in the listing on stdout.
        with contextlib.redirect_stdout(sys.stderr):
            server = load_server(args.target)
    except LoadError as exc:
        return _fail(str(exc))
    except UserCodeError as exc:
        if exc.report():
            print(exc.report(), file=sys.stderr)
        return _fail(str(exc), status=1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            doc = asyncio.run(inspect_server(server, protocol_version=args.protocol_version))
    except (InspectError, LifespanError) as exc:
        return _fail(str(exc), status=1)
    if args.json:
        from .render import pretty

        print(pretty(doc))
    else:
        print(_text(doc))
    return 0


def _text(doc: dict[str, Any]) -> str:
    from .render import signature

    info = doc["serverInfo"]
    lines = [
        f"{info.get('name', '?')} {info.get('version', '')}".rstrip()
        + f"  (protocol {doc['protocolVersion']})",
        f"capabilities: {', '.join(sorted(doc['capabilities'])) or 'none'}",
    ]
    if doc.get("extensions"):
        lines.append(f"extensions: {', '.join(sorted(doc['extensions']))}")
    if doc.get("instructions"):
        lines.append(f"instructions: {doc['instructions']}")
    sections: list[tuple[str, list[str]]] = [
        (
            "tools",
            [_described(signature(t["name"], t.get("inputSchema")), t) for t in doc["tools"]],
        ),
        (
            "resources",
            [_described(f"{r['uri']}  {r.get('name', '')}", r) for r in doc["resources"]],
        ),
        (
            "resource templates",
            [
                _described(f"{r['uriTemplate']}  {r.get('name', '')}", r)
                for r in doc["resourceTemplates"]
            ],
        ),
        (
            "prompts",
            [
                _described(
                    f"{p['name']}("
                    + ", ".join(
                        a.get("name", "") + ("" if a.get("required") else "?")
                        for a in p.get("arguments") or ()
                    )
                    + ")",
                    p,
                )
                for p in doc["prompts"]
            ],
        ),
    ]
    for title, entries in sections:
        lines.append("")
        lines.append(f"{title} ({len(entries)}):")
        lines.extend(entries or ["  (none)"])
    return "\n".join(lines)


def _described(head: str, item: dict[str, Any]) -> str:
    description = str(item.get("description") or "").strip().splitlines()
    first = f"\n      {description[0]}" if description else ""
    return f"  {head.rstrip()}{first}"
