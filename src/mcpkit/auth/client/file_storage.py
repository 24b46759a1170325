"""A token store in a file private to the user, for command-line and desktop clients.

One JSON file per store (by default ``mcpkit/oauth-tokens.json`` under the
user's configuration directory: ``$XDG_CONFIG_HOME`` or ``~/.config``, or
``%APPDATA%`` on Windows). The file is created with mode ``0600`` and rewritten
atomically (a temporary ``0600`` file renamed over it), so a crash never leaves
half a file and no other user can read it at any moment; its directory is made
``0700``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .storage import ClientRegistration, OAuthTokens

__all__ = ["FileTokenStorage", "default_token_path"]


def default_token_path() -> Path:
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "mcpkit" / "oauth-tokens.json"


class FileTokenStorage:
    """Tokens and registrations of every server in one ``0600`` JSON file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_token_path()
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable: start over rather than fail every connection
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".oauth-", dir=directory)  # mkstemp: mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def _entry(self, key: str) -> dict[str, Any]:
        data = await asyncio.to_thread(self._read)
        entry = data.get(key)
        return entry if isinstance(entry, dict) else {}

    async def _update(self, key: str, field: str, value: dict[str, Any] | None) -> None:
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            entry = data.get(key) if isinstance(data.get(key), dict) else {}
            assert isinstance(entry, dict)
            if value is None:
                data.pop(key, None)
            else:
                entry[field] = value
                data[key] = entry
            await asyncio.to_thread(self._write, data)

    async def load_tokens(self, key: str) -> OAuthTokens | None:
        raw = (await self._entry(key)).get("tokens")
        return OAuthTokens.from_json(raw) if isinstance(raw, dict) else None

    async def save_tokens(self, key: str, tokens: OAuthTokens) -> None:
        await self._update(key, "tokens", tokens.to_json())

    async def load_registration(self, key: str) -> ClientRegistration | None:
        raw = (await self._entry(key)).get("registration")
        return ClientRegistration.from_json(raw) if isinstance(raw, dict) else None

    async def save_registration(self, key: str, registration: ClientRegistration) -> None:
        await self._update(key, "registration", registration.to_json())

    async def clear(self, key: str) -> None:
        await self._update(key, "", None)
