"""The authorization server's metadata, loopback redirect matching, and hostile input:
every bad request gets an OAuth error or an error page, never a 500."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from mcpkit.auth.server.redirects import matches
from tests.auth.server.asgi_support import BASE, client_of, make_proxy


async def test_metadata_promises_what_the_endpoints_enforce() -> None:
    proxy = make_proxy(scopes_supported=["mcp:tools"])
    async with client_of(proxy) as http:
        oauth = await http.get("/.well-known/oauth-authorization-server")
        oidc = await http.get("/.well-known/openid-configuration")
        jwks = await http.get("/jwks")
        preflight = await http.options("/token")
    doc = oauth.json()
    assert oauth.status_code == 200 and oidc.json() == doc
    assert doc["issuer"] == BASE and doc["authorization_endpoint"] == f"{BASE}/authorize"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert doc["registration_endpoint"] == f"{BASE}/register"
    assert doc["revocation_endpoint"] == f"{BASE}/revoke"
    assert doc["scopes_supported"] == ["mcp:tools"]
    assert oauth.headers["access-control-allow-origin"] == "*"
    key = jwks.json()["keys"][0]
    assert key["kty"] == "EC" and "d" not in key  # the public half only
    assert preflight.status_code == 204


def test_loopback_redirects_match_on_any_port_and_nothing_else_does() -> None:
    assert matches("http://127.0.0.1:5555/cb", ["http://127.0.0.1/cb"])
    assert matches("http://[::1]:80/cb", ["http://[::1]:9/cb"])
    assert not matches("http://127.0.0.1:5555/other", ["http://127.0.0.1/cb"])
    assert not matches("http://localhost:5555/cb", ["http://127.0.0.1/cb"])
    assert not matches("https://app.example:444/cb", ["https://app.example/cb"])
    assert not matches("https://app.example/cb?x=1", ["https://app.example/cb"])
    assert not matches("http://u@127.0.0.1:1/cb", ["http://127.0.0.1/cb"])


async def registered(http: object) -> str:
    resp = await http.post(  # type: ignore[attr-defined]
        "/register",
        json={"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"},
    )
    client_id: str = resp.json()["client_id"]
    return client_id


CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


async def test_authorize_checks_each_parameter_and_answers_with_iss() -> None:
    async with client_of(make_proxy(scopes_supported=["mcp:tools"])) as http:
        client_id = await registered(http)
        base = {"response_type": "code", "client_id": client_id, "state": "st",
                "redirect_uri": "http://127.0.0.1:4444/cb", "code_challenge": CHALLENGE,
                "code_challenge_method": "S256"}  # fmt: skip
        cases = {
            "unsupported_response_type": {"response_type": "token"},
            "invalid_request": {"code_challenge_method": "plain"},
            "invalid_target": {"resource": "https://other.example/mcp"},
            "invalid_scope": {"scope": "admin"},
        }
        for error, change in cases.items():
            resp = await http.get("/authorize?" + urlencode({**base, **change}))
            assert resp.status_code == 302, error
            location = resp.headers["location"]
            assert location.startswith("http://127.0.0.1:4444/cb?")
            got = parse_qs(urlsplit(location).query)
            assert got["error"] == [error] and got["state"] == ["st"] and got["iss"] == [BASE]
        ok = await http.get("/authorize?" + urlencode({**base, "resource": f"{BASE}/mcp"}))
    assert ok.status_code == 200 and "set-cookie" in ok.headers
    assert ok.headers["x-frame-options"] == "DENY"
    assert "Example SSO" in ok.text and "An unnamed application" in ok.text


async def test_unknown_clients_get_a_page_not_a_redirect() -> None:
    async with client_of(make_proxy()) as http:
        resp = await http.get(
            "/authorize?" + urlencode({"client_id": "nope", "redirect_uri": "https://evil/cb"})
        )
    assert resp.status_code == 400 and "location" not in resp.headers
    assert resp.headers["content-type"].startswith("text/html")


async def test_consent_answers_without_the_csrf_cookie_are_refused() -> None:
    async with client_of(make_proxy()) as http:
        client_id = await registered(http)
        page = await http.get("/authorize?" + urlencode({
            "response_type": "code", "client_id": client_id, "code_challenge": CHALLENGE,
            "redirect_uri": "http://127.0.0.1/cb", "code_challenge_method": "S256"}))  # fmt: skip
        flow = page.text.split('name=flow value="')[1].split('"')[0]
        csrf = page.text.split('name=csrf value="')[1].split('"')[0]
        http.cookies.clear()
        forged = await http.post("/consent", data={"flow": flow, "csrf": csrf, "action": "deny"})
        assert forged.status_code == 403
        http.cookies.set("mcpkit_consent", "wrong")
        wrong = await http.post("/consent", data={"flow": flow, "csrf": csrf, "action": "deny"})
        assert wrong.status_code == 403
        http.cookies.set("mcpkit_consent", csrf)
        denied = await http.post("/consent", data={"flow": flow, "csrf": csrf, "action": "deny"})
        assert denied.status_code == 302
        assert "error=access_denied" in denied.headers["location"]
        replay = await http.post("/consent", data={"flow": flow, "csrf": csrf, "action": "deny"})
        assert replay.status_code == 403


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/authorize?client_id=a&client_id=b", {}),
        ("GET", "/authorize?" + "x=" + "y" * 9000, {}),
        ("GET", "/authorize?%ff%fe=1", {}),
        ("GET", "/auth/callback?state=nope&code=x", {}),
        ("GET", "/auth/callback", {}),
        ("POST", "/consent", {"content": b"\xff\xfe", "headers": {
            "content-type": "application/x-www-form-urlencoded"}}),
        ("POST", "/token", {"data": {"grant_type": "password"}}),
        ("POST", "/token", {"data": {}}),
        ("POST", "/token", {"json": {"grant_type": "authorization_code"}}),
        ("POST", "/token", {"data": {"grant_type": "authorization_code", "client_id": "nope"}}),
        ("POST", "/token", {"data": {"grant_type": "refresh_token"},
                            "headers": {"authorization": "Basic !!!"}}),
        ("POST", "/token", {"data": {"grant_type": "refresh_token"},
                            "headers": {"authorization": "Bearer x"}}),
        ("POST", "/token", {"content": b"a=" + b"b" * 20_000, "headers": {
            "content-type": "application/x-www-form-urlencoded"}}),
        ("POST", "/revoke", {"data": {"token": "x"}}),
        ("GET", "/token", {}),
    ],
)  # fmt: skip
async def test_hostile_input_never_gets_a_500(method: str, path: str, kwargs: dict) -> None:  # type: ignore[type-arg]
    async with client_of(make_proxy()) as http:
        resp = await http.request(method, path, **kwargs)
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text)
    if resp.headers["content-type"].startswith("application/json"):
        assert resp.json()["error"] in (
            "invalid_request", "invalid_client", "unsupported_grant_type", "invalid_grant",
        )  # fmt: skip


async def test_a_client_without_the_code_flow_cannot_authorize() -> None:
    async with client_of(make_proxy()) as http:
        resp = await http.post("/register", json={
            "redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none",
            "grant_types": ["refresh_token"]})  # fmt: skip
        client_id = resp.json()["client_id"]
        back = await http.get("/authorize?" + urlencode({
            "response_type": "code", "client_id": client_id, "code_challenge": CHALLENGE,
            "redirect_uri": "http://127.0.0.1/cb", "code_challenge_method": "S256"}))  # fmt: skip
    assert back.status_code == 302
    assert parse_qs(urlsplit(back.headers["location"]).query)["error"] == ["unauthorized_client"]


async def test_an_unreachable_provider_sends_the_client_back_unavailable() -> None:
    async with client_of(make_proxy()) as http:  # its provider is 127.0.0.1:9: nobody there
        client_id = await registered(http)
        page = await http.get("/authorize?" + urlencode({
            "response_type": "code", "client_id": client_id, "code_challenge": CHALLENGE,
            "redirect_uri": "http://127.0.0.1/cb", "code_challenge_method": "S256",
            "state": "st"}))  # fmt: skip
        flow = page.text.split('name=flow value="')[1].split('"')[0]
        csrf = page.text.split('name=csrf value="')[1].split('"')[0]
        resp = await http.post("/consent", data={"flow": flow, "csrf": csrf, "action": "approve"})
    assert resp.status_code == 302
    got = parse_qs(urlsplit(resp.headers["location"]).query)
    assert got["error"] == ["temporarily_unavailable"] and got["state"] == ["st"]


async def test_authorization_requests_are_rate_limited_per_address() -> None:
    async with client_of(make_proxy(authorization_limit=(3, 60.0))) as http:
        client_id = await registered(http)
        url = "/authorize?" + urlencode({
            "response_type": "code", "client_id": client_id, "code_challenge": CHALLENGE,
            "redirect_uri": "http://127.0.0.1/cb", "code_challenge_method": "S256"})  # fmt: skip
        statuses = [(await http.get(url)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
