"""What a handler asks of the client: elicitation (form and URL mode), sampling, roots.

:class:`ClientAsks` is the part of :class:`~mcpkit.server.context.Context` that
sends requests to the client (on the stateless era they become input requests
of an input-required result, see :mod:`.stateless.input_required`), with the
schema helpers form-mode elicitation needs and the URL-mode pieces of
2025-11-25 (client/elicitation § URL mode): ``ctx.elicit_url``,
``notifications/elicitation/complete`` and the ``-32042`` error.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload
from urllib.parse import urlsplit

from ..errors import (
    CapabilityError,
    ElicitationValidationError,
    InvalidParams,
)
from .form_validation import answer_errors
from .lazy_pydantic import model_class, validation_error

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import ErrorDetails

    from ..protocol.versions import Revision
    from .session import Request, ServerSession

__all__ = [
    "ClientAsks",
    "ElicitResult",
    "Root",
    "URLElicitation",
    "elicitation_schema",
    "requested_schema_for",
]

T = TypeVar("T")

#: Longest URL ``elicit_url`` sends (a bound for the client's display, not a spec number).
MAX_URL_LENGTH = 8192


@dataclass(frozen=True, slots=True)
class ElicitResult(Generic[T]):
    """The user's answer: ``action`` is ``accept``, ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: T | None = None


@dataclass(frozen=True, slots=True)
class Root:
    uri: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class URLElicitation:
    """One URL-mode elicitation a request needs first (inside :class:`URLElicitationRequiredError`)."""

    url: str
    message: str
    elicitation_id: str

    def to_params(self) -> dict[str, Any]:
        return {
            "mode": "url",
            "message": self.message,
            "url": self.url,
            "elicitationId": self.elicitation_id,
        }

    def __post_init__(self) -> None:
        check_url(self.url)


def check_url(url: object) -> str:
    """``url`` if it is an absolute http(s) URL a client can show and open, else ValueError.

    client/elicitation § safe URL handling: the client shows the full URL and
    opens it in a browser, so only web URLs with a host make sense (no
    ``javascript:``, ``file:`` or relative URLs).
    """
    if not isinstance(url, str) or not url:
        raise ValueError(f"an elicitation URL must be a non-empty string, not {url!r}")
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"an elicitation URL may be at most {MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"an elicitation URL must be an absolute http(s) URL, not {url!r}")
    return url


