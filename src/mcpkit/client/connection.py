"""One server of an :class:`~mcpkit.client.mcp_client.MCPClient`: its client, its state, its caches.

A connection that fails to start keeps the error and reports it on every
use, so the other servers carry on (Mastra's "one server failing does not
break the others"). A server that dies later is seen through its session:
every call then fails with the reason (exit status, last stderr lines).

Lists are cached only when the server promised to announce changes
(``listChanged: true`` in its capability, 2025-11-25 server/tools § list
changed notification, and likewise for resources and prompts); the
notification drops the cache, so the next listing asks again. A listing that
was in flight when the notification arrived is not cached.
"""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Literal

from ..errors import ConnectionClosed
from .client import Client
from .config import ServerConfig
from .handlers import MAX_SERVER_REQUESTS, ElicitationHandler, RootsSpec, SamplingHandler
from .stateless.discover import is_stateless

__all__ = ["ListKind", "ServerConnection"]

log = logging.getLogger("mcpkit.client")

ListKind = Literal["tools", "resources", "resource_templates", "prompts"]
# A listing → (the capability it needs, the list_changed notification that stales it).
_LISTS: Final[dict[str, tuple[str, str]]] = {
    "tools": ("tools", "tools"),
    "resources": ("resources", "resources"),
    "resource_templates": ("resources", "resources"),
    "prompts": ("prompts", "prompts"),
}
_HANDLER_CAPABILITY: Final = {
    "sampling_handler": "sampling",
    "elicitation_handler": "elicitation",
    "roots": "roots",
}


