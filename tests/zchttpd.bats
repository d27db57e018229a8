#!/usr/bin/env bats
# zchttpd end to end: the real server on 127.0.0.1, curl and raw requests.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT/dir" "$ROOT/empty"
	echo '<h1>index</h1>' > "$ROOT/index.html"
	echo 'in dir' > "$ROOT/dir/index.html"
	head -c 300000 /dev/urandom > "$ROOT/big.bin"
	printf 'small file\n' > "$ROOT/small.txt"
	: > "$ROOT/zero.txt"
	echo secret > "$BATS_TEST_TMPDIR/outside.txt"
	ln -s "$BATS_TEST_TMPDIR/outside.txt" "$ROOT/escape.txt"
	ln -s small.txt "$ROOT/inside-link.txt"
	start_server
}

teardown() {
	stop_server
	check_sanitizers
	if [ -n "${CLEAN_DIR:-}" ]; then rm -rf "$CLEAN_DIR"; fi
}

@test "static files: status codes and byte-exact bodies" {
	[ "$(code "$URL/")" = 200 ]
	[ "$(curl -s "$URL/")" = '<h1>index</h1>' ]
	[ "$(curl -s "$URL/big.bin" | sha256sum)" = "$(sha256sum < "$ROOT/big.bin")" ]
	[ "$(curl -s "$URL/small.txt")" = 'small file' ]
	[ "$(code "$URL/zero.txt")" = 200 ]
	[ "$(code "$URL/missing")" = 404 ]
	[ "$(code "$URL/empty/")" = 403 ]          # no directory listings
	[ "$(code "$URL/small.txt/")" = 404 ]
	[ "$(code "$URL/inside-link.txt")" = 200 ]
}

@test "headers: type, length, validators, Date, Server" {
	run curl -sI "$URL/small.txt"
	[[ "$output" == *"Content-Type: text/plain; charset=utf-8"* ]]
	[[ "$output" == *"Content-Length: 11"* ]]
	[[ "$output" == *"ETag: \""* ]]
	[[ "$output" == *"Last-Modified: "*" GMT"* ]]
	[[ "$output" == *"Date: "*" GMT"* ]]
	[[ "$output" == *"Accept-Ranges: bytes"* ]]
}

@test "HEAD sends headers only" {
	run bash -c "printf 'HEAD /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | $RAW $PORT"
	[[ "$output" == *"Content-Length: 300000"* ]]
	[ "$(printf '%s' "$output" | wc -c)" -lt 1000 ]
}

@test "directory without slash redirects, with slash serves index.html" {
	run curl -si "$URL/dir?a=1"
	[[ "$output" == *"301 Moved Permanently"* ]]
	[[ "$output" == *"Location: /dir/?a=1"* ]]
	[ "$(curl -s "$URL/dir/")" = 'in dir' ]
}

@test "byte ranges: 206, suffix, open-ended, 416" {
	run curl -s -r 100-199 "$URL/big.bin"
	[ "$(printf '%s' "$output" | wc -c)" -ge 0 ]
	[ "$(curl -s -r 100-199 "$URL/big.bin" | sha256sum)" = "$(tail -c +101 "$ROOT/big.bin" | head -c 100 | sha256sum)" ]
	[ "$(curl -s -r -50 "$URL/big.bin" | sha256sum)" = "$(tail -c 50 "$ROOT/big.bin" | sha256sum)" ]
	[ "$(curl -s -r 299990- "$URL/big.bin" | sha256sum)" = "$(tail -c 10 "$ROOT/big.bin" | sha256sum)" ]
	run curl -si -r 100-199 "$URL/big.bin"
	[[ "$output" == *"206 Partial Content"* ]]
	[[ "$output" == *"Content-Range: bytes 100-199/300000"* ]]
	run curl -si -r 400000-500000 "$URL/big.bin"
	[[ "$output" == *"416 Range Not Satisfiable"* ]]
	[[ "$output" == *"Content-Range: bytes */300000"* ]]
}

@test "conditional requests give 304" {
	etag=$(curl -sI "$URL/small.txt" | tr -d '\r' | sed -n 's/^ETag: //p')
	lm=$(curl -sI "$URL/small.txt" | tr -d '\r' | sed -n 's/^Last-Modified: //p')
	[ "$(code -H "If-None-Match: $etag" "$URL/small.txt")" = 304 ]
	[ "$(code -H "If-None-Match: \"other\", $etag" "$URL/small.txt")" = 304 ]
	[ "$(code -H 'If-None-Match: "other"' "$URL/small.txt")" = 200 ]
	[ "$(code -H "If-Modified-Since: $lm" "$URL/small.txt")" = 304 ]
	[ "$(code -H 'If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT' "$URL/small.txt")" = 200 ]
	# A changed file is noticed: new validators, new body.
	sleep 1.1
	printf 'changed!!!!\n' > "$ROOT/small.txt"
	[ "$(code -H "If-None-Match: $etag" "$URL/small.txt")" = 200 ]
	[ "$(curl -s "$URL/small.txt")" = 'changed!!!!' ]
}

@test "keep-alive and pipelining answer every request in order" {
	req='GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /dir/ HTTP/1.1\r\nHost: x\r\n\r\nHEAD /big.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	run bash -c "printf '$req' | $RAW $PORT"
	[ "$status" -eq 0 ]   # closed after the last one
	[ "$(printf '%s' "$output" | grep -c '^HTTP/1.1 ')" -eq 4 ]
	[[ "$(printf '%s' "$output" | grep '^HTTP/1.1 ' | tr -d '\r' | tr '\n' ,)" == "HTTP/1.1 200 OK,HTTP/1.1 200 OK,HTTP/1.1 200 OK,HTTP/1.1 404 Not Found," ]]
	[[ "$output" == *"small file"*"in dir"* ]]
}

