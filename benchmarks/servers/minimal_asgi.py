"""The HTTP baseline: a raw ASGI app that answers a JSON-RPC ``tools/call`` echo.

It reads the body, parses it once with orjson, and answers ``initialize``
(creating a session id, as a stateful server must), ``tools/call`` echo and
``tools/list`` with one JSON response; a known ``Mcp-Session-Id`` is looked
up in a dict, as the cheapest possible stateful server would. Notifications
get 202. It checks nothing else a real server must check.
"""

import secrets

import orjson

SESSIONS: dict[bytes, dict[str, object]] = {}
TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
JSON_HEADERS = [(b"content-type", b"application/json")]


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    more = True
    while more:
        event = await receive()
        body += event.get("body", b"")
        more = event.get("more_body", False)
    msg = orjson.loads(body)
    headers = JSON_HEADERS
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    method = msg["method"]
    if method == "tools/call":
        result = {
            "content": [{"type": "text", "text": msg["params"]["arguments"]["text"]}],
            "isError": False,
        }
    elif method == "initialize":
        sid = secrets.token_urlsafe(32).encode()
        SESSIONS[sid] = {"protocolVersion": msg["params"]["protocolVersion"]}
        headers = [*JSON_HEADERS, (b"mcp-session-id", sid)]
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "minimal", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        result = {}
    if method != "initialize":
        for key, value in scope["headers"]:
            if key == b"mcp-session-id" and value not in SESSIONS:
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
    out = orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    headers = [*headers, (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})
