"""The connection the Redis stores and the cluster bus share (internal to mcpkit.stores).

:class:`RedisConnection` is one client plus how to name its server in errors
(the URL with its password hidden) and a second pool, made on first use, for
blocking reads; :func:`sibling_pool` opens more connections to the same server
with the same credentials (the bus's pub/sub connection, the blocking reads).
Together with :mod:`mcpkit.stores.redis` and :mod:`mcpkit.stores.redis_bus`
the only modules that import ``redis``.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ..errors import StoreUnavailable

__all__ = ["FAILURES", "RedisConnection", "ms", "redact_url", "sibling_pool", "text", "where_of"]

#: What a failed Redis operation raises (redis-py's errors, and the socket's).
FAILURES: Final = (RedisError, OSError)


def redact_url(url: str) -> str:
    """``url`` with its password (in the authority or a ``password=`` parameter) hidden."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user = parts.username or ""
            host = netloc.rpartition("@")[2]
            netloc = f"{user}:***@{host}"
        query = parts.query
        if "password=" in query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<a malformed Redis URL>"


def where_of(client: Redis) -> str:
    """How to name a client's server in errors: ``redis://host:port/db`` (no password)."""
    kwargs = client.connection_pool.connection_kwargs
    where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
    return f"redis://{where}/{kwargs.get('db', 0)}"


def sibling_pool(
    client: Redis, *, max_connections: int, wait: float | None = None, **overrides: Any
) -> ConnectionPool:
    """A new pool to the same server as ``client``'s, with its address, credentials and
    TLS settings, some of them overridden (e.g. ``socket_timeout``). ``wait``: a
    blocking pool, where taking a connection waits that long for a free one."""
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, **overrides}
    if wait is not None:
        return BlockingConnectionPool(
            max_connections=max_connections,
            timeout=wait,
            connection_class=pool.connection_class,
            **kwargs,
        )
    return ConnectionPool(
        connection_class=pool.connection_class, max_connections=max_connections, **kwargs
    )


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def ms(seconds: float) -> int:
    """A ttl in whole milliseconds, at least 1 (Redis refuses 0)."""
    return max(1, int(seconds * 1000))


class RedisConnection:
    """The client and how to name it in errors, shared by the three stores; and the
    pool of connections for blocking reads (``XREAD BLOCK``), made on first use so
    that they never hold the shared pool's connections."""

    __slots__ = ("_blocking", "client", "timeout", "where")

    def __init__(self, client: Redis, where: str, timeout: float = 2.0) -> None:
        self.client = client
        self.where = where
        self.timeout = timeout
        self._blocking: Redis | None = None

    def blocking(self) -> Redis:
        if self._blocking is None:
            # No socket timeout: a read blocks as long as its BLOCK argument says; the
            # caller bounds the whole command (asyncio.timeout), and a connection whose
            # read is cancelled is closed by redis-py, never reused half-read.
            pool = sibling_pool(
                self.client,
                max_connections=64,
                wait=self.timeout,
                socket_timeout=None,
                decode_responses=False,  # entries' fields are read as bytes
                retry=Retry(NoBackoff(), 1),
            )
            self._blocking = Redis(connection_pool=pool)
        return self._blocking

    async def aclose(self) -> None:
        blocking, self._blocking = self._blocking, None
        if blocking is not None:
            await blocking.aclose()
            await blocking.connection_pool.disconnect()

    def fail(self, exc: BaseException) -> NoReturn:
        raise StoreUnavailable(
            f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
        ) from exc
