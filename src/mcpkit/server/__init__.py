"""The server side: ``MCPServer`` and what it registers."""
