"""Which era a server speaks, and the envelope a 2026-07-28 request carries: the client side.

Nothing here awaits or touches a socket except :func:`discover` and
:func:`try_handshake`, which drive a :class:`~mcpkit.client.session.ClientSession`
through the era probe. The pieces:

* :func:`discover`: ``server/discover`` as the era probe (2026-07-28
  basic/versioning § backward compatibility): a ``DiscoverResult`` or a
  recognized modern error means a modern server; any other error, or silence,
  means a legacy one, and the session falls back to ``initialize``.
* :func:`envelope`: the per-request ``_meta`` every modern request carries
  (2026-07-28 basic § ``_meta``: protocol version and client capabilities are
  required, client info SHOULD be sent, the log level opts in to
  ``notifications/message`` for that request only).
* the versions the client speaks (:data:`ALL_VERSIONS`, :data:`DEFAULT_VERSION`).
* :func:`prefers_handshake`: whether a client left to choose (no ``protocol_version``)
  takes the handshake with a dual-era server instead of 2026-07-28, because it has
  handlers for server requests and the server does not say it asks in input rounds;
  :func:`try_handshake` then sends ``initialize`` (a new stdio process if need be).

The request metadata headers of Streamable HTTP are written by
:func:`mcpkit.protocol.http_headers.http_headers`, beside the server's check of
them; input rounds (``input_required`` results) are :mod:`mcpkit.client.stateless.input_required`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ...errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    MCPError,
    PeerTimeout,
    RemoteError,
)
from ...protocol.envelope import INPUT_ROUNDS_EXTENSION
from ...protocol.versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS

if TYPE_CHECKING:
    from ..session import ClientSession

__all__ = [
    "ALL_VERSIONS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "DEFAULT_VERSION",
    "LOG_LEVEL_KEY",
    "PROTOCOL_VERSION_KEY",
    "STATELESS_VERSIONS",
    "capabilities",
    "discover",
    "envelope",
    "first_choice",
    "is_stateless",
    "prefers_handshake",
    "probe_won",
    "to_handshake",
    "try_handshake",
]

log = logging.getLogger("mcpkit.client")

# The revisions that replace the handshake by a per-request envelope, newest first.
STATELESS_VERSIONS: Final = tuple(reversed(STATELESS_REVISIONS))
# Every revision the client can speak (a dual-era client, versioning § terminology).
ALL_VERSIONS: Final = (*HANDSHAKE_REVISIONS, *STATELESS_VERSIONS)
# What a client asks for unless told otherwise: the newest revision. A legacy server
# answers the probe with an error or silence and gets the handshake instead.
DEFAULT_VERSION: Final = STATELESS_VERSIONS[0]
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
# Errors only a modern server sends (2026-07-28 basic § error codes): the probe that meets
# one has found a modern server and must not fall back to `initialize`.
MODERN_ERRORS: Final = frozenset({UNSUPPORTED_VERSION, HEADER_MISMATCH, MISSING_CAPABILITY})
# A legacy stdio server may never answer an unknown method (stdio § backward compatibility).
# After PROBE_GRACE seconds of silence `initialize` is sent too: an accepted handshake
# decides (it selects the legacy era for the whole process, versioning § dual-era servers),
# a refused one leaves the probe to decide. Over HTTP a legacy server answers at once
# (400/404/405), so only the timeout counts there.
PROBE_TIMEOUT: Final = 10.0
PROBE_GRACE: Final = 2.0
# The client capabilities through which a server asks the client during a request: in the
# handshake era as requests of its own, on 2026-07-28 as input requests (basic/patterns/mrtr).
INPUT_CAPABILITIES: Final = ("sampling", "elicitation", "roots")


def first_choice(supported: tuple[str, ...]) -> str:
    """What a client without ``protocol_version`` asks for: the newest it supports, a
    stateless revision before any handshake one."""
    modern = [v for v in supported if is_stateless(v)]
    return max(modern) if modern else max(supported)


def is_stateless(version: str | None) -> bool:
    return version in STATELESS_VERSIONS


def envelope(
    params: Mapping[str, Any] | None,
    *,
    version: str,
    capabilities: Mapping[str, Any],
    client_info: Mapping[str, Any],
    log_level: str | None = None,
) -> dict[str, Any]:
    """``params`` with the request ``_meta`` envelope merged in (caller's keys kept)."""
    out = dict(params) if params else {}
    meta = dict(out.get("_meta") or {})
    meta[PROTOCOL_VERSION_KEY] = version
    meta[CLIENT_CAPABILITIES_KEY] = dict(capabilities)
    meta[CLIENT_INFO_KEY] = dict(client_info)
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    out["_meta"] = meta
    return out


def capabilities(declared: Mapping[str, Any]) -> dict[str, Any]:
    """The handshake-era capabilities as 2026-07-28 declares them.

    ``roots.listChanged`` goes: the revision removed ``notifications/roots/list_changed``
    (changelog, major change 5); the server asks for roots in each input request.
    """
    out = dict(declared)
    if "roots" in out:
        out["roots"] = {}
    return out


def prefers_handshake(result: Mapping[str, Any], declared: Mapping[str, Any]) -> bool:
    """Should a client that may choose its era take the handshake with this modern server?

    ``result`` is the server's ``DiscoverResult``, ``declared`` the client's capabilities.
    2026-07-28 has no server-to-client requests: a server asks in input-required rounds
    (basic/patterns/mrtr), and says nothing in its capabilities about whether its tools
    do. Dual-era servers built on the official Python SDK or FastMCP still make those
    requests on the handshake era's back channel and fail them on 2026-07-28 (the call
    errs), while the handshake era serves both styles. So a client with sampling,
    elicitation or roots handlers prefers the handshake, unless the server lists
    :data:`~mcpkit.protocol.envelope.INPUT_ROUNDS_EXTENSION` (mcpkit's servers do); a
    client without them loses nothing on 2026-07-28 and stays there.
    """
    if not any(name in declared for name in INPUT_CAPABILITIES):
        return False
    caps = result.get("capabilities")
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return not (isinstance(extensions, dict) and INPUT_ROUNDS_EXTENSION in extensions)


# -- the era probe ----------------------------------------------------------------------------
async def discover(
    session: ClientSession, timeout: float | None, *, grace: float | None = None
) -> dict[str, Any] | asyncio.Future[dict[str, Any]] | None:
    """Probe with ``server/discover``; the result, or None when the server is legacy.

    On ``UnsupportedProtocolVersionError`` the probe is retried once with the newest
    version both sides support; when that is a handshake version, None is returned
    with ``session.requested_version`` set to it, so the handshake uses it.

    With ``grace``, a first probe still unanswered after ``grace`` seconds is returned
    as a pending future and the session is set up for the handshake: the caller races
    the two (:func:`probe_won`). A transport with ``handshake_only`` is not probed.
    """
    if getattr(session.transport, "handshake_only", False):
        to_handshake(session)
        return None
    # The session's own timeout bounds the probe too: a mute server fails as fast as asked.
    wait = min(PROBE_TIMEOUT, session.timeout) if timeout is None else timeout
    modern = [v for v in session.supported_versions if is_stateless(v)]
    version = session.requested_version
    for attempt in range(2):
        session.stateless_version = version
        try:
            probe = asyncio.ensure_future(
                session.request("server/discover", None, timeout=wait, _retry=False)
            )
            if grace is not None and attempt == 0:
                done, _ = await asyncio.wait({probe}, timeout=grace)
                if not done:
                    log.info(
                        "%s has not answered server/discover within %g s: sending initialize too",
                        session.name,
                        grace,
                    )
                    to_handshake(session)
                    return probe
            result = await probe
        except PeerTimeout:
            log.info("%s did not answer server/discover: a legacy server", session.name)
            to_handshake(session)
            return None
        except RemoteError as exc:
            if exc.code not in MODERN_ERRORS:
                log.info("server/discover failed (%s): a legacy server", exc)
                to_handshake(session)
                return None
            if exc.code != UNSUPPORTED_VERSION:
                session.stateless_version = None
                raise
            data = exc.data if isinstance(exc.data, dict) else {}
            offered = _strings(data.get("supported"))
            chosen = _choose(offered, session.supported_versions)
            if chosen is None:
                session.stateless_version = None
                raise _no_common(session, offered) from exc
            if not is_stateless(chosen):
                session.requested_version = chosen
                to_handshake(session)
                return None
            version = chosen
            continue
        except BaseException:
            session.stateless_version = None
            if not probe.done():
                probe.cancel()
            raise
        offered = _strings(result.get("supportedVersions"))
        if version in offered:
            return result
        chosen = _choose(offered, session.supported_versions)
        if chosen is None:
            # Not a DiscoverResult at all (a legacy server answering anything with `{}`).
            to_handshake(session)
            return None
        if not is_stateless(chosen):
            session.requested_version = chosen
            to_handshake(session)
            return None
        version = chosen  # discover again with the version the server prefers
    session.stateless_version = None
    raise MCPError(
        f"MCP server {session.name!r} kept refusing the protocol versions it offered "
        f"({', '.join(modern)})",
        code=INTERNAL_ERROR,
    )


def probe_won(probe: asyncio.Future[dict[str, Any]], version: str) -> dict[str, Any] | None:
    """The late answer of a raced probe (see :func:`discover`) when it proves a modern server
    that accepted ``version``; None when it failed or offered something else."""
    if probe.cancelled() or probe.exception() is not None:
        return None
    result = probe.result()
    return result if version in _strings(result.get("supportedVersions")) else None


async def try_handshake(session: ClientSession, timeout: float | None) -> dict[str, Any] | None:
    """``initialize`` with a server that answered the probe; None when it refuses.

    The session then speaks the handshake era. A stdio server may fix the era of its
    process with the first message (the official Python SDK and FastMCP do), so one that
    refuses ``initialize`` after the probe is started again with ``initialize`` first
    (a transport with ``respawn()``). None means a modern-only server: the session is
    back on the stateless era, or, after a new process, set up to probe that one
    (``session.stateless_version`` is None then). Over HTTP every request stands alone,
    so a refusal is the answer.
    """
    if all(is_stateless(v) for v in session.supported_versions):
        return None  # a client that speaks only 2026-07-28 has nothing else to try
    version = session.requested_version
    to_handshake(session)
    # It answered the probe: silence now is a refusal, not a slow start.
    wait = min(PROBE_TIMEOUT, session.timeout) if timeout is None else timeout
    try:
        return await session.handshake(wait)
    except (RemoteError, PeerTimeout) as exc:
        refused: Exception = exc
    respawn = getattr(session.transport, "respawn", None)
    if callable(respawn):
        log.info(
            "%s serves only 2026-07-28 in this process (initialize: %s); starting it again "
            "with initialize first, for the sampling, elicitation and roots handlers",
            session.name,
            refused,
        )
        old, session.transport = session.transport, respawn()
        await old.aclose()
        await session.transport.start(session)
        try:
            # A new process: its start-up counts, as for any first request.
            return await session.handshake(timeout)
        except (RemoteError, PeerTimeout) as exc:
            refused = exc
        session.requested_version = version
    else:
        session.stateless_version = session.requested_version = version
    log.info("%s refused initialize (%s): it stays on %s", session.name, refused, version)
    return None


def to_handshake(session: ClientSession) -> None:
    """Give up the stateless era: the handshake follows, with the newest handshake version."""
    session.stateless_version = None
    if is_stateless(session.requested_version):
        handshake = [v for v in session.supported_versions if not is_stateless(v)]
        if not handshake:
            raise MCPError(
                f"MCP server {session.name!r} does not speak the stateless revision and this "
                "client supports no handshake revision",
                code=INTERNAL_ERROR,
            )
        session.requested_version = handshake[-1]


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _choose(offered: list[str], supported: tuple[str, ...]) -> str | None:
    """The newest version both sides support: modern ones first, then handshake ones."""
    common = [v for v in supported if v in offered]
    if not common:
        return None
    modern = [v for v in common if is_stateless(v)]
    return max(modern) if modern else max(common)


def _no_common(session: ClientSession, offered: list[str]) -> MCPError:
    return MCPError(
        f"MCP server {session.name!r} supports protocol versions {offered}, none of which this "
        f"client supports ({', '.join(session.supported_versions)})",
        code=INTERNAL_ERROR,
        data={"supported": offered},
    )
