"""Which OAuth scopes a request needs: per tool, resource and prompt.

A tool, resource (static or template) or prompt registered with ``scopes=[...]``
needs every one of those scopes in the caller's access token. Three places ask:

- :func:`required_scopes`: the HTTP layer (``mcpkit.auth``) asks it before it
  dispatches a request, to answer ``403`` with ``WWW-Authenticate: Bearer
  error="insufficient_scope", scope="..."`` so the client can step up
  (MCP authorization § scope challenge handling, RFC 6750 § 3.1);
- :func:`enforce`: the method handlers check again, against the item they are
  about to run (defence in depth: the same rule on every transport and era,
  whatever sits in front of the server);
- :func:`visible`: the list methods leave out what the caller cannot use.

A resource's scopes also guard ``resources/subscribe`` and the 2026-07-28
``subscriptions/listen`` filter, and ``notifications/resources/updated`` reaches a
session only when the scopes granted to its subscriber cover them
(``ResourceManager.may_hear``).

Scopes are enforced only when the request carries auth info. A request without
any (stdio, in memory, HTTP without ``auth=``) is not checked: the
specification leaves stdio unauthenticated (credentials come from the
environment), and on a protected HTTP server a request without a valid token
never reaches the server (``401``). A server that registers no scoped item pays
nothing: every check starts with an empty-dict lookup or a false flag.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..auth.info import AuthInfo
from ..errors import InsufficientScope, RegistrationError

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = [
    "NO_SCOPES",
    "checked_scopes",
    "completion_scopes",
    "enforce",
    "granted_scopes",
    "parse_scopes",
    "required_scopes",
    "visible",
]

NO_SCOPES: Final[frozenset[str]] = frozenset()

# RFC 6749 § 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), tokens separated by
# spaces on the wire, so a space (or a quote or backslash) inside one cannot be sent.
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def parse_scopes(scopes: object, problems: list[str]) -> frozenset[str]:
    """``scopes=`` of a registration as a set; appends a problem for each bad entry.

    ``None`` or an empty sequence means none. A single string is refused rather
    than read as its characters (``scopes="mcp:write"`` is the usual slip).
    """
    if scopes is None:
        return NO_SCOPES
    if isinstance(scopes, str | bytes) or not isinstance(scopes, Iterable):
        problems.append(
            f"scopes must be a list of scope strings, as scopes=[{scopes!r}], "
            f"not {type(scopes).__name__}"
        )
        return NO_SCOPES
    out: list[str] = []
    for scope in scopes:
        if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
            problems.append(
                f"scope {scope!r} is not a scope token: a non-empty string of printable "
                "ASCII without spaces, quotes or backslashes (RFC 6749 § 3.3)"
            )
        else:
            out.append(scope)
    return frozenset(out)


def checked_scopes(where: str, scopes: object) -> frozenset[str]:
    """``scopes`` as a set, or a :class:`RegistrationError` naming ``where``."""
    problems: list[str] = []
    out = parse_scopes(scopes, problems)
    if problems:
        raise RegistrationError([f"{where}: {p}" for p in problems])
    return out


def granted_scopes(auth_info: Any) -> Collection[str]:
    """The scopes the request's token grants.

    An :class:`AuthInfo` says so in ``scopes``; any other object an ASGI
    middleware supplied is read the same way, a mapping by its ``scopes`` or
    ``scope`` key (a space-separated string, as the OAuth ``scope`` claim, is
    split). An object without scopes grants none: refusing is the safe reading
    of a principal nobody described.
    """
    if type(auth_info) is AuthInfo:
        return auth_info.scopes
    if isinstance(auth_info, Mapping):  # a claims-like dict: "scopes", or OAuth's "scope"
        scopes = auth_info.get("scopes", auth_info.get("scope"))
    else:
        scopes = getattr(auth_info, "scopes", None)
    if isinstance(scopes, str):
        return frozenset(scopes.split())
    if isinstance(scopes, Iterable):
        return frozenset(s for s in scopes if isinstance(s, str))
    return NO_SCOPES


def enforce(auth_info: Any, needed: frozenset[str], what: str) -> None:
    """Raise :class:`InsufficientScope` when the caller lacks any of ``needed``.

    No auth info (stdio, in memory, unprotected HTTP): nothing is enforced (see the
    module docstring). The error lists every scope the item needs, not only the
    missing ones, so a client that steps up asks for all of them at once
    (authorization § scope challenge handling: keep previously granted scopes).
    """
    if not needed or auth_info is None:
        return
    if not needed.issubset(granted_scopes(auth_info)):
        shown = sorted(needed)
        raise InsufficientScope(
            shown, f"insufficient scope: {what} needs the scope(s) {' '.join(shown)}"
        )


def visible(
    items: list[dict[str, Any]],
    key: str,
    scoped: Mapping[str, frozenset[str]],
    auth_info: Any,
) -> list[dict[str, Any]]:
    """``items`` (listing entries) without those whose scopes the caller lacks.

    ``key`` names the entry's identity (``name``, ``uri``, ``uriTemplate``) and
    ``scoped`` maps the scoped ones to their scopes. Without auth info, or when
    nothing is scoped, ``items`` itself is returned: the shared listing caches
    are never filtered in place.
    """
    if not scoped or auth_info is None:
        return items
    granted = granted_scopes(auth_info)
    return [i for i in items if (s := scoped.get(i.get(key))) is None or s.issubset(granted)]  # type: ignore[arg-type]


def required_scopes(
    server: MCPServer, method: str, params: Mapping[str, Any] | None
) -> frozenset[str]:
    """The scopes a ``method`` call with ``params`` needs on ``server`` (empty: none).

    ``tools/call`` by tool name, ``resources/read`` and ``resources/subscribe`` by
    static URI or else the first matching template (the order ``resources/read``
    serves them in), ``prompts/get``
    by name and version, ``completion/complete`` by the prompt or template it
    completes. Every other method, an unknown name and a malformed request need
    none: the handler reports those itself.
    """
    if not isinstance(params, Mapping):
        return NO_SCOPES
    if method == "tools/call":
        scoped = server.tools.scoped
        if not scoped:
            return NO_SCOPES
        name = params.get("name")
        return scoped.get(name, NO_SCOPES) if isinstance(name, str) else NO_SCOPES
    if method == "resources/read" or method == "resources/subscribe":
        # A subscription's updates say what a read would (that it changed, and when).
        uri = params.get("uri")
        if not server.resources.any_scoped or not isinstance(uri, str):
            return NO_SCOPES
        return server.resources.scopes_for(uri)
    if method == "prompts/get":
        name = params.get("name")
        if not server.prompts.any_scoped or not isinstance(name, str):
            return NO_SCOPES
        version = params.get("version")
        if not version:  # as prompts/get reads it: the param, else _meta.version
            meta = params.get("_meta")
            version = meta.get("version") if isinstance(meta, Mapping) else None
        prompt = server.prompts.find(name, version if isinstance(version, str) else None)
        return prompt.scopes if prompt is not None else NO_SCOPES
    if method == "completion/complete":
        return completion_scopes(server, params)
    return NO_SCOPES


def completion_scopes(server: MCPServer, params: Mapping[str, Any]) -> frozenset[str]:
    """The scopes of the prompt or resource template whose arguments are completed:
    suggestions can tell as much as the item itself, so they need the same scopes."""
    ref = params.get("ref")
    if not isinstance(ref, Mapping):
        return NO_SCOPES
    kind = ref.get("type")
    if kind == "ref/prompt" and server.prompts.any_scoped:
        name = ref.get("name")
        prompt = server.prompts.find(name) if isinstance(name, str) else None
        return prompt.scopes if prompt is not None else NO_SCOPES
    if kind == "ref/resource" and server.resources.any_scoped:
        uri = ref.get("uri")
        if not isinstance(uri, str):
            return NO_SCOPES
        item = server.resources.template_for(uri) or server.resources.static.get(uri)
        return item.scopes if item is not None else NO_SCOPES
    return NO_SCOPES
