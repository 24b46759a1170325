"""Tool transformation: a new tool made from an existing one, delegating to it.

A :class:`ToolTransform` says what changes: the name, description and title,
the arguments (:class:`ArgTransform`: renamed, re-described, given a new
default, or hidden with a fixed value or their default), a wrapper function
around the call, and the output (a function of the result and the output
schema it now has). :meth:`ToolTransform.apply` makes the new tool: an
ordinary :class:`~mcpkit.server.tools.ToolDefinition` (``create_tool``) whose
input schema is the original's, changed as asked, and whose function validates
the call against that schema, maps the arguments back to the original's names,
adds the hidden ones and calls the original. Nothing of the original is
copied but its description: the original stays the one place the work is done.

- a **local or mounted** tool is a ``ToolDefinition`` of ``server.tools``: the
  new tool calls its ``run`` (validation, ``Context``, errors as ever);
- a **proxied** tool lives in a component source (:mod:`mcpkit.server.sources`),
  known only per session and only once listed: :class:`TransformedSource` wraps
  the source, makes the new tool from the session's listing entry and calls the
  source under the original name (one upstream call, as before).

:func:`transform_tools` does either for the names a server serves. A hidden
argument cannot be passed by the caller under its original name (a fixed value
is the transform's, not the caller's): such a call is refused as invalid
arguments, as an argument the original does not know is left to it.
"""

from __future__ import annotations

import copy
import inspect
import typing
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..errors import InvalidParams, RegistrationError, ToolError
from ..server.context import Context
from ..server.request import Request
from ..server.server import MCPServer
from ..server.session import ServerSession
from ..server.sources import ComponentSource
from ..server.tools import ToolDefinition, create_tool
from .prefixed import request_with

__all__ = [
    "KEEP",
    "ArgTransform",
    "Forward",
    "ToolTransform",
    "TransformedSource",
    "transform_tool",
    "transform_tools",
]


