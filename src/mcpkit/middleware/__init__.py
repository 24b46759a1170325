"""Built-in middleware: typed hooks, rate limits, response caching, request logging, masking, limits.

Each is a middleware ``mw(ctx, call_next)`` on the server's one chain
(:mod:`mcpkit.server.middleware`, ``MCPServer(middleware=[...])`` or
``server.add_middleware``), the core seam every request of every transport and
both protocol eras passes through; the package uses nothing else of the core
but its public hooks (``server.add_broadcast_listener`` and
``server.resources.add_update_listener`` for the cache). It sits beside
``observability``, above the server, so the core never imports it and
``import mcpkit`` does not load it. One module per middleware, as Starlette's
``middleware/``:

- :mod:`.hooks`: :class:`Hooks`, a class with typed ``on_call_tool``, ``on_list_tools``...
  hooks (their params and results typed in :mod:`.hook_types`), each method watched alone;
- :mod:`.ratelimit`: :func:`rate_limit`, token buckets per key (:mod:`.keys`);
- :mod:`.cache`: :class:`ResponseCache`, listings and resource reads;
- :mod:`.request_log`: :func:`request_logging`, one JSON line per request;
- :mod:`.masking`: :func:`mask_errors`, internal details out of client errors;
- :mod:`.size_limits`: :func:`size_limits`, argument and result bounds per tool;
- :mod:`.redis`: the shared buckets and cache on a ``RedisStore`` (the ``redis`` extra).

A middleware that is not added costs nothing: the chain is built from the list.
``docs/operations.md`` § Middleware has an example of each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .cache import CacheStore, MemoryCache, ResponseCache
    from .hook_types import (
        CallToolParams,
        CallToolResult,
        GetPromptParams,
        GetPromptResult,
        InitializeParams,
        InitializeResult,
        ListParams,
        ReadResourceParams,
    )
    from .hooks import HookContext, HookNext, Hooks
    from .keys import (
        ClientAddress,
        by_client_address,
        by_principal,
        by_session,
        by_tool,
        combined,
    )
    from .masking import mask_errors
    from .ratelimit import BucketStore, MemoryBuckets, RateLimited, rate_limit
    from .request_log import request_logging
    from .size_limits import size_limits

__all__ = [
    "BucketStore",
    "CacheStore",
    "CallToolParams",
    "CallToolResult",
    "ClientAddress",
    "GetPromptParams",
    "GetPromptResult",
    "HookContext",
    "HookNext",
    "Hooks",
    "InitializeParams",
    "InitializeResult",
    "ListParams",
    "MemoryBuckets",
    "MemoryCache",
    "RateLimited",
    "ReadResourceParams",
    "ResponseCache",
    "by_client_address",
    "by_principal",
    "by_session",
    "by_tool",
    "combined",
    "mask_errors",
    "rate_limit",
    "request_logging",
    "size_limits",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BucketStore": ".ratelimit",
        "CacheStore": ".cache",
        "CallToolParams": ".hook_types",
        "CallToolResult": ".hook_types",
        "ClientAddress": ".keys",
        "GetPromptParams": ".hook_types",
        "GetPromptResult": ".hook_types",
        "HookContext": ".hooks",
        "HookNext": ".hooks",
        "Hooks": ".hooks",
        "InitializeParams": ".hook_types",
        "InitializeResult": ".hook_types",
        "ListParams": ".hook_types",
        "MemoryBuckets": ".ratelimit",
        "MemoryCache": ".cache",
        "RateLimited": ".ratelimit",
        "ReadResourceParams": ".hook_types",
        "ResponseCache": ".cache",
        "by_client_address": ".keys",
        "by_principal": ".keys",
        "by_session": ".keys",
        "by_tool": ".keys",
        "combined": ".keys",
        "mask_errors": ".masking",
        "rate_limit": ".ratelimit",
        "request_logging": ".request_log",
        "size_limits": ".size_limits",
    },
    __all__,
)
