"""Connect a client to a server object in memory: no sockets, no subprocess.

Every message still goes through JSON serialisation both ways, so tests see
exactly what a real transport would carry::

    async with connect(server) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})

:class:`InMemoryClient` is the wire-level test client: it speaks one protocol
revision (``protocol_version``, default the newest handshake one), records
:attr:`~InMemoryClient.traffic`, sends malformed input with
:meth:`~InMemoryClient.send_raw` and answers server requests from a dict of
``handlers``. Its conveniences have the names and results of
:class:`mcpkit.Client`'s (``list_tools``, ``list_resources``,
``list_resource_templates``, ``list_prompts``, ``read_resource``,
``get_prompt``, ``call_tool``, ``complete``, ``subscribe_resource``,
``unsubscribe_resource``, ``set_logging_level``, ``ping``). For the full client
(handlers, progress callbacks, the stateless era's retries, caching), use
``mcpkit.Client(server=server)``, which talks to the server object in memory
too.

``auth_info=`` makes every request arrive as if an HTTP auth layer had verified
a token (what a protected server's handlers, middleware and scope checks see as
``ctx.auth_info``); assign :attr:`InMemoryClient.auth_info` to change it, as a
client that stepped up to a new token would. With ``protocol_version`` set to a
2026-07-28 revision and ``initialize=False`` the client sends each request with
that era's ``_meta`` envelope instead of a handshake::

    async with connect(server, auth_info=AuthInfo(token="t", scopes=frozenset({"mcp:read"}))) as c:
        await c.call_tool("search", {"q": "x"})   # a tool needing mcp:write is refused
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import orjson

from .errors import RemoteError
from .protocol import jsonrpc
from .protocol.envelope import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from .protocol.jsonrpc import Kind
from .protocol.versions import LATEST_HANDSHAKE, STATELESS_REVISIONS

if TYPE_CHECKING:
    from .auth.info import AuthInfo
    from .server.server import MCPServer
    from .server.session import ServerSession

__all__ = ["InMemoryClient", "connect"]

RequestHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]


class InMemoryClient:
    """A minimal MCP client bound to one server session, for tests."""

    def __init__(
        self,
        server: MCPServer,
        *,
        protocol_version: str = LATEST_HANDSHAKE,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        handlers: dict[str, RequestHandler] | None = None,
        initialize: bool = True,
        stateless: bool = False,
        auth_info: AuthInfo | None = None,
    ) -> None:
        self.server = server
        #: What each request carries as its verified token (None: unauthenticated).
        self.auth_info = auth_info
        self.protocol_version = protocol_version
        self.capabilities = capabilities if capabilities is not None else {}
        self.client_info = client_info or {"name": "mcpkit-test-client", "version": "0.0.0"}
        self.handlers: dict[str, RequestHandler] = dict(handlers or {})
        self.notifications: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []  # every message the server emitted
        self.sent: list[dict[str, Any]] = []  # every message this client sent
        # Both directions in wire order: (direction, message, checked). ``checked`` is False
        # for what a test pushed through ``send_raw`` (often malformed on purpose), so a
        # schema harness can validate the rest of the conversation.
        self.traffic: list[tuple[Literal["sent", "received"], Any, bool]] = []
        self.initialize_result: dict[str, Any] | None = None
        # 2026-07-28 without initialize: every request carries the envelope instead (with
        # initialize=True the client sends initialize, which negotiates a handshake revision).
        self._envelope: dict[str, Any] | None = None
        if protocol_version in STATELESS_REVISIONS and not initialize:
            self._envelope = {
                PROTOCOL_VERSION: protocol_version,
                CLIENT_CAPABILITIES: self.capabilities,
                CLIENT_INFO: self.client_info,
            }
        self._do_initialize = initialize
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_lifespan = False
        self.session: ServerSession = server.create_session(
            standalone=self._deliver,
            stateless=stateless or self._envelope is not None,
            revision=protocol_version if self._envelope is not None else None,
            transport="memory",
        )

    async def __aenter__(self) -> InMemoryClient:
        # The server's lifespan runs while the client is connected (shared with any
        # other connection to the same server: entered once).
        await self.server.enter_lifespan()
        self._in_lifespan = True
        if self._do_initialize:
            try:
                self.initialize_result = await self.request(
                    "initialize",
                    {
                        "protocolVersion": self.protocol_version,
                        "capabilities": self.capabilities,
                        "clientInfo": self.client_info,
                    },
                )
                await self.notify("notifications/initialized")
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self.session.close()
        if self._in_lifespan:
            self._in_lifespan = False
            await self.server.exit_lifespan()

    # -- the wire ----------------------------------------------------------------------------
    async def _deliver(self, message: dict[str, Any]) -> None:
        msg = orjson.loads(jsonrpc.dumps(message))
        self.received.append(msg)
        self.traffic.append(("received", msg, True))
        if "method" in msg and "id" in msg:
            task = asyncio.ensure_future(self._answer(msg))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif "method" in msg:
            self.notifications.append(msg)

    async def _answer(self, msg: dict[str, Any]) -> None:
        handler = self.handlers.get(msg["method"])
        if msg["method"] == "ping":
            reply = jsonrpc.response(msg["id"], {})
        elif handler is None:
            reply = jsonrpc.error_response(msg["id"], -32601, f"Method not found: {msg['method']}")
        else:
            try:
                result = handler(msg.get("params") or {})
                if asyncio.iscoroutine(result):
                    result = await result
                reply = jsonrpc.response(msg["id"], result)  # type: ignore[arg-type]
            except Exception as exc:
                reply = jsonrpc.error_response(msg["id"], -32603, str(exc))
        await self._send(reply, checked=True)

    async def send_raw(self, message: Any) -> Any:
        """Send any JSON value; returns the server's answer (None for notifications).

        Meant for malformed or unusual input: what goes through here is marked
        unchecked in :attr:`traffic`.
        """
        return await self._send(message, checked=False)

    async def _send(self, message: Any, *, checked: bool) -> Any:
        wire = orjson.loads(jsonrpc.dumps(message))
        if isinstance(wire, dict):
            self.sent.append(wire)
        elif isinstance(wire, list):
            self.sent.extend(m for m in wire if isinstance(m, dict))
        self.traffic.append(("sent", wire, checked))
        auth = self.auth_info
        session = self.session
        kind = session.receive(wire)
        out: Any = None
        if kind is Kind.REQUEST:
            out = await session.serve(wire, self._deliver, auth_info=auth)
        elif kind is Kind.BATCH:
            out = await session.serve_batch(wire, self._deliver, auth_info=auth)
        elif kind is Kind.INVALID:
            out = jsonrpc.invalid_request(wire)
        if out is not None:
            out = orjson.loads(jsonrpc.dumps(out))
            self.received.append(out) if isinstance(out, dict) else self.received.extend(out)
            self.traffic.append(("received", out, True))
        return out

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; returns its result or raises ``RemoteError``."""
        if self._envelope is not None:
            params = dict(params or {})
            meta = params.get("_meta")
            params["_meta"] = {**self._envelope, **(meta if isinstance(meta, dict) else {})}
        reply = await self._send(jsonrpc.request(next(self._ids), method, params), checked=True)
        if reply is None:
            raise RemoteError("request was cancelled: no response")
        if "error" in reply:
            err = reply["error"]
            raise RemoteError(err.get("message", ""), code=err.get("code"), data=err.get("data"))
        return reply["result"]  # type: ignore[no-any-return]

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._send(jsonrpc.notification(method, params), checked=True)

    # -- conveniences (named as mcpkit.Client's) -----------------------------------------------
    async def _list_all(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every page of a list result (utilities/pagination), stopping on a repeated cursor."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] | None = None
        seen: set[str] = set()
        for _ in range(1000):  # a bound against a server that pages forever
            result = await self.request(method, params)
            items.extend(result.get(key) or ())
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or cursor in seen:
                return items
            seen.add(cursor)
            params = {"cursor": cursor}
        return items

    async def list_tools(self) -> list[dict[str, Any]]:
        return await self._list_all("tools/list", "tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._list_all("resources/templates/list", "resourceTemplates")

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list_all("prompts/list", "prompts")

    async def subscribe_resource(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def complete(
        self,
        ref: dict[str, Any],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """``completion/complete``; returns the ``completion`` dict, as ``Client.complete``."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": context}
        return (await self.request("completion/complete", params))["completion"]  # type: ignore[no-any-return]

    async def set_logging_level(self, level: str) -> None:
        await self.request("logging/setLevel", {"level": level})

    async def ping(self) -> None:
        await self.request("ping")

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress_token: str | int | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return await self.request("tools/call", params)

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return await self.request("resources/read", {"uri": uri})

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("prompts/get", params)


def connect(server: MCPServer, **options: Any) -> InMemoryClient:
    """An in-memory client for ``server``; use with ``async with``."""
    return InMemoryClient(server, **options)
