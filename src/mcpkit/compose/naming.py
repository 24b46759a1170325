"""The namespacing rules of composition: how a mounted component is named and addressed.

One place for them, so that mounting, collision checks and the docs agree:

- a tool, prompt or completion target ``name`` of a server mounted under
  ``namespace`` becomes ``{namespace}_{name}`` (:data:`SEPARATOR` is ``_``: tool
  names are ``[A-Za-z0-9_.-]``, 2025-11-25 server/tools § tool names, and ``_``
  is the separator clients and other frameworks already show);
- a resource URI or URI template ``scheme://rest`` becomes
  ``scheme://{namespace}/rest``: the scheme is kept (clients pick a handler by
  scheme) and the namespace is the first path segment, so one URI never falls
  under two namespaces. A URI without ``://`` cannot be namespaced and is refused.
"""

from __future__ import annotations

import re

__all__ = [
    "SEPARATOR",
    "mounted_ref",
    "namespace_problem",
    "prefixed_name",
    "prefixed_uri",
    "unprefixed_name",
    "unprefixed_uri",
]

#: Between the namespace and a mounted tool's or prompt's own name.
SEPARATOR = "_"

# Letters, digits and '-': a namespace fits both a tool name and a URI path segment
# (RFC 3986 § 3.3 unreserved characters) without escaping.
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")


def namespace_problem(namespace: object) -> str | None:
    """Why ``namespace`` cannot name a mount (None: it can)."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        return (
            f"a namespace is 1-64 letters, digits and '-', starting with a letter or "
            f"digit, not {namespace!r}"
        )
    return None


def prefixed_name(namespace: str, name: str) -> str:
    """``name`` of a component mounted under ``namespace``: ``{namespace}_{name}``."""
    return f"{namespace}{SEPARATOR}{name}"


def prefixed_uri(namespace: str, uri: str) -> str | None:
    """``uri`` (or URI template) mounted under ``namespace``; None without ``scheme://``."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme or "{" in scheme:
        return None
    return f"{scheme}://{namespace}/{rest}"


def unprefixed_name(namespace: str, name: str) -> str | None:
    """The child's own name of the mounted ``name``; None when it is not under ``namespace``."""
    prefix = f"{namespace}{SEPARATOR}"
    return name[len(prefix) :] if name.startswith(prefix) else None


def unprefixed_uri(namespace: str, uri: str) -> str | None:
    """The child's own URI of the mounted ``uri``; None when it is not under ``namespace``."""
    scheme, sep, rest = uri.partition("://")
    head = f"{namespace}/"
    if not sep or not rest.startswith(head):
        return None
    return f"{scheme}://{rest[len(head) :]}"


def mounted_ref(namespace: str, kind: str, target: str) -> str | None:
    """A completion target (``ref/prompt`` name or URI template) mounted under ``namespace``."""
    if kind == "ref/prompt":
        return prefixed_name(namespace, target)
    return prefixed_uri(namespace, target)
