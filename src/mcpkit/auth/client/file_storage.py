"""A token store in a file private to the user, shared safely by every process of that user.

One file per store (by default ``mcpkit/oauth-tokens.json`` under the user's
configuration directory: ``$XDG_CONFIG_HOME`` or ``~/.config``, or ``%APPDATA%``
on Windows), mode ``0600`` in a ``0700`` directory.

**One entry per line**, so damage stays local: a header line
``{"mcpkit_oauth_tokens": 2}``, then one JSON line per server,
``{"server": <url>, "tokens": {...}, "registration": {...}}``. A line that does
not parse (a file cut short, a hand edit gone wrong) loses that server's entry
only, with a warning that names the line, never its content; the other entries
are kept and the next save rewrites the file without it. The single JSON object
written by earlier versions (``{<url>: {"tokens": ..., "registration": ...}}``)
is still read, and when it is damaged every entry before the damage is
recovered; the next save writes the line format.

**Concurrent processes merge.** Every change is a read-modify-write made under an
exclusive lock on the sibling file ``<name>.lock`` (``fcntl.flock`` on POSIX,
``msvcrt.locking`` on Windows), waited for at most ``lock_timeout`` seconds
(then :class:`~mcpkit.errors.StoreUnavailable`): two processes saving at once
both keep their entries. The new content goes to a temporary ``0600`` file in
the same directory, is flushed to disk (``fsync``), renamed over the file
(``os.replace``, atomic) and the directory synced, so a crash leaves the old
file or the new one, never half of one. On POSIX a reader takes no lock (the
rename makes each read see a whole file); on Windows, where a file open for
reading cannot be replaced, readers take the lock too. The lock is advisory
and assumes a local file system (``flock`` over NFS may not exclude anything).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from ...errors import StoreUnavailable
from .storage import ClientRegistration, OAuthTokens

__all__ = ["FileTokenStorage", "default_token_path", "parse_token_file"]

log = logging.getLogger("mcpkit.auth.client")

_HEADER: Final = "mcpkit_oauth_tokens"
_VERSION: Final = 2
_FIELDS: Final = ("tokens", "registration")

Entries = dict[str, dict[str, Any]]


def default_token_path() -> Path:
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "mcpkit" / "oauth-tokens.json"


# -- the format ----------------------------------------------------------------------------
def _entry(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    entry = {k: value[k] for k in _FIELDS if isinstance(value.get(k), dict)}
    return entry or None


def _lines(lines: list[str], first: int) -> tuple[Entries, list[str]]:
    entries: Entries = {}
    problems: list[str] = []
    for number, line in enumerate(lines, first):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        server = value.get("server") if isinstance(value, dict) else None
        entry = _entry(value)
        if not isinstance(server, str) or entry is None:
            problems.append(f"line {number}")
            continue
        entries[server] = entry
    return entries, problems


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _salvage(text: str) -> tuple[Entries, list[str]]:
    """The entries of a version 1 object up to where it is damaged (cut short, usually)."""
    decoder = json.JSONDecoder()
    entries: Entries = {}
    i = _skip(text, 0)
    if text[i : i + 1] != "{":
        return entries, ["the whole file (not a token file)"]
    i += 1
    while True:
        i = _skip(text, i)
        if text[i : i + 1] == "}":
            return entries, []
        try:
            key, i = decoder.raw_decode(text, i)
            i = _skip(text, i)
            if text[i : i + 1] != ":":
                raise ValueError("no colon")
            value, i = decoder.raw_decode(text, _skip(text, i + 1))
        except ValueError:
            return entries, [f"everything after entry {len(entries)}"]
        entry = _entry(value)
        if isinstance(key, str) and entry is not None:
            entries[key] = entry
        i = _skip(text, i)
        if text[i : i + 1] == ",":
            i += 1
        elif text[i : i + 1] != "}":
            return entries, [f"everything after entry {len(entries)}"]


def parse_token_file(text: str) -> tuple[Entries, list[str]]:
    """``(entries, damaged parts)`` of a token file's text, in either format.

    ``entries`` maps each server to ``{"tokens": ..., "registration": ...}``
    (either may be missing); the damaged parts are described by position only.
    """
    lines = text.splitlines()
    try:
        head = json.loads(lines[0]) if lines else None
    except ValueError:
        head = None
    if isinstance(head, dict) and _HEADER in head:
        return _lines(lines[1:], 2)
    if not text.strip():
        return {}, []
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):  # version 1, intact
        return {k: e for k, v in whole.items() if (e := _entry(v)) is not None}, []
    # Damaged: a version 1 object cut short, or the line format with its header damaged.
    salvaged = _salvage(text)
    by_line = _lines(lines, 1)
    return by_line if len(by_line[0]) > len(salvaged[0]) else salvaged


def _dump(entries: Entries) -> str:
    out = [json.dumps({_HEADER: _VERSION})]
    for server in sorted(entries):
        out.append(json.dumps({"server": server, **entries[server]}, sort_keys=True))
    return "\n".join(out) + "\n"


# -- the lock ------------------------------------------------------------------------------
if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def _exclusive(path: Path, lock_path: Path, timeout: float) -> Iterator[None]:
    """Hold ``path``'s lock file exclusively, waiting at most ``timeout`` seconds for it."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise StoreUnavailable(
                    f"the OAuth token file {path} stayed locked by another process for "
                    f"{timeout:g} s (lock file {lock_path})"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    # POSIX: the rename is durable once the directory is synced. Windows cannot open one.
    if sys.platform == "win32":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- the store -----------------------------------------------------------------------------
