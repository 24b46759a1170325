"""Visibility of what component sources serve: a proxy's upstream components, a gateway's.

A component source (:mod:`.sources`) lists entries, not registered components: the
rules of :mod:`.visibility` apply to them by their key (a tool's or prompt's name,
a resource's URI, a template's URI template, as the serving server lists them) and
by the tags of their ``_meta`` (:func:`listed_tags`: ``_meta.tags``, and
``_meta._fastmcp.tags`` where FastMCP servers publish theirs; MCP itself has no
tags). A hidden entry is left out of the listing, and a call, read or get of it is
refused with the same error as a hidden component of the server's own, before the
request reaches the source; so is a read of a URI that a hidden template matches.

The tags of a call's target are those its latest listing showed
(``Visibility.sourced_tags``); when a tag rule exists and the target was never
listed, the sources are listed first (once: then it is known, untagged when no
source lists it). None of this runs while the server has no rule
(``Visibility.active``), nor for its own components.

A ``completion/complete`` for a hidden prompt or resource template, the server's
own or a source's, is refused as a get of that prompt is (:func:`refuse_completion`):
its suggestions tell what the hidden component takes. The error is ``-32602``, the
code the completion spec gives an invalid prompt name (server/utilities/completion
§ error handling). A completion for a name the server and its sources lack is
answered as before.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from ..errors import InvalidParams
from .sources import listed_by_sources
from .uri_template import UriTemplate

if TYPE_CHECKING:
    from .request import Request
    from .session import ServerSession
    from .visibility import Keep, Visibility, VisibilityRules

__all__ = [
    "KIND_OF_LISTING",
    "Lister",
    "completed",
    "disabled",
    "hidden_sourced",
    "kept_entries",
    "listed_tags",
    "refuse_completion",
    "refuse_sourced",
]

#: A listing's key -> the kind a rule names.
KIND_OF_LISTING: Final = {
    "tools": "tools",
    "resources": "resources",
    "resourceTemplates": "templates",
    "prompts": "prompts",
}
_KEY: Final = {"tools": "name", "prompts": "name", "resources": "uri", "templates": "uriTemplate"}
_LISTING_OF: Final = {kind: listing for listing, kind in KIND_OF_LISTING.items()}
_MAX_TAGS: Final = 10_000  # listed entries whose tags a server remembers


def listed_tags(entry: Mapping[str, Any]) -> frozenset[str]:
    """The tags of a listed entry: ``_meta.tags`` (a list of strings), else
    ``_meta._fastmcp.tags``; none without either."""
    meta = entry.get("_meta")
    if not isinstance(meta, Mapping):
        return frozenset()
    tags = meta.get("tags")
    if tags is None and isinstance(meta.get("_fastmcp"), Mapping):
        tags = meta["_fastmcp"].get("tags")
    if not isinstance(tags, list | tuple):
        return frozenset()
    return frozenset(t for t in tags if isinstance(t, str))


def kept_entries(
    vis: Visibility, keep: Keep | None, listing: str, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The sourced ``entries`` of ``listing`` that ``keep`` keeps; their tags remembered."""
    kind = KIND_OF_LISTING[listing]
    field = _KEY[kind]
    seen = vis.sourced_tags
    if len(seen) > _MAX_TAGS:
        seen.clear()
    out: list[dict[str, Any]] = []
    for entry in entries:
        key = entry.get(field) if isinstance(entry, dict) else None
        if not isinstance(key, str):
            continue
        tags = seen[(kind, key)] = listed_tags(entry)
        if keep is None or keep(kind, key, tags):
            out.append(entry)
    return out


#: ``lister(listing)``: the entries of one listing, from the source(s) in question.
Lister: TypeAlias = Callable[[str], Awaitable[list[dict[str, Any]]]]


@functools.lru_cache(maxsize=1024)
def _template(text: str) -> UriTemplate | None:
    try:
        return UriTemplate(text)
    except ValueError:  # an upstream's template that does not parse matches nothing
        return None


