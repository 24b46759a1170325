"""mcpkit: a fast, complete framework for the Model Context Protocol.

Importing ``mcpkit`` is cheap: names load on first use.
"""

# No ``from __future__ import annotations``: see _lazy.py (import cost).
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "MCPServer": "mcpkit.server.server",
    "MCPServerResources": "mcpkit.server.resources",
    "MCPServerPrompts": "mcpkit.server.prompts",
    "PromptMessage": "mcpkit.server.prompts",
    "Context": "mcpkit.server.context",
    "ElicitResult": "mcpkit.server.context",
    "Root": "mcpkit.server.context",
    "current_context": "mcpkit.server.context",
    "Depends": "mcpkit.server.dependencies",
    "URLElicitation": "mcpkit.server.client_requests",
    "URLElicitationRequiredError": "mcpkit.errors",
    "ToolAnnotations": "mcpkit.server.tools",
    "McpHeader": "mcpkit.server.stateless.mcp_header",
    "InputRoundStore": "mcpkit.stores.input_required",
    "MemoryInputRoundStore": "mcpkit.stores.input_required",
    "CacheHint": "mcpkit.server.stateless.cache_hints",
    "CacheOptions": "mcpkit.server.stateless.cache_hints",
    "InputRoundOptions": "mcpkit.server.stateless.input_options",
    "ServerLimits": "mcpkit.server.limits",
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
    "ElicitationValidationError": "mcpkit.errors",
    "ConfigurationError": "mcpkit.errors",
    "RegistrationError": "mcpkit.errors",
    "InvalidParams": "mcpkit.errors",
    "ResourceNotFound": "mcpkit.errors",
    "Forbidden": "mcpkit.errors",
    "Extension": "mcpkit.server.extension",
    "MiddlewareContext": "mcpkit.server.middleware",
    "Middleware": "mcpkit.server.middleware",
    "CallNext": "mcpkit.server.middleware",
    "LifespanError": "mcpkit.server.lifespan",
    "CapabilityError": "mcpkit.errors",
    "PeerTimeout": "mcpkit.errors",
    "ConnectionClosed": "mcpkit.errors",
    "RemoteError": "mcpkit.errors",
    "Client": "mcpkit.client.client",
    "ClientSession": "mcpkit.client.session",
    "MCPClient": "mcpkit.client.mcp_client",
    "AgentResponse": "mcpkit.adapters.agents",
    "as_agent": "mcpkit.adapters.agents",
    "Workflow": "mcpkit.workflow.engine",
    "Step": "mcpkit.workflow.steps",
    "StepContext": "mcpkit.workflow.steps",
    "step": "mcpkit.workflow.steps",
    "Repository": "mcpkit.server.metadata",
    "Package": "mcpkit.server.metadata",
    "Remote": "mcpkit.server.metadata",
    "ServerJsonError": "mcpkit.server.metadata",
    "ServerMetadata": "mcpkit.server.metadata",
    "mcp_tool": "mcpkit.server.declarative",
    "mcp_resource": "mcpkit.server.declarative",
    "mcp_prompt": "mcpkit.server.declarative",
    "mcp_complete": "mcpkit.server.declarative",
    "ToolParam": "mcpkit.server.declarative",
    "PromptArg": "mcpkit.server.declarative",
}

__all__ = [
    "AgentResponse",
    "Audio",
    "CacheHint",
    "CacheOptions",
    "CallNext",
    "CapabilityError",
    "Client",
    "ClientSession",
    "ConfigurationError",
    "ConnectionClosed",
    "Context",
    "Depends",
    "ElicitResult",
    "ElicitationValidationError",
    "EmbeddedResource",
    "Extension",
    "Forbidden",
    "Image",
    "InputRoundOptions",
    "InputRoundStore",
    "InvalidParams",
    "LifespanError",
    "MCPClient",
    "MCPError",
    "MCPKitError",
    "MCPServer",
    "MCPServerPrompts",
    "MCPServerResources",
    "McpHeader",
    "MemoryInputRoundStore",
    "Middleware",
    "MiddlewareContext",
    "Package",
    "PeerTimeout",
    "PromptArg",
    "PromptMessage",
    "RegistrationError",
    "Remote",
    "RemoteError",
    "Repository",
    "ResourceLink",
    "ResourceNotFound",
    "Root",
    "ServerJsonError",
    "ServerLimits",
    "ServerMetadata",
    "Step",
    "StepContext",
    "Text",
    "ToolAnnotations",
    "ToolCallError",
    "ToolDefinition",
    "ToolError",
    "ToolParam",
    "ToolResult",
    "URLElicitation",
    "URLElicitationRequiredError",
    "UriTemplate",
    "Workflow",
    "__version__",
    "as_agent",
    "create_tool",
    "current_context",
    "mcp_complete",
    "mcp_prompt",
    "mcp_resource",
    "mcp_tool",
    "step",
]


_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # from the package metadata, read on first use
        from ._version import version

        globals()[name] = version()
        return globals()[name]
    return _lazy_getattr(name)


if TYPE_CHECKING:
    __version__: str
    from .adapters.agents import AgentResponse, as_agent
    from .client.client import Client
    from .client.mcp_client import MCPClient
    from .client.session import ClientSession
    from .errors import (
        CapabilityError,
        ConfigurationError,
        ConnectionClosed,
        ElicitationValidationError,
        Forbidden,
        InvalidParams,
        MCPError,
        MCPKitError,
        PeerTimeout,
        RegistrationError,
        RemoteError,
        ResourceNotFound,
        ToolCallError,
        ToolError,
        URLElicitationRequiredError,
    )
    from .server.client_requests import URLElicitation
    from .server.content import Audio, EmbeddedResource, Image, ResourceLink, Text, ToolResult
    from .server.context import Context, ElicitResult, Root, current_context
    from .server.declarative import (
        PromptArg,
        ToolParam,
        mcp_complete,
        mcp_prompt,
        mcp_resource,
        mcp_tool,
    )
    from .server.dependencies import Depends
    from .server.extension import Extension
    from .server.lifespan import LifespanError
    from .server.limits import ServerLimits
    from .server.metadata import Package, Remote, Repository, ServerJsonError, ServerMetadata
    from .server.middleware import CallNext, Middleware, MiddlewareContext
    from .server.prompts import MCPServerPrompts, PromptMessage
    from .server.resources import MCPServerResources
    from .server.server import MCPServer
    from .server.stateless.cache_hints import CacheHint, CacheOptions
    from .server.stateless.input_options import InputRoundOptions
    from .server.stateless.mcp_header import McpHeader
    from .server.tools import ToolAnnotations, ToolDefinition, create_tool
    from .server.uri_template import UriTemplate
    from .stores.input_required import InputRoundStore, MemoryInputRoundStore
    from .workflow.engine import Workflow
    from .workflow.steps import Step, StepContext, step
