"""Request ids, as the peer wrote them: exact beyond 64 bits, and unique while in flight.

orjson reads an integer beyond 64 bits as a float and cannot write one; the answer
must still carry the exact id (JSON-RPC ids have no size bound). A second request
with the id of one still in flight is refused, and the first stays cancellable by
its id (basic § requests: ids are unique among the sender's unanswered requests).
Checked on the wire: stdio through a real subprocess, HTTP through real sockets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.transports.conftest import BOTH, TIMEOUT, demo_server
from tests.transports.stdio_peer import LAUNCHERS, StdioPeer

BIG_IDS = [2**64, 2**64 + 1, 10**30 + 7, -(2**63) - 1, -(10**25)]


def raw_call(rid: int, name: str, arguments: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
        % (rid, name.encode(), arguments.encode())
    )


def exact_id(line: bytes) -> bytes:
    """The id member of an answer, as written (parsing would lose the digits)."""
    start = line.index(b'"id":') + 5
    end = start
    while line[end : end + 1] in b"-0123456789":
        end += 1
    return line[start:end]


async def raw_line(peer: StdioPeer) -> bytes:
    assert peer.proc.stdout is not None
    line = await asyncio.wait_for(peer.proc.stdout.readline(), TIMEOUT)
    assert line, peer.stderr
    return line


async def test_stdio_echoes_integer_ids_beyond_64_bits_exactly() -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        await peer.initialize()
        for rid in BIG_IDS:
            await peer.send_bytes(raw_call(rid, "add", '{"a":1,"b":2}') + b"\n")
            line = await raw_line(peer)
            assert exact_id(line) == str(rid).encode(), line
            assert b'"result"' in line
        # a refusal echoes it exactly too
        await peer.send_bytes(b'{"jsonrpc":"2.0","id":%d,"method":"nope"}\n' % 2**70)
        line = await raw_line(peer)
        assert exact_id(line) == str(2**70).encode() and b"-32601" in line, line
    finally:
        await peer.kill()


async def test_stdio_cancels_a_request_whose_id_is_beyond_64_bits() -> None:
    # 2**64 + 1 reads as the float 2**64: only the exact id may be cancelled by it.
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        await peer.initialize()
        for n, (rid, seconds) in enumerate(((2**64, 1), (2**64 + 1, 30))):
            await peer.send_bytes(
                b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow",'
                b'"arguments":{"seconds":%d},"_meta":{"progressToken":%d}}}\n' % (rid, seconds, n)
            )
        started = [await peer.recv(), await peer.recv()]  # each reports progress first
        assert all(m["method"] == "notifications/progress" for m in started), started
        await peer.send_bytes(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}\n'
            % (2**64 + 1)
        )
        # The one not cancelled answers (after its second); the cancelled one never does.
        line = await raw_line(peer)
        assert exact_id(line) == str(2**64).encode() and b"finished" in line, line
        await peer.send_bytes(raw_call(5, "echo", '{"text":"after"}') + b"\n")
        line = await raw_line(peer)
        assert exact_id(line) == b"5" and b"after" in line, line
    finally:
        await peer.kill()


async def test_stdio_refuses_a_duplicate_in_flight_id_and_the_first_stays_cancellable() -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        await peer.initialize()
        first = {
            "jsonrpc": "2.0",
            "id": "dup",
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 30}, "_meta": {"progressToken": 1}},
        }
        await peer.send(first)
        assert (await peer.recv())["method"] == "notifications/progress"  # it runs
        second = {**first, "params": {"name": "echo", "arguments": {"text": "second"}}}
        await peer.send(second)
        refused = await peer.recv()
        assert refused["id"] == "dup" and refused["error"]["code"] == -32600, refused
        assert "still in flight" in refused["error"]["message"]
        await peer.notify("notifications/cancelled", {"requestId": "dup", "reason": "test"})
        after = await peer.call_tool("echo", {"text": "after"})
        assert after["result"]["content"][0]["text"] == "after"
        # The id is free again once answered (here: cancelled).
        reused = {**second, "params": {"name": "echo", "arguments": {"text": "again"}}}
        await peer.send(reused)
        answer = await peer.recv_response("dup")
        assert answer["result"]["content"][0]["text"] == "again"
        await peer.close_stdin()
        assert await peer.read_rest() == []  # the cancelled call never answers
    finally:
        await peer.kill()


@pytest.mark.parametrize("rid", BIG_IDS)
async def test_streamable_http_echoes_integer_ids_beyond_64_bits_exactly(
    serve_app: Any, http: httpx.AsyncClient, rid: int
) -> None:
    url = await serve_app(demo_server().http_app(stateless=True)) + "/mcp"
    headers = {"accept": BOTH, "content-type": "application/json"}
    resp = await http.post(url, content=raw_call(rid, "add", '{"a":1,"b":2}'), headers=headers)
    assert resp.status_code == 200
    assert exact_id(resp.content) == str(rid).encode(), resp.content
    # The 2026-07-28 era, and one of its refusals before anything runs.
    meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
    for extra, status in (
        (meta, 200),
        ('"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}', 400),
    ):
        body = raw_call(rid, "add", '{"a":1,"b":2},' + extra)
        got = await http.post(
            url, content=body, headers={**headers, "mcp-method": "tools/call", "mcp-name": "add"}
        )
        assert got.status_code == status, got.text
        assert exact_id(got.content) == str(rid).encode(), got.content


# JSON numbers have no size bound (RFC 8259 § 6): a tool's result beyond 64 bits is
# written with its exact digits, not refused as an internal error.
BIG_SUM = 2**64 - 1 + 2**64 - 1


async def test_stdio_writes_a_result_beyond_64_bits_exactly() -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        await peer.initialize()
        await peer.send_bytes(raw_call(3, "add", f'{{"a":{2**64 - 1},"b":{2**64 - 1}}}') + b"\n")
        line = await raw_line(peer)
        assert b'"error"' not in line and b'"isError"' not in line, line
        assert b":%d," % BIG_SUM in line, line  # the exact digits, not a float
    finally:
        await peer.kill()


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_streamable_http_writes_a_result_beyond_64_bits_exactly(
    serve_app: Any, http: httpx.AsyncClient, era: str
) -> None:
    url = await serve_app(demo_server().http_app(stateless=True)) + "/mcp"
    headers = {"accept": BOTH, "content-type": "application/json"}
    arguments = f'{{"a":{2**64 - 1},"b":{2**64 - 1}}}'
    if era == "2026-07-28":
        arguments += ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
        headers = {**headers, "mcp-method": "tools/call", "mcp-name": "add"}
    resp = await http.post(url, content=raw_call(4, "add", arguments), headers=headers)
    assert resp.status_code == 200, resp.text
    assert b'"isError"' not in resp.content, resp.content
    assert b"%d" % BIG_SUM in resp.content, resp.content  # the exact digits, not a float
