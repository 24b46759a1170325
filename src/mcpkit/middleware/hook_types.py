"""The typed params and results of :class:`~.hooks.Hooks`: the specification's shapes as TypedDicts.

A hook's ``context.params`` and what its ``call_next`` returns are the very
dicts of the request and of its result, typed for the checker with the
specification's field names (``CallToolParams["arguments"]``,
``CallToolResult["isError"]``): nothing is copied or converted on the way in
or out, so a hook that passes a request on costs no more than a plain
middleware. The listings are the exception: their hooks see the page's list of
definitions (and ``resources/read``'s the list of contents), put back into the
result with its other fields (``nextCursor``, ``_meta``) kept.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

__all__ = [
    "CallToolParams",
    "CallToolResult",
    "GetPromptParams",
    "GetPromptResult",
    "InitializeParams",
    "InitializeResult",
    "ListParams",
    "ReadResourceParams",
]

_Meta = dict[str, Any]


class CallToolParams(TypedDict, total=False):
    """``tools/call``: the tool's ``name`` and its ``arguments``."""

    name: Required[str]
    arguments: dict[str, Any]
    _meta: _Meta


class CallToolResult(TypedDict, total=False):
    """``tools/call``'s result. On 2026-07-28 a round that asks the client for input
    has ``resultType`` ``"input_required"`` and no ``content``; a task-augmented call
    (the tasks extension) has ``task`` instead."""

    content: list[dict[str, Any]]
    structuredContent: dict[str, Any]
    isError: bool
    resultType: str
    _meta: _Meta


class ReadResourceParams(TypedDict, total=False):
    """``resources/read``: the resource's ``uri``."""

    uri: Required[str]
    _meta: _Meta


class GetPromptParams(TypedDict, total=False):
    """``prompts/get``: the prompt's ``name`` and its (string) ``arguments``."""

    name: Required[str]
    arguments: dict[str, str]
    _meta: _Meta


class GetPromptResult(TypedDict, total=False):
    """``prompts/get``'s result: ``messages`` (``role``, ``content``) and a ``description``."""

    messages: list[dict[str, Any]]
    description: str
    resultType: str
    _meta: _Meta


class ListParams(TypedDict, total=False):
    """A listing (``tools/list``, ``resources/list``, ...): the page ``cursor``."""

    cursor: str
    _meta: _Meta


class InitializeParams(TypedDict, total=False):
    """``initialize`` (handshake era): what the client offers."""

    protocolVersion: Required[str]
    capabilities: Required[dict[str, Any]]
    clientInfo: Required[dict[str, Any]]
    _meta: _Meta


class InitializeResult(TypedDict, total=False):
    """``initialize``'s result: what the server answers the handshake with."""

    protocolVersion: Required[str]
    capabilities: Required[dict[str, Any]]
    serverInfo: Required[dict[str, Any]]
    instructions: str
    _meta: _Meta


#: The hooks whose result is one list of the method's result, and that list's key.
LISTED: dict[str, tuple[str, str]] = {
    "on_read_resource": ("resources/read", "contents"),
    "on_list_tools": ("tools/list", "tools"),
    "on_list_resources": ("resources/list", "resources"),
    "on_list_resource_templates": ("resources/templates/list", "resourceTemplates"),
    "on_list_prompts": ("prompts/list", "prompts"),
}

#: The hooks whose result is the method's result dict itself.
WHOLE: dict[str, str] = {
    "on_call_tool": "tools/call",
    "on_get_prompt": "prompts/get",
    "on_initialize": "initialize",
}
