"""Tasks run by any worker process through a Redis job queue: :class:`TaskQueue` (pydocket).

``pip install 'mcpkit[tasks-queue]'``. With ``tasks_extension(queue=True)`` and a
:class:`~mcpkit.stores.redis.RedisStore` (``mcpkit run --redis URL``), a task accepted by
one node is not run there: its record is created in the shared task store first (create
before answer, as always), then one job is added to a pydocket queue on the same Redis
under the task id as key (pydocket's "adding an existing key is a no-op"), and any
process consuming that queue runs it: each ``mcpkit run --workers N`` process, and
``mcpkit worker app.py --redis URL`` processes that serve no requests at all. Why
pydocket, and not arq, taskiq or saq: docs/design/tasks.md §4.

On the worker the tool runs with a real :class:`~mcpkit.server.context.Context` made for
it (the accepting request's revision, client capabilities and client info, its auth info
without the raw token), through the server's own ``tools/call`` handler:

* ``ctx.progress(...)`` becomes the task's ``statusMessage``, throttled to one write per
  ``pollIntervalMs``, as in process;
* ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` move the task to
  ``input_required`` (:class:`~.inputs.TaskInputs`); ``tasks/update`` on *any* node pushes
  the answers onto a per-task Redis list, and acknowledges once the record shows them
  taken (bounded). The worker takes each answer with ``BLMOVE`` onto a list of taken
  answers and drops it from there once applied, so an answer handed over just as the
  worker's connection dropped is not lost: it is read back from that list and applied
  on the next connection (applying one twice is harmless: a satisfied key is ignored);
* ``tasks/cancel`` on any node records ``cancelled``, then cancels the job: pydocket drops
  it from the queue, or signals the worker running it over pub/sub, which cancels the
  handler. That signal is lost when the worker's subscription is down at the moment
  (pub/sub keeps nothing), so the worker also reads the task's record every
  ``_REVOKE_CHECK_S`` seconds while the handler runs, and cancels the handler once the
  record is terminal (cancelled) or gone (expired).

A worker that dies (killed, or stopped under the task) leaves its job pending in the
stream; pydocket's redelivery (``XAUTOCLAIM`` after ``redelivery_s`` without the worker
renewing its lease) hands it to another worker. The job counts its runs in Redis: a
second run is allowed only for a tool declared idempotent (``ToolAnnotations
(idempotent_hint=True)``, or ``TaskQueue(idempotent={...})``), up to ``max_attempts``;
any other tool's task is recorded ``failed`` with an error saying why it was not run
again. Queued tasks carry no ``node_id``: their liveness is the queue's, not a node's, so
the store's node sweep never fails a task a live worker is about to retry.

The job's arguments are one JSON string (pydocket pickles arguments; only plain data
crosses it). The task record stays the source of truth; pydocket's own result storage is
not used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Collection, Iterator, Mapping
from contextvars import ContextVar
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import orjson

from ..._extras import require_extra

with require_extra("tasks-queue", feature="the tasks job queue (mcpkit.extensions.tasks.queue)"):
    from docket import Docket, Worker
    from redis.exceptions import RedisError

from ...errors import INTERNAL_ERROR, ConfigurationError, InvalidParams, MCPError
from ...loops import cancel_and_wait
from ...protocol.error_answers import to_jsonrpc_error as _to_error
from ...protocol.versions import REVISIONS
from ...server.context import progress_reported_to, requests_answered_by
from ...server.request import Request
from ...server.scopes import enforce
from .access import auth_from_json, auth_to_json
from .inputs import TaskInputs
from .records import TaskRecord
from .states import IllegalTransition, TaskStatus
from .store import TaskStore

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ...server.middleware import MiddlewareContext
    from ...server.server import MCPServer
    from ...stores.redis import RedisStore

__all__ = ["JOB_NAME", "TaskQueue", "WorkerRole", "worker_role"]

log = logging.getLogger("mcpkit.extensions.tasks.queue")

#: The pydocket task name of an MCP task's job (registered by every process with a queue).
JOB_NAME: Final = "mcpkit.tasks.run"

_EXPIRED_MESSAGE: Final = "The task's TTL ran out before it finished"
# tasks/update waits at most this long for the worker to take the answers it pushed.
_ANSWER_WAIT: Final = 2.0
# How long a worker blocks on a task's answer list per pop, and how long the list lives.
_ANSWER_POP_S: Final = 1
_ANSWER_TTL_MS: Final = 3_600_000
# Redis operations of this module at once per process: pydocket's connection pool refuses
# more connections than its limit rather than waiting, so a burst of tools/call (500 at
# once) would fail enqueues with "Too many connections" without this gate.
_REDIS_AT_ONCE: Final = 32
# How long stopping waits for the consumer to hand its jobs back before cancelling it.
_STOP_WAIT: Final = 5.0
# How often a worker reads the record of a task it runs, to see a cancellation whose
# pub/sub signal it missed; and how long it waits after a Redis error on the answers.
_REVOKE_CHECK_S: Final = 1.0
_RETRY_S: Final = 0.2


def _worker_lost(tool: str, attempts: int, idempotent: bool) -> dict[str, Any]:
    # ext-tasks "Task Execution Errors": a failure of the server's own is -32603.
    if idempotent:
        message = (
            f"The workers running this task stopped {attempts - 1} times before it "
            f"finished; tool {tool!r} was not run again (max_attempts)"
        )
    else:
        message = (
            f"The worker running this task stopped before it finished, and tool {tool!r} "
            "is not declared idempotent (ToolAnnotations idempotent_hint, or "
            "TaskQueue(idempotent=...)), so it was not run again"
        )
    return {"code": INTERNAL_ERROR, "message": message}


class WorkerRole:
    """What ``mcpkit worker`` learns from the lifespan it enters: the queues it consumes."""

    __slots__ = ("queues",)

    def __init__(self) -> None:
        self.queues: list[TaskQueue] = []


_role: ContextVar[WorkerRole | None] = ContextVar("mcpkit_task_worker", default=None)


@contextlib.contextmanager
def worker_role() -> Iterator[WorkerRole]:
    """Within this block, every :class:`TaskQueue` started consumes its jobs (whatever its
    ``consume``) and is listed in the role: ``mcpkit worker`` enters a server's lifespan in
    it, and refuses an app whose lifespan started no queue."""
    role = WorkerRole()
    token = _role.set(role)
    try:
        yield role
    finally:
        _role.reset(token)


def redis_url_of(client: Redis) -> str:
    """A URL for the server ``client`` talks to, password included (pydocket takes a URL,
    and a ``RedisStore`` keeps only a redacted one)."""
    kwargs = client.connection_pool.connection_kwargs
    user = kwargs.get("username")
    password = kwargs.get("password")
    auth = ""
    if password is not None:
        auth = f"{quote(str(user or ''), safe='')}:{quote(str(password), safe='')}@"
    path = kwargs.get("path")
    if path:
        return f"unix://{auth}{path}?db={kwargs.get('db', 0)}"
    scheme = "rediss" if kwargs.get("ssl") or "ssl_cert_reqs" in kwargs else "redis"
    return (
        f"{scheme}://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        f"/{kwargs.get('db', 0)}"
    )


class TaskQueue:
    """Where queued tasks go: a pydocket queue on Redis, and this process's consumer of it.

    ``url``: the Redis (default: the server's :class:`~mcpkit.stores.redis.RedisStore`, at
    start); ``name``: the queue's key prefix (default the store's prefix + ``"tasks"``);
    ``concurrency``: jobs this process runs at once; ``consume``: whether this process
    runs jobs at all (False: it only accepts tasks; ``mcpkit worker`` always consumes);
    ``redelivery_s``: how long a job whose worker stopped renewing its lease waits before
    another worker takes it (live workers renew it four times per period);
    ``idempotent``: tool names that may run again after their worker died, besides those
    annotated ``idempotent_hint=True``; ``max_attempts``: runs at most for those.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        name: str | None = None,
        concurrency: int = 10,
        consume: bool = True,
        redelivery_s: float = 15.0,
        idempotent: Collection[str] = (),
        max_attempts: int = 3,
    ) -> None:
        problems = []
        if url is not None and not isinstance(url, str):
            problems.append(f"url must be a Redis URL string, not {url!r}")
        if type(concurrency) is not int or concurrency < 1:
            problems.append(f"concurrency must be a positive integer, not {concurrency!r}")
        if type(max_attempts) is not int or max_attempts < 1:
            problems.append(f"max_attempts must be a positive integer, not {max_attempts!r}")
        if isinstance(redelivery_s, bool) or not isinstance(redelivery_s, int | float):
            problems.append(f"redelivery_s must be a number of seconds, not {redelivery_s!r}")
        elif not redelivery_s > 0:
            problems.append(f"redelivery_s must be positive, not {redelivery_s!r}")
        if isinstance(idempotent, str) or not all(isinstance(n, str) for n in idempotent):
            problems.append("idempotent must be a collection of tool names")
        if problems:
            raise ConfigurationError("TaskQueue: " + "; ".join(problems))
        self.url = url
        self.name = name
        self.concurrency = concurrency
        self.consume = consume
        self.redelivery_s = float(redelivery_s)
        self.idempotent = frozenset(idempotent)
        self.max_attempts = max_attempts
        self._docket: Docket | None = None
        self._server: MCPServer | None = None
        self._store: TaskStore | None = None
        self._gate: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"TaskQueue(name={self.name!r}, concurrency={self.concurrency})"

    @property
    def docket(self) -> Docket:
        if self._docket is None:
            raise RuntimeError("the task queue is not running (it starts with the server)")
        return self._docket

    @property
    def gate(self) -> asyncio.Semaphore:
        """Bounds this process's own Redis operations at once (see ``_REDIS_AT_ONCE``)."""
        if self._gate is None:
            raise RuntimeError("the task queue is not running (it starts with the server)")
        return self._gate

    # -- start and stop -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def running(
        self, server: MCPServer, store: TaskStore, redis_store: RedisStore | None
    ) -> AsyncIterator[None]:
        """Open the queue for ``server``'s tasks (records in ``store``), and consume it when
        this process should; the tasks extension's lifespan enters it."""
        url = self.url
        name = self.name
        if url is None:
            if redis_store is None:
                raise ConfigurationError(
                    "tasks_extension(queue=...) needs Redis: give the server a RedisStore "
                    "(mcpkit run --redis URL), or TaskQueue(url=...)"
                )
            url = redis_url_of(redis_store.client)
        if name is None:
            name = (redis_store.prefix if redis_store is not None else "mcpkit:") + "tasks"
        self._server, self._store = server, store
        self._gate = asyncio.Semaphore(_REDIS_AT_ONCE)
        role = _role.get()
        consume = self.consume or role is not None
        async with Docket(name=name, url=url) as docket:
            docket.register(self._job, names=[JOB_NAME])
            self._docket = docket
            consumer: asyncio.Task[None] | None = None
            if consume:
                consumer = asyncio.create_task(self._consume(docket), name="task queue worker")
            if role is not None:
                role.queues.append(self)
            try:
                yield
            finally:
                self._docket = None
                if consumer is not None:
                    await cancel_and_wait(consumer, timeout=_STOP_WAIT, what="the task queue")

    async def _consume(self, docket: Docket) -> None:
        async with Worker(
            docket,
            name=f"mcpkit-{os.getpid()}-{id(self):x}",
            concurrency=self.concurrency,
            redelivery_timeout=timedelta(seconds=self.redelivery_s),
            minimum_check_interval=timedelta(milliseconds=50),
            scheduling_resolution=timedelta(milliseconds=50),
            schedule_automatic_tasks=False,
        ) as worker:
            await worker.run_forever()

    # -- the accepting node -------------------------------------------------------------------

    async def enqueue(self, record: TaskRecord, ctx: MiddlewareContext) -> None:
        """Add the job of ``record`` (already stored) for the ``tools/call`` in ``ctx``."""
        params = ctx.params
        name = params.get("name")
        tool = ctx.server.tools.get(name) if isinstance(name, str) else None
        if tool is not None and tool.scopes:
            # The scope check of tools/call runs inside the chain, which the queue skips here.
            enforce(ctx.auth_info, tool.scopes, f"tool {name!r}")
        arguments = params.get("arguments")
        if arguments is not None and type(arguments) is not dict:
            raise InvalidParams("tools/call: 'arguments' must be an object")
        job = {
            "task": record.task_id,
            "tool": name,
            "arguments": arguments,
            "meta": params.get("_meta"),
            "revision": ctx.revision,
            "capabilities": ctx.client_capabilities,
            "client": ctx.client_info,
            "auth": auth_to_json(ctx.auth_info),
        }
        async with self.gate:
            await self.docket.add(JOB_NAME, key=record.task_id)(orjson.dumps(job).decode())

    async def cancel(self, task_id: str) -> None:
        """Drop the task's job from the queue, or cancel its handler on the worker."""
        async with self.gate:
            await self.docket.cancel(task_id)

    async def answer(self, record: TaskRecord, responses: Mapping[str, Any]) -> None:
        """Hand ``tasks/update``'s answers to the worker running ``record``'s task, and wait
        (bounded) until the record no longer lists the keys it answered."""
        asked = record.input_requests or {}
        answered = {k: v for k, v in responses.items() if k in asked and isinstance(v, dict)}
        if not answered:
            return  # unknown or satisfied keys are ignored ("servers MUST ignore" them)
        key = self.answers_key(record.task_id)
        async with self.gate, self.docket.redis() as redis:
            pipe: Any = redis.pipeline(transaction=True)
            pipe.rpush(key, orjson.dumps(answered))
            pipe.pexpire(key, _ANSWER_TTL_MS)
            await pipe.execute()
        store = self._store
        assert store is not None
        deadline = time.monotonic() + _ANSWER_WAIT
        while time.monotonic() < deadline:
            now = await store.get(record.task_id)
            if now is None or now.status is not TaskStatus.INPUT_REQUIRED:
                return
            if not answered.keys() & (now.input_requests or {}).keys():
                return
            await asyncio.sleep(0.02)

    def answers_key(self, task_id: str) -> str:
        """The Redis list ``tasks/update`` pushes a queued task's answers onto."""
        return self.docket.key(f"mcpkit-answers:{task_id}")

    def taken_key(self, task_id: str) -> str:
        """The Redis list of the answers a worker took and has not applied yet."""
        return self.docket.key(f"mcpkit-answers-taken:{task_id}")

    # -- the worker ---------------------------------------------------------------------------

    async def _job(self, payload: str) -> None:
        """One MCP task, on whichever worker took its job. Never raises but for
        cancellation: the outcome goes to the task record."""
        job = orjson.loads(payload)
        task_id: str = job["task"]
        server, store = self._server, self._store
        assert server is not None and store is not None
        record = await store.get(task_id)
        if record is None or record.terminal:
            return  # expired, or cancelled before any worker took it
        tool_name = job["tool"]
        async with self.gate, self.docket.redis() as redis:
            attempts_key = self.docket.key(f"mcpkit-attempts:{task_id}")
            pipe: Any = redis.pipeline(transaction=True)
            pipe.incr(attempts_key)
            pipe.pexpire(attempts_key, _ANSWER_TTL_MS if record.ttl_ms is None else record.ttl_ms)
            attempt = int((await pipe.execute())[0])
        if attempt > 1:
            idempotent = self.is_idempotent(server, tool_name)
            if not idempotent or attempt > self.max_attempts:
                log.warning("task %s: its worker stopped; not run again", task_id)
                error = _worker_lost(tool_name, attempt, idempotent)
                await _move(store, task_id, TaskStatus.FAILED, error=error)
                return
            log.info("task %s: its worker stopped; running it again (run %d)", task_id, attempt)
        await _Run(self, store, record, job).run(server)

    def is_idempotent(self, server: MCPServer, name: object) -> bool:
        """Whether tool ``name`` of ``server`` may run again after its worker died."""
        if not isinstance(name, str):
            return False
        if name in self.idempotent:
            return True
        info = server.get_tool_info(name) or {}
        annotations = info.get("annotations") or {}
        return annotations.get("idempotentHint") is True


