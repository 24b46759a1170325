"""Who may see a task: the extension's capability check, a task's owner binding, its caller.

Shared by the server's ``tasks/*`` methods (:mod:`.server`) and its status
notifications (:mod:`.notify`), which must answer the same caller the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ...errors import MISSING_CAPABILITY, MCPError
from .records import EXTENSION_ID

if TYPE_CHECKING:
    from ...server.context import Context
    from ...server.middleware import MiddlewareContext

__all__ = [
    "TASKS",
    "auth_from_json",
    "auth_to_json",
    "client_declares_tasks",
    "missing_capability",
    "owner_of",
]

#: The extension's identifier (``capabilities.extensions`` key).
TASKS: Final = EXTENSION_ID


def client_declares_tasks(capabilities: Mapping[str, Any]) -> bool:
    """Whether client ``capabilities`` declare the tasks extension (``extensions`` key)."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS), Mapping)


def owner_of(ctx: Context | MiddlewareContext) -> str | None:
    """Who a task belongs to: the authenticated principal, else the session; None when
    there is neither (a stateless request without auth), and then the unguessable task
    id alone is the bearer token (ext-tasks Security Considerations, "Auth binding")."""
    auth = ctx.auth
    if auth is not None:
        return f"principal:{auth.principal}"
    session_id = ctx.session_id
    return None if session_id is None else f"session:{session_id}"


def missing_capability(what: str) -> MCPError:
    """-32021 with the capability named, as the 2026-07-28 missing-capability error and
    the conformance suite's tasks-required-task-error / tasks-capability-negotiation ask
    (ext-tasks "Protocol Errors")."""
    return MCPError(
        f"{what} needs the {TASKS} extension in the request's client capabilities",
        code=MISSING_CAPABILITY,
        data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


def auth_to_json(auth: Any) -> dict[str, Any] | None:
    """The caller's auth info as plain data, to travel with a queued task's job."""
    # The claims of the caller's token travel with the job; the raw token does not (it
    # would sit in Redis for the task's life), so ctx.auth.token is "" on a worker.
    from ...auth.info import AuthInfo

    if not isinstance(auth, AuthInfo):
        return None
    return {
        "subject": auth.subject,
        "client_id": auth.client_id,
        "issuer": auth.issuer,
        "scopes": sorted(auth.scopes),
        "expires_at": auth.expires_at,
        "resource": auth.resource,
        "claims": dict(auth.claims),
    }


def auth_from_json(data: Any) -> Any:
    """The auth info :func:`auth_to_json` made, on the worker (its raw token is empty)."""
    from ...auth.info import AuthInfo

    if not isinstance(data, dict):
        return None
    return AuthInfo(
        token="",
        subject=data.get("subject"),
        client_id=data.get("client_id"),
        issuer=data.get("issuer"),
        scopes=frozenset(data.get("scopes") or ()),
        expires_at=data.get("expires_at"),
        resource=data.get("resource"),
        claims=data.get("claims") or {},
    )
