"""Who may see a task: the extension's capability check and a task's owner binding.

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

__all__ = ["TASKS", "client_declares_tasks", "missing_capability", "owner_of"]

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