class _Run:
    """One run of a queued task on a worker: its context, its input channel, its outcome."""

    def __init__(
        self, queue: TaskQueue, store: TaskStore, record: TaskRecord, job: dict[str, Any]
    ) -> None:
        self.queue = queue
        self.store = store
        self.record = record
        self.job = job
        self.asking = asyncio.Event()
        self.last_message = 0.0
        self.inputs = TaskInputs(self._publish)
        # Whether the handler is running, and whether the record's end cancelled it.
        self.running = False
        self.revoked = False

    async def _status(self, progress: float, total: float | None, message: str | None) -> None:
        # As in process: at most one stored status message per poll interval, and only
        # while working (a progress line must not replace outstanding questions).
        now = time.monotonic()
        if now - self.last_message < (self.record.poll_interval_ms or 0) / 1000:
            return
        self.last_message = now
        if message is None:
            message = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        await _move(
            self.store,
            self.record.task_id,
            TaskStatus.WORKING,
            status_message=message,
            expected=TaskStatus.WORKING,
        )

    async def _publish(self, outstanding: dict[str, dict[str, Any]]) -> None:
        task_id = self.record.task_id
        if outstanding:
            await _move(self.store, task_id, TaskStatus.INPUT_REQUIRED, input_requests=outstanding)
            self.asking.set()
        else:
            self.asking.clear()
            await _move(self.store, task_id, TaskStatus.WORKING)

    async def _listen(self) -> None:
        # Answers pushed by tasks/update on any node; taken only while a question is out.
        task_id = self.record.task_id
        key, taken = self.queue.answers_key(task_id), self.queue.taken_key(task_id)
        while True:
            await self.asking.wait()
            try:
                async with self.queue.docket.redis() as redis:
                    # Those taken before a connection dropped (the reply may never have
                    # arrived), then the next one: moved, not popped, until applied.
                    for item in [*await redis.lrange(taken, 0, -1)]:
                        await self._apply(redis, taken, item)
                    moved = await redis.blmove(key, taken, _ANSWER_POP_S, "LEFT", "RIGHT")
                    if moved is not None:
                        await redis.expire(taken, _ANSWER_TTL_MS // 1000)  # as the answers' list
                        await self._apply(redis, taken, moved)
            except (RedisError, OSError) as exc:
                log.warning("task %s: reading its answers failed (%s); retrying", task_id, exc)
                await asyncio.sleep(_RETRY_S)

    async def _apply(self, redis: Any, taken: str, item: bytes) -> None:
        await self.inputs.answer(orjson.loads(item))
        await redis.lrem(taken, 1, item)

    async def _watch(self, handler: asyncio.Task[Any]) -> None:
        # The record is the truth: a tasks/cancel whose pub/sub signal this worker missed,
        # or a TTL that ran out, still ends the handler (see the module doc).
        while self.running:
            await asyncio.sleep(_REVOKE_CHECK_S)
            try:
                record = await self.store.get(self.record.task_id)
            except Exception as exc:  # Redis away: the next check
                log.debug("task %s: reading its record failed: %s", self.record.task_id, exc)
                continue
            if self.running and (record is None or record.terminal):
                log.info(
                    "task %s: ended (%s); cancelling its handler",
                    self.record.task_id,
                    "gone" if record is None else record.status.value,
                )
                self.revoked = True
                handler.cancel()
                return

    def _context(self, server: MCPServer) -> tuple[Any, Request]:
        job = self.job
        revision = job["revision"]
        # A 2026-07-28 request's session is per request (stateless); a handshake-era one
        # is a session whose client's requests reach it (here: through the task).
        stateless = REVISIONS[revision].era == "stateless"
        session = server.create_session(revision=revision, stateless=stateless)
        session.client_capabilities = dict(job["capabilities"] or {})
        session.client_info = job["client"]
        params: dict[str, Any] = {"name": job["tool"]}
        if job["arguments"] is not None:
            params["arguments"] = job["arguments"]
        if isinstance(job["meta"], dict):
            params["_meta"] = job["meta"]
        message = {"id": f"task-{self.record.task_id}", "method": "tools/call", "params": params}
        request = Request(session, message, _no_send, auth_from_json(job["auth"]))
        request.task = asyncio.current_task()
        return session, request

    async def run(self, server: MCPServer) -> None:
        task_id = self.record.task_id
        session, request = self._context(server)
        handler = server.methods["tools/call"]
        remaining = None
        if self.record.ttl_ms is not None:
            remaining = max(0.0, self.record.created_at + self.record.ttl_ms / 1000 - time.time())
        listener = asyncio.create_task(self._listen(), name=f"task {task_id} answers")
        this = asyncio.current_task()
        assert this is not None
        self.running = True
        watcher = asyncio.create_task(self._watch(this), name=f"task {task_id} record")
        try:
            try:
                with progress_reported_to(self._status), requests_answered_by(self.inputs.ask):
                    async with asyncio.timeout(remaining):
                        result = await handler(session, request)
            finally:
                # No await between the handler's end and this: the watcher cancels only
                # a running handler, never the recording of its outcome.
                self.running = False
                watcher.cancel()
            if self.revoked and this.uncancel() == 0:
                return  # the handler finished anyway as it was cancelled: the record ended
        except TimeoutError:
            await _move(self.store, task_id, TaskStatus.CANCELLED, status_message=_EXPIRED_MESSAGE)
        except MCPError as exc:
            await _move(self.store, task_id, TaskStatus.FAILED, error=exc.to_error())
        except asyncio.CancelledError:
            # Cancelled by the watcher alone: the record ended (cancelled or gone), the
            # job is done.
            if self.revoked and this.uncancel() == 0:
                return
            # tasks/cancel recorded `cancelled` first; a worker stopping under the task
            # leaves it as it is: pydocket hands the job to another worker (see the
            # module doc), which runs it again or fails it.
            raise
        except Exception as exc:
            log.exception("task %s failed", task_id)
            await _move(self.store, task_id, TaskStatus.FAILED, error=_to_error(exc))
        else:
            stored = {k: v for k, v in result.items() if k != "resultType"}
            await _move(self.store, task_id, TaskStatus.COMPLETED, result=stored)
        finally:
            await cancel_and_wait(listener, timeout=_STOP_WAIT, what=f"task {task_id}")


async def _move(
    store: TaskStore,
    task_id: str,
    target: TaskStatus,
    *,
    status_message: str | None = None,
    input_requests: Mapping[str, Any] | None = None,
    result: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
    expected: TaskStatus | None = None,
) -> None:
    """Record a move; a task already terminal (cancelled meanwhile) keeps its status."""
    if status_message is None and error is not None:
        status_message = str(error.get("message"))
    try:
        await store.transition(
            task_id,
            target,
            status_message=status_message,
            input_requests=input_requests,
            result=result,
            error=error,
            expected=expected,
        )
    except IllegalTransition as exc:
        log.debug("task %s: %s", task_id, exc)


async def _no_send(message: dict[str, Any]) -> None:
    """A queued task has no request stream: its log lines and notifications go nowhere."""
