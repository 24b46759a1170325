"""``proxy(target)``: a local server that serves what another MCP server has.

The proxy is an ordinary :class:`~mcpkit.server.server.MCPServer` with one
component source (:mod:`mcpkit.server.sources`): its listings, calls, reads,
prompt gets and completions go to the *upstream* server through a
:class:`~mcpkit.client.client.Client`.

- **One upstream session per downstream session.** The connection is opened on
  the downstream session's first request that needs it (one handshake), reused
  by every later request of that session, and closed when the session ends: a
  proxied call costs one hop, never a handshake. Stateless downstream traffic
  (2026-07-28 requests, stateless HTTP: a session per request) shares one
  upstream connection instead, closed with the proxy's lifespan.
- **Server→client requests flow down.** The upstream's elicitation, sampling
  and roots requests go to the downstream client (on the stream of the call
  being served) and its answers go back; the upstream connection declares the
  downstream client's own capabilities for them, and a downstream roots change
  is passed up. The shared upstream of stateless traffic declares none.
- **Notifications flow down.** The upstream's ``list_changed`` and (for a
  subscribed URI) ``resources/updated`` reach the downstream session; progress of a call reaches the downstream request that
  asked for it (under its own progress token), and the upstream's log messages
  reach the downstream request being served (the downstream client's
  ``logging/setLevel`` is passed up; the shared upstream's logs go nowhere, as
  they name no request and could reach another client). Subscriptions and cancellation flow up.
- **The upstream speaks the handshake era** (the newest handshake revision)
  unless an ``mcpServers`` entry pins ``protocol_version``: one ``initialize``
  per upstream session. Bridging eras (a 2026-07-28 downstream served from a
  handshake upstream with input rounds, and the reverse) is a later step; a
  result's era fields (``resultType``, caching hints, the server info in
  ``_meta``) are dropped, the proxy's session adds its own.
- **Errors keep their codes.** An upstream JSON-RPC error is the downstream
  error, code, message and data alike; an upstream that cannot be reached or
  went away is a ``-32603`` error naming it, and the next request connects again.

The targets are the ones a ``Client`` takes: a URL (Streamable HTTP, or legacy
SSE), a command line (stdio), an ``mcpServers`` entry as in a Claude Desktop
file (``{"command": ..., "args": [...]}``, ``{"url": ..., "headers": {...}}``)
or another ``MCPServer`` (in memory).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import shlex
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import fields
from typing import Any, TypeAlias

from ..client.client import Client
from ..client.config import load_config
from ..errors import (
    INTERNAL_ERROR,
    ConfigurationError,
    ConnectionClosed,
    MCPError,
    PeerTimeout,
    RemoteError,
)
from ..protocol.envelope import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
)
from ..protocol.versions import LATEST_HANDSHAKE
from ..server.middleware import CallNext, MiddlewareContext
from ..server.request import Request
from ..server.server import MCPServer
from ..server.session import ServerSession

__all__ = ["ProxySource", "ProxyTarget", "proxy"]

log = logging.getLogger("mcpkit.compose")

#: What ``proxy`` serves: a URL, a command line, an ``mcpServers`` entry or a server object.
ProxyTarget: TypeAlias = "str | Mapping[str, Any] | MCPServer"

_KINDS = frozenset({"tools", "resources", "resourceTemplates", "prompts", "completions"})
# The capability an upstream must declare for each listing (basic/lifecycle § capabilities).
_LISTING = {
    "tools": ("tools", Client.list_tools),
    "resources": ("resources", Client.list_resources),
    "resourceTemplates": ("resources", Client.list_resource_templates),
    "prompts": ("prompts", Client.list_prompts),
}
# What a 2026-07-28 upstream adds to a result that belongs to its own answer, not to the
# component: the proxy's session completes the downstream result for its own era.
_ERA_FIELDS = frozenset({"resultType", "ttlMs", "cacheScope"})
# A request's _meta keys that belong to its hop (2026-07-28 envelope; the progress token,
# replaced by the upstream client's own): never passed up.
_HOP_META = frozenset(
    {"progressToken", PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL}
)
# Failures of the upstream itself (as opposed to its JSON-RPC answers).
_UPSTREAM_FAILURES = (ConnectionClosed, PeerTimeout, OSError)


def client_options(target: ProxyTarget) -> dict[str, Any]:
    """The ``Client`` options reaching ``target``."""
    if isinstance(target, MCPServer):
        return {"server": target}
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return {"url": target}
        words = shlex.split(target)
        if not words:
            raise ConfigurationError("proxy: the target command is empty")
        return {"command": words[0], "args": words[1:]}
    if isinstance(target, Mapping):
        # The lenient reading of a configuration file's entry (`type`, `requestInit`, ...).
        config = load_config({"mcpServers": {"upstream": dict(target)}})["upstream"]
        return {
            f.name: getattr(config, f.name)
            for f in fields(config)
            if getattr(config, f.name) is not None
        }
    raise ConfigurationError(
        "proxy needs a URL, a command line, an mcpServers entry (dict) or an MCPServer, "
        f"not {type(target).__name__}"
    )


class Upstream:
    """The upstream connection of one downstream session (or of the stateless traffic)."""

    def __init__(self, source: ProxySource, session: ServerSession | None) -> None:
        self.source = source
        self.session = weakref.ref(session) if session is not None else None
        self.client: Client | None = None
        self.lock = asyncio.Lock()
        self.closed = False
        #: The log level the downstream client set (None: never set), passed up.
        self.level: str | None = None
        #: Downstream requests being served through it, latest last (where logs go).
        self.serving: list[Request] = []

    async def connected(self) -> Client:
        """The live client, connecting (once, however many requests wait) when needed."""
        client = self.client
        if client is not None and client.connected:
            return client
        async with self.lock:
            if self.client is not None and not self.client.connected:
                await self.drop()
            if self.client is None:
                if self.closed:
                    raise ConnectionClosed("the downstream session was closed")
                client = Client(
                    **{"protocol_version": LATEST_HANDSHAKE, **self.source.options},
                    **self.back_channel(),
                    on_list_changed=self.list_changed,
                    on_resource_updated=self.resource_updated,
                    log_handler=self.logged,
                    server_logs=False,
                    cache=False,  # the proxy's own caching hints apply downstream
                )
                try:
                    await client.connect()
                except _UPSTREAM_FAILURES as exc:
                    raise self.source.failure(exc) from exc
                except MCPError:
                    raise
                except Exception as exc:  # a command that cannot start, a bad URL, ...
                    raise self.source.failure(exc) from exc
                self.client = client
                if self.closed:  # the session ended while we connected
                    await self.drop()
                    raise ConnectionClosed("the downstream session was closed")
                if self.level is not None:
                    await self.pass_level(client)
            return self.client

    def back_channel(self) -> dict[str, Any]:
        """Handlers passing the upstream's requests to the downstream client: only for what
        that client declared, so that the upstream sees the same capabilities."""
        session = self.session() if self.session is not None else None
        if session is None:  # the shared upstream: no one client to ask
            return {}
        caps = session.client_capabilities
        out: dict[str, Any] = {}
        elicitation = caps.get("elicitation")
        if isinstance(elicitation, dict):
            # 2025-11-25 client/elicitation § capabilities: {} means form only.
            modes = tuple(m for m in ("form", "url") if m in elicitation) or ("form",)
            out["elicitation_handler"] = functools.partial(self.ask, "elicitation/create")
            out["elicitation_modes"] = modes
        if "sampling" in caps:
            out["sampling_handler"] = functools.partial(self.ask, "sampling/createMessage")
        if "roots" in caps:
            out["roots"] = self.roots
        return out

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send the upstream's ``method`` request to the downstream client; its answer."""
        session = self.session() if self.session is not None else None
        if session is None:
            raise ConnectionClosed("the downstream session was closed")
        # On the stream of the request being served, where the client expects it
        # (Streamable HTTP: requests related to a call go on that call's stream).
        request = self.serving[-1] if self.serving else None
        return await session.send_request(method, params, request)

    async def roots(self) -> list[dict[str, Any]]:
        roots = (await self.ask("roots/list", {})).get("roots")
        return [r for r in roots if isinstance(r, dict)] if isinstance(roots, list) else []

    async def pass_level(self, client: Client) -> None:
        """Ask the upstream for the downstream client's log level (when it logs at all)."""
        if self.level is not None and "logging" in client.server_capabilities:
            try:
                await client.set_logging_level(self.level)
            except RemoteError as exc:  # its refusal does not fail the downstream request
                log.debug(
                    "upstream of proxy %r refused level %s: %s", self.source.label, self.level, exc
                )

    async def drop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            try:
                await client.aclose()
            except Exception as exc:  # it is going away anyway
                log.debug("closing the upstream of proxy %r: %s", self.source.server.name, exc)

    async def aclose(self) -> None:
        self.closed = True
        async with self.lock:
            await self.drop()

    async def list_changed(self, kind: str) -> None:
        method = f"notifications/{kind}/list_changed"
        session = self.session() if self.session is not None else None
        if session is not None:
            await session.notify(method)
        elif self.session is None:  # the shared upstream: every live downstream session
            await self.source.server.broadcast(method)

    async def resource_updated(self, uri: str) -> None:
        uri = self.source.downstream_uri(uri)
        session = self.session() if self.session is not None else None
        if session is not None and uri in session.subscriptions:
            await session.notify("notifications/resources/updated", {"uri": uri})

    async def logged(self, params: dict[str, Any]) -> None:
        if self.session is None:
            # The shared upstream serves many clients, and a log message names no
            # request: passing it down could tell one client of another's call.
            return
        session = self.session()
        if session is None:
            return
        request = self.serving[-1] if self.serving else None
        level, logger = params.get("level"), params.get("logger")
        try:
            await session.log(
                request,
                level if isinstance(level, str) else "info",
                params.get("data"),
                logger=logger if isinstance(logger, str) else None,
            )
        except ValueError:  # a level the upstream made up: sent as info
            await session.log(request, "info", params.get("data"))


