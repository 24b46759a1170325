"""pydantic, imported the first time a server needs it rather than at start-up.

Importing pydantic costs about 35 ms on the development VM, a third of a stdio
server's start-up, and a server whose functions take only plain parameters
(``str``, ``int``, ``float``, ``bool``, ``Any``, optionally ``| None``) never
needs it until an argument fails the exact-type check
(:class:`~mcpkit.server.signature.FunctionSignature`). Desktop hosts start
every configured server at launch, so this is what users wait for.

The helpers below answer "is this pydantic's?" without importing pydantic: no
object can be a model, and no ``ValidationError`` can be raised, before pydantic
was imported by someone.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = ["is_model", "is_model_class", "validation_error"]


def validation_error() -> type[ValidationError]:
    """pydantic's ``ValidationError``, for an ``except`` clause.

    Python evaluates an ``except`` expression only when an exception reaches
    it, so ``except validation_error() as exc:`` imports nothing on the
    success path.
    """
    from pydantic_core import ValidationError

    return ValidationError


def is_model_class(obj: Any) -> bool:
    """Is ``obj`` a pydantic model class (``type[BaseModel]``)?"""
    if "pydantic" not in sys.modules:
        return False
    from pydantic import BaseModel

    return isinstance(obj, type) and issubclass(obj, BaseModel)


def is_model(obj: Any) -> bool:
    """Is ``obj`` a pydantic model instance?"""
    if "pydantic" not in sys.modules:
        return False
    from pydantic import BaseModel

    return isinstance(obj, BaseModel)


def model_class(obj: Any) -> type[BaseModel] | None:
    """``obj`` when it is a pydantic model class, else None (typed for the caller)."""
    return obj if is_model_class(obj) else None
