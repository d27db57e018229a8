#!/usr/bin/env bats
# zchttpd as a FastCGI client, end to end: the real server, a libfcgi
# application (tests/fastcgi/fcgi_probe.c, Debian's libfcgi) started by
# --fastcgi-spawn or on its own, curl and raw requests.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

setup_file() {
	export PROBE="$BATS_FILE_TMPDIR/fcgi_probe"
	cc -O2 -Wall -Wextra -Werror -o "$PROBE" \
		"$BATS_TEST_DIRNAME/fastcgi/fcgi_probe.c" -lfcgi
}

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT/dir"
	echo '<h1>index</h1>' > "$ROOT/index.html"
	echo 'static page' > "$ROOT/dir/page.txt"
}

teardown() {
	stop_server
	# Applications a test started itself.
	if [ -f "$BATS_TEST_TMPDIR/apps" ]; then
		kill $(cat "$BATS_TEST_TMPDIR/apps") 2>/dev/null || true
	fi
	check_sanitizers
}

# The probe's body of n bytes.
expected() { # n
	python3 -c 'import sys
a = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
n = int(sys.argv[1])
sys.stdout.buffer.write((a * (n // 62 + 1))[:n])' "$1"
}

probe() { # extra options...
	start_server --fastcgi-spawn "/probe=2:$PROBE" "$@"
}

@test "bodies are byte-exact at every size threshold, framed by length or chunks" {
	probe
	for n in 0 1 16383 16384 16385 65535 65536 65537 1048576; do
		want=$(expected "$n" | sha256sum)
		[ "$(curl -s "$URL/probe?size=$n" | sha256sum)" = "$want" ]
		[ "$(curl -s "$URL/probe?size=$n&len" | sha256sum)" = "$want" ]
		[ "$(curl -s "$URL/probe?size=$n&chunk=1000" | sha256sum)" = "$want" ]
	done
	run curl -si "$URL/probe?size=10"
	[[ "$output" == *"Transfer-Encoding: chunked"* ]]
	run curl -si "$URL/probe?size=10&len"
	[[ "$output" == *"Content-Length: 10"* ]]
	[[ "$output" != *"Transfer-Encoding"* ]]
}

@test "HTTP/1.1 keeps the connection; HTTP/1.0 gets the body closed-delimited" {
	probe
	req='GET /probe?size=100 HTTP/1.1\r\nHost: x\r\n\r\nGET /probe?size=70000 HTTP/1.1\r\nHost: x\r\n\r\nGET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	run bash -c "printf '$req' | $RAW $PORT"
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | grep -c '^HTTP/1.1 200')" -eq 3 ]
	[[ "$output" == *"<h1>index</h1>"* ]]
	run bash -c "printf 'GET /probe?size=5 HTTP/1.0\r\n\r\n' | $RAW $PORT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Connection: close"* ]]
	[[ "$output" != *"chunked"* ]]
	[[ "$output" == *$'\r\n\r\n01234' ]]
}

# A head larger than the room the connection keeps for response heads
# (8 KiB) is built in a buffer of its own; nothing of it is lost.
@test "an application's head of 90 fields (12 KiB) arrives whole, status line and all" {
	probe
	run curl -s -i "$URL/probe?fields=90&status=203&size=5&len"
	[ "$status" -eq 0 ]
	[[ "$output" == "HTTP/1.1 203 Probe"$'\r\n'* ]]
	[ "$(printf '%s' "$output" | grep -c '^X-Probe-[0-9]*: abc[a-zA-Z]\{117\}'$'\r''$')" -eq 90 ]
	[[ "$output" == *"X-Probe-89: "* ]]
	[[ "$output" == *"Content-Length: 5"$'\r\n'* ]]
	[[ "$output" == *$'\r\n\r\n01234' ]]
}

@test "HEAD gets the head only" {
	probe
	run bash -c "printf 'HEAD /probe?size=5000&len HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | $RAW $PORT"
	[[ "$output" == *"Content-Length: 5000"* ]]
	[ "$(printf '%s' "$output" | wc -c)" -lt 400 ]
}

