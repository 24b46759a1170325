"""The tasks extension's server part: :func:`tasks_extension` and its ``tasks/*`` methods.

SEP-2663 (ext-tasks ``specification/draft/tasks.md``; the overview in the spec tree,
``extensions/tasks/overview.mdx``): the *server* decides per request whether a
``tools/call`` becomes a task, and may do so only for a client that declared the
extension in that request's capabilities (``_meta`` client capabilities on 2026-07-28,
the ``initialize`` capabilities on a handshake-era session). This step runs every task
in the process that accepted it:

1. a middleware of the extension sees each ``tools/call``; a tool declared ``"optional"``
   or ``"required"`` (``tasks_extension(tools={...})``) called by a declaring client
   becomes a task: the record is created in the store *before* the ``CreateTaskResult``
   goes out (the spec's "MUST NOT return ``CreateTaskResult`` until the task is durably
   created");
2. the rest of the chain (the tool itself) runs as an ``asyncio`` task of this process,
   within the TTL; ``ctx.progress(...)`` becomes the task's ``statusMessage``;
3. its result is recorded as ``completed`` (an ``isError`` result too: "Task Execution
   Errors"), a JSON-RPC error as ``failed``;
4. ``tasks/get`` / ``tasks/cancel`` / ``tasks/update`` answer from the store, only to
   the task's owner (:func:`owner_of`); another caller gets "Task not found", exactly
   as for an unknown id, so that existence does not leak.

A tool's ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` inside a task move it to
``input_required`` (:mod:`.inputs`), answered by ``tasks/update``.

On a store shared by several nodes (a :class:`~.redis.RedisTaskStore`; by default the
one beside the server's ``RedisStore``, ``mcpkit run --redis``), ``tasks/*`` answer on
any node: the node running a task watches it (:meth:`~.store.TaskStore.watch`), so a
``tasks/cancel`` recorded elsewhere cancels its handler and a ``tasks/update`` received
elsewhere reaches its questions. ``subscriptions/listen {taskIds}`` streams
``notifications/tasks`` (:mod:`.notify`).

With ``queue=`` (:mod:`.queue`), step 2 is a job of a Redis queue instead, run by any
worker process; ``tasks/cancel`` and ``tasks/update`` then reach it from any node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Collection, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from ...errors import (
    INTERNAL_ERROR,
    ConfigurationError,
    InvalidParams,
    MCPError,
)
from ...loops import cancel_and_wait
from ...protocol.error_answers import to_jsonrpc_error
from ...server.context import (
    Context,
    ProgressSink,
    RequestAsker,
    detach_from_request,
    progress_reported_to,
    requests_answered_by,
)
from ...server.extension import Extension
from .access import TASKS, client_declares_tasks, missing_capability, owner_of
from .deferred import Deferral, run_deferred
from .inputs import TaskInputs
from .notify import TASK_IDS, StatusNotifier
from .placement import placement
from .records import TaskRecord, create_task_result, get_task_result
from .states import IllegalTransition, TaskStatus
from .store import MemoryTaskStore, TaskEvent, TaskLimitExceeded, TaskStore

if TYPE_CHECKING:
    from ...server.middleware import CallNext, MiddlewareContext
    from ...server.server import MCPServer
    from .queue import TaskQueue

__all__ = [
    "DEFAULT_POLL_INTERVAL_MS",
    "DEFAULT_TTL_MS",
    "TASKS",
    "TaskSupport",
    "client_declares_tasks",
    "owner_of",
    "tasks_extension",
]

log = logging.getLogger("mcpkit.extensions.tasks")

#: Whether a tool runs as a task: ``"never"`` (always answered in place, the default),
#: ``"optional"`` (a task for a client that declared the extension, in place for one that
#: did not) or ``"required"`` (a task; a client without the extension gets -32021).
TaskSupport = Literal["never", "optional", "required"]
_SUPPORT: Final = frozenset({"never", "optional", "required"})

#: A finite default TTL (an hour): the per-owner cap of the store counts finished tasks
#: until they expire (docs/design/tasks.md §3, "Expiry").
DEFAULT_TTL_MS: Final = 3_600_000
#: How often a client should poll ``tasks/get``; also the least time between two stored
#: status messages of one task (progress is throttled to it).
DEFAULT_POLL_INTERVAL_MS: Final = 500

#: What a task that its server stopped under ends with (ext-tasks "Task Execution
#: Errors": a failure of the server's own is an internal error).
_STOPPED: Final[Mapping[str, Any]] = {
    "code": INTERNAL_ERROR,
    "message": "The server stopped before this task finished",
}
_EXPIRED_MESSAGE: Final = "The task's TTL ran out before it finished"
_CANCELLED_MESSAGE: Final = "Cancelled at the client's request"
# How long the server's stop waits for the heartbeat and the running handlers to end.
_STOP_WAIT: Final = 10.0


def _not_found(task_id: object) -> InvalidParams:
    return InvalidParams(f"Task not found: {task_id}")


class _Tasks:
    """The state one :func:`tasks_extension` shares between its middleware and methods."""

    def __init__(
        self,
        *,
        store: TaskStore | None,
        tools: Mapping[str, TaskSupport],
        deferred: frozenset[str],
        ttl_ms: int | None,
        poll_interval_ms: int,
        node_id: str,
        heartbeat_s: float,
        queue: TaskQueue | bool = False,
    ) -> None:
        # None: the server's store decides when it starts (lifespan); memory by default.
        self.chosen = store is not None
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.tools = tools
        self.deferred = deferred
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.node_id = node_id
        self.heartbeat_s = heartbeat_s
        self.running: dict[str, asyncio.Task[None]] = {}
        self.inputs: dict[str, TaskInputs] = {}
        # Execution through a job queue (.queue, docs/design/tasks.md §4): the option as
        # given, and the queue in use while the server runs (None: in this process).
        self.queue_option = queue
        self.queue: TaskQueue | None = None
        # Tasks whose handler is over and writes its own last move: their terminal
        # events are this node's, not a cancel to pass on.
        self.settling: set[str] = set()
        self.background: set[asyncio.Task[Any]] = set()
        self.notifier = StatusNotifier(lambda: self.store)

    # -- tools/call ---------------------------------------------------------------------------

    async def middleware(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        name = ctx.params.get("name")
        support = self.tools.get(name, "never") if isinstance(name, str) else "never"
        if support == "never":
            return await call_next(ctx)
        if not client_declares_tasks(ctx.client_capabilities):
            if support == "required":
                raise missing_capability(f"tool {name!r}")
            return await call_next(ctx)  # "optional": answered in place
        if name in self.deferred:
            outcome = await run_deferred(self, ctx, call_next)
            return create_task_result(outcome) if isinstance(outcome, TaskRecord) else outcome
        record = TaskRecord.new(
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            owner=owner_of(ctx),
            # A queued task is no node's: the queue's redelivery is its liveness.
            node_id=self.node_id if self.queue is None else None,
        )
        try:
            await self.store.create(record)  # before the answer: create before answer
        except TaskLimitExceeded as exc:
            raise MCPError(f"No task can be created now: {exc}", code=INTERNAL_ERROR) from None
        if self.queue is not None:
            await self._enqueue(self.queue, record, ctx)
            return create_task_result(record)
        task = asyncio.create_task(self._run(record, ctx, call_next), name=f"task {record.task_id}")
        self.running[record.task_id] = task
        task.add_done_callback(lambda _: self._forget(record.task_id))
        return create_task_result(record)

    async def _enqueue(self, queue: TaskQueue, record: TaskRecord, ctx: MiddlewareContext) -> None:
        try:
            await queue.enqueue(record, ctx)
        except BaseException as exc:
            # Created but never queued: say so in the record, and answer with the error.
            error = exc.to_error() if isinstance(exc, MCPError) else to_jsonrpc_error(exc)
            with contextlib.suppress(Exception):
                await self._move(record.task_id, TaskStatus.FAILED, error=error, quiet=True)
            raise

    async def escalate(self, deferral: Deferral) -> TaskRecord:
        """A deferred tool continues as a task (:mod:`.deferred`): create it, then run
        the rest of the tool as it, from the tool's own task."""
        record = TaskRecord.new(
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            owner=owner_of(deferral.ctx),
            node_id=self.node_id,
        )
        try:
            await self.store.create(record)  # before the answer: create before answer
        except TaskLimitExceeded as exc:
            raise MCPError(f"No task can be created now: {exc}", code=INTERNAL_ERROR) from None
        progress, ask = self.channels(record.task_id)
        detach_from_request(progress=progress, ask=ask)
        call = deferral.call
        assert call is not None  # set before the tool could run
        task = asyncio.create_task(self.settle(record, call), name=f"task {record.task_id}")
        self.running[record.task_id] = task
        task.add_done_callback(lambda _: self._forget(record.task_id))
        return record

    def _forget(self, task_id: str) -> None:
        self.running.pop(task_id, None)
        self.inputs.pop(task_id, None)
        self.settling.discard(task_id)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def _heard(self, event: TaskEvent) -> None:
        """An event of a task this node runs, from any node (the store's watch)."""
        task_id = event.task_id
        if event.answers is not None:
            inputs = self.inputs.get(task_id)
            if inputs is not None:  # a tasks/update received by another node
                self._spawn(inputs.answer(event.answers))
        elif event.record is not None and event.record.terminal:
            # Cancelled (or failed by a sweep) by someone else: stop the handler, as
            # tasks/cancel does on this node. Its own last move is no news.
            running = self.running.get(task_id)
            if running is not None and task_id not in self.settling:
                running.cancel()

    def channels(self, task_id: str) -> tuple[ProgressSink, RequestAsker]:
        """Where a task's progress and requests to the client go: its ``statusMessage``
        and its ``inputRequests`` (:class:`TaskInputs`, kept for ``tasks/update``)."""
        last_message = 0.0

        async def status(progress: float, total: float | None, message: str | None) -> None:
            # ctx.progress -> statusMessage, at most once per poll interval: a client sees
            # no more than one per poll, and a shared store is not written on every step.
            nonlocal last_message
            now = time.monotonic()
            if now - last_message < self.poll_interval_ms / 1000:
                return
            last_message = now
            if message is None:
                message = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
            # Only while working: a progress line must not replace outstanding questions.
            await self._move(
                task_id,
                TaskStatus.WORKING,
                status_message=message,
                expected=TaskStatus.WORKING,
                quiet=True,
            )

        async def publish(outstanding: dict[str, dict[str, Any]]) -> None:
            if outstanding:
                await self._move(task_id, TaskStatus.INPUT_REQUIRED, input_requests=outstanding)
            else:
                await self._move(task_id, TaskStatus.WORKING)

        inputs = self.inputs[task_id] = TaskInputs(publish)
        return status, inputs.ask

    async def _run(self, record: TaskRecord, ctx: MiddlewareContext, call_next: CallNext) -> None:
        status, ask = self.channels(record.task_id)

        async def work() -> dict[str, Any]:
            with progress_reported_to(status), requests_answered_by(ask):
                return await call_next(ctx)

        await self.settle(record, work())

    async def settle(
        self, record: TaskRecord, work: Coroutine[Any, Any, dict[str, Any]] | asyncio.Future[Any]
    ) -> None:
        """Run (or await) a task's ``work`` within its TTL and record how it ended."""
        task_id = record.task_id
        timeout = None if record.ttl_ms is None else record.ttl_ms / 1000
        unwatch = None
        try:
            # Cancels and answers received by other nodes reach this one by the watch;
            # one recorded before it began is read once it has.
            unwatch = await self.store.watch(task_id, self._heard)
            now = await self.store.get(task_id)
            if now is None or now.terminal:
                if isinstance(work, asyncio.Future):
                    work.cancel()
                else:
                    work.close()
                return
            async with asyncio.timeout(timeout):
                result = await work
        except TimeoutError:
            self.settling.add(task_id)
            # The task expired in the store: nothing will read what it would return.
            log.info("task %s: the TTL ran out; its handler was cancelled", task_id)
            await self._move(task_id, TaskStatus.CANCELLED, status_message=_EXPIRED_MESSAGE)
        except asyncio.CancelledError:
            # tasks/cancel recorded `cancelled` before cancelling; otherwise the server is
            # stopping under the task: say so rather than leave it `working`.
            self.settling.add(task_id)
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self._move(task_id, TaskStatus.FAILED, error=_STOPPED, quiet=True)
                )
            raise
        except MCPError as exc:
            self.settling.add(task_id)
            await self._move(task_id, TaskStatus.FAILED, error=exc.to_error())
        except Exception as exc:  # the chain maps handler errors; this is a middleware's
            self.settling.add(task_id)
            log.exception("task %s failed", task_id)
            await self._move(task_id, TaskStatus.FAILED, error=to_jsonrpc_error(exc))
        else:
            self.settling.add(task_id)
            if result.get("resultType") == "input_required":
                # Defensive: a request that escaped requests_answered_by reached the
                # 2026-07-28 input rounds; nobody would answer it there.
                error = {
                    "code": INTERNAL_ERROR,
                    "message": "This tool asked for input outside its task's channel",
                }
                await self._move(task_id, TaskStatus.FAILED, error=error)
                return
            # The tools/call result, as the call would have returned it (ext-tasks: "what
            # the original request would have returned"); `resultType` is tasks/get's own.
            stored = {k: v for k, v in result.items() if k != "resultType"}
            await self._move(task_id, TaskStatus.COMPLETED, result=stored)
        finally:
            if unwatch is not None:
                self._spawn(unwatch())

    async def _move(
        self,
        task_id: str,
        target: TaskStatus,
        *,
        status_message: str | None = None,
        input_requests: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        expected: TaskStatus | None = None,
        quiet: bool = False,
    ) -> None:
        """Record a move of a running task; a task already terminal (cancelled, expired
        meanwhile) keeps its status: the loser of the race changes nothing."""
        if status_message is None and error is not None:
            status_message = str(error.get("message"))
        try:
            await self.store.transition(
                task_id,
                target,
                status_message=status_message,
                input_requests=input_requests,
                result=result,
                error=error,
                expected=expected,
            )
        except IllegalTransition as exc:
            if not quiet:
                log.debug("task %s: %s", task_id, exc)

    # -- tasks/* ------------------------------------------------------------------------------

    async def _visible(self, params: Mapping[str, Any], ctx: Context, method: str) -> TaskRecord:
        if not client_declares_tasks(ctx.client_capabilities):
            raise missing_capability(method)
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParams(f"{method} needs a 'taskId' string")
        record = await self.store.get(task_id)
        # Another owner's task answers as an unknown one: existence must not leak.
        if record is None or record.owner != owner_of(ctx):
            raise _not_found(task_id)
        return record

    async def get(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return get_task_result(await self._visible(params, ctx, "tasks/get"))

    async def cancel(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        record = await self._visible(params, ctx, "tasks/cancel")
        if not record.terminal:
            # Recorded first, then the handler cancelled: its CancelledError finds the task
            # terminal and changes nothing. A task that finished first keeps its result
            # (cancellation is cooperative: the spec acknowledges anyway).
            await self._move(
                record.task_id, TaskStatus.CANCELLED, status_message=_CANCELLED_MESSAGE
            )
            running = self.running.get(record.task_id)
            if running is not None:
                running.cancel()
            elif self.queue is not None:
                await self.queue.cancel(record.task_id)
        return {"resultType": "complete"}

    async def update(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        record = await self._visible(params, ctx, "tasks/update")
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("tasks/update needs an 'inputResponses' object")
        inputs = self.inputs.get(record.task_id)
        if inputs is not None:
            # Unknown or already-satisfied keys are ignored ("servers MUST ignore" them);
            # the record shows what is left before the acknowledgement goes out.
            await inputs.answer(responses)
        elif self.queue is not None and record.status is TaskStatus.INPUT_REQUIRED:
            await self.queue.answer(record, responses)  # to the worker running it
        elif record.status is TaskStatus.INPUT_REQUIRED:
            # Run by another node: the answers go to it, which updates the record (the
            # ack is "eventually consistent", ext-tasks tasks/update).
            await self.store.answer(record.task_id, responses)
        return {"resultType": "complete"}

    # -- lifespan -----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(self, server: MCPServer) -> AsyncIterator[None]:
        unknown = sorted(name for name in self.tools if server.tools.get(name) is None)
        if unknown:
            raise ConfigurationError(
                f"tasks_extension(tools=...) names tools the server does not have: {unknown}"
            )
        placed = placement(self, server)  # the shared store and the job queue, if any
        await placed.__aenter__()
        beat = asyncio.create_task(self._beat(), name="tasks heartbeat")
        try:
            yield
        finally:
            # Each handler records `failed` (server stopped) on its way out. Bounded: a
            # cancellation can be lost on Python 3.11 (loops.cancel_and_wait).
            running = list(self.running.values())
            try:
                await cancel_and_wait(
                    beat, *running, timeout=_STOP_WAIT, what="the tasks extension"
                )
            finally:
                await placed.__aexit__(None, None, None)
            await self.notifier.aclose()
            if self.background:
                await asyncio.gather(*self.background, return_exceptions=True)
            await self.store.aclose()

    async def _beat(self) -> None:
        # This node is alive for the store's sweeps (a shared store fails the tasks of a
        # node that stops beating), and sweeps for others; idempotent on every node.
        while True:
            try:
                await self.store.heartbeat(self.node_id, self.heartbeat_s * 3)
                await self.store.sweep()
            except Exception:
                log.exception("tasks heartbeat failed")
            await asyncio.sleep(self.heartbeat_s)


def _check_ms(name: str, value: object, *, nullable: bool) -> None:
    if value is None and nullable:
        return
    if type(value) is not int or value <= 0:
        raise ConfigurationError(
            f"{name} must be a positive integer of milliseconds, not {value!r}"
        )


def tasks_extension(
    *,
    store: TaskStore | None = None,
    tools: Mapping[str, TaskSupport] | None = None,
    deferred: Collection[str] = (),
    ttl_ms: int | None = DEFAULT_TTL_MS,
    poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
    node_id: str | None = None,
    heartbeat_s: float = 5.0,
    queue: TaskQueue | bool = False,
) -> Extension:
    """The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) for a server.

    ``tools`` maps tool names to :data:`TaskSupport` (``"optional"`` or ``"required"``;
    a tool not named is ``"never"``): checked against the server's tools when it starts.
    ``deferred`` names tools that run in their request first (their input rounds are
    the request's own) and become a task when they call
    :func:`~.deferred.continue_as_task` (:mod:`.deferred`).
    ``store`` keeps the task records (default: a :class:`~.redis.RedisTaskStore` beside
    the server's ``RedisStore`` when it has one, else a :class:`~.store.MemoryTaskStore`);
    ``ttl_ms`` (None: unlimited) and ``poll_interval_ms`` go in every task; ``node_id``
    names this process in the records (default random), which beats every
    ``heartbeat_s`` seconds so that a shared store's sweep can tell it is alive.
    Without ``store``, a server whose store is a RedisStore (``mcpkit run --redis``)
    keeps the records there (:class:`~.redis.RedisTaskStore`).

    ``queue``: run tasks through a Redis job queue (:class:`~.queue.TaskQueue`,
    ``mcpkit[tasks-queue]``) rather than in the accepting process; True: a default
    ``TaskQueue`` on the server's RedisStore when it has one, in process otherwise.

    >>> server = MCPServer(name="jobs", version="1")
    >>> server.add_extension(tasks_extension(tools={"slow_count": "required"}))
    """
    problems: list[str] = []
    if store is not None and not isinstance(store, TaskStore):
        problems.append(f"store must be a TaskStore, not {type(store).__name__}")
    tools = {} if tools is None else dict(tools)
    for name, support in tools.items():
        if not isinstance(name, str) or support not in _SUPPORT:
            problems.append(
                f"tools[{name!r}] must be one of 'never', 'optional', 'required', not {support!r}"
            )
    for label, value, nullable in (
        ("ttl_ms", ttl_ms, True),
        ("poll_interval_ms", poll_interval_ms, False),
    ):
        try:
            _check_ms(label, value, nullable=nullable)
        except ConfigurationError as exc:
            problems.append(str(exc))
    if (
        isinstance(heartbeat_s, bool)
        or not isinstance(heartbeat_s, int | float)
        or heartbeat_s <= 0
    ):
        problems.append(f"heartbeat_s must be a positive number of seconds, not {heartbeat_s!r}")
    if not isinstance(queue, bool) and type(queue).__name__ != "TaskQueue":
        problems.append(f"queue must be a TaskQueue or a bool, not {type(queue).__name__}")
    if isinstance(deferred, str):
        problems.append("deferred must be a collection of tool names, not a string")
        deferred = ()
    for name in deferred:
        if tools.get(name, "never") == "never":
            problems.append(
                f"deferred tool {name!r} must be named in tools as 'optional' or 'required'"
            )
    if problems:
        raise ConfigurationError("; ".join(problems))
    state = _Tasks(
        store=store,
        tools=tools,
        deferred=frozenset(deferred),
        ttl_ms=ttl_ms,
        poll_interval_ms=poll_interval_ms,
        node_id=node_id if node_id is not None else f"node-{secrets.token_hex(8)}",
        heartbeat_s=float(heartbeat_s),
        queue=queue,
    )
    return Extension(
        identifier=TASKS,
        # TasksExtensionCapability is an empty object (no settings defined).
        settings={},
        methods={
            "tasks/get": state.get,
            "tasks/cancel": state.cancel,
            "tasks/update": state.update,
        },
        middleware=[state.middleware],
        lifespan=state.lifespan,
        listen_filters={TASK_IDS: state.notifier.grant},
    )
