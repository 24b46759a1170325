"""What turns a bearer token into an :class:`AuthInfo`: the verifier contract.

A protected server (``mcpkit.auth.ProtectedResource``) asks its verifier about
every request's token. Two shapes are accepted, so a one-line function works as
well as a configured class:

* an object with ``async def verify(self, token: str) -> AuthInfo | None``
  (:class:`TokenVerifier`; the static, introspection and JWT verifiers are such
  objects), or
* an async callable ``(token, resource) -> AuthInfo | None``
  (:data:`VerifyFunction`; Mastra's ``validateToken(token, resource)``), where
  ``resource`` is the protected resource's identifier, so the function can check
  the token's audience.

Returning None, or raising :class:`~mcpkit.errors.InvalidToken` with a
description, refuses the token: the client gets ``401`` with
``error="invalid_token"``. A verifier with required scopes may raise
:class:`~mcpkit.errors.InsufficientScope` (``403``, ``error="insufficient_scope"``),
and :class:`~mcpkit.errors.VerifierUnavailable` means the token could not be
checked (``503``). Any other exception is a server fault (500) and is logged; it
never lets the request through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, runtime_checkable

from .info import AuthInfo

__all__ = ["TokenVerifier", "VerifyFunction", "as_verify_function"]


@runtime_checkable
class TokenVerifier(Protocol):
    """Checks one bearer token; None (or ``InvalidToken``) when it is not good here."""

    async def verify(self, token: str) -> AuthInfo | None: ...


VerifyFunction: TypeAlias = Callable[[str, str], Awaitable[AuthInfo | None]]
"""``async def verify(token, resource) -> AuthInfo | None``."""


def as_verify_function(verifier: TokenVerifier | VerifyFunction) -> VerifyFunction:
    """One calling convention, ``(token, resource)``, for either accepted shape."""
    if isinstance(verifier, TokenVerifier):
        method = verifier.verify
        # A plain function handing back the method's coroutine: no second coroutine
        # frame on every request.
        return lambda token, resource: method(token)
    if not callable(verifier):
        raise TypeError(
            "a token verifier is an object with an async verify(token) method "
            f"or an async function (token, resource) -> AuthInfo | None, not {verifier!r}"
        )
    return verifier
