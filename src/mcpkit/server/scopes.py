"""Which OAuth scopes a request needs: per tool, resource and prompt.

A placeholder until per-item scopes land: no request needs any scope yet. The
HTTP layer (``mcpkit.auth``) asks :func:`required_scopes` before it dispatches a
request, so it can answer ``403 insufficient_scope`` with the scopes to step up to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["required_scopes"]

NO_SCOPES: frozenset[str] = frozenset()


def required_scopes(
    server: MCPServer, method: str, params: Mapping[str, Any] | None
) -> frozenset[str]:
    """The scopes a ``method`` call with ``params`` needs on ``server`` (empty: none)."""
    return NO_SCOPES