@test "a burst of pipelined requests far beyond the input buffer, read late, is answered in order, byte for byte" {
	# 400 requests (about 600 KB of heads) against a client that starts
	# reading only after half a second: the server must stop reading and
	# resume, more than once, in the middle of requests -- on the epoll
	# loop and on the io_uring loop, where the ring receive is cancelled
	# while bytes are still on their way (conn_ring.c).
	run python3 "$BATS_TEST_DIRNAME/helpers/pipeflood.py" "$PORT" "$ROOT" 400
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 400" ]
}

@test "HTTP/1.0 closes unless keep-alive is asked" {
	run bash -c "printf 'GET /small.txt HTTP/1.0\r\n\r\n' | $RAW $PORT"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Connection: close"* ]]
	run bash -c "printf 'GET /small.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n' | $RAW $PORT --wait 1"
	[ "$status" -eq 3 ]   # still open
	[[ "$output" == *"Connection: keep-alive"* ]]
}

@test "path traversal and symlinks out of the root are refused" {
	for p in '/../outside.txt' '/%2e%2e/outside.txt' '/dir/../../outside.txt' \
		 '/%2e%2e%2foutside.txt' '/dir/%2e./%2e./outside.txt' '/a%00b'; do
		# %s: the path's own % signs must reach the server untouched.
		run bash -c "printf 'GET %s HTTP/1.1\r\nHost: x\r\n\r\n' '$p' | $RAW $PORT"
		[[ "$output" == "HTTP/1.1 400 "* ]]
		[[ "$output" != *secret* ]]
	done
	[ "$(code "$URL/escape.txt")" = 403 ]
	[[ "$(curl -s "$URL/escape.txt")" != *secret* ]]
}

@test "without openat2 (seccomp ENOSYS) files are served and no symlink is followed" {
	stop_server
	cc -O2 -o "$BATS_TEST_TMPDIR/no_openat2" "$BATS_TEST_DIRNAME/helpers/no_openat2.c"
	SERVER_WRAPPER="$BATS_TEST_TMPDIR/no_openat2" start_server
	[ "$(curl -s "$URL/")" = '<h1>index</h1>' ]
	[ "$(curl -s "$URL/dir/")" = 'in dir' ]
	[ "$(curl -s "$URL/big.bin" | sha256sum)" = "$(sha256sum < "$ROOT/big.bin")" ]
	[ "$(code "$URL/missing")" = 404 ]
	[ "$(code "$URL/dir/missing/x")" = 404 ]
	[ "$(code "$URL/small.txt/x")" = 404 ]
	[ "$(code "$URL/escape.txt")" = 403 ]
	[[ "$(curl -s "$URL/escape.txt")" != *secret* ]]
	ln -s "$BATS_TEST_TMPDIR" "$ROOT/outdir"
	[ "$(code "$URL/outdir/outside.txt")" = 403 ]
	# Stricter than RESOLVE_BENEATH: a link that stays inside is refused too.
	[ "$(code "$URL/inside-link.txt")" = 403 ]
}

@test "malformed, oversized and unsupported requests get 4xx/5xx and a close" {
	run bash -c "printf 'GARBAGE\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 400 "* ]]; [ "$status" -eq 0 ]
	run bash -c "printf 'GET / HTTP/1.1\r\n\r\n' | $RAW $PORT"             # no Host
	[[ "$output" == "HTTP/1.1 400 "* ]]
	run bash -c "printf 'GET / HTTP/2.0\r\nHost: x\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 505 "* ]]
	run bash -c "printf 'DELETE / HTTP/1.1\r\nHost: x\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 405 "* ]]; [[ "$output" == *"Allow: GET, HEAD"* ]]
	run bash -c "printf 'BREW / HTTP/1.1\r\nHost: x\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 501 "* ]]
	run bash -c "printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 400 "* ]]
	run bash -c "printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\nabc' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 413 "* ]]; [[ "$output" == *"Connection: close"* ]]
	run bash -c "printf 'GET /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 200 "* ]]; [[ "$output" == *"Connection: close"* ]]
	long=$(head -c 9000 /dev/zero | tr '\0' a)
	run bash -c "printf 'GET /$long HTTP/1.1\r\nHost: x\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 414 "* ]]
	many=$(for i in $(seq 120); do printf 'X-H%d: v\\r\\n' "$i"; done)
	run bash -c "printf 'GET / HTTP/1.1\r\nHost: x\r\n$many\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 431 "* ]]
	# The server is still fine.
	[ "$(code "$URL/")" = 200 ]
}

@test "status endpoint reports counters as JSON and Prometheus text" {
	curl -s "$URL/small.txt" >/dev/null
	run curl -s "$URL/.zc/status"
	[[ "$output" == *'"requests":'* ]]
	[[ "$output" == *'"bytes_by_reference":'* ]]
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["requests"] >= 1 and d["workers"] == 2' "$output"
	run curl -s "$URL/.zc/status?format=prometheus"
	[[ "$output" == *"zchttpd_requests_total "* ]]
}

