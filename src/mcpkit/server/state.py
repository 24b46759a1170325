"""``ctx.state``: small JSON values a tool keeps for its caller between requests.

A tool reads and writes named values::

    @server.tool
    async def visit(ctx: Context) -> int:
        count = await ctx.state.get("visits", 0) + 1
        await ctx.state.set("visits", count, ttl=3600)
        return count

Whose values they are (the *scope*):

- on the handshake era (2024-11-05 .. 2025-11-25), the session's: its
  ``Mcp-Session-Id`` on HTTP, the connection on stdio and in memory;
- on 2026-07-28, which has no session (basic § stateless design: every request
  carries all it needs, and any node may serve it), the principal's: who the
  request's verified token speaks for (:attr:`mcpkit.auth.AuthInfo.principal`),
  so a user's next request finds its values on whichever node serves it. A
  request without a token has no principal: ``ctx.state`` then raises, unless
  :class:`StateOptions` ``key`` names another scope (a tenant header, an
  argument), which the application vouches for.

This is state the *server* keeps on the caller's behalf, not protocol state:
the protocol stays stateless (no request depends on another for its meaning),
and a client that wants to carry state itself still uses ``requestState`` or
its own arguments. Values live in the server's store (``MCPServer(store=...)``,
its ``state`` part): process memory by default, Redis in a cluster, where a
``get`` is one ``GET`` and a ``set`` one ``SET`` (no read before the write).

Values are JSON (dict, list, str, int, float, bool, None), at most
``max_bytes`` encoded (default 64 KiB: a :class:`ValueError` names the
limit), and expire ``ttl`` seconds after their last ``set`` (default one day).
Configure per server with :func:`configure_state`.
"""

from __future__ import annotations

import hashlib
import secrets
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from ..errors import ConfigurationError
from ..stores.state import MemoryStateStore, StateStore

if TYPE_CHECKING:
    from .context import Context
    from .server import MCPServer
    from .session import ServerSession

__all__ = [
    "DEFAULT_STATE_MAX_BYTES",
    "DEFAULT_STATE_TTL",
    "State",
    "StateOptions",
    "configure_state",
    "state_of",
]

DEFAULT_STATE_MAX_BYTES: Final = 64 * 1024
DEFAULT_STATE_TTL: Final = 24 * 3600.0

