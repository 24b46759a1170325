"""Server definitions for :class:`~mcpkit.client.mcp_client.MCPClient`, from code or config files.

A definition is a dict, as in Mastra (``MastraMCPServerDefinition``) with
Pythonic names::

    {"command": "python", "args": ["server.py"], "env": {...}, "cwd": "..."}   # stdio
    {"url": "https://host/mcp", "headers": {"Authorization": "Bearer ..."}}    # HTTP
    {"url": "https://host/mcp", "auth": "oauth"}                                # HTTP + OAuth
    {"server": mcp_server}                                                      # in memory

plus ``timeout`` (seconds, for every call), ``connect_timeout`` (for
starting; default ``timeout``), ``capabilities``, ``server_logs`` (Mastra's
``enableServerLogs``), ``log_handler`` (Mastra's ``logger``),
``http_transport``, handlers (``sampling_handler``,
``elicitation_handler``, ``roots``), ``protocol_version`` (``"2026-07-28"``
for the stateless revision, see docs/client.md), ``max_message_size`` (bytes; the
largest message read from the server, default the ``MCPClient``'s),
``max_server_requests`` (how many of the server's own requests are handled at
once, default the ``MCPClient``'s), ``extensions`` (client extensions, as
``Client(extensions=...)`` takes them: ``tasks_client()``, trace context) and ``trace``
(``trace(direction, message)`` sees every message, for debugging and tests). Unknown keys are an error, so a typo
does not silently drop an option.

Configuration *files* are shared with other applications, so
:func:`load_config` is lenient: it reads the ``mcpServers`` format of Claude
Desktop and Cursor (and VS Code's ``servers``), accepts Mastra's camelCase
names (``requestInit.headers``, ``enableServerLogs``) and a ``type`` of
``stdio``, ``http`` or ``sse``, skips servers marked ``"disabled": true``, and
ignores keys meant for other applications, but not a near miss of its own keys
(``comand``, ``arg``, ``mcpServer``): that is an error naming the likely key.

``auth`` authorizes an HTTP server: an ``httpx.Auth`` object in code (an
:class:`~mcpkit.auth.client.OAuth`), or in a file ``"oauth"`` or an object
``{"type": "oauth", "scopes": [...], "client_id": ..., "client_secret": ...,
"client_metadata_url": ..., "client_name": ..., "storage": "file" | "memory",
"token_file": ..., "redirect_port": ..., "open_browser": true}``
(:func:`mcpkit.auth.client.settings.oauth_from_config`; docs/auth.md).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._extras import require_extra
from ..errors import ConfigurationError
from .client import HTTPTransportChoice
from .handlers import ElicitationHandler, LogCallback, RootsSpec, SamplingHandler
from .options import ClientExtension, Trace, option_problems

if TYPE_CHECKING:
    import httpx

    from .transports.memory import InProcessServer

__all__ = ["ServerConfig", "load_config", "parse_servers"]

log = logging.getLogger("mcpkit.client")

# `type` (VS Code, Cursor, Cline) / `transport` → http_transport, or stdio.
_TYPES: Final[dict[str, HTTPTransportChoice | None]] = {
    "stdio": None,
    "http": "auto",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamablehttp": "streamable-http",
    "sse": "sse",
}


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """How to reach one server, and how to treat it. Exactly one of command/url/server."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None
    auth: httpx.Auth | None = None
    http_client: httpx.AsyncClient | None = None
    http_transport: HTTPTransportChoice = "auto"
    server: InProcessServer | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    capabilities: Mapping[str, Any] | None = None
    server_logs: bool = True
    log_handler: LogCallback | None = None
    sampling_handler: SamplingHandler | None = None
    elicitation_handler: ElicitationHandler | None = None
    elicitation_modes: tuple[str, ...] | None = None  # None: the Client's ("form",)
    roots: RootsSpec | None = field(default=None)
    trace: Trace | None = None
    protocol_version: str | None = None  # None: the Client's default
    max_message_size: int | None = None  # None: the MCPClient's
    max_server_requests: int | None = None  # None: the MCPClient's
    extensions: tuple[ClientExtension, ...] = ()

    @property
    def kind(self) -> str:
        """``"stdio"``, ``"http"`` or ``"memory"``."""
        if self.command is not None:
            return "stdio"
        return "http" if self.url is not None else "memory"