class ProxySource:
    """The component source of a proxy: an :class:`Upstream` per downstream session."""

    kinds = _KINDS

    def __init__(self, server: MCPServer, options: dict[str, Any], *, label: str) -> None:
        self.server = server
        self.options = options
        self.label = label
        self.upstreams: weakref.WeakKeyDictionary[ServerSession, Upstream] = (
            weakref.WeakKeyDictionary()
        )
        self.shared: Upstream | None = None
        # Every upstream not yet closed: one whose session is gone without a close (no
        # transport said so) is still closed with the proxy's lifespan.
        self.open: set[Upstream] = set()
        self.closing: set[asyncio.Task[None]] = set()

    def upstream(self, session: ServerSession) -> Upstream:
        if session.stateless:
            if self.shared is None:
                self.shared = Upstream(self, None)
                self.open.add(self.shared)
            return self.shared
        upstream = self.upstreams.get(session)
        if upstream is None:
            upstream = self.upstreams[session] = Upstream(self, session)
            self.open.add(upstream)
        return upstream

    def downstream_uri(self, uri: str) -> str:
        """The URI downstream clients know the upstream's resource ``uri`` by: the same
        here; a gateway (:mod:`.gateway`) serves it under a namespace."""
        return uri

    def failure(self, exc: BaseException) -> MCPError:
        """The downstream error for an upstream that failed (not one that answered)."""
        return MCPError(
            f"upstream server {self.label} is unavailable: {type(exc).__name__}: {exc}",
            code=INTERNAL_ERROR,
            data={"upstream": self.label},
        )

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        upstream = self.upstream(session)
        client = await upstream.connected()
        capability, listing = _LISTING[kind]
        if capability not in client.server_capabilities:
            return []
        try:
            return await listing(client)  # every page
        except _UPSTREAM_FAILURES as exc:
            await upstream.drop()
            raise self.failure(exc) from exc

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        upstream = self.upstream(session)
        client = await upstream.connected()
        upstream.serving.append(request)
        try:
            result = await self.forward(client, request)
            return _component_result(result) if result is not None else None
        except RemoteError as exc:
            if request.method == "completion/complete" and exc.code == -32601:
                return None  # an upstream without completions: the proxy's own (none)
            raise
        except _UPSTREAM_FAILURES as exc:
            await upstream.drop()
            raise self.failure(exc) from exc
        finally:
            upstream.serving.remove(request)

    async def forward(self, client: Client, request: Request) -> dict[str, Any] | None:
        params = request.params
        # Asked for only when the downstream request has a token: the upstream's progress
        # goes out under that token (basic/utilities/progress), the client's own upstream.
        progress = request.progress if request.progress_token is not None else None
        method = request.method
        if method == "tools/call":
            meta = {k: v for k, v in request.meta.items() if k not in _HOP_META}
            return await client.call_tool(
                params.get("name"),  # type: ignore[arg-type]  # the upstream checks it
                params.get("arguments"),
                progress=progress,
                meta=meta or None,
            )
        if method == "resources/read":
            return await client.read_resource(params["uri"], progress=progress)
        if method == "prompts/get":
            return await client.get_prompt(
                params["name"],
                params.get("arguments"),
                version=params.get("version"),
                progress=progress,
            )
        if method == "completion/complete":
            return await client.request(method, _without_meta(params))
        if method in ("resources/subscribe", "resources/unsubscribe"):
            resources = client.server_capabilities.get("resources")
            if not isinstance(resources, dict) or not resources.get("subscribe"):
                return None  # the upstream has no updates to follow
            if method == "resources/subscribe":
                await client.subscribe_resource(params["uri"])
            else:
                await client.unsubscribe_resource(params["uri"])
            return {}
        return None

    async def level_set(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        """Middleware: a downstream ``logging/setLevel`` is passed up (now, or on connect)."""
        result = await call_next(ctx)
        level = ctx.params.get("level")
        if ctx.method == "logging/setLevel" and isinstance(level, str):
            upstream = self.upstream(ctx.session)
            upstream.level = level
            client = upstream.client
            if client is not None and client.connected:
                await upstream.pass_level(client)
        return result

    async def roots_changed(self, session: ServerSession) -> None:
        """The downstream client's roots changed: so did the upstream client's."""
        upstream = self.upstreams.get(session)
        client = upstream.client if upstream is not None else None
        if client is not None and client.connected:
            await client.notify("notifications/roots/list_changed")

    def session_closed(self, session: ServerSession) -> None:
        upstream = self.upstreams.pop(session, None)
        if upstream is not None:
            self.open.discard(upstream)
            task = asyncio.get_running_loop().create_task(upstream.aclose())
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)

    async def aclose(self) -> None:
        """Close every upstream connection (the proxy's lifespan ends)."""
        upstreams, self.open = self.open, set()
        self.upstreams.clear()
        self.shared = None
        await asyncio.gather(*(u.aclose() for u in upstreams), *self.closing)


