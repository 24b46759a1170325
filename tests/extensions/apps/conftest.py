"""Fixtures of the MCP Apps tests: the extension's npm package and its JSON schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import ext_apps_sdk


@pytest.fixture(scope="session")
def ext_apps_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ext_apps_sdk.install(tmp_path_factory.mktemp("ext-apps"))


@pytest.fixture(scope="session")
def ui_schema(ext_apps_package: Path) -> dict[str, Any]:
    """The extension's published schema.json (definitions McpUiToolMeta, McpUiResourceMeta…)."""
    text = (ext_apps_package / "dist" / "src" / "generated" / "schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema
