-- wrk script: POST a JSON-RPC request to an MCP endpoint, a fresh id each time.
--
-- Set by the runner through environment variables:
--   BENCH_BODY_FILE         the request body, with the literal __ID__ where the id goes
--   BENCH_PROTOCOL_VERSION  sent as MCP-Protocol-Version (optional)
--   BENCH_SESSION_ID        sent as Mcp-Session-Id for a stateful server (optional)
--   BENCH_HEADERS           more headers, one "Name: value" per line (optional; the
--                           2026-07-28 Mcp-Method / Mcp-Name headers)
-- Ids must not repeat within a session (MCP basic § requests), so request()
-- numbers them; each wrk thread gets its own range. done() prints one
-- machine-readable line so the runner need not parse wrk's text report.

local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
local template = f:read("*a")
f:close()
local prefix, suffix = template:match("^(.-)__ID__(.*)$")
assert(prefix, "BENCH_BODY_FILE must contain __ID__")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
local version = os.getenv("BENCH_PROTOCOL_VERSION")
if version and version ~= "" then
  wrk.headers["MCP-Protocol-Version"] = version
end
local session = os.getenv("BENCH_SESSION_ID")
if session and session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
end

local extra = os.getenv("BENCH_HEADERS")
if extra then
  for name, value in extra:gmatch("([^:\n]+):%s*([^\n]*)") do
    wrk.headers[name] = value
  end
end

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("first_id", threads * 100000000)
end

local counter = 0
function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, prefix .. (first_id + counter) .. suffix)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH_RESULT requests=%d duration_us=%d status_errors=%d connect_errors=%d "
      .. "read_errors=%d write_errors=%d timeouts=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