class ServerConnection:
    """The connection to one configured server (created by ``MCPClient``)."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        timeout: float,
        max_message_size: int,
        max_server_requests: int = MAX_SERVER_REQUESTS,
    ) -> None:
        self.name = name
        self.config = config
        self.timeout = config.timeout if config.timeout is not None else timeout
        self.max_message_size = (
            config.max_message_size if config.max_message_size is not None else max_message_size
        )
        self.max_server_requests = (
            config.max_server_requests
            if config.max_server_requests is not None
            else max_server_requests
        )
        self.error: BaseException | None = None
        self.sampling_handler: SamplingHandler | None = config.sampling_handler
        self.elicitation_handler: ElicitationHandler | None = config.elicitation_handler
        self.roots: RootsSpec | None = config.roots
        self.updated_handlers: list[Callable[[str], Any]] = []
        self.list_changed_handlers: dict[str, list[Callable[[], Any]]] = {
            "tools": [],
            "resources": [],
            "prompts": [],
        }
        self._client: Client | None = None
        self._closed = False
        self._cache: dict[str, list[dict[str, Any]]] = {}
        self._generations: Counter[str] = Counter()
        self._era: str | None = None  # the handshake version a legacy server accepted

    # -- lifecycle ----------------------------------------------------------------------------
    async def connect(self) -> None:
        """Connect and initialize; a failure is kept in :attr:`error`, never raised.

        The era found by the first connection is kept for reconnections (2026-07-28
        basic/versioning: the era is a property of the server; clients SHOULD cache it):
        a server that ended on the handshake is not probed again, and a failed
        reconnection probes afresh.
        """
        remembered = self._era
        if remembered is not None and await self._connect(remembered):
            return
        self._era = None
        if await self._connect(self.config.protocol_version):
            version = self._client.protocol_version if self._client is not None else None
            if self.config.protocol_version is None and not is_stateless(version):
                # A legacy server, or a dual-era one the handlers need the handshake of:
                # skip the probe next time.
                self._era = version

    async def _connect(self, protocol_version: str | None) -> bool:
        config = self.config
        client = Client(
            command=config.command,
            args=config.args,
            env=config.env,
            cwd=config.cwd,
            url=config.url,
            headers=config.headers,
            auth=config.auth,
            http_client=config.http_client,
            http_transport=config.http_transport,
            server=config.server,
            name=self.name,
            timeout=self.timeout,
            connect_timeout=config.connect_timeout,
            capabilities=config.capabilities,
            sampling_handler=self.sampling_handler,
            elicitation_handler=self.elicitation_handler,
            roots=self.roots,
            server_logs=config.server_logs,
            log_handler=config.log_handler,
            on_resource_updated=self._resource_updated,
            on_list_changed=self._list_changed,
            trace=config.trace,
            protocol_version=protocol_version,
            max_message_size=self.max_message_size,
            max_server_requests=self.max_server_requests,
            extensions=config.extensions,
            elicitation_modes=config.elicitation_modes or ("form",),
        )
        self._cache.clear()
        self._closed = False
        try:
            await client.connect()
        except Exception as exc:
            self.error = exc
            log.warning("MCP server %r failed to start: %s", self.name, exc)
            return False
        self._client = client
        self.error = None
        return True

    async def aclose(self) -> None:
        client, self._client = self._client, None
        self._closed = True
        self._cache.clear()
        if client is not None:
            await client.aclose()

    @property
    def alive(self) -> bool:
        return self._client is not None and self._client.connected

    @property
    def failure(self) -> BaseException | None:
        """Why this server cannot be used: it failed to start, or its session ended."""
        if self.error is not None:
            return self.error
        if self._client is not None and not self._client.connected:
            return self._client.session.close_reason
        return None

    @property
    def client(self) -> Client:
        """The server's :class:`Client`; raises a clear error when it failed to start."""
        client = self._client
        if client is None:
            if self.error is not None:
                raise ConnectionClosed(
                    f"MCP server {self.name!r} failed to start, so it cannot be used: {self.error}"
                )
            why = " (the client was disconnected)" if self._closed else ""
            raise ConnectionClosed(f"MCP server {self.name!r} is not connected{why}")
        return client

    # -- handlers the application registers ---------------------------------------------------
    def set_handler(self, attribute: str, handler: Any) -> None:
        """Install a sampling/elicitation handler or roots, now and for later connections."""
        setattr(self, attribute, handler)
        client = self._client
        if client is None:
            return  # declared in the capabilities when it connects
        session = client.session
        setattr(session.handlers, attribute, handler)
        if session.declare_handlers():
            return  # 2026-07-28: the next request declares it
        capability = _HANDLER_CAPABILITY[attribute]
        if capability not in session.capabilities:
            # Capabilities are declared once, in initialize (basic/lifecycle).
            log.warning(
                "MCP server %r was connected without the %r capability, so it will not send "
                "these requests; register the handler before connecting, or reconnect",
                self.name,
                capability,
            )

    # -- lists --------------------------------------------------------------------------------
    async def list(self, kind: ListKind) -> list[dict[str, Any]]:
        """Every item of ``kind``, from the cache when the server announces changes."""
        cached = self._cache.get(kind)
        if cached is not None:
            return list(cached)
        client = self.client
        capability, notification = _LISTS[kind]
        declared = client.server_capabilities.get(capability)
        if not isinstance(declared, dict):
            return []  # the server offers none (basic/lifecycle § capability negotiation)
        generation = self._generations[notification]
        if kind == "tools":
            items = await client.list_tools()
        elif kind == "resources":
            items = await client.list_resources()
        elif kind == "resource_templates":
            items = await client.list_resource_templates()
        else:
            items = await client.list_prompts()
        if (
            declared.get("listChanged") is True
            and self._generations[notification] == generation
            and self._client is client
        ):
            self._cache[kind] = items
        return list(items)

    # -- notifications (called by the session) ------------------------------------------------
    def _list_changed(self, kind: str) -> Coroutine[Any, Any, None] | None:
        # Synchronously, so that no listing started after this can read the stale cache.
        self._generations[kind] += 1
        for key, (_, notification) in _LISTS.items():
            if notification == kind:
                self._cache.pop(key, None)
        handlers = list(self.list_changed_handlers.get(kind, ()))
        return _run_all(handlers, ()) if handlers else None

    def _resource_updated(self, uri: str) -> Coroutine[Any, Any, None] | None:
        handlers = list(self.updated_handlers)
        return _run_all(handlers, (uri,)) if handlers else None


async def _run_all(handlers: list[Callable[..., Any]], args: tuple[Any, ...]) -> None:
    """Run the handlers in order, sync or async; one failing does not stop the others."""
    for handler in handlers:
        try:
            result = handler(*args)
            if inspect.isawaitable(result):
                await _await(result)
        except Exception:
            log.exception("notification handler %r failed", handler)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
