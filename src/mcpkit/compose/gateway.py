"""``from_config``: one server in front of every server of an ``mcpServers`` file, each under its name.

A gateway is an ordinary :class:`~mcpkit.server.server.MCPServer` with one component
source (:mod:`mcpkit.server.sources`) holding a proxy (:class:`~.proxy.ProxySource`)
per configured server, its *upstream*. The rules:

- **Names.** The upstream ``github``'s tool ``search`` is served as ``github_search``,
  its prompt ``review`` as ``github_review``, its resource ``repo://x`` as
  ``repo://github/x``: the rules of :mod:`.naming`, as for a mount. A server's name
  in the file is its namespace, so it must be one (letters, digits and ``-``).
- **Start.** Lazy by default: an upstream is started (its process spawned, its URL
  connected, one ``initialize``) when a downstream session first needs it, and a
  session's first listing starts all of them at once, concurrently. With
  ``eager=True`` every upstream is started when the gateway starts (its lifespan):
  failures show at start-up, and that connection serves the stateless downstream
  traffic. Sessions of the handshake era still get upstream connections of their
  own, as with any proxy (:mod:`.proxy`: their elicitation, sampling and roots go
  to their own client).
- **Isolation.** An upstream that cannot be started or reached is *down*: one
  warning is logged, its components are absent from listings, a call to one of
  them is a ``-32603`` error naming it, and every other upstream is served. It is
  retried in the background ``retry_after`` seconds later (30 s by default, doubling
  on each failure up to 5 minutes); a request that needs it after that time tries
  too. When it is back, the gateway's clients are told with ``list_changed``.
  An upstream that answers a listing with an error is left out of that listing only.
- **Filters** per upstream: ``include={"github": ["search_*"]}`` serves only the tools
  whose own name matches one of the patterns (names or :mod:`fnmatch` globs),
  ``exclude=`` hides the matching ones (applied after ``include``). A pattern
  ``tag:NAME`` matches the tools an upstream tags ``NAME`` (:func:`entry_tags` reads
  them; a tool name cannot hold ``:``). A filtered-out tool is unknown: absent from
  listings, and a call to it fails as for any unknown tool.
- **Checked at once.** The file is read when ``from_config`` is called; a key no
  application defines (a misspelled ``comand``), a name that is not a namespace and
  a filter for a server the file lacks are errors naming it, all raised together.
"""

from __future__ import annotations

import asyncio
import difflib
import fnmatch
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Any, Final

from ..client.config import ServerConfig, load_config
from ..errors import INTERNAL_ERROR, ConfigurationError, ConnectionClosed, MCPError, RemoteError
from ..server.middleware import CallNext, MiddlewareContext, for_methods
from ..server.request import Request
from ..server.server import MCPServer
from ..server.session import ServerSession
from ..server.sourced_visibility import listed_tags
from ..server.stateless.listen import Listener
from .naming import namespace_problem, prefixed_uri
from .prefixed import namespace_of, own_params, prefixed_entries, prefixed_read, request_with
from .proxy import DEFAULT_POOL_SIZE, ProxySource

__all__ = ["ToolFilter", "entry_tags", "from_config"]

log = logging.getLogger("mcpkit.compose")

_KINDS: Final = frozenset({"tools", "resources", "resourceTemplates", "prompts", "completions"})
#: Longest wait between two retries of an upstream that stays down.
MAX_RETRY_AFTER: Final = 300.0
# The keys of an mcpServers entry: mcpkit's own (client/config.ServerConfig), the
# spellings other applications use for them (read by load_config), and the ones those
# applications keep for themselves (Claude Desktop, Cursor, VS Code, Cline, Windsurf).
_KNOWN_KEYS: Final = frozenset(f.name for f in fields(ServerConfig)) | {
    "type",
    "transport",
    "requestInit",
    "enableServerLogs",
    "disabled",
    "autoApprove",
    "alwaysAllow",
    "envFile",
    "description",
    "transportType",
    "dev",
}
_TOP_KEYS: Final = ("mcpServers", "servers")


