"""``ServerLimits``: how much a server lists per page, waits, takes in a batch and queues.

The bounds of one :class:`~mcpkit.server.server.MCPServer`, grouped in one value
object (``MCPServer(limits=ServerLimits(page_size=50))``) so the server's own
options stay few. Each is checked when the object is made, so a wrong value
fails where it is written, not at the first request.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError
from .session import DEFAULT_MAX_BATCH_SIZE
from .stateless.listen import DEFAULT_LISTEN_QUEUE_BYTES

__all__ = ["ServerLimits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """The bounds of a server; every field has a default.

    ``page_size``
        items per page of a list result, with opaque cursors (default ``None``: one page).
    ``request_timeout``
        seconds to wait for the client's answer to a server-to-client request
        (``ctx.sample``, ``ctx.elicit``, ...), and how long an input-required
        round of the stateless era stays resumable (default 60).
    ``max_batch_size``
        messages in one JSON-RPC batch (2025-03-26); more get one ``-32600`` error
        (default 1000).
    ``listen_queue_bytes``
        bytes of notifications one ``subscriptions/listen`` stream may have waiting
        before the listener is dropped (default 1 MiB).
    """

    page_size: int | None = None
    request_timeout: float = 60.0
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    listen_queue_bytes: int = DEFAULT_LISTEN_QUEUE_BYTES

    def __post_init__(self) -> None:
        if self.page_size is not None and self.page_size < 1:
            raise ConfigurationError("page_size must be a positive integer or None")
        size = self.max_batch_size
        if isinstance(size, bool) or not isinstance(size, int):
            raise ConfigurationError(f"max_batch_size must be an integer, not {size!r}")
        if size < 1:
            raise ConfigurationError(f"max_batch_size must be at least 1, not {size}")
        if self.listen_queue_bytes < 1:
            raise ConfigurationError(
                "listen_queue_bytes must be a positive number of bytes, "
                f"not {self.listen_queue_bytes}"
            )
