"""Client metadata documents (and a client's JWKS) on a real local HTTPS server.

A certificate for ``localhost`` made for the run, trusted by the ``httpx`` client the
authorization server fetches documents with: the fetch is the real one (TLS, sockets,
uvicorn), only the trust anchor is the test's.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.client.http_servers import free_socket


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files for ``localhost`` and 127.0.0.1, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@dataclass
class DocumentServer:
    base: str  # https://localhost:<port>
    documents: dict[str, Any]  # path -> JSON (changed in place by the tests)
    fetches: list[str]
    cert: Path

    def http_client(self) -> httpx.AsyncClient:
        """An httpx client that trusts this server's certificate."""
        return httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(self.cert)))


@contextlib.asynccontextmanager
async def document_server(directory: Path) -> AsyncIterator[DocumentServer]:
    cert, key = self_signed(directory)
    sock = free_socket()
    served = DocumentServer(f"https://localhost:{sock.getsockname()[1]}", {}, [], cert)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        served.fetches.append(scope["path"])
        body = served.documents.get(scope["path"])
        await send({"type": "http.response.start", "status": 404 if body is None else 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": orjson.dumps(body or {})})

    config = uvicorn.Config(app, log_level="warning", lifespan="off",
                            ssl_certfile=str(cert), ssl_keyfile=str(key))  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield served
    finally:
        server.should_exit = True
        await task
