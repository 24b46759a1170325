"""The transports: stdio, Streamable HTTP, legacy HTTP+SSE, and serving them (import each module)."""
