"""Servers built from OpenAPI documents and FastAPI apps: each operation a tool or resource.

Core seams used, all public: ``create_tool`` and ``server.tools.add`` (each operation
a tool with its own JSON Schema), ``server.resources.add`` (GET operations a route
map serves as resources or templates) and ``server.add_lifespan`` (a FastAPI app's
lifespan and its in-process client live as long as the server). It lives in
``compose`` because it builds a server from another service, as ``proxy`` does from
another MCP server; ``MCPServer.from_openapi`` and ``MCPServer.from_fastapi``
import it only when called.

:mod:`.parse` reads and validates the document (openapi-pydantic) and lists its
operations, :mod:`.schema` turns its schemas into the JSON Schema of tool listings,
:mod:`.routes` decides what each operation becomes and its name, :mod:`.request`
serializes parameters in their styles, :mod:`.call` makes the HTTP call and its
result, and :mod:`.build` puts a server together. Needs the ``openapi`` extra: each
name is imported on first use (so that a missing package is named by the module
that needs it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from .build import from_fastapi, from_openapi
    from .parse import Document, Operation, load_document, read_document
    from .routes import RESOURCE_ROUTES, RouteKind, RouteMap

__all__ = [
    "RESOURCE_ROUTES",
    "Document",
    "Operation",
    "RouteKind",
    "RouteMap",
    "from_fastapi",
    "from_openapi",
    "load_document",
    "read_document",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RESOURCE_ROUTES": ".routes",
        "Document": ".parse",
        "Operation": ".parse",
        "RouteKind": ".routes",
        "RouteMap": ".routes",
        "from_fastapi": ".build",
        "from_openapi": ".build",
        "load_document": ".parse",
        "read_document": ".parse",
    },
    __all__,
)
