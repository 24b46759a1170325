"""One operation as a callable: its input schema, and the HTTP call its arguments make.

The input schema is one object: the parameters by name, then the request body's
properties beside them when the body is an object (a body of another shape is the
``body`` argument). A name taken twice is told apart by its location:
``id__query``, ``id__header``, ``name__body``. The output schema is the success
response's, which MCP requires to be an object (2025-11-25 server/tools § Output
Schema): any other response schema is wrapped as ``{"result": ...}``, and so is the
structured result. JSON, form (``application/x-www-form-urlencoded``) and
multipart bodies are encoded as such (multipart with text parts only: no uploads);
any other media type is sent as the text given. An HTTP error status becomes a tool error carrying the status
and the start of the body.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..._extras import require_extra

with require_extra("openapi", feature="OpenAPI import (mcpkit.compose.openapi.call)"):
    import httpx

from ...server.context import Context
from .parse import Body, Operation, Parameter
from .request import serialize
from .schema import SchemaConverter

__all__ = ["HTTPSettings", "OperationCall", "build_call"]

_FORM: Final = "application/x-www-form-urlencoded"
_WRAP: Final = "result"


@dataclass(frozen=True, slots=True)
class HTTPSettings:
    """What every call of one server shares: the client and the request options."""

    client: httpx.AsyncClient
    base_url: str | None
    headers: Mapping[str, str]
    #: Seconds one call may take in all (None: no limit beyond the client's own).
    timeout: float | None
    forward_bearer_token: bool
    max_error_body: int


@dataclass(frozen=True, slots=True)
class OperationCall:
    """An operation's tool-facing shape and the request it sends."""

    op: Operation
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrapped: bool
    #: argument name → the parameter it fills, or the body property (a str), or
    #: None for the whole body.
    targets: Mapping[str, Parameter | str | None]
    settings: HTTPSettings

    async def send(self, arguments: Mapping[str, Any], ctx: Context | None) -> httpx.Response:
        """Send the request ``arguments`` make; errors of the transport propagate."""
        params: list[tuple[Parameter, Any]] = []
        body: Any = None
        fields: dict[str, Any] = {}
        for arg, value in arguments.items():
            target = self.targets.get(arg, _MISSING)
            if isinstance(target, Parameter):
                params.append((target, value))
            elif isinstance(target, str):
                fields[target] = value
            elif target is None:
                body = value
        request = serialize(self.op.path, params)
        # httpx.Headers: names are case-insensitive (RFC 9110 § 5.1), so a forwarded
        # token replaces a static "authorization" instead of going beside it.
        headers = httpx.Headers(self.settings.headers)
        if self.settings.forward_bearer_token and ctx is not None and ctx.auth is not None:
            headers["Authorization"] = f"Bearer {ctx.auth.token}"
        headers.update(request.headers)
        if request.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in request.cookies)
        options: dict[str, Any] = {}
        if self.op.body is not None and (fields or body is not None):
            _encode_body(self.op.body, fields if body is None else body, options, headers)
        url = request.path
        if self.settings.base_url:
            url = self.settings.base_url.rstrip("/") + url
        # A deadline for the whole call: httpx's own timeouts bound each phase (connect,
        # each read) and apply only to network transports, not to an in-process app.
        async with asyncio.timeout(self.settings.timeout):
            return await self.settings.client.request(
                self.op.method.upper(),
                url,
                params=tuple(request.query),
                headers=headers,
                **options,
            )

    async def run(self, arguments: Mapping[str, Any], ctx: Context | None) -> dict[str, Any]:
        """The ``CallToolResult`` of calling the operation with the tool's arguments."""
        try:
            response = await self.send(arguments, ctx)
        except TimeoutError:  # the deadline of the whole call
            return _error(f"{self.describe()} timed out after {self.settings.timeout:g} s")
        except httpx.TimeoutException as exc:  # one of the client's own timeouts
            return _error(f"{self.describe()} timed out ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return _error(f"{self.describe()} failed: {type(exc).__name__}: {exc}")
        if response.status_code >= 400:
            return _error(self.error_text(response))
        media = _binary_media(response)
        if media is not None:
            # An image or a sound is given as such (2025-11-25 server/tools § Tool
            # Result), not as the text its bytes would decode to.
            data = base64.b64encode(response.content).decode()
            kind = media.partition("/")[0]
            return {"content": [{"type": kind, "data": data, "mimeType": media}]}
        text = response.text
        # An empty body (204 No Content) still says what happened.
        shown = text or f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        result: dict[str, Any] = {"content": [{"type": "text", "text": shown}]}
        if self.output_schema is not None and text:
            try:
                data = json.loads(text)
            except ValueError:
                return result
            if self.wrapped:
                result["structuredContent"] = {_WRAP: data}
            elif isinstance(data, dict):
                result["structuredContent"] = data
        return result

    def describe(self) -> str:
        return f"{self.op.method.upper()} {self.op.path}"

    def error_text(self, response: httpx.Response) -> str:
        """``GET /pets/{id}: HTTP 404 Not Found: <body, cut to max_error_body>``."""
        body = response.text
        limit = self.settings.max_error_body
        if len(body) > limit:
            body = body[:limit] + f"… ({len(response.content)} bytes in all)"
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        return f"{self.describe()}: HTTP {response.status_code}{reason}: {body}"


_MISSING: Final = object()


def _binary_media(response: httpx.Response) -> str | None:
    """The media type of an image or audio response, else None."""
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media if media.startswith(("image/", "audio/")) else None


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _encode_body(body: Body, value: Any, options: dict[str, Any], headers: httpx.Headers) -> None:
    base = body.media_type.split(";", 1)[0].strip().lower()
    if base == _FORM and isinstance(value, dict):
        # Nested values have no standard form encoding without an Encoding Object:
        # JSON text is what a reader can most often take back.
        options["data"] = {
            k: (
                v
                if isinstance(v, str | int | float | bool) or isinstance(v, list)
                else json.dumps(v, separators=(",", ":"))
            )
            for k, v in value.items()
        }
        return
    if base == "multipart/form-data" and isinstance(value, dict):
        # Each property a part without a file name (RFC 7578 § 4.2): text, not uploads.
        options["files"] = [
            (k, (None, v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))))
            for k, v in value.items()
        ]
        return
    if base.endswith("json") or base == "*/*":
        options["json"] = value
        return
    headers.setdefault("Content-Type", body.media_type)
    options["content"] = value if isinstance(value, str | bytes) else json.dumps(value)


