-- replay.lua - wrk plays a request list once, in order, and reports.
--
--   wrk -tT -cN -dLIMIT -s replay.lua URL -- LIST FILLER MARK OUT [T]
--
-- LIST: one request path per line, the trace's requests in order.  Each of
-- wrk's T threads (T defaults to 1) plays every T-th request of the list
-- (thread k: requests k, k+T, ...), so with one thread a single Lua state
-- hands them all out one by one to whichever connection is free, in the
-- trace's order over the N connections (each connection has one request
-- in flight; answers come back in whatever order the server finishes
-- them); with T threads each keeps that order within its share.
--
-- Every answer to a listed request is checked: status 200 and a body, or
-- it counts as bad (by status).  Once a thread has sent the last request
-- of its share, a free connection of it gets FILLER (zcbench picks a path
-- that touches no cache: zchttpd's status page, or a file of its own); an
-- answer whose body begins with MARK is a filler's and is ignored (listed
-- objects never begin so: zcbench writes their content).  (Not HEAD:
-- wrk's parser does not know a HEAD answer has no body and waits for one.)
-- When all the requests of its share are answered, a thread writes its
-- result to OUT.k as one JSON object (written aside and renamed, so a file
-- that exists is whole) and stops (wrk.thread:stop()); the thread that
-- finds every OUT.1..T there ends wrk at once -- it would otherwise run
-- to the end of -d, which is only a time limit here.
-- Times are taken with clock_gettime(CLOCK_MONOTONIC) through LuaJIT's
-- FFI: each thread's first request and last answer, so the run's elapsed
-- time is the latest end less the earliest start (replay.py adds up).
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
local filler, mark, base, out, count, t0, finished

-- In wrk's main Lua state, once per thread before that thread's init():
-- the threads' numbers, 1..T.
local threads_set_up = 0
function setup(thread)
  threads_set_up = threads_set_up + 1
  thread:set("id", threads_set_up)
end

function init(args)
  local me = id or 1
  count = tonumber(args[5] or "1")
  local k = 0
  for line in io.lines(args[1]) do
    if #line > 0 then
      if k % count == me - 1 then reqs[#reqs + 1] = wrk.format("GET", line) end
      k = k + 1
    end
  end
  n = #reqs
  filler = wrk.format("GET", args[2])
  mark = args[3]
  base = args[4]
  out = base .. "." .. me
  probed = me ~= 1
  if n == 0 then
    io.stderr:write("replay.lua: no requests for thread " .. me .. "\n")
    os.exit(2)
  end
end

-- wrk calls request() once before any connection exists, to see whether
-- requests change (its script_verify_request, on thread 1's state): that
-- first call gets the filler, so no listed request is lost to it.
probed = false

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
  finished = true
  local t1 = now()
  local parts = {}
  for s, c in pairs(statuses) do parts[#parts + 1] = string.format('"%d": %d', s, c) end
  local f = assert(io.open(out .. ".part", "w"))
  f:write(string.format(
    '{"requests": %d, "bad": %d, "bytes": %d, "elapsed_s": %.6f, "start_s": %.6f, "end_s": %.6f, ' ..
    '"bad_statuses": {%s}}\n', n, bad, bytes, t1 - t0, t0, t1, table.concat(parts, ", ")))
  f:close()
  assert(os.rename(out .. ".part", out))
  -- Each thread renames its file before it looks for the others', so the
  -- last one to finish sees them all.
  for k = 1, count do
    local g = io.open(base .. "." .. k, "r")
    if not g then
      wrk.thread:stop()
      return
    end
    g:close()
  end
  os.exit(0)
end

function response(status, headers, body)
  if finished then return end
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
