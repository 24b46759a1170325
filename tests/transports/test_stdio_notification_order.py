"""A request's notifications reach the client in an earlier read than its response.

Clients such as the official TypeScript SDK's dispatch every message of one read
before their notification handlers run, and forget a request's progress callback
when its response is dispatched: a ``notifications/progress`` read together with
the response is lost (``tests/interop/test_ts_sdk_client.py`` runs that client).
So a stdio server writes a response whose request sent notifications only once the
client has read them out of stdout. Here a raw client sends a call and reads
nothing for a while: what it then reads in one go holds the notifications but not
the response, which comes in a later read. stdout is a pipe (how Python's
subprocess launches a server) or a socketpair (how Node.js does).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.transports.stdio_peer import INIT_PARAMS, LAUNCHERS, REPO

# Generous: on a loaded machine a server process can take seconds to start.
TIMEOUT = 30.0
# Shorter than the server's bound on waiting for the client to read (1 s), so the
# client's pause is what it waits for.
NOT_READING_S = 0.1


class RawClient:
    """Writes lines to the server's stdin, and reads its stdout one read at a time."""

    def __init__(self, launcher: str, stdout: str) -> None:
        if stdout == "pipe":
            self._fd, theirs = os.pipe()
        else:
            ours, their_sock = socket.socketpair()
            self._fd, theirs = ours.detach(), their_sock.detach()
        self.proc = subprocess.Popen(
            LAUNCHERS[launcher], cwd=REPO, stdin=subprocess.PIPE, stdout=theirs
        )
        os.close(theirs)
        self._partial = b""

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(orjson.dumps(m) + b"\n" for m in messages))
        self.proc.stdin.flush()

    def read(self) -> list[dict[str, Any]]:
        """The whole messages of one read (waiting for it at most TIMEOUT)."""
        ready, _, _ = select.select([self._fd], [], [], TIMEOUT)
        assert ready, "the server wrote nothing"
        data = self._partial + os.read(self._fd, 1 << 20)
        *lines, self._partial = data.split(b"\n")
        return [orjson.loads(line) for line in lines]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._fd)


@pytest.fixture(params=["pipe", "socketpair"])
def stdout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.contextmanager
def connected(launcher: str, stdout: str) -> Iterator[RawClient]:
    client = RawClient(launcher, stdout)
    try:
        client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS})
        assert client.read()[0]["id"] == 0
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client
    finally:
        client.close()


def call_with_progress(rid: int, steps: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {
            "name": "progress",
            "arguments": {"steps": steps},
            "_meta": {"progressToken": rid},
        },
    }


def read_until_answered(client: RawClient, rid: int) -> list[list[dict[str, Any]]]:
    reads: list[list[dict[str, Any]]] = []
    while not any(m.get("id") == rid for batch in reads for m in batch):
        reads.append(client.read())
    return reads


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
def test_the_response_is_read_after_the_requests_notifications(launcher: str, stdout: str) -> None:
    with connected(launcher, stdout) as client:
        for rid in range(1, 4):
            client.send(call_with_progress(rid, 3))
            select.select([], [], [], NOT_READING_S)  # not reading: the server writes meanwhile
            reads = read_until_answered(client, rid)
            progress = [
                m["params"]["progress"]
                for batch in reads
                for m in batch
                if m.get("method") == "notifications/progress"
            ]
            assert progress == [1, 2, 3]
            *before, last = reads
            assert [m.get("id") for m in last] == [rid], reads  # the response, read alone
            assert before, reads


def test_a_plain_response_is_not_held_back_by_another_requests_notifications(
    stdout: str,
) -> None:
    with connected("run_stdio", stdout) as client:
        client.send(call_with_progress(1, 2), {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        select.select([], [], [], NOT_READING_S)
        first = client.read()
        # The ping sent no notification: answered at once, ahead of the call.
        assert {"jsonrpc": "2.0", "id": 2, "result": {}} in first
        assert all(m.get("id") != 1 for m in first), first
        reads = read_until_answered(client, 1)
        assert [m.get("id") for m in reads[-1]] == [1]
