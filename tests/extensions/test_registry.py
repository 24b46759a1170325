"""EXTENSIONS names, for each identifier, a module that implements that identifier."""

from __future__ import annotations

import importlib

import pytest

from mcpkit.extensions import EXTENSIONS


@pytest.mark.parametrize("identifier", sorted(EXTENSIONS))
def test_each_identifier_maps_to_its_module(identifier: str) -> None:
    module = importlib.import_module(EXTENSIONS[identifier])
    assert module.EXTENSION_ID == identifier


def test_skills_is_registered() -> None:
    assert EXTENSIONS["io.modelcontextprotocol/skills"] == "mcpkit.extensions.skills"
