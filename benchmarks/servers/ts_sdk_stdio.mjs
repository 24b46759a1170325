// The TypeScript SDK on stdio with one `echo` tool (what a user would write).
//
// Plain JavaScript (ESM), so no compile step is timed. bench_startup.py
// installs @modelcontextprotocol/sdk and zod once into ~/.cache/mcpkit-bench-ts
// and runs a copy of this file from there, where node resolves the packages.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench", version: "1.0.0" });
server.registerTool(
  "echo",
  { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);
await server.connect(new StdioServerTransport());
