"""A stand-in for GitHub's OAuth and REST endpoints, served on a real socket (uvicorn).

It behaves as GitHub documents it (OAuth apps, "Authorizing OAuth apps"; REST
"Get the authenticated user", "List email addresses"), including where GitHub departs
from RFC 6749: the token endpoint answers ``application/x-www-form-urlencoded`` unless
the request's ``Accept`` asks for JSON, refuses a code or a refresh token with HTTP 200
and an ``error`` field, and lists scopes comma-separated. PKCE ``S256`` is checked when
the authorization request carried a challenge. The REST API (GitHub Enterprise Server's
layout, ``/api/v3``) wants a ``User-Agent`` and a ``Bearer``/``token`` authorization.
With ``expiring=True`` it issues expiring user tokens with rotating refresh tokens, as a
GitHub App that opted in does. The login page is a plain form :class:`FormBrowser` fills.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from tests.client.http_servers import read_body

API = "/api/v3"


@dataclass
class User:
    id: int
    login: str
    name: str | None = None
    public_email: str | None = None  # the profile's (null unless the user made it public)
    emails: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FakeGitHub:
    client_id: str
    client_secret: str
    callback_url: str
    expiring: bool = False
    users: dict[str, User] = field(default_factory=dict)
    pending: dict[str, dict[str, str]] = field(default_factory=dict)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens: dict[str, tuple[str, str]] = field(default_factory=dict)  # token -> (login, scope)
    refresh_tokens: dict[str, tuple[str, str]] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)  # headers of each

    def add(self, user: User) -> None:
        self.users[user.login] = user

    def rename(self, old: str, new: str) -> None:
        user = self.users.pop(old)
        user.login = new
        self.users[new] = user

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        path, method = scope["path"], scope["method"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        query = dict(parse_qsl(scope["query_string"].decode()))
        fields = dict(parse_qsl(body.decode()))
        if path == "/login/oauth/authorize" and method == "GET":
            await self._authorize(query, send)
        elif path == "/session" and method == "POST":
            await self._sign_in(fields, send)
        elif path.startswith("/login/oauth/cancel/") and path.endswith("/abort"):
            request = self.pending.pop(path.split("/")[4], {})
            await _redirect(send, request["redirect_uri"], {
                "error": "access_denied", "state": request.get("state", ""),
                "error_description": "The user has denied your application access.",
                "error_uri": "https://docs.github.com/apps/troubleshooting"})  # fmt: skip
        elif path == "/login/oauth/access_token" and method == "POST":
            self.token_requests.append(headers)
            await self._token(fields, headers, send)
        elif path.startswith(API + "/"):
            await self._api(path.removeprefix(API), headers, send)
        else:
            await _send(send, 404, b"Not Found", "text/plain")

    async def _authorize(self, query: dict[str, str], send: Any) -> None:
        if query.get("client_id") != self.client_id:
            await _send(send, 404, b"<p>Not Found</p>", "text/html")
            return
        redirect_uri = query.get("redirect_uri", self.callback_url)
        if not redirect_uri.startswith(self.callback_url):
            # GitHub shows this on its own page; it never redirects to an unknown URI.
            await _send(send, 400, b"<p>The redirect_uri is not associated with this "
                        b"application.</p>", "text/html")  # fmt: skip
            return
        ref = secrets.token_hex(8)
        self.pending[ref] = {
            "redirect_uri": redirect_uri,
            "state": query.get("state", ""),
            "scope": query.get("scope", ""),
            "challenge": query.get("code_challenge", ""),
            "method": query.get("code_challenge_method", ""),
        }
        page = (f'<form method="post" action="/session"><input name="login">'
                f'<input name="password" type="password"><input type="hidden" '
                f'name="authorize_ref" value="{ref}"><button>Sign in</button></form>'
                f'<a href="/login/oauth/cancel/{ref}/abort">Cancel</a>')  # fmt: skip
        await _send(send, 200, page.encode(), "text/html")

    async def _sign_in(self, fields: dict[str, str], send: Any) -> None:
        request = self.pending.pop(fields.get("authorize_ref", ""), None)
        user = self.users.get(fields.get("login", ""))
        if request is None or user is None:
            await _send(send, 403, b"<p>Incorrect username or password.</p>", "text/html")
            return
        code = secrets.token_hex(10)
        self.codes[code] = {**request, "login": user.login}
        await _redirect(send, request["redirect_uri"], {"code": code, "state": request["state"]})

    async def _token(self, fields: dict[str, str], headers: dict[str, str], send: Any) -> None:
        def answer(data: dict[str, Any]) -> Any:
            # GitHub's default is form encoding; JSON only when Accept asks for it.
            if "application/json" in headers.get("accept", ""):
                return _send(send, 200, json.dumps(data).encode(), "application/json")
            form = urlencode({k: str(v) for k, v in data.items()}).encode()
            return _send(send, 200, form, "application/x-www-form-urlencoded; charset=utf-8")

        def error(code: str) -> Any:
            return answer({"error": code, "error_description": code.replace("_", " "),
                           "error_uri": "https://docs.github.com/apps/troubleshooting"})  # fmt: skip

        if (fields.get("client_id"), fields.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            await error("incorrect_client_credentials")
            return
        if fields.get("grant_type") == "refresh_token":
            held = self.refresh_tokens.pop(fields.get("refresh_token", ""), None)
            if held is None:
                await error("bad_refresh_token")
                return
            await answer(self._issue(*held))
            return
        code = self.codes.pop(fields.get("code", ""), None)
        if code is None:
            await error("bad_verification_code")
            return
        if fields.get("redirect_uri", code["redirect_uri"]) != code["redirect_uri"]:
            await error("redirect_uri_mismatch")
            return
        if code["challenge"]:
            verifier = fields.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if code["method"] != "S256" or computed != code["challenge"]:
                await error("bad_verification_code")
                return
        await answer(self._issue(code["login"], code["scope"]))

    def _issue(self, login: str, scope: str) -> dict[str, Any]:
        token = ("ghu_" if self.expiring else "gho_") + secrets.token_hex(18)
        granted = ",".join(scope.split())
        self.tokens[token] = (login, granted)
        data: dict[str, Any] = {"access_token": token, "token_type": "bearer", "scope": granted}
        if self.expiring:
            refresh = "ghr_" + secrets.token_hex(30)
            self.refresh_tokens[refresh] = (login, scope)
            data.update(expires_in=28800, refresh_token=refresh,
                        refresh_token_expires_in=15811200)  # fmt: skip
        return data

    async def _api(self, path: str, headers: dict[str, str], send: Any) -> None:
        if not headers.get("user-agent"):
            await _send(send, 403, b"Request forbidden by administrative rules. Please make "
                        b"sure your request has a User-Agent header", "text/plain")  # fmt: skip
            return
        scheme, _, token = headers.get("authorization", "").partition(" ")
        held = self.tokens.get(token) if scheme.lower() in ("bearer", "token") else None
        user = None if held is None else self.users.get(held[0])
        if held is None or user is None:
            await _json(send, 401, {"message": "Bad credentials",
                                    "documentation_url": "https://docs.github.com/rest"})  # fmt: skip
            return
        if path == "/user":
            await _json(send, 200, {
                "login": user.login, "id": user.id, "node_id": f"U_{user.id}",
                "avatar_url": f"https://avatars.example/u/{user.id}",
                "html_url": f"https://github.example/{user.login}", "type": "User",
                "name": user.name, "email": user.public_email})  # fmt: skip
        elif path == "/user/emails" and "user:email" in held[1].split(","):
            await _json(send, 200, user.emails)
        else:  # GitHub answers 404 for what the token's scopes do not reach
            await _json(send, 404, {"message": "Not Found"})


async def _send(send: Any, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Any, status: int, data: Any) -> None:
    await _send(send, status, json.dumps(data).encode(), "application/json; charset=utf-8")


async def _redirect(send: Any, url: str, params: dict[str, str]) -> None:
    location = f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"
    await send({"type": "http.response.start", "status": 302,
                "headers": [(b"location", location.encode()), (b"content-length", b"0")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b""})
