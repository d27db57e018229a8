#!/usr/bin/env bats
# The unified cache is one for all of zchttpd's workers (server/cache/cache.h):
# each body held once whatever the number of workers, and sound when
# workers are killed at any moment under load.

load helpers/server

FETCH="python3 $BATS_TEST_DIRNAME/helpers/fetch_all.py"
CHECK_LUA="$BATS_TEST_DIRNAME/helpers/wrk_check.lua"

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT"
	echo '<h1>index</h1>' > "$ROOT/index.html"
}

teardown() {
	[ -n "${WRK_PID:-}" ] && kill "$WRK_PID" 2>/dev/null
	stop_server
	check_sanitizers
}

# Sum of a smaps_rollup field (kB) over the server and its workers.
pss_of() { # FIELD
	local sum=0 p v
	for p in "$PID" $(pgrep -P "$PID"); do
		v=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

status_json() { curl -s "$URL/.zc/status${1:-}"; }

field() { # JSON-PATH (python expression on d), from stdin
	python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}

# 2,000 files of mixed sizes: 1,800 small (1-60 KB, held in memory from
# their second request) and 200 larger (80-200 KB, sent from the page
# cache), deterministic.
make_site() {
	python3 - "$ROOT" <<'PY'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(33)
block = rnd.randbytes(1 << 18)
for i in range(2000):
    size = rnd.randint(1000, 60000) if i < 1800 else rnd.randint(80000, 200000)
    off = (i * 7919) % (len(block) - size)
    with open(os.path.join(root, "f%04d.bin" % i), "wb") as f:
        f.write(b"%04d:" % i + block[off:off + size - 5])
PY
}

@test "one cache for every worker: 8 workers hold each body once (shared memory PSS within 1.1x of 1 worker)" {
	make_site
	local shm pss loaded arena
	for workers in 1 8; do
		start_server --workers "$workers" --cache-size 512m --cache-small-max 64k
		# Every file twice, on different connections (so on several
		# workers): the second request brings the small ones into memory.
		run $FETCH "$URL" "$ROOT" 2 16
		[ "$status" -eq 0 ]
		[[ "$output" == "fetched 4002" ]]
		shm[$workers]=$(pss_of Pss_Shmem)
		pss[$workers]=$(pss_of Pss)
		loaded[$workers]=$(status_json | field 'd["cache"]["bodies_loaded"]')
		arena[$workers]=$(status_json | field 'd["cache"]["arena_bytes"]')
		[ "$(status_json | field 'd["cache"]["shared_by"]')" -eq "$workers" ]
		stop_server
	done
	echo "workers 1: Pss_Shmem ${shm[1]} kB, Pss ${pss[1]} kB, bodies loaded ${loaded[1]}, arena ${arena[1]} B"
	echo "workers 8: Pss_Shmem ${shm[8]} kB, Pss ${pss[8]} kB, bodies loaded ${loaded[8]}, arena ${arena[8]} B"
	# Each of the 1,801 small bodies (index.html too) was copied in once,
	# by whichever worker saw its second request, and the arena holds the
	# same pages either way.
	[ "${loaded[1]}" -eq 1801 ]
	[ "${loaded[8]}" -eq 1801 ]
	[ "${arena[1]}" -eq "${arena[8]}" ]
	# ~55 MB of bodies: with a cache per worker, 8 workers would map
	# several times that.
	[ "${shm[1]}" -gt 40000 ]
	[ "$((shm[8] * 10))" -le "$((shm[1] * 11))" ]
}

# A worker of the server that has served for over 1.5 s (so that its
# death is no crash loop to the master, which stops restarting workers
# that die within a second of their start), or nothing.
old_worker() {
	local p now start
	now=$(awk '{ print int($1 * 100) }' /proc/uptime)
	for p in $(pgrep -P "$PID"); do
		start=$(awk '{ print $22 }' "/proc/$p/stat" 2>/dev/null) || continue
		[ -n "$start" ] && [ $((now - start)) -gt 150 ] && { echo "$p"; return 0; }
	done
	return 0
}

@test "workers killed with SIGKILL 100 times under load: no wrong byte, no arena page leaked, hits go on" {
	for i in $(seq 300); do
		head -c $((1000 + (i * 7919) % 99000)) /dev/urandom > "$ROOT/k$i.bin"
	done
	# A budget far below the 15 MB of files: evictions all along, bodies
	# loaded, pinned and freed while workers die.
	start_server --workers 4 --cache-size 4m --cache-small-max 64k
	wrk -t4 -c4 -d120s -s "$CHECK_LUA" "$URL" -- "$ROOT" $(cd "$ROOT" && ls k*.bin) \
		> "$BATS_TEST_TMPDIR/wrk.out" 2> "$BATS_TEST_TMPDIR/wrk.err" &
	WRK_PID=$!
	local kills=0 w deadline=$((SECONDS + 110))
	sleep 1
	while [ "$kills" -lt 100 ] && [ "$SECONDS" -lt "$deadline" ]; do
		w=$(old_worker)
		[ -n "$w" ] && kill -KILL "$w" && kills=$((kills + 1))
		sleep 0.3
	done
	kill -INT "$WRK_PID"	# wrk prints its summary on SIGINT
	wait "$WRK_PID" || true
	WRK_PID=
	cat "$BATS_TEST_TMPDIR/wrk.out" "$BATS_TEST_TMPDIR/wrk.err"
	echo "$kills workers killed"
	[ "$kills" -eq 100 ]
	! grep -q 'keep dying' "$BATS_TEST_TMPDIR/server.err"
	grep -q 'CHECKED good=[1-9][0-9]* cut=[0-9]* bad=0$' "$BATS_TEST_TMPDIR/wrk.out"
	kill -0 "$PID"		# the master carried on
	[ "$(pgrep -P "$PID" | wc -l)" -eq 4 ]
	# Hits go on, byte-exact.
	read -r h0 < <(status_json | field 'd["cache"]["hits"]')
	run $FETCH "$URL" "$ROOT" 2 4
	[ "$status" -eq 0 ]
	read -r h1 < <(status_json | field 'd["cache"]["hits"]')
	[ "$h1" -gt "$h0" ]
	# Nothing in flight now: every arena page belongs to a live entry,
	# the index and the policy agree, nothing waits in limbo.
	for _ in $(seq 50); do
		status_json '?audit' | field 'd["audit"]["ok"] and d["audit"]["limbo"] == 0' | grep -q True && break
		sleep 0.1
	done
	status_json '?audit' | field 'd["audit"]'
	status_json '?audit' | field 'd["audit"]["ok"] and d["audit"]["limbo"] == 0 and d["audit"]["arena_pages"] == d["audit"]["body_pages"]' | grep -q True
}
