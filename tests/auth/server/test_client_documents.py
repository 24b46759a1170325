"""Client ID Metadata Documents at the authorization server: an https URL as client_id is
fetched, checked (its own URL, its redirect URIs, its name) and kept for the token
endpoint; a document that fails a check gets an error page, never a redirect."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from joserfc.jwk import ECKey

from mcpkit.auth.server.client_documents import ClientDocuments, is_document_url
from tests.auth.server.asgi_support import client_of, make_proxy
from tests.auth.server.documents import DOC_URL, REDIRECT, DocumentHost, document

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
PRIVATE = ECKey.generate_key("P-256").as_dict(private=True)
PUBLIC = {"keys": [{k: v for k, v in PRIVATE.items() if k != "d"}]}


def authorize(client_id: str = DOC_URL, redirect_uri: str = REDIRECT) -> str:
    return "/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "code_challenge": CHALLENGE, "code_challenge_method": "S256", "state": "st"})  # fmt: skip


async def run(host: DocumentHost, url: str) -> Any:
    # client.example does not resolve: the in-process host stands in for it.
    documents = ClientDocuments(http_client=host.client(), allow_private_addresses=True)
    proxy = make_proxy(client_documents=documents)
    async with client_of(proxy) as http:
        return await http.get(url), proxy


async def test_a_documented_client_reaches_the_consent_page_by_its_name() -> None:
    host = DocumentHost()
    resp, proxy = await run(host, authorize())
    assert resp.status_code == 200 and "Documented Agent" in resp.text
    assert host.fetches == 1
    kept = await proxy.storage.load_client(DOC_URL)  # for /token, and until it expires
    assert kept is not None and kept.token_endpoint_auth_method == "none"
    assert kept.expires_at is not None
    assert proxy.metadata()["client_id_metadata_document_supported"] is True


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        (document(client_id="https://other.example/c.json"), "its own URL"),
        (document(redirect_uris=["http://evil.example/cb"]), "loopback"),
        (document(redirect_uris=[]), "redirect_uris"),
        (document(client_name=""), "client_name"),
        (document(token_endpoint_auth_method="client_secret_basic"), "shared secret"),
        (document(client_secret="s3cret"), "shared secret"),
        (document(token_endpoint_auth_method="tls_client_auth"), "none or private_key_jwt"),
        (document(token_endpoint_auth_method="private_key_jwt"), "jwks or jwks_uri"),
        (
            document(
                token_endpoint_auth_method="private_key_jwt",
                jwks=PUBLIC,
                jwks_uri="https://client.example/jwks.json",
            ),
            "jwks or jwks_uri",
        ),
        (
            document(
                token_endpoint_auth_method="private_key_jwt",
                jwks={"keys": [{"kty": "oct", "k": "c2VjcmV0"}]},
            ),
            "RSA, EC or OKP",
        ),
        (
            document(token_endpoint_auth_method="private_key_jwt", jwks={"keys": [PRIVATE]}),
            "private key",
        ),
        (
            document(
                token_endpoint_auth_method="private_key_jwt",
                jwks=PUBLIC,
                token_endpoint_auth_signing_alg="HS256",
            ),
            "asymmetric",
        ),
        (b"{" + b" " * 6000 + b"}", "more than"),
        (b"not json", "JSON"),
    ],
)
async def test_a_bad_document_gets_an_error_page(doc: Any, why: str) -> None:
    resp, _ = await run(DocumentHost({"/mcp-client.json": doc}), authorize())
    assert resp.status_code == 400 and "location" not in resp.headers
    assert why in resp.text


async def test_the_redirect_uri_must_be_one_the_document_lists() -> None:
    resp, _ = await run(DocumentHost(), authorize(redirect_uri="http://127.0.0.1:1/other"))
    assert resp.status_code == 400 and "location" not in resp.headers


async def test_documents_can_be_turned_off() -> None:
    proxy = make_proxy(client_documents=False)
    async with client_of(proxy) as http:
        resp = await http.get(authorize())
    assert resp.status_code == 400
    assert "client_id_metadata_document_supported" not in proxy.metadata()


def test_only_https_urls_with_a_path_name_documents() -> None:
    assert is_document_url(DOC_URL)
    for url in ("http://client.example/c.json", "https://client.example", "https://client.example/",
                "https://u@client.example/c.json", "https://client.example/c.json#x",
                "https://client.example/a/../c.json", "plain-id"):  # fmt: skip
        assert not is_document_url(url), url


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1/c.json", "https://10.1.2.3/c.json", "https://169.254.169.254/latest",
     "https://[::1]/c.json", "https://localhost/c.json", "https://no-such-host.invalid/c.json"],
)  # fmt: skip
async def test_documents_on_internal_addresses_are_never_fetched(url: str) -> None:
    host = DocumentHost({urlsplit(url).path: document(client_id=url)})
    proxy = make_proxy(client_documents=ClientDocuments(http_client=host.client()))
    async with client_of(proxy) as http:
        resp = await http.get(authorize(client_id=url))
    assert resp.status_code == 400 and host.fetches == 0


async def test_a_document_fetch_counts_against_the_registration_limit() -> None:
    host = DocumentHost()
    documents = ClientDocuments(http_client=host.client(), allow_private_addresses=True)
    proxy = make_proxy(client_documents=documents, registration_limit=(1, 3600.0))
    async with client_of(proxy) as http:
        registered = await http.post("/register", json={"redirect_uris": [REDIRECT]})
        resp = await http.get(authorize())
    assert registered.status_code == 201
    assert resp.status_code == 429 and "location" not in resp.headers
    assert int(resp.headers["retry-after"]) > 3000
    assert host.fetches == 0  # refused before the server reached out
