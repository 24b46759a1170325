"""Placeholder: replaced by the full RFC 6570 implementation."""

from __future__ import annotations

import re
from collections.abc import Mapping


class UriTemplateError(ValueError):
    pass


class UriTemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables = tuple(re.findall(r"\{([^}]+)\}", template))
        self.is_static = not self.variables
        pattern = re.escape(template)
        for v in self.variables:
            pattern = pattern.replace(re.escape("{" + v + "}"), f"(?P<{v}>[^/]*)", 1)
        self._re = re.compile(pattern + "$")

    def expand(self, values: Mapping[str, object]) -> str:
        out = self.template
        for v in self.variables:
            out = out.replace("{" + v + "}", str(values.get(v, "")))
        return out

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        m = self._re.match(uri)
        return dict(m.groupdict()) if m else None
