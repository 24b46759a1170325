#!/usr/bin/env python3
"""Use an installed mcpkit as a new user does, with nothing but the standard library.

Usage: PYTHON scripts/smoke_install.py stdio|extras|http

Run by ``.ci/run`` with the interpreter of a fresh virtual environment into which
only ``pip install .`` (``stdio``, ``extras``) or ``pip install '.[http]'`` (``http``)
went, on every Python the package claims:

* ``stdio``: the README's first example, saved to a file and started as
  ``python app.py`` and as ``mcpkit run app.py`` (the way desktop clients start
  servers): ``initialize``, then ``tools/call add`` of a ``def`` tool, which runs
  in a worker thread.
* ``extras``: without any extra installed, importing a module that needs one ends
  with the one message naming the feature and the extra (one line per extra, as a
  user's traceback shows it), every other module and public name either loads or
  raises that error (never a bare ``ModuleNotFoundError``), and ``mcpkit run app.py
  --transport http`` says that serving over HTTP needs the ``http`` extra.
* ``http``: ``mcpkit run examples/demo_server.py --transport http`` on a free port,
  the README's first command: ``initialize`` and ``tools/call`` over Streamable HTTP.

It prints one line per check and exits non-zero at the first failure. Every wait
is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 30.0

APP = '''\
from mcpkit import MCPServer

server = MCPServer(name="Demo", version="1.0.0")

@server.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@server.tool
def multiply(a: int, b: int) -> int:
    """A plain def tool: it runs in a worker thread."""
    return a * b

if __name__ == "__main__":
    server.run_stdio()
'''

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "smoke", "version": "0"},
}


class SmokeFailure(Exception):
    pass


def mcpkit_command() -> list[str]:
    beside = Path(sys.executable).parent / "mcpkit"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("mcpkit")
    if found is None:
        raise SmokeFailure("the 'mcpkit' command was not installed")
    return [found]


def _stdio_exchange(cmd: list[str]) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "multiply", "arguments": {"a": 6, "b": 7}},
        },
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    # The server answers what it has read, then ends at EOF on its stdin.
    try:
        done = subprocess.run(
            cmd, input=stdin.encode(), capture_output=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise SmokeFailure(f"{cmd} did not finish within {TIMEOUT:.0f} s") from None
    answers: dict[int, Any] = {}
    for line in done.stdout.decode().splitlines():
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
    stderr = done.stderr.decode(errors="replace").strip()
    for request_id, expected in ((2, "5"), (3, "42")):
        answer = answers.get(request_id)
        if (
            answer is None
            or answer.get("result", {}).get("content", [{}])[0].get("text") != expected
        ):
            raise SmokeFailure(
                f"{cmd}: request {request_id} answered {answer!r}, expected {expected}; "
                f"exit {done.returncode}; stderr:\n{stderr}"
            )
    if done.returncode != 0:
        raise SmokeFailure(f"{cmd} exited {done.returncode} at EOF; stderr:\n{stderr}")


def smoke_stdio() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "app.py"
        app.write_text(APP)
        _stdio_exchange([sys.executable, str(app)])
        print("ok: python app.py (run_stdio) answers an async and a def tool")
        _stdio_exchange([*mcpkit_command(), "run", str(app)])
        print("ok: mcpkit run app.py (stdio) answers an async and a def tool")


# extra, a module that needs it, the package it misses first, the feature the message names
EXTRAS = [
    ("http", "mcpkit.transports.serve", "uvicorn", "serving over HTTP (mcpkit.transports.serve)"),
    (
        "client",
        "mcpkit.client.transports.streamable_http",
        "httpx",
        "the Streamable HTTP client transport (mcpkit.client.transports.streamable_http)",
    ),
    ("auth", "mcpkit.auth.jwt", "httpx", "JWT access token verification (mcpkit.auth.jwt)"),
    ("redis", "mcpkit.stores.redis", "redis", "the Redis store (mcpkit.stores.redis)"),
    (
        "tasks-queue",
        "mcpkit.extensions.tasks.queue",
        "docket",
        "the tasks job queue (mcpkit.extensions.tasks.queue)",
    ),
    (
        "openapi",
        "mcpkit.compose.openapi.parse",
        "openapi_pydantic",
        "OpenAPI import (mcpkit.compose.openapi.parse)",
    ),
    (
        "redis",
        "mcpkit.middleware.redis",
        "redis",
        "the built-in middleware on Redis (mcpkit.middleware.redis)",
    ),
    (
        "pydantic-ai",
        "mcpkit.adapters.pydantic_ai",
        "pydantic_ai",
        "the pydantic-ai adapter (mcpkit.adapters.pydantic_ai)",
    ),
    (
        "pydantic-ai",
        "mcpkit.frameworks.pydantic_ai",
        "pydantic_ai",
        "the pydantic-ai toolset (mcpkit.frameworks.pydantic_ai)",
    ),
    (
        "langchain",
        "mcpkit.frameworks.langchain",
        "langchain_core",
        "the LangChain tools (mcpkit.frameworks.langchain)",
    ),
]


def _missing(feature: str, package: str, extra: str) -> str:
    return f"{feature} needs {package}, which is not installed: pip install 'mcpkit[{extra}]'"


# Every module, and every name of its __all__: loaded, or MissingExtra; anything else is
# printed. Run in a fresh interpreter, as a user's program would.
WALK = """
import importlib, pkgutil, mcpkit
from mcpkit.errors import MissingExtra
loaded = missing = 0
for info in pkgutil.walk_packages(mcpkit.__path__, "mcpkit."):
    if info.name.endswith(".__main__"):
        continue
    try:
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            try:
                getattr(module, name)
            except MissingExtra:
                pass
        loaded += 1
    except MissingExtra:
        missing += 1
    except Exception as exc:
        print(f"BAD {info.name}: {type(exc).__name__}: {exc}")
