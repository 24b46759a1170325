"""Whether a resource's updates may reach a caller: the visibility rules' part.

A resource the visibility rules hide from a caller (``enabled=False``, include or
exclude tags, ``server.disable(...)``, a mounted child's own rules, the caller's
session rules: :mod:`.visibility`) is refused when read; its updates tell as much as a
read (that it changed, when), so they are withheld too, and a subscription to it is
treated as one to a URI nobody serves: accepted (handshake-era ``resources/subscribe``
answers ``{}``; a 2026-07-28 ``subscriptions/listen`` acknowledges it, as it does any
URI, since a resource may appear later) but never heard, nor followed on an upstream
(a proxy's, a gateway's). The rules are asked again for each update, so that one
hidden while a stream is open (session rules changed mid-stream) is heard no more,
and one shown again is heard again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from .sourced_visibility import hidden_sourced
from .sources import listed_by_sources

if TYPE_CHECKING:
    from .request import Request
    from .session import ServerSession
    from .visibility import Visibility, VisibilityRules

__all__ = ["UPDATED", "HidingSource", "hidden_uris", "hides_update"]

#: The notification whose delivery the rules decide.
UPDATED: Final = "notifications/resources/updated"


async def hides_update(session: ServerSession, req: Request | None, uri: Any) -> bool:
    """Whether the rules hide the resource ``uri`` from the caller of ``req`` on
    ``session`` (None: the session's own caller), so that its update is not sent."""
    if not isinstance(uri, str):
        return False
    vis = session.server.visibility
    if vis.active:  # else no rule of the server's at all: nothing to look up
        own = await vis.own_rules(session, req)
        if (own is not None or vis.hides_any) and await _hidden(vis, own, session, uri):
            return True
    return await _hidden_by_sources(session, uri)


async def hidden_uris(session: ServerSession, req: Request | None, uris: Iterable[Any]) -> set[str]:
    """The URIs of ``uris`` the rules hide from the caller of ``req`` on ``session``."""
    return {u for u in uris if isinstance(u, str) and await hides_update(session, req, u)}


async def _hidden(
    vis: Visibility, own: VisibilityRules | None, session: ServerSession, uri: str
) -> bool:
    # As resources/read decides (ResourceManager.read_with_hint): the server's resource
    # of that URI, else the first template matching it, else what its sources list.
    found = session.server.resources.serving(uri)
    if found is not None:
        kind, key, definition = found
        return not vis.visible(kind, key, definition.tags, own)
    if not session.server.component_sources:
        return False  # a URI nobody serves: nothing is hidden

    async def lister(listing: str) -> list[dict[str, Any]]:
        return await listed_by_sources(session, listing)  # type: ignore[arg-type]

    return await hidden_sourced(vis, own, "resources", uri, lister)


async def _hidden_by_sources(session: ServerSession, uri: str) -> bool:
    # A mounted server's own rules, asked each time: they may change while subscribed.
    for source in session.server.component_sources:
        if isinstance(source, HidingSource) and await source.hides_resource(session, uri):
            return True
    return False


@runtime_checkable
class HidingSource(Protocol):
    """A component source with visibility rules of its own (a mounted server's:
    ``compose.prefixed.PrefixedSource``), asked whether they hide a resource whose
    update is about to be sent."""

    async def hides_resource(self, session: ServerSession, uri: str) -> bool:
        """Whether this source's own rules hide its resource ``uri`` (the URI it is
        listed under) from ``session``'s caller."""
        ...
