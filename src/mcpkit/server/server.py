"""``MCPServer``: the object a developer builds.

The handlers of the MCP methods live in :mod:`.methods`, the middleware chain
around them in :mod:`.middleware`, the application lifespan in :mod:`.lifespan`.
Mixins complete the class: :mod:`.running` (the ``run_*``/``*_app``
conveniences over the transports), :mod:`.introspection` (Mastra's
introspection API, ``execute_tool``), :mod:`.extension` (``add_method``,
``add_extension``: the seam capability packages plug into) and :mod:`.sources`
(``add_component_source``: components served from elsewhere, per session).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Never, TypeVar, overload

from ..errors import ConfigurationError, RegistrationError
from ..protocol.envelope import INPUT_ROUNDS_EXTENSION
from ..protocol.versions import Revision
from ..stores import Store
from ..stores.input_required import ParkedTable
from .completions import CompletionRegistry
from .context import LOG_LEVELS
from .extension import Extension, ServerExtensions
from .introspection import ServerIntrospection
from .lifespan import NOT_RUNNING, Lifespan, LifespanError, LifespanFactory
from .limits import ServerLimits
from .live_sessions import Fanout, LiveSessions
from .metadata import ServerMetadata
from .methods import METHODS, Handler, shape_listing
from .middleware import Middleware, MiddlewareChains, check_middleware, wrap_methods
from .migration import refuse_foreign
from .prompts import MCPServerPrompts, PromptManager
from .registration import register_given
from .resources import MCPServerResources, ResourceManager, bare_resource_problem
from .running import ServerRunning
from .scopes import required_scopes
from .session import ServerSession
from .sources import ServerSources
from .stateless.cache_hints import CacheHint, CacheOptions, CacheScope
from .stateless.input_options import InputRoundOptions
from .stateless.input_required import InputRounds
from .tool_manager import ToolManager
from .tools import ToolAnnotations, ToolDefinition, tool_from_function
from .visibility import ServerVisibility, Visibility

if TYPE_CHECKING:
    from ..auth.resource_server import ProtectedResource
    from ..compose.mount import Mount

__all__ = ["MCPServer", "ToolManager", "shape_listing"]

log = logging.getLogger("mcpkit.server")


def _is_protected_resource(auth: object) -> bool:
    # Imported here, not at the top: a server without auth starts without the
    # resource-server modules (start-up time, see lazy_pydantic).
    from ..auth.resource_server import ProtectedResource

    return isinstance(auth, ProtectedResource)


F = TypeVar("F", bound=Callable[..., Any])

#: ``serverInfo.version`` of a server made without ``version=``.
DEFAULT_VERSION = "0.1.0"
_TOOL_OPTIONS = frozenset(inspect.signature(tool_from_function).parameters) - {"fn"}
_PROMPT_OPTIONS = frozenset(inspect.signature(PromptManager.add).parameters) - {"self", "fn"}


class MCPServer(
    ServerIntrospection,
    ServerRunning,
    ServerExtensions,
    ServerSources,
    ServerVisibility,
    LiveSessions,
):
    """An MCP server: tools, resources, prompts and completions.

    >>> server = MCPServer("Demo", version="1.0.0")
    >>> @server.tool
    ... async def add(a: int, b: int) -> int:
    ...     return a + b
    """

    def __init__(
        self,
        name: str,
        *,
        version: str | None = None,
        tools: Mapping[str, ToolDefinition | Callable[..., Any]]
        | Sequence[ToolDefinition | Callable[..., Any]]
        | None = None,
        resources: MCPServerResources | None = None,
        prompts: MCPServerPrompts | None = None,
        agents: Mapping[str, Any] | None = None,
        workflows: Mapping[str, Any] | None = None,
        components: Sequence[Any] | None = None,
        instructions: str | None = None,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        metadata: ServerMetadata | None = None,
        limits: ServerLimits | None = None,
        default_log_level: str = "info",
        cache: CacheOptions | None = None,
        input_rounds: InputRoundOptions | None = None,
        store: Store | None = None,
        middleware: Sequence[Middleware] | None = None,
        lifespan: LifespanFactory | None = None,
        extensions: Sequence[Extension] | None = None,
        auth: ProtectedResource | None = None,
        include_tags: Collection[str] | None = None,
        exclude_tags: Collection[str] | None = None,
        debug: bool = False,
        **foreign: Never,
    ) -> None:
        refuse_foreign("MCPServer", foreign, ())  # FastMCP's and the SDK's spellings (.migration)
        # Grouped options (value objects, each checked when made); None means the defaults.
        for option, value, kind in (
            ("metadata", metadata, ServerMetadata),
            ("limits", limits, ServerLimits),
            ("cache", cache, CacheOptions),
            ("input_rounds", input_rounds, InputRoundOptions),
        ):
            if value is not None and not isinstance(value, kind):
                raise ConfigurationError(
                    f"{option} must be a mcpkit.{kind.__name__}, not {type(value).__name__}"
                )
        limits = limits if limits is not None else ServerLimits()
        cache = cache if cache is not None else CacheOptions()
        rounds = input_rounds if input_rounds is not None else InputRoundOptions()
        input_store = rounds.store
        if store is not None:
            if not isinstance(store, Store):
                raise ConfigurationError(
                    "store must have sessions, events and input_rounds stores "
                    f"(a mcpkit.stores.Store such as MemoryStore()), not {type(store).__name__}"
                )
            if input_store is not None:
                raise ConfigurationError(
                    "give either store= or InputRoundOptions(store=...), not both "
                    "(store.input_rounds is the input store)"
                )
            input_store = store.input_rounds
        if auth is not None and not _is_protected_resource(auth):
            raise ConfigurationError(
                "auth must be a mcpkit.auth.ProtectedResource (its resource URL, "
                f"authorization servers and token verifier), not {type(auth).__name__}"
            )
        if default_log_level not in LOG_LEVELS:
            raise ConfigurationError(f"default_log_level must be one of {sorted(LOG_LEVELS)}")
        self.name = name
        self.version = DEFAULT_VERSION if version is None else version
        self.title = title
        self.description = description
        self.website_url = website_url
        self.icons = icons
        self._implementation_info: dict[str | None, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.instructions = instructions
        # The limits are read on hot paths, so they are copied to plain attributes.
        self.limits = limits
        self.page_size = limits.page_size
        self.request_timeout = limits.request_timeout
        self.default_log_level = default_log_level
        # Caching hints on 2026-07-28 list and read results (SEP-2549). The defaults
        # promise nothing: stale at once, and never shared across credentials.
        # `cache.methods` refines them per method (tools/list, resources/read, ...).
        self.cache_ttl_ms = cache.ttl_ms
        self.cache_scope: CacheScope = cache.scope
        self.cache_hints: dict[str, CacheHint] = dict(cache.methods)
        # Input-required rounds (MRTR) of the stateless era; requestState is signed with
        # the first key and checked against all (rotation). Default: a random per-process key.
        # Several workers share the keys and a store (used states); see .stateless.input_required.
        # `store` groups it with the session and event stores the HTTP transport uses.
        self.store = store
        self._own_input_store = input_store is not None and store is None
        self.input_rounds = InputRounds(
            keys=rounds.request_state_keys,
            ttl=max(limits.request_timeout, 1.0),
            store=input_store,
            max_state=rounds.request_state_limit,
            parked=ParkedTable(
                max_total=rounds.max_parked_calls, max_per_owner=rounds.max_parked_per_principal
            ),
        )
        # Notifications waiting for one subscriptions/listen stream before it is dropped.
        self.listen_queue_bytes = limits.listen_queue_bytes
        # Messages in one JSON-RPC batch (2025-03-26): more get one -32600 error.
        self.max_batch_size = limits.max_batch_size
        self.debug = debug
        # Protects the HTTP apps (http_app, sse_app, run_http, `mcpkit run -t http`) unless
        # they are given their own; stdio stays unauthenticated (see .running).
        self.auth = auth
        # Which components each caller sees: include/exclude_tags, enable/disable (.visibility).
        self.visibility = Visibility(self, include_tags, exclude_tags)
        self.visibility.share()
        self.tools: ToolManager = ToolManager(self)
        self.resources = ResourceManager(self)
        self.prompts = PromptManager(self)
        self.completions = CompletionRegistry()
        self._roots_changed: list[Callable[[ServerSession], Any]] = []
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        # Set by a cluster node (transports/cluster.py, connect_fanout): sends a broadcast
        # to the other processes serving this server's sessions, which deliver it to theirs.
        self._fanout: Fanout | None = None
        # The requestState keys were given (else a cluster shares one through its store).
        self._request_state_keys_given = rounds.request_state_keys is not None
        # The method table and its middleware, built once, rebuilt by add_middleware; plain
        # public attributes (read on every request; do not set them): methods (no middleware),
        # middleware_chains (each method's; stateless requests run it around each round),
        # wrapped_methods (each handler inside its chain: the handshake era's table).
        self.methods: dict[str, Handler] = dict(METHODS)
        self._middleware: list[Middleware] = check_middleware(middleware)
        self.middleware_chains = MiddlewareChains(self._middleware, self.methods)
        self.wrapped_methods = wrap_methods(self.methods, self.middleware_chains)
        self._lifespan = Lifespan(self, lifespan)
        # Tool name -> the server-to-client requests it makes (declared with needs=).
        self.back_channel_needs: dict[str, tuple[str, ...]] = {}
        # Mastra's registry metadata (see .metadata); the id is final once made.
        self._metadata = metadata if metadata is not None else ServerMetadata()
        problems: list[str] = list(self._metadata.problems)
        problems.extend(self._init_extensions(extensions))  # see .extension
        problems.extend(register_given(self, tools, components, agents, workflows))
        if problems:
            raise RegistrationError(problems)
        if resources is not None:
            self.resources.callbacks = resources
        if prompts is not None:
            self.prompts.callbacks = prompts

    def use_store(self, store: Store) -> None:
        """Give the server its shared ``store`` after construction (``mcpkit run --redis``).

        Same as ``MCPServer(store=store)``, so call it before an HTTP app is built
        (the app takes its session and event stores from ``server.store``). Raises
        :class:`ConfigurationError` when the server already has a store or an
        ``InputRoundOptions(store=...)`` of its own, which this would silently replace.
        """
        if not isinstance(store, Store):
            raise ConfigurationError(
                f"store must be a mcpkit.stores.Store such as MemoryStore(), not {type(store).__name__}"
            )
        if self.store is not None:
            raise ConfigurationError("the server already has a store")
        if self._own_input_store:
            raise ConfigurationError("the server already has an input-round store")
        self.store = store
        self.input_rounds.store = store.input_rounds
        self.visibility.share()

    # -- registration decorators -----------------------------------------------------------
    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        fn: str | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
        run_in_thread: bool = True,
        scopes: Sequence[str] | None = None,
        tags: Collection[str] | None = None,
        enabled: bool = True,
        timeout: float | None = None,
        version: str | None = None,
    ) -> Callable[[F], F]: ...
    def tool(self, fn: Callable[..., Any] | str | None = None, /, **options: Any) -> Any:
        """Register a function as a tool; usable bare, with options, or with its name
        first (``@server.tool("search")``, as in FastMCP).

        ``scopes=["mcp:write"]``: the OAuth scopes a caller's token needs to see and
        call it (checked when the request carries auth info; see :mod:`.scopes`);
        ``tags``/``enabled``: see :mod:`.visibility`; ``timeout``: seconds before the
        call is cancelled; ``version``: listed, and chosen by a call naming it.
        """

        if isinstance(fn, str):
            options, fn = {**options, "name": fn}, None
        refuse_foreign("tool", options, _TOOL_OPTIONS)

        def register(f: F) -> F:
            self.tools.add(tool_from_function(f, **options))
            return f

        return register(fn) if fn is not None else register

    def add_tool(self, tool: ToolDefinition | Callable[..., Any], **options: Any) -> ToolDefinition:
        """Register a tool object from :func:`create_tool`, or a function."""
        if isinstance(tool, ToolDefinition):
            return self.tools.add(tool)
        refuse_foreign("tool", options, _TOOL_OPTIONS)
        return self.tools.add(tool_from_function(tool, **options))

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        size: int | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        cache: CacheHint | None = None,
        scopes: Sequence[str] | None = None,
        tags: Collection[str] | None = None,
        enabled: bool = True,
        version: str | None = None,
        **foreign: Never,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{variables}`` makes it an RFC 6570 template.

        ``cache`` sets the ``ttlMs``/``cacheScope`` of this resource's
        ``resources/read`` results on the 2026-07-28 era, over the server's.
        ``scopes``: the OAuth scopes a caller's token needs to see and read it.
        """
        if callable(uri):  # a bare @server.resource: the function came in place of the URI
            raise RegistrationError([bare_resource_problem("@server.resource", uri)])
        refuse_foreign("resource", foreign, ())

        def register(f: F) -> F:
            self.resources.add(
                uri,
                f,
                name=name,
                description=description,
                mime_type=mime_type,
                title=title,
                size=size,
                annotations=annotations,
                icons=icons,
                meta=meta,
                cache=cache,
                scopes=scopes,
                tags=tags,
                enabled=enabled,
                version=version,
            )
            return f

        return register

    @overload
    def prompt(self, fn: F, /) -> F: ...
    @overload
    def prompt(
        self,
        fn: str | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        version: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        tags: Collection[str] | None = None,
        enabled: bool = True,
    ) -> Callable[[F], F]: ...
    def prompt(self, fn: Callable[..., Any] | str | None = None, /, **options: Any) -> Any:
        """Register a function returning prompt messages; usable bare, with options, or
        with its name first (``@server.prompt("review")``).

        ``scopes``: the OAuth scopes a caller's token needs to see and get it.
        """

        if isinstance(fn, str):
            options, fn = {**options, "name": fn}, None
        refuse_foreign("prompt", options, _PROMPT_OPTIONS)

        def register(f: F) -> F:
            self.prompts.add(f, **options)
            return f

        return register(fn) if fn is not None else register

    def completion(
        self,
        *,
        prompt: str | None = None,
        resource_template: str | None = None,
        argument: str | None = None,
    ) -> Callable[[F], F]:
        """Register argument completion for a prompt or a resource template.

        The function may declare any of ``argument`` (the argument's name),
        ``value`` (what the user typed) and ``arguments`` (values already
        chosen, ``context.arguments``), and returns a list of strings or a
        dict with ``values``, ``total`` and ``hasMore``.
        """
        if (prompt is None) == (resource_template is None):
            raise ConfigurationError(
                "completion() needs exactly one of prompt= or resource_template="
            )

        def register(f: F) -> F:
            if prompt is not None:
                self.completions.add("ref/prompt", prompt, argument, f)
            else:
                assert resource_template is not None
                self.completions.add("ref/resource", resource_template, argument, f)
            return f

        return register

    def scan(self, *components: Any) -> None:
        """Register the tools, resources, prompts and completions declared on ``components``.

        Each component is an instance (its class's decorated methods, bound),
        a class (its decorated static and class methods) or a module (its own
        decorated functions); see :mod:`mcpkit.server.declarative`. Every
        problem is raised at once as a ``RegistrationError``.
        """
        from .declarative import collect

        problems = collect(self, components)
        if problems:
            raise RegistrationError(problems)

    def mount(
        self,
        server: MCPServer,
        *,
        namespace: str,
        include_tags: Collection[str] | None = None,
        exclude_tags: Collection[str] | None = None,
    ) -> Mount:
        """Serve ``server``'s components here under ``namespace`` (a live link): the
        ``Mount`` of ``mcpkit.compose.mount(self, server, ...)``, which has the rules."""
        from ..compose.mount import mount

        return mount(
            self, server, namespace=namespace, include_tags=include_tags, exclude_tags=exclude_tags
        )

    def on_roots_changed(self, fn: F) -> F:
        """Call ``fn(session)`` when a client says its roots changed."""
        self._roots_changed.append(fn)
        return fn

    @property
    def roots_changed_callbacks(self) -> tuple[Callable[[ServerSession], Any], ...]:
        """The ``on_roots_changed`` callbacks, which a session calls when its client sends
        ``notifications/roots/list_changed``."""
        return tuple(self._roots_changed)

    @property
    def uses_default_request_state_keys(self) -> bool:
        """Whether requestState is signed with a random key of this process (no
        ``request_state_keys`` given): the nodes of a cluster then share one key through
        their store, so that each opens what another sealed (transports/cluster.py)."""
        return not self._request_state_keys_given

    def required_scopes(self, method: str, params: Mapping[str, Any] | None) -> frozenset[str]:
        """The OAuth scopes a ``method`` request with ``params`` needs (see .scopes)."""
        return required_scopes(self, method, params)

    # -- middleware and lifespan (see .middleware, .lifespan) ----------------------------------
    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """The middleware chain, outermost first (``MCPServer(middleware=...)``)."""
        return tuple(self._middleware)

    def add_middleware(self, middleware: Middleware) -> Middleware:
        """Add ``middleware`` innermost (after those given so far); usable as a decorator.

        The chain is built again here, once; sessions opened from now on use it
        (add middleware before serving: an open handshake-era session keeps the
        chain it started with).
        """
        self._middleware = chain = check_middleware([*self._middleware, middleware])
        self.middleware_chains = MiddlewareChains(chain, self.methods)
        self.wrapped_methods = wrap_methods(self.methods, self.middleware_chains)
        return middleware

    def lifespan_context(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Enter the server's lifespan for as long as the ``async with`` block runs.

        The transports do this themselves; call it to run tools another way
        (``server.execute_tool``) or to run the lifespan from a host application
        that mounts the ASGI app (see docs/server.md). Nested and concurrent
        entries share one: the first enters the lifespan, the last exits it. The
        ``as`` value is the lifespan state. Raises :class:`LifespanError` when
        the lifespan fails to start.
        """
        return self._lifespan()

    async def enter_lifespan(self) -> None:
        """Enter the lifespan, for a transport whose start and stop are separate events
        (the ASGI lifespan messages, an in-memory client's enter and exit); pair it with
        :meth:`exit_lifespan`. Shared as :meth:`lifespan_context` is, and raises alike."""
        await self._lifespan.enter()

    async def exit_lifespan(self) -> None:
        """Leave the lifespan entered with :meth:`enter_lifespan` (the last user ends it)."""
        await self._lifespan.exit()

    def add_lifespan(self, factory: LifespanFactory, *, label: str) -> None:
        """Enter ``factory(server)`` inside the server's own lifespan, from the next start.

        Entered after the server's lifespan (and its extensions') started, in the
        order added, and exited before it ends; what it yields is not
        ``lifespan_state``. ``label`` names it in a start-up failure.
        ``mcpkit.compose.mount`` runs a mounted server's lifespan this way.
        """
        if not callable(factory):
            raise ConfigurationError(f"lifespan {label!r} must be a function of the server")
        self._lifespan.inside.append((label, factory))

    @property
    def lifespan_state(self) -> Any:
        """What the lifespan yielded; None without a lifespan.

        Raises :class:`LifespanError` when the server has a lifespan that is not
        running (nothing is serving, or a host application mounting the ASGI
        app does not run ASGI lifespan events for it).
        """
        state = self._lifespan.state
        if state is NOT_RUNNING:
            raise LifespanError(
                f"the lifespan of server {self.name!r} is not running: it starts when serving "
                "starts (stdio, the ASGI lifespan startup of http_app/sse_app, an in-memory "
                "client); a host app that mounts the ASGI app must run it in its own lifespan "
                "with `async with server.lifespan_context():`"
            )
        return state

    # -- capabilities and sessions ---------------------------------------------------------
    def capabilities(self, revision: Revision | None = None) -> dict[str, Any]:
        """The server capabilities (for ``revision``: without what it does not define)."""
        caps: dict[str, Any] = {"logging": {}, "tools": {"listChanged": True}}
        sourced = self.sourced_kinds  # what component sources (.sources) may serve
        if self.resources.enabled or "resources" in sourced:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts.enabled or "prompts" in sourced:
            caps["prompts"] = {"listChanged": True}
        # The `completions` capability is 2025-03-26; completion/complete itself is older.
        if (
            self.completions or self.prompts.enabled or self.resources.has_templates or sourced
        ) and (revision is None or revision.completions):
            caps["completions"] = {}
        if revision is not None and revision.era == "stateless":
            # ctx.elicit, sampling and roots become input rounds on this era: say so, so that
            # a dual-era client with handlers need not prefer the handshake (envelope.py).
            caps["extensions"] = {INPUT_ROUNDS_EXTENSION: {}, **self.extension_capabilities()}
        elif self._extension_settings:
            caps["extensions"] = self.extension_capabilities()
        return caps

    def initialize_result(self, revision: Revision) -> dict[str, Any]:
        """The result of ``initialize`` for ``revision`` (``ServerSession.initialize``)."""
        result: dict[str, Any] = {
            "protocolVersion": revision.name,
            "capabilities": self.capabilities(revision),
            "serverInfo": self.implementation_info(revision),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def create_session(
        self,
        *,
        session_id: str | None = None,
        standalone: Any = None,
        stateless: bool = False,
        revision: str | None = None,
        transport: str | None = None,
    ) -> ServerSession:
        """A new session; transports call this once per connection (stateless: per request),
        naming themselves (``"stdio"``, ``"streamable_http"``, ``"sse"``, ``"memory"``)."""
        return ServerSession(
            self,
            session_id=session_id,
            standalone=standalone,
            stateless=stateless,
            revision=revision,
            transport=transport,
        )
