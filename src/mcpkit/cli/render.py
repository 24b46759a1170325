"""Text the client commands print: tool signatures, results, resource contents."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["compact", "content_text", "pretty", "resource_text", "signature"]


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def signature(name: str, schema: Mapping[str, Any] | None) -> str:
    """``name(city: string, days?: integer)`` from a JSON Schema of an object."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return f"{name}()"
    required = schema.get("required") if isinstance(schema, Mapping) else None
    required = set(required) if isinstance(required, list) else set()
    parts = []
    for prop, spec in props.items():
        optional = "" if prop in required else "?"
        parts.append(f"{prop}{optional}: {_type(spec)}")
    return f"{name}({', '.join(parts)})"


def _type(spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return "any"
    if "enum" in spec and isinstance(spec["enum"], list):
        return " | ".join(compact(v) for v in spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(map(str, kind))
    if kind == "array":
        return f"array[{_type(spec.get('items'))}]"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list):
            return " | ".join(_type(o) for o in options)
    return "object" if "$ref" in spec or "properties" in spec else "any"


def content_text(blocks: Iterable[Any]) -> str:
    """Content blocks as text: text as it is, other blocks as a one-line summary."""
    out = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            size = len(str(block.get("data", ""))) * 3 // 4
            out.append(f"[{kind} {block.get('mimeType', '?')}, about {size} bytes]")
        elif kind == "resource_link":
            out.append(f"[resource link {block.get('uri')}]")
        elif kind == "resource":
            resource = block.get("resource")
            out.append(resource_text([resource]) if isinstance(resource, Mapping) else "")
        else:
            out.append(compact(block))
    return "\n".join(out)


def resource_text(contents: Iterable[Any]) -> str:
    """``resources/read`` contents as text; binary ones as a summary line."""
    out = []
    for item in contents:
        if not isinstance(item, Mapping):
            continue
        if isinstance(item.get("text"), str):
            out.append(item["text"])
        else:
            size = len(str(item.get("blob", ""))) * 3 // 4
            mime = item.get("mimeType", "application/octet-stream")
            out.append(f"[{item.get('uri')}: {mime}, about {size} bytes; use --json for the data]")
    return "\n".join(out)
