"""Tools: registration (schemas built once) and ``tools/list`` / ``tools/call``.

Errors raised by a tool, and argument validation failures, become a result
with ``isError: true`` (2025-11-25 server/tools § error handling); an unknown
tool is a protocol error (-32602).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import (
    InvalidParams,
    MCPKitError,
    RegistrationError,
    ToolError,
)
from ..protocol.error_answers import tool_error_text
from ..protocol.http_headers import param_headers_of_schema
from .content import ToolResult, dump_text, to_content_list
from .context import run_sync
from .json_schema_check import json_schema_validator
from .lazy_pydantic import is_model_class, model_class, validation_error
from .scopes import parse_scopes
from .signature import (
    FunctionSignature,
    SignatureError,
    format_validation_error,
    inspect_function,
    is_object_type,
    output_adapter,
    summary,
)
from .stateless.mcp_header import header_problems
from .tool_annotations import ToolAnnotations, checked_annotations
from .tool_output import dump_any, structured_dumper, wrappable, wrapped_output
from .visibility import checked_tags
from .worker_pool import InPlaceWait

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .context import Context

__all__ = ["ToolAnnotations", "ToolDefinition", "create_tool"]

log = logging.getLogger("mcpkit.server")

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


@dataclass(slots=True)
class ToolDefinition:
    """A registered tool. Build one with ``@server.tool`` or :func:`create_tool`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Callable[..., Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: ToolAnnotations | dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: OAuth scopes a caller's token needs to see and call it (see :mod:`.scopes`).
    scopes: frozenset[str] = frozenset()
    #: Labels to enable and disable tools by (``server.disable(tags=...)``, .visibility).
    tags: frozenset[str] = frozenset()
    #: False: registered hidden, until ``server.enable(name)`` (see .visibility).
    enabled: bool = True
    #: Seconds a call may run before it is cancelled and answers a tool error; None: no limit.
    timeout: float | None = None
    #: This tool's version: listed, and chosen by ``tools/call`` with ``version`` (as prompts).
    version: str | None = None
    # Prebuilt at registration:
    _validate: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda a: a, repr=False)
    _context_param: str | None = field(default=None, repr=False)
    _is_async: bool = field(default=False, repr=False)
    _inline: bool = field(default=False, repr=False)  # a sync tool called on the loop
    _wait: InPlaceWait = field(default_factory=InPlaceWait, repr=False)  # for a sync tool
    _dump_output: Callable[[Any], Any] | None = field(default=None, repr=False)
    _typed_output: bool = field(default=False, repr=False)  # the return type is an object type
    _wrapped: bool = field(default=False, repr=False)  # structuredContent is {"result": value}
    _listing: dict[str, Any] = field(default_factory=dict, repr=False)
    _headers: dict[tuple[str, ...], str] | None = field(default=None, repr=False)

    @property
    def takes_no_context(self) -> bool:
        """The function declares no :class:`Context` parameter (it can still reach one
        through :func:`current_context`)."""
        return self._context_param is None

    def param_headers(self) -> dict[tuple[str, ...], str]:
        """Argument path → ``Mcp-Param-{Name}`` header (2026-07-28 ``x-mcp-header``), cached:
        every stateless-era ``tools/call`` checks its headers against it."""
        if self._headers is None:
            self._headers = param_headers_of_schema(self.describe().get("inputSchema"))
        return self._headers

    def renamed(self, name: str) -> ToolDefinition:
        """A copy of this tool under ``name``, calling the same function in the same way.

        Everything prepared at registration (validator, output dumper, flags) is
        shared, so calling the copy costs what calling this tool costs; the
        ``tools/list`` entry and the header map are built again for the new name.
        """
        return dataclasses.replace(self, name=name, _listing={}, _headers=None)

    def describe(self) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list`` (cached)."""
        if not self._listing:
            item: dict[str, Any] = {
                "name": self.name,
                "description": self.description,
                "inputSchema": self.input_schema,
            }
            if self.title:
                item["title"] = self.title
            if self.output_schema is not None:
                item["outputSchema"] = self.output_schema
            ann = (
                self.annotations.to_dict()
                if isinstance(self.annotations, ToolAnnotations)
                else self.annotations
            )
            if ann:
                item["annotations"] = ann
            if self.icons:
                item["icons"] = self.icons
            if self.meta:
                item["_meta"] = self.meta
            if self.version is not None:
                item["version"] = self.version
            self._listing = item
        return self._listing

    async def run(
        self, arguments: Mapping[str, Any] | None, ctx: Context | None, *, debug: bool = False
    ) -> dict[str, Any]:
        """Validate, call and convert: a ``CallToolResult`` dict, errors included.

        Invalid arguments become an ``isError`` result naming every failing path;
        what an exception from the tool shows is decided by
        :func:`mcpkit.protocol.error_answers.tool_error_text`.
        """
        try:
            kwargs = self._validate(dict(arguments or {}))
        except validation_error() as exc:
            return _error_result(
                f"Invalid arguments for tool '{self.name}': {format_validation_error(exc)}"
            )
        except InvalidParams as exc:
            return _error_result(f"Invalid arguments for tool '{self.name}': {exc.message}")
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        try:
            if self.timeout is not None:
                value = await self._call_timed(kwargs, ctx)
            elif self._is_async:
                value = await self.execute(**kwargs)
            elif self._inline:
                value = self.execute(**kwargs)
            else:
                # A function that can call back into the loop (through its Context) is
                # not waited for in place: the loop would be blocked under it.
                wait = self._wait if self._context_param is None else None
                value = await run_sync(self.execute, kwargs, ctx, wait=wait)
        except Exception as exc:
            text = tool_error_text(exc, tool=self.name, debug=debug)
            if text is None:
                raise
            if not isinstance(exc, MCPKitError):
                log.exception("tool %r raised", self.name)
            return _error_result(text)
        try:
            return self.to_result(value)
        except validation_error() as exc:
            # 2025-06-18 server/tools § output schema: structured results MUST conform.
            return _error_result(
                f"Tool '{self.name}' returned a value that does not match its output schema: "
                f"{format_validation_error(exc, root='(result)')}"
            )

    async def _call_timed(self, kwargs: dict[str, Any], ctx: Context | None) -> Any:
        """Call the function, cancelled after :attr:`timeout` seconds (a ``ToolError``).

        A sync function's thread cannot be stopped: its result is dropped when it
        comes, and the call answers at the deadline all the same.
        """
        assert self.timeout is not None
        scope = asyncio.timeout(self.timeout)
        try:
            async with scope:
                if self._is_async:
                    return await self.execute(**kwargs)
                # Awaited, never waited for in place: the deadline must be able to fire.
                return await run_sync(self.execute, kwargs, ctx, wait=None)
        except TimeoutError:
            if not scope.expired():
                raise  # the tool's own TimeoutError, not the deadline
            raise ToolError(f"Tool '{self.name}' timed out after {self.timeout:g} s") from None

    def to_result(self, value: Any) -> dict[str, Any]:
        if type(value) is str and self._dump_output is None:  # the most common result
            return {"content": [{"type": "text", "text": value}]}
        if isinstance(value, ToolResult):
            return value.to_dict()
        if (
            isinstance(value, dict)
            and "content" in value
            and isinstance(value.get("content"), list)
        ):
            return value  # already a CallToolResult
        if self._wrapped:  # a primitive or a list (see .tool_output); content as unwrapped
            assert self._dump_output is not None
            structured = {"result": self._dump_output(value)}
            if type(value) is str:
                return {
                    "content": [{"type": "text", "text": value}],
                    "structuredContent": structured,
                }
            text = isinstance(value, int | float | bool)
            content = (
                [{"type": "text", "text": dump_text(value)}] if text else to_content_list(value)
            )
            return {"content": content, "structuredContent": structured}
        if self._dump_output is not None and (
            self._typed_output or (value is not None and not isinstance(value, str | list))
        ):
            structured = self._dump_output(value)
            if isinstance(structured, dict):
                return {
                    "content": [{"type": "text", "text": dump_text(structured)}],
                    "structuredContent": structured,
                }
        if isinstance(value, int | float | bool) and not isinstance(value, str):
            return {"content": [{"type": "text", "text": dump_text(value)}]}
        return {"content": to_content_list(value)}


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _finish(
    tool: ToolDefinition, output_type: Any, problems: list[str], *, text: bool = False
) -> ToolDefinition:
    """Check what is left and raise every problem of ``tool`` at once, each naming it.

    ``text``: a ``str`` return is wrapped as structured output too (.tool_output).
    """
    tool.annotations = checked_annotations(tool.annotations, problems)
    _check_timeout_and_version(tool, problems)
    if not _NAME_RE.match(tool.name):
        log.warning("tool name %r is not 1-128 characters of [A-Za-z0-9_.-]", tool.name)
    # x-mcp-header annotations are checked here, once, so that a bad one fails the
    # decorator instead of making clients drop the tool (2026-07-28 server/tools).
    # Those problems name the tool themselves.
    named = header_problems(tool.name, tool.input_schema)
    if output_type is not None and is_object_type(output_type):
        try:
            adapter, schema = output_adapter(output_type)
        except Exception:
            shown = getattr(output_type, "__name__", None) or repr(output_type)
            problems.append(
                f"cannot build its output schema: return type {shown} cannot be described as "
                "JSON Schema (pass structured_output=False to return it as text)"
            )
        else:
            if tool.output_schema is None:
                tool.output_schema = schema
            tool._dump_output = structured_dumper(adapter, output_type)
            tool._typed_output = True
    elif (
        tool.output_schema is None and output_type is not None and wrappable(output_type, text=text)
    ):
        try:
            tool.output_schema, tool._dump_output = wrapped_output(output_type)
            tool._wrapped = True
        except Exception:  # not describable: sent as content only, as before
            log.debug("tool %r: no structured output for %r", tool.name, output_type)
    elif tool.output_schema is not None:
        tool._dump_output = dump_any
    if problems or named:
        raise RegistrationError([*(f"tool {tool.name!r}: {p}" for p in problems), *named])
    return tool


def _check_timeout_and_version(tool: ToolDefinition, problems: list[str]) -> None:
    timeout = tool.timeout
    if timeout is not None and (
        type(timeout) not in (int, float) or not 0 < timeout < float("inf")
    ):
        problems.append(f"timeout must be a positive number of seconds, not {timeout!r}")
    elif timeout is not None and tool._inline:
        problems.append(
            "timeout= cannot stop a tool run on the event loop (run_in_thread=False); "
            "make it async, or let it run in a thread"
        )
    if tool.version is not None and (type(tool.version) is not str or not tool.version):
        problems.append(f"version must be a non-empty string, not {tool.version!r}")


def tool_from_function(
    fn: Callable[..., Any],
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
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
    timeout: float | None = None,
    version: str | None = None,
) -> ToolDefinition:
    """A tool whose input schema comes from ``fn``'s signature and docstring.

    A sync ``fn`` runs in a worker thread so it cannot stall the event loop.
    ``run_in_thread=False`` calls it on the loop instead, saving the thread
    hop (tens of microseconds) for functions that return at once and never
    block; such a function cannot take a ``Context`` (its helpers need to
    await). ``scopes`` lists the OAuth scopes a caller's token needs to see and
    call the tool (see :mod:`.scopes`).
    """
    check_run_in_thread(f"tool {name or getattr(fn, '__name__', None)!r}", run_in_thread)
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise RegistrationError(["a tool needs a name: pass name=... for lambdas and callables"])
    problems: list[str] = []
    needed = parse_scopes(scopes, problems)
    tagged = checked_tags("tags", tags, problems)
    sig: FunctionSignature | None = None
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}
    try:
        sig = inspect_function(
            fn, model_name=f"{tool_name}_arguments", schema=True, run_in_thread=run_in_thread
        )
        input_schema = sig.json_schema()
    except SignatureError as exc:  # say which tool and every bad parameter, at registration
        problems.extend(exc.problems)
    doc = sig.doc if sig is not None else inspect.getdoc(fn)
    desc = description if description is not None else (summary(doc) or "")
    tool = ToolDefinition(
        name=tool_name,
        description=desc,
        input_schema=input_schema,
        execute=fn,
        output_schema=output_schema,
        title=title,
        annotations=annotations,
        icons=icons,
        meta=meta,
        scopes=needed,
        tags=tagged,
        enabled=enabled,
        timeout=timeout,
        version=version,
    )
    if sig is None:
        return _finish(tool, None, problems)  # raises
    tool._validate, tool.execute = sig.validate, sig.fn  # sig.fn resolves any Depends
    tool._context_param = sig.context_param
    tool._is_async = sig.is_async
    _choose_thread(tool, run_in_thread, problems)
    output_type = sig.return_annotation if structured_output is not False else None
    return _finish(tool, output_type, problems, text=structured_output is True)


def create_tool(
    *,
    id: str,
    description: str,
    execute: Callable[..., Any] | Callable[..., Awaitable[Any]],
    input_schema: dict[str, Any] | type[BaseModel] | None = None,
    output_schema: dict[str, Any] | type[BaseModel] | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    run_in_thread: bool = True,
    scopes: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    enabled: bool = True,
    timeout: float | None = None,
    version: str | None = None,
) -> ToolDefinition:
    """A tool defined explicitly, as Mastra's ``createTool`` does.

    ``input_schema`` is a pydantic model or a JSON-Schema dict, emitted
    unchanged; without one the schema comes from ``execute``'s signature.
    ``execute`` (sync or async) is called in one of two forms:

    - keyword form: its parameters are properties of ``input_schema`` and
      receive the validated arguments by name (``**kwargs`` receives them all);
    - input form (as Mastra's ``execute(context)``): one parameter that is not
      a property receives the whole validated input, the model instance for a
      pydantic ``input_schema`` or the dict for a JSON Schema.

    Either form may add a parameter annotated :class:`Context`. A signature
    that fits neither (a required parameter the schema does not have,
    positional-only parameters, ``*args``) is refused at registration.
    A sync ``execute`` runs in a worker thread; ``run_in_thread=False`` calls it
    on the event loop, for one that returns at once and never blocks.
    ``scopes`` lists the OAuth scopes a caller's token needs (see :mod:`.scopes`).
    """
    check_run_in_thread(f"tool {id!r}", run_in_thread)
    if input_schema is None:
        return tool_from_function(
            execute,
            name=id,
            description=description,
            title=title,
            annotations=annotations,
            icons=icons,
            meta=meta,
            output_schema=output_schema if isinstance(output_schema, dict) else None,
            run_in_thread=run_in_thread,
            scopes=scopes,
            tags=tags,
            enabled=enabled,
            timeout=timeout,
            version=version,
        )
    problems: list[str] = []
    needed = parse_scopes(scopes, problems)
    tagged = checked_tags("tags", tags, problems)
    sig: FunctionSignature | None = None
    try:
        sig = inspect_function(execute, model_name=f"{id}_execute", run_in_thread=run_in_thread)
    except SignatureError as exc:
        problems.extend(f"execute: {p}" for p in exc.problems)
    out_type: Any = None
    out_schema: dict[str, Any] | None = None
    if is_model_class(output_schema):
        out_type = output_schema
    elif isinstance(output_schema, dict):
        out_schema = output_schema
    elif output_schema is not None:
        problems.append("output_schema must be a pydantic model or a JSON-Schema dict")
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    model = model_class(input_schema)
    if model is not None:
        try:
            schema = model.model_json_schema()
        except Exception:
            problems.append(f"input_schema {model.__name__} cannot be described as JSON Schema")
        properties: Collection[str] = tuple(model.model_fields)
    elif isinstance(input_schema, dict):
        schema = input_schema
        props = schema.get("properties")
        properties = tuple(props) if isinstance(props, dict) else ()
    else:
        problems.append("input_schema must be a pydantic model or a JSON-Schema dict")
        properties = ()
    tool = ToolDefinition(
        name=id,
        description=description,
        input_schema=schema,
        execute=execute,
        output_schema=out_schema,
        title=title,
        annotations=annotations,
        icons=icons,
        meta=meta,
        scopes=needed,
        tags=tagged,
        enabled=enabled,
        timeout=timeout,
        version=version,
    )
    if sig is None or problems:
        return _finish(tool, None, problems)  # raises
    whole = _input_parameter(execute, sig, properties, problems)
    if problems:
        return _finish(tool, None, problems)  # raises
    tool._validate = _explicit_validator(id, model, schema, sig, whole, execute)
    tool.execute = sig.fn  # resolves any Depends parameters
    tool._context_param = sig.context_param
    tool._is_async = sig.is_async
    _choose_thread(tool, run_in_thread, problems)
    return _finish(tool, out_type, problems)


def _input_parameter(
    execute: Callable[..., Any],
    sig: FunctionSignature,
    properties: Collection[str],
    problems: list[str],
) -> str | None:
    """The parameter of ``execute`` that takes the whole input (input form), or None.

    Appends a problem for each required parameter the schema cannot fill.
    """
    params = inspect.signature(execute).parameters
    strangers = [n for n in sig.param_names if n not in properties]
    required = [n for n in strangers if params[n].default is inspect.Parameter.empty]
    if len(sig.param_names) == 1 and len(required) == 1:
        return required[0]
    if required:
        shown = ", ".join(map(repr, properties)) or "none"
        problems.append(
            f"execute parameter(s) {', '.join(map(repr, required))} are not properties of "
            f"input_schema (it has: {shown}); name parameters after the properties, or take "
            "the whole input in one parameter, as execute(context)"
        )
    return None


def _explicit_validator(
    name: str,
    model: type[BaseModel] | None,
    schema: dict[str, Any],
    sig: FunctionSignature,
    whole: str | None,
    execute: Callable[..., Any],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Validate against ``create_tool``'s input schema; shape the result for ``execute``."""
    validate: Callable[[dict[str, Any]], dict[str, Any]]
    if model is not None:
        fields = tuple(model.model_fields)
        checked = model

        if whole is not None:

            def validate_input(args: dict[str, Any]) -> dict[str, Any]:
                return {whole: checked.model_validate(args)}

            return validate_input

        def validate_model(args: dict[str, Any]) -> dict[str, Any]:
            obj = checked.model_validate(args)
            return {k: getattr(obj, k) for k in fields}

        validate = validate_model
    else:
        validate = json_schema_validator(name, schema)
        if whole is not None:
            inner_schema = validate

            def validate_dict(args: dict[str, Any]) -> dict[str, Any]:
                return {whole: inner_schema(args)}

            return validate_dict
    if _accepts_var_kwargs(execute):
        return validate
    allowed = set(sig.param_names)
    inner = validate

    def validate_declared(args: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in inner(args).items() if k in allowed}

    return validate_declared


def check_run_in_thread(where: str, run_in_thread: object) -> None:
    """``run_in_thread`` must be a bool (a truthy string would silently mean True)."""
    if type(run_in_thread) is not bool:
        raise RegistrationError(
            [f"{where}: run_in_thread must be True or False, not {run_in_thread!r}"]
        )


def _choose_thread(tool: ToolDefinition, run_in_thread: bool, problems: list[str]) -> None:
    """Where a sync tool runs: a worker thread (the default) or the event loop."""
    if run_in_thread or tool._is_async:
        return
    if tool._context_param is not None:
        problems.append(
            "run_in_thread=False cannot be combined with a Context parameter (its own or a "
            "dependency's); make the function async to use the context on the event loop"
        )
        return
    tool._inline = True


def _accepts_var_kwargs(fn: Callable[..., Any]) -> bool:
    return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
