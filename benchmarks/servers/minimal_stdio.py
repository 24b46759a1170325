"""The stdio baseline: a hand-written JSON-RPC loop on the standard library only.

It answers ``initialize``, ``tools/list`` and an ``echo`` ``tools/call`` with
stdlib ``json``, ``sys.stdin.readline`` and ``sys.stdout.write`` + ``flush``,
and ignores notifications. It checks nothing a real server must check; it is
the floor a framework's per-message cost is measured against.
"""

import json
import sys

TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def main() -> None:
    readline = sys.stdin.readline
    write = sys.stdout.write
    flush = sys.stdout.flush
    loads = json.loads
    dumps = json.dumps
    while True:
        line = readline()
        if not line:
            return
        msg = loads(line)
        if "id" not in msg:
            continue  # a notification
        method = msg.get("method")
        if method == "tools/call":
            text = msg["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "minimal", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "ping":
            result = {}
        else:
            write(
                dumps(
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
                )
            )
            write("\n")
            flush()
            continue
        write(dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        write("\n")
        flush()


if __name__ == "__main__":
    main()