# A miss waits for a helper thread and resumes where it stopped: one
# lookup, one miss, whatever waited in between (with and without helpers).
@test "a cache miss is counted once; the next request is a hit" {
	for threads in 2 0; do
		teardown
		start_server --workers 1 --io-threads "$threads"
		counts() {
			curl -s "$URL/.zc/status" | python3 -c 'import json,sys; c=json.load(sys.stdin)["cache"]; print(c["misses"], c["hits"])'
		}
		read -r m0 h0 < <(counts)
		[ "$(curl -s "$URL/dir/")" = 'in dir' ]
		read -r m1 h1 < <(counts)
		[ "$((m1 - m0))" -eq 1 ]
		[ "$((h1 - h0))" -eq 0 ]
		[ "$(curl -s "$URL/dir/")" = 'in dir' ]
		read -r m2 h2 < <(counts)
		[ "$((m2 - m1))" -eq 0 ]
		[ "$((h2 - h1))" -eq 1 ]
	done
}

@test "access log has Combined Log Format lines" {
	curl -s -A 'agent "quoted"' -e http://ref/ "$URL/small.txt" >/dev/null
	stop_server
	run grep 'GET /small.txt' "$BATS_TEST_TMPDIR/access.log"
	[[ "$output" =~ ^127\.0\.0\.1\ -\ -\ \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8}\ \+0000\]\ \"GET\ /small.txt\ HTTP/1.1\"\ 200\ [0-9]+\ \"http://ref/\"\ \"agent\ \\x22quoted\\x22\"$ ]]
}

@test "the access log's bytes are the body's, as Combined Log Format means them" {
	size=$(stat -c %s "$ROOT/small.txt")
	curl -s "$URL/small.txt" >/dev/null
	curl -sI "$URL/small.txt" >/dev/null
	curl -s "$URL/no-such-file" >/dev/null
	stop_server
	grep -q "\"GET /small.txt HTTP/1.1\" 200 $size " "$BATS_TEST_TMPDIR/access.log"
	grep -q '"HEAD /small.txt HTTP/1.1" 200 0 ' "$BATS_TEST_TMPDIR/access.log"
	# an error page's body: the page, not its head
	grep -qE '"GET /no-such-file HTTP/1.1" 404 [0-9]+ ' "$BATS_TEST_TMPDIR/access.log"
	n=$(grep '"GET /no-such-file' "$BATS_TEST_TMPDIR/access.log" | head -1 | awk '{print $10}')
	[ "$n" -gt 0 ] && [ "$n" -lt 200 ]
}

@test "slow headers time out with 408 (slowloris)" {
	teardown
	start_server --header-timeout 500
	run bash -c "printf 'GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n' | $RAW $PORT --drip 0.05 --wait 4"
	[[ "$output" == "HTTP/1.1 408 "* ]]
	[ "$(code "http://127.0.0.1:$PORT/")" = 200 ]
}

@test "idle keep-alive connections are closed after the timeout" {
	teardown
	start_server --keepalive-timeout 300
	run bash -c "printf 'GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n' | $RAW $PORT --wait 3"
	[ "$status" -eq 0 ]    # closed by the server well before 3 s
	[[ "$output" == *"small file"* ]]
}

@test "silent and late clients: deferred accept still serves and times out" {
	teardown
	start_server --header-timeout 800 --keepalive-timeout 800
	# Connects, says nothing: accepted after the defer period, then closed
	# by the server (idle or header timeout), not held forever.  Sends a
	# request 1.5 s after connecting on a second socket: still answered.
	run python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
silent = socket.create_connection(("127.0.0.1", port))
late = socket.create_connection(("127.0.0.1", port))
time.sleep(1.5)
late.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
late.settimeout(5)
data = b""
while True:
    c = late.recv(4096)
    if not c:
        break
    data += c
assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"small file\n"), data
silent.settimeout(10)
t = time.monotonic()
assert silent.recv(4096) == b"", "the silent connection got data"
print("late ok, silent closed after %.1fs" % (time.monotonic() - t))
PY
	[ "$status" -eq 0 ]
	[[ "$output" == "late ok, silent closed"* ]]
}

@test "graceful shutdown finishes a response in flight" {
	# A slow reader: the 300 KB response cannot leave at once.
	python3 - "$PORT" "$BATS_TEST_TMPDIR/sent" > "$BATS_TEST_TMPDIR/slow.out" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.3)            # the server is now blocked on our full window
open(sys.argv[2], "w").close()
time.sleep(0.5)
data = b""
while True:
    time.sleep(0.01)
    c = s.recv(8192)
    if not c:
        break
    data += c
body = data.split(b"\r\n\r\n", 1)[1]
sys.stdout.write("%d\n" % len(body))
PY
	reader=$!
	for _ in $(seq 100); do [ -e "$BATS_TEST_TMPDIR/sent" ] && break; sleep 0.05; done
	kill -TERM "$PID"
	wait "$reader"
	[ "$(cat "$BATS_TEST_TMPDIR/slow.out")" = 300000 ]
	wait "$PID"   # exits 0 on its own
	grep -q 'stopped' "$BATS_TEST_TMPDIR/server.err"
}

@test "bad command lines print usage and exit 2" {
	run "$ZCHTTPD"
	[ "$status" -eq 2 ]; [[ "$output" == *"--root DIR is required"* ]]
	run "$ZCHTTPD" --root /tmp --bogus
	[ "$status" -eq 2 ]; [[ "$output" == *"unknown option"* ]]
	run "$ZCHTTPD" --root /tmp --workers lots
	[ "$status" -eq 2 ]
	run "$ZCHTTPD" --root /tmp --listen nonsense
	[ "$status" -eq 2 ]
	run "$ZCHTTPD" --root /nonexistent --listen 127.0.0.1:1
	[ "$status" -eq 1 ]
	run "$ZCHTTPD" --help
	[ "$status" -eq 0 ]; [[ "$output" == *usage* ]]
}

