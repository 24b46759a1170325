"""Client-side rules for ``elicitation/create`` answers.

2025-11-25 client/elicitation § requested schema (SEP-1034): every primitive
property may carry a ``default``. A client that accepts a form fills the
fields its handler left out with those defaults, so a handler that only cares
about one field still returns a complete answer.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["apply_defaults", "normalize_elicit_result"]

_ACTIONS = frozenset({"accept", "decline", "cancel"})


def apply_defaults(schema: Any, content: Mapping[str, Any] | None) -> dict[str, Any]:
    """``content`` completed with the ``default`` of every property it lacks."""
    out = dict(content) if content else {}
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return out
    for name, prop in props.items():
        if name not in out and isinstance(prop, Mapping) and "default" in prop:
            # A copy: multi-select defaults are lists the caller may mutate.
            out[name] = copy.copy(prop["default"])
    return out


def normalize_elicit_result(params: Mapping[str, Any], result: Any) -> dict[str, Any]:
    """The ``ElicitResult`` to send for what a handler returned.

    A handler returns ``{"action": ..., "content": {...}}``. For an accepted
    form-mode request the content is completed with the schema defaults; for
    ``decline``/``cancel`` and URL mode no content is sent (the schema allows
    content only with ``accept``).
    """
    if not isinstance(result, Mapping):
        raise TypeError(
            "an elicitation handler must return a dict with 'action' "
            f"('accept', 'decline' or 'cancel'), not {type(result).__name__}"
        )
    action = result.get("action")
    if action not in _ACTIONS:
        raise ValueError(f"elicitation handler returned an unknown action {action!r}")
    out: dict[str, Any] = {"action": action}
    if "_meta" in result:
        out["_meta"] = result["_meta"]
    if action != "accept" or params.get("mode", "form") != "form":
        return out
    content = result.get("content")
    if content is not None and not isinstance(content, Mapping):
        raise TypeError("elicitation handler returned 'content' that is not an object")
    out["content"] = apply_defaults(params.get("requestedSchema"), content)
    return out
