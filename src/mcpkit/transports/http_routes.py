"""Extra HTTP routes beside the MCP endpoint: ``server.custom_route`` and the health probes.

The HTTP apps (Streamable HTTP and legacy SSE) match their own paths first; only a
request for another path reaches the :class:`RouteTable` here, so the MCP endpoint's
hot path pays nothing for it (the one path compare it always did). Routes are exact
paths relative to where the app is mounted, with no framework: a handler gets a small
:class:`HTTPRequest` and returns an :class:`HTTPResponse` (or a dict/list, sent as
JSON, or a str, sent as text).

Built in, unless ``health=False`` (or renamed with :class:`HealthOptions`):

* ``/healthz``: the process is up and serving: 200 ``{"status": "ok"}`` always;
* ``/readyz``: 200 once the ASGI lifespan has finished starting and the server's store
  answers (``connect()``, a PING for ``RedisStore``, under a short timeout); 503 with
  a JSON body naming what is not ready otherwise, and from the moment the server
  starts draining (a signal, ``serve()``'s drain) or shutting down.

Both skip the auth layer (Kubernetes probes carry no bearer token) and the Host/Origin
checks (a kubelet probes ``http://<pod IP>:<port>`` with that as the Host, which an
``allowed_hosts`` list of public names would refuse). That opens nothing to DNS
rebinding: they answer GET/HEAD only, change nothing and reveal no more than "up" or
"ready" (the store's address stays in the log). Custom routes keep the Host/Origin
checks and sit behind the auth layer unless declared ``public=True``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl

import orjson

from ..errors import INVALID_REQUEST, BodyTooLarge, ConfigurationError
from .asgi import LifespanState, Receive, Scope, Send, send_body, send_error

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from .security import RequestGuard

__all__ = [
    "HTTPRequest",
    "HTTPResponse",
    "HealthOptions",
    "Route",
    "RouteHandler",
    "RouteTable",
    "check_route",
]

log = logging.getLogger("mcpkit.transports.http")

_TEXT: Final = (b"content-type", b"text/plain")


class HTTPRequest:
    """A request to a custom route: ``method``, ``path`` (relative to the mount),
    ``headers`` (lower-case names), ``query`` (last value per name), ``await body()``
    and ``await json()``. The body is read on demand, at most ``max_body_size`` bytes
    (the app's; a larger one is answered 413)."""

    __slots__ = ("_body", "_limit", "_receive", "headers", "method", "path", "query", "scope")

    def __init__(self, scope: Scope, receive: Receive, path: str, limit: int) -> None:
        self.scope = scope
        self.method: str = scope["method"]
        self.path = path
        self.headers: dict[str, str] = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
        }
        self.query: dict[str, str] = dict(
            parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        )
        self._receive = receive
        self._limit = limit
        self._body: bytes | None = None

    async def body(self) -> bytes:
        if self._body is None:
            parts: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    break
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > self._limit:
                    raise BodyTooLarge(f"request body exceeds {self._limit} bytes")
                parts.append(chunk)
                more = message.get("more_body", False)
            self._body = b"".join(parts)
        return self._body

    async def json(self) -> Any:
        """The body as JSON; a body that is not JSON answers 400 unless the handler
        catches the ``ValueError``."""
        return orjson.loads(await self.body())  # orjson.JSONDecodeError is a ValueError


@dataclass(frozen=True, slots=True)
class HTTPResponse:
    """What a custom route answers: ``status``, ``body`` and extra ``headers``
    (``content-length`` is added). :meth:`json` and :meth:`text` set the content type."""

    status: int = 200
    body: bytes = b""
    headers: Sequence[tuple[str, str]] = ()

    @classmethod
    def json(
        cls, data: Any, status: int = 200, headers: Sequence[tuple[str, str]] = ()
    ) -> HTTPResponse:
        return cls(status, orjson.dumps(data), (("content-type", "application/json"), *headers))

    @classmethod
    def text(
        cls, text: str, status: int = 200, headers: Sequence[tuple[str, str]] = ()
    ) -> HTTPResponse:
        return cls(status, text.encode(), (("content-type", "text/plain; charset=utf-8"), *headers))


RouteHandler = Callable[[HTTPRequest], Awaitable["HTTPResponse | dict[str, Any] | list[Any] | str"]]


@dataclass(frozen=True, slots=True)
class Route:
    """One extra route: the methods it answers (HEAD with GET), its handler, and whether
    it skips the auth layer (``public``) and the Host/Origin checks (``probe``)."""

    path: str
    methods: frozenset[str]
    handler: RouteHandler
    public: bool = False
    probe: bool = False


def check_route(path: object, methods: Iterable[str]) -> frozenset[str]:
    """Validate a custom route's path and methods; the methods it answers, upper case."""
    if type(path) is not str or not path.startswith("/"):
        raise ConfigurationError(f"a custom route's path must start with '/': {path!r}")
    if isinstance(methods, str):
        methods = (methods,)
    upper = frozenset(m.upper() for m in methods if type(m) is str and m)
    if not upper:
        raise ConfigurationError(f"custom route {path!r}: methods must name at least one method")
    return upper | {"HEAD"} if "GET" in upper else upper


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthOptions:
    """The built-in probes: ``healthz`` and ``readyz`` paths (None turns that one off) and
    ``store_timeout``, the seconds ``/readyz`` waits for the store to answer."""

    healthz: str | None = "/healthz"
    readyz: str | None = "/readyz"
    store_timeout: float = 1.0

    def __post_init__(self) -> None:
        for name in ("healthz", "readyz"):
            value = getattr(self, name)
            if value is not None and (type(value) is not str or not value.startswith("/")):
                raise ConfigurationError(f"HealthOptions.{name} must start with '/': {value!r}")
        if self.healthz is not None and self.healthz == self.readyz:
            raise ConfigurationError("HealthOptions.healthz and readyz must differ")
        if not self.store_timeout > 0:
            raise ConfigurationError(
                f"HealthOptions.store_timeout must be > 0: {self.store_timeout}"
            )


