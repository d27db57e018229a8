-- wrk_check.lua - wrk that checks every body it gets, byte for byte.
--
--   wrk -t4 -c4 ... -s wrk_check.lua URL -- ROOT NAME...
--
-- Each request asks for one of the NAMEs (files under ROOT, read once at
-- start), at random; each answer must be 200 with exactly that file's
-- bytes.  One connection per thread (-c equal to -t): wrk's response()
-- does not say which connection answered, so a thread must have only one
-- request in flight for `current` to be the one answered.  A connection
-- the server drops (a worker killed) is not an answer; wrk opens another
-- and asks anew -- but keeps the bytes of the cut response's body, and
-- hands them to response() in front of the next body (wrk 4.1 resets its
-- body buffer only after a complete response).  Such an answer is
-- counted as `cut` when its tail is exactly the file asked for and its
-- front is the start of the file asked for before (the cut response's
-- bytes, right as far as they went).  At the end:
-- "CHECKED good=N cut=C bad=M".

local names, bodies = {}, {}
local current, last = 1, 1
good, cut, bad = 0, 0, 0

function init(args)
	local root = args[1]
	for i = 2, #args do
		local f = assert(io.open(root .. "/" .. args[i], "rb"))
		names[#names + 1] = args[i]
		bodies[#bodies + 1] = f:read("*a")
		f:close()
	end
	math.randomseed(os.time() * 7919 + (id or 0))
end

function request()
	last = current
	current = math.random(#names)
	return wrk.format("GET", "/" .. names[current])
end

-- body = the front of a response cut short + this one's?
local function cut_in_front(body, want, before)
	local n = #body - #want
	return n > 0 and n < #before and body:sub(n + 1) == want and
	       body:sub(1, n) == before:sub(1, n)
end

function response(status, headers, body)
	if status == 200 and body == bodies[current] then
		good = good + 1
	elseif status == 200 and cut_in_front(body, bodies[current], bodies[last]) then
		cut = cut + 1
	else
		bad = bad + 1
		if bad <= 3 then
			io.stderr:write(string.format("wrong answer for %s: status %d, %d bytes (want %d)\n",
				names[current], status, #body, #bodies[current]))
		end
	end
end

local threads = {}

function setup(thread)
	threads[#threads + 1] = thread
	thread:set("id", #threads)	-- a random sequence of its own
end

function done(summary, latency, requests)
	local g, c, b = 0, 0, 0
	for _, t in ipairs(threads) do
		g = g + t:get("good")
		c = c + t:get("cut")
		b = b + t:get("bad")
	end
	io.write(string.format("CHECKED good=%d cut=%d bad=%d\n", g, c, b))
end
