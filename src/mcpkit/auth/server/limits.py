"""The authorization server's rate limits (registration, authorization), per client address.

Registration is open to anyone (RFC 7591 § 3 allows it without authentication, and MCP
clients rely on that), so each registration costs the store a record: a sliding window
of ``limit`` registrations per ``window`` seconds per address keeps one address from
filling it (the same class bounds authorization requests, each of which starts a flow
record) (MCP security best practices; OAuth 2.1 § 7). Kept in this process: each
node of a cluster counts on its own. Behind a reverse proxy the address is the one the
ASGI server reports, so let it read the forwarding headers (uvicorn ``--proxy-headers``
with ``--forwarded-allow-ips``), or every client shares the proxy's address.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from typing import Final

__all__ = ["RegistrationLimiter"]

_MAX_ADDRESSES: Final = 10_000


class RegistrationLimiter:
    """At most ``limit`` registrations per ``window`` seconds for each address."""

    def __init__(self, *, limit: int = 20, window: float = 3600.0) -> None:
        self.limit = limit
        self.window = window
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, address: str, *, now: float | None = None) -> float | None:
        """None when ``address`` may register now (and counts it), else the seconds to wait."""
        now = time.monotonic() if now is None else now
        times = self._seen.pop(address, None) or deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        self._seen[address] = times  # most recently seen last
        while len(self._seen) > _MAX_ADDRESSES:  # bounded: the oldest address goes first
            self._seen.popitem(last=False)
        if len(times) >= self.limit:
            return max(times[0] + self.window - now, 1.0)
        times.append(now)
        return None
