"""The JSON-RPC method names the MCP specification defines, in every revision, as data.

:data:`SPEC_METHODS` maps each request and notification method of the core
schemas (2024-11-05 to 2026-07-28, both directions) to the first revision
that defines it. The server refuses to register one of these names as an
additional method (``MCPServer.add_method``): a name the specification owns
in any revision may mean something else to a client of that revision, even
where mcpkit does not serve it (``tasks/*`` of 2025-11-25, the handshake
methods on 2026-07-28). ``tests/protocol/test_method_names.py`` keeps the
table equal to the method constants of the published schemas.

JSON-RPC 2.0 (§4) reserves the names that begin with ``rpc.`` for the
protocol itself: :func:`reserved_method_problem` refuses them too.

:data:`EXTENSION_PREFIXES` lists the method-name prefixes a SEP reserves for one
extension: only the :class:`~mcpkit.server.extension.Extension` of that identifier
may register a name under it, spec names included (SEP-2663 moved ``tasks/*`` out
of the core into the tasks extension, whose "Reservations" keep the prefix for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["EXTENSION_PREFIXES", "SPEC_METHODS", "reserved_method_problem"]

#: Method name -> the first revision whose schema defines it (requests and notifications).
SPEC_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {
        # 2024-11-05
        "initialize": "2024-11-05",
        "ping": "2024-11-05",
        "logging/setLevel": "2024-11-05",
        "completion/complete": "2024-11-05",
        "tools/list": "2024-11-05",
        "tools/call": "2024-11-05",
        "resources/list": "2024-11-05",
        "resources/templates/list": "2024-11-05",
        "resources/read": "2024-11-05",
        "resources/subscribe": "2024-11-05",
        "resources/unsubscribe": "2024-11-05",
        "prompts/list": "2024-11-05",
        "prompts/get": "2024-11-05",
        "roots/list": "2024-11-05",
        "sampling/createMessage": "2024-11-05",
        "notifications/initialized": "2024-11-05",
        "notifications/cancelled": "2024-11-05",
        "notifications/progress": "2024-11-05",
        "notifications/message": "2024-11-05",
        "notifications/tools/list_changed": "2024-11-05",
        "notifications/prompts/list_changed": "2024-11-05",
        "notifications/resources/list_changed": "2024-11-05",
        "notifications/resources/updated": "2024-11-05",
        "notifications/roots/list_changed": "2024-11-05",
        # 2025-06-18
        "elicitation/create": "2025-06-18",
        # 2025-11-25 (tasks were moved out of the core into an extension in 2026-07-28)
        "notifications/elicitation/complete": "2025-11-25",
        "tasks/get": "2025-11-25",
        "tasks/result": "2025-11-25",
        "tasks/list": "2025-11-25",
        "tasks/cancel": "2025-11-25",
        "notifications/tasks/status": "2025-11-25",
        # 2026-07-28
        "server/discover": "2026-07-28",
        "subscriptions/listen": "2026-07-28",
        "notifications/subscriptions/acknowledged": "2026-07-28",
    }
)


#: Method-name prefix -> the extension identifier a SEP reserves it for.
EXTENSION_PREFIXES: Final[Mapping[str, str]] = MappingProxyType(
    {
        # ext-tasks specification/draft/tasks.md, "Reservations" (SEP-2663).
        "tasks/": "io.modelcontextprotocol/tasks",
    }
)


def reserved_method_problem(name: str, *, claimant: str | None = None) -> str | None:
    """Why ``name`` may not be an additional method (None: it may).

    ``claimant`` is the identifier of the extension registering it (None for
    ``server.add_method``): a name under one of :data:`EXTENSION_PREFIXES` is allowed
    to that extension alone, and refused to everyone else.
    """
    for prefix, owner in EXTENSION_PREFIXES.items():
        if name.startswith(prefix):
            if claimant == owner:
                return None
            return (
                f"method {name!r}: names beginning with {prefix!r} are reserved for the "
                f"extension {owner!r}; an additional method needs a name of its own"
            )
    first = SPEC_METHODS.get(name)
    if first is not None:
        return (
            f"method {name!r} is defined by the MCP specification (since {first}); "
            "an additional method needs a name of its own, e.g. 'vendor/action'"
        )
    if name.startswith("rpc."):
        return f"method {name!r}: names beginning with 'rpc.' are reserved by JSON-RPC 2.0 (§4)"
    return None
