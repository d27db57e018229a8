-- replay.lua - wrk plays a request list once, in order, and reports.
--
--   wrk -t1 -cN -dLIMIT -s replay.lua URL -- LIST FILLER MARK OUT
--
-- LIST: one request path per line, the trace's requests in order.  With
-- one wrk thread a single Lua state hands them out one by one to whichever
-- connection is free, so they are sent in the trace's order over the N
-- connections (each connection has one request in flight; answers come
-- back in whatever order the server finishes them).
--
-- Every answer to a listed request is checked: status 200 and a body, or
-- it counts as bad (by status).  Once the last listed request has been
-- sent, a free connection gets FILLER (zcbench picks a path that touches no
-- cache: zchttpd's status page, or a file of its own); an answer whose body
-- begins with MARK is a filler's and is ignored (listed objects never begin
-- so: zcbench writes their content).  (Not HEAD: wrk's parser
-- does not know a HEAD answer has no body and waits for one.)  When all
-- listed requests are answered the result goes to OUT as one JSON object
-- and wrk exits at once -- it would otherwise run to the end of -d, which
-- is only a time limit here.  Elapsed time is taken with
-- clock_gettime(CLOCK_MONOTONIC) through LuaJIT's FFI, from the first
-- request to the last answer.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } zc_timespec;
int clock_gettime(int clk, zc_timespec *ts);
]]
local ts = ffi.new("zc_timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local reqs, n, sent, answered, bad = {}, 0, 0, 0, 0
local bytes = 0
local statuses = {}
local filler, mark, out, t0

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then reqs[#reqs + 1] = wrk.format("GET", line) end
  end
  n = #reqs
  filler = wrk.format("GET", args[2])
  mark = args[3]
  out = args[4]
  if n == 0 then
    io.stderr:write("replay.lua: empty request list\n")
    os.exit(2)
  end
end

-- wrk calls request() once before any connection exists, to see whether
-- requests change (its script_verify_request, on thread 1's state): that
-- first call gets the filler, so no listed request is lost to it.
local probed = false

function request()
  if not probed then
    probed = true
    return filler
  end
  if not t0 then t0 = now() end
  sent = sent + 1
  if sent <= n then return reqs[sent] end
  return filler
end

local function finish()
  local elapsed = now() - t0
  local parts = {}
  for s, c in pairs(statuses) do parts[#parts + 1] = string.format('"%d": %d', s, c) end
  local f = assert(io.open(out, "w"))
  f:write(string.format(
    '{"requests": %d, "bad": %d, "bytes": %d, "elapsed_s": %.6f, "bad_statuses": {%s}}\n',
    n, bad, bytes, elapsed, table.concat(parts, ", ")))
  f:close()
  os.exit(0)
end

function response(status, headers, body)
  body = body or ""
  if body:sub(1, #mark) == mark then return end  -- a filler's
  if status ~= 200 or #body == 0 then
    bad = bad + 1
    statuses[status] = (statuses[status] or 0) + 1
  end
  bytes = bytes + #body
  answered = answered + 1
  if answered >= n then finish() end
end
