"""Machine-to-machine auth from config files: the ``auth`` object of a server definition."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpkit.auth.client import ClientCredentials, DPoPSigner, WorkloadIdentity
from mcpkit.auth.client.settings import oauth_from_config
from mcpkit.client.mcp_client import MCPClient
from mcpkit.errors import ConfigurationError
from tests.auth.client.oauth_peers import AuthServer, ProtectedMCP, client_keys, running
from tests.auth.client.test_machine_ext import build_server


async def test_an_mcp_client_config_with_client_credentials_connects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SVC_SECRET", "from-the-env")
    auth_server = AuthServer(auth_methods=["client_secret_post"], secrets={"svc": "from-the-env"})
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(auth_server), running(protected, path="/mcp") as url:
        servers = {
            "reports": {
                "url": url,
                "auth": {
                    "type": "client_credentials",
                    "client_id": "svc",
                    "client_secret_env": "SVC_SECRET",
                    "scopes": ["mcp:read"],
                },
            }
        }
        async with MCPClient(servers=servers) as client:
            result = await client.call_tool("reports", "add", {"a": 4, "b": 5})
    assert result["content"][0]["text"] == "9"
    assert auth_server.problems == [] and protected.problems == []
    [form] = [s.form for s in auth_server.requests if s.path == "/token"]
    assert form["client_secret"] == "from-the-env" and form["scope"] == "mcp:read"


def test_client_credentials_with_a_key_file_and_dpop(tmp_path: Path) -> None:
    pem, _ = client_keys()
    (tmp_path / "key.pem").write_text(pem)
    auth = oauth_from_config(
        {
            "type": "client_credentials",
            "client_id": "svc",
            "private_key_file": str(tmp_path / "key.pem"),
            "dpop": True,
        }
    )
    assert isinstance(auth, ClientCredentials)
    assert auth.token_endpoint_auth_method == "private_key_jwt"
    assert any(isinstance(hook, DPoPSigner) for hook in auth.hooks)


def test_workload_identity_from_a_token_file(tmp_path: Path) -> None:
    auth = oauth_from_config(
        {"type": "workload_identity", "client_id": "w", "assertion_file": str(tmp_path / "t")}
    )
    assert isinstance(auth, WorkloadIdentity)


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({"type": "client_credentials", "client_id": "svc"}, "client_secret"),
        ({"type": "client_credentials", "client_secret": "x"}, "client_id"),
        ({"type": "client_credentials", "client_id": "s", "secret": "x"}, "unknown setting"),
        ({"type": "client_credentials", "client_id": "s", "client_secret_env": "NOPE_"}, "NOPE_"),
        ({"type": "workload_identity", "client_id": "w"}, "assertion_file"),
        ({"type": "kerberos"}, "unknown type"),
        ({"type": "client_credentials", "client_id": "s", "client_secret": "x", "dpop": 1}, "dpop"),
    ],
)
def test_bad_settings_are_refused(
    settings: dict[str, object], complaint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOPE_", raising=False)
    with pytest.raises(ConfigurationError, match=complaint):
        oauth_from_config(settings)