_TRANSPORT: Final = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "auth",
        "http_client",
        "http_transport",
        "server",
    }
)
_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(ServerConfig))
# The session options a definition sets (the rest says how to reach the server): each
# one a ClientOptions field, with its meaning and its check (tests/client/test_options.py).
_OPTIONS: Final = _FIELDS - _TRANSPORT


def parse_servers(servers: Mapping[str, Any]) -> dict[str, ServerConfig]:
    """Check every definition of ``servers``; all problems are reported together."""
    if not isinstance(servers, Mapping):
        raise ConfigurationError(
            f"servers must be a dict of name → definition, not {type(servers).__name__}"
        )
    problems: list[str] = []
    out: dict[str, ServerConfig] = {}
    for name, definition in servers.items():
        if isinstance(definition, ServerConfig):
            out[str(name)] = definition
            continue
        try:
            out[str(name)] = _parse_one(name, definition, strict=True)
        except ConfigurationError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigurationError(
            "invalid MCP server configuration:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, ServerConfig]:
    """The servers of a configuration file (a path) or of its parsed JSON (a dict).

    Accepted shapes: ``{"mcpServers": {...}}`` (Claude Desktop, Cursor),
    ``{"servers": {...}}`` (VS Code), or the servers dict itself.
    """
    where = "the configuration"
    if isinstance(source, Mapping):
        data: Any = source
    else:
        path = Path(source).expanduser()
        where = str(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigurationError(f"configuration file not found: {path}") from None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from None
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where} must be a JSON object")
    if "mcpServers" not in data and "servers" not in data:
        _check_top_level(where, data)
    servers = data.get("mcpServers", data.get("servers", data))
    if not isinstance(servers, Mapping):
        raise ConfigurationError(f"{where}: 'mcpServers' must be an object of name → server")
    problems: list[str] = []
    out: dict[str, ServerConfig] = {}
    for name, definition in servers.items():
        if isinstance(definition, Mapping) and definition.get("disabled") is True:
            continue
        try:
            out[str(name)] = _parse_one(name, definition, strict=False)
        except ConfigurationError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigurationError(
            f"invalid MCP server configuration in {where}:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def _parse_one(name: Any, definition: Any, *, strict: bool) -> ServerConfig:
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"server names must be non-empty strings, not {name!r}")
    if not isinstance(definition, Mapping):
        raise ConfigurationError(
            f"server {name!r}: the definition must be a dict, not {type(definition).__name__}"
        )
    options = dict(definition)
    if not strict:
        options = _from_file(name, options)
    unknown = sorted(set(options) - _FIELDS)
    if unknown:
        raise ConfigurationError(
            f"server {name!r}: unknown option(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(sorted(_FIELDS))})"
        )
    chosen = [k for k in ("command", "url", "server") if options.get(k) is not None]
    if len(chosen) != 1:
        raise ConfigurationError(
            f"server {name!r} needs exactly one of 'command' (stdio), 'url' (HTTP) or "
            f"'server' (in memory); got {', '.join(chosen) or 'none'}"
        )
    _check_types(name, options)
    if options.get("auth") is not None:
        options["auth"] = _auth(name, options["auth"])
    if "args" in options:
        options["args"] = tuple(options["args"])
    if "extensions" in options:
        options["extensions"] = tuple(options["extensions"])
    return ServerConfig(**options)


def _from_file(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Translate a config file's spellings; drop what belongs to other applications."""
    kind = options.pop("type", options.pop("transport", None))
    request_init = options.pop("requestInit", None)
    if isinstance(request_init, Mapping) and "headers" in request_init:
        options.setdefault("headers", request_init["headers"])
    if "enableServerLogs" in options:
        options.setdefault("server_logs", options.pop("enableServerLogs"))
    if kind is not None:
        key = str(kind).lower()
        if key not in _TYPES:
            raise ConfigurationError(
                f"server {name!r}: unknown type {kind!r} (use 'stdio', 'http' or 'sse')"
            )
        choice = _TYPES[key]
        if choice is not None and "http_transport" not in options:
            options["http_transport"] = choice
    ignored = sorted(k for k in options if k not in _FIELDS)
    for key in ignored:  # another application's key is kept quiet; a near miss of ours is not
        guess = _near_miss(key, (_FILE_KEYS | _FIELDS) - _CODE_ONLY - set(options))
        if guess is not None:
            raise ConfigurationError(
                f"server {name!r}: unknown key {key!r}; did you mean {guess!r}?"
            )
    if ignored:
        log.debug("server %r: ignoring options for other applications: %s", name, ignored)
    # Only JSON-expressible options can come from a file.
    return {k: v for k, v in options.items() if k in _FIELDS and k not in _CODE_ONLY}


# The file spellings _from_file reads besides the ServerConfig fields.
_FILE_KEYS: Final = frozenset({"type", "transport", "requestInit", "enableServerLogs", "disabled"})


def _near_miss(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` is most likely a misspelling of (case, ``_`` and ``-`` aside)."""
    import difflib

    folded = {k.lower().replace("_", "").replace("-", ""): k for k in known}
    close = difflib.get_close_matches(
        key.lower().replace("_", "").replace("-", ""), folded, n=1, cutoff=0.85
    )
    return folded[close[0]] if close else None


def _check_top_level(where: str, data: Mapping[str, Any]) -> None:
    """A misspelled ``mcpServers`` (or ``servers``) would be read as a server named so."""
    for key, value in data.items():
        looks_like_servers = (
            isinstance(value, Mapping)
            and not {"command", "url", "server"} & set(value)
            and all(isinstance(v, Mapping) for v in value.values())
        )
        guess = _near_miss(str(key), ("mcpServers", "servers")) if looks_like_servers else None
        if guess is not None:
            raise ConfigurationError(f"{where}: unknown key {key!r}; did you mean {guess!r}?")


_CODE_ONLY: Final = frozenset(
    {
        "http_client",
        "server",
        "log_handler",
        "sampling_handler",
        "elicitation_handler",
        "trace",
        "extensions",
    }
)


def _auth(name: str, value: Any) -> httpx.Auth:
    """An ``auth`` option: an ``httpx.Auth`` as given, or an OAuth flow from its settings."""
    with require_extra("auth", feature=f"server {name!r}: 'auth'"):
        import httpx
    if isinstance(value, httpx.Auth):
        return value
    from ..auth.client.settings import oauth_from_config

    try:
        return oauth_from_config(value)
    except ConfigurationError as exc:
        raise ConfigurationError(f"server {name!r}: {exc}") from None


def _check_types(name: str, options: Mapping[str, Any]) -> None:
    def bad(key: str, expected: str) -> ConfigurationError:
        value = options[key]
        return ConfigurationError(
            f"server {name!r}: {key!r} must be {expected}, not {type(value).__name__}"
        )

    for key in ("command", "url", "cwd"):
        if key in options and options[key] is not None:
            if key == "cwd" and isinstance(options[key], os.PathLike):
                continue
            if not isinstance(options[key], str) or not options[key]:
                raise bad(key, "a non-empty string")
    if "args" in options and (
        isinstance(options["args"], str | bytes)
        or not all(isinstance(a, str) for a in options["args"])
    ):
        raise bad("args", "a list of strings")
    for key in ("env", "headers"):
        value = options.get(key)
        if value is not None and (
            not isinstance(value, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        ):
            raise bad(key, "a dict of strings")
    if options.get("http_transport", "auto") not in ("auto", "streamable-http", "sse"):
        raise ConfigurationError(
            f"server {name!r}: 'http_transport' must be 'auto', 'streamable-http' or 'sse'"
        )
    if options.get("command") is None and any(options.get(k) for k in ("args", "env", "cwd")):
        raise ConfigurationError(f"server {name!r}: 'args', 'env' and 'cwd' need 'command'")
    if options.get("url") is None and any(
        options.get(k) is not None for k in ("headers", "http_client", "auth")
    ):
        raise ConfigurationError(f"server {name!r}: 'headers', 'auth' and 'http_client' need 'url'")
    given = {k: v for k, v in options.items() if k in _OPTIONS and v is not None}
    for problem in option_problems(given, repr):
        raise ConfigurationError(f"server {name!r}: {problem}")
