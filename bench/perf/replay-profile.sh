#!/bin/bash
# replay-profile.sh BINARY N [server options]: where a server's CPU goes on
# the first N requests of the zipf trace (docs/bench-replay.md, runs R6-R9).
#
# BINARY is zchttpd or zcfloor (both take --root/--listen/--workers 1).  The
# server runs on CPU 1 with no quota, wrk + replay.lua plays the list from
# CPU 0; prints the server's CPU per request (all its processes, from /proc),
# and with PERF=1 records CPU 1 with `perf record -g` meanwhile and prints
# the microseconds per request by system call (perf-by-syscall.py).  The
# trace and its root come from a replay run first:
#   python3 bench/trace/gen_trace.py --requests 100000 --objects 20000 \
#       --seed 42 --max-size 1000000 --out build/bench/zipf-100k.trace
#   bench/zcbench replay --trace build/bench/zipf-100k.trace --runs 1 ...
# Numbers from one run move by 10 % on a shared machine: repeat, alternate.
set -eu
BIN=$1 N=$2; shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ROOT=$(ls -d "$REPO"/build/bench/replay-roots/*/ | head -1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
grep -v '^#' "$REPO/build/bench/zipf-100k.trace" | head -n "$N" | awk '{print "/o/" $2}' > "$TMP/list"
PORT=$((18600 + RANDOM % 300))
FILL=/.zc/status MARK='{"workers":'
case $(basename "$BIN") in *floor*) FILL=/zcbench-filler MARK=zcbench-filler ;; esac
taskset -c 1 "$BIN" --root "$ROOT" --listen "127.0.0.1:$PORT" --workers 1 "$@" 2> "$TMP/err" &
MP=$!
for _ in $(seq 300); do curl -sf -o /dev/null "http://127.0.0.1:$PORT$FILL" && break; sleep 0.2; done
cpu() {	# ticks of the server's processes
	local t=0 p
	for p in $MP $(pgrep -P $MP); do
		set -- $(cut -d')' -f2 "/proc/$p/stat")
		t=$((t + ${12} + ${13}))
	done
	echo $t
}
c0=$(cpu)
if [ "${PERF:-0}" = 1 ]; then
	perf record -e cpu-clock -F 4999 -C 1 -g -o "$TMP/perf.data" -- sleep 1000 2> /dev/null &
	PP=$!
	sleep 0.3
fi
taskset -c 0 wrk -t1 -c16 -d300s -s "$REPO/bench/zcbench_lib/replay.lua" "http://127.0.0.1:$PORT" \
	-- "$TMP/list" "$FILL" "$MARK" "$TMP/res" > "$TMP/wrk" 2>&1
c1=$(cpu)
[ "${PERF:-0}" = 1 ] && { kill -INT $PP; wait $PP || true; }
kill $MP; wait $MP 2> /dev/null || true
python3 -c "print('$(basename "$BIN") $*: %.2f us of CPU per request over $N' % (($c1 - $c0) * 1e6 / $(getconf CLK_TCK) / $N))"
[ "${PERF:-0}" = 1 ] && python3 "$HERE/perf-by-syscall.py" "$TMP/perf.data" "$N" "$(basename "$BIN")"
exit 0
