"""Visibility: which tools, resources, templates and prompts a caller sees and may use.

A component is *visible* unless a rule hides it. Rules enable or disable
components by key (a tool's or prompt's name, a resource's URI, a template's URI
template) or by tag (``tags=`` at registration), for some kinds of component.
Among the rules that match a component, the latest one wins; a caller's own rules
(one session's, or on 2026-07-28 one principal's) win over the server's.

- ``MCPServer(include_tags=..., exclude_tags=...)`` and ``enabled=False`` at
  registration are the server's first rules; ``server.enable(...)`` and
  ``server.disable(...)`` add more at run time and tell every session
  (``notifications/*/list_changed``).
- ``await ctx.enable_components(...)``, ``ctx.disable_components(...)`` and
  ``ctx.reset_visibility()`` change what the *caller* sees: its session on the
  handshake era (held on ``ServerSession.visibility``), its principal on
  2026-07-28 and on stateless HTTP, where no session outlives a request (kept in
  the server store's ``visibility``, so every node of a cluster agrees).

A hidden component is left out of the listings and refused when called, read or
got, with an error that says it is disabled; so is a completion of its arguments
(:func:`.sourced_visibility.refuse_completion`). The rules also hold for what component
sources serve (a proxy's upstream: :mod:`.sourced_visibility`); a mount hides on the
parent what the child's own rules hide (``Visibility.withheld``, kept by
``mcpkit.compose.mount`` through :meth:`Visibility.add_listener`), and a session's
rules are part of its record in a cluster (``SessionRecord.visibility``).

A server without rules pays one attribute test per list and call
(``Visibility.active``); the server's own rules are applied once to the cached
``tools/list`` and cost a dict lookup per call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from ..errors import ConfigurationError, ToolError
from ..stores.visibility import MemoryVisibilityStore, VisibilityStore
from .stateless.request_state import principal_of

if TYPE_CHECKING:
    from .request import Request
    from .server import MCPServer
    from .session import ServerSession

__all__ = [
    "KINDS",
    "ContextVisibility",
    "Keep",
    "ServerVisibility",
    "Visibility",
    "VisibilityRules",
    "checked_tags",
]

#: The kinds of component a rule may name.
KINDS: Final = frozenset({"tools", "resources", "templates", "prompts"})
_LIST_CHANGED: Final = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "templates": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}
_MAX_CACHED = 10_000  # principals whose rules a process remembers

#: ``keep(kind, key, tags)``: whether a listing or a read keeps that component.
Keep: TypeAlias = Callable[[str, str, frozenset[str]], bool]


def checked_tags(where: str, tags: Any, problems: list[str]) -> frozenset[str]:
    """``tags`` as a frozenset of strings; a problem naming ``where`` otherwise."""
    if tags is None:
        return frozenset()
    if isinstance(tags, str) or not isinstance(tags, Collection):
        problems.append(f"{where}: tags must be a set of strings, not {type(tags).__name__}")
        return frozenset()
    bad = [t for t in tags if not isinstance(t, str) or not t]
    if bad:
        problems.append(f"{where}: tags must be non-empty strings, not {bad[0]!r}")
    return frozenset(t for t in tags if isinstance(t, str) and t)


def _kinds(components: Iterable[str] | None) -> frozenset[str]:
    if components is None:
        return KINDS
    kinds = frozenset([components] if isinstance(components, str) else components)
    unknown = sorted(kinds - KINDS)
    if unknown:
        raise ConfigurationError(
            f"unknown component kind(s) {unknown}; use {', '.join(sorted(KINDS))}"
        )
    return kinds


class VisibilityRules:
    """Enable and disable rules; among those matching a component, the latest wins."""

    __slots__ = ("by_key", "by_tag", "seq")

    def __init__(self) -> None:
        self.seq = 0
        #: (kind, key) -> (seq, enabled)
        self.by_key: dict[tuple[str, str], tuple[int, bool]] = {}
        #: (seq, tags or None for every component, kinds, enabled), oldest first
        self.by_tag: list[tuple[int, frozenset[str] | None, frozenset[str], bool]] = []

    def __bool__(self) -> bool:
        return bool(self.by_key or self.by_tag)

    def add(
        self,
        enabled: bool,
        keys: Iterable[str] = (),
        tags: Iterable[str] | None = (),
        kinds: frozenset[str] = KINDS,
    ) -> None:
        """One rule: ``keys`` and components with any of ``tags`` (None: every
        component) of ``kinds`` are enabled or disabled from now on."""
        self.seq += 1
        for kind in kinds:
            for key in keys:
                self.by_key[(kind, key)] = (self.seq, enabled)
        if tags is None or tags:
            tagged = None if tags is None else frozenset(tags)
            # A rule for the same tags and kinds replaces the older one: toggling a tag
            # back and forth keeps one rule, not a growing list.
            self.by_tag = [r for r in self.by_tag if (r[1], r[2]) != (tagged, kinds)]
            self.by_tag.append((self.seq, tagged, kinds, enabled))

    def decide(self, kind: str, key: str, tags: frozenset[str]) -> bool | None:
        """Whether the latest matching rule enables the component; None: no rule matches."""
        seq, verdict = self.by_key.get((kind, key), (-1, None))
        for rule_seq, tagged, kinds, enabled in self.by_tag:
            if rule_seq > seq and kind in kinds and (tagged is None or not tagged.isdisjoint(tags)):
                seq, verdict = rule_seq, enabled
        return verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "s": self.seq,
            "k": [[kind, key, seq, on] for (kind, key), (seq, on) in self.by_key.items()],
            "t": [
                [s, None if t is None else sorted(t), sorted(k), on] for s, t, k, on in self.by_tag
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VisibilityRules:
        rules = cls()
        rules.seq = int(data.get("s", 0))
        for kind, key, seq, on in data.get("k", ()):
            rules.by_key[(str(kind), str(key))] = (int(seq), bool(on))
        for seq, tags, kinds, on in data.get("t", ()):
            tagged = None if tags is None else frozenset(map(str, tags))
            rules.by_tag.append((int(seq), tagged, frozenset(map(str, kinds)), bool(on)))
        return rules


class Visibility:
    """``server.visibility``: the server's rules and the callers' own (see the module doc)."""

    def __init__(
        self,
        server: MCPServer,
        include_tags: Collection[str] | None = None,
        exclude_tags: Collection[str] | None = None,
    ) -> None:
        self._server = server
        #: The server's own rules (every caller's, unless the caller's own say otherwise).
        self.rules = VisibilityRules()
        problems: list[str] = []
        include = checked_tags("include_tags", include_tags, problems)
        exclude = checked_tags("exclude_tags", exclude_tags, problems)
        if problems:
            raise ConfigurationError("; ".join(problems))
        if include:  # an allow-list: hide everything, then show what has one of the tags
            self.rules.add(False, tags=None)
            self.rules.add(True, tags=include)
        if exclude:
            self.rules.add(False, tags=exclude)
        #: Callers may have rules of their own: look for them on each list and call.
        self.scoped = False
        #: Anything to check at all (read on every list and call: a plain attribute).
        self.active = bool(self.rules)
        self._local_store: VisibilityStore = MemoryVisibilityStore()
        self._cache: dict[str, VisibilityRules | None] = {}
        #: (kind, key) of the components hidden from every caller whatever the server's
        #: rules say: a mounted child's, which its own rules hide (compose/mount.py).
        self.withheld: set[tuple[str, str]] = set()
        self._listeners: list[Callable[[frozenset[str]], None]] = []
        #: (kind, the server's key) of a mounted server's tool, resource, template or
        #: prompt -> the server's keys for a key that component's function names (its own
        #: server's name or URI): what ``ctx.disable_components`` there means here
        #: (compose/mount.py keeps it).
        self.mounted_keys: dict[tuple[str, str], Callable[[str], list[str]]] = {}
        #: (kind, key) -> tags of what component sources listed (.sourced_visibility).
        self.sourced_tags: dict[tuple[str, str], frozenset[str]] = {}

    @property
    def store(self) -> VisibilityStore:
        """Where principals' rules are kept: the server store's ``visibility`` when it has
        one (``RedisStore``: shared by a cluster), else this process's memory."""
        shared = getattr(self._server.store, "visibility", None)
        return shared if isinstance(shared, VisibilityStore) else self._local_store

    def share(self) -> None:
        """The server got a store other processes share: their callers' rules may exist."""
        if getattr(self._server.store, "visibility", None) is not None:
            self.scoped = self.active = True

    def visible(
        self, kind: str, key: str, tags: frozenset[str], own: VisibilityRules | None
    ) -> bool:
        """Whether a component is visible to a caller with rules ``own`` (None: none)."""
        if own is not None:
            verdict = own.decide(kind, key, tags)
            if verdict is not None:
                return verdict
        if self.withheld and (kind, key) in self.withheld:
            return False
        return self.rules.decide(kind, key, tags) is not False

    @property
    def hides_any(self) -> bool:
        """Whether anything may be hidden from a caller without rules of its own."""
        return bool(self.rules or self.withheld)

    async def own_rules(
        self, session: ServerSession, req: Request | None
    ) -> VisibilityRules | None:
        """The rules of the caller of ``req`` on ``session``: the session's, or on a
        request that has no session of its own, its principal's (None: none)."""
        if not self.scoped:
            return None
        if not _sessionless(session):
            return session.visibility
        principal = principal_of(req.auth_info) if req is not None else None
        if principal is None:
            return None
        if principal in self._cache:
            return self._cache[principal]
        data = await self.store.get(principal)
        rules = VisibilityRules.from_json(data) if data else None
        if len(self._cache) >= _MAX_CACHED:
            self._cache.clear()
        self._cache[principal] = rules
        return rules

    async def keeper(self, session: ServerSession, req: Request | None) -> Keep | None:
        """The filter of the listings and reads for this caller; None: nothing is hidden."""
        if not self.active:
            return None
        own = await self.own_rules(session, req)
        if own is None and not self.hides_any:
            return None
        visible = self.visible
        return lambda kind, key, tags: visible(kind, key, tags, own)

    def disable_at_registration(self, kind: str, key: str) -> None:
        """``enabled=False`` when ``key`` was registered: a rule of the server's own."""
        self.rules.add(False, (key,), (), frozenset({kind}))
        self.active = True

    def uncache(self, principal: str) -> None:
        """Read ``principal``'s rules from the store again on next use."""
        self._cache.pop(principal, None)

    async def refuse_hidden(
        self, session: ServerSession, req: Request | None, kind: str, key: str, tags: frozenset[str]
    ) -> bool:
        """Whether the component is hidden from this caller (the handlers refuse it then)."""
        return not self.visible(kind, key, tags, await self.own_rules(session, req))

    def forget(self, principal: object) -> None:
        """Another process changed ``principal``'s rules: read them again on next use."""
        self.scoped = self.active = True
        if isinstance(principal, str):
            self._cache.pop(principal, None)

    def changed(self) -> None:
        """The server's rules changed: the cached listings are stale."""
        self.active = self.hides_any or self.scoped
        self._server.tools.refresh_hidden()

    def withhold(self, kind: str, key: str, hidden: bool) -> bool:
        """Hide ``key`` of ``kind`` from every caller (or stop); whether that changed.
        The caller refreshes the listings (:meth:`changed`) once it is done."""
        entry = (kind, key)
        if hidden == (entry in self.withheld):
            return False
        if hidden:
            self.withheld.add(entry)
            self.active = True
        else:
            self.withheld.discard(entry)
        return True

    def add_listener(self, listener: Callable[[frozenset[str]], None]) -> None:
        """Call ``listener(kinds)`` after each change of what the server hides from
        everyone (``server.enable``/``disable``, a mounted server's rules), ``kinds`` the
        kinds of component it may concern: how a mount follows its child's rules."""
        self._listeners.append(listener)

    def notify_listeners(self, kinds: frozenset[str]) -> None:
        for listener in list(self._listeners):
            listener(kinds)


