"""The authorization server's consent page: server-rendered HTML, no external assets.

Approval is remembered per user and client (a consent record in the store, and a signed
cookie naming the user in this browser): the page is skipped next time for the same or
fewer scopes, until :meth:`~.proxy.OAuthProxy.revoke_consent`. It names the MCP client (from its registration; a self-chosen name is shown as such,
with the redirect host the code will go to, so a look-alike name cannot hide where the
user is sending access), the scopes and the resource, and posts approve or deny back to
``/consent`` with the flow's reference and a CSRF token (also set as a same-site,
HTTP-only cookie that the answer must repeat). The answer's headers forbid framing
(``frame-ancestors 'none'``, against clickjacking) and every external load.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import urlsplit

__all__ = ["CSRF_COOKIE", "USER_COOKIE", "render_consent"]

CSRF_COOKIE = "mcpkit_consent"
USER_COOKIE = "mcpkit_user"
"""The browser's signed note of who signed in (remembered consent; ``SameSite=Lax`` so
that the MCP client's top-level navigation to ``/authorize`` carries it)."""

_STYLE = """
body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2129;margin:0}
main{max-width:28rem;margin:4rem auto;background:#fff;border-radius:12px;padding:2rem;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.3rem;margin-top:0}.host{font-family:monospace;word-break:break-all}
ul{padding-left:1.2rem}.note{font-size:.85rem;color:#5a606b}.actions{display:flex;gap:1rem;margin-top:1.5rem}
button{flex:1;font-size:1rem;padding:.7rem;border-radius:8px;border:1px solid #8a8f98;
background:#fff;cursor:pointer}button[value=approve]{background:#1f5fd6;color:#fff;
border-color:#1f5fd6}button:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
"""


def render_consent(
    *,
    client_name: str | None,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    resource: str,
    provider: str,
    flow_id: str,
    csrf: str,
) -> str:
    e = html.escape
    who = e(client_name) if client_name else "An unnamed application"
    host = urlsplit(redirect_uri).netloc or urlsplit(redirect_uri).scheme
    items = "".join(f"<li><code>{e(s)}</code></li>" for s in scopes) or (
        "<li>Basic access (no specific scopes)</li>"
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>Authorize {who}</title><style>{_STYLE}</style></head><body><main>"
        f"<h1 id=title>Authorize <span class=client>{who}</span>?</h1>"
        f"<p><strong>{who}</strong> (client <code>{e(client_id)}</code>, returning to "
        f"<span class=host>{e(host)}</span>) asks to use "
        f"<span class=host>{e(resource)}</span> on your behalf.</p>"
        "<p class=note>The name is the application's own claim: trust it only if you "
        "started this from that application and know where it returns to.</p>"
        f"<p>It asks for these scopes:</p><ul class=scopes>{items}</ul>"
        f"<p>You will sign in with {e(provider)} next.</p>"
        "<form method=post action=consent aria-labelledby=title>"
        f'<input type=hidden name=flow value="{e(flow_id)}">'
        f'<input type=hidden name=csrf value="{e(csrf)}">'
        "<div class=actions><button type=submit name=action value=deny>Deny</button>"
        "<button type=submit name=action value=approve>Approve</button></div>"
        "</form></main></body></html>"
    )
