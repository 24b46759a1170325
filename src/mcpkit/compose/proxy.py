"""``proxy(target)``: a local server that serves what another MCP server has.

The proxy is an ordinary :class:`~mcpkit.server.server.MCPServer` with one
component source (:mod:`mcpkit.server.sources`): its listings, calls, reads,
prompt gets and completions go to the *upstream* server through a
:class:`~mcpkit.client.client.Client`.

- **One upstream session per downstream session.** The connection is opened on
  the downstream session's first request that needs it (one handshake), reused
  by every later request of that session, and closed when the session ends: a
  proxied call costs one hop, never a handshake. Stateless downstream traffic
  (2026-07-28 requests, stateless HTTP: a session per request) is served from a
  pool of upstream connections shared by every client, each carrying one
  request at a time, closed with the proxy's lifespan (:mod:`.upstream` says why).
- **Server→client requests flow down.** The upstream's elicitation, sampling
  and roots requests go to the downstream client (on the stream of the call
  being served) and its answers go back; a session's upstream connection
  declares the downstream client's own capabilities for them, and a downstream
  roots change is passed up.
- **Notifications flow down.** The upstream's ``list_changed`` and (for a
  subscribed URI) ``resources/updated`` reach the downstream session; progress
  of a call reaches the downstream request that asked for it (under its own
  progress token), and the upstream's log messages reach the downstream request
  being served (the downstream client's ``logging/setLevel`` is passed up).
  Subscriptions and cancellation flow up.
- **Eras are bridged both ways.** The upstream speaks the newest handshake
  revision unless ``upstream_version`` (or an ``mcpServers`` entry's
  ``protocol_version``) says otherwise: one ``initialize`` per upstream
  connection. A 2026-07-28 downstream served from a handshake upstream gets the
  upstream's server→client requests as input-required rounds (the proxy's
  handler asks through ``session.send_request``, as ``ctx.elicit`` does), also
  across the workers of a cluster, which replay the call from its
  ``requestState``; a handshake downstream served from a 2026-07-28 upstream
  gets the upstream's input requests as server→client requests (the upstream
  ``Client`` answers each round with its handlers). A result's era fields
  (``resultType``, caching hints, the server info in ``_meta``) are dropped,
  the proxy's session adds its own.
- **Errors keep their codes.** An upstream JSON-RPC error is the downstream
  error, code, message and data alike; an upstream that cannot be reached, went
  away or did not answer in time is a ``-32603`` error naming it, and the next
  request connects again. The upstream ``Client``'s bounds (message size,
  server requests at once, timeouts) protect the proxy from an upstream that
  answers garbage.

The targets are the ones a ``Client`` takes: a URL (Streamable HTTP, or legacy
SSE), a command line (stdio), an ``mcpServers`` entry as in a Claude Desktop
file (``{"command": ..., "args": [...]}``, ``{"url": ..., "headers": {...}}``),
another ``MCPServer`` (in memory), or a ``Client``, taken as a *template*: the
proxy opens its connections, one per downstream session and the pool's, as that
client would (:meth:`~mcpkit.client.client.Client.connection_options`), and never
uses or closes the client's own connection. A connection is one session of the
upstream, with one set of handlers; the proxy needs many, each answered by its own
downstream client, so sharing the given one would show one client another's
elicitation. A ``Client`` made with ``transport=`` is refused: a transport object
is one connection, with nothing to open again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import shlex
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import fields
from typing import Any, TypeAlias, cast

from ..client.client import Client
from ..client.config import load_config
from ..errors import INTERNAL_ERROR, ConfigurationError, MCPError, PeerTimeout, RemoteError
from ..protocol.envelope import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
)
from ..protocol.versions import LATEST_HANDSHAKE, REVISIONS
from ..server.middleware import CallNext, MiddlewareContext, for_methods
from ..server.request import Request
from ..server.server import MCPServer
from ..server.session import ServerSession
from ..server.stateless.listen import Listener
from .listening import LIST_KEYS, Following, follow_upstream, wants_list_changes
from .upstream import UPSTREAM_FAILURES, Upstream, UpstreamPool

__all__ = ["DEFAULT_LISTEN_CHECK", "DEFAULT_POOL_SIZE", "ProxySource", "ProxyTarget", "proxy"]

log = logging.getLogger("mcpkit.compose")

#: What ``proxy`` serves: a URL, a command line, an ``mcpServers`` entry, a server object
#: or a ``Client`` (a template of the proxy's connections).
ProxyTarget: TypeAlias = "str | Mapping[str, Any] | MCPServer | Client"

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
# Client options of an entry that a file cannot hold (load_config drops them) but a dict
# given to proxy() in code may: an httpx client of its own, a tracer, client extensions.
_FROM_CODE = ("http_client", "trace", "extensions")
_SUBSCRIBING = frozenset({"resources/subscribe", "resources/unsubscribe"})
# Client options an mcpServers entry may have that the proxy sets itself: what the
# upstream connection declares and where what it receives goes (see .upstream).
_PROXY_OWNS = frozenset(
    {
        "capabilities",
        "server_logs",
        "log_handler",
        "sampling_handler",
        "elicitation_handler",
        "roots",
    }
)
# A Client target's options that the proxy does not take: the above, what Upstream sets
# itself (callbacks, no cache), and the transport object (refused, see _from_client).
_NOT_FROM_CLIENT = _PROXY_OWNS | {
    "elicitation_modes",
    "on_list_changed",
    "on_resource_updated",
    "cache",
    "transport",
}
#: Upstream connections serving stateless downstream traffic at most, by default.
DEFAULT_POOL_SIZE = 32
#: Seconds between two checks of a connection following a downstream listen, by default.
DEFAULT_LISTEN_CHECK = 5.0


def client_options(target: ProxyTarget) -> dict[str, Any]:
    """The ``Client`` options reaching ``target``."""
    if isinstance(target, MCPServer):
        return {"server": target}
    if isinstance(target, Client):
        return _from_client(target)
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
        options = {
            f.name: getattr(config, f.name)
            for f in fields(config)
            if getattr(config, f.name) is not None and f.name not in _PROXY_OWNS
        }
        # Given in code, not read from a file: the options only code can give pass too.
        options.update({k: target[k] for k in _FROM_CODE if target.get(k) is not None})
        return options
    raise ConfigurationError(
        "proxy needs a URL, a command line, an mcpServers entry (dict), an MCPServer "
        f"or a Client, not {type(target).__name__}"
    )


def _from_client(client: Client) -> dict[str, Any]:
    """The options of the proxy's connections copied from ``client`` (a template):
    how it reaches its server, and its bounds and identity; its handlers and callbacks
    are the proxy's own (see ``_PROXY_OWNS``), its live connection stays its own."""
    options = client.connection_options()
    if options["transport"] is not None:
        raise ConfigurationError(
            "proxy cannot open connections like a Client made with transport=: a transport "
            "object is one connection, and the proxy opens one per downstream session; "
            "give the Client a command=, url= or server= instead"
        )
    return {k: v for k, v in options.items() if v is not None and k not in _NOT_FROM_CLIENT}


