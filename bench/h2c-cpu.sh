#!/usr/bin/env bash
# bench/h2c-cpu.sh - CPU time (user + system) of one zchttpd worker per h2c
# (or, with PROTO=h2, h2 over TLS) request, for two builds side by side: each serves N requests of a
# SIZE-byte file (h2load, CONNS connections with 10 streams each, after a
# warm-up), RUNS times, alternating the builds; prints each run's
# microseconds per request and the medians.  CPU time moves less with
# other work on the machine than requests per second do, but it moves
# (caches, frequency): compare builds in the same invocation only.
#
#   bench/h2c-cpu.sh BUILD_A BUILD_B SIZE [N] [RUNS]
#                    (N: default 100000; RUNS: default 5; CONNS=1;
#                     ARGS_A, ARGS_B: more zchttpd options for each, to
#                     compare options of one build; PROTO=h2: over TLS,
#                     with a certificate made here)
set -euo pipefail
cd "$(dirname "$0")/.."

a=$(realpath "${1:?BUILD_A}") b=$(realpath "${2:?BUILD_B}")
size=${3:?SIZE} n=${4:-100000} runs=${5:-5} conns=${CONNS:-1}
. bench/h2-site.sh
h2_site "$size"
hz=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# one BUILD ARGS: microseconds of worker CPU per request for N requests.
one() {
	local t0 t1
	h2_start "$1" "$2"
	h2load -n 2000 -c "$conns" -m 10 "$url" >/dev/null
	t0=$(cpu_ticks "$worker")
	h2load -n "$n" -c "$conns" -m 10 "$url" | grep -q " $n succeeded" ||
		{ echo "h2load failed" >&2; exit 1; }
	t1=$(cpu_ticks "$worker")
	h2_stop
	awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$n" \
		'BEGIN {printf "%.2f\n", t * 1000000 / hz / n}'
}

ra=() rb=()
for r in $(seq "$runs"); do
	ra+=("$(one "$a" "${ARGS_A:-}")")
	rb+=("$(one "$b" "${ARGS_B:-}")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "worker CPU us per $proto request, $size bytes, $n requests x $runs runs, $conns connection(s) x 10 streams:"
echo "  A $a ${ARGS_A:-}: ${ra[*]} (median $(median "${ra[@]}"))"
echo "  B $b ${ARGS_B:-}: ${rb[*]} (median $(median "${rb[@]}"))"
