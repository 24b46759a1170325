"""``McpHeader``: mirror a tool argument into an ``Mcp-Param-{Name}`` HTTP header.

2026-07-28 lets a server designate tool parameters that clients copy into
HTTP headers so that gateways can route on them without reading the body
(SEP-2243, basic/transports/streamable-http § custom headers from tool
parameters). In the tool's ``inputSchema`` the parameter carries
``"x-mcp-header": "{Name}"``; the server checks every such header against the
body (:mod:`mcpkit.protocol.http_headers`)::

    @server.tool
    async def deploy(region: Annotated[str, McpHeader("Region")]) -> str: ...

The name must be an HTTP token (RFC 9110 §5.6.2) and the parameter a string,
integer or boolean (the revision's constraints; ``number`` is not allowed).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from ..errors import ConfigurationError

__all__ = ["McpHeader"]

_TCHAR: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def McpHeader(name: str, *, description: str | None = None) -> Any:
    """Pydantic field metadata putting ``x-mcp-header: name`` on the parameter's schema."""
    if not isinstance(name, str) or not name or not set(name) <= _TCHAR:
        raise ConfigurationError(
            f"McpHeader({name!r}): the name must be a non-empty HTTP token (letters, digits, "
            "and !#$%&'*+-.^_`|~)"
        )
    return Field(description=description, json_schema_extra={"x-mcp-header": name})
