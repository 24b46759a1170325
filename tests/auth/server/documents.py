"""Client metadata documents served in process: an ``httpx`` client whose requests to
``https://client.example`` reach a small ASGI app holding the documents."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

DOC_URL = "https://client.example/mcp-client.json"
REDIRECT = "http://127.0.0.1:33418/callback"


def document(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"client_id": DOC_URL, "client_name": "Documented Agent",
                           "redirect_uris": [REDIRECT], "grant_types": ["authorization_code",
                           "refresh_token"], "response_types": ["code"],
                           "token_endpoint_auth_method": "none"}  # fmt: skip
    doc.update(changes)
    return doc


class DocumentHost:
    """Serves ``documents`` (path -> JSON, or raw bytes) and counts the fetches."""

    def __init__(self, documents: dict[str, Any] | None = None) -> None:
        self.documents = documents or {"/mcp-client.json": document()}
        self.fetches = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        self.fetches += 1
        body = self.documents.get(scope["path"])
        status = 200 if body is not None else 404
        raw = body if isinstance(body, bytes) else orjson.dumps(body or {})
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": raw})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self))
