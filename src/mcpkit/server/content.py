"""Content helpers and the conversion of tool return values to ``CallToolResult``.

A tool may return ``str``, ``bytes`` (a blob resource is not guessed: bytes
become base64 text), one of the helpers below, a list mixing them, a
``ToolResult`` for full control, or any JSON-able value. Object-typed values
become ``structuredContent`` plus their JSON as text (2025-06-18 tools §
structured content).
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ..protocol.versions import Revision

__all__ = [
    "Audio",
    "EmbeddedResource",
    "Image",
    "ResourceLink",
    "Text",
    "ToolResult",
    "shape_content",
    "shape_result",
    "to_content",
    "to_content_list",
]


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _annotated(
    item: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None
) -> dict[str, Any]:
    if annotations:
        item["annotations"] = annotations
    if meta:
        item["_meta"] = meta
    return item


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _annotated({"type": "text", "text": self.text}, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class _Binary:
    data: bytes | str = b""
    mime_type: str | None = None
    path: str | Path | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    _kind = "binary"
    _default_mime = "application/octet-stream"

    def to_dict(self) -> dict[str, Any]:
        data = self.data
        mime = self.mime_type
        if self.path is not None:
            p = Path(self.path)
            data = p.read_bytes()
            mime = mime or mimetypes.guess_type(p.name)[0]
        item = {"type": self._kind, "data": _b64(data), "mimeType": mime or self._default_mime}
        return _annotated(item, self.annotations, self.meta)


class Image(_Binary):
    """An image: raw bytes (or base64 text, or a ``path``) and its MIME type."""

    _kind = "image"
    _default_mime = "image/png"


class Audio(_Binary):
    """Audio: raw bytes (or base64 text, or a ``path``) and its MIME type."""

    _kind = "audio"
    _default_mime = "audio/wav"


@dataclass(frozen=True, slots=True)
class ResourceLink:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        item: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("title", self.title),
            ("size", self.size),
        ):
            if value is not None:
                item[key] = value
        return _annotated(item, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource embedded in a result: ``text`` or ``blob`` (bytes) contents."""

    uri: str
    text: str | None = None
    blob: bytes | str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def contents(self) -> dict[str, Any]:
        res: dict[str, Any] = {"uri": self.uri}
        if self.mime_type:
            res["mimeType"] = self.mime_type
        if self.blob is not None:
            res["blob"] = _b64(self.blob)
        else:
            res["text"] = self.text or ""
        return res

    def to_dict(self) -> dict[str, Any]:
        return _annotated(
            {"type": "resource", "resource": self.contents()}, self.annotations, self.meta
        )


@dataclass(slots=True)
class ToolResult:
    """Full control over a ``tools/call`` result."""

    content: Sequence[Any] = ()
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": to_content_list(self.content)}
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
            if not result["content"]:
                result["content"] = [{"type": "text", "text": dump_text(self.structured_content)}]
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = self.meta
        return result


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def to_content(value: Any) -> dict[str, Any]:
    """One content block for ``value``."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and isinstance(value, Text | _Binary | ResourceLink | EmbeddedResource):
        return to_dict()  # type: ignore[no-any-return]
    if isinstance(value, dict) and value.get("type") in _CONTENT_TYPES:
        return value
    if isinstance(value, bytes | bytearray):
        return {"type": "text", "text": base64.b64encode(value).decode("ascii")}
    return {"type": "text", "text": dump_text(value)}


def to_content_list(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [to_content(v) for v in value]
    return [to_content(value)]


def dump_text(value: Any) -> str:
    """JSON text for any value pydantic or orjson can serialise."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        from pydantic_core import to_json

        return to_json(value).decode()


# -- older revisions --------------------------------------------------------------------------
# Content is built in the newest shape; sessions on an older revision get it
# rewritten into what that revision's schema has. Only those sessions pay for it.


def shape_content(block: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``block`` as ``revision`` can carry it.

    ResourceLink (2025-06-18) becomes text naming the link; AudioContent
    (2025-03-26) becomes text saying what was left out; ``_meta`` on content and
    ``annotations.lastModified`` (2025-06-18) are dropped.
    """
    kind = block.get("type")
    if kind == "resource_link" and not revision.resource_links:
        name = block.get("title") or block.get("name")
        block = {
            "type": "text",
            "text": f"{name}: {block.get('uri')}" if name else str(block.get("uri")),
        }
    elif kind == "audio" and not revision.audio:
        block = {
            "type": "text",
            "text": f"[{block.get('mimeType', 'audio')} audio omitted: protocol revision "
            f"{revision.name} cannot carry audio]",
        }
    if revision.meta_fields:
        return block
    out = {k: v for k, v in block.items() if k != "_meta"}
    annotations = out.get("annotations")
    if isinstance(annotations, dict) and "lastModified" in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != "lastModified"}
    resource = out.get("resource")
    if isinstance(resource, dict) and "_meta" in resource:
        out["resource"] = {k: v for k, v in resource.items() if k != "_meta"}
    return out


def shape_result(result: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """A ``CallToolResult`` for ``revision`` (``structuredContent`` is 2025-06-18)."""
    if revision.meta_fields and revision.structured_output:
        return result
    out = {
        k: v for k, v in result.items() if k != "structuredContent" or revision.structured_output
    }
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [shape_content(b, revision) if isinstance(b, dict) else b for b in content]
    return out


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (pydantic models, dataclasses and the like dumped)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    # Imported here: the server core starts without pydantic (see .lazy_pydantic); the
    # callers (agents and workflows as tools) have loaded it already.
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value, fallback=str)
