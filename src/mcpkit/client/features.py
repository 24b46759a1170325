"""Mastra's feature namespaces of ``MCPClient``: ``resources``, ``prompts``, handlers.

Each method names its server (the key of ``servers``). Listings cover every
connected server at once and skip (with a warning) a server that fails, so
one broken server does not hide the others; calls to one server raise its
error. Handlers may be sync or async.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeAlias

import orjson

from .connection import ListKind, ServerConnection
from .handlers import ElicitationHandler, RootsSpec, SamplingHandler

__all__ = ["ElicitationAPI", "PromptsAPI", "ResourcesAPI", "RootsAPI", "SamplingAPI"]

log = logging.getLogger("mcpkit.client")


class Owner(Protocol):
    """What the namespaces use of the :class:`~.mcp_client.MCPClient` that owns them.

    A protocol rather than the class: ``MCPClient`` builds the namespaces, so
    naming it here would make the two modules import each other.
    """

    def _connection(self, server_name: str) -> ServerConnection: ...

    async def _ready(self, server_name: str) -> ServerConnection: ...

    async def _usable(self) -> list[ServerConnection]: ...


Listing: TypeAlias = dict[str, list[dict[str, Any]]]
"""``{server: [item, ...]}``."""


async def list_all(owner: Owner, kind: ListKind) -> Listing:
    """``{server: items}`` for every usable server, listed concurrently."""
    connections = await owner._usable()
    results = await asyncio.gather(
        *(conn.list(kind) for conn in connections), return_exceptions=True
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for conn, result in zip(connections, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            log.warning("listing %s of MCP server %r failed: %s", kind, conn.name, result)
            continue
        out[conn.name] = result
    return out


class ResourcesAPI:
    """``mcp.resources``: resources and templates of every server."""

    def __init__(self, owner: Owner) -> None:
        self._owner = owner

    async def list(self) -> Listing:
        """``{server: [Resource, ...]}``."""
        return await list_all(self._owner, "resources")

    async def templates(self) -> Listing:
        """``{server: [ResourceTemplate, ...]}``."""
        return await list_all(self._owner, "resource_templates")

    async def read(
        self, server_name: str, uri: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """The ``ReadResourceResult`` (its ``contents`` list) of ``uri`` on ``server_name``."""
        conn = await self._owner._ready(server_name)
        return await conn.client.read_resource(uri, timeout=timeout)

    async def subscribe(self, server_name: str, uri: str) -> None:
        """Ask ``server_name`` for ``notifications/resources/updated`` about ``uri``."""
        conn = await self._owner._ready(server_name)
        await conn.client.subscribe_resource(uri)

    async def unsubscribe(self, server_name: str, uri: str) -> None:
        conn = await self._owner._ready(server_name)
        await conn.client.unsubscribe_resource(uri)

    def on_updated(self, server_name: str, handler: Callable[[str], Any]) -> None:
        """Call ``handler(uri)`` when a subscribed resource of ``server_name`` changes."""
        self._owner._connection(server_name).updated_handlers.append(handler)

    def on_list_changed(self, server_name: str, handler: Callable[[], Any]) -> None:
        """Call ``handler()`` when ``server_name``'s resource list changes."""
        self._owner._connection(server_name).list_changed_handlers["resources"].append(handler)


class PromptsAPI:
    """``mcp.prompts``: prompts of every server."""

    def __init__(self, owner: Owner) -> None:
        self._owner = owner

    async def list(self) -> Listing:
        """``{server: [Prompt, ...]}``."""
        return await list_all(self._owner, "prompts")

    async def get(
        self,
        *,
        server_name: str,
        name: str,
        args: Mapping[str, Any] | None = None,
        version: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """``{"prompt": Prompt, "messages": [...]}`` (and ``description`` when given).

        Prompt arguments are strings on the wire (server/prompts § getting a
        prompt); other values are sent as their JSON text.
        """
        conn = await self._owner._ready(server_name)
        arguments = None if args is None else {k: _as_text(v) for k, v in args.items()}
        result = await conn.client.get_prompt(name, arguments, version=version, timeout=timeout)
        out: dict[str, Any] = {
            "prompt": await _find_prompt(conn, name, version),
            "messages": result.get("messages") or [],
        }
        if isinstance(result.get("description"), str):
            out["description"] = result["description"]
        return out

    def on_list_changed(self, server_name: str, handler: Callable[[], Any]) -> None:
        """Call ``handler()`` when ``server_name``'s prompt list changes."""
        self._owner._connection(server_name).list_changed_handlers["prompts"].append(handler)


class ElicitationAPI:
    """``mcp.elicitation.on_request(server, handler)``: answer a server's questions to the user.

    ``handler(params)`` gets the request (``message``, ``requestedSchema``) and
    returns ``{"action": "accept" | "decline" | "cancel", "content": {...}}``.
    """

    def __init__(self, owner: Owner) -> None:
        self._owner = owner

    def on_request(self, server_name: str, handler: ElicitationHandler) -> None:
        self._owner._connection(server_name).set_handler("elicitation_handler", handler)


class SamplingAPI:
    """``mcp.sampling.on_request(server, handler)``: ``handler(params)`` returns a CreateMessageResult."""

    def __init__(self, owner: Owner) -> None:
        self._owner = owner

    def on_request(self, server_name: str, handler: SamplingHandler) -> None:
        self._owner._connection(server_name).set_handler("sampling_handler", handler)


class RootsAPI:
    """``mcp.roots``: the roots (``file://`` URIs) each server may work in."""

    def __init__(self, owner: Owner) -> None:
        self._owner = owner

    def on_request(self, server_name: str, handler: Callable[[], Awaitable[Any] | Any]) -> None:
        """``handler()`` returns the roots whenever ``server_name`` asks (``roots/list``)."""
        self._owner._connection(server_name).set_handler("roots", handler)

    async def set(self, server_name: str, roots: RootsSpec) -> None:
        """Replace the roots; a connected server is told (``notifications/roots/list_changed``)."""
        conn = self._owner._connection(server_name)
        conn.set_handler("roots", roots)
        if conn.alive:
            await conn.client.set_roots(roots)


async def _find_prompt(conn: ServerConnection, name: str, version: str | None) -> dict[str, Any]:
    try:
        prompts = await conn.list("prompts")
    except Exception as exc:  # the prompt itself was fetched: do not fail for its listing
        log.debug("could not list the prompts of %r: %s", conn.name, exc)
        prompts = []
    matches = [p for p in prompts if p.get("name") == name]
    if version is not None:
        matches = [p for p in matches if p.get("version") == version] or matches
    return dict(matches[-1]) if matches else {"name": name}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()
