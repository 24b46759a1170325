"""Sans-IO protocol core: JSON-RPC framing, revisions, lifecycle rules. No I/O here."""
