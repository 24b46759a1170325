"""``Client``: a connection to one MCP server, whatever the transport.

>>> async with Client(command="python", args=["server.py"]) as client:  # doctest: +SKIP
...     result = await client.call_tool("add", {"a": 1, "b": 2})

The transport follows from the options: ``command`` spawns a stdio server,
``server`` connects in memory to an :class:`~mcpkit.server.server.MCPServer`
object, and ``url`` chooses between the two HTTP transports as Mastra's
MCPClient does (``http_transport="auto"``):

* a URL whose path ends in ``/sse`` is a legacy HTTP+SSE server;
* any other URL is tried with Streamable HTTP first; when that ``initialize``
  cannot connect or is answered 400, 404 or 405, the client tries legacy
  HTTP+SSE at the same URL instead (2025-03-26 basic/transports § backwards
  compatibility).

Everything else is the :class:`~mcpkit.client.session.ClientSession` it wraps.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from ..errors import ConfigurationError, ConnectionClosed
from .cache import ResultCache
from .handlers import (
    MAX_SERVER_REQUESTS,
    ElicitationHandler,
    ListChangedCallback,
    LogCallback,
    ProgressCallback,
    ResourceUpdatedCallback,
    RootsSpec,
    SamplingHandler,
)
from .options import DEFAULT_TIMEOUT, ClientExtension, ClientOptions, Trace
from .session import ClientSession
from .session_api import SessionAPI
from .stateless import discover
from .transports.base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    ClientTransport,
    HTTPErrorStatus,
    Unreachable,
)

if TYPE_CHECKING:
    import httpx

    from .transports.memory import InProcessServer

__all__ = ["Client", "HTTPTransportChoice"]

log = logging.getLogger("mcpkit.client")

HTTPTransportChoice: TypeAlias = Literal["auto", "streamable-http", "sse"]
# An answer to the first POST that marks a server without Streamable HTTP.
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405})


class Client(SessionAPI):
    """An MCP client for one server; use it as an async context manager.

    Exactly one of ``command`` (stdio), ``url`` (HTTP), ``server`` (in memory)
    or ``transport`` (any object following
    :class:`~mcpkit.client.transports.base.ClientTransport`) is required.
    ``auth`` authorizes every HTTP request: an ``httpx.Auth``, usually
    :class:`mcpkit.auth.client.OAuth` for a server protected with OAuth (see
    docs/auth.md). ``http_transport`` picks the HTTP transport (``"auto"``, see the module
    docstring; ``"streamable-http"``; ``"sse"``). ``timeout`` bounds every wait
    (seconds; each call can override it); ``connect_timeout`` bounds starting
    and initializing instead, when a server is slower to start than to answer.
    ``protocol_version`` pins a revision: ``"2026-07-28"`` the stateless one whenever
    the server speaks it (a legacy server gets the handshake instead), a handshake
    revision the handshake. Without it the client asks for 2026-07-28 too, but takes
    the handshake with a dual-era server that does not say it asks for input in
    input-required rounds when it has sampling, elicitation or roots handlers (see
    :func:`~mcpkit.client.stateless.discover.prefers_handshake`); ``cache`` keeps cacheable results for
    their ``ttlMs`` (a :class:`~mcpkit.client.cache.ResultCache` to share one,
    ``False`` for none). ``max_message_size`` (bytes, 32 MiB by default) bounds
    one message read from the server: a larger one fails with
    :class:`~mcpkit.client.transports.base.MessageTooLarge` instead of being
    buffered (stdio and HTTP; a ``transport=`` object has its own setting).
    ``max_server_requests`` bounds how many of the server's
    own requests (sampling, elicitation, roots, ping) are handled at once; the
    excess is refused with error -31429.
    """

    def __init__(
        self,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        http_transport: HTTPTransportChoice = "auto",
        server: InProcessServer | None = None,
        transport: ClientTransport | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float | None = None,
        protocol_version: str | None = None,
        supported_versions: tuple[str, ...] = discover.ALL_VERSIONS,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation_modes: tuple[str, ...] = ("form",),
        roots: RootsSpec | None = None,
        server_logs: bool = True,
        log_handler: LogCallback | None = None,
        on_resource_updated: ResourceUpdatedCallback | None = None,
        on_list_changed: ListChangedCallback | None = None,
        trace: Trace | None = None,
        cache: ResultCache | bool = True,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_server_requests: int = MAX_SERVER_REQUESTS,
        extensions: Sequence[ClientExtension] = (),
    ) -> None:
        chosen = [
            k
            for k, v in (
                ("command", command),
                ("url", url),
                ("server", server),
                ("transport", transport),
            )
            if v is not None
        ]
        if len(chosen) != 1:
            raise ConfigurationError(
                "Client needs exactly one of command= (stdio), url= (Streamable HTTP), "
                f"server= (in memory) or transport=; got {chosen or 'none'}"
            )
        if (args or env or cwd is not None) and command is None:
            raise ConfigurationError("args=, env= and cwd= only apply with command=")
        if (headers or http_client is not None or auth is not None) and url is None:
            raise ConfigurationError("headers=, auth= and http_client= only apply with url=")
        if http_transport not in ("auto", "streamable-http", "sse"):
            raise ConfigurationError(
                f"http_transport must be 'auto', 'streamable-http' or 'sse', not {http_transport!r}"
            )
        if url is not None and http_transport == "auto" and _is_sse_url(url):
            http_transport = "sse"
        self._http_transport = http_transport
        self._transport_options: dict[str, Any] = {
            "command": command,
            "args": args,
            "env": env,
            "cwd": cwd,
            "url": url,
            "headers": headers,
            "auth": auth,
            "http_client": http_client,
            "http_transport": http_transport,
            "server": server,
            "transport": transport,
            "name": name,
            "max_message_size": max_message_size,
        }
        # Every other option is a session option, checked where it is defined.
        self.options = ClientOptions(
            name=name,
            timeout=timeout,
            connect_timeout=connect_timeout,
            protocol_version=protocol_version,
            supported_versions=supported_versions,
            client_info=client_info,
            capabilities=capabilities,
            sampling_handler=sampling_handler,
            elicitation_handler=elicitation_handler,
            elicitation_modes=elicitation_modes,
            roots=roots,
            server_logs=server_logs,
            log_handler=log_handler,
            on_resource_updated=on_resource_updated,
            on_list_changed=on_list_changed,
            trace=trace,
            cache=cache,
            max_message_size=max_message_size,
            max_server_requests=max_server_requests,
            extensions=tuple(extensions),
        )
        self._session: ClientSession | None = None

    # -- connection ---------------------------------------------------------------------------
    async def connect(self) -> Client:
        """Start the transport and run the handshake (``async with`` does this)."""
        if self._session is not None:
            raise ConfigurationError("this Client is already connected")
        options = self._transport_options
        if options["url"] is None or self._http_transport != "auto":
            await self._open(_transport(**options))
            return self
        try:
            await self._open(_transport(**{**options, "http_transport": "streamable-http"}))
        except (Unreachable, HTTPErrorStatus) as exc:
            if isinstance(exc, HTTPErrorStatus) and exc.status not in _FALLBACK_STATUSES:
                raise
            log.info("%s: no Streamable HTTP (%s); trying legacy HTTP+SSE", options["url"], exc)
            try:
                await self._open(_transport(**{**options, "http_transport": "sse"}))
            except (Unreachable, HTTPErrorStatus) as sse_exc:
                raise _both_failed(options["url"], exc, sse_exc) from sse_exc
        return self

    async def _open(self, transport: ClientTransport) -> None:
        session = ClientSession(transport, self.options)
        self._session = session
        try:
            await session.start()
            await session.initialize(timeout=self.options.connect_timeout)
        except BaseException:
            self._session = None
            await session.aclose()
            raise

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()

    async def __aenter__(self) -> Client:
        return await self.connect()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def session(self) -> ClientSession:
        """The live session (raises when not connected)."""
        if self._session is None:
            raise ConnectionClosed("the client is not connected: use 'async with Client(...)'")
        return self._session

    @property
    def connected(self) -> bool:
        return self._session is not None and not self._session.closed

    def connection_options(self) -> dict[str, Any]:
        """Every keyword argument this client was made with, as ``Client(...)`` takes them.

        ``Client(**client.connection_options())`` is a new, unconnected client reaching
        the same server the same way (transport, headers, auth, bounds, handlers): what
        ``proxy(client)`` opens its upstream connections from. The values are the
        client's own objects (its ``http_client``, ``auth``, handlers), not copies, and
        the ``http_transport`` of a URL ending in ``/sse`` reads ``"sse"``.
        """
        options = dict(self._transport_options)
        options.update(
            (f.name, getattr(self.options, f.name)) for f in dataclasses.fields(self.options)
        )
        return options

    # -- what the server told us --------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.session.name

    @property
    def server_info(self) -> dict[str, Any]:
        return self.session.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.session.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision."""
        return self.session.protocol_version

    # -- the session's API --------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        return await self.session.request(method, params, timeout=timeout, progress=progress)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.session.notify(method, params)

    # list_tools, call_tool and the rest of the MCP methods come from SessionAPI.
    @property
    def _target(self) -> ClientSession:
        return self.session


