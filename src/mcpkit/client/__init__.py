"""The MCP client: :class:`MCPClient` for many servers, :class:`Client` for one.

:class:`ClientSession` is the session over any transport; :class:`Tool` is one
server's tool as an awaitable; :class:`Blocking` is the blocking facade for
scripts (``MCPClient(...).blocking()``). Importing this package is cheap;
transports (and httpx) load when used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "Blocking",
    "Client",
    "ClientSession",
    "ClientTransport",
    "MCPClient",
    "ResultCache",
    "ServerConfig",
    "Tool",
    "load_config",
]

_EXPORTS = {
    "Blocking": "mcpkit.client.blocking",
    "Client": "mcpkit.client.client",
    "ClientSession": "mcpkit.client.session",
    "ClientTransport": "mcpkit.client.transports.base",
    "MCPClient": "mcpkit.client.mcp_client",
    "ResultCache": "mcpkit.client.cache",
    "ServerConfig": "mcpkit.client.config",
    "Tool": "mcpkit.client.tools",
    "load_config": "mcpkit.client.config",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit.client' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .blocking import Blocking
    from .cache import ResultCache
    from .client import Client
    from .config import ServerConfig, load_config
    from .mcp_client import MCPClient
    from .session import ClientSession
    from .tools import Tool
    from .transports.base import ClientTransport
