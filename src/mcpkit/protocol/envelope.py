"""The 2026-07-28 (stateless) request envelope, as data and pure checks.

From 2026-07-28 on there is no handshake: every request carries its protocol
version and the client's capabilities in ``params._meta`` (2026-07-28
changelog §2, SEP-2575), results carry ``resultType`` and the server's
identity, and list/read results carry caching hints (SEP-2549). This module
reads and checks the envelope; it never awaits and knows no transport, so the
session (stdio, in-memory) and the Streamable HTTP transport (which must pick
an HTTP status before it runs anything) share it.

Order of the checks (the conformance suite's ``server-stateless`` scenario
pins the codes): an unknown ``MCP-Protocol-Version`` header is
``UnsupportedProtocolVersion`` naming the header's value; a missing
``_meta``, version or capabilities is ``-32602``; a header that differs from
the body is ``HeaderMismatch``; a body version the server does not serve
statelessly is ``UnsupportedProtocolVersion``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_VERSION
from .jsonrpc import json_type
from .versions import REVISIONS, STATELESS_REVISIONS, Revision

__all__ = [
    "CACHEABLE_METHODS",
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "INPUT_ROUNDS_EXTENSION",
    "LOG_LEVEL",
    "PROTOCOL_VERSION",
    "REMOVED_METHODS",
    "SERVER_INFO",
    "STATELESS_REVISIONS",
    "SUBSCRIPTION_ID",
    "Envelope",
    "Refusal",
    "body_version",
    "is_stateless_request",
    "read_envelope",
    "unsupported_version",
]

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
# mcpkit's own extension (2026-07-28 basic/versioning § extension negotiation): a server
# that lists it in `capabilities.extensions` of its DiscoverResult promises that every
# request it makes of the client for a tool, prompt or resource (sampling, elicitation,
# roots) reaches a 2026-07-28 client as an input-required round (basic/patterns/mrtr).
# The revision makes that mandatory but gives no way to say it, and dual-era servers
# that still send those requests on the handshake era's back channel fail them on
# 2026-07-28; a client that has handlers prefers the handshake with a server that does
# not list it (mcpkit.client.stateless.discover.prefers_handshake).
INPUT_ROUNDS_EXTENSION: Final = "mcpkit/input-rounds"

# Methods of the handshake era that 2026-07-28 removed (changelog §2, §4, §5): a
# stateless request for one is "method not found" (HTTP 404 on Streamable HTTP).
REMOVED_METHODS: Final = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)

# Results that implement CacheableResult (ttlMs + cacheScope are required, SEP-2549).
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)

_LOG_LEVELS: Final = frozenset(
    {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
)


@dataclass(slots=True)
class Envelope:
    """What one stateless request says about its client (read-only by convention: not
    frozen, because a frozen dataclass's ``__init__`` costs several times more, once per
    request)."""

    revision: Revision
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None  # None: the request did not ask for log messages


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before it runs: the JSON-RPC error and the HTTP status for it."""

    status: int
    code: int
    message: str
    data: Any = None

    def error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def unsupported_version(requested: str, supported: Sequence[str] = STATELESS_REVISIONS) -> Refusal:
    """``UnsupportedProtocolVersionError`` (-32022, HTTP 400) naming what we serve."""
    return Refusal(
        400,
        UNSUPPORTED_VERSION,
        f"Unsupported protocol version: {requested!r} (supported: {', '.join(supported)})",
        {"supported": list(supported), "requested": requested},
    )


def body_version(msg: Any) -> Any:
    """The ``_meta`` protocol version a request body names (None if it names none)."""
    if type(msg) is not dict:
        return None
    params = msg.get("params")
    if type(params) is not dict:
        return None
    meta = params.get("_meta")
    return meta.get(PROTOCOL_VERSION) if type(meta) is dict else None


def is_stateless_request(msg: dict[str, Any]) -> bool:
    """Whether a request speaks the stateless era (by its method or its envelope)."""
    return msg.get("method") == "server/discover" or body_version(msg) is not None


def read_envelope(params: Any, header_version: str | None = None) -> Envelope | Refusal:
    """Check a stateless request's ``params._meta``; ``header_version`` is the HTTP header.

    Total over JSON values: whatever the body holds, the answer is an envelope or a
    refusal, never an exception (the HTTP transports call this before any session
    exists, where an exception would be a 500)."""
    global _last
    if header_version is not None and (
        header_version not in REVISIONS or REVISIONS[header_version].era != "stateless"
    ):
        return unsupported_version(header_version)
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is not dict:
        return _invalid("params._meta is required (protocol version and client capabilities)")
    last = _last
    if (
        last is not None
        and header_version in (None, last[1].revision.name)
        and _same(meta, last[0])
    ):
        # A client sends the same envelope with every request: reuse what the last one
        # gave. Equal (not identical) dicts, so a handler that changed the remembered
        # one in place only makes the next request take the long way.
        return last[1]
    version = meta.get(PROTOCOL_VERSION)
    if not isinstance(version, str):
        return _invalid(f"params._meta[{PROTOCOL_VERSION!r}] is required")
    if header_version is not None and version != header_version:
        return Refusal(
            400,
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version header {header_version!r} does not match "
            f"the body's protocol version {version!r}",
        )
    revision = REVISIONS.get(version)
    if revision is None or revision.era != "stateless":
        return unsupported_version(version)
    capabilities = meta.get(CLIENT_CAPABILITIES)
    if type(capabilities) is not dict:
        return _invalid(f"params._meta[{CLIENT_CAPABILITIES!r}] must be an object")
    info = meta.get(CLIENT_INFO)
    if info is not None and type(info) is not dict:
        return _invalid(f"params._meta[{CLIENT_INFO!r}] must be an object")
    level = meta.get(LOG_LEVEL)
    if level is not None and (type(level) is not str or level not in _LOG_LEVELS):
        got = repr(level[:40]) if type(level) is str else json_type(level)
        return _invalid(f"params._meta[{LOG_LEVEL!r}] is not a log level: {got}")
    envelope = Envelope(revision, capabilities, info, level)
    _last = (meta, envelope)
    return envelope


# The last envelope read, with the ``_meta`` it came from (one entry: no growth).
_last: tuple[dict[str, Any], Envelope] | None = None


def _same(meta: dict[str, Any], last: dict[str, Any]) -> bool:
    """``meta == last``, where a hostile nesting depth only means "not the same".

    Every check of this module is total over JSON values: a refusal, never an
    exception, since the HTTP transports read the envelope before any session exists.
    """
    try:
        return meta == last
    except RecursionError:  # ~1,000 levels deep (the JSON decoder allows 1,024)
        return False


def _invalid(message: str) -> Refusal:
    return Refusal(400, INVALID_PARAMS, f"Invalid params: {message}")
