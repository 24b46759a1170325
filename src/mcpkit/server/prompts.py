"""Prompts: ``@server.prompt`` functions, Mastra's callbacks, versions.

Prompt arguments are strings on the wire; a typed parameter (``int``,
``bool``, ...) is validated in lax mode, so ``"3"`` becomes ``3``. A missing
required argument is -32602 (2025-11-25 server/prompts § error handling).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidParams, MCPError, RegistrationError
from .content import to_content
from .context import run_sync
from .lazy_pydantic import validation_error
from .scopes import enforce, granted_scopes, parse_scopes
from .signature import (
    FunctionSignature,
    SignatureError,
    format_validation_error,
    inspect_function,
    summary,
)
from .visibility import Keep, checked_tags

if TYPE_CHECKING:
    from .context import Context
    from .server import MCPServer

__all__ = ["MCPServerPrompts", "PromptDefinition", "PromptManager", "PromptMessage"]


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of a prompt; ``content`` is text or any content helper."""

    role: Literal["user", "assistant"]
    content: Any

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": to_content(self.content)}


@dataclass(slots=True)
class MCPServerPrompts:
    """Prompt callbacks as in Mastra.

    ``list_prompts()`` returns prompt dicts (``name``, ``description``,
    ``arguments``, optional ``version``); ``get_prompt_messages(name=...,
    version=..., args=...)`` returns messages, or ``{"prompt": ...,
    "messages": [...]}``. Either may be sync or async.
    """

    list_prompts: Callable[[], Any] | None = None
    get_prompt_messages: Callable[..., Any] | None = None


@dataclass(slots=True)
class PromptDefinition:
    name: str
    fn: Callable[..., Any]
    sig: FunctionSignature
    description: str | None = None
    title: str | None = None
    version: str | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    scopes: frozenset[str] = frozenset()  # OAuth scopes to see and get it (.scopes)
    tags: frozenset[str] = frozenset()  # for enable/disable by tag (.visibility)

    def arguments(self) -> list[dict[str, Any]]:
        out = []
        for name, description, required in self.sig.described_parameters():
            arg: dict[str, Any] = {"name": name}
            if description:
                arg["description"] = description
            arg["required"] = required
            out.append(arg)
        return out

    def describe(self) -> dict[str, Any]:
        item: dict[str, Any] = {"name": self.name}
        if self.title:
            item["title"] = self.title
        if self.description:
            item["description"] = self.description
        item["arguments"] = self.arguments()
        if self.icons:
            item["icons"] = self.icons
        meta = dict(self.meta or {})
        if self.version is not None:
            item["version"] = self.version
        if meta:
            item["_meta"] = meta
        return item


