#!/usr/bin/env bash
# bench/callgrind/per-request.sh - instructions per request of zchttpd (and
# of a FastCGI application it spawns), counted by callgrind: repeatable to
# the instruction on a noisy machine, where CPU time is not.
#
#   bench/callgrind/per-request.sh static SIZE          GET /f of SIZE bytes
#   bench/callgrind/per-request.sh fastcgi zc|sock SIZE GET /gen?size=SIZE
#                                                       from cgi/apps/zcgen
#   bench/callgrind/per-request.sh h2c SIZE             GET /f of SIZE bytes
#                                                       over h2c (h2load:
#                                                       one connection,
#                                                       10 streams at once)
#   bench/callgrind/per-request.sh h2floor SIZE         the same, answered
#                                                       by zch2floor (the
#                                                       floor of a server
#                                                       on libnghttp2)
#   bench/callgrind/per-request.sh proxy SIZE           GET /f of SIZE bytes
#                                                       through --proxy from
#                                                       an nginx origin (not
#                                                       counted)
#
# Each count is the difference between two runs (200 warm-up requests, then
# N1 and N2 keep-alive requests on one connection), divided by N2 - N1, so
# start-up and shutdown cancel out (for h2c the warm-up and the measured
# requests are two h2load runs, so the connection's setup cancels too).
# Prints one line per process: the
# worker, and for fastcgi the application.  BUILD (default build/) picks
# the Meson tree; N1, N2 (default 1000, 3000) the request counts; ARGS
# more zchttpd options (ARGS="--event io_uring"); KEEP=DIR keeps the
# callgrind files there (DIR/N1, DIR/N2) for callgrind_annotate.
# The static file is served from the cache after the warm-up (a hit).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=$(realpath "${BUILD:-build}")
n1=${N1:-1000} n2=${N2:-3000}
kind=${1:-}
case "$kind" in
static) size=${2:?SIZE}; path=/f ;;
fastcgi) transport=${2:?zc or sock}; size=${3:?SIZE}; path="/gen?size=$size" ;;
h2c|h2floor|proxy) size=${2:?SIZE}; path=/f ;;
*) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
{ [ "$kind" = h2c ] || [ "$kind" = h2floor ]; } && ! command -v h2load >/dev/null &&
	{ echo "needs h2load (nghttp2-client)" >&2; exit 2; }

if [ -n "${KEEP:-}" ]; then
	work=$KEEP; mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/root"
[ "$kind" != fastcgi ] && head -c "$size" /dev/urandom > "$work/root/f"

# proxy: the origin, nginx serving the same file, outside valgrind (its
# worker runs as nobody: mktemp's directory is opened to it).
if [ "$kind" = proxy ]; then
	chmod a+rx "$work"
	origin=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf '%s\n' "worker_processes 1; daemon off; pid $work/origin.pid;" \
		"error_log $work/origin.err;" "events { worker_connections 1024; }" \
		"http { access_log off; sendfile on; keepalive_requests 100000;" \
		"       server { listen 127.0.0.1:$origin; root $work/root; } }" \
		> "$work/origin.conf"
	nginx -c "$work/origin.conf" -p "$work" &
	origin_pid=$!
	trap 'kill $origin_pid 2>/dev/null; wait $origin_pid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fi

# run N: callgrind files of every process for 200 + N requests, in $work/N.
run() {
	local n=$1 out=$work/$1 port pid
	local args=(--root "$work/root" --workers 1 --io-threads 0 ${ARGS:-})

	[ "$kind" = h2c ] && args+=(--http2 on)
	[ "$kind" = proxy ] && args+=(--proxy "/=http://127.0.0.1:$origin")

	mkdir -p "$out"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	if [ "$kind" = fastcgi ]; then
		local t=""
		[ "$transport" = zc ] && t="zc:"
		args+=(--fastcgi-spawn "/gen=${t}1:$build/cgi/apps/zcgen")
	fi
	local binary=$build/server/zchttpd
	if [ "$kind" = h2floor ]; then
		binary=$build/bench/zch2floor
		args=(--root "$work/root" --workers 1)
	fi
	LD_LIBRARY_PATH=$build/cgi valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$out/cg.%p" "$binary" \
		"${args[@]}" --listen "127.0.0.1:$port" 2>"$out/valgrind.log" &
	pid=$!
	if [ "$kind" = h2c ] || [ "$kind" = h2floor ]; then
		h2c_requests "$port" "$n"
	else
		python3 - "$port" "$path" "$n" <<'PY'
import http.client, sys, time
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + 60
while True:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path); r = c.getresponse(); r.read()
        if r.status == 200:
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("zchttpd did not answer under valgrind")
    time.sleep(0.3)
for i in range(199 + n):
    c.request("GET", path); r = c.getresponse(); body = r.read()
    assert r.status == 200, r.status
PY
	fi
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
}

# h2c_requests PORT N: once zchttpd answers, 200 requests, then N, each
# an h2load run of one connection with 10 streams at once.
h2c_requests() {
	local url=http://127.0.0.1:$1/f i
	for i in $(seq 200); do
		h2load -n 1 -c 1 "$url" 2>/dev/null | grep -q '1 succeeded' && break
		[ "$i" = 200 ] && { echo "zchttpd did not answer under valgrind" >&2; exit 1; }
		sleep 0.3
	done
	h2load -n 200 -c 1 -m 10 "$url" | grep -q '200 succeeded' ||
		{ echo "h2c warm-up failed" >&2; exit 1; }
	h2load -n "$2" -c 1 -m 10 "$url" | grep -q " $2 succeeded" ||
		{ echo "h2c run of $2 failed" >&2; exit 1; }
}

# total FILE: the Ir total of one callgrind file.
total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }

# biggest DIR PATTERN: the largest count among the files whose command
# line matches PATTERN (the worker outdoes the master; one app process).
biggest() {
	local best=0 f t
	for f in "$1"/cg.*; do
		grep -Eq "^cmd: *[^ ]*/$2( |\$)" "$f" || continue
		t=$(total "$f")
		[ "$t" -gt "$best" ] && best=$t
	done
	echo "$best"
}

run "$n1"
run "$n2"
for proc in server/zchttpd apps/zcgen bench/zch2floor; do
	[ "$proc" = apps/zcgen ] && [ "$kind" != fastcgi ] && continue
	[ "$proc" = bench/zch2floor ] && [ "$kind" != h2floor ] && continue
	[ "$proc" = server/zchttpd ] && [ "$kind" = h2floor ] && continue
	a=$(biggest "$work/$n1" "$proc") b=$(biggest "$work/$n2" "$proc")
	echo "${proc#*/}: $(( (b - a) / (n2 - n1) )) instructions per request ($*)"
done
