"""Settings of ``mcpkit run`` from ``MCPKIT_*`` environment variables and a ``.env`` file.

Every ``mcpkit run`` option ``--some-option`` can also be given as the variable
``MCPKIT_SOME_OPTION`` (a repeatable option as a comma-separated list, a switch
as ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``), so a
container or a process manager configures the server without a command line.
A few knobs of the loaded :class:`~mcpkit.server.server.MCPServer` that an
operator sets per deployment (:data:`SERVER_SETTINGS`) are read the same way.

Precedence, highest first: the command line, the real environment, the ``.env``
file (``.env`` in the current directory, or ``--env-file PATH``), the code (for
the server knobs), mcpkit's defaults. Only ``mcpkit run`` reads these: library
code never looks at the environment, so a server built in a test or embedded in
another application behaves as its code says.

An empty variable counts as unset (``MCPKIT_PORT=`` in a compose file). A value
that does not read is refused before anything starts, with one line naming the
variable: ``MCPKIT_PORT='abc' is not an integer``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..server.limits import ServerLimits
    from ..server.server import MCPServer

__all__ = [
    "DEFAULT_ENV_FILE",
    "ENV_PREFIX",
    "RUN_OPTIONS",
    "SERVER_SETTINGS",
    "SettingError",
    "apply_run_settings",
    "apply_server_settings",
    "env_name",
    "load_env_file",
    "name_variables",
    "parse_env_file",
]

ENV_PREFIX: Final = "MCPKIT_"
DEFAULT_ENV_FILE: Final = ".env"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

# How a value reads: a type, a tuple of choices, "flag" (a switch) or "list" (repeatable).
Kind = type | tuple[str, ...] | str

#: Each ``mcpkit run`` option (its argparse dest) and how its variable reads. The Redis
#: options keep the names they had before (MCPKIT_REDIS_URL, MCPKIT_REDIS_PREFIX) and are
#: read by ``run`` itself, which explains them on stdio.
RUN_OPTIONS: Final[dict[str, Kind]] = {
    "transport": ("stdio", "http", "sse"),
    "host": str,
    "port": int,
    "allowed_host": "list",
    "allowed_origin": "list",
    "path": str,
    "stateless": "flag",
    "json_response": "flag",
    "resumable": "flag",
    "retry_ms": int,
    "reload": "flag",
    "reload_dir": "list",
    "workers": int,
    "max_requests": int,
    "max_requests_jitter": int,
    "max_memory": float,
    "header_timeout": float,
    "body_timeout": float,
    "max_connections": int,
    "timeout_keep_alive": int,
    "limit_concurrency": int,
    "backlog": int,
    "graceful_timeout": float,
    "loop": ("auto", "asyncio", "uvloop"),
    "http": ("auto", "h11", "httptools"),
}

#: The server knobs read from the environment when the code left them at their default:
#: the bounds an operator sizes per deployment (ServerLimits), the level of log
#: notifications sent to clients before they choose one, and error detail (debug).
#: The server's identity (name, version, instructions, icons...) and behaviour (cache
#: hints, auth, middleware) belong to the code and are not here.
SERVER_SETTINGS: Final[dict[str, Kind]] = {
    "request_timeout": float,
    "page_size": int,
    "max_batch_size": int,
    "listen_queue_bytes": int,
    "default_log_level": (
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ),
    "debug": "flag",
}

_LIMITS = ("request_timeout", "page_size", "max_batch_size", "listen_queue_bytes")


class SettingError(Exception):
    """A variable or ``.env`` line that does not read; the message is one line."""


def env_name(dest: str) -> str:
    """The variable of an option or knob: ``max_requests`` -> ``MCPKIT_MAX_REQUESTS``."""
    return ENV_PREFIX + dest.upper()


def parse_env_file(text: str, where: str) -> dict[str, str]:
    """``KEY=VALUE`` lines as dotenv files have them: ``#`` comments, ``export``, quotes."""
    env: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise SettingError(f"{where}:{number}: expected KEY=VALUE, got {raw.strip()!r}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:  # an unquoted value ends at a comment
            value = value.split(" #", 1)[0].rstrip()
        env[key] = value
    return env


def load_env_file(path: str | None) -> dict[str, str]:
    """The variables of ``path``, or of ``.env`` in the current directory when there is one."""
    if path is None:
        default = Path(DEFAULT_ENV_FILE)
        if not default.is_file():
            return {}
        return parse_env_file(default.read_text(encoding="utf-8"), DEFAULT_ENV_FILE)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingError(f"cannot read --env-file {path}: {exc.strerror or exc}") from None
    return parse_env_file(text, path)


def _read(name: str, raw: str, kind: Kind) -> Any:
    """``raw`` as ``kind``, or a :class:`SettingError` naming the variable."""
    if kind == "flag":
        word = raw.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise SettingError(
            f"{name}={raw!r} is not a boolean: use 1, true, yes, on or 0, false, no, off"
        )
    if kind == "list":
        items = [item.strip() for item in raw.split(",") if item.strip()]
        return items or None
    if isinstance(kind, tuple):
        if raw in kind:
            return raw
        raise SettingError(f"{name}={raw!r} is not one of {', '.join(kind)}")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise SettingError(f"{name}={raw!r} is not an integer") from None
    if kind is float:
        try:
            return float(raw)
        except ValueError:
            raise SettingError(f"{name}={raw!r} is not a number") from None
    return raw


def apply_run_settings(
    args: argparse.Namespace, environ: MutableMapping[str, str]
) -> dict[str, str]:
    """Complete ``args`` from the environment and the ``.env`` file; return ``{flag: variable}``
    for each option taken from a variable (so errors can name it).

    The file's variables go into ``environ`` unless it has them already (the real
    environment wins), so the server's own code and its worker processes see them too.
    """
    if not getattr(args, "no_env_file", False):
        for key, value in load_env_file(getattr(args, "env_file", None)).items():
            environ.setdefault(key, value)
    taken: dict[str, str] = {}
    for dest, kind in RUN_OPTIONS.items():
        given = getattr(args, dest, True)
        if given is not None and given is not False:
            continue  # given on the command line (a switch can only be given on)
        name = env_name(dest)
        raw = environ.get(name, "")
        if raw == "":
            continue
        value = _read(name, raw, kind)
        setattr(args, dest, value)
        if value is not None and value is not False:
            taken["--" + dest.replace("_", "-")] = name
    if getattr(args, "transport", "stdio") is None:
        args.transport = "stdio"
    return taken


def name_variables(message: str, taken: Mapping[str, str]) -> str:
    """``message`` with each flag that came from a variable named as that variable."""
    for flag, name in taken.items():
        message = re.sub(rf"{re.escape(flag)}(?![\w-])", name, message)
    return message


def apply_server_settings(server: MCPServer, environ: Mapping[str, str]) -> None:
    """Set the :data:`SERVER_SETTINGS` the environment has on ``server`` where its code
    left the library default; raise :class:`SettingError` for a value that does not read."""
    from ..errors import ConfigurationError
    from ..server.limits import ServerLimits

    values: dict[str, Any] = {}
    for dest, kind in SERVER_SETTINGS.items():
        raw = environ.get(env_name(dest), "")
        if raw != "":
            values[dest] = _read(env_name(dest), raw, kind)
    defaults = ServerLimits()
    changes = {
        field: values[field]
        for field in _LIMITS
        if field in values and getattr(server.limits, field) == getattr(defaults, field)
    }
    if changes:
        try:
            limits = dataclasses.replace(server.limits, **changes)
        except ConfigurationError as exc:  # "page_size must be a positive integer or None"
            field = next((f for f in changes if str(exc).startswith(f)), next(iter(changes)))
            raise SettingError(f"{env_name(field)}={changes[field]!r}: {exc}") from None
        if limits.request_timeout <= 0:
            raise SettingError(
                f"{env_name('request_timeout')}={limits.request_timeout!r} must be positive"
            )
        _use_limits(server, limits)
    if "default_log_level" in values and server.default_log_level == "info":
        server.default_log_level = values["default_log_level"]
    if values.get("debug"):
        server.debug = True


def _use_limits(server: MCPServer, limits: ServerLimits) -> None:
    """Give the built ``server`` new limits as ``MCPServer(limits=...)`` would have: it copies
    them to plain attributes read on hot paths, and the input-round expiry (the stateless
    era's ``requestState``) follows ``request_timeout``. Before any app or session exists."""
    server.limits = limits
    server.page_size = limits.page_size
    server.request_timeout = limits.request_timeout
    server.max_batch_size = limits.max_batch_size
    server.listen_queue_bytes = limits.listen_queue_bytes
    ttl = max(limits.request_timeout, 1.0)  # as MCPServer.__init__ sets it
    server.input_rounds.ttl = ttl
    server.input_rounds.codec.ttl = ttl
