"""The extension contract: ``Extension``, ``server.add_method`` and ``server.add_extension``.

An :class:`Extension` is what a capability package hands the server: an
identifier (its key in ``capabilities.extensions``, SEP-2133), the settings
object advertised under it, additional JSON-RPC methods, middleware, a
lifespan, keys of its own in the ``subscriptions/listen`` filter, and a hook the *client* runs on each outgoing request's ``_meta``
(trace context, opt-ins). The set of contributions is closed: an extension
is this frozen dataclass, built by a function of its package
(``tasks_extension(store=...)``), not a subclass with hooks of its own.

Everything is merged once, when the extension is added: its methods enter the
server's method table (and so the middleware chain, on every transport and
both eras), its middleware joins the chain, its lifespan is entered around
the server's (:mod:`.lifespan`), its settings are kept ready for
``capabilities()``. Nothing loops over extensions while a request is served.

Where the settings go: ``capabilities.extensions`` is a 2026-07-28 field
(``server/discover``); a handshake-era ``initialize`` result carries it too
when the server has extensions, as the extensions' own specifications ask of
clients and servers on 2025-11-25 (the published schemas leave
``ServerCapabilities`` open to it).

:class:`ServerExtensions` is mixed into ``MCPServer``; the attributes it names
are the server's own.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import orjson

from ..errors import RegistrationError
from ..protocol.envelope import INPUT_ROUNDS_EXTENSION
from ..protocol.method_names import reserved_method_problem
from .context import Context, _current
from .lifespan import Lifespan, LifespanFactory
from .middleware import Middleware, MiddlewareChains, wrap_methods
from .telemetry import ServerTelemetry

if TYPE_CHECKING:
    from .middleware import Handler
    from .session import Request, ServerSession
    from .stateless.listen import ListenGrant

# The specification's own subscriptions/listen filter keys (SubscriptionFilter,
# stateless.listen.CORE_FILTER_KEYS, repeated here so that this module does not load it).
_CORE_FILTER_KEYS: Final = frozenset(
    {"toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions"}
)

__all__ = [
    "Extension",
    "MethodHandler",
    "RequestMetaHook",
    "ServerExtensions",
    "identifier_problem",
]

#: ``async handler(params, ctx) -> result dict``: an additional JSON-RPC method.
MethodHandler = Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]

#: ``hook(method, meta)``: changes the ``_meta`` of one outgoing client request in place.
RequestMetaHook = Callable[[str, dict[str, Any]], None]

# Extension identifiers follow the `_meta` key rules with a mandatory prefix (2026-07-28
# basic/versioning § extension negotiation, basic/index § _meta): dot-separated labels
# that start with a letter and end with a letter or digit, a slash, then a name that
# begins and ends with an alphanumeric and may hold - _ . inside. An empty name is
# allowed for a bare `_meta` key, but names no extension.
_LABEL: Final = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME: Final = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"


@functools.cache
def _identifier() -> re.Pattern[str]:  # compiled on first use: not at every server's import
    return re.compile(rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}")


def identifier_problem(identifier: object) -> str | None:
    """Why ``identifier`` cannot name an extension (None: it can)."""
    if not isinstance(identifier, str):
        return f"an extension identifier must be a string, not {type(identifier).__name__}"
    if identifier == INPUT_ROUNDS_EXTENSION:
        return f"extension identifier {identifier!r} is mcpkit's own (input rounds)"
    if _identifier().fullmatch(identifier) is None:
        return (
            f"extension identifier {identifier!r} must be 'prefix/name' with a reverse-DNS "
            "prefix (labels of letters, digits and '-', starting with a letter), e.g. "
            "'com.example/my-extension' (the _meta key rules, 2026-07-28 basic/index)"
        )
    return None


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    # An object whose class has an async __call__ (a handler with state of its own).
    return callable(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def method_problem(name: object, handler: object, *, claimant: str | None = None) -> str | None:
    """Why ``handler`` cannot serve the additional method ``name`` (None: it can);
    ``claimant``: the identifier of the extension adding it (a reserved prefix's owner
    may use names under it, :data:`~mcpkit.protocol.method_names.EXTENSION_PREFIXES`)."""
    if not isinstance(name, str) or not name:
        return f"a method name must be a non-empty string, not {name!r}"
    reserved = reserved_method_problem(name, claimant=claimant)
    if reserved is not None:
        return reserved
    if not _is_async(handler):
        return f"method {name!r}: the handler must be an async function (params, ctx) -> dict"
    return None


class Extension:
    """One extension's contributions to a server (and the client hook it brings).

    >>> async def echo(params, ctx):
    ...     return {"echo": params.get("text")}
    >>> ext = Extension(identifier="com.example/echo", methods={"example/echo": echo})

    ``settings`` is advertised as ``capabilities.extensions[identifier]`` (an
    empty object: supported, no settings). ``methods`` maps additional method
    names to ``async handler(params, ctx)``. ``middleware`` joins the server's
    chain after the middleware it already has. ``lifespan(server)`` returns an
    async context manager entered around the server's own lifespan. A client
    given the extension (``Client(extensions=[...])``) calls
    ``request_meta(method, meta)`` on every request it sends, before the
    2026-07-28 envelope is added (the envelope's own keys always win).
    ``listen_filters`` maps keys of the 2026-07-28 ``subscriptions/listen`` filter
    to ``async grant(value, listener)`` (:mod:`.stateless.listen`): the
    extension's notifications on that stream. Problems are raised together as :class:`~mcpkit.errors.RegistrationError`.

    Frozen, with these fields only (the set of contributions is closed), and
    equal only to itself (it holds functions). Written out rather than a
    dataclass: every server imports this module, and building a dataclass
    costs more start-up time than the whole rest of the module.
    """

    __slots__ = (
        "identifier",
        "lifespan",
        "listen_filters",
        "methods",
        "middleware",
        "request_meta",
        "settings",
    )

    identifier: str
    settings: Mapping[str, Any]
    methods: Mapping[str, MethodHandler]
    middleware: tuple[Middleware, ...]
    lifespan: LifespanFactory | None
    request_meta: RequestMetaHook | None
    listen_filters: Mapping[str, ListenGrant]

    def __init__(
        self,
        *,
        identifier: str,
        settings: Mapping[str, Any] | None = None,
        methods: Mapping[str, MethodHandler] | None = None,
        middleware: Sequence[Middleware] = (),
        lifespan: LifespanFactory | None = None,
        request_meta: RequestMetaHook | None = None,
        listen_filters: Mapping[str, ListenGrant] | None = None,
    ) -> None:
        settings = {} if settings is None else settings
        methods = {} if methods is None else methods
        listen_filters = {} if listen_filters is None else listen_filters
        problems = _problems(identifier, settings, methods, middleware, lifespan, request_meta)
        problems.extend(_filter_problems(identifier, listen_filters))
        if problems:
            raise RegistrationError(problems)
        # Copies the caller cannot change afterwards.
        put = object.__setattr__
        put(self, "identifier", identifier)
        put(self, "settings", MappingProxyType(dict(settings)))
        put(self, "methods", MappingProxyType(dict(methods)))
        put(self, "middleware", tuple(middleware))
        put(self, "lifespan", lifespan)
        put(self, "request_meta", request_meta)
        put(self, "listen_filters", MappingProxyType(dict(listen_filters)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Extension is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Extension is frozen: cannot delete {name!r}")

    def __repr__(self) -> str:
        return f"Extension(identifier={self.identifier!r}, methods={sorted(self.methods)})"


def _problems(
    identifier: object,
    settings: object,
    methods: object,
    middleware: object,
    lifespan: object,
    request_meta: object,
) -> list[str]:
    """Everything wrong with an extension's fields, one sentence each."""
    problems: list[str] = []
    label = identifier if isinstance(identifier, str) else repr(identifier)
    problem = identifier_problem(identifier)
    if problem is not None:
        problems.append(problem)
    if not isinstance(settings, Mapping) or not all(isinstance(k, str) for k in settings):
        problems.append(f"extension {label}: settings must be a JSON object (a dict)")
    else:
        try:  # sent in every initialize and server/discover result: JSON, checked now
            orjson.dumps(dict(settings))
        except TypeError as exc:
            problems.append(f"extension {label}: settings are not JSON: {exc}")
    if isinstance(methods, Mapping):
        for name, handler in methods.items():
            claimant = identifier if isinstance(identifier, str) else None
            problem = method_problem(name, handler, claimant=claimant)
            if problem is not None:
                problems.append(f"extension {label}: {problem}")
    else:
        problems.append(f"extension {label}: methods must map names to handlers")
    if isinstance(middleware, str | bytes) or not isinstance(middleware, Sequence):
        problems.append(f"extension {label}: middleware must be a list of functions")
    elif not all(callable(mw) for mw in middleware):
        problems.append(f"extension {label}: every middleware must be callable")
    for hook, value in (("lifespan", lifespan), ("request_meta", request_meta)):
        if value is not None and not callable(value):
            problems.append(f"extension {label}: {hook} must be callable")
    return problems


def _filter_problems(identifier: object, filters: object) -> list[str]:
    label = identifier if isinstance(identifier, str) else repr(identifier)
    if not isinstance(filters, Mapping):
        return [f"extension {label}: listen_filters must map filter keys to grant functions"]
    problems: list[str] = []
    for key, grant in filters.items():
        if not isinstance(key, str) or not key:
            problems.append(f"extension {label}: a listen filter key must be a non-empty string")
        elif key in _CORE_FILTER_KEYS:
            problems.append(
                f"extension {label}: listen filter key {key!r} is the specification's own"
            )
        if not _is_async(grant):
            problems.append(
                f"extension {label}: listen filter {key!r} must be an async function "
                "(value, listener)"
            )
    return problems


def method_handler(handler: MethodHandler) -> Handler:
    """The method-table form (``handler(session, request)``) of an additional method."""

    async def serve(session: ServerSession, req: Request) -> dict[str, Any]:
        ctx = Context(session, req)
        token = _current.set(ctx)
        try:
            result = await handler(req.params, ctx)
        finally:
            _current.reset(token)
        if type(result) is not dict:
            raise TypeError(
                f"the handler of {req.method} returned {type(result).__name__}, not a dict"
            )
        return result

    return serve


class ServerExtensions(ServerTelemetry):
    """Mixed into ``MCPServer``: additional methods and extensions (see the module doc),
    and the automatic telemetry (:mod:`.telemetry`)."""

    name: str
    methods: dict[str, Handler]
    wrapped_methods: dict[str, Handler]
    middleware_chains: MiddlewareChains
    _lifespan: Lifespan
    # identifier -> extension, in the order added; method name -> who added it.
    _extensions: dict[str, Extension]
    _added_methods: dict[str, str]
    _extension_settings: dict[str, dict[str, Any]]
    _listen_filters: dict[str, ListenGrant]

    if TYPE_CHECKING:

        def add_middleware(self, middleware: Middleware) -> Middleware: ...

    def _init_extensions(self, extensions: Sequence[Extension] | None) -> list[str]:
        """Set up the registry; the problems of ``MCPServer(extensions=...)``, all of them."""
        self._extensions = {}
        self._added_methods = {}
        self._extension_settings = {}
        self._listen_filters = {}
        problems: list[str] = []
        if extensions is None:
            return problems
        if isinstance(extensions, str | bytes) or not isinstance(extensions, Sequence):
            return [f"extensions must be a list of Extension, not {type(extensions).__name__}"]
        for ext in extensions:
            try:
                self.add_extension(ext)
            except RegistrationError as exc:
                problems.extend(exc.problems)
        return problems

    @property
    def extensions(self) -> Mapping[str, Extension]:
        """The extensions added, identifier -> :class:`Extension`, in the order added."""
        return MappingProxyType(self._extensions)

    @property
    def listen_filters(self) -> Mapping[str, ListenGrant]:
        """The extensions' ``subscriptions/listen`` filter keys -> their grant functions."""
        return MappingProxyType(self._listen_filters)

    def extension_capabilities(self) -> dict[str, dict[str, Any]]:
        """``capabilities.extensions`` as the extensions advertise it (a fresh dict)."""
        return {k: dict(v) for k, v in self._extension_settings.items()}

    def add_method(self, name: str, handler: MethodHandler) -> MethodHandler:
        """Serve the additional JSON-RPC method ``name`` with ``async handler(params, ctx)``.

        The handler returns the ``result`` dict, or raises an
        :class:`~mcpkit.errors.MCPError` for a JSON-RPC error; it runs inside the
        middleware chain like every method, on every transport and both eras.
        The specification's own method names (every revision) and names taken
        already are refused with :class:`~mcpkit.errors.RegistrationError`.
        """
        problem = method_problem(name, handler) or self._method_taken(name)
        if problem is not None:
            raise RegistrationError([problem])
        self._install(name, handler, "add_method")
        return handler

    def add_extension(self, extension: Extension) -> Extension:
        """Add ``extension``: its methods, middleware, lifespan and advertised settings.

        Checked as a whole first (a taken identifier or method name, each
        problem named), then merged; nothing is added when a problem is raised.
        Add extensions before serving: a handshake-era session already open
        keeps the middleware chain it started with.
        """
        if not isinstance(extension, Extension):
            raise RegistrationError(
                [f"an extension must be a mcpkit Extension, not {type(extension).__name__}"]
            )
        ident = extension.identifier
        problems: list[str] = []
        if ident in self._extensions:  # its methods clash too, needless to say
            raise RegistrationError([f"extension {ident!r} is added twice"])
        for name in extension.methods:
            taken = self._method_taken(name)
            if taken is not None:
                problems.append(f"extension {ident!r}: {taken}")
        for key in extension.listen_filters:
            if key in self._listen_filters:
                problems.append(f"extension {ident!r}: listen filter key {key!r} is taken")
        if problems:
            raise RegistrationError(problems)
        self._extensions[ident] = extension
        self._listen_filters.update(extension.listen_filters)
        self._extension_settings[ident] = dict(extension.settings)
        for name, handler in extension.methods.items():
            self._install(name, handler, f"extension {ident!r}")
        for mw in extension.middleware:
            self.add_middleware(mw)
        if extension.lifespan is not None:
            self._lifespan.around.append((ident, extension.lifespan))
        return extension

    def _method_taken(self, name: str) -> str | None:
        owner = self._added_methods.get(name)
        if owner is not None:
            return f"method {name!r} is already served (added by {owner})"
        if name in self.methods:  # a method of the table that reserved_method_problem missed
            return f"method {name!r} is already served by the server"
        return None

    def _install(self, name: str, handler: MethodHandler, owner: str) -> None:
        # In place: sessions hold these tables (handshake sessions the wrapped one), so a
        # method added to a running server is reachable at once; add_middleware rebuilds
        # the wrapped table from methods, added methods included.
        serve = method_handler(handler)
        self.methods[name] = serve
        self.middleware_chains.add_method(name)
        self.wrapped_methods.update(wrap_methods({name: serve}, self.middleware_chains))
        self._added_methods[name] = owner
