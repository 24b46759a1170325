"""A raw JSON-RPC peer for a server subprocess on stdio, for the stdio and CLI tests.

It shows exactly what crosses the pipes: every line the server writes to
stdout must be one JSON message, and each is validated against the MCP schema
of the negotiated revision. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson

from tests import schema

TIMEOUT = 10.0
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SERVER = FIXTURES / "stdio_server.py"
REPO = Path(__file__).resolve().parents[2]

# Runs a module or script with uvloop made unimportable, as on a plain `pip install mcpkit`
# (uvloop only comes with extras): run_stdio and `mcpkit run` then make asyncio's own loop.
_WITHOUT_UVLOOP = (
    "import runpy, sys; sys.modules['uvloop'] = None; target = sys.argv.pop(1); "
    "runpy.run_module(target[2:], run_name='__main__', alter_sys=True) if target.startswith('-m') "
    "else runpy.run_path(target, run_name='__main__')"
)

# How the fixture server is started: run_stdio (uvloop when installed), serve_stdio
# on the stock asyncio loop, through the `mcpkit run` command, and the first and
# last again without uvloop.
LAUNCHERS: dict[str, list[str]] = {
    "run_stdio": [sys.executable, str(SERVER)],
    "asyncio": [sys.executable, str(SERVER), "--asyncio"],
    "cli": [sys.executable, "-m", "mcpkit", "run", str(SERVER)],
    "run_stdio_without_uvloop": [sys.executable, "-c", _WITHOUT_UVLOOP, str(SERVER)],
    "cli_without_uvloop": [sys.executable, "-c", _WITHOUT_UVLOOP, "-mmcpkit", "run", str(SERVER)],
}

INIT_PARAMS: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "stdio-test", "version": "0"},
}


class StdioPeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.revision = "2025-11-25"
        self.pending: dict[Any, str] = {}  # request id → method, to validate results
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._ids = itertools.count(1)
        assert proc.stderr is not None
        self._stderr_task = asyncio.ensure_future(self._drain_stderr(proc.stderr))

    @classmethod
    async def spawn(cls, argv: list[str], **kwargs: Any) -> StdioPeer:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,  # the tests send and receive 10 MB lines
            cwd=str(REPO),
            **kwargs,
        )
        return cls(proc)

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._stderr += chunk

    @property
    def stderr(self) -> str:
        return self._stderr.decode(errors="replace")

    # -- the wire ----------------------------------------------------------------------------
    async def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await asyncio.wait_for(self.proc.stdin.drain(), TIMEOUT)

    async def send(self, message: Any) -> None:
        if isinstance(message, dict) and "method" in message and "id" in message:
            self.pending[message["id"]] = message["method"]
        await self.send_bytes(orjson.dumps(message) + b"\n")

    async def recv(self, timeout: float = TIMEOUT) -> Any:
        """The next message on stdout (validated); fails on a non-JSON line or EOF."""
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise EOFError(f"server closed stdout; stderr:\n{self.stderr}")
        assert line.endswith(b"\n")
        message = orjson.loads(line)  # anything but JSON on stdout is a protocol violation
        for item in message if isinstance(message, list) else [message]:
            self._validate(item)
        return message

    def _validate(self, message: dict[str, Any]) -> None:
        method = None
        if "method" not in message:
            method = self.pending.pop(message.get("id"), None)
        schema.validate_message(message, self.revision, request_method=method)

    async def recv_response(self, rid: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """Read until the response to ``rid``, keeping notifications and server requests."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.recv(max(0.01, deadline - loop.time()))
            if isinstance(message, dict) and "method" in message:
                if "id" in message:
                    self.server_requests.append(message)
                else:
                    self.notifications.append(message)
                continue
            if isinstance(message, dict) and message.get("id") == rid:
                return message
            raise AssertionError(f"unexpected message while waiting for {rid!r}: {message!r}")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.recv_response(rid)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(self, **params: Any) -> dict[str, Any]:
        response = await self.request("initialize", {**INIT_PARAMS, **params})
        self.revision = response["result"]["protocolVersion"]
        await self.notify("notifications/initialized")
        return response["result"]  # type: ignore[no-any-return]

    async def call_tool(self, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return await self.request("tools/call", params)

    # -- ending ------------------------------------------------------------------------------
    async def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.proc.stdin.wait_closed()

    async def read_rest(self) -> list[Any]:
        """Every remaining message until the server closes stdout."""
        out = []
        while True:
            try:
                out.append(await self.recv())
            except EOFError:
                return out

    async def wait(self, timeout: float = TIMEOUT) -> int:
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        await asyncio.wait_for(self._stderr_task, timeout)
        return code

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    async def kill(self) -> None:
        """Make sure nothing outlives a test, whatever happened in it."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), TIMEOUT)
        self._stderr_task.cancel()
        with contextlib.suppress(BaseException):
            await self._stderr_task


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