class ClientAsks:
    """Requests to the client, mixed into :class:`~mcpkit.server.context.Context`."""

    __slots__ = ()

    if TYPE_CHECKING:
        session: ServerSession
        request: Request

        def _call(self, coro: Coroutine[Any, Any, T]) -> Any: ...

    @overload
    def elicit(
        self,
        message: str,
        schema: type[T],
        *,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Awaitable[ElicitResult[T]]: ...
    @overload
    def elicit(
        self,
        message: str,
        schema: dict[str, Any],
        *,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Awaitable[ElicitResult[dict[str, Any]]]: ...
    def elicit(
        self, message: str, schema: Any, *, timeout: float | None = None, key: str | None = None
    ) -> Any:
        """Ask the user for structured input (client/elicitation, form mode).

        ``schema`` is a pydantic model (the content is parsed into it) or a
        JSON-Schema dict of a flat object (enums and defaults allowed; the answer
        is checked against it as :mod:`~mcpkit.server.form_validation` says). ``key``
        names the question in a 2026-07-28 input-required result (default:
        ``elicitation``, ``elicitation_2``, ...).

        An accepted answer that does not fit ``schema`` raises
        :class:`~mcpkit.errors.ElicitationValidationError` (its ``content`` and
        ``errors``): catch it to ask again or fall back; uncaught in a tool it
        becomes a tool error naming each failing field.
        """
        return self._call(self._elicit(message, schema, timeout, key))

    async def _elicit(
        self, message: str, schema: Any, timeout: float | None, key: str | None = None
    ) -> ElicitResult[Any]:
        model = model_class(schema)
        if model is not None:
            requested = elicitation_schema(model)
        elif isinstance(schema, dict):
            requested = schema
        else:
            raise TypeError("elicit() schema must be a pydantic model class or a JSON-Schema dict")
        revision = self.session.revision
        unreachable = self.session.unreachable("elicitation/create")
        if unreachable is not None:
            raise unreachable
        caps = self.session.client_capabilities.get("elicitation")
        if caps is None:
            raise CapabilityError(
                "the client did not declare the 'elicitation' capability, so the server cannot "
                "send elicitation/create"
            )
        if not revision.elicitation:
            raise CapabilityError(
                f"elicitation is not part of protocol revision {revision.name}: the client must "
                "negotiate 2025-06-18 or later"
            )
        # 2025-11-25 client/elicitation § capabilities: `{}` means form mode only.
        if isinstance(caps, dict) and caps and "form" not in caps:
            raise CapabilityError("the client supports only URL-mode elicitation, not forms")
        params: dict[str, Any] = {
            "message": message,
            "requestedSchema": requested_schema_for(requested, revision),
        }
        if revision.rich_elicitation:
            params["mode"] = "form"
        result = await self.session.send_request(
            "elicitation/create", params, self.request, timeout=timeout, key=key
        )
        action = result.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise InvalidParams(f"client answered elicitation with an unknown action {action!r}")
        if action != "accept":
            return ElicitResult(action=action)
        content = result.get("content")
        if model is not None:
            try:
                return ElicitResult(action="accept", content=model.model_validate(content or {}))
            except validation_error() as exc:
                raise ElicitationValidationError(content, exc.errors(include_url=False)) from None
        if content is not None and not isinstance(content, dict):
            problem: ErrorDetails = {
                "type": "dict_type",
                "loc": (),
                "msg": f"the content is not an object (got {type(content).__name__})",
                "input": content,
            }
            raise ElicitationValidationError(content, [problem])
        checked, errors = answer_errors(requested, content or {})
        if errors:
            raise ElicitationValidationError(content, errors)
        return ElicitResult(action="accept", content=None if content is None else checked)

    def elicit_url(
        self,
        url: str,
        message: str,
        *,
        elicitation_id: str | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Awaitable[ElicitResult[None]]:
        """Send the user to ``url`` out of band (URL-mode elicitation, 2025-11-25).

        For what must not pass through the client: credentials, payments, a
        third party's OAuth consent. The client shows ``message`` and the full
        URL, asks the user's consent and opens it; nothing the user enters there
        comes back through MCP. The result's ``action`` says whether the user
        agreed to go (``accept``), refused (``decline``) or dismissed it
        (``cancel``); it never has ``content``. What happened on the page is the
        server's own business: its route (``server.custom_route``) learns it, and
        may then tell the client with ``notifications/elicitation/complete``
        (:meth:`complete_elicitation`).

        ``elicitation_id`` identifies the elicitation to the client on 2025-11-25
        (default: a fresh random one; 2026-07-28 sends none); build ``url`` with an id you chose to tie the page's
        visit to this request, and verify the visitor is the same user (the spec's
        phishing warning: never a pre-authenticated URL). Needs a client that
        declared ``elicitation.url``; on 2026-07-28 it is an input request like
        any other (``key`` names it).
        """
        return self._call(self._elicit_url(url, message, elicitation_id, timeout, key))  # type: ignore[no-any-return]

    async def _elicit_url(
        self,
        url: str,
        message: str,
        elicitation_id: str | None,
        timeout: float | None,
        key: str | None,
    ) -> ElicitResult[None]:
        check_url(url)
        revision = self.session.revision
        unreachable = self.session.unreachable("elicitation/create")
        if unreachable is not None:
            raise unreachable
        if not revision.rich_elicitation:
            raise CapabilityError(
                f"URL-mode elicitation is not part of protocol revision {revision.name}: the "
                "client must negotiate 2025-11-25 or later"
            )
        caps = self.session.client_capabilities.get("elicitation")
        if not isinstance(caps, dict) or "url" not in caps:
            raise CapabilityError(
                "the client did not declare URL-mode elicitation (capability elicitation.url), "
                "so the server cannot send the user to a URL through it"
            )
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if revision.era == "handshake":
            # 2025-11-25 only: 2026-07-28's URL params have no id (the requestState
            # ties the answer to its request, and there is no completion notification).
            params["elicitationId"] = elicitation_id or str(uuid.uuid4())
        result = await self.session.send_request(
            "elicitation/create", params, self.request, timeout=timeout, key=key
        )
        action = result.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise InvalidParams(f"client answered elicitation with an unknown action {action!r}")
        return ElicitResult(action=action)

    async def complete_elicitation(self, elicitation_id: str) -> bool:
        """Tell the client a URL-mode elicitation is done (``notifications/elicitation/complete``).

        Only the handshake era has the notification (2025-11-25); on other
        revisions, and for a client without URL-mode elicitation, this sends nothing and
        returns False.
        """
        return await send_elicitation_complete(self.session, elicitation_id)

    def sample(
        self,
        messages: str | list[dict[str, Any]],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        metadata: dict[str, Any] | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> Any:
        """Ask the client's LLM (``sampling/createMessage``); returns the result dict.

        ``key`` names the question in a 2026-07-28 input-required result.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens}
        for name, value in (
            ("systemPrompt", system_prompt),
            ("temperature", temperature),
            ("stopSequences", stop_sequences),
            ("modelPreferences", model_preferences),
            ("includeContext", include_context),
            ("metadata", metadata),
        ):
            if value is not None:
                params[name] = value
        return self._call(
            self.session.send_request(
                "sampling/createMessage",
                params,
                self.request,
                timeout=timeout,
                capability="sampling",
                key=key,
            )
        )

    def list_roots(self, *, timeout: float | None = None, key: str | None = None) -> Any:
        """The client's roots (``roots/list``); ``key`` as for :meth:`elicit`."""
        return self._call(self._list_roots(timeout, key))

    async def _list_roots(self, timeout: float | None, key: str | None = None) -> list[Root]:
        result = await self.session.send_request(
            "roots/list", None, self.request, timeout=timeout, capability="roots", key=key
        )
        return [Root(uri=r["uri"], name=r.get("name")) for r in result.get("roots", [])]


def _inline(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Resolve a pydantic ``$ref`` (enums) and ``Optional[X]`` into one flat property."""
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = dict(defs.get(ref.rsplit("/", 1)[-1], {}))
        target.update({k: v for k, v in prop.items() if k != "$ref"})
        prop = target
    if "anyOf" in prop:  # Optional[X]
        options = [p for p in prop["anyOf"] if p.get("type") != "null"]
        if len(options) == 1:
            merged = _inline(dict(options[0]), defs)
            merged.update({k: v for k, v in prop.items() if k != "anyOf"})
            prop = merged
    if isinstance(prop.get("items"), dict):  # multi-select: list[Enum] / list[Literal]
        prop["items"] = _inline(prop["items"], defs)
        prop["items"].pop("title", None)
    if "default" in prop and prop["default"] is None:
        del prop["default"]  # a null default is not a value of any primitive schema
    return prop


def elicitation_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A flat ``requestedSchema`` from a pydantic model (elicitation § requested schema).

    Fields may be ``str`` (with ``format`` from e.g. ``EmailStr``, ``date``),
    ``int``, ``float``, ``bool``, an ``Enum`` or ``Literal`` of strings (single
    select), or a list of those (multi select, 2025-11-25); defaults carry over.
    """
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    props = {name: _inline(dict(prop), defs) for name, prop in schema.get("properties", {}).items()}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def requested_schema_for(schema: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``schema`` in the forms ``revision`` knows.

    2025-11-25 added defaults on strings, numbers and enums, titled enums
    (``oneOf`` of ``const``/``title``) and multi-select enums; for 2025-06-18
    defaults are dropped (the form still works without them), titled enums
    become the legacy ``enum`` + ``enumNames`` form, and a multi-select cannot be
    expressed at all.
    """
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict):
        raise ValueError("an elicitation schema is a flat JSON object schema with 'properties'")
    if revision.rich_elicitation:
        return schema
    out_props: dict[str, Any] = {}
    for name, prop in props.items():
        if not isinstance(prop, dict):
            raise ValueError(f"elicitation schema property {name!r} is not an object")
        prop = dict(prop)
        kind = prop.get("type")
        if kind == "array":
            raise CapabilityError(
                f"multi-select field {name!r} needs protocol revision 2025-11-25; "
                f"the client negotiated {revision.name}"
            )
        one_of = prop.pop("oneOf", None)
        if isinstance(one_of, list):
            prop["enum"] = [option.get("const") for option in one_of]
            prop["enumNames"] = [option.get("title", option.get("const")) for option in one_of]
        if kind != "boolean":
            prop.pop("default", None)
        out_props[name] = prop
    return {**schema, "properties": out_props}


def takes_elicitation_complete(session: ServerSession) -> bool:
    """Whether ``notifications/elicitation/complete`` means anything to ``session``'s client:
    only the handshake era has it (2025-11-25), for a client that declared URL mode."""
    caps = session.client_capabilities.get("elicitation")
    return (
        session.revision.era == "handshake"
        and session.revision.rich_elicitation
        and isinstance(caps, dict)
        and "url" in caps
    )


async def send_elicitation_complete(session: ServerSession, elicitation_id: str) -> bool:
    """``notifications/elicitation/complete`` on ``session``'s standalone stream; whether
    it was sent (see :func:`takes_elicitation_complete`)."""
    if not isinstance(elicitation_id, str) or not elicitation_id:
        raise ValueError("an elicitation id is a non-empty string")
    if not takes_elicitation_complete(session):
        return False
    await session.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})
    return True
