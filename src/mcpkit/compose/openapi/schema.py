"""OpenAPI schemas as the JSON Schema 2020-12 of MCP tool listings, ``$defs`` included.

MCP tool schemas are JSON Schema, 2020-12 unless they say otherwise (2025-11-25
server/tools § Tool, ``inputSchema``). OpenAPI 3.1 schemas already are; OpenAPI
3.0's dialect differs in ``nullable``, boolean ``exclusiveMinimum`` and
``exclusiveMaximum``, and ``example`` (OpenAPI 3.0.3 § 4.7.24, Schema Object),
which are rewritten here (in 3.1 documents too, where a boolean bound or
``nullable`` can only be a 3.0 leftover). A reference to a component schema becomes a reference
into the listing's own ``$defs``, which holds just the components the schema
reaches (recursive components included once, so a self-referencing model stays a
finite schema); other local references are inlined, a loop among them cut at the
repeat. Each component is converted once per document, however many operations
use it: a large document starts in time.
"""

from __future__ import annotations

from typing import Any, Final

from .parse import Document

__all__ = ["SchemaConverter"]

_COMPONENT: Final = "#/components/schemas/"
# Keywords that mean nothing to a JSON Schema validator or a model reading the listing.
_DROPPED: Final = frozenset(
    {"discriminator", "xml", "externalDocs", "example", "nullable", "$recursiveAnchor"}
)


class SchemaConverter:
    """Converts the schemas of one document; component schemas are converted once."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self._is_30 = not document.is_31
        self._components: dict[str, dict[str, Any]] = {}
        self._deps: dict[str, frozenset[str]] = {}
        self._home: str | None = None  # the component being converted

    def convert(self, schema: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """``schema`` converted, and the ``$defs`` it needs (possibly empty)."""
        refs: set[str] = set()
        converted = self._walk(schema, refs, ())
        return (converted if isinstance(converted, dict) else {}), self.defs(refs)

    def convert_inline(self, schema: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """As :meth:`convert`, but a schema that only references a component is that
        component itself (a copy), its ``$defs`` holding only what it reaches."""
        if isinstance(schema, dict) and set(schema) == {"$ref"}:
            ref = schema["$ref"]
            if isinstance(ref, str) and ref.startswith(_COMPONENT):
                name = ref[len(_COMPONENT) :].replace("~1", "/").replace("~0", "~")
                if "/" not in ref[len(_COMPONENT) :]:
                    self.document.resolve(ref)
                    found = dict(self._component(name))
                    return found, self.defs(set(self._deps[name]))
        return self.convert(schema)

    def defs(self, refs: set[str]) -> dict[str, Any]:
        """The named components and every one they reach, converted."""
        out: dict[str, Any] = {}
        todo = list(refs)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            out[name] = self._component(name)
            todo.extend(d for d in self._deps[name] if d not in out)
        return out

    def _component(self, name: str) -> dict[str, Any]:
        found = self._components.get(name)
        if found is None:
            # Registered before the walk, so that a component reaching itself ends there.
            self._components[name] = found = {}
            refs: set[str] = set()
            raw = self.document.resolve(_COMPONENT + name)
            self._home = name
            try:
                walked = self._walk(raw, refs, ())
            finally:
                self._home = None
            found.update(walked if isinstance(walked, dict) else {})
            self._deps[name] = frozenset(refs)
        return found

    def _walk(self, node: Any, refs: set[str], inlining: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [self._walk(item, refs, inlining) for item in node]
        if not isinstance(node, dict):
            return _json_safe(node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._ref(node, ref, refs, inlining)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or key.startswith("x-"):
                continue
            if key == "$recursiveRef":
                # JSON Schema 2019-09's recursion (§ 8.2.4.2), which 2020-12 dropped: in a
                # component, "#" is the component itself; elsewhere, anything.
                if value == "#" and self._home is not None:
                    refs.add(self._home)
                    out["$ref"] = "#/$defs/" + self._home
                continue
            if key in ("properties", "patternProperties", "$defs", "definitions"):
                out[key] = (
                    {k: self._walk(v, refs, inlining) for k, v in value.items()}
                    if isinstance(value, dict)
                    else value
                )
            elif key in ("enum", "const", "default", "examples"):
                out[key] = _json_safe(value)  # values, not schemas
            elif key == "required" and isinstance(value, list):
                # Listed once each: 2020-12 says so (§ 6.5.3), and real documents repeat.
                out[key] = list(dict.fromkeys(value))
            elif isinstance(value, dict | list):
                out[key] = self._walk(value, refs, inlining)
            else:
                out[key] = _json_safe(value)
        if "example" in node and "examples" not in node:
            out["examples"] = [_json_safe(node["example"])]
        # Applied to 3.1 documents too: their keywords never take these forms in 2020-12,
        # and documents labelled 3.1 still carry them (OpenAI's, for one).
        _from_30(node, out)
        return out

    def _ref(
        self, node: dict[str, Any], ref: str, refs: set[str], inlining: tuple[str, ...]
    ) -> Any:
        if ref.startswith(_COMPONENT) and "/" not in ref[len(_COMPONENT) :]:
            name = ref[len(_COMPONENT) :].replace("~1", "/").replace("~0", "~")
            self.document.resolve(ref)  # names something, or raise now
            refs.add(name)
            target: dict[str, Any] = {"$ref": "#/$defs/" + name}
        elif ref in inlining:
            return {}  # a loop through non-component references: cut (any value)
        else:
            target = self._walk(self.document.resolve(ref), refs, (*inlining, ref))
        # OpenAPI 3.1 allows keywords beside $ref (JSON Schema 2020-12 § 8.2.3.1);
        # 3.0 ignores them (OpenAPI 3.0.3 § 4.7.26), except the description kept here.
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        extra = self._walk(siblings, refs, inlining) if not self._is_30 else {}
        if self._is_30 and "description" in siblings:
            extra = {"description": siblings["description"]}
        if not extra:
            return target
        return {**extra, "allOf": [target]} if "$ref" in target else {**target, **extra}


_INT64: Final = 2**63


def _json_safe(value: Any) -> Any:
    """``value`` with integers beyond 64 bits as floats: JSON allows them (RFC 8259 § 6)
    but mcpkit's encoder, like many readers, does not (a bound such as 1e20 written
    out in full is a real case)."""
    if type(value) is int:
        return float(value) if not -_INT64 <= value < _INT64 else value
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value


def _from_30(node: dict[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0's own keywords, in JSON Schema terms (OpenAPI 3.0.3 § 4.7.24)."""
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = node.get(exclusive)
        if isinstance(flag, bool):
            del out[exclusive]
            if flag and bound in node:
                out[exclusive] = out.pop(bound)
    if node.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        elif kind is None:
            inner = dict(out)
            out.clear()
            out["anyOf"] = [inner, {"type": "null"}]
