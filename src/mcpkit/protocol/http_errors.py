"""The HTTP status and headers of a JSON-RPC error answered over HTTP, without I/O.

Most JSON-RPC errors ride an HTTP 200, as the Streamable HTTP transport has always
answered them. A few say something HTTP has its own words for, and intermediaries
(load balancers, API gateways, client retry layers) act on the status and headers,
not on the body. :data:`ERROR_STATUS` maps those codes to their status, and
:func:`error_answer` gives the status and headers for a response; the transports
ask it wherever the status of a response is not yet sent (every 2026-07-28 POST
answered with JSON, and handshake-era POSTs answered with JSON; an SSE response has
sent its 200 before the handler ran, so its error stays in the body).

:data:`TOO_MANY_REQUESTS` (-31429) is a refused request over a rate limit: HTTP 429
(RFC 6585 §4), with ``Retry-After`` (RFC 9110 §10.2.3, whole seconds, rounded up)
taken from the error's ``data.retryAfter`` when it has one. The code is mcpkit's
own, outside JSON-RPC's reserved -32768 .. -32000 (2026-07-28 basic § error codes:
new codes SHOULD be allocated outside it), the same the client uses to refuse a
flood of server requests (:mod:`mcpkit.client.handlers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ERROR_STATUS", "TOO_MANY_REQUESTS", "error_answer"]

TOO_MANY_REQUESTS: Final = -31429

#: JSON-RPC error code → the HTTP status of its answer (any other code: 200).
ERROR_STATUS: Final[Mapping[int, int]] = {TOO_MANY_REQUESTS: 429}

_NO_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = ()


def error_answer(
    response: Mapping[str, Any], default: int = 200
) -> tuple[int, tuple[tuple[bytes, bytes], ...]]:
    """``(status, headers)`` for a JSON-RPC ``response`` sent as an HTTP body: ``default``
    and no headers unless its error's code is in :data:`ERROR_STATUS`."""
    error = response.get("error")
    if type(error) is not dict:
        return default, _NO_HEADERS
    code = error.get("code")
    status = ERROR_STATUS.get(code) if type(code) is int else None
    if status is None:
        return default, _NO_HEADERS
    data = error.get("data")
    after = data.get("retryAfter") if type(data) is dict else None
    if isinstance(after, int | float) and not isinstance(after, bool) and 0 <= after < math.inf:
        return status, ((b"retry-after", str(math.ceil(after)).encode()),)
    return status, _NO_HEADERS
