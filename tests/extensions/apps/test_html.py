"""mcpkit.extensions.apps.html: HTML from files and ES modules inlined by an import map."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from mcpkit.extensions.apps import find_node_module, html_from_file, inline_modules


def test_html_from_file_reads_utf8(tmp_path: Path) -> None:
    page = tmp_path / "app.html"
    page.write_text("<p>héllo</p>", encoding="utf-8")
    assert html_from_file(page) == "<p>héllo</p>"
    with pytest.raises(FileNotFoundError):
        html_from_file(tmp_path / "missing.html")


def test_inline_modules_puts_an_import_map_first_in_head(tmp_path: Path) -> None:
    module = tmp_path / "sdk.js"
    module.write_text("export const answer = 42;</script>")
    html = inline_modules(
        '<html><HEAD lang="en"><title>x</title></head><script type="module"></script></html>',
        {"sdk": module},
    )
    assert html.startswith('<html><HEAD lang="en"><script type="importmap">')
    found = re.search(r'<script type="importmap">(.*?)</script>', html)
    assert found is not None
    url = json.loads(found.group(1))["imports"]["sdk"]
    prefix = "data:text/javascript;base64,"
    assert url.startswith(prefix)
    assert base64.b64decode(url[len(prefix) :]) == module.read_bytes()
    assert html.index("importmap") < html.index('type="module"')


def test_inline_modules_without_head_goes_first(tmp_path: Path) -> None:
    module = tmp_path / "m.js"
    module.write_text("export {};")
    assert inline_modules("<p>x</p>", {"m": module}).startswith('<script type="importmap">')
    with pytest.raises(FileNotFoundError):
        inline_modules("<p>x</p>", {"m": tmp_path / "absent.js"})


def test_find_node_module_prefers_the_nearest_node_modules(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    for base in (tmp_path, tmp_path / "a"):
        target = base / "node_modules" / "@scope" / "pkg" / "dist" / "x.js"
        target.parent.mkdir(parents=True)
        target.write_text("//")
    found = find_node_module("@scope/pkg", "dist/x.js", start=inner)
    assert found == tmp_path / "a" / "node_modules" / "@scope" / "pkg" / "dist" / "x.js"
    assert find_node_module("@scope/other", "dist/x.js", start=inner) is None
