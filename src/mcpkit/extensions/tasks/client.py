"""The tasks extension's client part: a task followed inside ``call_tool``, and :class:`TaskHandle`.

SEP-2663 (ext-tasks ``specification/draft/tasks.md``; the overview in the spec tree,
``extensions/tasks/overview.mdx``, "For MCP clients"): a client declares the extension,
then handles whichever result arrives, the tool's result or a ``CreateTaskResult``
(``resultType: "task"``), which it follows with ``tasks/get`` until the task is terminal,
answering ``input_required`` with ``tasks/update``.

``Client(extensions=[tasks_client()])`` does all of it through two public seams of the
client core:

* ``client_capability``: the extension is declared as ``capabilities.extensions``
  (``initialize`` on the handshake era, every request's envelope on 2026-07-28), so the
  server may answer with a task (:func:`mcpkit.client.request_meta.declared_extensions`);
* ``result_handlers``: a ``resultType: "task"`` result of ``call_tool`` is followed to
  its end by :func:`follow` (:mod:`mcpkit.client.results`), so ``await
  client.call_tool(...)`` returns the final result as if the call had been answered in
  place. It listens for the task's status notifications when the server grants them
  (or polls at the task's ``pollIntervalMs``), answers ``inputRequests`` with the
  session's elicitation, sampling and roots handlers, reports each new status to
  ``on_status`` and the call's ``progress`` callback, raises the task's JSON-RPC error
  for ``failed``, and cancels the task (``tasks/cancel``) when the caller is cancelled.

Callers that manage a task themselves (persist its id, resume it after a restart) use
:func:`call_tool_task`, which returns a :class:`TaskHandle` (or the result, when the
server answered in place), or ``TaskHandle(client, task_id)`` for a known id.

Listening (2026-07-28, SEP-2663 "Task Status Notifications"): a follower adds its task
id to the session's ``subscriptions/listen`` filter (``taskIds``, through the client's
listener, :meth:`mcpkit.client.stateless.listen.Listener.set_filter`); when the server's
acknowledgment grants it, each ``notifications/tasks`` (a full ``DetailedTask``) moves
the follower on without a ``tasks/get``, and it polls only as a safety net, every
:data:`LISTEN_CHECK_FACTOR` poll intervals (at least :data:`MIN_LISTEN_CHECK` s), in
case a notification was lost with a broken stream. A server that does not grant it
(the handshake era, which has no ``subscriptions/listen``, or a server without
notifications) is polled at its ``pollIntervalMs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ...client.client import Client
from ...client.results import ResultContext, ResultHandler
from ...client.stateless import input_required
from ...errors import INTERNAL_ERROR, METHOD_NOT_FOUND, MCPError, RemoteError
from .listening import listen_to, stop_listening
from .records import EXTENSION_ID
from .states import TERMINAL, TaskStatus

if TYPE_CHECKING:
    from ...client.handlers import ProgressCallback
    from ...client.session import ClientSession

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "StatusCallback",
    "TaskHandle",
    "TaskState",
    "TasksClient",
    "call_tool_task",
    "follow",
    "tasks_client",
]

log = logging.getLogger("mcpkit.extensions.tasks")

#: Seconds between two ``tasks/get`` when the task names no ``pollIntervalMs``.
DEFAULT_POLL_INTERVAL: Final = 0.5
#: The least time between two polls, whatever the server asks: a zero or tiny interval
#: must not turn following a task into a busy loop.
MIN_POLL_INTERVAL: Final = 0.01
#: How long a cancelled caller waits for its ``tasks/cancel`` to be acknowledged.
CANCEL_WAIT: Final = 5.0
#: A follower that listens still polls once per this many poll intervals...
LISTEN_CHECK_FACTOR: Final = 10
#: ...and never more often than every this many seconds.
MIN_LISTEN_CHECK: Final = 5.0

StatusCallback = Callable[["TaskState"], Awaitable[None] | None]
"""``on_status(state)``, sync or async: called once for each new status or status message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskState:
    """A task as ``tasks/get`` (a ``DetailedTask``) or a ``CreateTaskResult`` shows it.

    ``input_requests``, ``result`` and ``error`` are the payload of ``input_required``,
    ``completed`` and ``failed``; ``wire`` is the object as received.
    """

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: Mapping[str, Any] | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    wire: Mapping[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task is ``completed``, ``failed`` or ``cancelled`` (it stays so)."""
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> TaskState:
        """The state of a ``Task``/``DetailedTask`` object; ``ValueError`` if it is not one."""
        task_id = data.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("a task needs a 'taskId' string")
        try:
            status = TaskStatus(str(data.get("status")))
        except ValueError:
            raise ValueError(f"task {task_id}: unknown status {data.get('status')!r}") from None

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def number(key: str) -> int | None:
            value = data.get(key)
            return value if type(value) is int else None

        def payload(key: str) -> Mapping[str, Any] | None:
            value = data.get(key)
            return value if isinstance(value, dict) else None

        return cls(
            task_id=task_id,
            status=status,
            status_message=text("statusMessage"),
            created_at=text("createdAt"),
            last_updated_at=text("lastUpdatedAt"),
            ttl_ms=number("ttlMs"),
            poll_interval_ms=number("pollIntervalMs"),
            input_requests=payload("inputRequests"),
            result=payload("result"),
            error=payload("error"),
            wire=dict(data),
        )

    def outcome(self) -> dict[str, Any]:
        """The final result of a terminal task: the ``result`` of ``completed``; raises
        :class:`~mcpkit.errors.RemoteError` with the task's JSON-RPC error for ``failed``
        (as the call would have raised in place) and for ``cancelled``."""
        if self.status is TaskStatus.COMPLETED:
            return dict(self.result or {})
        if self.status is TaskStatus.FAILED:
            error = self.error or {}
            code = error.get("code")
            raise RemoteError(
                str(error.get("message", f"task {self.task_id} failed")),
                code=code if type(code) is int else INTERNAL_ERROR,
                data=error.get("data"),
            )
        if self.status is TaskStatus.CANCELLED:
            why = f": {self.status_message}" if self.status_message else ""
            raise RemoteError(
                f"task {self.task_id} was cancelled{why}",
                code=INTERNAL_ERROR,
                data={"taskId": self.task_id, "status": self.status.value},
            )
        raise ValueError(f"task {self.task_id} is {self.status.value}, not finished")


def _malformed(session: ClientSession, what: str, detail: object) -> RemoteError:
    return RemoteError(
        f"MCP server {session.name!r} sent a malformed {what}: {detail!r:.200}",
        code=INTERNAL_ERROR,
    )


def _session_of(client: Client | ClientSession) -> ClientSession:
    # A Client's live session can change (it reconnects); read it at each request.
    return client.session if isinstance(client, Client) else client


class TaskHandle:
    """One task of one server, to follow or steer by hand: ``get``, ``update``, ``cancel``,
    ``wait``, ``result``.

    ``TaskHandle(client, task_id)`` resumes a task whose id was kept (after a restart,
    from another connection): the server answers it for the same owner (principal, else
    session) or, with neither, for anyone holding the unguessable id.
    """

    __slots__ = ("_client", "last", "task_id")

    def __init__(
        self, client: Client | ClientSession, task_id: str, *, state: TaskState | None = None
    ) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise ValueError(f"task_id must be a non-empty string, not {task_id!r}")
        self._client = client
        self.task_id = task_id
        #: The latest state seen (None before the first).
        self.last = state

    @property
    def session(self) -> ClientSession:
        return _session_of(self._client)

    async def get(self, *, timeout: float | None = None) -> TaskState:
        """``tasks/get``: the task's current state (``RemoteError`` -32602 when unknown)."""
        session = self.session
        answer = await session.request("tasks/get", {"taskId": self.task_id}, timeout=timeout)
        try:
            state = TaskState.from_wire(answer)
        except ValueError as exc:
            raise _malformed(session, "tasks/get result", exc) from None
        if state.task_id != self.task_id:
            raise _malformed(session, "tasks/get result (another task)", state.task_id)
        self.last = state
        return state

    async def update(self, responses: Mapping[str, Any], *, timeout: float | None = None) -> None:
        """``tasks/update``: answer input requests by key (unknown keys are ignored)."""
        params = {"taskId": self.task_id, "inputResponses": dict(responses)}
        await self.session.request("tasks/update", params, timeout=timeout)

    async def cancel(self, *, timeout: float | None = None) -> None:
        """``tasks/cancel``: cooperative; the task may still end another way."""
        await self.session.request("tasks/cancel", {"taskId": self.task_id}, timeout=timeout)

    async def wait(
        self,
        *,
        timeout: float | None = None,
        answer_inputs: bool = True,
        on_status: StatusCallback | None = None,
        progress: ProgressCallback | None = None,
    ) -> TaskState:
        """Poll until the task is terminal; its last state. ``timeout`` bounds each request.

        With ``answer_inputs`` the session's handlers answer its input requests (else
        the caller answers with :meth:`update` from ``on_status``). Cancelling the wait
        leaves the task running: the handle's owner decides."""
        state = self.last if self.last is not None else await self.get(timeout=timeout)
        return await _poll(
            self,
            state,
            timeout=timeout,
            answer_inputs=answer_inputs,
            on_status=on_status,
            progress=progress,
        )

    async def result(self, *, timeout: float | None = None) -> dict[str, Any]:
        """:meth:`wait`, then the final result (:meth:`TaskState.outcome`)."""
        return (await self.wait(timeout=timeout)).outcome()

    def __repr__(self) -> str:
        status = self.last.status.value if self.last is not None else "unknown"
        return f"<TaskHandle {self.task_id} ({status})>"


async def _report(
    state: TaskState,
    step: int,
    on_status: StatusCallback | None,
    progress: ProgressCallback | None,
) -> None:
    # A failing callback is logged, as the session's notification callbacks are: showing
    # a status must not abandon (and so cancel) the task.
    if on_status is not None:
        try:
            outcome = on_status(state)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            log.exception("on_status %r failed", on_status)
    if progress is not None:
        # A task's status messages are its progress reports: one step each (progress
        # must increase: basic/utilities/progress), the message as the report's.
        message = state.status_message or state.status.value
        try:
            outcome = progress(float(step), None, message)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            log.exception("progress callback %r failed", progress)


async def _answer(session: ClientSession, requests: Mapping[str, Any]) -> dict[str, Any]:
    """Each input request answered by the session's handlers, keyed as asked."""

    async def one(key: str, request: object) -> dict[str, Any]:
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        if not isinstance(method, str):
            raise _malformed(session, f"input request {key!r}", request)
        try:
            return await session.handlers.fulfil(method, params if isinstance(params, dict) else {})
        except MCPError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            raise MCPError(
                f"MCP server {session.name!r} needs {method} to finish a task, and this "
                "client has no handler for it",
                code=INTERNAL_ERROR,
            ) from exc

    keys = list(requests)
    answers = await asyncio.gather(*(one(key, requests[key]) for key in keys))
    return dict(zip(keys, answers, strict=True))


async def _poll(
    handle: TaskHandle,
    state: TaskState,
    *,
    timeout: float | None,
    answer_inputs: bool,
    on_status: StatusCallback | None,
    progress: ProgressCallback | None,
) -> TaskState:
    session = handle.session
    queue: asyncio.Queue[dict[str, Any]] | None = None
    listened = False
    answered: set[str] = set()
    seen: tuple[TaskStatus, str | None] | None = None
    step = 0
    try:
        while True:
            if (state.status, state.status_message) != seen:
                seen = (state.status, state.status_message)
                step += 1
                await _report(state, step, on_status, progress)
            if state.terminal:
                return state
            if answer_inputs and state.status is TaskStatus.INPUT_REQUIRED:
                # Keys are unique over the task's life: one answered is not asked again.
                pending = {
                    k: v for k, v in (state.input_requests or {}).items() if k not in answered
                }
                if pending:
                    await handle.update(await _answer(session, pending), timeout=timeout)
                    answered.update(pending)
                    state = await handle.get(timeout=timeout)
                    continue
            if not listened:  # once the first state is reported: it is news already
                listened = True
                queue = await listen_to(session, handle.task_id)
            interval = max(
                state.poll_interval_ms / 1000
                if state.poll_interval_ms is not None
                else DEFAULT_POLL_INTERVAL,
                MIN_POLL_INTERVAL,
            )
            if queue is None:
                await asyncio.sleep(interval)
                state = await handle.get(timeout=timeout)
                continue
            state = await _next(handle, queue, interval, timeout)
    finally:
        if queue is not None:
            stop_listening(session, handle.task_id, queue)


async def _next(
    handle: TaskHandle,
    queue: asyncio.Queue[dict[str, Any]],
    interval: float,
    timeout: float | None,
) -> TaskState:
    """The task's next state as a notification brings it; polled when none came for a
    while (the safety net for a notification lost with a broken stream)."""
    while True:
        try:
            async with asyncio.timeout(max(interval * LISTEN_CHECK_FACTOR, MIN_LISTEN_CHECK)):
                heard = await queue.get()
        except TimeoutError:
            return await handle.get(timeout=timeout)
        # The notification is the task "identical to what tasks/get would have returned".
        try:
            state = TaskState.from_wire(heard)
        except ValueError as exc:
            log.debug("ignored a malformed task notification: %s", exc)
            continue
        if state.task_id == handle.task_id:
            handle.last = state
            return state


async def follow(
    handle: TaskHandle,
    *,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """The final result of ``handle``'s task, as ``call_tool`` returns it for a task.

    Polls, answers input requests with the session's handlers, and raises the task's
    error (:meth:`TaskState.outcome`). Nobody else holds this task: when the caller is
    cancelled, or anything else stops the following before the task is terminal, the
    task is cancelled on the server (``tasks/cancel``, waited for at most
    :data:`CANCEL_WAIT` seconds) before the exception goes on.
    """
    first = handle.last
    if first is None:
        raise ValueError("follow() needs the task's first state (TaskHandle(..., state=...))")
    try:
        state = await _poll(
            handle,
            first,
            timeout=timeout,
            answer_inputs=True,
            on_status=on_status,
            progress=progress,
        )
    except BaseException:
        if handle.last is None or not handle.last.terminal:
            await _cancel_quietly(handle)
        raise
    return state.outcome()


async def _cancel_quietly(handle: TaskHandle) -> None:
    # Shielded and bounded: the caller's own cancellation is on its way out, and a dead
    # connection must not hold it up.
    async def cancel() -> None:
        try:
            await handle.cancel(timeout=CANCEL_WAIT)
        except Exception as exc:
            log.debug("could not cancel task %s: %s", handle.task_id, exc)

    task = asyncio.ensure_future(cancel())
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait({task}, timeout=CANCEL_WAIT)


def _first_state(session: ClientSession, result: Mapping[str, Any]) -> TaskState:
    try:
        return TaskState.from_wire(result)
    except ValueError as exc:
        raise _malformed(session, "CreateTaskResult", exc) from None


class TasksClient:
    """The client side of the tasks extension, for ``Client(extensions=[...])``; made by
    :func:`tasks_client`. Declares ``io.modelcontextprotocol/tasks`` (an empty object:
    the extension defines no client settings) and follows ``resultType: "task"``."""

    __slots__ = ("on_status", "report_progress", "result_handlers")

    identifier: Final = EXTENSION_ID
    request_meta: Final = None
    client_capability: Final[Mapping[str, Any]] = MappingProxyType({})

    def __init__(
        self, *, on_status: StatusCallback | None = None, report_progress: bool = True
    ) -> None:
        self.on_status = on_status
        self.report_progress = report_progress
        self.result_handlers: Mapping[str, ResultHandler] = MappingProxyType({"task": self._follow})

    async def _follow(self, context: ResultContext) -> dict[str, Any]:
        session = context.session
        state = _first_state(session, context.result)
        handle = TaskHandle(session, state.task_id, state=state)
        return await follow(
            handle,
            timeout=context.timeout,
            on_status=self.on_status,
            progress=context.progress if self.report_progress else None,
        )

    def __repr__(self) -> str:
        return f"tasks_client(on_status={self.on_status!r})"


def tasks_client(
    *, on_status: StatusCallback | None = None, report_progress: bool = True
) -> TasksClient:
    """The tasks extension for a client: ``Client(extensions=[tasks_client()])``.

    ``await client.call_tool(...)`` then returns a task's final result as if the tool
    had answered in place; ``on_status(state)`` (a :class:`TaskState`) sees each new
    status or status message of the tasks it follows, and so does the call's
    ``progress`` callback (``progress(step, None, statusMessage)``) unless
    ``report_progress`` is false (a caller that shows ``on_status`` already).
    """
    if on_status is not None and not callable(on_status):
        raise TypeError(f"on_status must be callable, not {type(on_status).__name__}")
    return TasksClient(on_status=on_status, report_progress=report_progress)


async def call_tool_task(
    client: Client | ClientSession,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    meta: Mapping[str, Any] | None = None,
) -> TaskHandle | dict[str, Any]:
    """Call a tool, and return the :class:`TaskHandle` when the server made it a task
    (the result itself when the server answered in place: the server decides).

    The client must declare the extension (``extensions=[tasks_client()]``). Keep
    ``handle.task_id`` to resume with ``TaskHandle(client, task_id)``."""
    session = _session_of(client)
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    if meta:
        params["_meta"] = dict(meta)
    # The input rounds before a task exists are answered; the task result is kept.
    result = await input_required.with_input(
        session, "tools/call", params, timeout=timeout, progress=None
    )
    if result.get("resultType") != "task":
        return result
    state = _first_state(session, result)
    return TaskHandle(client, state.task_id, state=state)
