"""Declarative registration: decorate methods and functions, then hand the objects over.

Spring AI's MCP annotation model (``@McpTool``, ``@McpToolParam``,
``@McpResource``, ``@McpPrompt``/``@McpArg``, ``@McpComplete``) in Python::

    class Calculator:
        @mcp_tool(name="add", annotations=ToolAnnotations(read_only_hint=True))
        def add(self, a: Annotated[int, ToolParam(description="First number")],
                b: Annotated[int, ToolParam(description="Second number")]) -> int:
            return a + b

    server = MCPServer(name="calc", version="1", components=[Calculator(), my_module])

The decorators only mark a function (it stays callable as before);
``MCPServer(components=[...])`` or ``server.scan(obj)`` registers what is
marked on an instance's class (bound methods), a class (static and class
methods) or a module (its own functions). Every problem is collected and
raised at once as a :class:`~mcpkit.errors.RegistrationError`, each naming
its component and member.

Back-channels: a tool that sends requests to the client (``elicitation``,
``sampling``, ``roots``) says so with ``needs=``. A server run on stateless
HTTP of the handshake era has no channel for those requests, so
``server.http_app(stateless=True)`` logs a warning naming each such tool at
start-up, and a call fails at once with a clear error instead of failing
half-way through the tool. (Declaring a ``Context`` parameter alone does not
count as a need: logging and progress work everywhere.)
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..errors import ConfigurationError, RegistrationError, ToolError
from .context import current_context
from .declared_functions import (
    PromptArg,
    ToolParam,
    completion_value,
    prompt_value,
    proxy,
    resource_value,
    rewrite,
)
from .resources import bare_resource_problem
from .signature import SignatureError
from .stateless.cache_hints import CacheHint, check_cache_hint
from .tools import ToolAnnotations, check_run_in_thread, tool_from_function

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = [
    "BACK_CHANNELS",
    "PromptArg",
    "ToolParam",
    "mcp_complete",
    "mcp_prompt",
    "mcp_resource",
    "mcp_tool",
    "scan",
]

F = TypeVar("F", bound=Callable[..., Any])

BackChannel = Literal["elicitation", "sampling", "roots"]
#: Server-to-client requests a tool may need, and the client capability each one uses.
BACK_CHANNELS: dict[str, str] = {
    "elicitation": "elicitation",
    "sampling": "sampling",
    "roots": "roots",
}

_MARK = "__mcpkit_declarations__"


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str | None
    description: str | None
    title: str | None
    annotations: ToolAnnotations | dict[str, Any] | None
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    structured_output: bool | None
    needs: tuple[str, ...]
    run_in_thread: bool = True
    scopes: Any = None  # checked when registered, with the tool's other problems
    tags: Any = None  # likewise
    enabled: bool = True
    timeout: float | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class _Resource:
    uri: str
    name: str | None
    description: str | None
    mime_type: str | None
    title: str | None
    size: int | None
    annotations: dict[str, Any] | None
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None
    cache: CacheHint | None = None
    scopes: Any = None
    tags: Any = None
    enabled: bool = True
    version: str | None = None


@dataclass(frozen=True, slots=True)
class _Prompt:
    name: str | None
    description: str | None
    title: str | None
    version: str | None
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None
    scopes: Any = None
    tags: Any = None
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class _Complete:
    prompt: str | None
    uri: str | None
    argument: str | None


_Declaration = _Tool | _Resource | _Prompt | _Complete


def _mark(target: Any, declaration: _Declaration) -> None:
    fn = target.__func__ if isinstance(target, staticmethod | classmethod) else target
    if not callable(fn):
        raise ConfigurationError(f"{target!r} is not a function; MCP decorators mark functions")
    marks = list(getattr(fn, _MARK, ()))
    marks.append(declaration)
    setattr(fn, _MARK, tuple(marks))


def _marker(declaration: _Declaration) -> Callable[[F], F]:
    """The decorator every ``mcp_*`` returns: it marks the function with ``declaration``."""

    def mark(f: F) -> F:
        _mark(f, declaration)
        return f

    return mark


def _frozen(scopes: Any) -> Any:
    """Scopes as a tuple (declarations are immutable); anything else as given (refused later)."""
    return tuple(scopes) if isinstance(scopes, list | tuple | set | frozenset) else scopes


def _declarations(value: Any) -> tuple[_Declaration, ...]:
    fn = value.__func__ if isinstance(value, staticmethod | classmethod) else value
    marks = getattr(fn, _MARK, ()) if callable(fn) else ()
    return marks if isinstance(marks, tuple) else ()


# -- the decorators ------------------------------------------------------------------------------


@typing.overload
def mcp_tool(fn: F, /) -> F: ...
@typing.overload
def mcp_tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    structured_output: bool | None = None,
    needs: Collection[BackChannel] = (),
    run_in_thread: bool = True,
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
    timeout: float | None = None,
    version: str | None = None,
) -> Callable[[F], F]: ...
def mcp_tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    structured_output: bool | None = None,
    needs: Collection[BackChannel] = (),
    run_in_thread: bool = True,
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
    timeout: float | None = None,
    version: str | None = None,
) -> Any:
    """Mark a function or method as a tool (Spring AI's ``@McpTool``).

    ``name`` defaults to the function's name and ``description`` to its
    docstring; ``needs`` lists the server-to-client requests the tool makes
    (``"elicitation"``, ``"sampling"``, ``"roots"``). A sync method runs in a
    worker thread; ``run_in_thread=False`` calls it on the event loop, for one
    that returns at once and never blocks (as ``@server.tool`` does). ``scopes``
    lists the OAuth scopes a caller's token needs to see and call it; ``tags``,
    ``enabled``, ``timeout`` and ``version`` are ``@server.tool``'s (see
    :mod:`.visibility`).
    """
    declaration = _Tool(
        name, description, title, annotations, icons, meta, output_schema, structured_output,
        tuple(needs), run_in_thread, _frozen(scopes), _frozen(tags), enabled, timeout, version,
    )  # fmt: skip
    mark = _marker(declaration)

    def checked(f: F) -> F:
        check_run_in_thread(f"tool {name or getattr(f, '__name__', f)!r}", run_in_thread)
        return mark(f)

    return checked(fn) if fn is not None else checked


def mcp_resource(
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
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
    version: str | None = None,
) -> Callable[[F], F]:
    """Mark a function as a resource (Spring AI's ``@McpResource``).

    A URI with ``{variables}`` is an RFC 6570 template whose variables are the
    function's parameters. The function may return text, bytes, a content
    dict, or a ``ReadResourceResult`` (``{"contents": [...]}``). ``cache``
    sets the ``ttlMs``/``cacheScope`` of its ``resources/read`` results on the
    2026-07-28 era, as ``@server.resource(cache=...)`` does; ``scopes`` the OAuth
    scopes a caller's token needs to see and read it.
    """
    if callable(uri):  # a bare @mcp_resource: the function came in place of the URI
        raise RegistrationError([bare_resource_problem("@mcp_resource", uri)])
    check_cache_hint(f"mcp_resource({uri!r})", cache)
    return _marker(
        _Resource(
            uri, name, description, mime_type, title, size, annotations, icons, meta, cache,
            _frozen(scopes), _frozen(tags), enabled, version,
        )
    )  # fmt: skip


@typing.overload
def mcp_prompt(fn: F, /) -> F: ...
@typing.overload
def mcp_prompt(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    version: str | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
) -> Callable[[F], F]: ...
def mcp_prompt(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    version: str | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
) -> Any:
    """Mark a function as a prompt (Spring AI's ``@McpPrompt``).

    Arguments are described with ``Annotated[str, PromptArg(...)]``. The
    function may return text, messages, or a ``GetPromptResult``
    (``{"messages": [...]}``). ``scopes``: the OAuth scopes a caller's token
    needs to see and get it.
    """
    mark = _marker(
        _Prompt(
            name, description, title, version, icons, meta, _frozen(scopes), _frozen(tags), enabled
        )
    )
    return mark(fn) if fn is not None else mark


def mcp_complete(
    *, prompt: str | None = None, uri: str | None = None, argument: str | None = None
) -> Callable[[F], F]:
    """Mark a function as the completion of a prompt's (or URI template's) arguments.

    The function receives what it declares of ``argument`` (the argument's
    name), ``value`` (the text typed so far) and ``arguments`` (values already
    chosen); one positional parameter gets the value, two get name and value.
    It returns a list of strings, ``{"values": [...], "total": ..., "hasMore": ...}``
    or a ``CompleteResult`` (``{"completion": {...}}``). ``argument`` limits it
    to one argument.
    """
    return _marker(_Complete(prompt, uri, argument))


# -- scanning ------------------------------------------------------------------------------------


def _label(component: Any) -> str:
    if isinstance(component, ModuleType):
        return component.__name__
    if isinstance(component, type):
        return component.__name__
    return type(component).__name__


def _members(
    component: Any, problems: list[str]
) -> Iterator[tuple[str, Callable[..., Any], tuple[_Declaration, ...]]]:
    """(member name, the callable to register, its declarations), in definition order."""
    label = _label(component)
    if isinstance(component, ModuleType):
        for name, value in list(vars(component).items()):
            marks = _declarations(value)
            # Only the module's own functions: an imported one belongs to its module.
            if marks and getattr(value, "__module__", None) == component.__name__:
                yield name, value, marks
        return
    cls = component if isinstance(component, type) else type(component)
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        names.extend(n for n in vars(klass) if n not in names)
    for name in names:
        raw = inspect.getattr_static(cls, name)
        marks = _declarations(raw)
        if not marks:
            continue
        if isinstance(component, type) and not isinstance(raw, staticmethod | classmethod):
            problems.append(
                f"{label}.{name}: an instance method; pass an instance ({label}()) to "
                "scan() or components=, or make it a staticmethod or classmethod"
            )
            continue
        yield name, getattr(component, name), marks


def scan(server: MCPServer, *components: Any) -> None:
    """Register everything marked on ``components``; all problems raise together."""
    problems = collect(server, components)
    if problems:
        raise RegistrationError(problems)


def collect(server: MCPServer, components: Collection[Any]) -> list[str]:
    """Register what ``components`` declare; returns the problems (each naming its member)."""
    problems: list[str] = []
    for component in components:
        label = _label(component)
        if component is None or isinstance(component, str | bytes | int | float | bool):
            problems.append(f"{component!r}: a component is an object, a class or a module")
            continue
        for name, fn, marks in _members(component, problems):
            for declaration in marks:
                try:
                    _register(server, declaration, fn, name)
                except RegistrationError as exc:
                    problems.extend(f"{label}.{name}: {p}" for p in exc.problems)
                except SignatureError as exc:
                    problems.extend(f"{label}.{name}: {p}" for p in exc.problems)
                except Exception as exc:
                    problems.append(f"{label}.{name}: {exc}")
    return problems


def _register(server: MCPServer, d: _Declaration, fn: Callable[..., Any], member: str) -> None:
    if isinstance(d, _Tool):
        _register_tool(server, d, fn, member)
    elif isinstance(d, _Resource):
        existing = server.resources.static.get(d.uri) or server.resources.template_for(d.uri)
        if existing is not None:
            raise ConfigurationError(f"resource {d.uri!r} is already registered")
        registered = proxy(fn, rewrite(fn, None), after=resource_value)
        server.resources.add(
            d.uri,
            registered,
            name=d.name or member,
            description=d.description,
            mime_type=d.mime_type,
            title=d.title,
            size=d.size,
            annotations=d.annotations,
            icons=d.icons,
            meta=d.meta,
            cache=d.cache,
            scopes=d.scopes,
            tags=d.tags,
            enabled=d.enabled,
            version=d.version,
        )
    elif isinstance(d, _Prompt):
        prompt_name = d.name or member
        if (prompt_name, d.version) in server.prompts.registered:
            raise ConfigurationError(f"prompt {prompt_name!r} is already registered")
        registered = proxy(fn, rewrite(fn, PromptArg), after=prompt_value)
        server.prompts.add(
            registered,
            name=prompt_name,
            description=d.description,
            title=d.title,
            version=d.version,
            icons=d.icons,
            meta=d.meta,
            scopes=d.scopes,
            tags=d.tags,
            enabled=d.enabled,
        )
    else:
        if (d.prompt is None) == (d.uri is None):
            raise ConfigurationError("mcp_complete() needs exactly one of prompt= or uri=")
        kind, target = ("ref/prompt", d.prompt) if d.prompt is not None else ("ref/resource", d.uri)
        assert target is not None
        if (kind, target, d.argument) in server.completions.handlers:
            raise ConfigurationError(f"a completion for {target!r} is already registered")
        registered = proxy(fn, rewrite(fn, None), after=completion_value)
        server.completions.add(kind, target, d.argument, registered)


def _register_tool(server: MCPServer, d: _Tool, fn: Callable[..., Any], member: str) -> None:
    name = d.name or member
    unknown = [n for n in d.needs if n not in BACK_CHANNELS]
    if unknown:
        raise ConfigurationError(
            f"needs={list(d.needs)}: unknown back-channel(s) {unknown}; "
            f"use {', '.join(BACK_CHANNELS)}"
        )
    if name in server.tools:
        raise ConfigurationError(f"tool {name!r} is already registered")
    before = functools.partial(_check_back_channel, name, d.needs) if d.needs else None
    registered = proxy(fn, rewrite(fn, ToolParam), before=before)
    tool = tool_from_function(
        registered,
        name=name,
        description=d.description,
        title=d.title,
        annotations=d.annotations,
        icons=d.icons,
        meta=d.meta,
        output_schema=d.output_schema,
        structured_output=d.structured_output,
        run_in_thread=d.run_in_thread,
        scopes=d.scopes,
        tags=d.tags,
        enabled=d.enabled,
        timeout=d.timeout,
        version=d.version,
    )
    server.tools.add(tool)
    if d.needs:
        server.back_channel_needs[name] = d.needs


def _check_back_channel(tool: str, needs: tuple[str, ...]) -> None:
    """Fail a call before the tool runs when its back-channel cannot exist."""
    ctx = current_context()
    if ctx is None:
        return
    session = ctx.session
    if session.stateless and session.revision.era == "handshake":
        raise ToolError(
            f"tool {tool!r} needs {' and '.join(needs)}, which this server cannot offer: it runs "
            "stateless HTTP, which has no channel for server-to-client requests"
        )
    missing = [n for n in needs if BACK_CHANNELS[n] not in session.client_capabilities]
    if missing:
        raise ToolError(
            f"tool {tool!r} needs the client's {' and '.join(missing)} capability, which this "
            "client did not declare"
        )
