"""The stateless 2026-07-28 revision, client side: envelope, probe and header rules.

Nothing here awaits or touches a socket except :func:`discover`, which drives a
:class:`~mcpkit.client.session.ClientSession` through the era probe. The pieces:

* :func:`envelope`: the per-request ``_meta`` every modern request carries
  (2026-07-28 basic § ``_meta``: protocol version and client capabilities are
  required, client info SHOULD be sent, the log level opts in to
  ``notifications/message`` for that request only).
* :func:`discover`: ``server/discover`` as the era probe (2026-07-28
  basic/versioning § backward compatibility): a ``DiscoverResult`` or a
  recognized modern error means a modern server; any other error, or silence,
  means a legacy one, and the session falls back to ``initialize``.
* :func:`http_headers`, :func:`encode_header_value`, :func:`param_headers_of_tool`:
  the Streamable HTTP request metadata headers (2026-07-28
  transports/streamable-http § request metadata): ``MCP-Protocol-Version``,
  ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-{Name}`` from ``x-mcp-header``.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    MCPError,
    PeerTimeout,
    RemoteError,
)
from ..protocol.http_headers import header_annotations
from ..protocol.versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS

if TYPE_CHECKING:
    from .handlers import ProgressCallback
    from .session import ClientSession

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
    "encode_header_value",
    "envelope",
    "http_headers",
    "is_stateless",
    "param_headers_of_tool",
    "probe_won",
    "with_input",
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
        _legacy(session)
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
                    _legacy(session)
                    return probe
            result = await probe
        except PeerTimeout:
            log.info("%s did not answer server/discover: a legacy server", session.name)
            _legacy(session)
            return None
        except RemoteError as exc:
            if exc.code not in MODERN_ERRORS:
                log.info("server/discover failed (%s): a legacy server", exc)
                _legacy(session)
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
                _legacy(session)
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
            _legacy(session)
            return None
        if not is_stateless(chosen):
            session.requested_version = chosen
            _legacy(session)
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


def _legacy(session: ClientSession) -> None:
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


# -- HTTP request metadata headers ------------------------------------------------------------
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 § 5.6.2 tchar
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
_SAFE_INT: Final = 2**53 - 1
_NAMED: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def encode_header_value(value: str) -> str:
    """A header-safe value: as is when plain visible ASCII, else ``=?base64?…?=``.

    Value encoding: non-ASCII, control characters (tab included), leading or trailing
    whitespace, and values that look like the sentinel itself are Base64-encoded.
    """
    plain = (
        all(" " <= ch <= "~" for ch in value)
        and value == value.strip(" ")
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    if plain:
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def param_headers_of_tool(tool: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]] | str:
    """A tool's ``x-mcp-header`` annotations as ``(property path, name)`` pairs.

    Returns the reason as a string when an annotation breaks the schema extension's
    constraints; the client must then drop the tool from ``tools/list``.
    """
    found, misplaced = header_annotations(tool.get("inputSchema"))
    if misplaced:
        return f"x-mcp-header outside a chain of 'properties' ({misplaced[0]})"
    seen: set[str] = set()
    out: list[tuple[tuple[str, ...], str]] = []
    for path, name, node in found:
        where = ".".join(path)
        if not isinstance(name, str) or not name:
            return f"empty x-mcp-header on {where!r}"
        if not _TOKEN.match(name):
            return f"x-mcp-header {name!r} on {where!r} is not an HTTP field-name token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is used twice"
        seen.add(name.lower())
        kind = node.get("type")
        if kind not in _HEADER_TYPES:
            return f"x-mcp-header {name!r} on {where!r} has type {kind!r}, not a primitive"
        out.append((path, name))
    return out


def _param_value(value: Any) -> str | None:
    if value is None:
        return None
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -_SAFE_INT <= value <= _SAFE_INT else None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def http_headers(
    message: Mapping[str, Any],
    tool_headers: Mapping[str, list[tuple[tuple[str, ...], str]]],
) -> dict[str, str]:
    """The request metadata headers of one modern message (empty for a legacy one)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if not isinstance(version, str) or not isinstance(params, dict):
        return {}
    method = message.get("method")
    headers = {"mcp-protocol-version": version}
    if isinstance(method, str):
        headers["mcp-method"] = method
        field = _NAMED.get(method)
        name = params.get(field) if field else None
        if isinstance(name, str):
            headers["mcp-name"] = encode_header_value(name)
        if method == "tools/call" and isinstance(name, str):
            arguments = params.get("arguments")
            for path, header in tool_headers.get(name, ()):
                value: Any = arguments
                for step in path:
                    value = value.get(step) if isinstance(value, dict) else None
                text = _param_value(value)
                if text is not None:
                    headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers


# -- multi round-trip requests ----------------------------------------------------------------
# A server that keeps asking must not make a call loop forever (mrtr § server requirements:
# the server MAY ask again; the client bounds how often it answers).
MAX_INPUT_ROUNDS: Final = 10
_MRTR_PARAMS: Final = ("inputResponses", "requestState")


async def with_input(
    session: ClientSession,
    method: str,
    params: dict[str, Any],
    *,
    timeout: float | None,
    progress: ProgressCallback | None,
    first: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``method`` until it completes, answering each ``input_required`` result.

    2026-07-28 basic/patterns/mrtr § client requirements: every input request is
    answered by the session's sampling, elicitation or roots handler; the retry is a
    new request (new id) with the original params, the ``inputResponses`` and the
    ``requestState`` echoed byte for byte (omitted when the server gave none). A
    result without ``resultType`` is complete (changelog, major change 8).
    """
    current = params
    for _ in range(MAX_INPUT_ROUNDS):
        if first is not None:
            result, first = first, None
        else:
            result = await session.request(method, current, timeout=timeout, progress=progress)
        if result.get("resultType") != "input_required":
            return result
        current = {k: v for k, v in params.items() if k not in _MRTR_PARAMS}
        requests = result.get("inputRequests")
        if isinstance(requests, dict) and requests:
            keys = list(requests)
            answers = await asyncio.gather(
                *(_fulfil(session, method, requests[key]) for key in keys)
            )
            current["inputResponses"] = dict(zip(keys, answers, strict=True))
        state = result.get("requestState")
        if isinstance(state, str):
            current["requestState"] = state
    raise MCPError(
        f"MCP server {session.name!r} still asked for input after {MAX_INPUT_ROUNDS} rounds "
        f"of {method}",
        code=INTERNAL_ERROR,
    )


async def _fulfil(session: ClientSession, origin: str, request: Any) -> dict[str, Any]:
    method = request.get("method") if isinstance(request, dict) else None
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(method, str):
        raise MCPError(
            f"MCP server {session.name!r} sent a malformed input request for {origin}: "
            f"{request!r:.200}",
            code=INTERNAL_ERROR,
        )
    try:
        return await session.handlers.fulfil(method, params if isinstance(params, dict) else {})
    except MCPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        raise MCPError(
            f"MCP server {session.name!r} needs {method} to complete {origin}, and this client "
            "has no handler for it",
            code=INTERNAL_ERROR,
        ) from exc