def _sessionless(session: ServerSession) -> bool:
    # 2026-07-28 requests, and stateless HTTP of the handshake era, get a session per request.
    return session.stateless or session.revision.era == "stateless"


def _announce(server: MCPServer, kinds: frozenset[str], session: ServerSession | None) -> None:
    """Send the list_changed notifications of ``kinds``: to ``session``, or to every session."""
    methods = sorted({_LIST_CHANGED[k] for k in kinds})
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # nothing is serving: no session could hear it
    for method in methods:
        send = session.notify(method) if session is not None else server.broadcast(method)
        task = loop.create_task(send)
        _pending.add(task)
        task.add_done_callback(_pending.discard)


_pending: set[asyncio.Task[Any]] = set()


class ServerVisibility:
    """Mixed into ``MCPServer``: ``enable``, ``disable`` and their per-caller forms."""

    visibility: Visibility

    def enable(
        self, *keys: str, tags: Collection[str] = (), components: Collection[str] | None = None
    ) -> None:
        """Show the components named ``keys`` (names; URIs for resources) and those with
        any of ``tags``, of ``components`` kinds (default: all), to every caller."""
        self._set_rule(True, keys, tags, components)

    def disable(
        self, *keys: str, tags: Collection[str] = (), components: Collection[str] | None = None
    ) -> None:
        """Hide the components named ``keys`` and those with any of ``tags`` from every
        caller: left out of the listings, refused when called."""
        self._set_rule(False, keys, tags, components)

    def _set_rule(
        self, enabled: bool, keys: Collection[str], tags: Collection[str], components: Any
    ) -> None:
        kinds = _kinds(components)
        rule_tags = _rule_tags(keys, tags)
        self.visibility.rules.add(enabled, keys, rule_tags, kinds)
        self.visibility.changed()
        _announce(cast("MCPServer", self), kinds, None)
        self.visibility.notify_listeners(kinds)

    async def enable_for(
        self,
        caller: ServerSession | str,
        *keys: str,
        tags: Collection[str] = (),
        components: Collection[str] | None = None,
    ) -> None:
        """:meth:`enable` for one caller only: a session, or a principal (on 2026-07-28)."""
        await self._set_caller_rule(caller, True, keys, tags, components)

    async def disable_for(
        self,
        caller: ServerSession | str,
        *keys: str,
        tags: Collection[str] = (),
        components: Collection[str] | None = None,
    ) -> None:
        """:meth:`disable` for one caller only: a session, or a principal (on 2026-07-28)."""
        await self._set_caller_rule(caller, False, keys, tags, components)

    async def reset_for(self, caller: ServerSession | str) -> None:
        """Forget one caller's own rules: it sees what the server's rules show again."""
        vis = self.visibility
        if isinstance(caller, str):
            await vis.store.put(caller, None)
            await self._caller_changed(caller, KINDS)
        elif caller.visibility is not None:
            caller.visibility = None
            await _session_changed(caller)
            _announce(cast("MCPServer", self), KINDS, caller)

    async def _set_caller_rule(
        self,
        caller: ServerSession | str,
        enabled: bool,
        keys: Collection[str],
        tags: Collection[str],
        components: Any,
    ) -> None:
        kinds = _kinds(components)
        rule_tags = _rule_tags(keys, tags)
        vis = self.visibility
        vis.scoped = vis.active = True
        if isinstance(caller, str):
            data = await vis.store.get(caller)
            rules = VisibilityRules.from_json(data) if data else VisibilityRules()
            rules.add(enabled, keys, rule_tags, kinds)
            await vis.store.put(caller, rules.to_json())
            await self._caller_changed(caller, kinds)
            return
        if caller.visibility is None:
            caller.visibility = VisibilityRules()
        caller.visibility.add(enabled, keys, rule_tags, kinds)
        await _session_changed(caller)
        _announce(cast("MCPServer", self), kinds, caller)

    async def _caller_changed(self, principal: str, kinds: frozenset[str]) -> None:
        server = cast("MCPServer", self)
        self.visibility.uncache(principal)
        # The other nodes of a cluster drop what they remember of this principal's rules.
        await server.fan_out({"k": "v", "p": principal})
        # No session to address on 2026-07-28: every listener hears it and lists again
        # (a list_changed says nothing about what changed, so nothing leaks).
        _announce(server, kinds, None)


