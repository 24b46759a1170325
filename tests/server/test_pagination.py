"""Pagination: every list method pages with opaque cursors."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import MCPServer, ServerLimits
from mcpkit.errors import INVALID_PARAMS
from mcpkit.server.pagination import paginate
from mcpkit.testing import connect


def paged_server() -> MCPServer:
    server = MCPServer(name="p", version="1", limits=ServerLimits(page_size=2))
    for i in range(5):

        def tool(i: int = i) -> int:
            return i

        server.add_tool(tool, name=f"tool_{i}")

        def res(i: int = i) -> str:
            return str(i)

        server.resource(f"test://r/{i}", name=f"r{i}")(lambda: "x")
        server.resource(f"test://t{i}/{{id}}", name=f"t{i}")(lambda id: id)

        def prompt() -> str:
            return "p"

        server.prompt(name=f"prompt_{i}")(prompt)
    return server


LISTS = [
    ("tools/list", "tools", "name"),
    ("resources/list", "resources", "uri"),
    ("resources/templates/list", "resourceTemplates", "uriTemplate"),
    ("prompts/list", "prompts", "name"),
]


@pytest.mark.parametrize(("method", "key", "field"), LISTS)
async def test_every_list_method_pages(method: str, key: str, field: str) -> None:
    async with connect(paged_server()) as client:
        pages: list[list[Any]] = []
        cursor = None
        for _ in range(10):
            result = await client.request(method, {"cursor": cursor} if cursor else {})
            pages.append([item[field] for item in result[key]])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
            assert isinstance(cursor, str)
    assert [len(p) for p in pages] == [2, 2, 1]
    flat = [x for p in pages for x in p]
    assert len(set(flat)) == 5


@pytest.mark.parametrize(("method", "key", "field"), LISTS)
@pytest.mark.parametrize("cursor", ["garbage", "", "eyJvIjotMX0", "eyJvIjo5OX0", 5, None, ["x"]])
async def test_invalid_cursors_are_32602(method: str, key: str, field: str, cursor: Any) -> None:
    async with connect(paged_server()) as client:
        params = {"cursor": cursor}
        out = await client.send_raw({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        if cursor is None:  # absent cursor: the first page
            assert len(out["result"][key]) == 2
        else:
            assert out["error"]["code"] == INVALID_PARAMS


async def test_without_page_size_everything_comes_in_one_page() -> None:
    server = paged_server()
    server.page_size = None
    async with connect(server) as client:
        result = await client.request("tools/list")
    assert len(result["tools"]) == 5
    assert "nextCursor" not in result


def test_paginate_directly() -> None:
    items = list(range(5))
    page, cursor = paginate(items, None, 3)
    assert page == [0, 1, 2] and cursor is not None
    page, cursor2 = paginate(items, cursor, 3)
    assert page == [3, 4] and cursor2 is None
    # A cursor at exactly the end gives an empty last page (the list shrank).
    _, at_five = paginate(list(range(10)), None, 5)
    assert paginate(items, at_five, 3) == ([], None)
