"""Input-required results (MRTR, SEP-2322): ``ctx.elicit`` and friends on the stateless era.

In 2026-07-28 a server cannot send requests to the client. A ``tools/call``,
``prompts/get`` or ``resources/read`` that needs the user or the client's LLM
answers with ``resultType: "input_required"``, a map of ``inputRequests`` and
an opaque ``requestState``; the client retries the same request with
``inputResponses`` (keyed like the requests) and the state
(2026-07-28 basic/patterns/mrtr).

**Exactly once.** The handler is not re-run from the top on each round: the
first round starts it as a task, and when it awaits ``ctx.elicit`` /
``ctx.sample`` / ``ctx.list_roots`` the call is *parked* (kept in
:class:`InputRounds`, keyed by a random call id) while its questions go back
to the client. The retry resumes the same coroutine with the answers, so
whatever the handler did before a question (a payment, a counter) happens
once. Questions asked together (``asyncio.gather``) go out in one round;
questions asked one after another take one round each.

**requestState** is ``base64url(payload).base64url(HMAC-SHA256)``. The payload
names the parked call, the round it answers and a digest of the method, the
tool/prompt name or URI and the arguments, and it expires. It is signed with
the first of the server's keys and verified with any of them (rotation: put
the new key first, keep the old one until the states it signed expired). A
state is good for one round: a replayed, tampered, expired or re-bound state
gets ``-32602`` and never reaches the handler.

Parked calls live in this process (a load balancer must send the rounds of a
call to the same worker); a parked call nobody resumes is cancelled after
``ttl`` seconds.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from ..errors import ConfigurationError, InvalidParams, PeerTimeout

if TYPE_CHECKING:
    from .session import Send, ServerSession

__all__ = ["INPUT_METHODS", "InputRounds", "ParkedCall", "RequestStateCodec"]

# The only requests that may answer with an InputRequiredResult (SEP-2322).
INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_KEY_BASE: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
_MAX_PARKED: Final = 10_000

Run = Callable[[dict[str, Any], "Send", Any], Awaitable[dict[str, Any] | None]]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestStateCodec:
    """Seals and opens ``requestState`` tokens (HMAC-SHA256, rotating keys, expiry)."""

    def __init__(self, keys: Sequence[bytes], *, ttl: float) -> None:
        if not keys or any(len(k) < 32 for k in keys):
            raise ConfigurationError("request state keys: at least one, each of 32 bytes or more")
        self._keys = tuple(keys)
        self.ttl = ttl

    def seal(self, payload: dict[str, Any]) -> str:
        body = _b64(orjson.dumps({**payload, "exp": time.time() + self.ttl}))
        mac = hmac.new(self._keys[0], body.encode(), hashlib.sha256).digest()
        return f"{body}.{_b64(mac)}"

    def open(self, token: Any) -> dict[str, Any] | None:
        """The payload of a genuine, unexpired token; None for anything else."""
        if not isinstance(token, str) or token.count(".") != 1:
            return None
        body, mac_text = token.split(".")
        try:
            mac = _unb64(mac_text)
        except (binascii.Error, ValueError):
            return None
        if not any(
            hmac.compare_digest(mac, hmac.new(k, body.encode(), hashlib.sha256).digest())
            for k in self._keys
        ):
            return None
        try:
            payload = orjson.loads(_unb64(body))
        except (binascii.Error, ValueError, orjson.JSONDecodeError):
            return None
        if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int | float):
            return None
        return payload if payload["exp"] > time.time() else None


class _Question:
    __slots__ = ("future", "method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        if self.params is not None:
            out["params"] = self.params
        return out


class _Relay:
    """The ``send`` of a parked call: the response stream of whichever round is current."""

    __slots__ = ("target",)

    def __init__(self, target: Send) -> None:
        self.target = target

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.target(message)


class ParkedCall:
    """A handler suspended on its questions to the client, between rounds."""

    def __init__(self, call_id: str, binding: str, send: Send, timeout: float) -> None:
        self.id = call_id
        self.binding = binding
        self.round = 0
        self.deadline = 0.0  # loop time after which nobody is expected to resume it
        self.relay = _Relay(send)
        self.timeout = timeout
        self.questions: dict[str, _Question] = {}
        # Answers a first round already carries (a client may answer before it is asked).
        self.prefilled: dict[str, Any] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Future[dict[str, Any] | None] | None = None

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
        question = _Question(method, params)
        self.questions[key] = question
        early = self.prefilled.pop(key, None)
        if isinstance(early, dict) and _plausible(method, early):
            question.future.set_result(early)
            return early
        self.changed.set()
        wait = self.timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(question.future, wait)
        except TimeoutError:
            raise PeerTimeout(f"the client did not answer {method} within {wait:g} s") from None

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
            self.changed.clear()
            waiter: asyncio.Future[Any] = asyncio.ensure_future(self.changed.wait())
            pending: set[asyncio.Future[Any]] = {self.task, waiter}
            try:
                await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()


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


class InputRounds:
    """The parked calls of one server and the codec for their ``requestState``."""

    def __init__(self, *, keys: Sequence[bytes] | None = None, ttl: float = 300.0) -> None:
        self.codec = RequestStateCodec(keys or [secrets.token_bytes(32)], ttl=ttl)
        self.ttl = ttl
        self._calls: dict[str, ParkedCall] = {}

    def __len__(self) -> int:
        return len(self._calls)

    async def serve(
        self, session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any, run: Run
    ) -> dict[str, Any] | None:
        rid = msg["id"]
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        binding = _binding(msg["method"], params)
        state = params.get("requestState")
        if state is None:
            call = self._park(binding, send, session.server.request_timeout)
            responses = params.get("inputResponses")
            if isinstance(responses, dict):
                call.prefilled = dict(responses)
            session.inputs = call
            call.task = asyncio.ensure_future(run(msg, call.relay, auth_info))
        else:
            payload = self.codec.open(state)
            if payload is None:
                raise InvalidParams("requestState is invalid or expired")
            if payload.get("b") != binding:
                raise InvalidParams("requestState was issued for a different request")
            found = self._calls.get(payload.get("c", ""))
            if found is None or found.round != payload.get("r"):
                raise InvalidParams("requestState was already used, or its call has ended")
            call = found
            call.round += 1  # single use: this state cannot be replayed
            call.deadline = asyncio.get_running_loop().time() + self.ttl
            call.relay.target = send
            call.answer(params.get("inputResponses"))
        questions, outcome = await call.outcome()
        if questions:
            token = self.codec.seal({"c": call.id, "r": call.round, "b": binding})
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

    def _park(self, binding: str, send: Send, timeout: float) -> ParkedCall:
        if len(self._calls) >= _MAX_PARKED:  # the oldest parked call gives way
            self._end(next(iter(self._calls.values())))
        call = ParkedCall(secrets.token_urlsafe(16), binding, send, timeout)
        self._calls[call.id] = call
        loop = asyncio.get_running_loop()
        call.deadline = loop.time() + self.ttl
        loop.call_later(self.ttl, self._expire, call)
        return call

    def _expire(self, call: ParkedCall) -> None:
        """Cancel a call not resumed within ``ttl`` of its last round."""
        if self._calls.get(call.id) is not call:
            return
        loop = asyncio.get_running_loop()
        left = call.deadline - loop.time()
        if left > 0:
            loop.call_later(left, self._expire, call)
        else:
            self._end(call)

    def _end(self, call: ParkedCall) -> None:
        self._calls.pop(call.id, None)
        if call.task is not None and not call.task.done():
            call.task.cancel()
