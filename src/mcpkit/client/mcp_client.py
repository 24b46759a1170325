"""``MCPClient``: many MCP servers behind one object (Mastra's ``MCPClient``, Pythonic names).

>>> async with MCPClient(servers={                                   # doctest: +SKIP
...     "files": {"command": "python", "args": ["files_server.py"]},
...     "weather": {"url": "http://localhost:8080/mcp"},
... }, timeout=30) as mcp:
...     tools = await mcp.get_tools()       # {"files_read": Tool, "weather_forecast": Tool}
...     result = await tools["weather_forecast"](city="Tokyo")

* Servers connect concurrently when the client starts (``async with``,
  :meth:`MCPClient.connect`, or the first call that needs them). A server that
  fails to start is reported (a warning, :attr:`MCPClient.errors`, and the
  error of every call to it); the others work.
* Tool names are namespaced ``server_tool`` (:meth:`get_tools`) or grouped by
  server (:meth:`get_toolsets`).
* Instance management as in Mastra's ``MCPClient``: two live ``MCPClient`` objects with the
  same configuration and no ``id`` would run every server twice (and, in a
  server that re-creates its client per request, leak them), so the second
  raises :class:`~mcpkit.errors.ConfigurationError`. Give each its own ``id``,
  or ``disconnect()`` the first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import fields
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import ConfigurationError, ConnectionClosed
from .client import Client
from .config import ServerConfig, load_config, parse_servers
from .connection import ServerConnection
from .deadlines import timeout_problem, valid_timeout
from .features import ElicitationAPI, PromptsAPI, ResourcesAPI, RootsAPI, SamplingAPI, list_all
from .handlers import MAX_SERVER_REQUESTS, ProgressCallback, check_max_server_requests
from .session import DEFAULT_TIMEOUT
from .tools import Tool
from .transports.base import DEFAULT_MAX_MESSAGE_SIZE, message_size_problem

if TYPE_CHECKING:
    from .blocking import Blocking

__all__ = ["MCPClient"]

log = logging.getLogger("mcpkit.client")

# Live instances by id or configuration (weak: a forgotten client does not block its config).
_instances: dict[str, weakref.ref[MCPClient]] = {}


class MCPClient:
    """Connections to several MCP servers; use it as an async context manager.

    ``servers`` maps a name to a definition (see :mod:`mcpkit.client.config`):
    ``command``/``args``/``env``/``cwd`` for stdio, ``url``/``headers`` for HTTP
    (Streamable HTTP, falling back to legacy SSE), ``server`` for an in-memory
    :class:`~mcpkit.server.server.MCPServer`. ``timeout`` (seconds) bounds every
    wait unless the server's own ``timeout`` or a call's ``timeout`` says otherwise.
    ``max_message_size`` (bytes, 32 MiB by default) bounds one message read from
    a server, unless the server's own ``max_message_size`` says otherwise;
    ``max_server_requests`` (32 by default) bounds how many of a server's own
    requests (sampling, elicitation, roots, ping) are handled at once, unless
    the server's own ``max_server_requests`` says otherwise.
    """

    def __init__(
        self,
        *,
        servers: Mapping[str, Mapping[str, Any] | ServerConfig],
        timeout: float = DEFAULT_TIMEOUT,
        id: str | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_server_requests: int = MAX_SERVER_REQUESTS,
    ) -> None:
        if not valid_timeout(timeout):
            raise ConfigurationError(timeout_problem("timeout", timeout))
        problem = message_size_problem("max_message_size", max_message_size)
        if problem is not None:
            raise ConfigurationError(problem)
        check_max_server_requests(max_server_requests)
        if id is not None and (not isinstance(id, str) or not id):
            raise ConfigurationError("id must be a non-empty string")
        self.id = id
        self.timeout = float(timeout)
        configs = parse_servers(servers)
        self._connections = {
            name: ServerConnection(
                name,
                config,
                timeout=self.timeout,
                max_message_size=max_message_size,
                max_server_requests=max_server_requests,
            )
            for name, config in configs.items()
        }
        self._key = f"id:{id}" if id is not None else f"config:{_fingerprint(configs, timeout)}"
        self._claim()
        self._connected = False
        self._disconnected = False  # by disconnect(): no lazy reconnection after that
        self._lock: asyncio.Lock | None = None
        self.resources = ResourcesAPI(self)
        self.prompts = PromptsAPI(self)
        self.elicitation = ElicitationAPI(self)
        self.sampling = SamplingAPI(self)
        self.roots = RootsAPI(self)

    @classmethod
    def from_config(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        id: str | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_server_requests: int = MAX_SERVER_REQUESTS,
    ) -> MCPClient:
        """A client for the servers of a config file (or its parsed JSON).

        Reads ``{"mcpServers": {...}}`` as written by Claude Desktop and Cursor
        (see :func:`mcpkit.client.config.load_config`).
        """
        return cls(
            servers=load_config(source),
            timeout=timeout,
            id=id,
            max_message_size=max_message_size,
            max_server_requests=max_server_requests,
        )

    # -- instance management ------------------------------------------------------------------
    def _claim(self) -> None:
        ref = _instances.get(self._key)
        other = ref() if ref is not None else None
        if other is not None and other is not self:
            if self.id is not None:
                raise ConfigurationError(
                    f"an MCPClient with id {self.id!r} already exists; use another id, or "
                    "'await client.disconnect()' the existing one first"
                )
            raise ConfigurationError(
                "an MCPClient with this exact configuration already exists, and a second one "
                "would start every server again. Reuse the first, 'await client.disconnect()' "
                "it before creating another, or give each instance a distinct id= "
                f"(servers: {', '.join(self._connections) or 'none'})"
            )
        _instances[self._key] = weakref.ref(self)

    def _release(self) -> None:
        ref = _instances.get(self._key)
        if ref is not None and ref() in (self, None):
            del _instances[self._key]

    # -- lifecycle ----------------------------------------------------------------------------
    async def connect(self) -> MCPClient:
        """Connect every server, concurrently (``async with`` does this)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._connected:
                return self
            self._claim()  # again: a disconnected client may be reused
            try:
                await asyncio.gather(*(conn.connect() for conn in self._connections.values()))
            except BaseException:
                await self._close_all()
                raise
            self._connected = True
            self._disconnected = False
        return self

    async def disconnect(self) -> None:
        """Close every connection (stdio servers are stopped) and release this configuration."""
        self._connected = False
        self._disconnected = True
        try:
            await self._close_all()
        finally:
            self._release()

    async def _close_all(self) -> None:
        results = await asyncio.gather(
            *(conn.aclose() for conn in self._connections.values()), return_exceptions=True
        )
        for conn, result in zip(self._connections.values(), results, strict=True):
            if isinstance(result, Exception):
                log.warning("closing MCP server %r failed: %s", conn.name, result)

    async def __aenter__(self) -> MCPClient:
        return await self.connect()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.disconnect()

    async def reconnect(self, server_name: str) -> None:
        """Close and connect one server again (after it died, or to declare new handlers)."""
        conn = self._connection(server_name)
        await conn.aclose()
        await conn.connect()
        if conn.error is not None:
            raise conn.error

    def blocking(self) -> Blocking:
        """This client for code without an event loop (scripts, notebooks).

        >>> with MCPClient(servers=...).blocking() as mcp:   # doctest: +SKIP
        ...     print(mcp.get_tools()["weather_forecast"](city="Tokyo"))
        """
        from .blocking import Blocking

        return Blocking(self)

    # -- servers ------------------------------------------------------------------------------
    @property
    def server_names(self) -> list[str]:
        return list(self._connections)

    @property
    def errors(self) -> dict[str, BaseException]:
        """``{server: error}`` for every server that failed to start or has died."""
        out: dict[str, BaseException] = {}
        for name, conn in self._connections.items():
            failure = conn.failure
            if failure is not None:
                out[name] = failure
        return out

    def client(self, server_name: str) -> Client:
        """The :class:`Client` of one connected server (completions, ping, logging level…)."""
        return self._connection(server_name).client

    def _connection(self, server_name: str) -> ServerConnection:
        conn = self._connections.get(server_name)
        if conn is None:
            raise ConfigurationError(
                f"no MCP server named {server_name!r}; "
                f"configured: {', '.join(map(repr, self._connections)) or 'none'}"
            )
        return conn

    async def _ensure_connected(self) -> None:
        if self._connected:
            return
        if self._disconnected:
            raise ConnectionClosed(
                "this MCPClient was disconnected; connect it again with 'async with' or connect()"
            )
        await self.connect()  # Mastra's client connects on first use

    async def _ready(self, server_name: str) -> ServerConnection:
        conn = self._connection(server_name)
        await self._ensure_connected()
        return conn

    async def _usable(self) -> list[ServerConnection]:
        await self._ensure_connected()
        usable = []
        for conn in self._connections.values():
            if conn.alive:
                usable.append(conn)
            else:
                log.debug("skipping MCP server %r: %s", conn.name, conn.failure)
        return usable

    # -- tools --------------------------------------------------------------------------------
    async def get_tools(self, *, raise_on_error: bool = True) -> dict[str, Tool]:
        """Every tool of every usable server, named ``server_tool``.

        ``raise_on_error=False`` makes the tools return error results instead
        of raising :class:`~mcpkit.errors.ToolCallError`.
        """
        out: dict[str, Tool] = {}
        for toolset in (await self.get_toolsets(raise_on_error=raise_on_error)).values():
            for tool in toolset.values():
                other = out.get(tool.name)
                if other is not None:
                    log.warning(
                        "tool name %r is taken by %r of MCP server %r; %r of %r is left out "
                        "(rename a server to tell them apart)",
                        tool.name,
                        other.tool_name,
                        other.server_name,
                        tool.tool_name,
                        tool.server_name,
                    )
                    continue
                out[tool.name] = tool
        return out

    async def get_toolsets(self, *, raise_on_error: bool = True) -> dict[str, dict[str, Tool]]:
        """``{server: {tool_name: Tool}}`` for every usable server."""
        listings = await list_all(self, "tools")
        out: dict[str, dict[str, Tool]] = {}
        for server_name, definitions in listings.items():
            conn = self._connections[server_name]
            toolset: dict[str, Tool] = {}
            for definition in definitions:
                name = definition.get("name")
                if not isinstance(name, str):
                    log.warning("MCP server %r listed a tool without a name", server_name)
                    continue
                toolset[name] = Tool(
                    conn, definition, name=f"{server_name}_{name}", raise_on_error=raise_on_error
                )
            out[server_name] = toolset
        return out

    async def call_tool(
        self,
        server_name: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Call a tool by its own name; returns the whole ``CallToolResult`` dict."""
        conn = await self._ready(server_name)
        return await conn.client.call_tool(
            name, arguments or {}, timeout=timeout, progress=progress
        )

    def __repr__(self) -> str:
        state = "connected" if self._connected else "not connected"
        ident = f" id={self.id!r}" if self.id is not None else ""
        return f"<MCPClient{ident} servers={self.server_names} {state}>"


def _fingerprint(configs: Mapping[str, ServerConfig], timeout: float) -> str:
    """A stable text for "the same configuration"; objects count by identity."""

    def default(obj: Any) -> Any:
        if isinstance(obj, os.PathLike):
            return os.fspath(obj)
        if isinstance(obj, Mapping):
            return dict(obj)
        return f"<{type(obj).__qualname__} at {id(obj):#x}>"

    data = {
        name: {f.name: getattr(config, f.name) for f in fields(config)}
        for name, config in configs.items()
    }
    return orjson.dumps(
        {"servers": data, "timeout": timeout},
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=default,
    ).decode()