def _component_result(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without what its era's envelope added (see ``_ERA_FIELDS``)."""
    meta = result.get("_meta")
    served_by = isinstance(meta, dict) and SERVER_INFO in meta
    if not served_by and not _ERA_FIELDS.intersection(result):
        return result
    out = {k: v for k, v in result.items() if k not in _ERA_FIELDS}
    if served_by and isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k != SERVER_INFO}
        if kept:
            out["_meta"] = kept
        else:
            del out["_meta"]
    return out


def _without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "_meta"}


def proxy(
    target: ProxyTarget,
    *,
    name: str = "proxy",
    version: str = "1.0.0",
    instructions: str | None = None,
) -> MCPServer:
    """A server serving what ``target`` serves (see the module docstring).

    ``target`` is a URL, a command line, an ``mcpServers`` entry or an
    ``MCPServer``; it is checked here, but not contacted until a downstream
    session needs it. The result is an ordinary ``MCPServer``: add tools,
    middleware or auth to it, mount it, or serve it on any transport. Its own
    components are served first; the upstream's come after them.
    """
    options = client_options(target)
    server = MCPServer(name=name, version=version, instructions=instructions)
    label = repr(
        options.get("url") or options.get("command") or getattr(target, "name", None) or name
    )
    source = ProxySource(server, options, label=label)
    server.add_component_source(source)
    server.on_roots_changed(source.roots_changed)
    server.add_middleware(source.level_set)

    @asynccontextmanager
    async def upstreams(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await source.aclose()

    server.add_lifespan(upstreams, label=f"proxy of {label}")
    return server
