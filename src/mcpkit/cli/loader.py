"""Find the server a command line names: ``FILE[:OBJECT]`` or ``pkg.module[:OBJECT]``.

``OBJECT`` is a dotted attribute path; without it the :class:`MCPServer` named
``mcp``, ``server`` or ``app`` is used (the names FastMCP's and the official
SDK's examples use; it is an error when two of them are different servers), else
a factory named ``server``, else the module's only ``MCPServer``. The object may
also be a factory: a callable taking no arguments (sync or async) that returns an
``MCPServer``.

Two kinds of failure, told apart because the user acts differently:
:class:`LoadError` (the target is wrong: nothing to debug, one line) and
:class:`UserCodeError` (the user's module or factory raised: the traceback of
their code matters).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["LoadError", "UserCodeError", "load_server", "split_target"]

DEFAULT_OBJECT = "server"
#: The names looked for without ``:OBJECT``, in this order.
DEFAULT_NAMES = ("mcp", "server", "app")


class LoadError(Exception):
    """The target cannot be loaded; ``str(exc)`` is one line for the user."""


class UserCodeError(Exception):
    """The user's module or factory raised ``original`` while loading."""

    def __init__(self, action: str, original: BaseException) -> None:
        from ..errors import MCPKitError

        self.action = action
        self.original = original
        # A developer error mcpkit words itself (a registration problem...) needs no
        # class name, and no traceback: its message names the tool and parameter.
        self.worded = isinstance(original, MCPKitError)
        kind = "" if self.worded else f"{type(original).__name__}: "
        super().__init__(f"{action} failed: {kind}{original}")

    def report(self) -> str:
        """The user's traceback without mcpkit's loader frames ("" for an mcpkit error,
        which the summary line says in full)."""
        if self.worded:
            return ""
        tb = _user_frames(self.original.__traceback__)
        lines = traceback.format_exception(type(self.original), self.original, tb)
        return "".join(lines).rstrip("\n")


def _user_frames(tb: TracebackType | None) -> TracebackType | None:
    here = os.path.dirname(os.path.abspath(__file__))
    while tb is not None and (
        os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == here
        or tb.tb_frame.f_code.co_filename.startswith("<frozen importlib")
    ):
        tb = tb.tb_next
    return tb


def split_target(target: str) -> tuple[str, str | None]:
    """``"app.py:make"`` → ``("app.py", "make")``; a Windows drive colon is not a split."""
    where, sep, attr = target.rpartition(":")
    if sep and where and all(part.isidentifier() for part in attr.split(".")):
        return where, attr
    return target, None


def _looks_like_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where or os.path.isfile(where)


def load_server(target: str) -> MCPServer:
    """The :class:`MCPServer` that ``target`` names; raises LoadError or UserCodeError."""
    where, attr = split_target(target)
    if _looks_like_path(where):
        module = _import_file(Path(where))
    else:
        module = _import_module(where)
    return _server_from(module, where, attr)


def _import_file(path: Path) -> ModuleType:
    if not path.exists():
        raise LoadError(f"file not found: {path}")
    if not path.is_file():
        raise LoadError(f"not a Python file: {path}")
    path = path.resolve()
    # Like `python FILE`: the file's directory comes first on sys.path, so its
    # sibling modules import.
    sys.path.insert(0, str(path.parent))
    name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else None
    name = name or f"_mcpkit_target_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    # Registered before running, as the import system does: pydantic and
    # dataclasses look their module up in sys.modules while it executes.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UserCodeError(f"importing {path.name}", exc) from exc
    return module


def _import_module(name: str) -> ModuleType:
    # Like `python -m`: the current directory is importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            raise LoadError(f"no file or module named {name!r}") from None
        raise UserCodeError(f"importing {name}", exc) from exc
    except Exception as exc:
        raise UserCodeError(f"importing {name}", exc) from exc


def _server_from(module: ModuleType, where: str, attr: str | None) -> MCPServer:
    from ..server.server import MCPServer

    if attr is None:
        attr = _default_object(module, where)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise LoadError(f"{where} has no object named {attr!r}") from None
    if isinstance(obj, MCPServer):
        return obj
    if not callable(obj):
        raise LoadError(f"{where}:{attr} is {_a(obj)}, not an MCPServer")
    return _call_factory(obj, where, attr)


def _default_object(module: ModuleType, where: str) -> str:
    """The name of the server to serve when the target names none (see the module doc)."""
    from ..server.server import MCPServer

    found: dict[int, str] = {}
    for name in DEFAULT_NAMES:
        value = getattr(module, name, None)
        if isinstance(value, MCPServer):
            found.setdefault(id(value), name)
    if len(found) > 1:
        names = " and ".join(found.values())
        raise LoadError(f"{where} has several servers ({names}); name one as {where}:OBJECT")
    if found:
        return next(iter(found.values()))
    if hasattr(module, DEFAULT_OBJECT):  # a factory, or something else said to be wrong
        return DEFAULT_OBJECT
    servers = sorted(k for k, v in vars(module).items() if isinstance(v, MCPServer))
    if len(servers) != 1:
        several = f" (it has {', '.join(servers)})" if servers else ""
        raise LoadError(
            f"{where} has no server named {', '.join(DEFAULT_NAMES[:-1])} or "
            f"{DEFAULT_NAMES[-1]}{several}; name one as {where}:OBJECT"
        )
    return servers[0]


def _call_factory(factory: Any, where: str, attr: str) -> MCPServer:
    from ..server.server import MCPServer

    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        required = [
            p.name
            for p in sig.parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if required:
            raise LoadError(
                f"{where}:{attr} is not an MCPServer, and as a factory it needs arguments "
                f"({', '.join(required)}); a factory must take none"
            )
    try:
        result = factory()
        if inspect.isawaitable(result):
            import asyncio

            result = asyncio.run(_await(result))
    except Exception as exc:
        raise UserCodeError(f"calling {attr}()", exc) from exc
    if not isinstance(result, MCPServer):
        raise LoadError(f"{where}:{attr}() returned {_a(result)}, not an MCPServer")
    return result


def _a(obj: object) -> str:
    name = type(obj).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


async def _await(awaitable: Any) -> Any:
    return await awaitable
