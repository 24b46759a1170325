"""The stdio driver: a deliberately cheap, blocking MCP client over pipes.

The same driver talks to every server so that only the server differs.
Requests are encoded before the clock starts; a round trip is one
``write`` + ``flush`` of a ready line and one blocking ``readline``. No
asyncio, no JSON encoding on the clock, and only a cheap check of each answer
(a full parse of small answers with orjson; a length and id check of 1 MB
answers, fully parsed once per batch) so that the driver's cost stays far
below any server's.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

import orjson
from _util import PROTOCOL_VERSION, child_env, pinned, stop


def encode(msg: dict[str, Any]) -> bytes:
    return orjson.dumps(msg) + b"\n"


def echo_request(rid: int, text: str) -> bytes:
    return encode(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        }
    )


INITIALIZE = encode(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcpkit-bench", "version": "0"},
        },
    }
)
INITIALIZED = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})
TOOLS_LIST = encode({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


class ProtocolFailure(RuntimeError):
    """The server's answer was not the expected result (so its timing would be meaningless)."""


class StdioPeer:
    """A server process spoken to over its stdin/stdout.

    Reads block, so a watchdog thread kills a server that leaves a request
    unanswered for ``timeout`` seconds; the read then sees end-of-file and
    the benchmark reports the failure instead of hanging.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cpu: int | None = None,
        timeout: float = 30.0,
        stderr: IO[bytes] | int = subprocess.DEVNULL,
    ) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self.busy_since: float | None = None
        self.timed_out = False
        self.proc = subprocess.Popen(
            pinned(self.argv, cpu),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            bufsize=1 << 16,
            env=child_env(),
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin = self.proc.stdin
        self._readline = self.proc.stdout.readline
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while self.proc.poll() is None:
            time.sleep(0.25)
            since = self.busy_since
            if since is not None and time.perf_counter() - since > self.timeout:
                self.timed_out = True
                self.proc.kill()
                return

    def send(self, data: bytes) -> None:
        self.busy_since = time.perf_counter()
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except BrokenPipeError:
            raise ProtocolFailure(
                f"{self.argv[-1]}: stdin closed (exit code {self.proc.poll()})"
            ) from None

    def read_response(self) -> bytes:
        """The next line that is a response (skipping notifications and log lines)."""
        while True:
            line = self._readline()
            if not line:
                why = f"no answer within {self.timeout:g} s" if self.timed_out else "stdout closed"
                raise ProtocolFailure(f"{self.argv[-1]}: {why} (exit code {self.proc.poll()})")
            head = line[:80]
            if b'"method"' in head and b'"result"' not in head and b'"error"' not in head:
                continue  # a notification or a server→client request
            self.busy_since = None
            return line

    def call(self, data: bytes) -> dict[str, Any]:
        self.send(data)
        msg: dict[str, Any] = orjson.loads(self.read_response())
        if "error" in msg:
            raise ProtocolFailure(f"{self.argv[-1]}: error response {msg['error']}")
        return msg

    def handshake(self) -> None:
        result = self.call(INITIALIZE)["result"]
        if "protocolVersion" not in result:
            raise ProtocolFailure(f"bad initialize result: {result}")
        self.send(INITIALIZED)

    def list_tools(self) -> list[str]:
        return [t["name"] for t in self.call(TOOLS_LIST)["result"]["tools"]]

    def close(self) -> None:
        stop(self.proc)


def check_echo(line: bytes, rid: int, text: str) -> None:
    msg = orjson.loads(line)
    if msg.get("id") != rid or "result" not in msg:
        raise ProtocolFailure(f"unexpected answer to request {rid}: {line[:200]!r}")
    result = msg["result"]
    content = result.get("content") or [{}]
    if result.get("isError") or content[0].get("text") != text:
        raise ProtocolFailure(f"echo result is wrong for request {rid}: {line[:200]!r}")


def echo_batch(peer: StdioPeer, requests: Sequence[bytes], first_id: int, text: str) -> float:
    """Send ``requests`` one after another; the elapsed seconds.

    Small answers are parsed and checked in full (orjson, about a microsecond);
    1 MB answers get a length and id check, with the batch's first and last
    answers parsed in full, so the driver does not add a JSON parse of its own
    to every large round trip.
    """
    send = peer.send
    read = peer.read_response
    big = len(text) > 4096
    last = len(requests) - 1
    start = time.perf_counter()
    for i, data in enumerate(requests):
        send(data)
        line = read()
        rid = first_id + i
        if not big or i == 0 or i == last:
            check_echo(line, rid, text)
        elif len(line) < len(text) or not _has_id(line, rid):
            raise ProtocolFailure(f"1 MB answer to request {rid} is wrong: {line[:200]!r}")
    return time.perf_counter() - start


def _has_id(line: bytes, rid: int) -> bool:
    # Servers differ in key order and in spacing (stdlib json writes '"id": 5').
    ends = (line[:64] + b"|" + line[-64:]).replace(b" ", b"")
    token = b'"id":%d' % rid
    return token + b"," in ends or token + b"}" in ends
