"""The session store: the durable part of a stateful (handshake-era) session.

A Streamable HTTP session has two halves. What a client negotiated and
chose (protocol version, client info and capabilities, log level, the
principal it authenticated as, when it was last seen) is plain data: a
:class:`SessionRecord`, kept in a :class:`SessionStore`, where a shared
implementation (Redis) lets any worker learn about a session another worker
created. What only the serving process can hold (open SSE streams, running
tasks, pending server→client requests) stays in the transport's table of live
sessions (:mod:`mcpkit.transports.http_sessions`), which also owns the
per-process cap and the least-recently-used eviction.

The protocol is shaped for a network store:

* every method is async and passes plain values (``to_json`` / ``from_json``
  give a record's wire form): what ``load`` returns belongs to the caller, and
  changing it changes nothing in the store, while a record handed to
  ``create`` or ``save`` belongs to the store (a network store serialises it,
  the in-memory one keeps it): the caller does not change it afterwards;
* expiry is the store's job, given as a ``ttl`` in seconds on every write
  (Redis: ``PX``), so an abandoned session disappears even when no process
  that knew it is left to delete it;
* ``create`` is set-if-absent, so two workers can never hand out the same id;
* ``save`` and ``touch`` only update a session that still exists, so a late
  write never resurrects an ended session.

The transport writes little: ``create`` once per ``initialize``, ``save``
when the log level changes, ``touch`` at most every few minutes per session
(not per request), ``delete`` when the session ends.
``tests/stores/conformance.py`` is the behaviour every implementation must pass.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

import orjson

from ..errors import ConfigurationError

__all__ = ["DEFAULT_MAX_RECORDS", "MemorySessionStore", "SessionRecord", "SessionStore"]

#: Sessions a :class:`MemorySessionStore` keeps by default.
DEFAULT_MAX_RECORDS: Final = 100_000


@dataclass(slots=True)
class SessionRecord:
    """What survives of a session outside the process serving it. Plain JSON data."""

    session_id: str
    protocol_version: str
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None  # set by logging/setLevel; None: the server's default
    principal: str | None = (
        None  # who initialised it (mcpkit.server.stateless.request_state.principal_of)
    )
    created_at: float = field(default_factory=time.time)  # seconds since the epoch
    last_seen: float = field(default_factory=time.time)  # updated by ``touch``
    # resources/subscribe: the URIs the session asked to hear about (a cluster's nodes
    # all need them, so they are part of the record, not of the live session)
    subscriptions: list[str] = field(default_factory=list)
    # The scopes granted to the token that last changed them (None: no auth info):
    # updates of a resource with scopes reach the session only when these cover them.
    subscriber_scopes: list[str] | None = None
    # The session's own enable/disable rules (ctx.disable_components; their JSON form,
    # mcpkit.server.visibility.VisibilityRules.to_json), None: none. Every node needs them.
    visibility: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "protocol_version": self.protocol_version,
            "client_info": self.client_info,
            "client_capabilities": self.client_capabilities,
            "log_level": self.log_level,
            "principal": self.principal,
            "created_at": self.created_at,
            "last_seen": self.last_seen,
            "subscriptions": self.subscriptions,
            "subscriber_scopes": self.subscriber_scopes,
            "visibility": self.visibility,
        }

    @classmethod
    def from_json(cls, data: Any) -> SessionRecord:
        """The record of its wire form; ``ValueError`` naming the first field of the wrong
        type (a store hands over whatever it holds: a record corrupted there must not
        become a session that fails later, deep in a request)."""
        if not isinstance(data, dict):
            raise ValueError(f"a session record is a JSON object, not {type(data).__name__}")
        for name, kinds in _FIELD_TYPES.items():
            value = data.get(name)
            if not isinstance(value, kinds) or isinstance(value, bool):
                raise ValueError(f"session record field {name!r}: {type(value).__name__}")
        subscriptions = data.get("subscriptions") or []
        if not all(isinstance(uri, str) for uri in subscriptions):
            raise ValueError("session record field 'subscriptions': not a list of strings")
        return cls(
            session_id=data["session_id"],
            protocol_version=data["protocol_version"],
            client_info=data.get("client_info"),
            client_capabilities=data.get("client_capabilities") or {},
            log_level=data.get("log_level"),
            principal=data.get("principal"),
            created_at=float(data.get("created_at") or 0.0),
            last_seen=float(data.get("last_seen") or 0.0),
            subscriptions=list(subscriptions),
            subscriber_scopes=_strings_or_none(data.get("subscriber_scopes")),
            visibility=data.get("visibility"),
        )


def _strings_or_none(value: Any) -> list[str] | None:
    if value is None:
        return None
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


_NONE: Final = type(None)
# What each field of a record's JSON may be (absent counts as None).
_FIELD_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "session_id": (str,),
    "protocol_version": (str,),
    "client_info": (dict, _NONE),
    "client_capabilities": (dict, _NONE),
    "log_level": (str, _NONE),
    "principal": (str, _NONE),
    "created_at": (int, float, _NONE),
    "last_seen": (int, float, _NONE),
    "subscriptions": (list, _NONE),
    "subscriber_scopes": (list, _NONE),
    "visibility": (dict, _NONE),
}


@runtime_checkable
class SessionStore(Protocol):
    """Where session records live, each for ``ttl`` seconds after its last write."""

    async def create(self, record: SessionRecord, ttl: float) -> bool:
        """Store a new session; False (and nothing stored) when its id is taken."""
        ...

    async def load(self, session_id: str) -> SessionRecord | None:
        """A copy of the session's record; None when it is unknown, ended or expired."""
        ...

    async def save(self, record: SessionRecord, ttl: float) -> bool:
        """Replace an existing session's record and restart its ttl; False (nothing
        stored) when the session no longer exists."""
        ...

    async def touch(self, session_id: str, ttl: float) -> bool:
        """Mark the session as seen now (``last_seen``) and restart its ttl; False when
        it no longer exists."""
        ...

    async def delete(self, session_id: str) -> bool:
        """End the session's record; True when there was one."""
        ...