#: The tags of a listed tool, what a ``tag:NAME`` filter pattern matches: ``_meta.tags``,
#: and ``_meta._fastmcp.tags`` where FastMCP servers publish theirs. The same reading as
#: the gateway's own rules (``gateway.disable(tags=...)``) make of its upstreams' entries.
entry_tags = listed_tags


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """Which of an upstream's tools the gateway serves (see the module docstring)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def by_tag(self) -> bool:
        """Whether a pattern names a tag (so a call needs the tool's listing entry)."""
        return any(p.startswith("tag:") for p in (*self.include, *self.exclude))

    def allows(self, name: str, tags: Collection[str] = ()) -> bool:
        """Whether the tool ``name`` (its own name, with ``tags``) is served."""
        if self.include and not _matches(self.include, name, tags):
            return False
        return not _matches(self.exclude, name, tags)


def _matches(patterns: Sequence[str], name: str, tags: Collection[str]) -> bool:
    for pattern in patterns:
        if pattern.startswith("tag:"):
            if pattern[4:] in tags:
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


class NamespacedProxy(ProxySource):
    """A proxy whose resources are served under a namespace (their updates too)."""

    def __init__(self, server: MCPServer, options: dict[str, Any], *, namespace: str) -> None:
        super().__init__(server, options, label=repr(namespace), pool_size=DEFAULT_POOL_SIZE)
        self.namespace = namespace

    def downstream_uri(self, uri: str) -> str:
        return prefixed_uri(self.namespace, uri) or uri


class Member:
    """One upstream of the gateway: its proxy, its filter, whether it is down."""

    def __init__(self, name: str, source: ProxySource, tool_filter: ToolFilter) -> None:
        self.name = name
        self.source = source
        self.filter = tool_filter
        #: time.monotonic() before which it is not tried again; None: not down.
        self.down_until: float | None = None
        self.wait = 0.0  # the current retry delay (doubles while it stays down)
        self.error = ""
        #: Tags of its tools, from the last listing (for ``tag:`` filters on a call).
        self.tags: dict[str, frozenset[str]] = {}
        self.retry: asyncio.Task[None] | None = None

    @property
    def resting(self) -> bool:
        """Down, and not yet due to be tried again."""
        return self.down_until is not None and time.monotonic() < self.down_until

    def unavailable(self) -> MCPError:
        wait = max(0.0, (self.down_until or 0) - time.monotonic())
        return MCPError(
            f"{self.error} (down; tried again in {wait:.0f} s)",
            code=INTERNAL_ERROR,
            data={"upstream": self.name},
        )


class GatewaySource:
    """The component source of a gateway: every upstream, each under its namespace."""

    kinds = _KINDS

    def __init__(self, server: MCPServer, members: dict[str, Member], *, retry_after: float):
        self.server = server
        self.members = members
        self.retry_after = retry_after
        self.announcing: set[asyncio.Task[None]] = set()

    # -- health ------------------------------------------------------------------------------
    def went_down(self, member: Member, exc: BaseException) -> None:
        if member.resting:  # another request found it down meanwhile: one wait, not two
            return
        first = member.down_until is None
        longest = max(MAX_RETRY_AFTER, self.retry_after)
        member.wait = self.retry_after if first else min(member.wait * 2, longest)
        member.down_until = time.monotonic() + member.wait
        # ProxySource.failure names the upstream already; anything else is named here.
        member.error = (
            str(exc)
            if isinstance(exc, MCPError)
            else f"upstream server {member.name!r} is unavailable: {type(exc).__name__}: {exc}"
        )
        if first:  # one warning per outage; the retries that fail again are debug
            log.warning(
                "gateway %r: %s; its components are not served, retried in %.0f s",
                self.server.name,
                member.error,
                member.wait,
            )
        else:
            log.debug("upstream server %r is still down: %s", member.name, exc)
        self.schedule_retry(member)

    def came_back(self, member: Member) -> None:
        if member.down_until is None:
            return
        member.down_until, member.wait, member.error = None, 0.0, ""
        log.info("upstream server %r of gateway %r is back", member.name, self.server.name)
        # Its background retry (not cancelled: it may be starting a process) sees it is
        # up when it wakes, and ends.
        loop = asyncio.get_running_loop()
        for kind in ("tools", "resources", "prompts"):  # its components reappear
            task = loop.create_task(self.server.broadcast(f"notifications/{kind}/list_changed"))
            self.announcing.add(task)
            task.add_done_callback(self.announcing.discard)

    def schedule_retry(self, member: Member) -> None:
        if member.retry is None or member.retry.done():
            member.retry = asyncio.get_running_loop().create_task(self.retried(member))

    async def retried(self, member: Member) -> None:
        """Try ``member`` again when its rest is over (the background retry)."""
        while member.down_until is not None:
            await asyncio.sleep(max(0.0, member.down_until - time.monotonic()))
            if member.down_until is None:
                return
            await self.start(member)

    async def start(self, member: Member) -> None:
        """Connect one of ``member``'s pooled upstreams (those of stateless traffic), which
        then serves the first stateless request; down on failure."""
        probe = self.server.create_session(stateless=True)
        pool = member.source.pool
        upstream = await pool.take(probe, None)
        try:
            await upstream.connected()
        except MCPError as exc:
            self.went_down(member, exc)
        else:
            self.came_back(member)
        finally:
            pool.give_back(upstream)

    # -- ComponentSource ---------------------------------------------------------------------
    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        members = [m for m in self.members.values() if not m.resting]
        listed = await asyncio.gather(*(self.listed(m, session, kind) for m in members))
        return [entry for entries in listed for entry in entries]

    async def listed(self, member: Member, session: ServerSession, kind: str) -> list[Any]:
        try:
            entries = await member.source.list_components(session, kind)
        except RemoteError as exc:  # it answered: this listing only
            log.warning("upstream server %r failed to list %s: %s", member.name, kind, exc)
            return []
        except MCPError as exc:  # ProxySource.failure: it cannot be started or reached
            self.went_down(member, exc)
            return []
        except ConnectionClosed:  # the downstream session closed meanwhile
            return []
        self.came_back(member)
        if kind == "tools":
            member.tags = {e["name"]: entry_tags(e) for e in entries if isinstance(e, dict)}
        return self.renamed(member, kind, entries)

    def renamed(self, member: Member, kind: str, entries: list[Any]) -> list[dict[str, Any]]:
        """``entries`` under ``member``'s namespace, without the tools its filter hides."""
        if kind != "tools":
            return prefixed_entries(member.name, kind, entries)

        def served(entry: dict[str, Any]) -> bool:
            return member.filter.allows(entry["name"], entry_tags(entry))

        return prefixed_entries(member.name, kind, entries, served)

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        routed = self.route(request.method, request.params)
        if routed is None:
            return None
        member, params = routed
        if request.method == "tools/call" and not await self.served_tool(
            member, session, params.get("name")
        ):
            return None  # filtered out: unknown, as the core says
        if member.resting:
            raise member.unavailable()
        try:
            result = await member.source.serve(session, request_with(request, params))
        except RemoteError:
            raise
        except MCPError as exc:
            if member.down_until is not None:  # it was due for a retry, and is still down
                self.went_down(member, exc)
            raise
        if request.method == "resources/read" and result is not None:
            return prefixed_read(member.name, result)
        return result

    async def served_tool(self, member: Member, session: ServerSession, name: Any) -> bool:
        if not isinstance(name, str):
            return False
        if not member.filter.by_tag:
            return member.filter.allows(name)
        if name not in member.tags and not member.resting:  # called before it was listed
            await self.listed(member, session, "tools")
        return member.filter.allows(name, member.tags.get(name, ()))

    def route(self, method: str, params: dict[str, Any]) -> tuple[Member, dict[str, Any]] | None:
        """The upstream a request is for, and its params under that upstream's names."""
        namespace = namespace_of(method, params)
        member = self.members.get(namespace) if namespace is not None else None
        own = own_params(member.name, method, params) if member is not None else None
        return None if member is None or own is None else (member, own)

    def subscribed_as(self, session: ServerSession, uri: str, downstream: str) -> None:
        """A server the gateway is mounted in subscribed ``session`` to ``uri`` as
        ``downstream``: the upstream it names is told (:class:`~.prefixed.SubscribedAs`)."""
        routed = self.route("resources/subscribe", {"uri": uri})
        if routed is not None:
            routed[0].source.subscribed_as(session, routed[1]["uri"], downstream)

    async def listen(self, listener: Listener, granted: Mapping[str, Any]) -> None:
        """A downstream ``subscriptions/listen``: each upstream follows its part (its list
        changes through its pool, its URIs under their own names on a connection of the
        stream's own); one that is down is left out, and announced when it is back."""
        uris = granted.get("resourceSubscriptions") or ()
        await self.followed(listener, granted, {u: u for u in uris}, forwarded=False)

    async def forward_listen(
        self, listener: Listener, granted: Mapping[str, Any], uris: Mapping[str, str]
    ) -> None:
        """The listen forwarder of a gateway mounted in another server
        (:class:`~.prefixed.ListenForwarder`): ``uris`` maps the gateway's URIs to the
        ones the stream knows them by; each upstream forwards its part."""
        await self.followed(listener, granted, uris, forwarded=True)

    async def followed(
        self,
        listener: Listener,
        granted: Mapping[str, Any],
        uris: Mapping[str, str],
        *,
        forwarded: bool,
    ) -> None:
        parts: dict[str, dict[str, str]] = {name: {} for name in self.members}
        for uri, down in uris.items():
            routed = self.route("resources/subscribe", {"uri": uri})
            if routed is not None:
                parts[routed[0].name][routed[1]["uri"]] = down

        async def follow(member: Member) -> None:
            source = member.source
            try:
                if forwarded:
                    await source.forward_listen(listener, granted, parts[member.name])
                else:
                    await source.follow(listener, granted, parts[member.name])
            except RemoteError as exc:
                log.warning("upstream server %r refused to listen: %s", member.name, exc)
            except MCPError as exc:  # ProxySource.failure: it cannot be started or reached
                self.went_down(member, exc)

        await asyncio.gather(*(follow(m) for m in self.members.values() if not m.resting))

    def session_closed(self, session: ServerSession) -> None:
        for member in self.members.values():
            member.source.session_closed(session)

    # -- the rest of a proxy's links (compose/proxy.py adds them to a proxy server) ------------
    async def level_set(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        """Middleware: a downstream ``logging/setLevel`` is passed to every upstream."""
        if ctx.method != "logging/setLevel":
            return await call_next(ctx)
        result = await call_next(ctx)

        async def done(_ctx: MiddlewareContext) -> dict[str, Any]:
            return result

        for member in self.members.values():
            if not member.resting:
                await member.source.level_set(ctx, done)
        return result

    async def roots_changed(self, session: ServerSession) -> None:
        for member in self.members.values():
            await member.source.roots_changed(session)

    async def aclose(self) -> None:
        """Stop the retries (a connection they were opening closes as it is cancelled,
        client.Client._open), then close every upstream connection."""
        retries = [m.retry for m in self.members.values() if m.retry is not None]
        for member in self.members.values():
            member.retry = None
        for task in retries:
            task.cancel()
        await asyncio.gather(*retries, return_exceptions=True)
        await asyncio.gather(*(m.source.aclose() for m in self.members.values()))


# -- reading the configuration ------------------------------------------------------------------


def _servers(config: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``mcpServers`` object of ``config`` (a path or the parsed JSON), keys checked."""
    if isinstance(config, Mapping):
        data: Any = config
    else:
        import json
        from pathlib import Path

        path = Path(config).expanduser()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigurationError(f"gateway configuration file not found: {path}") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigurationError(f"cannot read gateway configuration {path}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigurationError("a gateway configuration must be a JSON object")
    for key in _TOP_KEYS:
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise ConfigurationError(f"{key!r} must be an object of name → server")
            return servers
    near = [k for k in data if difflib.get_close_matches(str(k), _TOP_KEYS, n=1, cutoff=0.7)]
    if near:
        raise ConfigurationError(
            f"the gateway configuration has no 'mcpServers' object: is {near[0]!r} misspelled?"
        )
    raise ConfigurationError(
        "the gateway configuration needs an 'mcpServers' object of name → server, "
        f"found only {', '.join(map(repr, data)) or 'nothing'}"
    )


def _key_problems(servers: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for name, entry in servers.items():
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            continue  # skipped, as load_config skips it
        problem = namespace_problem(name)
        if problem is not None:
            problems.append(f"server {name!r}: its name is its namespace, and {problem}")
        if not isinstance(entry, Mapping):
            continue  # load_config names it
        for key in entry:
            if key not in _KNOWN_KEYS:
                near = difflib.get_close_matches(str(key), sorted(_KNOWN_KEYS), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                problems.append(f"server {name!r}: unknown key {key!r}{hint}")
    return problems


def _filters(
    names: Collection[str],
    include: Mapping[str, Sequence[str]] | None,
    exclude: Mapping[str, Sequence[str]] | None,
    problems: list[str],
) -> dict[str, ToolFilter]:
    patterns: dict[str, dict[str, tuple[str, ...]]] = {}
    for option, given in (("include", include), ("exclude", exclude)):
        for name, values in (given or {}).items():
            if name not in names:
                problems.append(
                    f"{option}: no server {name!r} in the configuration "
                    f"(servers: {', '.join(map(repr, sorted(names))) or 'none'})"
                )
            elif isinstance(values, str) or not all(isinstance(v, str) for v in values):
                problems.append(f"{option}[{name!r}] must be a list of names, globs or 'tag:…'")
            else:
                patterns.setdefault(name, {})[option] = tuple(values)
    return {name: ToolFilter(**patterns.get(name, {})) for name in names}


def from_config(
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    name: str = "gateway",
    version: str = "1.0.0",
    instructions: str | None = None,
    eager: bool = False,
    include: Mapping[str, Sequence[str]] | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    retry_after: float = 30.0,
    connect_timeout: float = 10.0,
) -> MCPServer:
    """A server serving every server of ``config`` under its name (module docstring).

    ``config`` is the path of a Claude Desktop-style JSON file or its parsed dict:
    ``{"mcpServers": {"name": {"command": ..., "args": [...]} | {"url": ...}}}``
    (``"servers"`` as VS Code writes it; entries as :func:`mcpkit.client.config.load_config`
    reads them, ``"disabled": true`` skipped). ``include``/``exclude`` map a server's
    name to tool name patterns. ``connect_timeout`` bounds an upstream's start (its
    ``initialize``) unless its entry sets its own: a hung upstream holds a first listing
    that long, then is down. The result is an ordinary ``MCPServer``: add tools,
    middleware or auth to it, mount it, serve it on any transport.
    """
    for option, value in (("retry_after", retry_after), ("connect_timeout", connect_timeout)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigurationError(f"{option} must be a positive number of seconds")
    servers = _servers(config)
    problems = _key_problems(servers)
    filters = _filters(list(servers), include, exclude, problems)
    if problems:
        raise ConfigurationError(
            "invalid gateway configuration:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    configs = load_config({"mcpServers": servers})  # the lenient reading of a shared file
    server = MCPServer(name=name, version=version, instructions=instructions)
    members = {
        upstream: Member(
            upstream,
            NamespacedProxy(
                server,
                {"connect_timeout": connect_timeout, **_options(parsed)},
                namespace=upstream,
            ),
            filters[upstream],
        )
        for upstream, parsed in configs.items()
    }
    source = GatewaySource(server, members, retry_after=float(retry_after))
    server.add_component_source(source)
    server.on_roots_changed(source.roots_changed)
    # Only in logging/setLevel's chain: every other request skips a step (a partial, as
    # a bound method takes no attributes).
    server.add_middleware(for_methods("logging/setLevel")(functools.partial(source.level_set)))

    @asynccontextmanager
    async def upstreams(_server: MCPServer) -> AsyncIterator[None]:
        if eager:
            await asyncio.gather(*(source.start(m) for m in members.values()))
        try:
            yield
        finally:
            await source.aclose()

    server.add_lifespan(upstreams, label=f"gateway {name!r}")
    return server


# Options the proxy sets on its upstream clients itself (compose/proxy.py, Upstream).
_PROXY_SETS: Final = frozenset({"server_logs", "log_handler"})


def _options(config: ServerConfig) -> dict[str, Any]:
    """The ``Client`` options of one parsed entry: those it sets (not its defaults)."""
    return {
        f.name: getattr(config, f.name)
        for f in fields(config)
        if f.name not in _PROXY_SETS and getattr(config, f.name) != f.default
    }
