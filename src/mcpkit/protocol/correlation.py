"""Requests in flight both ways: ids, matching, cancellation, progress.

Both ends of MCP send requests: the client its calls, the server its sampling,
elicitation, roots and ping requests to the client. The rules for those are the
same on both sides, so they live here once, without I/O (ARCHITECTURE.md,
principle 1); the async sessions keep only what needs an event loop (the future
a caller awaits, its timer):

- ids: integers counted up from 1, unique for the life of the connection, so an
  answer can never be taken for another request's (basic § requests: an id MUST
  NOT be reused within a session). A side may put a fixed prefix before the
  number (the server writes ``"mcpkit-7"``) so its ids read apart from the
  peer's in a log.
- matching: a response names a pending request (taken off the table), one that
  is no longer pending (*stale*: answered twice, or answered after we gave up on
  it), or an id this side never issued (*unknown*). Because ids only count up,
  telling stale from unknown needs no memory of past requests.
- cancellation (utilities/cancellation): ``notifications/cancelled`` names the
  pending request and a reason, and the request leaves the table at once, so a
  late answer is stale. ``initialize`` is never cancelled (basic/lifecycle: it
  MUST NOT be), nor is a ``server/discover`` probe (an answer that comes too
  late is simply not read).
- progress (utilities/progress): a request that wants progress carries
  ``_meta.progressToken`` equal to its own id, so the id that is unique among
  pending requests is a unique token too, and a notification finds its request
  with the one table lookup that matches answers.

The table holds only pending requests: every entry leaves it by an answer, a
cancellation, :meth:`Outgoing.forget` or :meth:`Outgoing.drain`, so it never
holds more than the requests in flight.

The other way, a table of the peer's requests this side is serving (a dict kept
by the driver, changed only with :func:`admit`, :func:`finish`, :func:`release`;
read with :func:`cancelled`) holds them (the server its client's calls, the client the server's sampling, elicitation,
roots and ping requests), by the id the peer chose:

- a request whose id is still being served is refused (basic § requests: ids
  are unique among the sender's unanswered requests); the first one keeps the
  id, and stays cancellable by it;
- at most ``limit`` are served at once (None: no bound), so a peer cannot make
  this side work without bound;
- ``notifications/cancelled`` finds the request it names by that id; ids are
  kept exactly as decoded (an integer beyond 64 bits is an exact ``int``, see
  ``jsonrpc.exact_ids``), so a cancellation can only name the request it means;
- an entry leaves the table when its request is done (:func:`finish`, only if
  the entry is still that request's) or answered early (:func:`release`).

What a request is to the driver (a task, a request object with its task) is its
*handle*: stored and handed back, never looked inside.
"""

from __future__ import annotations

from typing import Any, Final, Literal

__all__ = [
    "NOT_CANCELLED",
    "Admission",
    "Outgoing",
    "Pending",
    "Reply",
    "ReplyKind",
    "admit",
    "cancelled",
    "finish",
    "refusal",
    "release",
]

# Outgoing requests never followed by notifications/cancelled (see the module docstring).
NOT_CANCELLED: Final = frozenset({"initialize", "server/discover"})


ReplyKind = Literal["result", "error", "malformed", "stale", "unknown"]


class Reply:
    """What an incoming response is, for the request table.

    Plain strings rather than an :class:`~enum.Enum`: every answer is classified on
    the hot path, and an enum member's lookup costs ten times a class attribute's.
    """

    RESULT: Final = "result"  # answers a pending request with a result object
    ERROR: Final = "error"  # answers a pending request with an error object
    MALFORMED: Final = "malformed"  # names a pending request, without a result/error object
    STALE: Final = "stale"  # one of our ids, no longer pending: a second answer, or a late one
    UNKNOWN: Final = "unknown"  # an id this side never issued


class Pending:
    """One request awaiting its answer.

    ``waiter`` and ``on_progress`` are the driver's (a future, a callback): the
    engine stores them and hands them back, never looks inside.
    """

    __slots__ = ("id", "method", "on_progress", "waiter")

    def __init__(self, rid: int | str, method: str, waiter: Any, on_progress: Any) -> None:
        self.id = rid
        self.method = method
        self.waiter = waiter
        self.on_progress = on_progress

    @property
    def progress_token(self) -> int | str | None:
        """The token progress for this request arrives with (its id), if it asked for any."""
        return self.id if self.on_progress is not None else None

    def __repr__(self) -> str:
        return f"Pending(id={self.id!r}, method={self.method!r})"