@test "CGI/1.1 parameters as nginx's fastcgi_params give them" {
	probe
	run curl -s -H 'X-Custom: one' -H 'X-Custom: two' -H 'Cookie: a=1' \
		-H 'Cookie: b=2' -H 'Proxy: evil' -H 'X_Under: no' \
		-H 'Content-Type: text/x-test' --data-binary 'abc' \
		-w '\ncurl local port %{local_port}\n' \
		"$URL/probe/extra/path?params&q=1"
	[[ "$output" == *"REQUEST_METHOD=POST"* ]]
	# The client's port, formatted by the server (no printf there).
	local port=${output##*curl local port }
	port=${port%%$'\n'*}
	[[ "$output" == *"REMOTE_PORT=$port"$'\n'* ]]
	[[ "$output" == *"SCRIPT_NAME=/probe"$'\n'* ]]
	[[ "$output" == *"PATH_INFO=/extra/path"$'\n'* ]]
	[[ "$output" == *"QUERY_STRING=params&q=1"$'\n'* ]]
	[[ "$output" == *"REQUEST_URI=/probe/extra/path?params&q=1"$'\n'* ]]
	[[ "$output" == *"SCRIPT_FILENAME=$(realpath "$ROOT")/probe"$'\n'* ]]
	[[ "$output" == *"DOCUMENT_ROOT=$(realpath "$ROOT")"$'\n'* ]]
	[[ "$output" == *"CONTENT_TYPE=text/x-test"$'\n'* ]]
	[[ "$output" == *"CONTENT_LENGTH=3"$'\n'* ]]
	[[ "$output" == *"SERVER_PROTOCOL=HTTP/1.1"$'\n'* ]]
	[[ "$output" == *"SERVER_PORT=$PORT"$'\n'* ]]
	[[ "$output" == *"SERVER_ADDR=127.0.0.1"$'\n'* ]]
	[[ "$output" == *"SERVER_NAME=127.0.0.1"$'\n'* ]]
	[[ "$output" == *"REMOTE_ADDR=127.0.0.1"$'\n'* ]]
	[[ "$output" == *"REMOTE_PORT="* ]]
	[[ "$output" == *"GATEWAY_INTERFACE=CGI/1.1"$'\n'* ]]
	[[ "$output" == *"HTTPS=off"$'\n'* ]]
	[[ "$output" == *"HTTP_HOST=127.0.0.1:$PORT"$'\n'* ]]
	[[ "$output" == *"HTTP_X_CUSTOM=one, two"$'\n'* ]]
	[[ "$output" == *"HTTP_COOKIE=a=1; b=2"$'\n'* ]]
	[[ "$output" != *"HTTP_PROXY"* ]]
	[[ "$output" != *"HTTP_X_UNDER"* ]]
	[[ "$output" != *"HTTP_CONTENT_TYPE"* ]]
	# A suffix route splits the script at its first *.ext segment.
	teardown
	start_server --fastcgi-spawn "*.cgi=1:$PROBE"
	run curl -s "$URL/dir/run.cgi/more?params"
	[[ "$output" == *"SCRIPT_NAME=/dir/run.cgi"$'\n'* ]]
	[[ "$output" == *"PATH_INFO=/more"$'\n'* ]]
	[ "$(code "$URL/dir/page.txt")" = 200 ]
}

@test "request bodies: Content-Length and chunked, up to 100 MiB streamed, 413 beyond --max-body" {
	probe --max-body 200m
	head -c 100000000 /dev/urandom > "$BATS_TEST_TMPDIR/body"
	want=$(python3 -c '
import sys
h = 0xcbf29ce484222325
d = open(sys.argv[1], "rb").read()
for b in d: h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%d %016x" % (len(d), h))' "$BATS_TEST_TMPDIR/body")
	[ "$(curl -s --data-binary @"$BATS_TEST_TMPDIR/body" "$URL/probe?echo")" = "$want" ]
	[ "$(curl -s -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/body" "$URL/probe?echo")" = "$want" ]
	# Small bodies, the bytes arriving with the head.
	[ "$(curl -s --data-binary 'hello' "$URL/probe?echo")" = "5 $(printf '%016x' "$(python3 -c '
h = 0xcbf29ce484222325
for b in b"hello": h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print(h)')")" ]
	run bash -c "printf 'POST /probe?echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n' | $RAW $PORT"
	[[ "$output" == *$'\r\n5 '* ]]
	teardown
	probe --max-body 1k
	head -c 2000 /dev/zero > "$BATS_TEST_TMPDIR/small"
	[ "$(code --data-binary @"$BATS_TEST_TMPDIR/small" "$URL/probe?echo")" = 413 ]
	[ "$(code -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/small" "$URL/probe?echo")" = 413 ]
	[ "$(code "$URL/probe?size=3")" = 200 ]
}

@test "Status, redirects (local and to the client) and the app's headers" {
	probe
	run curl -si "$URL/probe?status=404&size=3&len"
	[[ "$output" == "HTTP/1.1 404 Probe"* ]]
	[[ "$output" == *$'\r\n\r\n012' ]]
	run curl -si "$URL/probe?redirect=/dir/page.txt"
	[[ "$output" == "HTTP/1.1 200 OK"* ]]
	[[ "$output" == *"static page"* ]]
	run curl -si "$URL/probe?redirect=http://example.com/x"
	[[ "$output" == "HTTP/1.1 302 Found"* ]]
	[[ "$output" == *"Location: http://example.com/x"* ]]
}

@test "faults: no backend 502, app dies before its head 502, after it the connection is cut" {
	start_server --fastcgi "/none=unix:$BATS_TEST_TMPDIR/nothing.sock" \
		--fastcgi "/tcp=127.0.0.1:1" --fastcgi-spawn "/probe=1:$PROBE"
	[ "$(code "$URL/none")" = 502 ]
	[ "$(code "$URL/tcp")" = 502 ]
	[ "$(code "$URL/probe?die=head")" = 502 ]
	run curl -s -o /dev/null "$URL/probe?die=body&size=1000000&chunk=10000"
	[ "$status" -eq 18 ]	# curl: partial body, never a complete one
	run curl -s -o /dev/null "$URL/probe?die=body&size=1000000&chunk=10000&len"
	[ "$status" -eq 18 ]
	[ "$(code "$URL/probe?nohead")" = 502 ]
	# The app was restarted by the master; the server still serves.
	for _ in $(seq 50); do
		[ "$(code "$URL/probe?size=3")" = 200 ] && break
		sleep 0.1
	done
	[ "$(code "$URL/probe?size=3")" = 200 ]
	[ "$(code "$URL/index.html")" = 200 ]
	grep -q 'fastcgi /probe=1:.*exited with 3; restarting' "$BATS_TEST_TMPDIR/server.err"
}

@test "faults: malformed records 502 and the backend connection dropped; --fastcgi-timeout 504" {
	probe --fastcgi-timeout 500
	[ "$(code "$URL/probe?garbage")" = 502 ]
	[ "$(code "$URL/probe?size=10")" = 200 ]
	[ "$(code "$URL/probe?sleep=2000")" = 504 ]
	grep -q 'timed out' "$BATS_TEST_TMPDIR/server.err"
	sleep 2
	[ "$(code "$URL/probe?size=10")" = 200 ]
}

@test "FCGI_STDERR goes to the error log with the request" {
	probe
	[ "$(code "$URL/probe?stderr=3&size=1")" = 200 ]
	grep -q 'stderr: probe stderr line 2 (request "GET /probe?stderr=3&size=1")' \
		"$BATS_TEST_TMPDIR/server.err"
	grep -q '"GET /probe?stderr=3&size=1 HTTP/1.1" 200 ' "$BATS_TEST_TMPDIR/access.log" ||
		{ stop_server; grep -q '"GET /probe?stderr=3&size=1 HTTP/1.1" 200 ' "$BATS_TEST_TMPDIR/access.log"; }
}

# A client slower than the app: the server's output fills, the link holds
# the app's records back and resumes them when the client has read what
# was queued -- the whole body arrives, byte for byte.
@test "a slow reader gets every byte of a large response (backpressure on the backend)" {
	probe --workers 1
	run python3 - "$PORT" <<'EOF'
import hashlib, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
s.sendall(b"GET /probe?size=3000000&len HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
chunks = []
for d in iter(lambda: s.recv(16384), b""):
    chunks.append(d)
    if len(chunks) < 40:
        time.sleep(0.002)	# slow at first: the server's output fills
body = b"".join(chunks).split(b"\r\n\r\n", 1)[1]
print(len(body), hashlib.sha256(body).hexdigest())
EOF
	[ "$status" -eq 0 ]
	[ "$output" = "3000000 $(expected 3000000 | sha256sum | cut -d' ' -f1)" ]
}

@test "a slow backend blocks neither the loop nor static requests" {
	probe --workers 1
	curl -s "$URL/probe?sleep=3000&size=5" > "$BATS_TEST_TMPDIR/slow.out" &
	slow=$!
	sleep 0.3
	[ "$(curl -s "$URL/index.html")" = '<h1>index</h1>' ]
	[ "$(curl -s "$URL/probe?size=5")" = '01234' ]	# the other app process
	kill -0 "$slow"		# the slow one is still waiting
	wait "$slow"
	[ "$(cat "$BATS_TEST_TMPDIR/slow.out")" = '01234' ]
}

@test "bounded pool: --fastcgi-conns and --fastcgi-queue, 503 beyond" {
	start_server --workers 1 --fastcgi-conns 1 --fastcgi-queue 1 \
		--fastcgi-spawn "/probe=1:$PROBE"
	curl -s -o /dev/null -w '%{http_code}\n' "$URL/probe?sleep=1500" > "$BATS_TEST_TMPDIR/a" &
	a=$!
	sleep 0.3
	curl -s -o /dev/null -w '%{http_code}\n' "$URL/probe?size=1" > "$BATS_TEST_TMPDIR/b" &
	b=$!
	sleep 0.3
	[ "$(code "$URL/probe?size=1")" = 503 ]		# the queue is full
	wait "$a" "$b"
	[ "$(cat "$BATS_TEST_TMPDIR/a")" = 200 ]
	[ "$(cat "$BATS_TEST_TMPDIR/b")" = 200 ]	# served after the first
}

# Bytes that arrive while a request waits on its application (the next
# pipelined request, then the client's half-close) wait their turn: every
# response comes, in order, and the half-close does not abort the request.
@test "a request arriving while the previous one waits on the app is answered after it" {
	probe --workers 1
	run python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /probe?sleep=400&size=7 HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.15)
s.sendall(b"GET /probe?sleep=100&size=3 HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.1)
s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.05)
s.shutdown(socket.SHUT_WR)
data = b""
s.settimeout(10)
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode("latin-1"))
PY
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | grep -c '^HTTP/1.1 200')" -eq 3 ]
	[[ "$output" == *'0123456'*'012'*'<h1>index</h1>'* ]]
	[[ "$output" != *'0123456'*'<h1>index</h1>'*'012'* ]]
}

@test "a client that leaves aborts its request; nothing leaks, the link is reused" {
	probe --workers 1
	for i in $(seq 5); do
		curl -s -m 0.3 "$URL/probe?sleep=1000&size=10" >/dev/null || true
	done
	sleep 1.5
	[ "$(curl -s "$URL/probe?size=5")" = '01234' ]
	open=$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"]["open"])')
	[ "$open" -eq 1 ]	# only the status request itself
}

@test "--fastcgi-spawn supervises: restart after a kill, stop with the server" {
	probe
	pids=$(pgrep -f "^$PROBE" | sort)
	[ "$(echo "$pids" | wc -l)" -eq 2 ]
	kill -KILL $(echo "$pids" | head -1)
	for _ in $(seq 50); do
		[ "$(pgrep -f "^$PROBE" | wc -l)" -eq 2 ] && break
		sleep 0.1
	done
	[ "$(pgrep -f "^$PROBE" | wc -l)" -eq 2 ]
	[ "$(curl -s "$URL/probe?size=3")" = '012' ]
	dir=$(sed -n 's|^zchttpd: fastcgi .*: 2 processes on \(.*\)/[0-9]*-\*\.sock.*|\1|p' "$BATS_TEST_TMPDIR/server.err")
	[ "$(ls "$dir"/*.sock | wc -l)" -eq 2 ]		# one per worker
	stop_server
	! pgrep -f "^$PROBE"
	[ ! -e "$dir" ]		# cleaned up
}

# Is this process still running (not gone, not a zombie)?
running() { # pid
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

@test "a master killed with SIGKILL: its workers and applications stop, the port is free" {
	probe
	kids=$(pgrep -P "$PID")
	[ "$(echo "$kids" | wc -l)" -eq 4 ]	# two workers, two probes
	dir=$(sed -n 's|^zchttpd: fastcgi .*: 2 processes on \(.*\)/[0-9]*-\*\.sock.*|\1|p' "$BATS_TEST_TMPDIR/server.err")
	kill -KILL "$PID"
	wait "$PID" 2>/dev/null || true
	for _ in $(seq 100); do
		left=$(for k in $kids; do if running "$k"; then echo "$k"; fi; done)
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || { ps -o pid,stat,cmd -p $left; false; }
	[ "$(code "$URL/")" = 000 ]	# nobody accepts on the port
	# Only a master that stops removes the sockets' directory.
	rm -rf "$dir"
}

@test "an application started on its own, on a UNIX socket and on TCP" {
	sock="$BATS_TEST_TMPDIR/app.sock"
	python3 - "$sock" "$PROBE" 3>&- <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(64)
os.dup2(s.fileno(), 0)
os.execv(sys.argv[2], [sys.argv[2]])
EOF
	echo $! >> "$BATS_TEST_TMPDIR/apps"
	tport=$(free_port)
	python3 - "$tport" "$PROBE" 3>&- <<'EOF' &
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
os.dup2(s.fileno(), 0)
os.execv(sys.argv[2], [sys.argv[2]])
EOF
	echo $! >> "$BATS_TEST_TMPDIR/apps"
	sleep 0.5
	start_server --fastcgi "/u=unix:$sock" --fastcgi "/t=127.0.0.1:$tport"
	[ "$(curl -s "$URL/u?size=100000" | sha256sum)" = "$(expected 100000 | sha256sum)" ]
	[ "$(curl -s "$URL/t?size=100000" | sha256sum)" = "$(expected 100000 | sha256sum)" ]
}

@test "bad --fastcgi values are refused with usage" {
	run "$ZCHTTPD" --root "$ROOT" --fastcgi "app=unix:/x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad value"* ]]
	run "$ZCHTTPD" --root "$ROOT" --fastcgi "/app=bogus"
	[ "$status" -eq 2 ]
	run "$ZCHTTPD" --root "$ROOT" --fastcgi-spawn "/app=0:/bin/true"
	[ "$status" -eq 2 ]
	run "$ZCHTTPD" --root "$ROOT" --fastcgi "*./x=unix:/x"
	[ "$status" -eq 2 ]
}

# ---------------------------------------------------------------------------
# The zero-copy transport: cgi/'s libfcgi.so.0 under zchttpd.  The demo apps
# and the probe are linked against Debian's libfcgi; LD_LIBRARY_PATH, which
# the spawned processes inherit from the server, runs them on ours.

OURS="$BATS_TEST_DIRNAME/../build/cgi"

# zcgen's document of n bytes.
zcgen_doc() { # n
	python3 -c 'import sys
a = b"abcdefghijklmnopqrstuvwxyz0123456789\n"
n = int(sys.argv[1])
sys.stdout.buffer.write((a * (n // len(a) + 1))[:n])' "$1"
}

zc_apps() { # extra options...
	mkdir -p "$BATS_TEST_TMPDIR/wrap"
	head -c 300000 /dev/urandom > "$BATS_TEST_TMPDIR/wrap/big.bin"
	LD_LIBRARY_PATH="$OURS" start_server \
		--fastcgi-spawn "/gen=zc:2:$OURS/apps/zcgen" \
		--fastcgi-spawn "/sgen=2:$OURS/apps/zcgen" \
		--fastcgi-spawn "/wrap=zc:1:$OURS/apps/zcwrap --root $BATS_TEST_TMPDIR/wrap" \
		--fastcgi-spawn "/echo=zc:1:$OURS/apps/zcecho" \
		--fastcgi-spawn "/sprobe=1:$PROBE" \
		--fastcgi-spawn "/zprobe=zc:1:$PROBE" "$@"
}

@test "zero-copy transport: byte-exact bodies at every size threshold, by reference" {
	zc_apps --max-body 200m
	for n in 0 1 16383 16384 16385 65534 65535 65536 65537 1048576 3000000; do
		want=$(zcgen_doc "$n" | sha256sum)
		[ "$(curl -s "$URL/gen?size=$n" | sha256sum)" = "$want" ]
		[ "$(curl -s "$URL/sgen?size=$n" | sha256sum)" = "$want" ]
	done
	# A page around a file: the file by extent, never read by the app.
	run curl -s "$URL/wrap?file=big.bin"
	[ "$status" -eq 0 ]
	curl -s "$URL/wrap?file=big.bin" > "$BATS_TEST_TMPDIR/page"
	grep -c '' "$BATS_TEST_TMPDIR/page" >/dev/null
	python3 - "$BATS_TEST_TMPDIR/page" "$BATS_TEST_TMPDIR/wrap/big.bin" <<'PY'
import sys
page, body = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert body in page and page.startswith(b"<!DOCTYPE html>"), len(page)
PY
	[ "$(code "$URL/wrap?file=../../etc/passwd")" = 404 ]
	by_ref=$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["zero_copy"]["bytes_by_reference"])')
	[ "$by_ref" -gt 4000000 ]
}

# POST the upload to zcecho (extra curl options first) and set `output` to
# its answer.  What came back is printed, which bats shows only when an
# assertion fails: curl's exit status, the HTTP status, the answer's length
# and time, its head, and the end of the server's log.
echo_upload() { # curl options...
	local got rc
	got=$(curl -s -o "$BATS_TEST_TMPDIR/answer" \
		-w 'status %{http_code}, %{size_download} bytes in %{time_total} s' \
		"$@" --data-binary @"$BATS_TEST_TMPDIR/up" "$URL/echo")
	rc=$?
	echo "upload $*: curl exit $rc, $got; the answer begins:"
	head -c 512 "$BATS_TEST_TMPDIR/answer" | cat -v
	echo "--- the server's log ends:"
	tail -n 20 "$BATS_TEST_TMPDIR/server.err"
	output=$(cat "$BATS_TEST_TMPDIR/answer")
}

@test "zero-copy transport: a 100 MiB upload, its SHA-256 computed by the app" {
	zc_apps --max-body 200m
	head -c 104857600 /dev/urandom > "$BATS_TEST_TMPDIR/up"
	want=$(sha256sum < "$BATS_TEST_TMPDIR/up" | cut -d' ' -f1)
	echo_upload
	[[ "$output" == *"length 104857600"* ]]
	[[ "$output" == *"sha256 $want"* ]]
	echo_upload -H 'Transfer-Encoding: chunked'
	[[ "$output" == *"sha256 $want"* ]]
}

@test "the same libfcgi-linked binary answers byte-identically on both transports" {
	zc_apps
	for q in "size=0" "size=1" "size=65535&len" "size=65536" "size=70000&chunk=1000" \
		 "size=1048576&len" "status=404&size=3" "redirect=/index.html"; do
		a=$(curl -s -i "$URL/sprobe?$q" | grep -v '^Date: ' | sha256sum)
		b=$(curl -s -i "$URL/zprobe?$q" | grep -v '^Date: ' | sha256sum)
		[ "$a" = "$b" ]
	done
	[ "$(curl -s --data-binary 'same body' "$URL/sprobe?echo")" = \
	  "$(curl -s --data-binary 'same body' "$URL/zprobe?echo")" ]
}

# Every parameter of two requests on one connection that differ in method,
# path, query, headers and body, as the probe reads them back (sorted
# NAME=VALUE lines) on our libfcgi, over a socket and over the channel:
# a value the server or the library kept from the connection's first
# request shows up as a difference in the second.
@test "the full parameter set of two different requests on one connection" {
	zc_apps
	local root ver app port n1
	root=$(realpath "$ROOT")
	ver=$("$ZCHTTPD" --version | cut -d' ' -f2)
	for app in sprobe zprobe; do
		curl -s -o "$BATS_TEST_TMPDIR/1" -H 'User-Agent: t1' -H 'Accept:' \
			-H 'X-One: 1' -H 'Cookie: a=1' -H 'Cookie: b=2' \
			-w '%{local_port} %{num_connects}\n' \
			"$URL/$app/p1?params&a=1" --next \
			-s -o "$BATS_TEST_TMPDIR/2" -H 'User-Agent: t2' -H 'Accept:' \
			-X PUT -H 'Content-Type: text/x-two' -H 'X-Two: 2' \
			--data-binary 'abcde' -w '%{local_port} %{num_connects}\n' \
			"$URL/$app/x/y.z?params" > "$BATS_TEST_TMPDIR/ports"
		# One connection: the second request made none of its own.
		read -r port n1 < "$BATS_TEST_TMPDIR/ports"
		[ "$n1" = 1 ]
		[ "$(sed -n 2p "$BATS_TEST_TMPDIR/ports")" = "$port 0" ]
		# What the two have in common: the connection, site and route.
		cat > "$BATS_TEST_TMPDIR/both" <<EOF
DOCUMENT_ROOT=$root
GATEWAY_INTERFACE=CGI/1.1
HTTPS=off
HTTP_HOST=127.0.0.1:$PORT
REDIRECT_STATUS=200
REMOTE_ADDR=127.0.0.1
REMOTE_PORT=$port
SCRIPT_FILENAME=$root/$app
SCRIPT_NAME=/$app
SERVER_ADDR=127.0.0.1
SERVER_NAME=127.0.0.1
SERVER_PORT=$PORT
SERVER_PROTOCOL=HTTP/1.1
SERVER_SOFTWARE=zchttpd/$ver
EOF
		LC_ALL=C sort - "$BATS_TEST_TMPDIR/both" > "$BATS_TEST_TMPDIR/want1" <<EOF
CONTENT_LENGTH=
CONTENT_TYPE=
DOCUMENT_URI=/$app/p1
HTTP_COOKIE=a=1; b=2
HTTP_USER_AGENT=t1
HTTP_X_ONE=1
PATH_INFO=/p1
QUERY_STRING=params&a=1
REQUEST_METHOD=GET
REQUEST_URI=/$app/p1?params&a=1
EOF
		LC_ALL=C sort - "$BATS_TEST_TMPDIR/both" > "$BATS_TEST_TMPDIR/want2" <<EOF
CONTENT_LENGTH=5
CONTENT_TYPE=text/x-two
DOCUMENT_URI=/$app/x/y.z
HTTP_USER_AGENT=t2
HTTP_X_TWO=2
PATH_INFO=/x/y.z
QUERY_STRING=params
REQUEST_METHOD=PUT
REQUEST_URI=/$app/x/y.z?params
EOF
		diff -u "$BATS_TEST_TMPDIR/want1" "$BATS_TEST_TMPDIR/1"
		diff -u "$BATS_TEST_TMPDIR/want2" "$BATS_TEST_TMPDIR/2"
	done
}

# A response larger than the client's output high-water mark in one
# message: the link holds it back and must be resumed once the client has
# drained (a lost resume once left the loop asleep with the response half
# sent).
@test "zero-copy transport: large responses under load arrive whole" {
	zc_apps --workers 1
	run wrk -t1 -c16 -d2s --timeout 2s "$URL/gen?size=2000000"
	[ "$status" -eq 0 ]
	[[ "$output" != *"Non-2xx"* ]]
	[[ "$output" != *"Socket errors"* ]]
	[ "$(curl -s "$URL/gen?size=2000000" | sha256sum)" = "$(zcgen_doc 2000000 | sha256sum)" ]
}

# requests: and pipelined: from the status endpoint's "fastcgi" object.
fcgi_counts() {
	curl -s "$URL/.zc/status" | python3 -c 'import json, sys
f = json.load(sys.stdin)["fastcgi"]
print(f["requests"], f["pipelined"])'
}

@test "zero-copy transport: requests pipelined to one application are each answered whole, in order" {
	zc_apps --workers 1
	run python3 "$BATS_TEST_DIRNAME/fastcgi/pipeline_load.py" "$PORT" /zprobe
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok 36"* ]]
	read -r requests pipelined < <(fcgi_counts)
	[ "$requests" -ge 36 ]
	[ "$pipelined" -gt 0 ]
	# The connection is whole after it: the next requests are answered.
	[ "$(curl -s "$URL/zprobe?size=5")" = '01234' ]
	[ "$(curl -s "$URL/zprobe?size=100000" | sha256sum)" = "$(expected 100000 | sha256sum)" ]
	# No request failed on the way (those that left are not failures).
	run grep -E 'failed or broken|timed out|without a response|no progress' "$BATS_TEST_TMPDIR/server.err"
	[ "$status" -eq 1 ]
}

@test "zero-copy transport: pipelined answers beyond one wake-up's read (1 MiB) all arrive" {
	# Server and application on one CPU: the application answers all
	# eight 200 KB requests in flight on its connection before zchttpd
	# runs again, more than a link reads per wake-up: the rest must be
	# read without a new doorbell.
	SERVER_WRAPPER="taskset -c 1" zc_apps --workers 1 \
		--fastcgi-spawn "/one=zc:1:$OURS/apps/zcgen"
	run taskset -c 0 wrk -t1 -c50 -d2s --timeout 1s "$URL/one?size=204800"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"Non-2xx"* ]]
	[[ "$output" != *"Socket errors"* ]]
	read -r requests pipelined < <(fcgi_counts)
	[ "$pipelined" -gt 0 ]
	[ "$(curl -s -m 5 "$URL/one?size=204800" | sha256sum)" = "$(zcgen_doc 204800 | sha256sum)" ]
}

@test "zero-copy transport: --fastcgi-pipeline 1 sends one request at a time" {
	zc_apps --workers 1 --fastcgi-pipeline 1
	run python3 "$BATS_TEST_DIRNAME/fastcgi/pipeline_load.py" "$PORT" /zprobe
	echo "$output"
	[ "$status" -eq 0 ]
	read -r requests pipelined < <(fcgi_counts)
	[ "$requests" -ge 36 ]
	[ "$pipelined" -eq 0 ]
}

@test "zero-copy transport: an app that dies with requests pipelined behind it: they go again, to its successor" {
	zc_apps --workers 1
	curl -s -m 10 -o "$BATS_TEST_TMPDIR/dead" -w '%{http_code}' "$URL/zprobe?sleep=300&die=head" > "$BATS_TEST_TMPDIR/dead.code" &
	pids=$!
	sleep 0.1
	for i in 1 2 3 4; do
		curl -s -m 10 -w ' %{http_code}\n' "$URL/zprobe?size=$i" > "$BATS_TEST_TMPDIR/behind.$i" &
		pids="$pids $!"
	done
	wait $pids	# not the server's
	[ "$(cat "$BATS_TEST_TMPDIR/dead.code")" = 502 ]
	read -r requests pipelined < <(fcgi_counts)
	[ "$pipelined" -ge 4 ]
	# Never begun by the application that died: sent again, once, on a
	# new connection, and answered by the application that replaced it.
	cat "$BATS_TEST_TMPDIR"/behind.[1-4] > "$BATS_TEST_TMPDIR/behind"
	printf '0 200\n01 200\n012 200\n0123 200\n' | diff - "$BATS_TEST_TMPDIR/behind"
	[ "$requests" -ge 9 ]
	# A request with a body cannot go again (its body went as it came):
	# behind a dying request it fails, and nothing else does.
	curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/zprobe?sleep=300&die=head" > "$BATS_TEST_TMPDIR/dead2.code" &
	pids=$!
	sleep 0.1
	curl -s -m 10 -o /dev/null -w '%{http_code}' --data-binary 'hello' "$URL/zprobe?echo" > "$BATS_TEST_TMPDIR/post.code" &
	pids="$pids $!"
	wait $pids
	[ "$(cat "$BATS_TEST_TMPDIR/dead2.code")" = 502 ]
	[ "$(cat "$BATS_TEST_TMPDIR/post.code")" = 502 ]
	[ "$(curl -s "$URL/zprobe?size=5")" = '01234' ]
}

@test "zero-copy transport: an app that dies is restarted and the link replaced" {
	zc_apps --workers 1
	[ "$(curl -s "$URL/zprobe?size=5")" = '01234' ]
	pkill -KILL -f "^$PROBE" || true
	for _ in $(seq 50); do
		[ "$(curl -s "$URL/zprobe?size=5")" = '01234' ] && break
		sleep 0.1
	done
	[ "$(curl -s "$URL/zprobe?size=5")" = '01234' ]
	run curl -s -o /dev/null "$URL/zprobe?die=body&size=1000000&chunk=10000&len"
	[ "$status" -eq 18 ]
}
