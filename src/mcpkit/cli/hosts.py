"""The MCP hosts ``mcpkit install`` writes to: where each keeps its configuration, and its format.

Each host is a row of :data:`HOSTS`. Locations are those the hosts document, per
operating system; every one is computed from the home directory and the
environment (``APPDATA`` on Windows, ``XDG_CONFIG_HOME`` where the host honours
it), so a test or a sandbox moves them all by setting ``HOME``.

Formats:

- ``mcpServers``: a JSON object whose ``mcpServers`` maps a name to
  ``{"command", "args", "env"}`` (Claude Desktop, Claude Code, Cursor, Gemini CLI;
  Claude Code also records ``"type": "stdio"``);
- ``vscode``: VS Code's ``mcp.json``, ``{"servers": {name: {"type": "stdio", ...}}}``,
  which may hold comments and trailing commas (JSONC);
- ``goose``: Goose's YAML ``config.yaml``, whose ``extensions`` maps a name to a flat
  ``{name, type: stdio, cmd, args, envs, enabled, timeout, ...}`` entry.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "HOSTS",
    "Host",
    "Launch",
    "entry_for",
    "entry_key",
    "parse_jsonc",
    "user_config_path",
]

Format = Literal["mcpServers", "vscode", "goose"]


@dataclass(frozen=True, slots=True)
class Launch:
    """How a host starts the server: a command, its arguments and environment."""

    command: str
    args: list[str]
    env: dict[str, str]


@dataclass(frozen=True, slots=True)
class Host:
    """One host: its display name, file format, user file and project file (if any)."""

    title: str
    format: Format
    #: (system, home, environment) → the user-level configuration file.
    user_file: Callable[[str, Path, Mapping[str, str]], Path]
    #: Relative to the project directory; None when the host has no project file.
    project_file: str | None
    #: Whether entries carry ``"type": "stdio"`` (Claude Code and VS Code name the transport).
    typed: bool = False


def _appdata(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"


def _xdg_config(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def _claude_desktop(system: str, home: Path, env: Mapping[str, str]) -> Path:
    name = "claude_desktop_config.json"
    if system == "darwin":
        return home / "Library" / "Application Support" / "Claude" / name
    if system == "win32":
        return _appdata(home, env) / "Claude" / name
    # No Linux build is published; the community builds read the XDG location.
    return _xdg_config(home, env) / "Claude" / name


def _vscode(system: str, home: Path, env: Mapping[str, str]) -> Path:
    # The user profile's mcp.json (VS Code, "MCP configuration reference").
    if system == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    if system == "win32":
        return _appdata(home, env) / "Code" / "User" / "mcp.json"
    return _xdg_config(home, env) / "Code" / "User" / "mcp.json"


def _goose(system: str, home: Path, env: Mapping[str, str]) -> Path:
    if system == "win32":
        return _appdata(home, env) / "Block" / "goose" / "config" / "config.yaml"
    return _xdg_config(home, env) / "goose" / "config.yaml"


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("Claude Desktop", "mcpServers", _claude_desktop, None),
    # User scope: the top-level mcpServers of ~/.claude.json ("claude mcp add -s user").
    "claude-code": Host(
        "Claude Code", "mcpServers", lambda s, h, e: h / ".claude.json", ".mcp.json", typed=True
    ),
    "cursor": Host(
        "Cursor", "mcpServers", lambda s, h, e: h / ".cursor" / "mcp.json", ".cursor/mcp.json"
    ),
    "vscode": Host("VS Code", "vscode", _vscode, ".vscode/mcp.json", typed=True),
    "gemini-cli": Host(
        "Gemini CLI",
        "mcpServers",
        lambda s, h, e: h / ".gemini" / "settings.json",
        ".gemini/settings.json",
    ),
    "goose": Host("Goose", "goose", _goose, None),
}


def user_config_path(
    host: Host,
    *,
    system: str | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The host's user-level file on ``system`` (default: this machine)."""
    return host.user_file(
        system or sys.platform,
        home if home is not None else Path.home(),
        env if env is not None else os.environ,
    )


#: Goose's own defaults for a command-line extension (what "goose configure" writes).
GOOSE_TIMEOUT_S = 300


def entry_for(host: Host, name: str, launch: Launch, *, description: str | None) -> dict[str, Any]:
    """The configuration entry ``host`` keeps for the server."""
    if host.format == "goose":
        return {
            "name": name,
            "type": "stdio",
            "cmd": launch.command,
            "args": launch.args,
            "envs": launch.env,
            "env_keys": [],
            "enabled": True,
            "timeout": GOOSE_TIMEOUT_S,
            "bundled": None,
            "description": description or "",
        }
    entry: dict[str, Any] = {"type": "stdio"} if host.typed else {}
    entry.update(command=launch.command, args=launch.args)
    if launch.env:
        entry["env"] = launch.env
    return entry


def entry_key(host: Host, name: str) -> str:
    """The key the entry is stored under: the name, or for Goose the key Goose derives
    from it (its ``name_to_key``: whitespace dropped, lowercase, other characters than
    letters, digits, ``_`` and ``-`` folded to ``_``), so Goose finds the entry it made."""
    if host.format != "goose":
        return name
    folded = (
        c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name if not c.isspace()
    )
    return "".join(folded).lower()


def servers_key(host: Host) -> str:
    return {"mcpServers": "mcpServers", "vscode": "servers", "goose": "extensions"}[host.format]


def env_key(host: Host) -> str:
    return "envs" if host.format == "goose" else "env"


# Strings are matched first so that what looks like a comment inside one stays.
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')


def parse_jsonc(text: str) -> Any:
    """JSON with comments and trailing commas (VS Code's settings files), as a value."""
    import json

    def keep_strings(match: re.Match[str]) -> str:
        return match.group(0) if match.group(0).startswith('"') else ""

    return json.loads(_TRAILING_COMMA.sub(keep_strings, _COMMENT.sub(keep_strings, text)))
