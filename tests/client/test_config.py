"""Server definitions: strict in code, lenient for the config files other applications share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client.config import ServerConfig, load_config, parse_servers
from mcpkit.errors import ConfigurationError


def test_definitions_in_code_become_server_configs() -> None:
    configs = parse_servers(
        {
            "files": {"command": "python", "args": ["files.py"], "env": {"A": "1"}, "cwd": "/tmp"},
            "weather": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer t"}},
            "sse": {"url": "http://h/events", "http_transport": "sse", "timeout": 5},
        }
    )
    assert configs["files"] == ServerConfig(
        command="python", args=("files.py",), env={"A": "1"}, cwd="/tmp"
    )
    assert configs["files"].kind == "stdio"
    assert configs["weather"].kind == "http"
    assert configs["weather"].headers == {"Authorization": "Bearer t"}
    assert configs["sse"].http_transport == "sse"
    assert configs["sse"].timeout == 5


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_servers(
            {
                "typo": {"command": "x", "argz": []},
                "both": {"command": "x", "url": "http://h"},
                "neither": {},
                "args": {"command": "x", "args": "not a list"},
                "timeout": {"url": "http://h", "timeout": -1},
                "headers": {"command": "x", "headers": {"a": "b"}},
            }
        )
    message = str(info.value)
    assert "server 'typo': unknown option(s) 'argz'" in message
    assert "server 'both' needs exactly one of" in message and "got command, url" in message
    assert "server 'neither' needs exactly one of" in message and "got none" in message
    assert "server 'args': 'args' must be a list of strings" in message
    assert "server 'timeout': 'timeout' must be a positive, finite number" in message
    assert "server 'headers': 'headers', 'auth' and 'http_client' need 'url'" in message


def test_not_a_dict_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="dict of name"):
        parse_servers(["a"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="the definition must be a dict"):
        parse_servers({"a": "python server.py"})


CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
            "env": {"DEBUG": "1"},
        },
        "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
        "old": {"type": "sse", "url": "https://example.com/events"},
        "vscode-style": {"type": "http", "url": "https://example.com/mcp"},
        "mastra": {
            "url": "https://example.com/mcp",
            "requestInit": {"headers": {"Authorization": "Bearer t"}},
            "enableServerLogs": False,
        },
        "off": {"command": "nothing", "disabled": True},
        "cline": {"command": "node", "args": ["s.js"], "autoApprove": ["x"], "disabled": False},
    }
}


def test_the_mcp_servers_format_is_read(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(CLAUDE_DESKTOP))
    for source in (path, str(path), CLAUDE_DESKTOP):
        configs = load_config(source)
        assert sorted(configs) == ["cline", "filesystem", "mastra", "old", "remote", "vscode-style"]
        fs = configs["filesystem"]
        assert fs.command == "npx" and fs.args[0] == "-y" and fs.env == {"DEBUG": "1"}
        assert configs["remote"].headers == {"X-Key": "k"}
        assert configs["remote"].http_transport == "auto"
        assert configs["old"].http_transport == "sse"
        assert configs["vscode-style"].http_transport == "auto"
        assert configs["mastra"].headers == {"Authorization": "Bearer t"}
        assert configs["mastra"].server_logs is False
        assert configs["cline"].args == ("s.js",)  # autoApprove belongs to another app


@pytest.mark.parametrize(
    "data",
    [
        {"servers": {"a": {"command": "x"}}},  # VS Code
        {"a": {"command": "x"}},  # the servers dict itself
    ],
)
def test_other_shapes_are_read(data: dict[str, Any]) -> None:
    assert load_config(data)["a"].command == "x"


def test_file_errors_are_one_clear_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"configuration file not found: .*missing\.json"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {')
    with pytest.raises(ConfigurationError, match=r"broken.json is not valid JSON: .*line 1"):
        load_config(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"mcpServers": {"a": {"type": "websocket", "url": "ws://h"}, "b": {}}}')
    with pytest.raises(ConfigurationError) as info:
        load_config(wrong)
    assert "wrong.json" in str(info.value)
    assert "server 'a': unknown type 'websocket'" in str(info.value)
    assert "server 'b' needs exactly one of" in str(info.value)
    listing = tmp_path / "list.json"
    listing.write_text("[]")
    with pytest.raises(ConfigurationError, match="must be a JSON object"):
        load_config(listing)


def test_a_file_cannot_smuggle_in_code_only_options() -> None:
    configs = load_config({"mcpServers": {"a": {"command": "x", "trace": "print"}}})
    assert configs["a"].trace is None


def test_keys_of_other_applications_are_ignored_but_near_misses_are_named() -> None:
    from mcpkit.client.config import load_config

    servers = load_config(
        {
            "mcpServers": {
                "a": {"command": "x", "autoApprove": [], "alwaysAllow": [], "disabledTools": []},
                "b": {"url": "http://h/mcp", "transportType": "http", "envFile": ".env"},
            }
        }
    )
    assert set(servers) == {"a", "b"}
    with pytest.raises(ConfigurationError, match=r"unknown key 'URL'; did you mean 'url'\?"):
        load_config({"mcpServers": {"a": {"URL": "http://h/mcp"}}})
    with pytest.raises(ConfigurationError, match=r"'server_log'; did you mean 'server_logs'\?"):
        load_config({"mcpServers": {"a": {"command": "x", "server_log": True}}})
    # A server that happens to be named like the key is still a server.
    assert set(load_config({"server": {"command": "x"}})) == {"server"}
