"""mcpkit: a fast, complete framework for the Model Context Protocol.

Importing ``mcpkit`` is cheap: names load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "MCPServer": "mcpkit.server.server",
    "MCPServerResources": "mcpkit.server.resources",
    "MCPServerPrompts": "mcpkit.server.prompts",
    "PromptMessage": "mcpkit.server.prompts",
    "Context": "mcpkit.server.context",
    "ElicitResult": "mcpkit.server.context",
    "Root": "mcpkit.server.context",
    "current_context": "mcpkit.server.context",
    "ToolAnnotations": "mcpkit.server.tools",
    "ToolDefinition": "mcpkit.server.tools",
    "create_tool": "mcpkit.server.tools",
    "Text": "mcpkit.server.content",
    "Image": "mcpkit.server.content",
    "Audio": "mcpkit.server.content",
    "ResourceLink": "mcpkit.server.content",
    "EmbeddedResource": "mcpkit.server.content",
    "ToolResult": "mcpkit.server.content",
    "UriTemplate": "mcpkit.server.uri_template",
    "MCPKitError": "mcpkit.errors",
    "MCPError": "mcpkit.errors",
    "ToolError": "mcpkit.errors",
    "ToolCallError": "mcpkit.errors",
    "ConfigurationError": "mcpkit.errors",
    "RegistrationError": "mcpkit.errors",
    "InvalidParams": "mcpkit.errors",
    "ResourceNotFound": "mcpkit.errors",
    "CapabilityError": "mcpkit.errors",
    "PeerTimeout": "mcpkit.errors",
    "ConnectionClosed": "mcpkit.errors",
    "RemoteError": "mcpkit.errors",
    "Client": "mcpkit.client.client",
    "ClientSession": "mcpkit.client.session",
    "MCPClient": "mcpkit.client.mcp_client",
}

__all__ = [
    "Audio",
    "CapabilityError",
    "Client",
    "ClientSession",
    "ConfigurationError",
    "ConnectionClosed",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "InvalidParams",
    "MCPClient",
    "MCPError",
    "MCPKitError",
    "MCPServer",
    "MCPServerPrompts",
    "MCPServerResources",
    "PeerTimeout",
    "PromptMessage",
    "RegistrationError",
    "RemoteError",
    "ResourceLink",
    "ResourceNotFound",
    "Root",
    "Text",
    "ToolAnnotations",
    "ToolCallError",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "UriTemplate",
    "__version__",
    "create_tool",
    "current_context",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


if TYPE_CHECKING:
    from .client.client import Client
    from .client.mcp_client import MCPClient
    from .client.session import ClientSession
    from .errors import (
        CapabilityError,
        ConfigurationError,
        ConnectionClosed,
        InvalidParams,
        MCPError,
        MCPKitError,
        PeerTimeout,
        RegistrationError,
        RemoteError,
        ResourceNotFound,
        ToolCallError,
        ToolError,
    )
    from .server.content import Audio, EmbeddedResource, Image, ResourceLink, Text, ToolResult
    from .server.context import Context, ElicitResult, Root, current_context
    from .server.prompts import MCPServerPrompts, PromptMessage
    from .server.resources import MCPServerResources
    from .server.server import MCPServer
    from .server.tools import ToolAnnotations, ToolDefinition, create_tool
    from .server.uri_template import UriTemplate
