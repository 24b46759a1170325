"""``mcpkit install HOST FILE[:OBJECT]``: add a server to an MCP host's configuration.

The hosts, their files and formats are in :mod:`.hosts`. The entry starts the
server over stdio with the interpreter running ``mcpkit install`` (so the
environment that has the server's dependencies), or with ``uv run`` in the
project the file belongs to (``--uv``). Installing is idempotent: the same
entry again changes nothing, a changed one replaces the old one, keeping the
environment variables it had that are not given again; every other setting in
the file is kept. The file is backed up before it changes, and written
atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .hosts import Host, Launch

__all__ = ["HELP", "configure", "run"]

HELP = "add a server to the configuration of Claude Desktop, Claude Code, Cursor, VS Code, ..."


def configure(parser: argparse.ArgumentParser) -> None:
    from .hosts import HOSTS

    parser.add_argument("host", choices=tuple(HOSTS), help="the MCP host to configure")
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module and the server object in it (default: 'server')",
    )
    parser.add_argument(
        "--name", help="the name of the entry in the host (default: the server's name)"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the server (repeatable; wins over --env-file)",
    )
    parser.add_argument(
        "--env-file",
        metavar="PATH",
        help="environment variables from a .env file (KEY=VALUE lines)",
    )
    parser.add_argument(
        "--uv",
        action="store_true",
        help="start the server with 'uv run' in the file's project (the nearest pyproject.toml), "
        "instead of with this interpreter",
    )
    parser.add_argument(
        "--with",
        dest="with_packages",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="with --uv: one more package for the server's environment (repeatable)",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="write the project's configuration in DIR (.mcp.json, .cursor/mcp.json, "
        ".vscode/mcp.json, .gemini/settings.json) instead of the user's",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="the host's configuration file, when it is elsewhere"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be written, and write nothing"
    )


class _Refused(Exception):
    """A problem to report as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def run(args: argparse.Namespace) -> int:
    try:
        return _install(args)
    except _Refused as exc:
        print(f"mcpkit: error: {exc}", file=sys.stderr)
        return exc.status


def _install(args: argparse.Namespace) -> int:
    from .hosts import HOSTS, entry_for, entry_key, env_key, servers_key, user_config_path

    host = HOSTS[args.host]
    env = _environment(args)
    target, module_dir = _absolute_target(args.target)
    name, description = _name_and_description(args, target)
    launch = _launch(args, target, module_dir, env)
    path = _config_path(args, host, user_config_path)

    doc, original = _read(path, host)
    servers = doc.get(servers_key(host))
    if servers is None:
        servers = doc[servers_key(host)] = {}
    if not isinstance(servers, dict):
        raise _Refused(f"{path}: '{servers_key(host)}' is not an object; fix the file first", 1)
    entry = entry_for(host, name, launch, description=description)
    key = entry_key(host, name)
    previous = servers.get(key)
    if isinstance(previous, dict) and isinstance(previous.get(env_key(host)), dict):
        # Variables set by hand (a token added in the host's UI) survive a re-install.
        kept = {**previous[env_key(host)], **entry.get(env_key(host), {})}
        if kept:
            entry[env_key(host)] = kept
    servers[key] = entry
    text = _dump(doc, host)

    if args.dry_run:
        print(f"would write {path}:" if original != text else f"{path} is up to date:")
        sys.stdout.write(text)
        return 0
    if original == text:
        print(f"{host.title}: {name!r} is already installed in {path}; nothing changed")
        return 0
    backup = _write(path, text, existed=original is not None)
    saved = f" (backup: {backup})" if backup else ""
    verb = "updated" if previous is not None else "installed"
    print(f"{host.title}: {verb} {name!r} in {path}{saved}; restart {host.title} to load it")
    return 0


