"""The ``Context`` a tool, resource or prompt function receives.

Declare a parameter annotated ``Context`` (any name) and mcpkit passes the
request's context; it never appears in the input schema. Everything that
talks back to the client goes through the session, on the stream of the
request that caused it (2025-11-25 transports: related messages).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from ..errors import CapabilityError, ElicitationValidationError, InvalidParams
from .form_validation import answer_errors
from .lazy_pydantic import model_class, validation_error
from .visibility import ContextVisibility
from .worker_pool import InPlaceWait, call_in_thread

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import ErrorDetails

    from ..auth.info import AuthInfo
    from ..protocol.versions import Revision
    from .session import Request, ServerSession

__all__ = [
    "Context",
    "ElicitResult",
    "LogLevel",
    "ProgressSink",
    "RequestAsker",
    "RequestExtra",
    "Root",
    "current_context",
    "progress_reported_to",
    "progress_sink",
    "request_asker",
    "requests_answered_by",
]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: dict[str, int] = {
    name: i
    for i, name in enumerate(
        ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    )
}

T = TypeVar("T")

_current: ContextVar[Context | None] = ContextVar("mcpkit_context", default=None)

#: ``await sink(progress, total, message)``: where ``ctx.progress`` reports instead of the wire.
ProgressSink = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]

_progress_sink: ContextVar[ProgressSink | None] = ContextVar("mcpkit_progress", default=None)

#: ``await ask(method, params, key, timeout) -> result``: who answers requests to the client.
RequestAsker = Callable[
    [str, "dict[str, Any] | None", "str | None", "float | None"],
    Coroutine[Any, Any, "dict[str, Any]"],
]

_asker: ContextVar[RequestAsker | None] = ContextVar("mcpkit_asker", default=None)


def current_context() -> Context | None:
    """The ``Context`` of the MCP request being served, from anywhere in its call tree.

    Works in sync functions mcpkit runs in a worker thread too: they run in a
    copy of the request's ``contextvars`` context.
    """
    return _current.get()


@contextlib.contextmanager
def progress_reported_to(sink: ProgressSink) -> Iterator[None]:
    """Within this block (and the tasks and worker threads it starts), ``ctx.progress``
    awaits ``sink(progress, total, message)`` instead of sending
    ``notifications/progress``.

    For work that outlives its request: a task of the tasks extension (SEP-2663) runs
    after its ``tools/call`` was answered, so its progress has no request stream to go
    to and becomes the task's status message instead. Such work is detached from its
    request in one more way: on 2026-07-28 no retry will come back with a
    ``requestState``, so its ``tools/call`` runs in the caller's task (cancelling that
    task cancels the tool) rather than as a call that may pause for input
    (:func:`~mcpkit.server.stateless.input_required.runs_inline`).
    """
    token = _progress_sink.set(sink)
    try:
        yield
    finally:
        _progress_sink.reset(token)


@contextlib.contextmanager
def requests_answered_by(ask: RequestAsker) -> Iterator[None]:
    """Within this block (and the tasks it starts), a request to the client
    (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) awaits
    ``ask(method, params, key, timeout)`` for its result instead of going to the client,
    once the client's capabilities have been checked as usual.

    For work detached from its request, with :func:`progress_reported_to`: a task of
    the tasks extension (SEP-2663) asks through its own record (``input_required``,
    answered by ``tasks/update``). A sync tool's requests see it too: its thread runs in
    a copy of this context, and its calls hop to the loop with that copy.
    """
    token = _asker.set(ask)
    try:
        yield
    finally:
        _asker.reset(token)


def request_asker() -> RequestAsker | None:
    """The asker of the enclosing :func:`requests_answered_by` block; None outside one."""
    return _asker.get()


def progress_sink() -> ProgressSink | None:
    """The sink of the enclosing :func:`progress_reported_to` block; None outside one."""
    return _progress_sink.get()


async def run_sync(
    fn: Callable[..., T],
    kwargs: dict[str, Any],
    ctx: Context | None,
    *,
    wait: InPlaceWait | None = None,
) -> T:
    """Run a sync user function in a worker thread, so it never stalls the loop.

    The function runs in a copy of the caller's ``contextvars`` context, so
    :func:`current_context` works in the thread, and ``ctx`` learns the loop its
    blocking helpers (``ctx.info(...)`` from the thread) must hop back to. ``wait``
    lets the loop wait briefly in place for a quick function
    (:mod:`mcpkit.server.worker_pool`).
    """
    loop = asyncio.get_running_loop()
    if ctx is not None:
        ctx._loop = loop
    call = functools.partial(contextvars.copy_context().run, fn, **kwargs)
    return await call_in_thread(call, wait=wait, loop=loop)


@dataclass(frozen=True, slots=True)
class ElicitResult(Generic[T]):
    """The user's answer: ``action`` is ``accept``, ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: T | None = None


