"""Keywords of FastMCP and the official SDK that mcpkit spells differently.

Porting a server from FastMCP (4.x) or the official SDK's ``MCPServer`` mostly
works as written; where an option has another name or shape here, passing the
foreign keyword fails at once with one line that names mcpkit's spelling,
instead of Python's bare "unexpected keyword argument". ``docs/migrating.md``
has the whole table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

__all__ = ["FOREIGN_OPTIONS", "refuse_foreign"]

_SCOPES = "scopes=[...] (the OAuth scopes a caller's token needs)"
_TASKS = "extensions=[tasks_extension(...)] on the server (mcpkit.extensions.tasks)"

#: Where the keyword is passed -> foreign keyword -> what mcpkit uses instead.
FOREIGN_OPTIONS: Mapping[str, Mapping[str, str]] = {
    "MCPServer": {
        "mask_error_details": "debug= (errors are masked unless debug=True)",
        "list_page_size": "limits=ServerLimits(page_size=...)",
        "cache_ttl": "cache=CacheOptions(ttl_ms=...) (milliseconds)",
        "cache_scope": "cache=CacheOptions(scope=...)",
        "cache_hints": "cache=CacheOptions(methods={...})",
        "client_log_level": "default_log_level=",
        "log_level": "default_log_level= (lower case: 'info', 'debug', ...)",
        "session_state_store": "store= (a mcpkit.stores.Store)",
        "event_store": "store= (a mcpkit.stores.Store)",
        "request_state_security": "input_rounds=InputRoundOptions(request_state_keys=...)",
        "providers": "server.add_component_source(...) or server.mount(...)",
        "tasks": _TASKS,
        "experimental_capabilities": "extensions=[...] (mcpkit.Extension)",
        "auth_server_provider": "auth=ProtectedResource(...) (mcpkit.auth)",
        "token_verifier": "auth=ProtectedResource(..., verifier=...)",
        "on_duplicate": "nothing: a later tool of the same name replaces the earlier one",
        "warn_on_duplicate_tools": "nothing: a later tool of the same name replaces it",
        "dependencies": "your project's own dependencies (mcpkit install --with ...)",
    },
    "tool": {
        "auth": _SCOPES,
        "task": _TASKS,
        "exclude_args": "a parameter with a default the caller cannot see: not supported yet",
        "serializer": "structured_output= or a ToolResult return",
        "app": "the apps extension (extensions/apps: MCP Apps UI resources)",
    },
    "resource": {"auth": _SCOPES, "security": "nothing: URIs are matched as RFC 6570 templates"},
    "prompt": {"auth": _SCOPES},
}


def refuse_foreign(where: str, options: Mapping[str, object], known: Collection[str]) -> None:
    """Raise ``TypeError`` (what Python raises for an unknown keyword) for the first of
    ``options`` not in ``known``, naming mcpkit's spelling for a keyword of
    :data:`FOREIGN_OPTIONS` ``[where]``."""
    for key in options:
        if key in known:
            continue
        ours = FOREIGN_OPTIONS.get(where, {}).get(key)
        if ours is not None:
            raise TypeError(f"{where}({key}=...) is not mcpkit's spelling: use {ours}")
        raise TypeError(f"{where}() got an unexpected keyword argument {key!r}")
