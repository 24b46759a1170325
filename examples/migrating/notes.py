"""``sdk_notes.py`` ported to mcpkit.

Two changes beyond the import: the tool returning ``str`` asks for
``structured_output=True`` (the SDK sends ``{"result": ...}`` for every return type,
mcpkit only when asked for text), and the resource names its MIME type, which the
SDK fills in as ``text/plain``.
"""

from mcpkit import MCPServer

server = MCPServer("Notes")

NOTES: dict[str, str] = {}


@server.tool(structured_output=True)
def add_note(title: str, body: str) -> str:
    """Store a note."""
    NOTES[title] = body
    return f"saved {title}"


@server.tool
def count_notes() -> int:
    """How many notes there are."""
    return len(NOTES)


@server.resource("notes://{title}", mime_type="text/plain")
def note(title: str) -> str:
    """One note's body."""
    return NOTES.get(title, "")


@server.prompt
def summarize(title: str) -> str:
    """Summarize a note."""
    return f"Summarize this note: {NOTES.get(title, '')}"


if __name__ == "__main__":
    server.run_stdio()