class FileTokenStorage:
    """Tokens and registrations of every server in one ``0600`` file (see the module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, lock_timeout: float = 10.0
    ) -> None:
        self.path = Path(path) if path is not None else default_token_path()
        self.lock_timeout = lock_timeout
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._warned: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with _exclusive(self.path, self._lock_path, self.lock_timeout):
            yield

    def _load(self) -> Entries:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                stat = os.fstat(f.fileno())
                text = f.read()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot read the OAuth token file {self.path}: {type(exc).__name__}"
            ) from None
        entries, damaged = parse_token_file(text)
        state = (stat.st_mtime_ns, stat.st_size)
        if damaged and self._warned != state:
            self._warned = state  # once per version of the file, not on every request
            log.warning(
                "the OAuth token file %s is damaged (%s); kept the %d entries that are "
                "intact: the servers of the damaged part will ask to authorize again",
                self.path,
                ", ".join(damaged),
                len(entries),
            )
        return entries

    def _read(self) -> Entries:
        if sys.platform == "win32":
            with self._locked():
                return self._load()
        return self._load()

    def _write(self, entries: Entries) -> None:
        directory = self.path.parent
        fd, tmp = tempfile.mkstemp(prefix=".oauth-", dir=directory)  # mkstemp: mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(_dump(entries))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_directory(directory)

    def _change(self, key: str, field: str | None, value: dict[str, Any] | None) -> None:
        """Set ``field`` of ``key``'s entry (``field`` None: drop the entry), under the lock."""
        with self._locked():
            entries = self._load()
            if field is None:
                entries.pop(key, None)
            else:
                assert value is not None
                entries.setdefault(key, {})[field] = value
            self._write(entries)

    async def _field(self, key: str, field: str) -> dict[str, Any] | None:
        entries = await asyncio.to_thread(self._read)
        value = entries.get(key, {}).get(field)
        return value if isinstance(value, dict) else None

    def _damaged(self, key: str, field: str, exc: Exception) -> None:
        log.warning(
            "the OAuth token file %s holds unusable %s for %s (%s); ignored",
            self.path,
            field,
            key,
            type(exc).__name__,
        )

    async def load_tokens(self, key: str) -> OAuthTokens | None:
        raw = await self._field(key, "tokens")
        try:
            return OAuthTokens.from_json(raw) if raw is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            self._damaged(key, "tokens", exc)
            return None

    async def save_tokens(self, key: str, tokens: OAuthTokens) -> None:
        await asyncio.to_thread(self._change, key, "tokens", tokens.to_json())

    async def load_registration(self, key: str) -> ClientRegistration | None:
        raw = await self._field(key, "registration")
        try:
            return ClientRegistration.from_json(raw) if raw is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            self._damaged(key, "registration", exc)
            return None

    async def save_registration(self, key: str, registration: ClientRegistration) -> None:
        await asyncio.to_thread(self._change, key, "registration", registration.to_json())

    async def clear(self, key: str) -> None:
        await asyncio.to_thread(self._change, key, None, None)
