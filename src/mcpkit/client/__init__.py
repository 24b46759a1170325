"""The MCP client: :class:`MCPClient` for many servers, :class:`Client` for one.

:class:`ClientSession` is the session over any transport; :class:`Tool` is one
server's tool as an awaitable; :class:`Blocking` is the blocking facade for
scripts (``MCPClient(...).blocking()``). Importing this package is cheap;
transports (and httpx) load when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

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

# Loaded on first use: public name -> module.
_EXPORTS: dict[str, str] = {
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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from .blocking import Blocking
    from .cache import ResultCache
    from .client import Client
    from .config import ServerConfig, load_config
    from .mcp_client import MCPClient
    from .session import ClientSession
    from .tools import Tool
    from .transports.base import ClientTransport
