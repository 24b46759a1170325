"""The OAuth client side of MCP authorization (flows, discovery, token storage)."""
