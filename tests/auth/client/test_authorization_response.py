"""RFC 9207 ``iss`` and ``state`` in the authorization response: the code is used only
when they check out (the authorization server sees no token request otherwise)."""

from __future__ import annotations

import pytest

from mcpkit.errors import AuthorizationFailed
from tests.auth.client.world import world


@pytest.mark.parametrize(
    ("iss_supported", "iss_mode"),
    [(True, "correct"), (None, "omit"), (False, "omit"), (None, "correct")],
)
async def test_a_matching_or_absent_unpromised_iss_is_accepted(
    iss_supported: bool | None, iss_mode: str
) -> None:
    async with world(as_options={"iss_supported": iss_supported, "iss_mode": iss_mode}) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert len(w.auth_server.token_requests) == 1


@pytest.mark.parametrize(
    ("iss_supported", "iss_mode", "error"),
    [
        (True, "omit", "issuer_missing"),  # promised, then missing
        (True, "wrong", "issuer_mismatch"),
        (None, "wrong", "issuer_mismatch"),  # not promised, present and wrong
        (True, "slash", "issuer_mismatch"),  # no normalisation: a trailing slash differs
    ],
)
async def test_a_wrong_or_missing_promised_iss_is_refused_before_the_token_request(
    iss_supported: bool | None, iss_mode: str, error: str
) -> None:
    async with world(as_options={"iss_supported": iss_supported, "iss_mode": iss_mode}) as w:
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(w.oauth()) as client:
                await client.list_tools()
        assert caught.value.error == error
        assert len(w.auth_server.authorizations) == 1
        assert w.auth_server.token_requests == []


def test_a_response_for_another_request_is_refused() -> None:
    from mcpkit.auth.client.discovery import AuthServerMetadata
    from mcpkit.auth.client.grants import check_authorization_response

    server = AuthServerMetadata(issuer="https://as")
    with pytest.raises(AuthorizationFailed) as caught:
        check_authorization_response(
            "http://127.0.0.1/cb?code=c&state=other", state="mine", server=server
        )
    assert caught.value.error == "state_mismatch"
    with pytest.raises(AuthorizationFailed) as caught:
        check_authorization_response(
            "http://127.0.0.1/cb?error=access_denied&state=mine", state="mine", server=server
        )
    assert caught.value.error == "access_denied"
    assert (
        check_authorization_response("http://x/cb?code=c1&state=mine", state="mine", server=server)
        == "c1"
    )
