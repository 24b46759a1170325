"""The connection the Redis stores and the cluster bus share (internal to mcpkit.stores).

:class:`RedisConnection` is one client plus how to name its server in errors
(the URL with its password hidden), the hot path's lane to the same server
(:func:`lane_for`, :mod:`.redis_lane`) and a second pool, made on first use, for
blocking reads; :func:`sibling_pool` opens more connections to the same server
with the same credentials (the bus's pub/sub connection, the blocking reads).
Together with :mod:`mcpkit.stores.redis` and :mod:`mcpkit.stores.redis_bus`
the only modules that import ``redis``.
"""

from __future__ import annotations

import ssl
from typing import Any, Final, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._extras import require_extra

with require_extra(
    "redis", feature="the Redis store's connections (mcpkit.stores.redis_connection)"
):
    from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
    from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError, ResponseError

from ..errors import StoreUnavailable
from .redis_lane import LaneAddress, RedisLane

__all__ = [
    "FAILURES",
    "RedisConnection",
    "lane_for",
    "ms",
    "redact_url",
    "sibling_pool",
    "text",
    "where_of",
    "wrong_type",
]

#: What a failed Redis operation raises (redis-py's errors, and the socket's).
FAILURES: Final = (RedisError, OSError)


def wrong_type(exc: BaseException) -> bool:
    """Redis refused a command for the type of the key's value (``WRONGTYPE``): the key
    holds something mcpkit did not write there; the server itself is fine."""
    return isinstance(exc, ResponseError) and str(exc).startswith("WRONGTYPE")


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


_VERIFY: Final = {
    "none": ssl.CERT_NONE,
    "optional": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


def _ssl_context(kwargs: dict[str, Any]) -> ssl.SSLContext:
    """A client TLS context from the ``ssl_*`` settings of a ``rediss://`` pool."""
    context = ssl.create_default_context(
        cafile=kwargs.get("ssl_ca_certs"),
        capath=kwargs.get("ssl_ca_path"),
        cadata=kwargs.get("ssl_ca_data"),
    )
    reqs = kwargs.get("ssl_cert_reqs", "required")
    verify = _VERIFY[reqs.lower()] if isinstance(reqs, str) else ssl.VerifyMode(reqs)
    context.check_hostname = bool(kwargs.get("ssl_check_hostname", True)) and (
        verify != ssl.CERT_NONE
    )
    context.verify_mode = verify
    if kwargs.get("ssl_certfile"):
        context.load_cert_chain(
            kwargs["ssl_certfile"], kwargs.get("ssl_keyfile"), kwargs.get("ssl_password")
        )
    if kwargs.get("ssl_min_version") is not None:
        context.minimum_version = kwargs["ssl_min_version"]
    if kwargs.get("ssl_ciphers"):
        context.set_ciphers(kwargs["ssl_ciphers"])
    return context


def lane_for(
    client: Redis, where: str, *, connect_timeout: float, timeout: float
) -> RedisLane | None:
    """The hot-path lane (:mod:`.redis_lane`) to ``client``'s server, with its address,
    db, credentials and TLS settings; None when the lane cannot open it as redis-py
    would (a Sentinel or cluster connection class, a credential provider, settings
    it does not know): the store then sends everything through ``client``."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or pool.connection_class not in (
        Connection,
        SSLConnection,
        UnixDomainSocketConnection,
    ):
        return None
    kwargs = pool.connection_kwargs
    if kwargs.get("credential_provider") is not None:
        return None
    db = kwargs.get("db") or 0
    password = kwargs.get("password")
    username = kwargs.get("username")
    try:
        if pool.connection_class is UnixDomainSocketConnection:
            address = LaneAddress(
                path=kwargs["path"], db=int(db), username=username, password=password
            )
        else:
            context = _ssl_context(kwargs) if pool.connection_class is SSLConnection else None
            address = LaneAddress(
                host=kwargs.get("host") or "localhost",
                port=int(kwargs.get("port") or 6379),
                db=int(db),
                username=username,
                password=password,
                ssl=context,
            )
    except (KeyError, ValueError, TypeError, OSError):
        return None  # what redis-py would make of it is its own business
    return RedisLane(address, where, connect_timeout=connect_timeout, timeout=timeout)


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def ms(seconds: float) -> int:
    """A ttl in whole milliseconds, at least 1 (Redis refuses 0)."""
    return max(1, int(seconds * 1000))


class RedisConnection:
    """The client and how to name it in errors, shared by the three stores; and the
    pool of connections for blocking reads (``XREAD BLOCK``), made on first use so
    that they never hold the shared pool's connections."""

    __slots__ = ("_blocking", "client", "lane", "timeout", "where")

    def __init__(
        self, client: Redis, where: str, timeout: float = 2.0, connect_timeout: float = 2.0
    ) -> None:
        self.client = client
        self.where = where
        self.timeout = timeout
        self._blocking: Redis | None = None
        #: The hot path's own connection (store_event's XADD), None when it cannot be opened.
        self.lane = lane_for(client, where, connect_timeout=connect_timeout, timeout=timeout)

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
        if self.lane is not None:
            await self.lane.aclose()
        blocking, self._blocking = self._blocking, None
        if blocking is not None:
            await blocking.aclose()
            await blocking.connection_pool.disconnect()

    def fail(self, exc: BaseException) -> NoReturn:
        raise StoreUnavailable(
            f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
        ) from exc
