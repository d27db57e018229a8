#!/bin/bash
# fastcgi-split.sh SIZE [RUNS] [zchttpd options]: where a dynamic response's
# CPU goes between zchttpd's worker and the application, and how often
# each of them is switched out (docs/bench-fastcgi.md, run F7).
#
# zchttpd (one worker) and one zcgen process on the zero-copy transport run
# in a cgroup v1 `cpu` group of 0.5 CPU on CPU 1, as `zcbench fastcgi`
# runs them; wrk -c50 asks /gen?size=SIZE for 3 s from CPU 0, RUNS times.
# Per request and per process: CPU in microseconds (utime + stime from
# /proc), voluntary switches (it slept: waited for its peer) and
# involuntary ones (preempted: its peer was woken on the same CPU).  With
# PERF=1 the first run is also recorded (`perf record -g -C 1`) and split
# by system call (perf-by-syscall.py) for each process.
set -eu
SIZE=$1 RUNS=${2:-3}
shift $(($# < 2 ? $# : 2))
HERE=$(cd "$(dirname "$0")" && pwd)
B=${ZCBENCH_BUILD:-$(cd "$HERE/../.." && pwd)/build}
CG=/sys/fs/cgroup/cpu/zcbench-split
TMP=$(mktemp -d)
mkdir -p "$CG"
echo 100000 > "$CG/cpu.cfs_period_us"
echo 50000 > "$CG/cpu.cfs_quota_us"
PORT=$((18900 + RANDOM % 300))
LD_LIBRARY_PATH="$B/cgi" bash -c "echo \$\$ > $CG/cgroup.procs; exec taskset -c 1 \
	$B/server/zchttpd --listen 127.0.0.1:$PORT --root $TMP --workers 1 \
	--fastcgi-spawn /gen=zc:1:$B/cgi/apps/zcgen $*" 2> "$TMP/err" &
MP=$!
trap 'kill $MP 2> /dev/null; wait $MP 2> /dev/null; rm -rf "$TMP"; rmdir "$CG" 2> /dev/null || true' EXIT
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/gen?size=1" && break; sleep 0.1; done
W=$(pgrep -P $MP -x zchttpd | head -1)
APP=$(pgrep -P $MP -x zcgen | head -1)
snap() {	# ticks, voluntary and involuntary switches of the worker, the app
	local p
	for p in $W $APP; do
		set -- $(cut -d')' -f2 "/proc/$p/stat")
		printf '%d %d %d ' $((${12} + ${13})) \
			"$(awk '/^voluntary_ctxt/{print $2}' /proc/$p/status)" \
			"$(awk '/^nonvoluntary_ctxt/{print $2}' /proc/$p/status)"
	done
}
taskset -c 0 wrk -t1 -c50 -d1s "http://127.0.0.1:$PORT/gen?size=$SIZE" > /dev/null	# warm
for i in $(seq "$RUNS"); do
	a=$(snap)
	if [ "$i" = 1 ] && [ "${PERF:-0}" = 1 ]; then
		perf record -q -e cpu-clock -F 4999 -C 1 -g -o "$TMP/perf.data" -- \
			taskset -c 0 wrk -t1 -c50 -d3s "http://127.0.0.1:$PORT/gen?size=$SIZE" > "$TMP/wrk" 2>&1
	else
		taskset -c 0 wrk -t1 -c50 -d3s "http://127.0.0.1:$PORT/gen?size=$SIZE" > "$TMP/wrk"
	fi
	b=$(snap)
	n=$(awk '/requests in/{print $1}' "$TMP/wrk")
	python3 - "$a" "$b" "$n" "$(getconf CLK_TCK)" <<'EOF'
import sys
a, b = (list(map(int, s.split())) for s in sys.argv[1:3])
n, hz = int(sys.argv[3]), int(sys.argv[4])
d = [y - x for x, y in zip(a, b)]
us = lambda t: t * 1e6 / hz / n
print(f"{n / 3:8.0f} req/s  worker {us(d[0]):5.1f} us, slept {d[1] / n:.2f}, "
      f"preempted {d[2] / n:.2f}  |  app {us(d[3]):5.1f} us, slept {d[4] / n:.2f}, "
      f"preempted {d[5] / n:.2f}  |  together {us(d[0] + d[3]):5.1f} us per request")
EOF
	if [ "$i" = 1 ] && [ "${PERF:-0}" = 1 ]; then
		python3 "$HERE/perf-by-syscall.py" "$TMP/perf.data" "$n" zchttpd
		python3 "$HERE/perf-by-syscall.py" "$TMP/perf.data" "$n" zcgen
	fi
done