print(f"{loaded} {missing}")
"""


def smoke_extras() -> None:
    for extra, module, package, feature in EXTRAS:
        if _importable(package):
            raise SmokeFailure(f"{package} is installed; this check is for installs without it")
        try:
            done = subprocess.run(
                [sys.executable, "-c", f"import {module}"],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SmokeFailure(f"import {module} did not finish within {TIMEOUT:.0f} s") from None
        last = (done.stderr.strip().splitlines() or [""])[-1]
        expected = f"mcpkit.errors.MissingExtra: {_missing(feature, package, extra)}"
        if done.returncode == 0 or last != expected:
            raise SmokeFailure(
                f"import {module} without {package}: exit {done.returncode}, last line "
                f"{last!r}, expected {expected!r}"
            )
        print(f"ok: mcpkit[{extra}]: import {module} names the extra")
    try:
        walk = subprocess.run(
            [sys.executable, "-c", WALK],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SmokeFailure(f"importing every module took over {TIMEOUT:.0f} s") from None
    lines = walk.stdout.strip().splitlines()
    if walk.returncode != 0 or not lines or len(lines) > 1:
        raise SmokeFailure(f"importing every module:\n{walk.stdout}{walk.stderr}")
    loaded, missing = lines[0].split()
    print(f"ok: every module loads ({loaded}) or names its missing extra ({missing})")
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "app.py"
        app.write_text(APP)
        cmd = [*mcpkit_command(), "run", str(app), "--transport", "http", "--port", "0"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise SmokeFailure(f"{cmd} did not finish within {TIMEOUT:.0f} s") from None
    expected = "mcpkit: error: " + _missing(
        "serving over HTTP (mcpkit.transports.serve)", "uvicorn", "http"
    )
    if (done.returncode, done.stderr.strip()) != (1, expected):
        raise SmokeFailure(
            f"{cmd}: exit {done.returncode}, stderr {done.stderr.strip()!r}, expected exit 1 "
            f"and {expected!r}"
        )
    print("ok: mcpkit run app.py --transport http names the http extra")


def _post(url: str, body: dict[str, Any], session: str | None) -> tuple[dict[str, Any], str | None]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-11-25"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        raw = response.read().decode()
        session = response.headers.get("Mcp-Session-Id", session)
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in raw.splitlines() if line.startswith("data:")]
            raw = next(d for d in data if d)
    return (json.loads(raw) if raw.strip() else {}), session  # 202: a notification, no body


def smoke_http() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [
        *mcpkit_command(),
        "run",
        "examples/demo_server.py",
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                init, session = _post(
                    url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, None
                )
                break
            except (OSError, urllib.error.URLError) as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    err = proc.communicate(timeout=TIMEOUT)[1].decode(errors="replace")
                    raise SmokeFailure(
                        f"{cmd} did not serve {url} ({exc}); stderr:\n{err}"
                    ) from None
                time.sleep(0.2)
        if init.get("result", {}).get("serverInfo", {}).get("name") != "Demo":
            raise SmokeFailure(f"initialize answered {init!r}")
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call, _ = _post(
            url,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 40}},
            },
            session,
        )
        if call.get("result", {}).get("content", [{}])[0].get("text") != "42":
            raise SmokeFailure(f"tools/call add answered {call!r}")
        print(f"ok: mcpkit run examples/demo_server.py --transport http serves {url}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    checks = {"stdio": smoke_stdio, "extras": smoke_extras, "http": smoke_http}
    if mode not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    version = ".".join(map(str, sys.version_info[:3]))
    print(f"smoke ({mode}) on Python {version}, {sys.executable}")
    for name in ("uvloop", "httptools"):
        if _importable(name):
            print(f"error: {name} is installed; this smoke test is for installs without it")
            return 1
    try:
        checks[mode]()
    except SmokeFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


def _importable(name: str) -> bool:
    return (
        subprocess.run(
            [sys.executable, "-c", f"import {name}"],
            capture_output=True,
            check=False,
            env=dict(os.environ, PYTHONPATH=""),
        ).returncode
        == 0
    )


if __name__ == "__main__":
    sys.exit(main())