async def _session_changed(session: ServerSession) -> None:
    # A session of a cluster: its record keeps the rules, for every node (transports/cluster.py).
    if session.on_state_change is not None:
        await session.on_state_change(session)


def _rule_tags(keys: Collection[str], tags: Collection[str]) -> frozenset[str]:
    if isinstance(tags, str):
        tags = (tags,)
    problems: list[str] = []
    checked = checked_tags("tags", tags, problems)
    bad = [k for k in keys if not isinstance(k, str) or not k]
    if bad:
        problems.append(f"names must be non-empty strings, not {bad[0]!r}")
    if problems:
        raise ConfigurationError("; ".join(problems))
    if not keys and not checked:
        raise ConfigurationError("name the components to enable or disable, or give tags=")
    return checked


def _running(server: MCPServer, method: str, params: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, key) of the server's component whose function serves a request of ``method``
    with ``params``: a resource read by the static resource of that URI, else by the first
    template matching it (as ``resources/read`` picks them)."""
    if method == "tools/call":
        name = params.get("name")
        return ("tools", name) if isinstance(name, str) else None
    if method == "prompts/get":
        name = params.get("name")
        return ("prompts", name) if isinstance(name, str) else None
    uri = params.get("uri")
    if method != "resources/read" or not isinstance(uri, str):
        return None
    found = server.resources.serving(uri)
    return (found[0], found[1]) if found is not None else None


class ContextVisibility:
    """Mixed into ``Context``: what the caller of this request sees."""

    __slots__ = ()
    session: ServerSession
    request: Request

    def _caller(self) -> ServerSession | str:
        session = self.session
        if not _sessionless(session):
            return session
        principal = principal_of(self.request.auth_info)
        if principal is None:
            raise ToolError(
                "this request has no session and no authenticated caller, so there is no "
                "one to show or hide components for (use server.enable/disable for everyone)"
            )
        return principal

    def _keys(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        # A mounted server's tool, resource or prompt names its own server's components:
        # the caller is the parent's, which serves them under other names.
        mounted = self.session.server.visibility.mounted_keys
        if not keys or not mounted:
            return keys
        target = _running(self.session.server, self.request.method, self.request.params)
        translate = mounted.get(target) if target is not None else None
        return keys if translate is None else tuple(k for key in keys for k in translate(key))

    async def enable_components(
        self, *keys: str, tags: Collection[str] = (), components: Collection[str] | None = None
    ) -> None:
        """Show components to this caller only (its session, or its principal on 2026-07-28).
        A mounted server's tool, resource or prompt names them as its own server does."""
        await self.session.server.enable_for(
            self._caller(), *self._keys(keys), tags=tags, components=components
        )

    async def disable_components(
        self, *keys: str, tags: Collection[str] = (), components: Collection[str] | None = None
    ) -> None:
        """Hide components from this caller only (its session, or its principal)."""
        await self.session.server.disable_for(
            self._caller(), *self._keys(keys), tags=tags, components=components
        )

    async def reset_visibility(self) -> None:
        """Forget this caller's own rules."""
        await self.session.server.reset_for(self._caller())
