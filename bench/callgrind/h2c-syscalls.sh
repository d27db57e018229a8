#!/usr/bin/env bash
# bench/callgrind/h2c-syscalls.sh - the system calls of one zchttpd worker
# for N h2c requests of a SIZE-byte file (strace -c), one connection with
# 10 streams at once (h2load), after 200 warm-up requests on another.
#
#   bench/callgrind/h2c-syscalls.sh SIZE [N]     (N: default 100)
#
# BUILD (default build/) picks the Meson tree; ARGS more zchttpd options.
# Counts are deterministic enough to compare (the socket's room varies a
# little: a send the client has not made room for is retried).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=$(realpath "${BUILD:-build}")
size=${1:?SIZE}
n=${2:-100}
command -v strace >/dev/null || { echo "needs strace" >&2; exit 2; }
. bench/h2-site.sh
h2_site "$size"
h2_start "$build" "${ARGS:-}"
h2load -n 200 -c 1 -m 10 "$url" | grep -q '200 succeeded'
strace -c -f -p "$worker" -o "$work/strace" &
spid=$!
sleep 0.5
h2load -n "$n" -c 1 -m 10 "$url" | grep -q " $n succeeded" ||
	{ echo "h2load run failed" >&2; exit 1; }
sleep 0.3
kill -INT "$spid"
wait "$spid" 2>/dev/null || true
echo "zchttpd worker, $n h2c requests of $size bytes (1 connection, 10 streams):"
# strace -c's table: calls, [errors,] name.
awk '/^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ / && $NF != "total" {
	printf "  %-12s %6d", $NF, $4
	if (NF == 6) printf "  (%d failed)", $5
	printf "\n" }' "$work/strace"