def messages_from(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": {"type": "text", "text": value}}]
    if isinstance(value, PromptMessage):
        return [value.to_dict()]
    if isinstance(value, dict):
        if "role" in value:
            content = value.get("content")
            return [{"role": value["role"], "content": to_content(content)}]
        return [{"role": "user", "content": to_content(value)}]
    if isinstance(value, list | tuple):
        out: list[dict[str, Any]] = []
        for v in value:
            out.extend(messages_from(v))
        return out
    return [{"role": "user", "content": to_content(value)}]


class PromptManager:
    """``server.prompts``: registration, ``prompts/list`` and ``prompts/get``."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self.registered: dict[tuple[str, str | None], PromptDefinition] = {}
        self.callbacks = MCPServerPrompts()
        # Set once a prompt with scopes is registered (see .scopes).
        self.any_scoped = False
        #: Called with each prompt after it is added (see add_listener).
        self.listeners: list[Callable[[PromptDefinition], None]] = []

    def add_listener(self, listener: Callable[[PromptDefinition], None]) -> None:
        """Call ``listener(prompt)`` after each prompt is added.

        Synchronous, inside ``add``: it must not block. ``mcpkit.compose.mount``
        follows a mounted server's new prompts this way.
        """
        self.listeners.append(listener)

    @property
    def enabled(self) -> bool:
        return bool(self.registered or self.callbacks.list_prompts)

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        version: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        enabled: bool = True,
    ) -> PromptDefinition:
        prompt_name = name or getattr(fn, "__name__", None)
        if not prompt_name or prompt_name == "<lambda>":
            raise RegistrationError(["a prompt needs a name: pass name=... for lambdas"])
        problems: list[str] = []
        needed = parse_scopes(scopes, problems)
        tagged = checked_tags("tags", tags, problems)
        sig = None
        try:
            sig = inspect_function(fn, model_name=f"prompt_{prompt_name}", strings=True)
        except SignatureError as exc:
            problems.extend(exc.problems)
        if problems or sig is None:
            raise RegistrationError([f"prompt {prompt_name!r}: {p}" for p in problems])
        desc = description if description is not None else summary(sig.doc)
        prompt = PromptDefinition(
            prompt_name, fn, sig, desc, title, version, icons, meta, scopes=needed, tags=tagged
        )
        if not enabled:
            self._server.visibility.disable_at_registration("prompts", prompt_name)
        self.registered[(prompt_name, version)] = prompt
        if needed:
            self.any_scoped = True
        for listener in self.listeners:
            listener(prompt)
        return prompt

    def find(self, name: str, version: str | None = None) -> PromptDefinition | None:
        exact = self.registered.get((name, version))
        if exact is not None or version is not None:
            return exact
        candidates = [p for (n, _v), p in self.registered.items() if n == name]
        return candidates[-1] if candidates else None  # latest registered version

    def serves(self, name: str, version: str | None = None) -> bool:
        """Whether ``prompts/get`` of ``name`` is this server's to answer (else a source's)."""
        return (
            self.find(name, version) is not None or self.callbacks.get_prompt_messages is not None
        )

    async def list(self, auth_info: Any = None, keep: Keep | None = None) -> list[dict[str, Any]]:
        """``prompts/list`` entries; with ``auth_info``, only what it may get; with
        ``keep``, only what ``keep("prompts", name, tags)`` keeps (.visibility)."""
        found: Collection[PromptDefinition] = self.registered.values()
        if keep is not None:
            found = [p for p in found if keep("prompts", p.name, p.tags)]
        if auth_info is not None and self.any_scoped:
            granted = granted_scopes(auth_info)
            items = [p.describe() for p in found if p.scopes.issubset(granted)]
        else:
            items = [p.describe() for p in found]
        if self.callbacks.list_prompts is not None:
            listed = self.callbacks.list_prompts()
            if inspect.isawaitable(listed):
                listed = await listed
            for p in listed or ():
                items.append(
                    p.model_dump(exclude_none=True) if hasattr(p, "model_dump") else dict(p)
                )
        return items

    async def get(
        self,
        name: str,
        args: dict[str, Any],
        version: str | None,
        ctx: Context | None,
        keep: Keep | None = None,
    ) -> dict[str, Any]:
        prompt = self.find(name, version)
        if prompt is not None:
            if keep is not None and not keep("prompts", name, prompt.tags):
                raise InvalidParams(f"Prompt {name!r} is disabled")
            if prompt.scopes:
                enforce(ctx.auth_info if ctx else None, prompt.scopes, f"prompt {name!r}")
            try:
                kwargs = prompt.sig.validate(args)
            except validation_error() as exc:
                raise InvalidParams(
                    f"Invalid arguments for prompt '{name}': {format_validation_error(exc)}"
                ) from None
            if prompt.sig.context_param is not None:
                kwargs[prompt.sig.context_param] = ctx
            if prompt.sig.is_async:  # sig.fn: the function, or what resolves its Depends
                value = await prompt.sig.fn(**kwargs)
            else:
                value = await run_sync(prompt.sig.fn, kwargs, ctx)
            result: dict[str, Any] = {"messages": messages_from(value)}
            if prompt.description:
                result["description"] = prompt.description
            return result
        getter = self.callbacks.get_prompt_messages
        if getter is not None:
            known = {p.get("name") for p in await self.list()}
            if name not in known:
                raise InvalidParams(f"Unknown prompt: {name}")
            try:
                value = getter(name=name, version=version, args=args)
                if inspect.isawaitable(value):
                    value = await value
            except MCPError:
                raise
            except Exception as exc:
                raise InvalidParams(f"Prompt '{name}' failed: {exc}") from None
            if isinstance(value, dict) and "messages" in value:
                out: dict[str, Any] = {"messages": messages_from(value["messages"])}
                described = value.get("prompt") or {}
                desc = described.get("description") if isinstance(described, dict) else None
                if desc:
                    out["description"] = desc
                return out
            return {"messages": messages_from(value)}
        raise InvalidParams(f"Unknown prompt: {name}")

    async def notify_list_changed(self) -> None:
        await self._server.broadcast("notifications/prompts/list_changed")