class RouteTable:
    """The routes of one HTTP app besides its MCP paths (``reserved``).

    Built with the app: the server's custom routes as declared by then, and the probes.
    """

    __slots__ = ("guard", "max_body_size", "public_paths", "routes", "server", "state", "timeout")

    def __init__(
        self,
        server: MCPServer,
        guard: RequestGuard,
        *,
        reserved: Iterable[str],
        health: HealthOptions | bool | None,
        max_body_size: int,
    ) -> None:
        self.server = server
        self.guard = guard
        self.max_body_size = max_body_size
        self.state = LifespanState()
        routes: dict[str, Route] = dict(server.custom_routes())
        if health is None or health is True:
            health = HealthOptions()
        elif health is not False and not isinstance(health, HealthOptions):
            raise ConfigurationError(
                f"health must be a HealthOptions, True or False, not {type(health).__name__}"
            )
        self.timeout = health.store_timeout if health else 1.0
        if health:
            probes = ((health.healthz, self._healthz), (health.readyz, self._readyz))
            for path, handler in probes:
                if path is None:
                    continue
                if path in routes:
                    raise ConfigurationError(
                        f"custom route {path!r} shadows the built-in probe there: "
                        "rename the probe (health=HealthOptions(...)) or the route"
                    )
                routes[path] = Route(path, frozenset({"GET", "HEAD"}), handler, True, True)
        for path in reserved:
            if path in routes:
                raise ConfigurationError(
                    f"route {path!r} would shadow the MCP endpoint: choose another path"
                )
        self.routes = routes
        self.public_paths = frozenset(p for p, r in routes.items() if r.public)

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self.routes)

    async def serve(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request for ``path`` (not an MCP path): its route, else 404/405."""
        route = self.routes.get(path)
        if route is None:
            await send_body(send, 404, b"Not Found", content_type=_TEXT)
            return
        method: str = scope["method"]
        if method not in route.methods:
            allow = ", ".join(sorted(route.methods)).encode()
            await send_body(
                send, 405, b"Method Not Allowed", [(b"allow", allow)], content_type=_TEXT
            )
            return
        if not route.probe:
            verdict = self.guard.admit(scope, dict(scope["headers"]))
            if verdict is not None:
                await send_error(send, verdict[0], INVALID_REQUEST, verdict[1])
                return
        try:
            result = await route.handler(HTTPRequest(scope, receive, path, self.max_body_size))
            status, headers, body = _encode(result)
        except BodyTooLarge:
            await send_body(send, 413, b"Payload Too Large", content_type=_TEXT)
            return
        except orjson.JSONDecodeError:  # from HTTPRequest.json(), uncaught
            await send_body(send, 400, b"Bad Request: the body is not JSON", content_type=_TEXT)
            return
        except Exception:  # a failing handler must not take the server down nor leak
            log.exception("custom route %s %s failed", method, path)
            await send_body(send, 500, b"Internal Server Error", content_type=_TEXT)
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})

    # -- the probes ------------------------------------------------------------------------------
    async def _healthz(self, request: HTTPRequest) -> HTTPResponse:
        return _OK

    async def _readyz(self, request: HTTPRequest) -> HTTPResponse:
        state = self.state
        checks: dict[str, str] = {}
        if state.stopping:
            checks["lifespan"] = "stopping"
        elif not state.started:
            checks["lifespan"] = "starting"
        connect = getattr(self.server.store, "connect", None)
        if connect is not None and not state.stopping:
            try:
                await asyncio.wait_for(connect(), self.timeout)
            except TimeoutError:
                log.warning("readyz: the store did not answer within %ss", self.timeout)
                checks["store"] = "unreachable"
            except Exception as exc:  # StoreUnavailable names the URL: log it, do not answer it
                log.warning("readyz: %s", exc)
                checks["store"] = "unreachable"
        if not checks:
            return _READY
        return HTTPResponse.json({"status": "not ready", "checks": checks}, 503)


_OK: Final = HTTPResponse.json({"status": "ok"})
_READY: Final = HTTPResponse.json({"status": "ready"})


def _encode(result: object) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A handler's result as (status, raw headers, body)."""
    if isinstance(result, HTTPResponse):
        response = result
    elif type(result) is str:
        response = HTTPResponse.text(result)
    elif isinstance(result, (Mapping, list)):
        response = HTTPResponse.json(result)
    else:
        raise TypeError(
            f"a custom route must return an HTTPResponse, dict, list or str, "
            f"not {type(result).__name__}"
        )
    headers = [(b"content-length", str(len(response.body)).encode())]
    headers.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers)
    return response.status, headers, response.body
