"""A server that serves the skills of ``examples/skills/`` (the skills extension, SEP-2640).

Run it (stdio)::

    mcpkit run examples/skills_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/skills_server.py --transport http

Each folder of ``examples/skills/`` with a ``SKILL.md`` is a skill. The server
declares ``io.modelcontextprotocol/skills`` (with ``directoryRead``), answers
``skills/list`` and ``skills/get``, serves every file as a ``skill://`` resource
with its SHA-256 digest and size, and lists folders with
``resources/directory/read``. A skill that breaks the naming, size or
frontmatter rules stops the server at start-up, with every problem listed.

Read a skill from Python, verified against its digest::

    from mcpkit import Client
    from mcpkit.extensions.skills.client import SkillsClient

    async with Client(url="http://127.0.0.1:8000/mcp") as client:
        skills = SkillsClient(client)
        for entry in await skills.list():
            print(entry.name, "-", entry.description)
        loaded = await skills.load("skill://csv-cleanup/SKILL.md")
        print(loaded.text)
"""

from __future__ import annotations

from pathlib import Path

from mcpkit import MCPServer
from mcpkit.extensions.skills import add_skills

SKILLS = Path(__file__).resolve().parent / "skills"

server = MCPServer(name="skills-example", version="1.0.0")
add_skills(server, SKILLS)


@server.tool()
def skill_count() -> int:
    """How many skills this server serves (for clients that only know tools)."""
    return len(list(SKILLS.glob("*/SKILL.md")))


if __name__ == "__main__":
    server.run_stdio()