@dataclass(frozen=True, slots=True)
class Root:
    uri: str
    name: str | None = None


class CancelSignal:
    """Set when the client cancels the request (Mastra's ``signal``)."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._event is not None and self._event.is_set()

    aborted = cancelled

    def mark_cancelled(self) -> None:
        """Set the signal: the session serving the request calls this when the client
        cancels it or the session closes (a handler reads ``cancelled`` or awaits ``wait``)."""
        if self._event is None:
            self._event = asyncio.Event()
        self._event.set()

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()


@dataclass(slots=True)
class RequestExtra:
    """Mastra's ``extra``: what the transport knows about the request."""

    auth_info: Any
    session_id: str | None
    signal: CancelSignal
    send_notification: Callable[[str, dict[str, Any] | None], Awaitable[None]]
    send_request: Callable[..., Awaitable[dict[str, Any]]]
    request_id: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


class Context(ContextVisibility):
    """Per-request handle: logging, progress, elicitation, sampling, roots, visibility."""

    __slots__ = ("_extra", "_loop", "request", "session")

    def __init__(self, session: ServerSession, request: Request) -> None:
        self.session = session
        self.request = request
        self._extra: RequestExtra | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- identity -------------------------------------------------------------------------
    @property
    def request_id(self) -> Any:
        return self.request.id

    @property
    def session_id(self) -> str | None:
        return self.session.session_id

    @property
    def meta(self) -> dict[str, Any]:
        return self.request.meta

    @property
    def auth(self) -> AuthInfo | None:
        """Who the request's bearer token speaks for: an :class:`~mcpkit.auth.AuthInfo`
        on a protected HTTP server (or what an ASGI middleware put in
        ``scope["mcpkit.auth"]``); None on stdio, in memory and when unauthenticated.
        Also ``ctx.auth_info`` and ``ctx.extra.auth_info`` (Mastra's spelling)."""
        info: AuthInfo | None = self.request.auth_info
        return info

    @property
    def auth_info(self) -> Any:
        """The same as :attr:`auth` (any object an ASGI middleware supplied)."""
        return self.request.auth_info

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities

    @property
    def cancelled(self) -> bool:
        return self.request.cancelled

    @property
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded (``MCPServer(lifespan=...)``): shared
        resources such as a database pool; None when the server has no lifespan."""
        return self.session.server.lifespan_state

    @property
    def extra(self) -> RequestExtra:
        if self._extra is None:
            req = self.request
            self._extra = RequestExtra(
                auth_info=req.auth_info,
                session_id=self.session.session_id,
                signal=req.signal,
                send_notification=self.send_notification,
                send_request=self.send_request,
                request_id=req.id,
                meta=req.meta,
            )
        return self._extra

    # -- thread bridge: sync tools run in a worker thread ----------------------------------
    def _call(self, coro: Coroutine[Any, Any, T]) -> Any:
        """On the loop: the awaitable. In a worker thread: run it on the loop and wait."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop = self._loop
            if loop is None and self.request.task is not None:
                loop = self.request.task.get_loop()
            if loop is None:
                coro.close()
                raise RuntimeError("this Context is not bound to a running event loop") from None
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        return coro

    # -- notifications ----------------------------------------------------------------------
    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.request.send(method, params)

    def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> Any:
        """Send ``notifications/message`` if the session's level lets it through."""
        return self._call(self.session.log(self.request, level, data, logger=logger))

    def debug(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("debug", data, logger=logger)

    def info(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("info", data, logger=logger)

    def warning(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("warning", data, logger=logger)

    def error(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("error", data, logger=logger)

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Any:
        """Report progress; a no-op when the request carried no progress token.

        Inside :func:`progress_reported_to` it goes to that block's sink instead."""
        sink = _progress_sink.get()  # read here: a sync tool's thread has a copy of it
        if sink is not None:
            return self._call(sink(progress, total, message))
        return self._call(self.request.progress(progress, total, message))

    def close_sse_stream(self) -> Any:
        """Close this request's SSE stream now; the client resumes it later (SEP-1699 polling).

        Messages sent afterwards, and the result, are kept in the transport's
        event store and replayed when the client reconnects with
        ``Last-Event-ID``. A no-op when the transport cannot resume streams.
        """
        return self._call(self._close_sse_stream())

    async def _close_sse_stream(self) -> None:
        close = self.request.close_stream
        if close is not None:
            await close()

    # -- requests to the client -------------------------------------------------------------
    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        return await self.session.send_request(method, params, self.request, timeout=timeout)

    @overload
    def elicit(
        self,
        message: str,
        schema: type[T],
        *,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Awaitable[ElicitResult[T]]: ...
    @overload
    def elicit(
        self,
        message: str,
        schema: dict[str, Any],
        *,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Awaitable[ElicitResult[dict[str, Any]]]: ...
    def elicit(
        self, message: str, schema: Any, *, timeout: float | None = None, key: str | None = None
    ) -> Any:
        """Ask the user for structured input (client/elicitation, form mode).

        ``schema`` is a pydantic model (the content is parsed into it) or a
        JSON-Schema dict of a flat object (enums and defaults allowed; the answer
        is checked against it as :mod:`~mcpkit.server.form_validation` says). ``key``
        names the question in a 2026-07-28 input-required result (default:
        ``elicitation``, ``elicitation_2``, ...).

        An accepted answer that does not fit ``schema`` raises
        :class:`~mcpkit.errors.ElicitationValidationError` (its ``content`` and
        ``errors``): catch it to ask again or fall back; uncaught in a tool it
        becomes a tool error naming each failing field.
        """
        return self._call(self._elicit(message, schema, timeout, key))

    async def _elicit(
        self, message: str, schema: Any, timeout: float | None, key: str | None = None
    ) -> ElicitResult[Any]:
        model = model_class(schema)
        if model is not None:
            requested = elicitation_schema(model)
        elif isinstance(schema, dict):
            requested = schema
        else:
            raise TypeError("elicit() schema must be a pydantic model class or a JSON-Schema dict")
        revision = self.session.revision
        unreachable = self.session.unreachable("elicitation/create")
        if unreachable is not None:
            raise unreachable
        caps = self.session.client_capabilities.get("elicitation")
        if caps is None:
            raise CapabilityError(
                "the client did not declare the 'elicitation' capability, so the server cannot "
                "send elicitation/create"
            )
        if not revision.elicitation:
            raise CapabilityError(
                f"elicitation is not part of protocol revision {revision.name}: the client must "
                "negotiate 2025-06-18 or later"
            )
        # 2025-11-25 client/elicitation § capabilities: `{}` means form mode only.
        if isinstance(caps, dict) and caps and "form" not in caps:
            raise CapabilityError("the client supports only URL-mode elicitation, not forms")
        params: dict[str, Any] = {
            "message": message,
            "requestedSchema": requested_schema_for(requested, revision),
        }
        if revision.rich_elicitation:
            params["mode"] = "form"
        result = await self.session.send_request(
            "elicitation/create", params, self.request, timeout=timeout, key=key
        )
        action = result.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise InvalidParams(f"client answered elicitation with an unknown action {action!r}")
        if action != "accept":
            return ElicitResult(action=action)
        content = result.get("content")
        if model is not None:
            try:
                return ElicitResult(action="accept", content=model.model_validate(content or {}))
            except validation_error() as exc:
                raise ElicitationValidationError(content, exc.errors(include_url=False)) from None
        if content is not None and not isinstance(content, dict):
            problem: ErrorDetails = {
                "type": "dict_type",
                "loc": (),
                "msg": f"the content is not an object (got {type(content).__name__})",
                "input": content,
            }
            raise ElicitationValidationError(content, [problem])
        checked, errors = answer_errors(requested, content or {})
        if errors:
            raise ElicitationValidationError(content, errors)
        return ElicitResult(action="accept", content=None if content is None else checked)

    def sample(
        self,
        messages: str | list[dict[str, Any]],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        metadata: dict[str, Any] | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Any:
        """Ask the client's LLM (``sampling/createMessage``); returns the result dict.

        ``key`` names the question in a 2026-07-28 input-required result.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens}
        for name, value in (
            ("systemPrompt", system_prompt),
            ("temperature", temperature),
            ("stopSequences", stop_sequences),
            ("modelPreferences", model_preferences),
            ("includeContext", include_context),
            ("metadata", metadata),
        ):
            if value is not None:
                params[name] = value
        return self._call(
            self.session.send_request(
                "sampling/createMessage",
                params,
                self.request,
                timeout=timeout,
                capability="sampling",
                key=key,
            )
        )

    def list_roots(self, *, timeout: float | None = None, key: str | None = None) -> Any:
        """The client's roots (``roots/list``); ``key`` as for :meth:`elicit`."""
        return self._call(self._list_roots(timeout, key))

    async def _list_roots(self, timeout: float | None, key: str | None = None) -> list[Root]:
        result = await self.session.send_request(
            "roots/list", None, self.request, timeout=timeout, capability="roots", key=key
        )
        return [Root(uri=r["uri"], name=r.get("name")) for r in result.get("roots", [])]

    def once(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` (sync or async) once per call, however many rounds it takes.

        On the stateless era the JSON result is journaled in the ``requestState``;
        when a later round is served by another worker, which replays the handler
        from the top, this returns the journaled result instead of running ``fn``
        again. Wrap each side effect (a payment, an e-mail, a counter) in a step
        whose ``name`` is unique within the handler (a repeated name counts its
        occurrences). The result must be plain JSON (dict, list, str, int, float,
        bool, None), and comes back as JSON gives it (a tuple as a list); the
        client can read it (the state is signed, not encrypted). On the
        handshake era, and for requests that cannot ask for input, ``fn`` simply
        runs and its value is returned as is. A sync ``fn`` runs in a worker thread.
        """
        return self._call(self._once(name, fn, args))

    async def _once(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        call = self.session.inputs
        if not inspect.iscoroutinefunction(fn):
            fn = functools.partial(run_sync, functools.partial(fn, *args), {}, self)
            args = ()
        if call is None:
            value = fn(*args)
            return await value if inspect.isawaitable(value) else value
        return await call.once(name, fn, args)

    def ping(self, *, timeout: float | None = None) -> Any:
        return self._call(self.session.send_request("ping", None, self.request, timeout=timeout))


def _inline(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Resolve a pydantic ``$ref`` (enums) and ``Optional[X]`` into one flat property."""
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = dict(defs.get(ref.rsplit("/", 1)[-1], {}))
        target.update({k: v for k, v in prop.items() if k != "$ref"})
        prop = target
    if "anyOf" in prop:  # Optional[X]
        options = [p for p in prop["anyOf"] if p.get("type") != "null"]
        if len(options) == 1:
            merged = _inline(dict(options[0]), defs)
            merged.update({k: v for k, v in prop.items() if k != "anyOf"})
            prop = merged
    if isinstance(prop.get("items"), dict):  # multi-select: list[Enum] / list[Literal]
        prop["items"] = _inline(prop["items"], defs)
        prop["items"].pop("title", None)
    if "default" in prop and prop["default"] is None:
        del prop["default"]  # a null default is not a value of any primitive schema
    return prop


def elicitation_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A flat ``requestedSchema`` from a pydantic model (elicitation § requested schema).

    Fields may be ``str`` (with ``format`` from e.g. ``EmailStr``, ``date``),
    ``int``, ``float``, ``bool``, an ``Enum`` or ``Literal`` of strings (single
    select), or a list of those (multi select, 2025-11-25); defaults carry over.
    """
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    props = {name: _inline(dict(prop), defs) for name, prop in schema.get("properties", {}).items()}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def requested_schema_for(schema: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``schema`` in the forms ``revision`` knows.

    2025-11-25 added defaults on strings, numbers and enums, titled enums
    (``oneOf`` of ``const``/``title``) and multi-select enums; for 2025-06-18
    defaults are dropped (the form still works without them), titled enums
    become the legacy ``enum`` + ``enumNames`` form, and a multi-select cannot be
    expressed at all.
    """
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict):
        raise ValueError("an elicitation schema is a flat JSON object schema with 'properties'")
    if revision.rich_elicitation:
        return schema
    out_props: dict[str, Any] = {}
    for name, prop in props.items():
        if not isinstance(prop, dict):
            raise ValueError(f"elicitation schema property {name!r} is not an object")
        prop = dict(prop)
        kind = prop.get("type")
        if kind == "array":
            raise CapabilityError(
                f"multi-select field {name!r} needs protocol revision 2025-11-25; "
                f"the client negotiated {revision.name}"
            )
        one_of = prop.pop("oneOf", None)
        if isinstance(one_of, list):
            prop["enum"] = [option.get("const") for option in one_of]
            prop["enumNames"] = [option.get("title", option.get("const")) for option in one_of]
        if kind != "boolean":
            prop.pop("default", None)
        out_props[name] = prop
    return {**schema, "properties": out_props}
