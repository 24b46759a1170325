"""The official MCP Python SDK client reads mcpkit skills (examples/skills_server.py, stdio).

The SDK (``mcp`` from PyPI) has no skills support of its own: it cannot send
``skills/list``. What any client can do with a skills server is still checked here:
the extension is visible in the ``initialize`` capabilities, every skill file is an
ordinary ``skill://`` resource, and the bytes the SDK reads match the digest and
size mcpkit lists for them (so a host holding the listing can verify them).
"""

from __future__ import annotations

import asyncio
import base64
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcpkit.extensions.skills import digest, load_skills
from tests.transports.stdio_peer import REPO, TIMEOUT

EXAMPLE = REPO / "examples" / "skills_server.py"


async def test_the_sdk_client_reads_skill_files_that_match_their_digests() -> None:
    listed = {
        f["uri"]: f
        for skill in load_skills(REPO / "examples" / "skills")
        for f in skill.entry()["resources"]
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcpkit", "run", str(EXAMPLE)], cwd=str(REPO)
    )
    async with asyncio.timeout(TIMEOUT * 3):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            caps = init.capabilities.model_dump(by_alias=True, exclude_none=True)
            assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
            resources = (await session.list_resources()).resources
            uris = {str(r.uri) for r in resources}
            assert uris == set(listed)
            for uri in sorted(uris):
                contents = (await session.read_resource(uri)).contents[0]
                text = getattr(contents, "text", None)
                data = text.encode() if text is not None else base64.b64decode(contents.blob)  # type: ignore[union-attr]
                assert (digest(data), len(data)) == (listed[uri]["digest"], listed[uri]["size"])