def _environment(args: argparse.Namespace) -> dict[str, str]:
    from .settings import SettingError, parse_env_file

    env: dict[str, str] = {}
    if args.env_file is not None:
        try:
            text = Path(args.env_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise _Refused(
                f"cannot read --env-file {args.env_file}: {exc.strerror or exc}"
            ) from None
        try:
            env.update(parse_env_file(text, args.env_file))
        except SettingError as exc:
            raise _Refused(str(exc)) from None
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _Refused(f"--env {item!r} is not KEY=VALUE")
        env[key.strip()] = value
    return env


def _absolute_target(target: str) -> tuple[str, str | None]:
    """The target with an absolute file path (the host starts it from anywhere), and, for a
    module name, the directory it is importable from."""
    from .loader import split_target

    where, attr = split_target(target)
    suffix = f":{attr}" if attr else ""
    if where.endswith(".py") or os.sep in where or "/" in where or os.path.isfile(where):
        path = Path(where)
        if not path.is_file():
            raise _Refused(f"file not found: {where}")
        return f"{path.resolve()}{suffix}", None
    return target, os.getcwd()


def _name_and_description(args: argparse.Namespace, target: str) -> tuple[str, str | None]:
    """``--name``, else the server's own name (loading the server; its file's stem when
    this interpreter cannot, as with ``--uv`` and dependencies only the project has)."""
    from .loader import LoadError, UserCodeError, load_server, split_target

    try:
        with contextlib.redirect_stdout(sys.stderr):
            server = load_server(target)
    except LoadError as exc:
        raise _Refused(str(exc)) from None
    except UserCodeError as exc:
        if args.name is None and not args.uv:
            raise _Refused(f"{exc} (give --name to install it anyway)", 1) from None
        where, _ = split_target(target)
        return args.name or Path(where).stem.rpartition(".")[2], None
    return args.name or server.name, server.description


def _launch(
    args: argparse.Namespace, target: str, module_dir: str | None, env: dict[str, str]
) -> Launch:
    from .hosts import Launch

    if module_dir is not None:
        # A module name is found from the directory it was named in, wherever the host runs.
        env = {"PYTHONPATH": module_dir, **env}
    if not args.uv:
        if args.with_packages:
            raise _Refused("--with needs --uv")
        return Launch(sys.executable, ["-m", "mcpkit", "run", target], env)
    uv = shutil.which("uv")
    if uv is None:
        raise _Refused("--uv: uv is not on PATH (https://docs.astral.sh/uv/ to install it)")
    from .loader import split_target

    start = Path(module_dir) if module_dir else Path(split_target(target)[0]).parent
    project = _project_of(start)
    uv_args = ["run"]
    # With a project, its own dependencies (mcpkit among them); without, mcpkit itself.
    uv_args += ["--project", str(project)] if project else ["--with", "mcpkit"]
    for package in args.with_packages:
        uv_args += ["--with", package]
    return Launch(uv, [*uv_args, "mcpkit", "run", target], env)


def _project_of(start: Path) -> Path | None:
    for directory in (start.resolve(), *start.resolve().parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def _config_path(args: argparse.Namespace, host: Host, user_config_path: Any) -> Path:
    if args.config is not None and args.project is not None:
        raise _Refused("give --config or --project, not both")
    if args.config is not None:
        return Path(args.config)
    if args.project is not None:
        if host.project_file is None:
            raise _Refused(f"{host.title} has no project configuration; drop --project")
        return Path(args.project) / host.project_file
    path: Path = user_config_path(host)
    return path


def _read(path: Path, host: Host) -> tuple[dict[str, Any], str | None]:
    """The file's document and its text (None when it does not exist yet)."""
    import json

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise _Refused(f"cannot read {path}: {exc.strerror or exc}", 1) from None
    if not text.strip():
        return {}, text
    try:
        if host.format == "goose":
            doc = _yaml().safe_load(text)
        elif host.format == "vscode":
            doc = _read_jsonc(path, text)
        else:
            doc = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and yaml.YAMLError's parse errors
        raise _Refused(
            f"{path} cannot be read ({exc}); fix it first, nothing was written", 1
        ) from None
    except Exception as exc:
        if type(exc).__module__.startswith("yaml"):
            raise _Refused(f"{path} is not valid YAML ({exc}); fix it first", 1) from None
        raise
    if doc is None:
        return {}, text
    if not isinstance(doc, dict):
        raise _Refused(f"{path} does not hold an object; fix it first, nothing was written", 1)
    return doc, text


def _read_jsonc(path: Path, text: str) -> Any:
    import json

    from .hosts import parse_jsonc

    try:
        return json.loads(text)
    except ValueError:
        doc = parse_jsonc(text)
    # Rewritten as plain JSON: say so, the backup keeps the comments.
    print(
        f"mcpkit: note: {path} has comments or trailing commas, which are not kept", file=sys.stderr
    )
    return doc


def _yaml() -> Any:
    from .._extras import require_extra
    from ..errors import MissingExtra

    try:
        with require_extra("devtools", feature="installing into Goose (a YAML file)"):
            import yaml  # type: ignore[import-untyped,unused-ignore]
    except MissingExtra as exc:
        raise _Refused(str(exc)) from None
    return yaml


def _dump(doc: dict[str, Any], host: Host) -> str:
    if host.format == "goose":
        text: str = _yaml().safe_dump(doc, sort_keys=False, allow_unicode=True)
        return text
    import json

    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, text: str, *, existed: bool) -> Path | None:
    """Write ``text`` atomically; returns the backup of the previous file, if there was one."""
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if existed:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            backup = path.with_name(f"{path.name}.{stamp}.bak")
            shutil.copy2(path, backup)
        temporary = path.with_name(f".{path.name}.mcpkit-tmp")
        temporary.write_text(text, encoding="utf-8")
        if existed:
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except OSError as exc:
        raise _Refused(f"cannot write {path}: {exc.strerror or exc}", 1) from None
    return backup
