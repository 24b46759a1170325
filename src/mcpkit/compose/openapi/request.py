"""Tool arguments as an HTTP request: each parameter serialized in its location's style.

The styles are OpenAPI's (OpenAPI 3.1 § 4.8.12.4, Style Values, and the examples of
§ 4.8.12.4.1): ``simple`` and ``label`` and ``matrix`` in paths, ``form``,
``spaceDelimited``, ``pipeDelimited`` and ``deepObject`` in queries, ``simple`` in
headers and ``form`` in cookies, each with or without ``explode``. Values are
written as JSON scalars are (``true``, ``1.5``); a parameter described by
``content`` is sent as JSON text. Path values are percent-encoded (RFC 3986
§ 3.3) unless they may hold reserved characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .parse import Parameter

__all__ = ["HTTPRequest", "serialize"]


@dataclass(slots=True)
class HTTPRequest:
    """What one operation call sends: the URL path, query pairs, headers and cookies."""

    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[tuple[str, str]] = field(default_factory=list)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _pairs(value: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), _scalar(v)) for k, v in value.items() if v is not None]


def serialize(path: str, params: list[tuple[Parameter, Any]]) -> HTTPRequest:
    """The request for ``path`` with each ``(parameter, value)`` given in its place."""
    request = HTTPRequest(path)
    for param, value in params:
        if value is None:
            continue
        if param.as_json:
            value = json.dumps(value, separators=(",", ":"))
        if param.location == "path":
            request.path = request.path.replace("{" + param.name + "}", _path_value(param, value))
        elif param.location == "query":
            request.query.extend(_query(param, value))
        elif param.location == "header":
            request.headers[param.name] = _simple(value, param.explode)
        else:
            request.cookies.extend(_cookie(param, value))
    return request


def _simple(value: Any, explode: bool) -> str:
    """``simple``: ``a,b``; an object ``k,v,k2,v2`` or, exploded, ``k=v,k2=v2``."""
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    if isinstance(value, dict):
        pairs = _pairs(value)
        if explode:
            return ",".join(f"{k}={v}" for k, v in pairs)
        return ",".join(part for pair in pairs for part in pair)
    return _scalar(value)


def _path_value(param: Parameter, value: Any) -> str:
    safe = ":/?#[]@!$&'()*+,;=" if param.allow_reserved else ""

    def enc(text: str) -> str:
        return quote(text, safe=safe)

    name = param.name
    if isinstance(value, list):
        items = [enc(_scalar(v)) for v in value]
        pairs: list[tuple[str, str]] | None = None
    elif isinstance(value, dict):
        items = []
        pairs = [(enc(k), enc(v)) for k, v in _pairs(value)]
    else:
        return {
            "label": ".",
            "matrix": f";{name}=",
        }.get(param.style, "") + enc(_scalar(value))
    if param.style == "label":
        sep = "." if param.explode else ","
        if pairs is not None:
            joined = (
                sep.join(f"{k}={v}" for k, v in pairs)
                if param.explode
                else ",".join(p for pair in pairs for p in pair)
            )
            return "." + joined
        return "." + sep.join(items)
    if param.style == "matrix":
        if pairs is not None:
            if param.explode:
                return "".join(f";{k}={v}" for k, v in pairs)
            return f";{name}=" + ",".join(p for pair in pairs for p in pair)
        if param.explode:
            return "".join(f";{name}={v}" for v in items)
        return f";{name}=" + ",".join(items)
    if pairs is not None:
        if param.explode:
            return ",".join(f"{k}={v}" for k, v in pairs)
        return ",".join(p for pair in pairs for p in pair)
    return ",".join(items)


_DELIMITERS = {"spaceDelimited": " ", "pipeDelimited": "|"}


def _query(param: Parameter, value: Any) -> list[tuple[str, str]]:
    name = param.name
    if isinstance(value, dict):
        if param.style == "deepObject":
            return [(f"{name}[{k}]", v) for k, v in _pairs(value)]
        if param.explode:
            return _pairs(value)  # form, exploded: each property its own parameter
        return [(name, ",".join(p for pair in _pairs(value) for p in pair))]
    if isinstance(value, list):
        items = [_scalar(v) for v in value]
        if param.explode:
            return [(name, v) for v in items]
        return [(name, _DELIMITERS.get(param.style, ",").join(items))]
    return [(name, _scalar(value))]


def _cookie(param: Parameter, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        if param.explode:
            return _pairs(value)
        return [(param.name, ",".join(p for pair in _pairs(value) for p in pair))]
    if isinstance(value, list):
        items = [_scalar(v) for v in value]
        if param.explode:
            return [(param.name, v) for v in items]
        return [(param.name, ",".join(items))]
    return [(param.name, _scalar(value))]
