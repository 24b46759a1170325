"""Elicitation's requested schema: a flat JSON object schema from a pydantic model, per revision.

``ctx.elicit`` (:mod:`.context`) sends the schema it gets from
:func:`elicitation_schema` (a pydantic model) or from the caller (a dict), in the
forms the session's revision knows (:func:`requested_schema_for`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CapabilityError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..protocol.versions import Revision

__all__ = ["elicitation_schema", "requested_schema_for"]


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