@test "unified cache: evictions under a small budget keep every byte right" {
	teardown
	for i in $(seq 40); do head -c $((1000 + i * 997)) /dev/urandom > "$ROOT/f$i.bin"; done
	start_server --cache-size 64k --cache-small-max 16k --workers 1
	# A scan of 40 files, each followed by a hot one (f1): the scan keeps
	# evicting, f1 keeps hitting.
	for round in 1 2 3; do
		for i in $(seq 40); do
			[ "$(curl -s "http://127.0.0.1:$PORT/f$i.bin" | sha256sum)" = "$(sha256sum < "$ROOT/f$i.bin")" ]
			[ "$(curl -s "http://127.0.0.1:$PORT/f1.bin" | sha256sum)" = "$(sha256sum < "$ROOT/f1.bin")" ]
		done
	done
	run curl -s "http://127.0.0.1:$PORT/.zc/status"
	python3 -c 'import json,sys; c=json.loads(sys.argv[1])["cache"]; assert c["evictions"] > 0 and c["hits"] > 0 and c["bytes"] <= 65536, c' "$output"
}

# Bytes of FILE in the page cache.
resident() { fincore -n -b -o RES "$1" | tr -d ' '; }

# Write FILE's pages back and drop them from the page cache (a few tries:
# pages under writeback are not dropped); fails if the file system keeps
# them (tmpfs), so the test below runs on a real disk.
uncache() {
	local f ok
	for _ in $(seq 50); do
		python3 -c 'import os,sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
		ok=1
		for f in "$@"; do [ "$(resident "$f")" = 0 ] || ok=0; done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	fincore "$@"	# shown on failure
	return 1
}

# How many of FILES have pages in the page cache.
count_resident() {
	local n=0 f
	for f in "$@"; do [ "$(resident "$f")" -gt 0 ] && n=$((n + 1)); done
	echo "$n"
}

@test "page cache: the cache's policy decides which file data stays in memory with --page-cache policy, Linux's with --page-cache kernel (the default)" {
	teardown
	# On the disk the repository is on: /tmp may be tmpfs, whose pages
	# cannot be dropped.
	ROOT=$(mktemp -d "$BATS_TEST_DIRNAME/../build/pagecache.XXXXXX")
	CLEAN_DIR=$ROOT
	head -c 8000 /dev/urandom > "$ROOT/small.bin"
	head -c 40000 /dev/urandom > "$ROOT/big1.bin"
	head -c 40000 /dev/urandom > "$ROOT/big2.bin"
	echo '<h1>index</h1>' > "$ROOT/index.html"
	# Hashes first: reading the files here would bring their pages back.
	declare -A sum
	for f in small big1 big2; do sum[$f]=$(sha256sum < "$ROOT/$f.bin"); done
	uncache "$ROOT/small.bin" "$ROOT/big1.bin" "$ROOT/big2.bin"
	# 64 KiB holds one 40 KB file (charged its size) but not two.
	start_server --cache-size 64k --cache-small-max 16k --workers 1 --page-cache policy
	for f in small big1 big2; do
		[ "$(curl -s "$URL/$f.bin" | sha256sum)" = "${sum[$f]}" ]
	done
	# A small body comes into the cache's memory at its second request
	# (its first goes out by sendfile: a one-hit file is never copied).
	[ "$(curl -s "$URL/small.bin" | sha256sum)" = "${sum[small]}" ]
	# The small body lives once, in the cache's memory.  Of the two large files the
	# policy kept one; the other (evicted or refused) had its pages
	# dropped -- all of them once the client's socket let go of them
	# (page_drop.h's retries), which the kernel does not promise in time:
	# an ASan build was seen with a few still held 8 s later.  Nor does it
	# promise to keep the kept file whole: under a loaded CI run one of
	# its 10 pages was reclaimed.  So: the drop was made (the status
	# counts it), one file has no page left and the other has pages.
	read -r pol _ _ ev na _ _ < <(cache_status)
	[ $((ev + na)) -ge 1 ]
	[ "$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["dropped"])')" -ge 1 ]
	# small.bin's pages go when its body is in memory, as soon as the
	# socket that sent its first answer lets go of them.
	for _ in $(seq 30); do
		[ "$(count_resident "$ROOT/big1.bin" "$ROOT/big2.bin")" -eq 1 ] &&
			[ "$(resident "$ROOT/small.bin")" = 0 ] && break
		sleep 0.1
	done
	fincore "$ROOT/small.bin" "$ROOT/big1.bin" "$ROOT/big2.bin"; cache_status	# shown on failure
	[ "$(resident "$ROOT/small.bin")" = 0 ]
	r1=$(resident "$ROOT/big1.bin") r2=$(resident "$ROOT/big2.bin")
	{ [ "$r1" -eq 0 ] && [ "$r2" -gt 0 ]; } || { [ "$r2" -eq 0 ] && [ "$r1" -gt 0 ]; }
	[ "$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["page_cache"])')" = policy ]
	# Served again, byte for byte, whatever was dropped.
	for f in big1 big2 small; do
		[ "$(curl -s "$URL/$f.bin" | sha256sum)" = "${sum[$f]}" ]
	done
	stop_server

	# Linux's way, on files of their own: pages the first server sent may
	# stay referenced by the kernel for a while after it is gone.
	for f in small big1 big2; do
		cp "$ROOT/$f.bin" "$ROOT/k$f.bin"
		sum[k$f]=${sum[$f]}
	done
	uncache "$ROOT/ksmall.bin" "$ROOT/kbig1.bin" "$ROOT/kbig2.bin"
	start_server --cache-size 64k --cache-small-max 16k --workers 1	# kernel: the default
	for f in ksmall kbig1 kbig2; do
		[ "$(curl -s "$URL/$f.bin" | sha256sum)" = "${sum[$f]}" ]
	done
	sleep 1.2	# past the first retries policy mode would make
	[ "$(count_resident "$ROOT/ksmall.bin" "$ROOT/kbig1.bin" "$ROOT/kbig2.bin")" -eq 3 ]
	[ "$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["page_cache"])')" = kernel ]
	run "$ZCHTTPD" --root "$ROOT" --page-cache lru
	[ "$status" -eq 2 ]
}

# Bodies the cache has copied into memory, from the status endpoint.
bodies_loaded() {
	curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["bodies_loaded"])'
}

@test "which bodies are held in memory: those sent by copy under Linux's page cache, up to 64 KiB below 4 workers with --page-cache policy" {
	head -c 8000 /dev/urandom > "$ROOT/b8k.bin"
	head -c 40000 /dev/urandom > "$ROOT/b40k.bin"
	declare -A sum=([b8k]="$(sha256sum < "$ROOT/b8k.bin")" [b40k]="$(sha256sum < "$ROOT/b40k.bin")")
	# check WANT ARGS...: with ARGS, WANT bodies loaded after three
	# requests of each file.
	check() {
		local want=$1; shift
		teardown
		start_server --workers 1 "$@"
		for _ in 1 2 3; do
			for f in b8k b40k; do
				[ "$(curl -s "$URL/$f.bin" | sha256sum)" = "${sum[$f]}" ]
			done
		done
		loaded=$(bodies_loaded)
		[ "$loaded" = "$want" ] || { echo "$* loaded $loaded, want $want"; return 1; }
	}
	# Kernel (the default): 8 KB is sent with its head by copy, so held;
	# 40 KB leaves by sendfile from the page cache, so it is not copied in.
	check 1
	check 1 --page-cache kernel
	check 2 --page-cache policy
	# The held size follows --cache-copy-max unless set itself.
	check 2 --cache-copy-max 48k
	check 1 --cache-copy-max 48k --cache-small-max 16k
	check 0 --cache-small-max 0
}

@test "-t checks the options and the config file without starting, naming the file and line of an error" {
	run "$ZCHTTPD" -t --root "$ROOT"
	[ "$status" -eq 0 ]; [[ "$output" == *"the options are ok"* ]]
	printf 'root %s\nworkers 2\naccess-log %s\n' "$ROOT" "$BATS_TEST_TMPDIR/t.log" > "$BATS_TEST_TMPDIR/ok.conf"
	run "$ZCHTTPD" --check-config --config "$BATS_TEST_TMPDIR/ok.conf"
	[ "$status" -eq 0 ]; [[ "$output" == *"$BATS_TEST_TMPDIR/ok.conf"*"ok"* ]]
	printf 'root %s\n# fine\ncache-size lots\n' "$ROOT" > "$BATS_TEST_TMPDIR/bad.conf"
	run "$ZCHTTPD" -t --config "$BATS_TEST_TMPDIR/bad.conf"
	[ "$status" -eq 2 ]; [[ "$output" == *"$BATS_TEST_TMPDIR/bad.conf:3: "* ]]
	run "$ZCHTTPD" -t --root "$BATS_TEST_TMPDIR/nonexistent"
	[ "$status" -eq 1 ]
	run "$ZCHTTPD" -t --root "$ROOT" --access-log /nonexistent-dir/x.log
	[ "$status" -eq 1 ]
	run "$ZCHTTPD" -t --root "$ROOT" --user no-such-user-zc
	[ "$status" -eq 1 ]
	# -t on the running server's own address: a check does not bind.
	run "$ZCHTTPD" -t --root "$ROOT" --listen "127.0.0.1:$PORT"
	[ "$status" -eq 0 ]
}

@test "SIGUSR1 reopens the access log (logrotate): no line lost, new lines in the new file" {
	teardown
	log="$BATS_TEST_TMPDIR/access.log"
	start_server --workers 2
	for i in 1 2 3; do curl -s -o /dev/null "$URL/small.txt?before=$i"; done
	mv "$log" "$log.1"
	kill -USR1 "$PID"
	for _ in $(seq 50); do [ -e "$log" ] && break; sleep 0.05; done
	sleep 0.2	# both workers took the signal
	for i in 1 2 3 4 5 6; do curl -s -o /dev/null "$URL/small.txt?after=$i"; done
	# The workers flush before they sleep; give them a moment.
	for _ in $(seq 50); do [ "$(grep -c after= "$log" 2>/dev/null)" -ge 6 ] && break; sleep 0.05; done
	[ "$(grep -c 'before=' "$log.1")" -eq 3 ]
	[ "$(grep -c 'after=' "$log.1")" -eq 0 ]
	[ "$(grep -c 'after=' "$log")" -eq 6 ]
	[ "$(grep -c 'before=' "$log")" -eq 0 ]
	kill -0 "$PID"	# still serving
}

# cache counters and policy name from the status endpoint, one line.
cache_status() {
	curl -s "http://127.0.0.1:$PORT/.zc/status" | python3 -c 'import json,sys; c=json.load(sys.stdin)["cache"]; print(c["policy"], c["hits"], c["misses"], c["evictions"], c["not_admitted"], c["bytes"], c["entries"])'
}

@test "--cache-policy: every policy serves the same bytes and the status endpoint names it" {
	teardown
	for i in $(seq 30); do head -c $((1000 + i * 997)) /dev/urandom > "$ROOT/f$i.bin"; done
	for pol in gds1 gdsp gdsf gdsf-all lru; do
		start_server --cache-policy "$pol" --cache-size 64k --cache-small-max 16k --workers 1
		read -r _ h0 m0 _ < <(cache_status)	# start_server's probe of /
		for round in 1 2; do
			for i in $(seq 30); do
				[ "$(curl -s "http://127.0.0.1:$PORT/f$i.bin" | sha256sum)" = "$(sha256sum < "$ROOT/f$i.bin")" ]
			done
		done
		read -r name hits misses evictions not_admitted bytes entries < <(cache_status)
		echo "$pol: $hits $misses $evictions $not_admitted $bytes $entries"
		[ "$name" = "$pol" ]
		[ "$((hits + misses - h0 - m0))" -eq 60 ]	# one lookup per request
		[ "$((misses - m0))" -ge 30 ]	# the first round
		[ "$((evictions + not_admitted))" -gt 0 ]	# 64k cannot hold them all
		[ "$bytes" -le 65536 ] && [ "$entries" -gt 0 ]
		run curl -s "http://127.0.0.1:$PORT/.zc/status?format=prometheus"
		[[ "$output" == *"zchttpd_cache_policy_info{policy=\"$pol\"} 1"* ]]
		stop_server
	done
	start_server --workers 1
	read -r name _ < <(cache_status)
	[ "$name" = gdsf ]	# the default
}

# What tells the policies apart in the server: under gdsf a newcomer worth
# less than every cached entry is not admitted (it competes, as in
# libCacheSim); LRU admits every miss that fits.  A small body is charged
# 4608 bytes (512 + a 4 KiB pool buffer): index.html and thirteen small
# files, each requested twice (H 2/4608), fill 64512 of 65536 bytes; the
# newcomer's H, 1/4608, is below them all.  (A body the pool cannot hold is
# served from its file and charged 512 bytes only, so the newcomer is small.)
@test "--cache-policy gdsf turns away a newcomer that lru admits" {
	teardown
	for i in $(seq 14); do head -c 1000 /dev/urandom > "$ROOT/s$i.bin"; done
	for pol in gdsf lru; do
		start_server --cache-policy "$pol" --cache-size 64k --cache-small-max 16k --workers 1
		curl -s -o /dev/null "http://127.0.0.1:$PORT/"	# its second request
		for round in 1 2; do
			for i in $(seq 13); do curl -s -o /dev/null "http://127.0.0.1:$PORT/s$i.bin"; done
		done
		read -r _ _ _ ev0 na0 bytes entries < <(cache_status)
		[ "$ev0" -eq 0 ] && [ "$na0" -eq 0 ] && [ "$entries" -eq 14 ]
		[ "$(curl -s "http://127.0.0.1:$PORT/s14.bin" | sha256sum)" = "$(sha256sum < "$ROOT/s14.bin")" ]
		read -r _ _ _ ev1 na1 _ < <(cache_status)
		echo "$pol: evictions $ev0 -> $ev1, not admitted $na0 -> $na1"
		if [ "$pol" = gdsf ]; then
			[ "$na1" -eq 1 ] && [ "$ev1" -eq 0 ]
		else
			[ "$na1" -eq 0 ] && [ "$ev1" -eq 1 ]
		fi
		stop_server
	done
}

@test "--cache-policy: config file, and bad values exit 2 with usage" {
	teardown
	printf 'root %s\nworkers 1\ncache-policy lru\n' "$ROOT" > "$BATS_TEST_TMPDIR/p.conf"
	PORT=$(free_port)
	"$ZCHTTPD" --config "$BATS_TEST_TMPDIR/p.conf" --listen "127.0.0.1:$PORT" \
		2>"$BATS_TEST_TMPDIR/server.err" &
	PID=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
		sleep 0.05
	done
	read -r name _ < <(cache_status)
	[ "$name" = lru ]
	stop_server

	run "$ZCHTTPD" --root /tmp --cache-policy arc
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown cache policy 'arc' (known: gds1 gdsp gdsf gdsf-all lru)"* ]]
	[[ "$output" == *usage:* ]]
	run "$ZCHTTPD" --root /tmp --cache-policy=GDSF
	[ "$status" -eq 2 ]; [[ "$output" == *"unknown cache policy 'GDSF'"* ]]
	run "$ZCHTTPD" --root /tmp --cache-policy
	[ "$status" -eq 2 ]; [[ "$output" == *"needs a value"* ]]
	printf 'root /tmp\ncache-policy sieve\n' > "$BATS_TEST_TMPDIR/bad.conf"
	run "$ZCHTTPD" --config "$BATS_TEST_TMPDIR/bad.conf"
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown cache policy 'sieve'"* ]]
	[[ "$output" == *"bad.conf:2: "* ]]
}

@test "unified cache: replaced and deleted files are noticed within the TTL" {
	teardown
	start_server --cache-ttl 200 --workers 1
	[ "$(curl -s "$URL/small.txt")" = 'small file' ]
	printf 'new content\n' > "$ROOT/new.txt"
	mv "$ROOT/new.txt" "$ROOT/small.txt"      # replaced by rename, same size
	sleep 0.3
	[ "$(curl -s "http://127.0.0.1:$PORT/small.txt")" = 'new content' ]
	rm "$ROOT/small.txt"
	sleep 0.3
	[ "$(code "http://127.0.0.1:$PORT/small.txt")" = 404 ]
}

@test "without helper threads the loop serves the same bytes" {
	teardown
	start_server --io-threads 0
	[ "$(curl -s "$URL/big.bin" | sha256sum)" = "$(sha256sum < "$ROOT/big.bin")" ]
	[ "$(curl -s "$URL/dir/")" = 'in dir' ]
	[ "$(code "$URL/dir")" = 301 ]
	[ "$(code "$URL/missing")" = 404 ]
}

@test "many concurrent cache misses all get their own file" {
	for i in $(seq 60); do printf 'file %d\n' "$i" > "$ROOT/m$i.txt"; done
	pids=()
	for i in $(seq 60); do
		curl -s "$URL/m$i.txt" > "$BATS_TEST_TMPDIR/m$i.out" &
		pids+=($!)
	done
	wait "${pids[@]}"   # not a bare wait: the server is a job too
	for i in $(seq 60); do [ "$(cat "$BATS_TEST_TMPDIR/m$i.out")" = "file $i" ]; done
}

# Many misses of one file at once (wrk's first wave on a cold cache): the
# helpers' results come back in batches, and admitting the second entry
# replaces the first while the first response is not yet settled (a
# use-after-free once: the ASan run of this file is the real check).
@test "concurrent misses of the same file share it safely" {
	head -c 100000 /dev/urandom > "$ROOT/same.bin"
	for round in 1 2 3; do
		teardown
		start_server --workers 1
		run wrk -t1 -c64 -d1s "$URL/same.bin"
		[ "$status" -eq 0 ]
		[[ "$output" != *"Non-2xx"* ]]
		[[ "$output" != *"Socket errors"* ]]
		kill -0 "$PID"
	done
	[ "$(curl -s "$URL/same.bin" | sha256sum)" = "$(sha256sum < "$ROOT/same.bin")" ]
	! grep -q 'killed by signal' "$BATS_TEST_TMPDIR/server.err"
}

@test "config file: options, comments, later flags override, clear errors" {
	teardown
	cat > "$BATS_TEST_TMPDIR/zc.conf" <<CONF
# zchttpd test configuration
root $ROOT
workers 1          # one is enough here
status-path /stats
cache-size 1m
keepalive-timeout 300
CONF
	PORT=$(free_port)
	"$ZCHTTPD" --config "$BATS_TEST_TMPDIR/zc.conf" --listen "127.0.0.1:$PORT" \
		--status-path /status2 2>"$BATS_TEST_TMPDIR/server.err" &
	PID=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
		sleep 0.05
	done
	[ "$(curl -s "http://127.0.0.1:$PORT/small.txt")" = 'small file' ]
	# The flag after --config wins: /status2 serves, /stats is a file path.
	run curl -s "http://127.0.0.1:$PORT/status2"
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["workers"] == 1' "$output"
	[ "$(code "http://127.0.0.1:$PORT/stats")" = 404 ]
	# keepalive-timeout from the file: an idle connection is closed soon.
	run bash -c "printf 'GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n' | $RAW $PORT --wait 3"
	[ "$status" -eq 0 ]

	printf 'root /tmp\nworkers many\n' > "$BATS_TEST_TMPDIR/bad.conf"
	run "$ZCHTTPD" --config "$BATS_TEST_TMPDIR/bad.conf"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad value 'many' for 'workers'"* ]]
	[[ "$output" == *"bad.conf:2: "* ]]
	printf 'config %s\n' "$BATS_TEST_TMPDIR/zc.conf" > "$BATS_TEST_TMPDIR/nest.conf"
	run "$ZCHTTPD" --config "$BATS_TEST_TMPDIR/nest.conf"
	[ "$status" -eq 2 ]; [[ "$output" == *"do not nest"* ]]
	run "$ZCHTTPD" --config "$BATS_TEST_TMPDIR/missing.conf"
	[ "$status" -eq 2 ]; [[ "$output" == *"missing.conf: No such file"* ]]
}

@test "reload on SIGHUP keeps counters monotonic and serves the new config" {
	for _ in $(seq 20); do curl -s "$URL/small.txt" >/dev/null; done
	before=$(curl -s "$URL/.zc/status")
	kill -HUP "$PID"
	for _ in $(seq 100); do
		grep -q reloaded "$BATS_TEST_TMPDIR/server.err" && break
		sleep 0.05
	done
	grep -q reloaded "$BATS_TEST_TMPDIR/server.err"
	sleep 0.5    # the old generation drains and is reaped
	for _ in $(seq 5); do curl -s "$URL/small.txt" >/dev/null; done
	after=$(curl -s "$URL/.zc/status")
	python3 - "$before" "$after" <<'PY'
import json, sys
b, a = json.loads(sys.argv[1]), json.loads(sys.argv[2])
# 20 files + the status request before; 5 more + this status request after.
assert a["requests"] >= b["requests"] + 6, (b["requests"], a["requests"])
assert a["responses"]["2xx"] >= b["responses"]["2xx"] + 5
assert a["bytes_sent"] > b["bytes_sent"]
assert a["connections"]["total"] >= b["connections"]["total"] + 6
assert a["cache"]["hits"] + a["cache"]["misses"] >= b["cache"]["hits"] + b["cache"]["misses"] + 5
assert a["zero_copy"]["bytes_by_reference"] + a["zero_copy"]["bytes_copied"] >= \
       b["zero_copy"]["bytes_by_reference"] + b["zero_copy"]["bytes_copied"]
PY
}

@test "a client that stops reading is cut off after --send-timeout" {
	teardown
	head -c 33554432 /dev/urandom > "$ROOT/huge.bin"
	start_server --workers 1 --send-timeout 700
	python3 - "$PORT" <<'PY'
import json, socket, sys, time, urllib.request
port = int(sys.argv[1])
size = 33554432
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(2.5)  # read nothing for more than three send timeouts
st = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/.zc/status"))
assert st["connections"]["timeouts"] >= 1, st["connections"]
# Left open: at most the status request's own connection.
assert st["connections"]["open"] <= 1, st["connections"]
got = 0
s.settimeout(5)  # a connection still open fails here (socket.timeout)
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
except ConnectionResetError:
    pass
assert 0 < got < size, got  # what the kernel held, not the 32 MiB
PY
	# Everyone else is still served.
	[ "$(curl -s "$URL/small.txt")" = "small file" ]
}

@test "--max-conns: one connection over the limit is closed unanswered, then room again" {
	teardown
	start_server --workers 1 --max-conns 2
	python3 - "$PORT" <<'PY'
import json, socket, sys, time, urllib.request
port = int(sys.argv[1])
REQ = b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n"

def ask(s):
    s.settimeout(5)
    s.sendall(REQ)
    data = b""
    while not data.endswith(b"small file\n"):
        b = s.recv(4096)
        if not b:
            raise EOFError(data)
        data += b
    assert data.startswith(b"HTTP/1.1 200 "), data
    return data

held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
for s in held:
    ask(s)  # both accepted, answered, kept alive
extra = socket.create_connection(("127.0.0.1", port))
try:
    ask(extra)
    raise AssertionError("a third connection was served over --max-conns 2")
except (EOFError, ConnectionResetError):
    pass
extra.close()
held[0].close()
deadline = time.time() + 5
while True:  # room again once the server has seen the close
    s = socket.create_connection(("127.0.0.1", port))
    try:
        ask(s)
        break
    except (EOFError, ConnectionResetError):
        assert time.time() < deadline, "no room after a held connection closed"
        time.sleep(0.05)
    finally:
        s.close()
held[1].close()
time.sleep(0.3)
st = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/.zc/status"))
assert st["connections"]["refused"] >= 1, st["connections"]
PY
}

@test "--user drops every id after binding; a log only root may write still works" {
	teardown
	if [ "$(id -u)" != 0 ]; then
		# Not root: dropping is impossible and says so.
		run "$ZCHTTPD" --root "$ROOT" --listen "127.0.0.1:$(free_port)" --user nobody
		[ "$status" -eq 1 ]; [[ "$output" == *"--user nobody: Operation not permitted"* ]]
		return 0
	fi
	run "$ZCHTTPD" --root "$ROOT" --listen "127.0.0.1:$(free_port)" --user no-such-user-zc
	[ "$status" -eq 1 ]; [[ "$output" == *"--user no-such-user-zc: no such user"* ]]
	# A docroot nobody can read, and a log in a directory only root may write.
	PUB=$(mktemp -d /tmp/zc-user.XXXXXX)
	LOGDIR=$(mktemp -d /tmp/zc-log.XXXXXX)
	chmod 755 "$PUB"
	echo 'for nobody' > "$PUB/a.txt"; chmod 644 "$PUB/a.txt"
	echo 'root only' > "$PUB/secret.txt"; chmod 600 "$PUB/secret.txt"
	[ "$(stat -c '%a %U' "$LOGDIR")" = "700 root" ]
	ROOT="$PUB" start_server --user nobody --access-log "$LOGDIR/access.log"
	[ "$(curl -s "$URL/a.txt")" = "for nobody" ]
	[ "$(code "$URL/secret.txt")" = 403 ]
	uid=$(id -u nobody); gid=$(id -g nobody)
	for p in $PID $(pgrep -P "$PID"); do
		grep -q "^Uid:	$uid	$uid	$uid	$uid$" "/proc/$p/status"
		grep -q "^Gid:	$gid	$gid	$gid	$gid$" "/proc/$p/status"
		grep -Eq "^Groups:[[:space:]]*$" "/proc/$p/status"
	done
	[ "$(pgrep -P "$PID" | wc -l)" -eq 2 ]
	# A reload cannot reopen the root-only log as nobody: it keeps it.
	kill -HUP "$PID"
	for _ in $(seq 100); do
		grep -q reloaded "$BATS_TEST_TMPDIR/server.err" && break
		sleep 0.05
	done
	grep -q "keeping the access log open since start" "$BATS_TEST_TMPDIR/server.err"
	[ "$(curl -s "$URL/a.txt?after-reload")" = "for nobody" ]
	stop_server
	grep -q '"GET /a.txt HTTP/1.1" 200' "$LOGDIR/access.log"
	grep -q '"GET /a.txt?after-reload HTTP/1.1" 200' "$LOGDIR/access.log"
	[ "$(stat -c %U "$LOGDIR/access.log")" = root ]
	rm -rf "$PUB" "$LOGDIR"
}
