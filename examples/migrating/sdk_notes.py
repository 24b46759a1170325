"""A typical server on the official SDK's ``MCPServer``: the original ``notes.py`` ports."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("Notes")

NOTES: dict[str, str] = {}


@server.tool()
def add_note(title: str, body: str) -> str:
    """Store a note."""
    NOTES[title] = body
    return f"saved {title}"


@server.tool()
def count_notes() -> int:
    """How many notes there are."""
    return len(NOTES)


@server.resource("notes://{title}")
def note(title: str) -> str:
    """One note's body."""
    return NOTES.get(title, "")


@server.prompt()
def summarize(title: str) -> str:
    """Summarize a note."""
    return f"Summarize this note: {NOTES.get(title, '')}"


if __name__ == "__main__":
    server.run()