async def hidden_sourced(
    vis: Visibility, own: VisibilityRules | None, kind: str, key: str, lister: Lister
) -> bool:
    """Whether the sourced component ``key`` of ``kind`` is hidden from a caller with rules
    ``own``; ``lister`` lists the sources when the tags (or a resource's template) are
    not known yet. A resource read may be of a URI of a template: that one's rules too."""
    seen = vis.sourced_tags
    tags = seen.get((kind, key))
    if tags is None and (kind == "resources" or vis.rules.by_tag or (own and own.by_tag)):
        # Called before it was listed: its tags are in the listing.
        kept_entries(vis, None, _LISTING_OF[kind], await lister(_LISTING_OF[kind]))
        if kind == "resources":
            kept_entries(vis, None, "resourceTemplates", await lister("resourceTemplates"))
        # Listed by no source: untagged (a key used again is not listed again for it).
        tags = seen.setdefault((kind, key), frozenset())
    if not vis.visible(kind, key, tags or frozenset(), own):
        return True
    if kind != "resources" or tags:
        return False
    for (listed, text), template_tags in list(seen.items()):
        template = _template(text) if listed == "templates" else None
        if template is not None and template.match(key) is not None:  # the first that matches
            return not vis.visible("templates", text, template_tags, own)
    return False


def disabled(kind: str, key: str) -> InvalidParams:
    """The error refusing a hidden component, as the server's own components are refused."""
    if kind == "tools":
        return InvalidParams(f"Tool {key!r} is disabled")
    if kind == "prompts":
        return InvalidParams(f"Prompt {key!r} is disabled")
    if kind == "templates":
        return InvalidParams(f"Resource template {key!r} is disabled", data={"uri": key})
    return InvalidParams(f"Resource {key!r} is disabled", data={"uri": key})


async def refuse_sourced(
    vis: Visibility, session: ServerSession, req: Request, kind: str, key: Any
) -> None:
    """Raise the disabled error when the sourced component ``key`` of ``kind`` is hidden
    from the caller of ``req``."""
    if not isinstance(key, str):
        return
    own = await vis.own_rules(session, req)
    if own is None and not vis.hides_any:
        return

    async def lister(listing: str) -> list[dict[str, Any]]:
        return await listed_by_sources(session, listing)  # type: ignore[arg-type]

    if await hidden_sourced(vis, own, kind, key, lister):
        raise disabled(kind, key)


def completed(params: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, key) of the prompt or resource template whose arguments a
    ``completion/complete`` with ``params`` completes; None when it names neither."""
    ref = params.get("ref")
    if not isinstance(ref, Mapping):
        return None
    kind = ref.get("type")
    if kind == "ref/prompt":
        key = ref.get("name")
        return ("prompts", key) if isinstance(key, str) else None
    if kind == "ref/resource":  # a URI template (a plain resource has nothing to complete)
        key = ref.get("uri")
        return ("templates", key) if isinstance(key, str) else None
    return None


async def refuse_completion(vis: Visibility, session: ServerSession, req: Request) -> None:
    """Raise the disabled error when the prompt or resource template a completion ``req``
    is for is hidden from its caller: the server's own, else what its sources list."""
    target = completed(req.params)
    if target is None:
        return
    own = await vis.own_rules(session, req)
    if own is None and not vis.hides_any:
        return
    kind, key = target
    server = session.server
    found: Any
    if kind == "prompts":
        found = server.prompts.find(key)
    else:
        found = server.resources.template_for(key)
        if found is None and key in server.resources.static:
            kind, found = "resources", server.resources.static[key]
    if found is not None:
        if not vis.visible(kind, key, found.tags, own):
            raise disabled(kind, key)
        return
    if not server.component_sources:
        return  # a name nobody serves: no suggestions, as before

    async def lister(listing: str) -> list[dict[str, Any]]:
        return await listed_by_sources(session, listing)  # type: ignore[arg-type]

    if await hidden_sourced(vis, own, kind, key, lister):
        raise disabled(kind, key)
