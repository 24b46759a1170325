"""The MCP client: :class:`Client` for one server, :class:`ClientSession` over any transport.

Importing this package is cheap; transports (and httpx) load when used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["Client", "ClientSession", "ClientTransport"]

_EXPORTS = {
    "Client": "mcpkit.client.client",
    "ClientSession": "mcpkit.client.session",
    "ClientTransport": "mcpkit.client.transports.base",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit.client' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .client import Client
    from .session import ClientSession
    from .transports.base import ClientTransport
