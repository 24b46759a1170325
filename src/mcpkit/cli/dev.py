"""``mcpkit dev FILE[:OBJECT]``: the server over HTTP with hot reload, and the MCP Inspector on it.

It is ``mcpkit run FILE -t http --reload`` (see :mod:`.reload`) plus, once the
server listens, the official MCP Inspector started with ``npx`` and pointed at
the server's URL. The Inspector's own output is passed on (prefixed), and the
address of its web UI, with its session token, is repeated on one line of ours.
The Inspector is stopped with the server.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from typing import IO

__all__ = ["HELP", "INSPECTOR", "configure", "inspector_command", "run"]

HELP = "develop a server: serve it over HTTP with hot reload and open the MCP Inspector on it"

#: The npm package of the official MCP Inspector.
INSPECTOR = "@modelcontextprotocol/inspector"
#: The oldest Node.js the Inspector supports (its package's "engines").
INSPECTOR_NODE = 22

NO_NPX = (
    "mcpkit dev starts the MCP Inspector with npx, which is not on PATH: install Node.js "
    f"{INSPECTOR_NODE} or newer (https://nodejs.org), or serve without the Inspector: "
    "mcpkit dev FILE --no-inspector"
)

# The Inspector's UI address, as it prints it (with the session token in the query).
_UI_URL = re.compile(r"https?://(?:localhost|127\.0\.0\.1|\[::1\]):\d+/?\S*")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a Python file or module and the server object in it (default: 'server')",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port, 0 for any free one (8000)")
    parser.add_argument("--path", default="/mcp", help="the MCP endpoint's path (/mcp)")
    parser.add_argument(
        "--reload-dir", action="append", metavar="DIR", help="watch DIR too (repeatable)"
    )
    parser.add_argument(
        "--no-inspector", action="store_true", help="serve with hot reload only (no Node needed)"
    )


def inspector_command(npx: str, url: str) -> list[str]:
    """The command that starts the Inspector connected to the Streamable HTTP ``url``."""
    # -y: no "Need to install the following packages" question on a first run.
    return [npx, "-y", INSPECTOR, "--transport", "http", "--server-url", url]


def _node_warning() -> str | None:
    """A warning when ``node`` is older than the Inspector needs (it may still start)."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.match(r"v(\d+)", done.stdout.strip())
    if found is None or int(found.group(1)) >= INSPECTOR_NODE:
        return None
    return (
        f"mcpkit: warning: the MCP Inspector needs Node.js {INSPECTOR_NODE} or newer; "
        f"node is {done.stdout.strip()}"
    )


class _Inspector:
    """The Inspector's process, started once the server listens."""

    def __init__(self, npx: str, path: str) -> None:
        self.npx = npx
        self.path = path
        self.process: subprocess.Popen[str] | None = None

    def start(self, server_url: str) -> None:
        url = f"{server_url}{self.path}"
        command = inspector_command(self.npx, url)
        print(
            f"mcpkit: starting the MCP Inspector for {url}: {' '.join(command[1:])}",
            file=sys.stderr,
        )
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,  # its own group: stopped as a whole, after the server
            )
        except OSError as exc:
            print(f"mcpkit: error: cannot start the MCP Inspector: {exc}", file=sys.stderr)
            return
        assert self.process.stdout is not None
        threading.Thread(target=_relay, args=(self.process.stdout, url), daemon=True).start()

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)  # npx and the node server it started
        except (ProcessLookupError, PermissionError, AttributeError):
            process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _relay(stream: IO[str], server_url: str) -> None:
    """Pass the Inspector's lines on; say where its UI is, once."""
    told = False
    for line in stream:
        text = line.rstrip()
        if text:
            print(f"inspector: {text}", file=sys.stderr, flush=True)
        found = None if told else inspector_ui_url(text, server_url)
        if found is not None:
            told = True
            print(f"mcpkit: MCP Inspector: {found}", file=sys.stderr, flush=True)


def inspector_ui_url(line: str, server_url: str) -> str | None:
    """The Inspector's UI address in one of its lines (not the server's own URL)."""
    for found in _UI_URL.finditer(line):
        url = found.group(0).rstrip(".,;)'\"")
        if not url.startswith(server_url):
            return url
    return None


def run(args: argparse.Namespace) -> int:
    from . import run as run_command

    inspector: _Inspector | None = None
    if not args.no_inspector:
        npx = shutil.which("npx")
        if npx is None:
            print(f"mcpkit: error: {NO_NPX}", file=sys.stderr)
            return 2
        warning = _node_warning()
        if warning is not None:
            print(warning, file=sys.stderr)
        inspector = _Inspector(npx, args.path)
    parser = argparse.ArgumentParser(prog="mcpkit run")
    run_command.configure(parser)
    argv = [args.target, "-t", "http", "--reload", "--host", args.host, "--port", str(args.port)]
    argv += ["--path", args.path]
    for directory in args.reload_dir or ():
        argv += ["--reload-dir", directory]
    run_args = parser.parse_args(argv)
    if inspector is not None:
        run_args.on_serving = inspector.start  # called once the server listens
    try:
        status: int = run_command.run(run_args)
    finally:
        if inspector is not None:
            inspector.stop()
    return status
