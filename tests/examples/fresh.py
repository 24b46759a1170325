"""A fresh copy of an example module per test, so state its servers keep does not leak."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


@contextmanager
def fresh_example(path: Path) -> Iterator[ModuleType]:
    """Import ``path`` as a new module (registered in ``sys.modules`` while in use, as
    dataclasses and pickling need), and forget it afterwards."""
    spec = importlib.util.spec_from_file_location(f"{path.stem}_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
