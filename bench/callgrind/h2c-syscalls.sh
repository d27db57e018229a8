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
for tool in strace h2load; do
	command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/root"
head -c "$size" /dev/urandom > "$work/root/f"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$build/server/zchttpd" --root "$work/root" --workers 1 --io-threads 0 \
	--http2 on ${ARGS:-} --listen "127.0.0.1:$port" 2>"$work/log" &
pid=$!
url=http://127.0.0.1:$port/f
for i in $(seq 100); do
	h2load -n 1 -c 1 "$url" 2>/dev/null | grep -q '1 succeeded' && break
	[ "$i" = 100 ] && { echo "zchttpd did not answer" >&2; exit 1; }
	sleep 0.1
done
h2load -n 200 -c 1 -m 10 "$url" | grep -q '200 succeeded'
worker=$(pgrep -P "$pid" | head -1)
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