def build_call(
    op: Operation, converter: SchemaConverter, settings: HTTPSettings, *, output: bool = True
) -> OperationCall:
    """The call for ``op``: its merged input schema and (``output``) its output schema."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    targets: dict[str, Parameter | str | None] = {}
    refs: dict[str, Any] = {}
    for param in op.parameters:
        schema, defs = converter.convert(param.schema)
        refs.update(defs)
        if param.description and "description" not in schema:
            schema = {**schema, "description": param.description}
        name = param.name if param.name not in targets else f"{param.name}__{param.location}"
        properties[name] = schema
        targets[name] = param
        if param.required:
            required.append(name)
    if op.body is not None:
        whole, defs = converter.convert_inline(op.body.schema)
        refs.update(defs)
        if _is_plain_object(whole):
            needed = set(whole.get("required") or ()) if op.body.required else set()
            for prop, prop_schema in whole["properties"].items():
                name = prop if prop not in targets else f"{prop}__body"
                properties[name] = prop_schema
                targets[name] = prop
                if prop in needed:
                    required.append(name)
        else:
            name = "body" if "body" not in targets else "body__body"
            if op.body.description and "description" not in whole:
                whole = {**whole, "description": op.body.description}
            properties[name] = whole
            targets[name] = None
            if op.body.required:
                required.append(name)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    if refs:
        input_schema["$defs"] = refs
    out_schema, wrapped = _output_schema(op, converter) if output else (None, False)
    return OperationCall(op, input_schema, out_schema, wrapped, targets, settings)


def _is_plain_object(schema: Mapping[str, Any]) -> bool:
    """An object whose properties can sit beside the parameters (no combinators)."""
    kind = schema.get("type")
    return (
        (kind == "object" or (kind is None and "properties" in schema))
        and isinstance(schema.get("properties"), dict)
        and not any(k in schema for k in ("allOf", "anyOf", "oneOf", "not", "if", "$ref"))
    )


def _output_schema(op: Operation, converter: SchemaConverter) -> tuple[dict[str, Any] | None, bool]:
    if op.response_schema is None:
        return None, False
    whole, defs = converter.convert_inline(op.response_schema)
    if whole.get("type") == "object":
        out = dict(whole)
        wrapped = False
    else:
        out = {"type": "object", "properties": {_WRAP: whole}, "required": [_WRAP]}
        wrapped = True
    if defs:
        out["$defs"] = {**out.get("$defs", {}), **defs}
    return out, wrapped