class MemorySessionStore:
    """A bounded, process-local :class:`SessionStore`: enough for one process.

    Records are kept as given (their JSON parts shared with the live session,
    so a record costs a few hundred bytes), and ``load`` returns a deep copy,
    as a network store would. They expire ``ttl`` seconds after their last write,
    and at most ``max_records`` are kept: past that, the one closest to
    expiry goes first. Expired records are purged a few at a time as records
    are written, so no timer or task is needed.
    """

    __slots__ = ("_records", "max_records")

    def __init__(self, *, max_records: int = DEFAULT_MAX_RECORDS) -> None:
        if type(max_records) is not int or max_records < 1:
            raise ConfigurationError(
                f"MemorySessionStore: max_records must be a positive integer, not {max_records!r}"
            )
        self.max_records = max_records
        # session id -> (expires at, on the monotonic clock; the record). Every write
        # moves a record to the end, so with one ttl the front expires first. A plain
        # dict (insertion-ordered; moved by pop and re-insert): an OrderedDict's links
        # cost ~50 bytes more per session.
        self._records: dict[str, tuple[float, SessionRecord]] = {}

    def __len__(self) -> int:
        """The number of records kept (expired ones may linger until the next write)."""
        return len(self._records)

    async def create(self, record: SessionRecord, ttl: float) -> bool:
        now = time.monotonic()
        self._purge(now)
        known = self._records.get(record.session_id)
        if known is not None and known[0] > now:
            return False
        self._put(copy.copy(record), now + ttl)
        return True

    async def load(self, session_id: str) -> SessionRecord | None:
        known = self._live(session_id)
        if known is None:
            return None
        record = known[1]
        return dataclasses.replace(
            record,
            client_info=_copy_json(record.client_info),
            client_capabilities=_copy_json(record.client_capabilities),
            subscriptions=list(record.subscriptions),
        )

    async def save(self, record: SessionRecord, ttl: float) -> bool:
        if self._live(record.session_id) is None:
            return False
        self._put(copy.copy(record), time.monotonic() + ttl)
        return True

    async def touch(self, session_id: str, ttl: float) -> bool:
        known = self._live(session_id)
        if known is None:
            return False
        record = known[1]  # the store's own copy (see _put)
        record.last_seen = time.time()
        self._put(record, time.monotonic() + ttl)
        return True

    async def delete(self, session_id: str) -> bool:
        known = self._records.pop(session_id, None)
        return known is not None and known[0] > time.monotonic()

    def _live(self, session_id: str) -> tuple[float, SessionRecord] | None:
        known = self._records.get(session_id)
        if known is None:
            return None
        if known[0] <= time.monotonic():
            del self._records[session_id]
            return None
        return known

    def _put(self, record: SessionRecord, expires_at: float) -> None:
        """Keep ``record`` itself: create and save pass a shallow copy (``touch`` changes
        its fields; its JSON values are the caller's promise not to change)."""
        records = self._records
        records.pop(record.session_id, None)
        records[record.session_id] = (expires_at, record)
        while len(records) > self.max_records:
            del records[next(iter(records))]

    def _purge(self, now: float) -> None:
        records = self._records
        for _ in range(8):  # amortised: a few expired records per write
            if not records:
                return
            sid = next(iter(records))
            if records[sid][0] > now:
                return
            del records[sid]


def _copy_json(value: Any) -> Any:
    """A deep copy of plain JSON data (faster than ``copy.deepcopy`` for it)."""
    return orjson.loads(orjson.dumps(value)) if value is not None else None