class ProxySource:
    """The component source of a proxy: an :class:`Upstream` per downstream session, and
    an :class:`UpstreamPool` for stateless downstream traffic."""

    kinds = _KINDS

    def __init__(
        self,
        server: MCPServer,
        options: dict[str, Any],
        *,
        label: str,
        pool_size: int,
        listen_check: float = DEFAULT_LISTEN_CHECK,
    ) -> None:
        self.server = server
        self.options = options
        self.label = label
        self.upstreams: weakref.WeakKeyDictionary[ServerSession, Upstream] = (
            weakref.WeakKeyDictionary()
        )
        self.pool = UpstreamPool(self, size=pool_size)
        # Every upstream of a session not yet closed: one whose session is gone without a
        # close (no transport said so) is still closed with the proxy's lifespan.
        self.open: set[Upstream] = set()
        self.closing: set[asyncio.Task[None]] = set()
        # The connections following a downstream subscriptions/listen (.listening).
        self.following: set[Following] = set()
        self.listen_check = listen_check
        # The list changes the pool hears also go to these (streams of a mounting server).
        self.list_hearers: set[Callable[[str], object]] = set()

    def upstream(self, session: ServerSession) -> Upstream:
        """The upstream of a session with a channel of its own (not a stateless one)."""
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
        if isinstance(exc, PeerTimeout):
            what = f"did not answer in time ({exc})"
        else:
            what = f"is unavailable: {type(exc).__name__}: {exc}"
        return MCPError(
            f"upstream server {self.label} {what}",
            code=INTERNAL_ERROR,
            data={"upstream": self.label},
        )

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", await self.through(session, None, kind))

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        if session.stateless and request.method in _SUBSCRIBING:
            # A session of one request hears no updates: nothing to follow upstream (a
            # pooled connection serves everyone, and would hold the subscription forever).
            return None
        return cast("dict[str, Any] | None", await self.through(session, request, None))

    async def through(
        self, session: ServerSession, request: Request | None, kind: str | None
    ) -> list[dict[str, Any]] | dict[str, Any] | None:
        """``request`` (or the listing of ``kind``) served by the upstream of ``session``.

        Written out rather than as a context manager: it runs on every proxied call.
        """
        if session.stateless:
            upstream = await self.pool.take(session, request)
            try:
                return await self.on(upstream, session, request, kind)
            finally:
                self.pool.give_back(upstream)
        upstream = self.upstream(session)
        if request is None:
            return await self.on(upstream, session, request, kind)
        upstream.serving.append(request)
        try:
            return await self.on(upstream, session, request, kind)
        finally:
            upstream.serving.remove(request)

    async def on(
        self, upstream: Upstream, session: ServerSession, request: Request | None, kind: str | None
    ) -> list[dict[str, Any]] | dict[str, Any] | None:
        """Serve on ``upstream``. One that fails (as opposed to answering with an error) is
        dropped, and the next request connects again; the downstream error names it."""
        client = await upstream.connected()
        try:
            if session.stateless:
                await upstream.follow_level(client, session)
            if request is None:
                assert kind is not None
                capability, listing = _LISTING[kind]
                if capability not in client.server_capabilities:
                    return []
                return await listing(client)  # every page
            result = await self.forward(client, request)
        except RemoteError as exc:
            if (
                request is not None
                and request.method == "completion/complete"
                and exc.code == -32601
            ):
                return None  # an upstream without completions: the proxy's own (none)
            raise
        except UPSTREAM_FAILURES as exc:
            await upstream.drop()
            raise self.failure(exc) from exc
        return _component_result(result) if result is not None else None

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
        # A stateless session lives for one request: the level it sets governs nothing more.
        if (
            ctx.method == "logging/setLevel"
            and isinstance(level, str)
            and not ctx.session.stateless
        ):
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

    def subscribed_as(self, session: ServerSession, uri: str, downstream: str) -> None:
        """``session`` subscribed to the upstream's ``uri`` by the name ``downstream`` (a
        server this proxy is mounted in names it under its namespaces): its updates go
        down under that name too (:class:`~.prefixed.SubscribedAs`)."""
        if not session.stateless:
            self.upstream(session).aliases.setdefault(uri, set()).add(downstream)

    async def listen(self, listener: Listener, granted: Mapping[str, Any]) -> None:
        """A downstream ``subscriptions/listen``: the upstream's list changes are heard
        through the pool (one connection opened if none is, its herald broadcasting to
        this server's streams), the stream's resource URIs followed on a connection of
        its own (:mod:`.listening`)."""
        uris = granted.get("resourceSubscriptions") or ()
        await self.follow(listener, granted, {u: u for u in uris if isinstance(u, str)})

    async def forward_listen(
        self, listener: Listener, granted: Mapping[str, Any], uris: Mapping[str, str]
    ) -> None:
        """The listen forwarder (:class:`~.prefixed.ListenForwarder`): a stream of a server
        this proxy is mounted in, at any depth, granted ``granted``; ``uris`` maps the
        upstream's URIs to the ones that stream knows them by (under the namespaces).

        Its list changes come from the pool's herald straight to the stream (the proxy's
        broadcast reaches this server's sessions, not the mounting server's), until the
        stream ends; its URIs are followed as for a listen of this server's own.
        """
        if wants_list_changes(granted):
            wanted = {
                f"notifications/{kind}/list_changed"
                for key, kind in LIST_KEYS.items()
                if granted.get(key) is True
            }

            def hear(method: str) -> None:
                if method in wanted:
                    listener.send(method)

            self.list_hearers.add(hear)
            listener.on_close(lambda: self.list_hearers.discard(hear))
        await self.follow(listener, granted, uris)

    async def follow(
        self, listener: Listener, granted: Mapping[str, Any], uris: Mapping[str, str]
    ) -> None:
        if wants_list_changes(granted):
            try:
                await self.pool.warm()
            except RemoteError:
                raise
            except MCPError as exc:  # down: acknowledged all the same, and once it is back
                # (keep_hearing revives the pool) every list is announced as changed
                log.warning("%s; its list changes are heard once it is back", exc)
            self.pool.keep_hearing(listener.on_close, self.listen_check)
        # The proxy's own resources win over the upstream's (as for a read): not followed.
        own = self.server.resources.static
        await follow_upstream(
            self,
            listener,
            uris={u: down for u, down in uris.items() if u not in own},
            following=self.following,
            closing=self.closing,
            check=self.listen_check,
        )

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
        following, self.following = self.following, set()
        await asyncio.gather(
            *(u.aclose() for u in upstreams),
            *(f.aclose() for f in following),
            self.pool.aclose(),
            *self.closing,
        )


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
    upstream_version: str | None = LATEST_HANDSHAKE,
    pool_size: int = DEFAULT_POOL_SIZE,
    listen_check: float = DEFAULT_LISTEN_CHECK,
) -> MCPServer:
    """A server serving what ``target`` serves (see the module docstring).

    ``target`` is a URL, a command line, an ``mcpServers`` entry, an
    ``MCPServer`` or a ``Client`` (a template: its own connection is left alone,
    see the module docstring); it is checked here, but not contacted until a downstream
    session needs it. The result is an ordinary ``MCPServer``: add tools,
    middleware or auth to it, mount it, or serve it on any transport. Its own
    components are served first; the upstream's come after them.

    ``upstream_version`` is the protocol revision the proxy asks of the upstream
    (``None``: the newest the upstream speaks, the ``Client``'s choice); an
    ``mcpServers`` entry's or a ``Client`` target's ``protocol_version`` wins. ``pool_size`` bounds the
    upstream connections serving stateless downstream traffic (each carries one
    request at a time; a request beyond them waits for one). ``listen_check`` is how
    often (seconds) a connection following a downstream ``subscriptions/listen`` checks
    that the upstream still follows it, and follows it again if not (:mod:`.listening`).
    """
    if upstream_version is not None and upstream_version not in REVISIONS:
        raise ConfigurationError(
            f"upstream_version must be one of {', '.join(REVISIONS)} or None, "
            f"not {upstream_version!r}"
        )
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
        raise ConfigurationError(f"pool_size must be a positive integer, not {pool_size!r}")
    if (
        isinstance(listen_check, bool)
        or not isinstance(listen_check, int | float)
        or not (listen_check > 0)
    ):
        raise ConfigurationError(f"listen_check must be a positive number, not {listen_check!r}")
    options = client_options(target)
    if upstream_version is not None:
        options.setdefault("protocol_version", upstream_version)
    server = MCPServer(name=name, version=version, instructions=instructions)
    command = options.get("command")
    label = repr(
        options.get("url")
        or (shlex.join([command, *options.get("args", ())]) if command else None)
        or getattr(options.get("server"), "name", None)
        or name
    )
    source = ProxySource(
        server, options, label=label, pool_size=pool_size, listen_check=listen_check
    )
    server.add_component_source(source)
    server.on_roots_changed(source.roots_changed)
    # Only in logging/setLevel's chain: every other request skips a step (a partial, as
    # a bound method takes no attributes).
    server.add_middleware(for_methods("logging/setLevel")(functools.partial(source.level_set)))

    @asynccontextmanager
    async def upstreams(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await source.aclose()

    server.add_lifespan(upstreams, label=f"proxy of {label}")
    return server
