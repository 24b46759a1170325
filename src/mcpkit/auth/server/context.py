"""What the authorization server's endpoints read: its configuration and state, as a protocol.

:class:`~.proxy.OAuthProxy` satisfies it; the handlers and the ASGI app depend on this
protocol rather than on the proxy, so the proxy can build the app without an import
cycle, and a test can hand the handlers a lighter object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..._buckets import BucketStore
    from .client_documents import ClientDocuments
    from .limits import RegistrationLimiter
    from .provider import UpstreamProvider
    from .signing import TokenSigner
    from .storage import AuthServerStorage

__all__ = ["ServerContext"]


class ServerContext(Protocol):
    issuer: str
    resource: str
    callback_url: str
    upstream: UpstreamProvider
    storage: AuthServerStorage
    signer: TokenSigner
    refresh_token_ttl: float
    code_ttl: float
    flow_ttl: float
    secure_cookies: bool
    remember_consent: bool
    consent_ttl: float
    metadata_paths: frozenset[str]
    registration_limiter: RegistrationLimiter
    authorization_limiter: RegistrationLimiter
    replay_buckets: BucketStore
    client_documents: ClientDocuments | None

    def metadata(self) -> dict[str, Any]: ...
    def check_scopes(self, requested: Sequence[str]) -> tuple[str, ...] | None: ...
    def client_lifetime(self, now: float) -> float | None: ...
