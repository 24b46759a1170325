"""Every Python snippet in the docs runs, and every server it defines answers tools/list."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from mcpkit import MCPServer
from mcpkit.testing import connect

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _snippets() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        for i, code in enumerate(FENCE.findall(path.read_text())):
            out.append((f"{path.name}#{i + 1}", code))
    return out


@pytest.mark.parametrize(("where", "code"), _snippets(), ids=[w for w, _ in _snippets()])
def test_snippet_runs(where: str, code: str) -> None:
    # Snippets that serve keep that under `if __name__ == "__main__":`, so exec stays quick.
    namespace: dict[str, object] = {"__name__": f"docs_snippet_{where}"}
    exec(compile(code, where, "exec"), namespace)
    server = namespace.get("server")
    if isinstance(server, MCPServer):

        async def check() -> None:
            async with connect(server) as client:
                await client.list_tools()

        asyncio.run(check())
