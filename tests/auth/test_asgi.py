"""The ASGI pieces the auth package's wrapping apps share: the resource server's
``ProtectedApp`` and the authorization server's app both pass the wrapped app's
attributes and non-HTTP scopes through, and answer the lifespan when nothing is wrapped."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.auth import ProtectedResource, StaticTokenVerifier
from mcpkit.auth.asgi import route_path
from tests.auth.server.asgi_support import make_proxy


def resource() -> ProtectedResource:
    return ProtectedResource(
        resource="http://127.0.0.1:8000/mcp",
        authorization_servers=["http://127.0.0.1:8000"],
        verifier=StaticTokenVerifier({}),
    )


class Inner:
    sse_path = "/sse"

    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope["type"])


async def lifespan(app: Any) -> list[str]:
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    return sent


def wrappers(inner: Any) -> list[Any]:
    return [resource().protect(inner), make_proxy().app(inner)]


async def test_without_a_wrapped_app_the_lifespan_is_answered() -> None:
    for app in [resource().metadata_app(), make_proxy().app()]:
        assert await lifespan(app) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        with pytest.raises(AttributeError):
            _ = app.sse_path


async def test_the_wrapped_app_s_attributes_and_lifespan_pass_through() -> None:
    for app in wrappers(inner := Inner()):
        assert app.sse_path == "/sse"
        with pytest.raises(AttributeError):
            _ = app.no_such_thing
        assert await lifespan(app) == [] and inner.scopes[-1] == "lifespan"


def test_the_route_path_is_relative_to_the_mount() -> None:
    assert route_path({"path": "/a/token", "root_path": "/a"}) == "/token"
    assert route_path({"path": "/token", "root_path": "/a"}) == "/token"  # already relative
    assert route_path({"path": "/ab/token", "root_path": "/a"}) == "/ab/token"
