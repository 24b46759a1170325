"""McpHeader marks a tool parameter for an Mcp-Param-* header (SEP-2243)."""

from __future__ import annotations

from typing import Annotated

import pytest

from mcpkit import McpHeader, MCPServer
from mcpkit.errors import ConfigurationError


def test_the_parameter_schema_carries_x_mcp_header() -> None:
    server = MCPServer(name="h", version="1")

    @server.tool
    async def deploy(
        region: Annotated[str, McpHeader("Region", description="Where")], replicas: int = 1
    ) -> str:
        return region

    tool = server.tools.get("deploy")
    assert tool is not None
    props = tool.describe()["inputSchema"]["properties"]
    assert props["region"]["x-mcp-header"] == "Region"
    assert props["region"]["description"] == "Where"
    assert "x-mcp-header" not in props["replicas"]


@pytest.mark.parametrize("name", ["", "Two Words", "Line\nBreak", "Région", "a:b"])
def test_a_name_that_is_not_an_http_token_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="HTTP token"):
        McpHeader(name)
