"""``mcpkit run FILE[:OBJECT]``: load a server and serve it (stdio by default)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..transports.asgi import ASGIApp

__all__ = ["HELP", "add_serving_options", "configure", "run"]

HELP = "serve an MCP server from a Python file or module"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_PATH = "/mcp"
DEFAULT_RETRY_MS = 1000
REDIS_URL_ENV = "MCPKIT_REDIS_URL"
REDIS_PREFIX_ENV = "MCPKIT_REDIS_PREFIX"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module (pkg.module) and the server object in it "
        "(default: 'server'); a function that returns a server also works",
    )
    add_serving_options(parser)


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """How to serve (transport, address, workers, limits): every option of ``run`` but the
    target; other commands that serve a server (``mcpkit proxy``) take them too."""
    parser.add_argument(
        "--transport",
        "-t",
        choices=("stdio", "http", "sse"),
        help="stdio (default), http (Streamable HTTP) or sse (legacy HTTP+SSE, 2024-11-05)",
    )
    parser.add_argument(
        "--host",
        help=f"address to listen on (http, sse; default {DEFAULT_HOST}); any other than "
        "a loopback address needs --allowed-host",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"port to listen on, 0 for any free one (http, sse; default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help="a Host name clients use to reach the server (repeatable): 'name' (default port), "
        "'name:8080', 'name:*' (any port), '*.example.com' (subdomains), or '*' to turn "
        "DNS-rebinding protection off (http, sse; default: localhost names only)",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help="a browser Origin allowed to call the server (repeatable): 'https://app.example.com', "
        "'https://app.example.com:*', or '*' for any (http, sse; default: same origin, "
        "or localhost origins on a loopback address)",
    )
    parser.add_argument("--path", help=f"the MCP endpoint's path (http; default {DEFAULT_PATH})")
    parser.add_argument(
        "--env-file",
        metavar="PATH",
        help="read MCPKIT_* settings (and the server's variables) from this file "
        "(default: .env in the current directory, if any); the environment wins over it",
    )
    parser.add_argument("--no-env-file", action="store_true", help="read no .env file")
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions: every request stands alone (http)",
    )
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="answer POSTs with plain JSON instead of an SSE stream (http)",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="keep SSE events in a bounded in-memory event store so clients can resume "
        "cut streams with Last-Event-ID, and ask them to reconnect after --retry-ms (http)",
    )
    parser.add_argument(
        "--retry-ms",
        type=int,
        help=f"SSE reconnection delay sent to clients with --resumable or --redis "
        f"(default {DEFAULT_RETRY_MS})",
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="restart the server when a .py file beside it changes; a change that does not "
        "load keeps the last good server (http, sse; needs pip install 'mcpkit[devtools]')",
    )
    parser.add_argument(
        "--reload-dir", action="append", metavar="DIR", help="with --reload: watch DIR too"
    )
    scale = parser.add_argument_group("several processes (http, sse)")
    scale.add_argument(
        "--redis",
        metavar="URL",
        help=f"keep sessions, resumable event streams and input rounds in Redis "
        f"(redis://[:password@]host:port/db; env {REDIS_URL_ENV}); implies --resumable. "
        "Needs pip install 'mcpkit[redis]'",
    )
    scale.add_argument(
        "--redis-prefix",
        metavar="P",
        help=f"put before every Redis key, so servers can share a Redis (env "
        f"{REDIS_PREFIX_ENV}; default 'mcpkit:')",
    )
    scale.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="serve from N processes sharing the port (default 1); more than one needs "
        "--redis (or a shared store=) or --stateless",
    )
    scale.add_argument(
        "--max-requests",
        type=int,
        metavar="N",
        help="replace a worker after it served N HTTP requests; it finishes them first "
        "(default: never); like --workers, needs --redis or --stateless",
    )
    scale.add_argument(
        "--max-requests-jitter",
        type=int,
        metavar="N",
        help="add a random 0..N to --max-requests per worker, so they are not all "
        "replaced at once (default 0)",
    )
    scale.add_argument(
        "--max-memory",
        type=float,
        metavar="MB",
        help="replace a worker once its resident memory passes MB megabytes (checked "
        "every second); it finishes its requests first (default: no limit)",
    )
    limits = parser.add_argument_group("limits of the embedded server (http, sse)")
    for flag, kind, text in _LIMIT_FLAGS:
        limits.add_argument(flag, type=kind, metavar="N", help=text)
    limits.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        help="event loop (default auto: uvloop if installed)",
    )
    limits.add_argument(
        "--http",
        choices=("auto", "h11", "httptools"),
        help="HTTP parser (default auto: httptools if installed)",
    )


# (flag, type, help); the option is named like the flag, in serve() or the app.
_LIMIT_FLAGS: tuple[tuple[str, type, str], ...] = (
    (
        "--header-timeout",
        float,
        "seconds for a request head to arrive, else 408 and close (default 10)",
    ),
    ("--body-timeout", float, "seconds for a request body to arrive, else 408 (default 30)"),
    ("--max-connections", int, "open connections at most; one more gets 503 (default 1000)"),
    ("--timeout-keep-alive", int, "seconds an idle keep-alive connection stays open (default 5)"),
    ("--limit-concurrency", int, "uvicorn: requests in progress at most before 503 (default none)"),
    ("--backlog", int, "connections waiting to be accepted at most (default 2048)"),
    (
        "--graceful-timeout",
        float,
        "seconds requests still running on SIGTERM get to finish; then each is answered "
        "with a JSON-RPC 'server is shutting down' error (default 5)",
    ),
)
_SERVE_FLAGS = (
    "graceful_timeout",
    "header_timeout",
    "max_connections",
    "timeout_keep_alive",
    "limit_concurrency",
    "backlog",
    "loop",
    "http",
)


def _serve_options(args: argparse.Namespace) -> dict[str, Any]:
    names = [flag[2:].replace("-", "_") for flag, _, _ in _LIMIT_FLAGS] + ["loop", "http"]
    return {
        name: getattr(args, name)
        for name in names
        if name in _SERVE_FLAGS and getattr(args, name) is not None
    }


def _misplaced_options(args: argparse.Namespace) -> list[str]:
    limits = {
        flag: getattr(args, flag[2:].replace("-", "_")) is not None for flag, _, _ in _LIMIT_FLAGS
    }
    limits.update({"--loop": args.loop is not None, "--http": args.http is not None})
    given = {
        **limits,
        "--host": args.host is not None,
        "--port": args.port is not None,
        "--allowed-host": args.allowed_host is not None,
        "--allowed-origin": args.allowed_origin is not None,
        "--path": args.path is not None,
        "--stateless": args.stateless,
        "--json-response": args.json_response,
        "--resumable": args.resumable,
        "--retry-ms": args.retry_ms is not None,
        "--redis": args.redis is not None,
        "--redis-prefix": args.redis_prefix is not None,
        "--workers": args.workers is not None,
        "--max-requests": args.max_requests is not None,
        "--max-requests-jitter": args.max_requests_jitter is not None,
        "--max-memory": args.max_memory is not None,
        "--reload": args.reload,
        "--reload-dir": args.reload_dir is not None,
    }
    scale = {
        "--redis",
        "--redis-prefix",
        "--workers",
        "--max-requests",
        "--max-requests-jitter",
        "--max-memory",
    }
    applies = {
        "stdio": set(),
        "sse": {"--host", "--port", "--allowed-host", "--allowed-origin", *limits, *scale}
        | {"--reload", "--reload-dir"},
        "http": set(given),
    }[args.transport]
    return [name for name, on in given.items() if on and name not in applies]


def _fail(message: str, status: int = 2) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def _listen_problem(args: argparse.Namespace, host: str, port: int) -> str | None:
    """What is wrong with where the server would listen, checked before anything starts."""
    from ..errors import ConfigurationError
    from ..transports.security import RequestGuard, is_loopback_bind

    if not 0 <= port <= 65535:
        return f"--port {port} is not a port number: use 0 to 65535 (0 picks a free port)"
    for flag, _, _ in _LIMIT_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and value <= 0:
            return f"{flag} must be positive, got {value}"
    try:
        RequestGuard(allowed_hosts=args.allowed_host, allowed_origins=args.allowed_origin)
    except ConfigurationError as exc:
        return (
            str(exc)
            .replace("allowed host ", "--allowed-host ")
            .replace("allowed origin ", "--allowed-origin ")
        )
    if args.allowed_host is None and not is_loopback_bind(host):
        return (
            f"--host {host} makes the server reachable from other machines, so DNS-rebinding "
            "protection needs the host names clients use: add --allowed-host NAME for each "
            "(NAME:PORT or NAME:* for ports, *.example.com for subdomains), or "
            "--allowed-host '*' to turn the Host check off deliberately"
        )
    return None


@dataclass(frozen=True)
class _AppSpec:
    """How to build the app from a loaded server: picklable, for the workers (``spawn``)."""

    transport: str
    path: str
    stateless: bool
    json_response: bool
    resumable: bool
    retry_ms: int | None
    body_timeout: float | None
    allowed_hosts: list[str] | None
    allowed_origins: list[str] | None
    redis_url: str | None
    redis_prefix: str | None


def _redis_settings(args: argparse.Namespace) -> tuple[str | None, str | None, str | None]:
    """The Redis URL and prefix (flags first, then the environment), or a usage problem."""
    url = args.redis if args.redis is not None else os.environ.get(REDIS_URL_ENV) or None
    prefix = args.redis_prefix
    if prefix is None and url is not None:
        prefix = os.environ.get(REDIS_PREFIX_ENV) or None
    if url is None:
        if args.redis_prefix is not None:
            return None, None, f"--redis-prefix needs --redis URL (or {REDIS_URL_ENV})"
        return None, None, None
    if args.transport == "stdio":  # only the environment can get here (see _misplaced_options)
        return (
            None,
            None,
            (
                f"{REDIS_URL_ENV} is set, but --transport stdio serves one client from one process "
                f"and keeps no shared state: unset it, or use --transport http"
            ),
        )
    from .._extras import require_extra
    from ..errors import MissingExtra

    try:
        with require_extra("redis", feature="--redis"):
            import redis  # noqa: F401 (only checking that the extra is installed)
    except MissingExtra as exc:
        return None, None, str(exc)
    return url, prefix, None


def run(args: argparse.Namespace) -> int:
    from .settings import SettingError, apply_run_settings

    try:  # MCPKIT_* variables and the .env file fill in what the command line left out
        taken = apply_run_settings(args, os.environ)
    except SettingError as exc:
        return _fail(str(exc))
    return _run(args, taken)


def _fail_naming(taken: dict[str, str], message: str, status: int = 2) -> int:
    from .settings import name_variables

    return _fail(name_variables(message, taken), status)


def _run(args: argparse.Namespace, taken: dict[str, str]) -> int:
    fail = functools.partial(_fail_naming, taken)
    misplaced = _misplaced_options(args)
    if misplaced:
        return fail(f"{', '.join(misplaced)} cannot be used with --transport {args.transport}")
    redis_url, redis_prefix, problem = _redis_settings(args)
    if problem is not None:
        return fail(problem)
    if args.retry_ms is not None and not args.resumable and redis_url is None:
        return fail("--retry-ms needs --resumable (or --redis)")
    workers = 1 if args.workers is None else args.workers
    if workers < 1:
        return fail(f"--workers must be a positive integer, got {workers}")
    problem = _recycling_problem(args)
    if problem is not None:
        return fail(problem)
    recycle = args.max_requests is not None or args.max_memory is not None
    problem = _reload_problem(args, workers, recycle)
    if problem is not None:
        return fail(problem)
    host = args.host or DEFAULT_HOST
    port = DEFAULT_PORT if args.port is None else args.port
    if args.transport != "stdio":
        problem = _listen_problem(args, host, port)
        if problem is not None:
            return fail(problem)
    server = _load(args.target, quiet_stdout=args.transport == "stdio")
    if isinstance(server, int):
        return server
    from .settings import SettingError, apply_server_settings

    try:  # MCPKIT_REQUEST_TIMEOUT...: where the code kept the library's default
        apply_server_settings(server, os.environ)
    except SettingError as exc:
        return fail(str(exc))
    if args.transport == "stdio":
        from ..server.lifespan import LifespanError

        if _on_a_terminal():  # a person ran it: silence would look like a hang
            print(_STDIO_WAITING.format(name=server.name), file=sys.stderr, flush=True)
        try:
            server.run_stdio()
        except LifespanError as exc:  # names the server and the cause: no traceback
            return fail(str(exc))
        return 0
    from ..errors import ConfigurationError, LifespanError, StoreUnavailable

    spec = _AppSpec(
        transport=args.transport,
        path=args.path or DEFAULT_PATH,
        stateless=args.stateless,
        json_response=args.json_response,
        resumable=args.resumable,
        retry_ms=args.retry_ms,
        body_timeout=args.body_timeout,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
    )
    if redis_url is not None:
        if server.store is not None:
            return fail("the server already has a store; drop --redis or the store= argument")
        try:
            _use_redis(server, spec)
        except ConfigurationError as exc:  # a malformed URL, an input-round store of its own
            return fail(f"--redis: {exc}")
    if (workers > 1 or recycle) and not (getattr(server.store, "shared", False) or args.stateless):
        return fail(_NEEDS_SHARED_STATE if workers > 1 else _RECYCLING_NEEDS_SHARED_STATE)
    serve_options: Any = _serve_options(args)
    if recycle:
        serve_options.update(
            max_requests=args.max_requests,
            max_requests_jitter=args.max_requests_jitter or 0,
            max_memory=args.max_memory,
        )
    try:
        if args.reload:
            from .reload import serve_reloading, watch_roots

            serve_reloading(
                functools.partial(_worker_app, args.target, spec),
                host=host,
                port=port,
                banner=_banner(server, spec),
                watch=watch_roots(args.target, args.reload_dir or ()),
                on_serving=getattr(args, "on_serving", None),  # set by `mcpkit dev`
                **serve_options,
            )
        elif workers == 1 and not recycle:
            from ..transports.serve import serve

            app = _make_app(server, spec)
            serve(app, host=host, port=port, banner=_banner(server, spec), **serve_options)
        else:
            from ..transports.workers import serve_workers

            serve_workers(
                functools.partial(_worker_app, args.target, spec),
                workers,
                host=host,
                port=port,
                banner=_banner(server, spec),
                **serve_options,
            )
    except StoreUnavailable as exc:  # Redis unreachable at start: the message names it
        return fail(str(exc), status=1)
    except (ConfigurationError, LifespanError) as exc:  # port in use, uvicorn missing...
        return fail(str(exc), status=1)
    return 0


_STDIO_WAITING = (
    "mcpkit: serving {name!r} over stdio: waiting for an MCP client on stdin. A client "
    "(Claude Desktop, Cursor...) starts this command itself; to try the server by hand, "
    "use mcpkit dev FILE or -t http. Ctrl+C stops it"
)


def _on_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # a closed stdin
        return False


_NEEDS_SHARED_STATE = (
    "several workers need shared state: give --redis URL, or --stateless (without Redis, "
    "2026-07-28 input rounds then need the same request_state_keys in every worker, and a "
    "replayed requestState is only caught by the worker that saw it first)"
)


_RECYCLING_NEEDS_SHARED_STATE = (
    "--max-requests and --max-memory replace worker processes, so sessions must outlive "
    "them: give --redis URL, or --stateless"
)


def _reload_problem(args: argparse.Namespace, workers: int, recycle: bool) -> str | None:
    if args.reload_dir is not None and not args.reload:
        return "--reload-dir needs --reload"
    if not args.reload:
        return None
    if workers > 1 or recycle:
        return "--reload runs one server process: drop --workers, --max-requests and --max-memory"
    from ..errors import MissingExtra
    from .reload import require_watchfiles

    try:
        require_watchfiles()
    except MissingExtra as exc:
        return str(exc)
    return None


def _recycling_problem(args: argparse.Namespace) -> str | None:
    if args.max_requests is not None and args.max_requests < 1:
        return f"--max-requests must be a positive integer, got {args.max_requests}"
    if args.max_requests_jitter is not None:
        if args.max_requests is None:
            return "--max-requests-jitter needs --max-requests"
        if args.max_requests_jitter < 0:
            return f"--max-requests-jitter must be 0 or more, got {args.max_requests_jitter}"
    if args.max_memory is not None and not args.max_memory > 0:
        return f"--max-memory must be a positive number of megabytes, got {args.max_memory:g}"
    return None


def _use_redis(server: MCPServer, spec: _AppSpec) -> None:
    from ..stores.redis import RedisStore

    assert spec.redis_url is not None
    if spec.redis_prefix is None:
        server.use_store(RedisStore(spec.redis_url))
    else:
        server.use_store(RedisStore(spec.redis_url, prefix=spec.redis_prefix))


def _banner(server: MCPServer, spec: _AppSpec) -> str:
    from ..server.running import http_banner, sse_banner

    if spec.transport == "http":
        return http_banner(server.name, spec.path)
    return sse_banner(server.name, "/sse")


def _make_app(server: MCPServer, spec: _AppSpec) -> ASGIApp:
    """The app ``mcpkit run`` serves: the same in the one process or in each worker."""
    options: dict[str, Any] = {}
    if spec.body_timeout is not None:
        options["body_timeout"] = spec.body_timeout
    if spec.allowed_hosts is not None:
        options["allowed_hosts"] = spec.allowed_hosts
    if spec.allowed_origins is not None:
        options["allowed_origins"] = spec.allowed_origins
    if spec.transport == "sse":
        return server.sse_app(**options)
    if spec.resumable or spec.redis_url is not None:
        if spec.redis_url is None:
            from ..stores import MemoryEventStore

            options["event_store"] = MemoryEventStore()
        # With --redis the app takes server.store.events: streams resume on any worker.
        options["retry_interval_ms"] = DEFAULT_RETRY_MS if spec.retry_ms is None else spec.retry_ms
    return server.http_app(
        spec.path,
        stateless=spec.stateless,
        json_response=True if spec.json_response else None,
        **options,
    )


def _worker_app(target: str, spec: _AppSpec) -> ASGIApp:
    """In a worker process (a fresh interpreter): load the target and build its app."""
    from ..errors import ConfigurationError
    from .loader import LoadError, UserCodeError, load_server

    try:
        server = load_server(target)
    except (LoadError, UserCodeError) as exc:
        raise ConfigurationError(f"a worker could not load {target}: {exc}") from exc
    from .settings import apply_server_settings

    apply_server_settings(server, os.environ)  # checked by the parent; inherited environment
    if spec.redis_url is not None:
        _use_redis(server, spec)
    return _make_app(server, spec)


def _load(target: str, *, quiet_stdout: bool) -> MCPServer | int:
    """The server, or the exit status after reporting why it could not be loaded."""
    from .loader import LoadError, UserCodeError, load_server

    # On stdio, stdout belongs to the protocol from the start: whatever the
    # user's module prints while it is imported goes to stderr.
    redirect = contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()
    try:
        with redirect:
            return load_server(target)
    except LoadError as exc:
        return _fail(str(exc))
    except UserCodeError as exc:
        if exc.report():
            print(exc.report(), file=sys.stderr)
        return _fail(str(exc), status=1)
