"""A client-side cache for cacheable results (2026-07-28 server/utilities/caching).

Servers of the stateless revision put ``ttlMs`` and ``cacheScope`` on the results of
``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list`` and
``resources/read``. A result is served from here while ``now < received + ttlMs``:

* the key is the method and the parameters that shape the result (the cursor of a
  page, the URI of a read), never ``_meta``, and the server it came from;
* a ``"private"`` result is reused only under the same credential (the
  ``Authorization`` header the transport sends, hashed); a ``"public"`` one under any;
* results of input-required retries are never stored (they depend on inputs outside
  the key), nor results without a positive ``ttlMs`` (older servers: "immediately stale");
* ``notifications/*/list_changed`` and ``notifications/resources/updated`` drop the
  matching entries at once (§ interaction with notifications).

One :class:`ResultCache` may be shared by several clients (``Client(cache=...)``);
the entry count is bounded, the oldest entry going first.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

__all__ = ["CACHEABLE_METHODS", "ResultCache", "credential_of"]

CACHEABLE_METHODS: Final = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
# Which cached methods a list_changed kind ("tools", "resources", "prompts") makes stale.
_STALE_ON: Final = {
    "tools": ("tools/list",),
    "prompts": ("prompts/list",),
    "resources": ("resources/list", "resources/templates/list"),
}

_Key = tuple[str, str, bytes, str | None]


class ResultCache:
    """Fresh results by (server, method, params, credential); ``max_entries`` bounds it."""

    def __init__(
        self, *, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[_Key, tuple[float, dict[str, Any]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(
        self, server: str, method: str, params: Mapping[str, Any] | None, credential: str | None
    ) -> dict[str, Any] | None:
        """A fresh result for this request, or None."""
        shape = _shape(params)
        now = self._clock()
        for key in ((server, method, shape, None), (server, method, shape, credential)):
            entry = self._entries.get(key)
            if entry is None:
                continue
            expires, result = entry
            if now < expires:
                return result
            del self._entries[key]
        return None

    def put(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any] | None,
        credential: str | None,
        result: Mapping[str, Any],
    ) -> None:
        """Keep ``result`` for its ``ttlMs`` when it is cacheable."""
        if method not in CACHEABLE_METHODS or result.get("resultType", "complete") != "complete":
            return
        ttl = result.get("ttlMs")
        if type(ttl) is not int or ttl <= 0:  # absent, zero or negative: immediately stale
            return
        # "private" (or anything unknown) binds the entry to the credential; "public" does not.
        owner = None if result.get("cacheScope") == "public" else credential
        key = (server, method, _shape(params), owner)
        self._entries[key] = (self._clock() + ttl / 1000, dict(result))
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, server: str, methods: tuple[str, ...], uri: str | None = None) -> None:
        """Drop ``server``'s entries for ``methods`` (only the read of ``uri`` when given)."""
        shape = _shape({"uri": uri}) if uri is not None else None
        for key in [
            k
            for k in self._entries
            if k[0] == server and k[1] in methods and (shape is None or k[2] == shape)
        ]:
            del self._entries[key]

    def list_changed(self, server: str, kind: str) -> None:
        self.invalidate(server, _STALE_ON.get(kind, ()))

    def resource_updated(self, server: str, uri: str) -> None:
        self.invalidate(server, ("resources/read",), uri)

    def clear(self) -> None:
        self._entries.clear()


def _shape(params: Mapping[str, Any] | None) -> bytes:
    """The parameters that decide the result: everything but ``_meta``, canonically."""
    if not params:
        return b"{}"
    return orjson.dumps(
        {k: v for k, v in params.items() if k != "_meta"}, option=orjson.OPT_SORT_KEYS
    )


def credential_of(transport: object) -> str | None:
    """A digest of the ``Authorization`` header the transport sends (None without one)."""
    headers = getattr(transport, "headers", None)
    if not isinstance(headers, Mapping):
        return None
    for name, value in headers.items():
        if isinstance(name, str) and name.lower() == "authorization" and isinstance(value, str):
            return hashlib.sha256(value.encode()).hexdigest()
    return None
