"""``AuthInfo.upstream_token()``: the identity provider's token behind a token of mcpkit's
own authorization server, through the accessor its verifier sets, and a clear refusal for
any other token. (The real flows: tests/auth/server/presets/test_github.py.)"""

from __future__ import annotations

import pytest

from mcpkit.auth import AuthInfo
from mcpkit.auth.server import UpstreamError


async def test_a_token_of_another_verifier_has_no_upstream_token() -> None:
    with pytest.raises(UpstreamError, match="not issued by an mcpkit authorization server"):
        await AuthInfo(token="t", subject="alice").upstream_token()


async def test_the_accessor_gets_the_auth_info_and_the_margin() -> None:
    seen: list[tuple[AuthInfo, float]] = []

    async def source(auth: AuthInfo, /, *, margin: float) -> str:
        seen.append((auth, margin))
        return "provider-token"

    info = AuthInfo(token="t", subject="alice", upstream=source)
    assert await info.upstream_token(margin=5.0) == "provider-token"
    assert seen == [(info, 5.0)]
    assert "upstream" not in repr(info) and info == AuthInfo(token="t", subject="alice")