class Outgoing:
    """The requests one side of a connection sent and has not seen answered."""

    __slots__ = ("_last", "_pending", "_prefix")

    def __init__(self, *, id_prefix: str | None = None) -> None:
        self._prefix = id_prefix
        self._last = 0
        self._pending: dict[Any, Pending] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, rid: object) -> bool:
        return rid in self._pending

    def get(self, rid: Any) -> Pending | None:
        """The pending request ``rid``, left on the table."""
        return self._pending.get(rid)

    def open(
        self,
        method: str,
        params: dict[str, Any] | None,
        waiter: Any = None,
        on_progress: Any = None,
    ) -> tuple[Pending, dict[str, Any]]:
        """Record a new request; returns its entry and the message to send.

        With ``on_progress`` the message's ``_meta.progressToken`` is the request's id
        (``params`` itself is not changed).
        """
        self._last = n = self._last + 1
        prefix = self._prefix
        rid: int | str = n if prefix is None else f"{prefix}{n}"
        entry = Pending(rid, method, waiter, on_progress)
        self._pending[rid] = entry
        if on_progress is not None:
            params = dict(params) if params else {}
            meta = params.get("_meta")
            params["_meta"] = {**meta, "progressToken": rid} if meta else {"progressToken": rid}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        return entry, message

    def answer(self, msg: dict[str, Any]) -> tuple[ReplyKind, Pending | None]:
        """Classify the response ``msg``; a matched request leaves the table.

        The entry is returned for ``RESULT``, ``ERROR`` and ``MALFORMED`` (the
        driver fails its waiter for the last), None for ``STALE`` and ``UNKNOWN``.
        """
        rid = msg.get("id")
        try:
            entry = self._pending.pop(rid, None)
        except TypeError:  # an array or object as the id: not one of ours
            entry = None
        if entry is None:
            return ("stale" if self.issued(rid) else "unknown"), None
        if type(msg.get("result")) is dict:
            return "result", entry
        if type(msg.get("error")) is dict:
            return "error", entry
        return "malformed", entry

    def issued(self, rid: Any) -> bool:
        """Did this side ever issue ``rid`` (pending or not)?"""
        prefix = self._prefix
        if prefix is None:
            n = rid if type(rid) is int else None
        elif type(rid) is str and rid.startswith(prefix):
            digits = rid[len(prefix) :]
            # Only the spelling open() writes: ASCII digits, no leading zero ("7", not "07").
            ok = digits.isascii() and digits.isdigit() and digits[0] != "0"
            n = int(digits) if ok else None
        else:
            n = None
        return n is not None and 1 <= n <= self._last

    def cancel(self, rid: Any, reason: str | None = None) -> dict[str, Any] | None:
        """Give up on the pending request ``rid``: it leaves the table, and the
        ``notifications/cancelled`` to send is returned (None when it was not
        pending, or is one that is never cancelled: :data:`NOT_CANCELLED`)."""
        try:
            entry = self._pending.pop(rid, None)
        except TypeError:
            return None
        if entry is None or entry.method in NOT_CANCELLED:
            return None
        params: dict[str, Any] = {"requestId": entry.id}
        if reason is not None:
            params["reason"] = reason
        return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}

    def progress(self, params: dict[str, Any]) -> Pending | None:
        """The pending request a ``notifications/progress`` (its ``params``) is about,
        when that request asked for progress; None for any other token."""
        token = params.get("progressToken")
        kind = type(token)
        if kind is not int and kind is not str:  # not True for 1: bool is not a token
            return None
        entry = self._pending.get(token)
        if entry is None or entry.on_progress is None:
            return None
        return entry

    def forget(self, rid: Any) -> Pending | None:
        """Drop ``rid`` from the table (its caller stopped waiting); returns the entry
        if it was still pending."""
        try:
            return self._pending.pop(rid, None)
        except TypeError:
            return None

    def drain(self) -> list[Pending]:
        """Empty the table (the connection ended); returns every pending request."""
        pending = list(self._pending.values())
        self._pending.clear()
        return pending


class Admission:
    """Why :func:`admit` refused a request (it returns None when it admits one).

    Plain strings, as :class:`Reply`, for the same reason: this runs per request.
    """

    DUPLICATE: Final = "duplicate"  # a request with this id is still being served
    FULL: Final = "full"  # ``limit`` requests are being served already


# -- incoming requests -----------------------------------------------------------------
# The table is a plain dict, request id -> handle, owned by the driver: making one costs
# nothing more than ``{}`` (every 2026-07-28 POST gets a session of its own, and with
# it a table), and its lookups are the dict's own. Change it only with these functions:
# they hold the rules.


def admit(
    serving: dict[Any, Any], rid: Any, handle: Any, limit: int | None
) -> Literal["duplicate", "full"] | None:
    """Start serving the request ``rid`` (its ``handle`` stored), or say why not:
    :attr:`Admission.DUPLICATE` or :attr:`Admission.FULL` (``limit`` requests are being
    served; None: no bound); then nothing changes.

    ``rid`` is a valid request id (a string or an integer, as ``jsonrpc.classify`` lets
    through), so it can be a key.
    """
    if rid in serving:
        return "duplicate"
    if limit is not None and len(serving) >= limit:
        return "full"
    serving[rid] = handle
    return None


def refusal(
    serving: dict[Any, Any], rid: Any, limit: int | None
) -> Literal["duplicate", "full"] | None:
    """What :func:`admit` would say for ``rid`` now, without admitting it (a driver that
    makes the handle only for a request it serves asks first)."""
    if rid in serving:
        return "duplicate"
    if limit is not None and len(serving) >= limit:
        return "full"
    return None


def finish(serving: dict[Any, Any], rid: Any, handle: Any) -> None:
    """The request ``rid`` is done: forget it, if ``handle`` is still the one served under
    that id (not a later request that took the freed id)."""
    if serving.get(rid) is handle:
        del serving[rid]


def release(serving: dict[Any, Any], rid: Any) -> Any:
    """The peer has its answer to ``rid`` while the work goes on (a call paused for
    input, 2026-07-28): the id is free for a new request and no longer cancels the
    work. Returns the handle, or None."""
    try:
        return serving.pop(rid, None)
    except TypeError:  # an array or object as the id: never admitted
        return None


def cancelled(serving: dict[Any, Any], params: Any) -> Any:
    """The handle of the request a ``notifications/cancelled`` (its ``params``) names,
    when that request is being served; None for anything else (no ``requestId``, one
    that is not an id, one not being served). The entry stays until :func:`finish`: the
    driver stops the work, which then finishes."""
    if type(params) is not dict:
        return None
    rid = params.get("requestId")
    kind = type(rid)
    if kind is not int and kind is not str:  # not True for 1: bool is not an id
        return None
    return serving.get(rid)
