"""The typed MCP methods of :class:`~.session.ClientSession`: tools, resources, prompts
and utilities, written over its ``request``.

Kept apart from the session's machinery (ids, futures, timeouts, the handshake and
the era probe) so that each module stays small; :class:`SessionAPI` is only ever
used as ``ClientSession``'s base; what its methods use of the session is declared
on it for the type checker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..errors import HEADER_MISMATCH, INTERNAL_ERROR, RemoteError
from .cache import credential_of
from .handlers import ProgressCallback, RootsSpec
from .results import complete
from .stateless import input_required

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["MAX_PAGES", "SessionAPI"]

# A server that keeps answering with a cursor must not make a listing loop forever.
MAX_PAGES: Final = 1000


class SessionAPI:
    """Tools, resources, prompts and utilities, written once for ``ClientSession``
    and ``Client``.

    Each method works on :attr:`_target`, the live session: the session itself for
    ``ClientSession``, the connected session for ``Client``. So ``Client`` needs no
    copy of these methods, and both keep their full signatures for type checkers
    and editors.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def _target(self) -> ClientSession: ...

    # -- high-level API: tools ----------------------------------------------------------------
    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool, following ``nextCursor`` across pages."""
        s = self._target
        return await s._list_all("tools/list", "tools", timeout)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Call a tool; returns the ``CallToolResult`` dict (``isError`` is not raised)."""
        s = self._target
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if meta:
            params["_meta"] = dict(meta)
        try:
            result = await input_required.with_input(
                s, "tools/call", params, timeout=timeout, progress=progress
            )
        except RemoteError as exc:
            if exc.code != HEADER_MISMATCH or s.stateless_version is None:
                raise
            # Streamable HTTP § custom headers: the Mcp-Param-* headers did not match the
            # tool's x-mcp-header annotations (not listed yet, or changed): list, retry once.
            if s.cache is not None:
                s.cache.invalidate(s._origin, ("tools/list",))
            await s.list_tools(timeout=timeout)
            result = await input_required.with_input(
                s, "tools/call", params, timeout=timeout, progress=progress
            )
        # An extension's result type (a task, SEP-2663) is completed by its handler.
        return await complete(s, "tools/call", params, result, timeout=timeout, progress=progress)

    # -- resources ----------------------------------------------------------------------------
    async def list_resources(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        s = self._target
        return await s._list_all("resources/list", "resources", timeout)

    async def list_resource_templates(
        self, *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        s = self._target
        return await s._list_all("resources/templates/list", "resourceTemplates", timeout)

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """``resources/read``; returns the result dict (its ``contents`` list)."""
        s = self._target
        params = {"uri": uri}
        result = await s._fetch("resources/read", params, timeout, progress)
        if result.get("resultType") == "input_required":
            result = await input_required.with_input(
                s,
                "resources/read",
                params,
                timeout=timeout,
                progress=progress,
                first=result,
            )
        return await complete(
            s, "resources/read", params, result, timeout=timeout, progress=progress
        )

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """``resources/subscribe``; in the stateless era, a new ``subscriptions/listen`` filter
        (acknowledged before this returns, so the subscription holds in both eras)."""
        s = self._target
        if s.stateless_version is not None:
            s.listener.uris.add(uri)
            await s.listener.update(s.timeout if timeout is None else timeout)
            return
        await s.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        s = self._target
        if s.stateless_version is not None:
            s.listener.uris.discard(uri)
            await s.listener.update(s.timeout if timeout is None else timeout)
            return
        await s.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    # -- prompts ------------------------------------------------------------------------------
    async def list_prompts(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        s = self._target
        return await s._list_all("prompts/list", "prompts", timeout)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        version: str | None = None,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """``prompts/get``; returns the result dict (``description``, ``messages``).

        ``version`` selects one of a prompt's versions on servers that have them
        (mcpkit and Mastra servers: Mastra's prompt versions); others ignore it.
        """
        s = self._target
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if version is not None:
            params["version"] = version
        result = await input_required.with_input(
            s, "prompts/get", params, timeout=timeout, progress=progress
        )
        return await complete(s, "prompts/get", params, result, timeout=timeout, progress=progress)

    # -- utilities ----------------------------------------------------------------------------
    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """``completion/complete``; returns the ``completion`` dict (``values``, ``hasMore``…).

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``.
        """
        s = self._target
        params: dict[str, Any] = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        result = await s.request("completion/complete", params, timeout=timeout)
        completion = result.get("completion")
        return completion if isinstance(completion, dict) else {"values": []}

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """The least severe log level the server should send.

        Handshake era: ``logging/setLevel``. Stateless era: the level rides in every
        later request's ``_meta`` (``logging/setLevel`` is gone in 2026-07-28).
        """
        s = self._target
        if s.stateless_version is not None:
            s.log_level = level
            return
        await s.request("logging/setLevel", {"level": level}, timeout=timeout)

    async def ping(self, *, timeout: float | None = None) -> None:
        """``ping``; in the stateless era (no ``ping``) a ``server/discover`` round trip."""
        s = self._target
        method = "server/discover" if s.stateless_version is not None else "ping"
        await s.request(method, timeout=timeout)

    async def set_roots(self, roots: RootsSpec) -> None:
        """Replace the roots and tell the server (``notifications/roots/list_changed``)."""
        s = self._target
        s.handlers.roots = roots
        # 2026-07-28 removed the notification: roots are asked for per request (MRTR).
        if s.initialize_result is not None and s._closed is None and s.stateless_version is None:
            await s.notify("notifications/roots/list_changed")

    async def _fetch(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """``request``, served from the cache while a cacheable answer is fresh."""
        s = self._target
        cache = s.cache
        if cache is None:
            return await s.request(method, params, timeout=timeout, progress=progress)
        credential = credential_of(s.transport)
        hit = cache.get(s._origin, method, params, credential)
        if hit is not None:
            return dict(hit)
        result = await s.request(method, params, timeout=timeout, progress=progress)
        cache.put(s._origin, method, params, credential, result)
        return result

    async def _list_all(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        s = self._target
        items: list[dict[str, Any]] = []
        params: dict[str, Any] | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = await s._fetch(method, params, timeout)
            page = result.get(key)
            if isinstance(page, list):
                items.extend(page)
            cursor = result.get("nextCursor")
            # utilities/pagination: a missing cursor is the end; a repeated one would loop.
            if not isinstance(cursor, str) or cursor in seen:
                return items
            seen.add(cursor)
            params = {"cursor": cursor}
        raise RemoteError(
            f"MCP server {s.name!r} kept paginating {method} beyond {MAX_PAGES} pages",
            code=INTERNAL_ERROR,
        )