class _Keep:
    """The value of an option left as the original has it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "KEEP"


#: "As the original has it" (the default of the options that may also be set to None).
KEEP: Final = _Keep()

#: ``await forward(**arguments)``: call the original with arguments under the new names
#: (mapped back, hidden ones added); its ``CallToolResult`` dict, errors included.
Forward = Callable[..., Awaitable[dict[str, Any]]]
#: ``await call(arguments, ctx)``: the original tool called with its own argument names.
CallOriginal = Callable[[dict[str, Any], Context | None], Awaitable[dict[str, Any]]]

# The Context parameter of the new tool's function: a name no argument can have, so that
# an argument called ``ctx`` reaches the original.
_CTX = "mcpkit_transform_context__"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgTransform:
    """How one argument of the original tool changes.

    ``name``: its new name. ``description``: its new description. ``default``:
    a new default (the argument becomes optional; the default is shown in the
    schema and sent when the caller leaves the argument out). ``hide=True``:
    left out of the schema; the original gets ``value`` when given, else
    ``default`` when given, else its own default (a required argument needs
    one of them). ``value`` alone hides the argument too: a fixed value.
    """

    name: str | None = None
    description: str | None = None
    default: Any = KEEP
    hide: bool = False
    value: Any = KEEP

    @property
    def hidden(self) -> bool:
        return self.hide or self.value is not KEEP


class ArgumentMap:
    """The new input schema of a transformed tool, and its arguments mapped back."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        transforms: Mapping[str, ArgTransform],
        problems: list[str],
    ) -> None:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        self.original_names = frozenset(props)
        for old in transforms:
            if old not in props:
                shown = ", ".join(map(repr, props)) or "none"
                problems.append(f"argument {old!r} is not one of the tool's (it has: {shown})")
        #: New name -> the original's name, for every argument shown.
        self.renames: dict[str, str] = {}
        #: Original name -> the value a hidden argument always gets.
        self.fixed: dict[str, Any] = {}
        #: New name -> a default the transform gave (sent when the caller leaves it out).
        self.defaults: dict[str, Any] = {}
        new_props: dict[str, Any] = {}
        new_required: list[str] = []
        for old, sub in props.items():
            t = transforms.get(old)
            if t is None:
                t = ArgTransform()
            elif not isinstance(t, ArgTransform):
                problems.append(f"argument {old!r}: expected an ArgTransform, not {t!r}")
                continue
            for label, value in (("value", t.value), ("default", t.default)):
                if value is not KEEP and not _is_json(value):
                    problems.append(f"argument {old!r}: its {label} {value!r} is not JSON")
            if t.hidden:
                if t.value is not KEEP:
                    self.fixed[old] = t.value
                elif t.default is not KEEP:
                    self.fixed[old] = t.default
                elif old in required and not (isinstance(sub, dict) and "default" in sub):
                    problems.append(
                        f"argument {old!r} is required: hiding it needs value= or default="
                    )
                continue
            new = old if t.name is None else t.name
            if not isinstance(new, str) or not new:
                problems.append(f"argument {old!r}: a new name is a non-empty string")
                continue
            if new in self.renames:
                problems.append(f"argument {new!r} would be shown twice")
                continue
            shown_schema = dict(sub) if isinstance(sub, dict) else {}
            if new != old and shown_schema.get("title") == _title(old):
                shown_schema["title"] = _title(new)  # pydantic's title names the argument
            if t.description is not None:
                shown_schema["description"] = t.description
            if t.default is not KEEP:
                shown_schema["default"] = t.default
                self.defaults[new] = t.default
            elif old in required:
                new_required.append(new)
            new_props[new] = shown_schema
            self.renames[new] = old
        # The rest of the schema ($defs, additionalProperties, ...) still holds: the
        # properties' own schemas are the original's, and $refs point at the root.
        out = {k: v for k, v in schema.items() if k not in ("properties", "required")}
        out["type"] = "object"
        out["properties"] = new_props
        if new_required:
            out["required"] = new_required
        self.schema = out

    def with_defaults(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` (new names) with the transform's defaults of those left out."""
        for new, default in self.defaults.items():
            if new not in arguments:
                arguments[new] = copy.deepcopy(default)
        return arguments

    def to_original(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` under the original's names, the hidden ones added."""
        out: dict[str, Any] = {}
        for key, value in arguments.items():
            old = self.renames.get(key)
            if old is not None:
                out[old] = value
            elif key in self.original_names:  # renamed away, or hidden: not the caller's
                raise ToolError(f"Invalid arguments for tool '{tool}': {key}: not an argument")
            else:
                out[key] = value  # unknown to both: the original decides
        for new, default in self.defaults.items():
            old = self.renames[new]
            if old not in out:
                out[old] = copy.deepcopy(default)
        for old, value in self.fixed.items():
            out[old] = copy.deepcopy(value)
        return out


@dataclass(frozen=True, slots=True)
class _Base:
    """What a transformation starts from: the original's description and how to call it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: dict[str, Any] | None
    title: str | None
    annotations: Any
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None
    call: CallOriginal


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolTransform:
    """A new tool made from an existing one (see the module docstring).

    ``name``, ``description``, ``title``: the new tool's (None: the original's).
    ``arguments``: the original's argument name -> :class:`ArgTransform`.
    ``wrap``: called as ``wrap(forward, **arguments)`` with the caller's
    validated arguments under the new names (the transform's defaults filled
    in; only those it declares unless it takes ``**kwargs``) and a parameter
    annotated :class:`~mcpkit.server.context.Context` if it has one; ``await
    forward(**arguments)`` calls the original (arguments under the new names)
    and returns its ``CallToolResult`` dict. It returns what a tool returns;
    raising :class:`~mcpkit.errors.ToolError` refuses the call. ``output``: a
    function of what the call gave (the wrapper's value, or the original's
    result dict) returning the new tool's value; an error result is passed
    on as it is. ``output_schema``: the new output schema (None: none); left
    as :data:`KEEP`, the original's, unless ``output`` is given (its values
    are no longer the original's, so then none). ``wrap`` and ``output`` may
    be sync or async.
    """

    name: str | None = None
    description: str | None = None
    title: str | None = None
    arguments: Mapping[str, ArgTransform] = field(default_factory=dict)
    wrap: Callable[..., Any] | None = None
    output: Callable[[Any], Any] | None = None
    output_schema: dict[str, Any] | _Keep | None = KEEP
    meta: dict[str, Any] | _Keep | None = KEEP

    def apply(self, tool: ToolDefinition) -> ToolDefinition:
        """The new tool, calling ``tool`` (a local or mounted ``ToolDefinition``).

        Raises :class:`~mcpkit.errors.RegistrationError` naming every problem.
        """

        async def call(arguments: dict[str, Any], ctx: Context | None) -> dict[str, Any]:
            debug = ctx.session.server.debug if ctx is not None else False
            return await tool.run(arguments, ctx, debug=debug)

        new = self.build(
            _Base(
                tool.name,
                tool.description,
                tool.input_schema,
                tool.output_schema,
                tool.title,
                tool.annotations,
                tool.icons,
                tool.meta,
                call,
            ),
            scopes=tool.scopes,
        )
        # Labels the core may give a tool (tags=, on the toolsets branch's ToolDefinition)
        # describe what the tool does, which the new one still does.
        for attr in ("tags",):
            if hasattr(tool, attr) and hasattr(new, attr):
                setattr(new, attr, getattr(tool, attr))
        return new

    def apply_to_entry(self, entry: Mapping[str, Any], call: CallOriginal) -> ToolDefinition:
        """The new tool made from a ``tools/list`` ``entry``, calling ``call`` (a proxied tool)."""
        schema = entry.get("inputSchema")
        output = entry.get("outputSchema")
        return self.build(
            _Base(
                str(entry.get("name")),
                str(entry.get("description") or ""),
                schema if isinstance(schema, dict) else {"type": "object"},
                output if isinstance(output, dict) else None,
                entry.get("title"),
                entry.get("annotations"),
                entry.get("icons"),
                entry.get("_meta"),
                call,
            ),
            scopes=(),
        )

    def build(self, base: _Base, *, scopes: Any) -> ToolDefinition:
        name = base.name if self.name is None else self.name
        problems: list[str] = []
        args = ArgumentMap(base.input_schema, self.arguments, problems)
        wrap_ctx = _context_parameter(self.wrap) if self.wrap is not None else None
        wrap_takes = _accepted(self.wrap) if self.wrap is not None else None
        if self.wrap is not None and not callable(self.wrap):
            problems.append("wrap must be a function")
        if self.output is not None and not callable(self.output):
            problems.append("output must be a function")
        if problems:
            raise RegistrationError([f"transforming tool {base.name!r}: {p}" for p in problems])
        if isinstance(self.output_schema, _Keep):
            out_schema = base.output_schema if self.output is None else None
        else:
            out_schema = self.output_schema
        wrap, output, original = self.wrap, self.output, base.call

        async def execute(mcpkit_transform_context__: Context, **arguments: Any) -> Any:
            ctx = mcpkit_transform_context__
            arguments = args.with_defaults(arguments)

            async def forward(**given: Any) -> dict[str, Any]:
                return await original(args.to_original(name, given), ctx)

            if wrap is None:
                value: Any = await forward(**arguments)
            else:
                passed = (
                    arguments
                    if wrap_takes is None
                    else {k: v for k, v in arguments.items() if k in wrap_takes}
                )
                if wrap_ctx is not None:
                    passed = {**passed, wrap_ctx: ctx}
                value = await _awaited(wrap(forward, **passed))
            if output is not None and not _is_error(value):
                value = await _awaited(output(value))
            return value

        meta = base.meta if isinstance(self.meta, _Keep) else self.meta
        return create_tool(
            id=name,
            description=base.description if self.description is None else self.description,
            input_schema=args.schema,
            execute=execute,
            output_schema=out_schema,
            title=base.title if self.title is None else self.title,
            annotations=base.annotations,
            icons=base.icons,
            meta=meta,
            scopes=scopes,
        )


def transform_tool(
    tool: ToolDefinition,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    arguments: Mapping[str, ArgTransform] | None = None,
    wrap: Callable[..., Any] | None = None,
    output: Callable[[Any], Any] | None = None,
    output_schema: dict[str, Any] | _Keep | None = KEEP,
    meta: dict[str, Any] | _Keep | None = KEEP,
) -> ToolDefinition:
    """A new tool calling ``tool``: ``ToolTransform(...).apply(tool)``; register it with
    ``server.add_tool``."""
    return ToolTransform(
        name=name,
        description=description,
        title=title,
        arguments=dict(arguments or {}),
        wrap=wrap,
        output=output,
        output_schema=output_schema,
        meta=meta,
    ).apply(tool)


def transform_tools(
    server: MCPServer,
    transforms: Mapping[str, ToolTransform],
    *,
    keep_originals: bool = False,
) -> None:
    """Serve on ``server`` the tools ``transforms`` make (original name -> transform).

    A name in ``server.tools`` (a local or mounted tool) gets a new registered
    tool; any other name is looked for in the server's component sources (a
    proxied tool), wrapped in a :class:`TransformedSource`. Unless
    ``keep_originals``, the original is no longer listed nor callable under its
    name. Call it once the tools are in place (after ``mount``; a mounted
    server that registers a tool again brings back its copy). Problems with
    local tools are raised at once; a proxied tool's only when listed or called.
    """
    problems: list[str] = []
    built: dict[str, ToolDefinition] = {}
    sourced: dict[str, ToolTransform] = {}
    for original, t in transforms.items():
        tool = server.tools.get(original)
        if tool is None:
            sourced[original] = t
            continue
        try:
            built[original] = t.apply(tool)
        except RegistrationError as exc:
            problems.extend(exc.problems)
            continue
        name = built[original].name
        replaced = name == original and not keep_originals
        if name in server.tools and not replaced:
            problems.append(f"transforming tool {original!r}: tool {name!r} is already served")
    if sourced and not any("tools" in s.kinds for s in server.component_sources):
        problems.extend(f"tool {n!r} is not served by {server.name!r}" for n in sourced)
    if problems:
        raise RegistrationError(problems)
    for original, tool in built.items():
        if not keep_originals:
            server.tools.remove(original)
        needs = server.back_channel_needs.get(original)
        if needs:
            server.back_channel_needs[tool.name] = needs
        server.add_tool(tool)
    if sourced:
        sources = server.component_sources
        for source in sources:
            server.remove_component_source(source)
        for source in sources:
            wrapped = (
                TransformedSource(source, sourced, keep_originals=keep_originals)
                if "tools" in source.kinds
                else source
            )
            server.add_component_source(wrapped)


class TransformedSource:
    """A component source with some of its tools transformed (its other components as they are).

    The new tool is made per session from that session's listing entry (the
    upstream may differ per session), again when the entry changes. Stateless
    sessions (2026-07-28, stateless HTTP: one per request) share theirs, as they
    share the proxy's upstream: a call need not list the upstream first each time.
    """

    def __init__(
        self,
        source: ComponentSource,
        transforms: Mapping[str, ToolTransform],
        *,
        keep_originals: bool = False,
    ) -> None:
        self.source = source
        self.transforms = dict(transforms)
        self.keep_originals = keep_originals
        self.kinds = frozenset(source.kinds)
        self.by_new_name = {(t.name or n): n for n, t in self.transforms.items()}
        # Session -> original name -> (the entry it was made from, the new tool).
        self.made: weakref.WeakKeyDictionary[
            ServerSession, dict[str, tuple[dict[str, Any], ToolDefinition]]
        ] = weakref.WeakKeyDictionary()
        #: Original name -> (entry, new tool), for the stateless sessions.
        self.shared: dict[str, tuple[dict[str, Any], ToolDefinition]] = {}

    def __repr__(self) -> str:
        return f"TransformedSource({self.source!r}, {sorted(self.transforms)})"

    def tool_for(self, session: ServerSession, entry: dict[str, Any]) -> ToolDefinition:
        original = str(entry.get("name"))
        made = self.made_for(session)
        cached = made.get(original)
        if cached is not None and cached[0] == entry:
            return cached[1]
        source = self.source

        async def call(arguments: dict[str, Any], ctx: Context | None) -> dict[str, Any]:
            assert ctx is not None  # served through a session: always one
            params = {**ctx.request.params, "name": original, "arguments": arguments}
            result = await source.serve(ctx.session, request_with(ctx.request, params))
            if result is None:
                raise InvalidParams(f"Unknown tool: {original}")
            return result

        tool = self.transforms[original].apply_to_entry(entry, call)
        made[original] = (entry, tool)
        return tool

    def made_for(self, session: ServerSession) -> dict[str, tuple[dict[str, Any], ToolDefinition]]:
        """The new tools made for ``session`` (shared by the stateless ones)."""
        return self.shared if session.stateless else self.made.setdefault(session, {})

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        entries = await self.source.list_components(session, kind)
        if kind != "tools":
            return entries
        out: list[dict[str, Any]] = []
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or name not in self.transforms:
                out.append(entry)
                continue
            if self.keep_originals:
                out.append(entry)
            out.append(self.tool_for(session, entry).describe())
        return out

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        if request.method != "tools/call":
            return await self.source.serve(session, request)
        name = request.params.get("name")
        original = self.by_new_name.get(name) if isinstance(name, str) else None
        if original is None:
            if name in self.transforms and not self.keep_originals:
                raise InvalidParams(f"Unknown tool: {name}")
            return await self.source.serve(session, request)
        cached = self.made_for(session).get(original)
        if cached is not None:
            tool = cached[1]
        else:  # called before listed: list once to learn the original's schema
            entries = await self.source.list_components(session, "tools")
            entry = next((e for e in entries if e.get("name") == original), None)
            if entry is None:
                return None
            tool = self.tool_for(session, entry)
        arguments = request.params.get("arguments")
        if arguments is not None and type(arguments) is not dict:
            raise InvalidParams("tools/call: 'arguments' must be an object")
        ctx = Context(session, request)
        return await tool.run(arguments, ctx, debug=session.server.debug)

    def session_closed(self, session: ServerSession) -> None:
        self.made.pop(session, None)
        self.source.session_closed(session)


async def _awaited(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _is_error(value: Any) -> bool:
    return isinstance(value, dict) and value.get("isError") is True


def _title(name: str) -> str:
    """The title pydantic gives a property called ``name``."""
    return name.replace("_", " ").title()


def _is_json(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def _context_parameter(fn: Callable[..., Any]) -> str | None:
    """The parameter of ``fn`` annotated ``Context`` (or ``Context | None``), if any."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    for name, annotation in hints.items():
        if name == "return":
            continue
        args = typing.get_args(annotation) or (annotation,)
        if any(isinstance(a, type) and issubclass(a, Context) for a in args):
            return name
    return None


def _accepted(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword arguments ``fn`` takes after ``forward``; None: any (``**kwargs``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params[1:] if p.kind is not p.VAR_POSITIONAL)
