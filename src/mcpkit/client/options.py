"""``ClientOptions``: every option of a client session, its default and its check, once.

``Client(...)`` takes these as keyword arguments, :class:`~.session.ClientSession`
takes the object itself, and a server definition of
:class:`~mcpkit.client.mcp_client.MCPClient` (in code or in a configuration file,
:mod:`mcpkit.client.config`) may set those of :data:`SERVER_DEFINITION_OPTIONS`.
All three check values with :func:`option_problems`, so an option means the
same thing, and is refused with the same sentence, wherever it is given.

How to reach the server (``command``, ``url``, ``server``, ``transport`` and
their companions) is not a session option: it stays with ``Client`` and
``ServerConfig``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import ConfigurationError
from ..protocol.versions import REVISIONS
from .cache import ResultCache
from .deadlines import timeout_problem, valid_timeout
from .handlers import (
    MAX_SERVER_REQUESTS,
    ElicitationHandler,
    ListChangedCallback,
    LogCallback,
    ResourceUpdatedCallback,
    RootsSpec,
    SamplingHandler,
)
from .request_meta import ClientExtension, RequestMetaHook
from .stateless.discover import ALL_VERSIONS, is_stateless
from .transports.base import DEFAULT_MAX_MESSAGE_SIZE, message_size_problem

__all__ = [
    "DEFAULT_TIMEOUT",
    "SERVER_DEFINITION_OPTIONS",
    "ClientExtension",
    "ClientOptions",
    "RequestMetaHook",
    "Trace",
    "option_problems",
]

DEFAULT_TIMEOUT: Final = 60.0

Trace = Callable[[str, Any], None]
"""``trace(direction, message)``: sees every message, ``"sent"`` or ``"received"``."""


@dataclass(frozen=True, kw_only=True)
class ClientOptions:
    """How a client talks to one server, whatever the transport (see ``Client``).

    Checked when built (:class:`~mcpkit.errors.ConfigurationError` naming the
    option); ``options.replace(timeout=5)`` makes a checked copy.
    """

    name: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float | None = None
    protocol_version: str | None = None  # None: the newest, era chosen (stateless.discover)
    supported_versions: tuple[str, ...] = ALL_VERSIONS
    client_info: Mapping[str, Any] | None = None
    capabilities: Mapping[str, Any] | None = None
    sampling_handler: SamplingHandler | None = None
    elicitation_handler: ElicitationHandler | None = None
    elicitation_modes: tuple[str, ...] = ("form",)
    roots: RootsSpec | None = None
    server_logs: bool = True
    log_handler: LogCallback | None = None
    on_resource_updated: ResourceUpdatedCallback | None = None
    on_list_changed: ListChangedCallback | None = None
    trace: Trace | None = None
    cache: ResultCache | bool = True
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_server_requests: int = MAX_SERVER_REQUESTS
    extensions: tuple[ClientExtension, ...] = ()

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for problem in option_problems(values):
            raise ConfigurationError(problem)

    def replace(self, **changes: Any) -> ClientOptions:
        """A copy with ``changes``, checked like the original."""
        return dataclasses.replace(self, **changes)


# What a server definition of MCPClient may set. The rest belongs to MCPClient itself
# (the name is the definition's key; it listens for changes to keep its caches).
SERVER_DEFINITION_OPTIONS: Final = frozenset(
    f.name
    for f in dataclasses.fields(ClientOptions)
    if f.name not in ("name", "on_resource_updated", "on_list_changed")
)


def option_problems(values: Mapping[str, Any], label: Callable[[str], str] = str) -> Iterator[str]:
    """Why each option of ``values`` (a subset of :class:`ClientOptions`' fields) is
    unusable, one sentence each; ``label`` spells an option's name in the sentence.
    An option missing from ``values`` is not checked (a server definition's unset ones)."""
    if "timeout" in values and not valid_timeout(values["timeout"]):
        yield timeout_problem(label("timeout"), values["timeout"])
    connect = values.get("connect_timeout")
    if connect is not None and not valid_timeout(connect):
        yield timeout_problem(label("connect_timeout"), connect)
    if "max_message_size" in values:
        problem = message_size_problem(label("max_message_size"), values["max_message_size"])
        if problem is not None:
            yield problem
    requests = values.get("max_server_requests", 1)
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
        yield f"{label('max_server_requests')} must be a positive integer, not {requests!r}"
    if "server_logs" in values and not isinstance(values["server_logs"], bool):
        kind = type(values["server_logs"]).__name__
        yield f"{label('server_logs')} must be true or false, not {kind}"
    for key in ("capabilities", "client_info"):
        value = values.get(key)
        if value is not None and not isinstance(value, Mapping):
            yield f"{label(key)} must be a dict, not {type(value).__name__}"
    supported = values.get("supported_versions", ALL_VERSIONS)
    if not supported:
        yield f"{label('supported_versions')} must name at least one protocol version"
    unknown = [v for v in supported if v not in REVISIONS and not is_stateless(v)]
    if unknown:
        yield (
            f"{label('supported_versions')} has unknown protocol versions {unknown}; "
            f"known: {', '.join(ALL_VERSIONS)}"
        )
    for i, ext in enumerate(values.get("extensions", ())):
        hook = getattr(ext, "request_meta", None)
        if not isinstance(getattr(ext, "identifier", None), str) or not (
            hook is None or callable(hook)
        ):
            yield (
                f"{label('extensions')}[{i}] must be an extension (an identifier and a "
                f"request_meta hook or None, like mcpkit.Extension), not {type(ext).__name__}"
            )
            continue
        capability = getattr(ext, "client_capability", None)
        if capability is not None and not isinstance(capability, Mapping):
            yield (
                f"{label('extensions')}[{i}] ({ext.identifier}): client_capability must be "
                f"a dict or None, not {type(capability).__name__}"
            )
        handlers = getattr(ext, "result_handlers", None)
        if handlers is not None and not (
            isinstance(handlers, Mapping)
            and all(isinstance(k, str) and callable(v) for k, v in handlers.items())
        ):
            yield (
                f"{label('extensions')}[{i}] ({ext.identifier}): result_handlers must map "
                "result types to async functions"
            )
    version = values.get("protocol_version")
    if version is not None and version not in supported:
        yield (
            f"{label('protocol_version')} must be one of {', '.join(supported)}, not {version!r}"
        )
