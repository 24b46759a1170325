"""Dynamic client registration (RFC 7591): what is accepted, what is refused, and how."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit._buckets import MemoryBuckets
from mcpkit.auth.server.limits import RegistrationLimiter
from tests.auth.server.asgi_support import client_of, make_proxy


async def register(body: Any, **kw: Any) -> tuple[int, dict[str, Any]]:
    async with client_of(make_proxy()) as http:
        resp = await http.post("/register", json=body, **kw)
    return resp.status_code, resp.json()


async def test_a_public_client_gets_an_id_and_no_secret() -> None:
    status, body = await register(
        {"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none",
         "client_name": "Agent", "grant_types": ["authorization_code", "refresh_token"]}
    )  # fmt: skip
    assert status == 201
    assert body["client_id"] and "client_secret" not in body
    assert body["redirect_uris"] == ["http://127.0.0.1/cb"] and body["client_name"] == "Agent"


async def test_a_confidential_client_gets_a_secret_that_does_not_expire() -> None:
    status, body = await register({"redirect_uris": ["https://app.example/cb"]})
    assert status == 201
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert len(body["client_secret"]) >= 32 and body["client_secret_expires_at"] == 0


@pytest.mark.parametrize(
    "uri",
    [
        "http://app.example/cb",  # plain http off loopback
        "https://app.example/cb#frag",
        "javascript:alert(1)",
        "data:text/html,hi",
        "http://user@127.0.0.1/cb",
        "https://app.example/" + "a" * 2100,
        "https:///nohost",
        "",
        42,
    ],
)
async def test_unsafe_redirect_uris_are_refused(uri: Any) -> None:
    status, body = await register({"redirect_uris": [uri]})
    assert status == 400 and body["error"] == "invalid_redirect_uri"


async def test_native_app_uris_are_accepted() -> None:
    uris = ["http://[::1]/cb", "http://localhost:1234/cb", "com.example.app:/oauth"]
    status, body = await register({"redirect_uris": uris})
    assert status == 201 and body["redirect_uris"] == uris


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://a.example/cb"] * 11}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]},
         "invalid_client_metadata"),
        ({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]},
         "invalid_client_metadata"),
        ({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "tls"},
         "invalid_client_metadata"),
        ({"redirect_uris": ["https://a.example/cb"], "client_name": "x" * 201},
         "invalid_client_metadata"),
        ([1, 2], "invalid_client_metadata"),
    ],
)  # fmt: skip
async def test_bad_metadata_is_refused(body: Any, error: str) -> None:
    status, answer = await register(body)
    assert status == 400 and answer["error"] == error


async def test_oversized_or_malformed_bodies_get_oauth_errors() -> None:
    async with client_of(make_proxy()) as http:
        big = await http.post(
            "/register", content=b"{" + b" " * 20_000 + b"}",
            headers={"content-type": "application/json"},
        )  # fmt: skip
        broken = await http.post(
            "/register", content=b"{nope", headers={"content-type": "application/json"}
        )
        form = await http.post("/register", data={"redirect_uris": "x"})
        get = await http.get("/register")
    assert big.status_code == 413 and big.json()["error"] == "invalid_request"
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_client_metadata"
    assert form.status_code == 400
    assert get.status_code == 405


async def test_registration_is_rate_limited_per_address() -> None:
    proxy = make_proxy(registration_limit=(2, 3600.0))
    body = {"redirect_uris": ["https://app.example/cb"]}
    async with client_of(proxy) as http:
        answers = [await http.post("/register", json=body) for _ in range(3)]
    assert [a.status_code for a in answers] == [201, 201, 429]
    assert answers[2].json()["error"] == "temporarily_unavailable"
    # A burst of 2, then one every 3600 / 2 seconds.
    assert 1700 < int(answers[2].headers["retry-after"]) <= 1800


async def test_the_registration_budget_refills_and_addresses_count_apart() -> None:
    buckets = MemoryBuckets()
    now = [0.0]
    buckets.clock = lambda: now[0]
    limiter = RegistrationLimiter(limit=2, window=10.0, buckets=buckets)
    assert await limiter.allow("a") is None
    now[0] = 1.0
    assert await limiter.allow("a") is None
    now[0] = 2.0
    assert await limiter.allow("a") == pytest.approx(3.0)  # one token back 5 s after empty
    assert await limiter.allow("b") is None
    now[0] = 6.0
    assert await limiter.allow("a") is None  # refilled at 2 per 10 s
    assert await limiter.allow("a") is not None


async def test_private_key_jwt_is_refused_with_a_clear_reason() -> None:
    status, body = await register(
        {
            "redirect_uris": ["https://app.example/cb"],
            "token_endpoint_auth_method": "private_key_jwt",
        }
    )
    assert status == 400 and body["error"] == "invalid_client_metadata"
    assert "client metadata document" in body["error_description"]
