"""Input-required results (MRTR, SEP-2322): ``ctx.elicit`` and friends on the stateless era.

In 2026-07-28 a server cannot send requests to the client. A ``tools/call``,
``prompts/get`` or ``resources/read`` that needs the user or the client's LLM
answers with ``resultType: "input_required"``, a map of ``inputRequests`` and
an opaque ``requestState``; the client retries the same request with
``inputResponses`` (keyed like the requests) and the state
(2026-07-28 basic/patterns/mrtr).

**Two ways to serve a retry.** The first round starts the handler as a task;
when it awaits ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` the call is
*parked* (kept in :class:`InputRounds`, keyed by a random call id) while its
questions go back to the client. Questions asked together
(``asyncio.gather``) go out in one round; questions asked one after another
take one round each.

- *Resume* (fast path): the retry reaches the worker holding the parked call,
  which resumes the same coroutine with the answers.
- *Replay*: the retry reaches another worker (or this one after a restart).
  Every state carries a *journal*: each question asked so far (key, method, a
  digest of its params, the answer) and the results of completed
  :meth:`Context.once <mcpkit.server.context.Context.once>` steps. The handler is
  run again from the top with the journal: its questions get the journaled
  answers in order (then this retry's ``inputResponses`` for the questions of
  the last round), ``ctx.once`` returns the journaled results without running
  the step; when it asks something new it is parked here as usual. A handler
  that, replayed, asks another question than the journal recorded at that
  position gets :class:`InputReplayMismatch` (a JSON-RPC error naming both).

**Exactly once.** When every round of a call reaches the worker that parked
it, *all* of the handler's code runs exactly once. When a round reaches
another worker, the code outside ``ctx.once`` before the last answered
question runs again; the questions and the ``ctx.once`` steps still happen
once. So for several workers: give them the same ``request_state_keys`` and a
shared ``store`` (:class:`~.input_options.InputRoundOptions`, and
:mod:`mcpkit.stores.input_required`), and wrap each side effect (a payment, a
counter, an e-mail) in ``await ctx.once("name", fn, ...)``.
A tool declaring no ``Context`` parameter runs in the request's own task, not
as a pausable call (most never ask, and a task per call costs more than a
quick tool); if it asks through ``current_context()`` it is started again from
the top as a pausable call (a ``ctx.once`` step restarts it before running).

**requestState** is ``base64url(payload).base64url(HMAC-SHA256)``. The payload
names the call and the round it answers, a digest of the method, the
tool/prompt name or URI and the arguments, the journal, an expiry and, when the
request was authenticated, a keyed digest of the principal (see
:func:`principal_of`). It is signed with the first of the server's keys and
verified with any of them (rotation: put the new key first, keep the old one
until the states it signed expired). Both parts must be canonical unpadded
base64url: any other spelling of the same bytes is refused. It is *signed, not
encrypted*: the client can read the journaled answers and step results, so a
step must not return secrets. A state is good for one retry, by the principal
it was issued to, on every worker sharing the store: a replayed, tampered,
expired, re-bound or foreign state gets ``-32602`` and never reaches the
handler (a foreign one is not used up: its owner can still retry with it).

A parked call nobody resumes is cancelled after ``ttl`` seconds (also the
one a retry replayed elsewhere left behind), its memory handed back at once.
Parked calls are bounded in all and per principal (``ParkedTable`` in
:mod:`mcpkit.stores.input_required`); one that gives way is cancelled, and its
next retry replays it from its journal. So are the claims of the default store
(``MemoryInputRoundStore``): a principal at its bound gets ``TooManyInputRounds``.

**Shutdown.** A round still running when the server stops (``serve()``'s graceful
period is over) is answered with the ``SHUTTING_DOWN`` error by the request's task,
since the handler runs in its own; the call is dropped and a retry's claimed state
handed back (the store's optional ``release``), so that the same retry replays the
call on another worker. Parked calls are dropped by :meth:`InputRounds.close`, which
the ASGI lifespan shutdown awaits before the server's lifespan exits.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from ...errors import (
    INTERNAL_ERROR,
    InputReplayMismatch,
    InvalidParams,
    MCPError,
    PeerTimeout,
)
from ...loops import cancel_and_wait
from ...protocol import jsonrpc
from ...protocol.error_answers import shutting_down_error
from ...stores.input_required import (
    Claims,
    InputRoundStore,
    MemoryInputRoundStore,
    ParkedTable,
)
from ..request import stopped_for_shutdown
from .request_state import RequestStateCodec, principal_of

if TYPE_CHECKING:
    from ..session import Send, ServerSession

log = logging.getLogger("mcpkit.server")

__all__ = [
    "INPUT_METHODS",
    "InputReplayMismatch",
    "InputRounds",
    "ParkedCall",
    "RequestStateCodec",
    "principal_of",
]

# The largest requestState issued (bytes, encoded). The client sends it back with each
# retry, inside a request body that Streamable HTTP caps at 4 MiB by default.
DEFAULT_MAX_STATE: Final = 1024 * 1024

# The only requests that may answer with an InputRequiredResult (SEP-2322).
INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_KEY_BASE: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
# Only plain JSON values are step results: what a replay gets back must equal what the
# first run got (a datetime or a dataclass would come back as a str or a dict).
_STEP_JSON: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME

Run = Callable[[dict[str, Any], "Send", Any], Awaitable[dict[str, Any] | None]]
# One journal entry: [key, method, params digest, answer], the answer being the
# client's result (dict), None (asked in the round the state answers) or the text
# of the timeout the handler got.
Entry = list[Any]


def _digest(method: str, params: dict[str, Any] | None) -> str:
    blob = orjson.dumps([method, params], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()[:16]


class _Question:
    __slots__ = ("digest", "future", "method", "params", "timed_out")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params
        self.digest = _digest(method, params)
        self.timed_out: str | None = None
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        if self.params is not None:
            out["params"] = self.params
        return out

    def entry(self, key: str) -> Entry:
        answer: Any = self.timed_out
        if answer is None and self.future.done() and not self.future.cancelled():
            answer = self.future.result()
        return [key, self.method, self.digest, answer]


class _Relay:
    """The ``send`` of a parked call: the response stream of whichever round is current."""

    __slots__ = ("target",)

    def __init__(self, target: Send) -> None:
        self.target = target

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.target(message)


class ParkedCall:
    """A handler suspended on its questions to the client, between rounds.

    ``script`` and ``steps`` are the journal of a state being replayed;
    ``responses`` the retry's ``inputResponses`` for the script's open questions.
    """

    def __init__(
        self,
        call_id: str,
        binding: str,
        send: Send,
        timeout: float,
        *,
        principal: str | None = None,
        script: Sequence[Entry] = (),
        steps: dict[str, Any] | None = None,
        responses: dict[str, Any] | None = None,
    ) -> None:
        self.id = call_id
        self.binding = binding
        self.principal = principal  # whose call it is (principal_of)
        self.round = 0
        self.deadline = 0.0  # loop time after which nobody is expected to resume it
        self.relay = _Relay(send)
        # The progressToken of the round being served (set per round, like the relay).
        self.token: str | int | None = None
        self.timeout = timeout
        self.questions: dict[str, _Question] = {}
        # Answers a first round already carries (a client may answer before it is asked).
        self.prefilled: dict[str, Any] = {}
        self.script = list(script)
        self.responses = responses or {}
        self.steps: dict[str, Any] = dict(steps or {})
        self._step_counts: dict[str, int] = {}
        # Set while outcome() waits: woken when the handler asks or ends.
        self._wake: asyncio.Future[None] | None = None
        self.task: asyncio.Future[dict[str, Any] | None] | None = None

    def progress_token(self, own: str | int | None) -> str | int | None:
        """The token progress of the handler goes to: the current round's, not ``own``.

        A resumed handler still holds the request that started it, whose token the
        client has forgotten (each retry is a new request with its own
        ``_meta.progressToken``); without one in the current round, no progress.
        """
        return self.token

    async def ask(
        self, method: str, params: dict[str, Any] | None, key: str | None, timeout: float | None
    ) -> dict[str, Any]:
        """What ``session.send_request`` does on the stateless era: wait for the next round."""
        if key is None or key in self.questions:
            base = key or _KEY_BASE.get(method, "input")
            key, n = base, 1
            while key in self.questions:
                n += 1
                key = f"{base}_{n}"
        position = len(self.questions)
        question = _Question(method, params)
        self.questions[key] = question
        if position < len(self.script):
            early = self._replayed(position, key, question)
        else:
            early = self.prefilled.pop(key, None)
        if isinstance(early, dict) and _plausible(method, early):
            question.future.set_result(early)
            return early
        self._notify()
        wait = self.timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(question.future, wait)
        except TimeoutError:
            question.timed_out = f"the client did not answer {method} within {wait:g} s"
            raise PeerTimeout(question.timed_out) from None

    def _replayed(self, position: int, key: str, question: _Question) -> Any:
        """The journaled answer to the question asked at ``position`` of a replay."""
        jkey, jmethod, jdigest, answer = self.script[position]
        if (jkey, jmethod, jdigest) != (key, question.method, question.digest):
            what = (
                "the same question with other params"
                if (jkey, jmethod) == (key, question.method)
                else f"{question.method} {key!r}"
            )
            raise InputReplayMismatch(
                f"replaying an input-required call on another worker: question {position + 1} "
                f"was {jmethod} {jkey!r}, but the handler now asked {what}; a handler must ask "
                "the same questions in the same order on every run (put non-deterministic "
                "work inside ctx.once)"
            )
        if isinstance(answer, str):  # the first run timed out waiting for it
            question.timed_out = answer
            raise PeerTimeout(answer)
        if answer is None:  # a question of the round this retry answers
            return self.responses.get(key)
        return answer

    async def once(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Run a step once per call: its JSON result is journaled, and replayed from there."""
        count = self._step_counts.get(name, 0) + 1
        self._step_counts[name] = count
        step_id = name if count == 1 else f"{name}#{count}"
        if step_id in self.steps:
            return orjson.loads(orjson.dumps(self.steps[step_id]))  # a copy the caller may change
        value = fn(*args)
        if inspect.isawaitable(value):
            value = await value
        try:
            blob = orjson.dumps(value, option=_STEP_JSON)
        except TypeError as exc:
            raise TypeError(
                f"ctx.once step {name!r} returned a {type(value).__name__}, which is not "
                f"JSON-serialisable ({exc}); it must return dict/list/str/int/float/bool/None, "
                "because its result is journaled in the requestState"
            ) from None
        self.steps[step_id] = orjson.loads(blob)
        return orjson.loads(blob)

    def journal(self) -> list[Entry]:
        return [question.entry(key) for key, question in self.questions.items()]

    def open_questions(self) -> dict[str, _Question]:
        return {k: q for k, q in self.questions.items() if not q.future.done()}

    def answer(self, responses: Any) -> None:
        """Resolve the open questions ``responses`` answers; the rest are asked again."""
        if not isinstance(responses, dict):
            return
        for key, question in self.open_questions().items():
            value = responses.get(key)
            if isinstance(value, dict) and _plausible(question.method, value):
                question.future.set_result(value)

    async def outcome(self) -> tuple[dict[str, _Question], dict[str, Any] | None]:
        """``(questions, None)`` while the handler waits on the client, ``({}, response)`` once
        it ended."""
        assert self.task is not None
        while True:
            if self.task.done():
                return {}, self.task.result()
            if self.open_questions():
                # Let questions asked together (asyncio.gather) join this round.
                for _ in range(4):
                    await asyncio.sleep(0)
                if not self.task.done():
                    return self.open_questions(), None
                continue
            # One future woken by either event: every tools/call of the era comes through
            # here, and a task on an Event plus asyncio.wait cost more than a quick tool.
            self._wake = asyncio.get_running_loop().create_future()
            self.task.add_done_callback(self._ended)
            try:
                await self._wake
            finally:
                self._wake = None
                self.task.remove_done_callback(self._ended)

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _ended(self, task: asyncio.Future[Any]) -> None:
        self._notify()


