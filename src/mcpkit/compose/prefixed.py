"""A component source served under a namespace: listings renamed, requests routed back.

A mount copies the child's *registered* components (:mod:`.mount`); what a child
serves through component sources (:mod:`mcpkit.server.sources`: a proxy's upstream)
differs per session and cannot be copied. :class:`PrefixedSource` wraps such a
source for the parent instead: its listings come out under the namespace, by the
rules of :mod:`.naming`, and a request for a name or URI under the namespace goes
to the wrapped source under the child's own name. The gateway (:mod:`.gateway`)
routes to its upstreams with the same functions.

The child's own rules (``child.disable(...)``: its ``visibility``) hold for what its
sources serve, by the child's names and the tags of the entries' ``_meta``
(:mod:`mcpkit.server.sourced_visibility`): hidden entries are left out of the
listings, and a request for one (a completion of its arguments too) is refused
under the parent's name.

A 2026-07-28 ``subscriptions/listen`` on the parent reaches the wrapped source when it
is a :class:`ListenForwarder` (a proxy, a gateway): the stream's URIs under the
namespace are handed down under the child's own names, each mapped to the URI the
stream knows it by, so the updates come back namespaced; a wrapped ``PrefixedSource``
(a mount of a mount) forwards the same way, one namespace less each level.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ..server.heard_updates import HidingSource
from ..server.request import Request
from ..server.session import ServerSession
from ..server.sourced_visibility import (
    KIND_OF_LISTING,
    completed,
    disabled,
    hidden_sourced,
    kept_entries,
)
from ..server.sources import ComponentSource
from ..server.visibility import Visibility
from .naming import SEPARATOR, prefixed_name, prefixed_uri, unprefixed_name, unprefixed_uri

if TYPE_CHECKING:
    from ..server.stateless.listen import Listener

__all__ = [
    "ListenForwarder",
    "PrefixedSource",
    "SubscribedAs",
    "namespace_of",
    "own_params",
    "prefixed_entries",
    "prefixed_read",
    "request_with",
]

log = logging.getLogger("mcpkit.compose")

#: The key of a listing entry that is namespaced, per kind.
NAMED: Final = {
    "tools": "name",
    "prompts": "name",
    "resources": "uri",
    "resourceTemplates": "uriTemplate",
}
_BY_NAME: Final = frozenset({"tools/call", "prompts/get"})
_BY_URI: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


def _name_space(name: Any) -> str | None:
    # A namespace holds no separator (naming.py), so the first one ends it.
    if not isinstance(name, str):
        return None
    namespace, sep, own = name.partition(SEPARATOR)
    return namespace if sep and own else None


def _uri_space(uri: Any) -> str | None:
    if not isinstance(uri, str):
        return None
    _scheme, sep, rest = uri.partition("://")
    namespace, slash, _own = rest.partition("/")
    return namespace if sep and slash and namespace else None


def namespace_of(method: str, params: dict[str, Any]) -> str | None:
    """The namespace the name or URI of a ``method`` request falls under (None: none)."""
    if method in _BY_NAME:
        return _name_space(params.get("name"))
    if method in _BY_URI:
        return _uri_space(params.get("uri"))
    if method == "completion/complete":
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        if ref.get("type") == "ref/prompt":
            return _name_space(ref.get("name"))
        return _uri_space(ref.get("uri"))
    return None


def own_params(namespace: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """``params`` of a ``method`` request under the child's own names (None: not its)."""
    if method in _BY_NAME:
        name = params.get("name")
        own = unprefixed_name(namespace, name) if isinstance(name, str) else None
        return None if not own else {**params, "name": own}
    if method in _BY_URI:
        uri = params.get("uri")
        own = unprefixed_uri(namespace, uri) if isinstance(uri, str) else None
        return None if own is None else {**params, "uri": own}
    if method == "completion/complete":
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        key = "name" if ref.get("type") == "ref/prompt" else "uri"
        value = ref.get(key)
        if not isinstance(value, str):
            return None
        own = (
            unprefixed_name(namespace, value) if key == "name" else unprefixed_uri(namespace, value)
        )
        return None if not own else {**params, "ref": {**ref, key: own}}
    return None