def _transport(
    *,
    command: str | None,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    url: str | None,
    headers: Mapping[str, str] | None,
    auth: httpx.Auth | None,
    http_client: httpx.AsyncClient | None,
    http_transport: HTTPTransportChoice,
    server: InProcessServer | None,
    transport: ClientTransport | None,
    name: str | None,
    max_message_size: int,
) -> ClientTransport:
    if transport is not None:
        return transport
    if command is not None:
        from .transports.stdio import StdioTransport

        return StdioTransport(
            command, args, env=env, cwd=cwd, name=name, max_message_size=max_message_size
        )
    if url is not None:
        # Without httpx (the 'client' extra), these imports raise MissingExtra.
        if http_transport == "sse":
            from .transports.sse import SSETransport

            return SSETransport(
                url,
                headers=headers,
                auth=auth,
                http_client=http_client,
                name=name,
                max_message_size=max_message_size,
            )
        from .transports.streamable_http import StreamableHTTPTransport

        return StreamableHTTPTransport(
            url,
            headers=headers,
            auth=auth,
            http_client=http_client,
            name=name,
            max_message_size=max_message_size,
        )
    assert server is not None
    from .transports.memory import MemoryTransport

    return MemoryTransport(server)


def _is_sse_url(url: str) -> bool:
    """Does the URL name a legacy SSE endpoint (its path ends in ``/sse``)?"""
    return urlsplit(url).path.rstrip("/").endswith("/sse")


def _both_failed(
    url: str, first: Unreachable | HTTPErrorStatus, second: Unreachable | HTTPErrorStatus
) -> Unreachable | HTTPErrorStatus:
    """One error naming both attempts, of the kind of the last one."""
    if isinstance(first, Unreachable) and isinstance(second, Unreachable):
        return Unreachable(f"{second} (tried Streamable HTTP, then legacy HTTP+SSE)")
    # The URL is said once, up front: each attempt's error names it too (" from URL").
    first_text, second_text = (str(e).replace(f" from {url}", "") for e in (first, second))
    text = (
        f"cannot connect to {url} with Streamable HTTP ({first_text}) "
        f"nor legacy HTTP+SSE ({second_text})"
    )
    if isinstance(second, HTTPErrorStatus):
        return HTTPErrorStatus(text, status=second.status, code=second.code, data=second.data)
    return Unreachable(text)