def _plausible(method: str, value: dict[str, Any]) -> bool:
    """A minimal shape check of an input response (a bad one is asked again)."""
    if method == "elicitation/create":
        return value.get("action") in ("accept", "decline", "cancel")
    if method == "roots/list":
        return isinstance(value.get("roots"), list)
    return "content" in value  # sampling/createMessage


def _binding(method: str, params: dict[str, Any]) -> str:
    target = params.get("uri") if method == "resources/read" else params.get("name")
    blob = orjson.dumps(
        {"m": method, "t": target, "a": params.get("arguments")}, option=orjson.OPT_SORT_KEYS
    )
    return hashlib.sha256(blob).hexdigest()[:32]


def _read_journal(payload: dict[str, Any]) -> tuple[list[Entry], dict[str, Any]] | None:
    """The journal of a genuine state, or None if it is not one this module wrote."""
    script, steps = payload.get("q"), payload.get("s")
    if not isinstance(script, list) or not isinstance(steps, dict):
        return None
    for entry in script:
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and all(isinstance(part, str) for part in entry[:3])
            and (entry[3] is None or isinstance(entry[3], dict | str))
        ):
            return None
    return script, steps


class InputRounds:
    """The parked calls of one server, the codec for their ``requestState`` and the store
    of used states."""

    def __init__(
        self,
        *,
        keys: Sequence[bytes] | None = None,
        ttl: float = 300.0,
        store: InputRoundStore | None = None,
        max_state: int = DEFAULT_MAX_STATE,
        parked: ParkedTable[ParkedCall] | None = None,
    ) -> None:
        self.codec = RequestStateCodec(keys or [secrets.token_bytes(32)], ttl=ttl)
        self.ttl = ttl
        self.max_state = max_state
        self.store = store if store is not None else MemoryInputRoundStore()
        self.parked: ParkedTable[ParkedCall] = parked if parked is not None else ParkedTable()
        self._displaced = 0

    def __len__(self) -> int:
        return len(self.parked)

    @property
    def store(self) -> InputRoundStore:
        """The store of used states (set again when ``MCPServer(store=...)`` is swapped)."""
        return self._claims.store

    @store.setter
    def store(self, store: InputRoundStore) -> None:
        self._claims = Claims(store)

    async def serve(
        self, session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any, run: Run
    ) -> dict[str, Any] | None:
        rid = msg["id"]
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        state = params.get("requestState")
        responses = params.get("inputResponses")
        responses = responses if isinstance(responses, dict) else {}
        timeout = session.server.request_timeout
        principal = principal_of(auth_info)
        claimed = ""
        if state is None:
            # Parked (id, binding, registered with its expiry timer) only once it asks
            # something: most calls never do, and they should not pay for it.
            call = ParkedCall("", "", send, timeout, principal=principal)
            call.prefilled = dict(responses)
            self._start(call, session, msg, auth_info, run)
        else:
            binding = _binding(msg["method"], params)
            payload = self.codec.open(state, principal=principal)
            journal = None if payload is None else _read_journal(payload)
            if payload is None or journal is None:
                raise InvalidParams("requestState is invalid or expired")
            if payload.get("b") != binding:
                raise InvalidParams("requestState was issued for a different request")
            call_id, round_no = str(payload.get("c")), payload.get("r")
            # Single use on every worker sharing the store (mrtr § server requirements).
            claimed = f"{call_id}.{round_no}"
            if not await self._claims.claim(claimed, float(payload["exp"]), principal):
                raise InvalidParams("requestState was already used")
            found = self.parked.get(call_id)
            if found is not None:
                if found.round != round_no:
                    raise InvalidParams("requestState was already used")
                call = found  # resume: the handler is parked here
                call.round += 1
                call.deadline = asyncio.get_running_loop().time() + self.ttl
                call.relay.target = send
                call.token = jsonrpc.progress_token(params.get("_meta"))
                call.answer(responses)
            else:  # replay: the call was parked on another worker, or has gone
                script, steps = journal
                call = self._park(
                    ParkedCall(
                        secrets.token_urlsafe(16),
                        binding,
                        send,
                        timeout,
                        principal=principal,
                        script=script,
                        steps=steps,
                        responses=responses,
                    )
                )
                self._start(call, session, msg, auth_info, run)
        try:
            questions, outcome = await call.outcome()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not (stopped_for_shutdown(task) and task is not None and task.uncancel() == 0):
                raise
            # The server stops before the round ended (its graceful period is over). The
            # handler runs in a task of its own, so the request's task answers for it, as
            # the handshake era's requests do; the call is dropped here, and its state is
            # handed back so that the client's retry replays it on another worker.
            self._end(call)
            if claimed:  # handed back (if the store can): the retry replays elsewhere
                await self._claims.release(claimed)
            return {"jsonrpc": "2.0", "id": rid, "error": shutting_down_error()}
        if questions:
            if not call.id:  # the first question of a first round
                call.id = secrets.token_urlsafe(16)
                call.binding = _binding(msg["method"], params)
                self._park(call)
            token = self.codec.seal(
                {
                    "c": call.id,
                    "r": call.round,
                    "b": call.binding,
                    "q": call.journal(),
                    "s": call.steps,
                },
                principal=principal,
            )
            if len(token) > self.max_state:
                # The client would have to send it back with every retry: end the call
                # with an error that says why, rather than an answer too big to return.
                self._end(call)
                raise MCPError(
                    f"{msg['method']} {params.get('name') or params.get('uri')!r}: the input-round "
                    f"state ({len(token)} bytes: the answers and ctx.once results so far) exceeds "
                    f"the server's limit of {self.max_state} bytes "
                    "(InputRoundOptions(request_state_limit=...))",
                    code=INTERNAL_ERROR,
                )
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "resultType": "input_required",
                    "inputRequests": {k: q.wire() for k, q in questions.items()},
                    "requestState": token,
                },
            }
        self._end(call)
        if outcome is None:
            return None
        response: dict[str, Any] = dict(outcome)
        response["id"] = rid  # the round that completes answers with its own id
        return response

    async def close(self, timeout: float = 1.0) -> None:
        """Drop every parked call (the server stops), letting their handlers unwind.

        Nobody waits on a parked call: its client holds the ``requestState``, whose next
        retry replays the call on another worker (or this one, restarted). Cancelled
        here, before the server's lifespan exits, a handler's ``finally`` still finds
        what the lifespan provides; ``timeout`` bounds the wait for handlers that do not
        stop when cancelled.
        """
        tasks = []
        while len(self.parked):
            call = self.parked.oldest()
            if call.task is not None and not call.task.done():
                tasks.append(call.task)
            self._end(call)
        # Cancelled again while they run: a cancellation can be lost on 3.11 (loops).
        await cancel_and_wait(*tasks, timeout=timeout, what="the parked calls")

    @staticmethod
    def _start(
        call: ParkedCall, session: ServerSession, msg: dict[str, Any], auth_info: Any, run: Run
    ) -> None:
        session.inputs = call
        params = msg.get("params")
        call.token = jsonrpc.progress_token(
            params.get("_meta") if isinstance(params, dict) else None
        )
        call.task = asyncio.ensure_future(run(msg, call.relay, auth_info))

    def _park(self, call: ParkedCall) -> ParkedCall:
        for gone, bound in self.parked.add(call.id, call.principal, call):
            self._displaced += 1
            if self._displaced % 1000 == 1:  # the first time, then every 1,000th
                log.warning(
                    "%d parked input-required call(s) cancelled to make room (%s); their "
                    "next retry replays them from their requestState",
                    self._displaced,
                    bound,
                )
            self._end(gone)
        loop = asyncio.get_running_loop()
        call.deadline = loop.time() + self.ttl
        loop.call_later(self.ttl, self._expire, call)
        return call

    def _expire(self, call: ParkedCall) -> None:
        """Cancel a call not resumed within ``ttl`` of its last round."""
        if self.parked.get(call.id) is not call:
            return
        loop = asyncio.get_running_loop()
        left = call.deadline - loop.time()
        if left > 0:
            loop.call_later(left, self._expire, call)
        else:
            self._end(call)

    def _end(self, call: ParkedCall) -> None:
        if self.parked.get(call.id) is call:
            self.parked.pop(call.id)
        if call.task is not None and not call.task.done():
            call.task.cancel()
            call.task.add_done_callback(_release)


def _release(task: asyncio.Future[Any]) -> None:
    """Let a cancelled handler's memory go at once.

    A cancelled task keeps its CancelledError, whose traceback holds the handler's
    frames, which hold the call, its context and the task itself: a cycle only the
    cyclic garbage collector frees, and objects that lived as long as a parked call
    wait for a full collection, which an idle server may not run for a long time
    (10,000 expired calls kept ~200 MB). Taking the error out breaks the cycle.
    """
    if task.cancelled():
        try:
            task.result()
        except asyncio.CancelledError:
            pass