def prefixed_entries(
    namespace: str,
    kind: str,
    entries: list[Any],
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """Listing ``entries`` of ``kind`` under ``namespace``; ``keep`` may leave some out."""
    key = NAMED[kind]
    out: list[dict[str, Any]] = []
    for entry in entries:
        own = entry.get(key) if isinstance(entry, dict) else None
        if not isinstance(own, str) or (keep is not None and not keep(entry)):
            continue
        if key == "name":
            out.append({**entry, key: prefixed_name(namespace, own)})
            continue
        uri = prefixed_uri(namespace, own)
        if uri is None:  # nothing to namespace it under (naming.py): not served
            log.debug("%s %r under %r has no 'scheme://': not served", kind, own, namespace)
            continue
        out.append({**entry, key: uri})
    return out


def prefixed_read(namespace: str, result: dict[str, Any]) -> dict[str, Any]:
    """A ``resources/read`` result with its contents' URIs under ``namespace``."""
    contents = result.get("contents")
    if not isinstance(contents, list):
        return result
    renamed = []
    for content in contents:
        uri = content.get("uri") if isinstance(content, dict) else None
        mounted = prefixed_uri(namespace, uri) if isinstance(uri, str) else None
        renamed.append(content if mounted is None else {**content, "uri": mounted})
    return {**result, "contents": renamed}


def request_with(request: Request, params: dict[str, Any]) -> Request:
    """``request`` with other ``params``: its id, stream, auth, ``_meta`` and progress
    token unchanged, so progress and server-to-client requests still find the caller."""
    return Request(
        request.session,
        {"id": request.id, "method": request.method, "params": params},
        request.send_raw,
        request.auth_info,
    )


# The request methods a hidden component is refused for: (kind, field naming it).
_REFUSED: Final = {
    "tools/call": ("tools", "name"),
    "prompts/get": ("prompts", "name"),
    "resources/read": ("resources", "uri"),
}


@runtime_checkable
class SubscribedAs(Protocol):
    """A component source told the name a session subscribed to one of its resources by,
    in a server it is mounted in (a handshake-era ``resources/subscribe``), so that the
    update goes down under that name."""

    def subscribed_as(self, session: ServerSession, uri: str, downstream: str) -> None:
        """``session`` subscribed to this source's ``uri`` as ``downstream``."""
        ...


@runtime_checkable
class ListenForwarder(Protocol):
    """A component source that follows a ``subscriptions/listen`` of a server it is
    mounted in (the hook :class:`PrefixedSource` asks the mounted server's sources for)."""

    async def forward_listen(
        self, listener: Listener, granted: Mapping[str, Any], uris: Mapping[str, str]
    ) -> None:
        """Follow, for ``listener`` (a stream of the mounting server, granted
        ``granted``), the list changes it was granted and the resources of ``uris``:
        this source's own URI -> the URI the stream knows it by, sent back in each
        ``notifications/resources/updated``. Until the stream ends (``listener.on_close``);
        awaited before the acknowledgment, as ``ListeningSource.listen`` is."""
        ...


class PrefixedSource:
    """``source`` (a mounted server's component source) served under ``namespace``, under
    the rules of ``visibility`` (the mounted server's own; None: none)."""

    def __init__(
        self, source: ComponentSource, namespace: str, *, visibility: Visibility | None = None
    ) -> None:
        self.source = source
        self.namespace = namespace
        self.kinds = frozenset(source.kinds)
        self.visibility = visibility

    def keep(self, kind: str, key: str, tags: frozenset[str]) -> bool:
        """Whether the mounted server's own rules show this component to every caller."""
        assert self.visibility is not None
        return self.visibility.visible(kind, key, tags, None)

    async def refuse(
        self, session: ServerSession, request: Request, params: dict[str, Any]
    ) -> None:
        """Raise the disabled error when the mounted server's rules hide the target."""
        vis = self.visibility
        if vis is None or not vis.hides_any:
            return
        if request.method == "completion/complete":  # of a hidden prompt or template
            target, shown = completed(params), completed(request.params)
        elif request.method in _REFUSED:
            kind, field = _REFUSED[request.method]
            key, parents = params.get(field), request.params.get(field)
            target = (kind, key) if isinstance(key, str) else None
            shown = (kind, str(parents))
        else:
            return
        if target is None or shown is None:
            return

        async def lister(listing: str) -> list[dict[str, Any]]:
            return await self.source.list_components(session, listing)

        if await hidden_sourced(vis, None, *target, lister):
            raise disabled(*shown)

    async def hides(self, session: ServerSession, uri: str) -> bool:
        """Whether the mounted server's own rules hide its resource ``uri``."""
        vis = self.visibility
        if vis is None or not vis.hides_any:
            return False

        async def lister(listing: str) -> list[dict[str, Any]]:
            return await self.source.list_components(session, listing)

        return await hidden_sourced(vis, None, "resources", uri, lister)

    async def hides_resource(self, session: ServerSession, uri: str) -> bool:
        """Whether the rules of the mounted server (or of one it mounts) hide the
        resource listed as ``uri``: the hook (``server.heard_updates.HidingSource``) the
        mounting server asks before sending an update of it."""
        own = unprefixed_uri(self.namespace, uri)
        if own is None:
            return False
        if await self.hides(session, own):
            return True
        source = self.source
        return isinstance(source, HidingSource) and await source.hides_resource(session, own)

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        entries = await self.source.list_components(session, kind)
        if self.visibility is not None and self.visibility.hides_any and kind in KIND_OF_LISTING:
            entries = kept_entries(self.visibility, self.keep, kind, entries)
        return prefixed_entries(self.namespace, kind, entries)

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        params = own_params(self.namespace, request.method, request.params)
        if params is None:
            return None
        await self.refuse(session, request, params)
        if request.method == "resources/subscribe" and await self.hides(session, params["uri"]):
            return {}  # accepted as an unknown URI is, never followed (server/heard_updates.py)
        if request.method == "resources/subscribe":  # before: an update may come at once
            self.subscribed_as(session, request.params["uri"], request.params["uri"])
        result = await self.source.serve(session, request_with(request, params))
        if result is not None and request.method == "resources/read":
            return prefixed_read(self.namespace, result)
        return result

    def subscribed_as(self, session: ServerSession, uri: str, downstream: str) -> None:
        """Pass the name down to the wrapped source, under the child's name of ``uri``."""
        source = self.source
        own = unprefixed_uri(self.namespace, uri)
        if own is not None and isinstance(source, SubscribedAs):
            source.subscribed_as(session, own, downstream)

    def session_closed(self, session: ServerSession) -> None:
        self.source.session_closed(session)

    async def listen(self, listener: Listener, granted: Mapping[str, Any]) -> None:
        """A stream of the mounting server: forwarded to the wrapped source (its
        ``ListeningSource`` part, see :class:`ListenForwarder`)."""
        uris = granted.get("resourceSubscriptions") or ()
        await self.forward_listen(listener, granted, {u: u for u in uris if isinstance(u, str)})

    async def forward_listen(
        self, listener: Listener, granted: Mapping[str, Any], uris: Mapping[str, str]
    ) -> None:
        """``uris`` (the parent's URIs -> the stream's) under the child's own names,
        handed to the wrapped source when it forwards listens; nothing otherwise."""
        source = self.source
        if not isinstance(source, ListenForwarder):
            return
        own: dict[str, str] = {}
        for uri, down in uris.items():
            child = unprefixed_uri(self.namespace, uri)
            # One the mounted server's own rules hide is not followed (as for a request).
            if child is not None and not await self.hides(listener.ctx.session, child):
                own[child] = down
        await source.forward_listen(listener, granted, own)
