"""``mcpkit run FILE`` without ``:OBJECT``: the server named mcp, server or app, else the only one."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpkit.cli.loader import LoadError, load_server


def write(tmp_path: Path, body: str, name: str = "app.py") -> str:
    path = tmp_path / name
    path.write_text("from mcpkit import MCPServer\n" + body)
    return str(path)


@pytest.mark.parametrize("name", ["mcp", "server", "app"])
def test_a_server_named_mcp_server_or_app_is_found(tmp_path: Path, name: str) -> None:
    target = write(tmp_path, f"{name} = MCPServer('found')\nother = MCPServer('other')\n")
    assert load_server(target).name == "found"


def test_a_non_server_app_beside_a_server_named_mcp_is_not_taken(tmp_path: Path) -> None:
    # The usual FastMCP/ASGI layout: `app` is the web app, `mcp` the server.
    target = write(tmp_path, "mcp = MCPServer('the-server')\napp = object()\n")
    assert load_server(target).name == "the-server"


def test_one_server_under_two_default_names_is_found(tmp_path: Path) -> None:
    target = write(tmp_path, "mcp = MCPServer('one')\nserver = mcp\n")
    assert load_server(target).name == "one"


def test_two_different_default_names_are_refused_naming_both(tmp_path: Path) -> None:
    target = write(tmp_path, "mcp = MCPServer('a')\nserver = MCPServer('b')\n")
    with pytest.raises(LoadError) as info:
        load_server(target)
    assert str(info.value) == (
        f"{target} has several servers (mcp and server); name one as {target}:OBJECT"
    )


def test_a_factory_named_server_is_still_called(tmp_path: Path) -> None:
    target = write(tmp_path, "def server():\n    return MCPServer('made')\n")
    assert load_server(target).name == "made"


def test_the_only_server_under_another_name_is_found(tmp_path: Path) -> None:
    target = write(tmp_path, "weather = MCPServer('weather')\n")
    assert load_server(target).name == "weather"