#: ``key(ctx) -> scope``: whose values a request reads (None: the default scope).
StateKey = Callable[["Context"], "str | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StateOptions:
    """How ``ctx.state`` behaves on one server.

    ``store``: where values live (default: the server store's ``state``, else a
    memory store of the server's own). ``key``: a function of the request's
    :class:`~mcpkit.server.context.Context` naming the scope instead of the
    session or principal (None from it: the default scope). ``max_bytes``: the
    largest encoded value. ``ttl``: seconds a value lives after its last ``set``
    when ``set`` gives none (None: until deleted).
    """

    store: StateStore | None = None
    key: StateKey | None = None
    max_bytes: int = DEFAULT_STATE_MAX_BYTES
    ttl: float | None = DEFAULT_STATE_TTL

    def __post_init__(self) -> None:
        if type(self.max_bytes) is not int or self.max_bytes < 1:
            raise ConfigurationError(
                f"StateOptions: max_bytes must be a positive integer, not {self.max_bytes!r}"
            )
        if self.ttl is not None and not self.ttl > 0:
            raise ConfigurationError(f"StateOptions: ttl must be positive, not {self.ttl!r}")
        if self.store is not None and not isinstance(self.store, StateStore):
            raise ConfigurationError(
                "StateOptions: store must have async get/set/delete (a mcpkit.stores.StateStore)"
            )


_DEFAULT_OPTIONS: Final = StateOptions()
# Per server, without a slot on MCPServer: its options, and its own memory store when
# its store has no state part. Per session: a name for sessions without a transport id.
_options: weakref.WeakKeyDictionary[MCPServer, StateOptions] = weakref.WeakKeyDictionary()
_own_stores: weakref.WeakKeyDictionary[MCPServer, StateStore] = weakref.WeakKeyDictionary()
_session_names: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()
# Per server: (its store when resolved, the state store, the options); see _resolved.
_resolutions: weakref.WeakKeyDictionary[MCPServer, tuple[Any, StateStore, StateOptions]] = (
    weakref.WeakKeyDictionary()
)


def configure_state(server: MCPServer, options: StateOptions) -> None:
    """Use ``options`` for ``ctx.state`` on ``server`` (replacing any given before)."""
    if not isinstance(options, StateOptions):
        raise ConfigurationError(
            f"configure_state: options must be a StateOptions, not {type(options).__name__}"
        )
    _options[server] = options
    _resolutions.pop(server, None)


def _store_of(server: MCPServer, options: StateOptions) -> StateStore:
    if options.store is not None:
        return options.store
    store = getattr(server.store, "state", None)
    if isinstance(store, StateStore):
        return store
    own = _own_stores.get(server)
    if own is None:
        own = _own_stores[server] = MemoryStateStore()
    return own


def _resolved(server: MCPServer) -> tuple[StateStore, StateOptions]:
    """The server's state store and options, worked out once per server store and options:
    the protocol check (``isinstance`` of a runtime-checkable protocol) costs more than a
    ``get`` on the memory store, so it is not made per request."""
    found = _resolutions.get(server)
    if found is not None and found[0] is server.store:
        return found[1], found[2]
    options = _options.get(server, _DEFAULT_OPTIONS)
    store = _store_of(server, options)
    _resolutions[server] = (server.store, store, options)
    return store, options


def _scope(ctx: Context, options: StateOptions) -> str:
    if options.key is not None:
        key = options.key(ctx)
        if key is not None:
            if not isinstance(key, str):
                raise TypeError(f"StateOptions.key returned {type(key).__name__}, not a string")
            return "k:" + key
    session = ctx.session
    if session.revision.era == "stateless":
        auth = ctx.auth
        if auth is None:
            raise ConfigurationError(
                "ctx.state on 2026-07-28 belongs to the request's principal, and this "
                "request has no verified token: protect the server (auth=...) or name "
                "a scope with configure_state(server, StateOptions(key=...))"
            )
        # A digest: principals are JSON of issuer, subject and client; keys stay short.
        return "p:" + hashlib.sha256(auth.principal.encode()).hexdigest()[:32]
    sid = session.session_id
    if sid is None:
        sid = _session_names.get(session)
        if sid is None:  # stdio, in memory: the connection is the session
            sid = _session_names[session] = secrets.token_urlsafe(16)
    return "s:" + sid


class State:
    """The values of one scope (a session, a principal): ``get``, ``set``, ``delete``.

    Each call returns an awaitable on the event loop and the value itself in a
    sync tool's worker thread (as ``ctx.info`` does).
    """

    __slots__ = ("_call", "_options", "_scope", "_store")

    def __init__(
        self,
        store: StateStore,
        scope: str,
        options: StateOptions,
        call: Callable[[Coroutine[Any, Any, Any]], Any],
    ) -> None:
        self._store = store
        self._scope = scope
        self._options = options
        self._call = call

    @property
    def scope(self) -> str:
        """Whose values these are: ``s:<session>``, ``p:<principal digest>`` or ``k:<key>``."""
        return self._scope

    def _key(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a state name is a non-empty string, not {name!r}")
        return f"{self._scope}:{name}"

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, or ``default`` when it is unset or expired."""
        return self._call(self._get(self._key(name), default))

    async def _get(self, key: str, default: Any) -> Any:
        raw = await self._store.get(key)
        return default if raw is None else orjson.loads(raw)

    def set(self, name: str, value: Any, *, ttl: float | None = None) -> Any:
        """Set ``name`` to the JSON ``value`` for ``ttl`` seconds (default: the options')."""
        key = self._key(name)
        try:
            raw = orjson.dumps(value)
        except TypeError as exc:
            raise TypeError(f"ctx.state[{name!r}]: the value is not JSON: {exc}") from None
        limit = self._options.max_bytes
        if len(raw) > limit:
            raise ValueError(
                f"ctx.state[{name!r}]: the value is {len(raw)} bytes as JSON, over the "
                f"limit of {limit} (StateOptions.max_bytes)"
            )
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ctx.state[{name!r}]: ttl must be positive, not {ttl!r}")
        return self._call(self._store.set(key, raw, ttl if ttl is not None else self._options.ttl))

    def delete(self, name: str) -> Any:
        """Forget ``name``; True (awaited) when it had a value."""
        return self._call(self._store.delete(self._key(name)))


def state_of(ctx: Context, call: Callable[[Coroutine[Any, Any, Any]], Any]) -> State:
    """``ctx.state``: the values of the request's scope; ``call`` runs each operation
    (the context's bridge from a worker thread to the loop)."""
    store, options = _resolved(ctx.session.server)
    return State(store, _scope(ctx, options), options, call)
