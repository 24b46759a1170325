"""A scripted browser for the authorization server tests: follows redirects, posts forms.

It is the :class:`~mcpkit.auth.client.Authorizer` of mcpkit's OAuth client: given the
authorization URL, it walks through mcpkit's consent page (approve or deny) and
oidc-provider's login and consent pages (posting their forms, cookies kept as a browser
does) until the redirect to the client's ``redirect_uri``, which it returns unrequested.
Every HTML page is kept (``pages``) for the tests to inspect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

_ABORT = re.compile(r'href="([^"]*/abort)"')


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    buttons: list[tuple[str, str]] = field(default_factory=list)


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(a.get("action", ""), a.get("method", "get").lower()))
        elif self.forms and tag == "input" and "name" in a:
            self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif self.forms and tag == "button" and "name" in a:
            self.forms[-1].buttons.append((a["name"], a.get("value", "")))


def forms(html: str) -> list[Form]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


@dataclass
class Page:
    url: str
    status: int
    headers: httpx.Headers
    text: str


class FormBrowser:
    """Signs ``login`` in at the provider and answers mcpkit's consent with ``consent``."""

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:33418/callback",
        *,
        login: str = "alice",
        consent: str = "approve",
        cancel_upstream: bool = False,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.login = login
        self.consent = consent
        self.cancel_upstream = cancel_upstream
        self.pages: list[Page] = []
        self.http = httpx.AsyncClient(timeout=10.0, follow_redirects=False)

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def _done(self, url: str) -> bool:
        return url.split("?", 1)[0] == self._redirect_uri.split("?", 1)[0]

    async def authorize(self, url: str) -> str:
        method, data = "GET", None
        for _ in range(30):
            if self._done(url):
                return url
            resp = await self.http.request(method, url, data=data)
            if resp.is_redirect:
                url, method, data = urljoin(url, resp.headers["location"]), "GET", None
                continue
            self.pages.append(Page(url, resp.status_code, resp.headers, resp.text))
            found = [f for f in forms(resp.text) if f.method == "post"]
            if resp.status_code != 200 or not found:
                raise AssertionError(f"stuck at {url} (HTTP {resp.status_code}): {resp.text[:300]}")
            form = found[0]
            data = dict(form.fields)
            if "flow" in data:  # mcpkit's consent page
                data["action"] = self.consent
            if "login" in data or "password" in data:
                if self.cancel_upstream:  # the provider's own "Cancel" link
                    abort = _ABORT.search(resp.text)
                    if abort is None:
                        raise AssertionError(f"no cancel link at {url}")
                    url, method, data = urljoin(url, abort.group(1)), "GET", None
                    continue
                data.update(login=self.login, password="any")
            url, method = urljoin(url, form.action), "POST"
        raise AssertionError("too many hops")

    async def aclose(self) -> None:
        await self.http.aclose()
