#!/usr/bin/env bats
# zchttpd as a reverse proxy, end to end: real upstream applications
# (tests/proxy/: a WSGI app under gunicorn, Node's http, Go's net/http, a
# WebSocket echo, and a raw upstream that misbehaves on purpose) behind the
# real server, curl and raw requests in front.

load helpers/leftovers

teardown_file() {
	check_leftovers
}

load helpers/server
load proxy/apps

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT"
	echo 'static page' > "$ROOT/static.txt"
	APPS=()
}

teardown() {
	stop_server
	for pid in "${APPS[@]}"; do
		stop_app "$pid"
	done
	check_sanitizers
}

# Start an application; its URL in the variable named by $3.
app() { # kind varname
	start_app "$1" "$BATS_TEST_TMPDIR" || return 1
	APPS+=("$APP_PID")
	printf -v "$2" '%s' "$APP_URL"
	printf -v "${2}_PORT" '%s' "$APP_PORT"
}

# The pattern bytes of /size/N (tests/proxy/README.md).
pattern() { # n
	python3 -c 'import sys
a = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
n = int(sys.argv[1])
sys.stdout.buffer.write((a * (n // 62 + 1))[:n])' "$1"
}

sha() { sha256sum | cut -d' ' -f1; }

# Bodies through the proxy are the app's, byte for byte, at sizes around
# every threshold (a read, the splice minimum, a pipe), by length and
# chunked, HTTP/1.1 and HTTP/1.0.
bodies_exact() { # url-prefix [curl options]
	local u=$1 n want
	shift
	for n in 0 1 1000 16383 16384 65535 65536 65537 262144 1048576 10485760; do
		want=$(pattern "$n" | sha)
		[ "$(curl -sf "$@" "$u/size/$n" | sha)" = "$want" ] ||
			{ echo "size $n differs"; return 1; }
		[ "$(curl -sf "$@" "$u/size/$n?chunked=1" | sha)" = "$want" ] ||
			{ echo "chunked size $n differs"; return 1; }
	done
	want=$(pattern 300000 | sha)
	[ "$(curl -sf --http1.0 "$@" "$u/size/300000?chunked=1" | sha)" = "$want" ]
}

@test "gunicorn (WSGI) behind the proxy: byte-exact bodies, by length and chunked" {
	app wsgi UP
	start_server --proxy "/=$UP"
	bodies_exact "$URL"
	# the document root is not served when a route takes every path
	[ "$(code "$URL/static.txt")" = 404 ]
}

@test "Node's http behind the proxy: byte-exact bodies, keep-alive reused" {
	app node UP
	start_server --proxy "/=$UP" --workers 1
	bodies_exact "$URL"
	run curl -s "$URL/.zc/status"
	[[ "$output" == *'"proxy"'* ]]
}

@test "Go's net/http behind the proxy: byte-exact bodies, 100 MB, HTTP/1.0" {
	app go UP
	start_server --proxy "/=$UP"
	bodies_exact "$URL"
	[ "$(curl -sf "$URL/size/104857600" | sha)" = "$(pattern 104857600 | sha)" ]
	# the large bodies went by splice, the small ones by copy
	run curl -s "$URL/.zc/status"
	[[ "$output" =~ \"spliced\":[1-9] ]]
	[[ "$output" =~ \"bytes_spliced\":[1-9][0-9]{8} ]]
	[[ "$output" =~ \"bytes_copied\":[1-9] ]]
}

@test "a route's path replaces its prefix; other paths stay static" {
	app node UP
	start_server --proxy "/api/=$UP/"
	run curl -sf "$URL/api/echo?x=1"
	[[ "$output" == *'"path": "/echo?x=1"'* || "$output" == *'"path":"/echo?x=1"'* ]]
	[ "$(curl -sf "$URL/static.txt")" = "static page" ]
}

@test "a 100 MiB chunked upload arrives whole (SHA-256), and a sized one" {
	app wsgi UP
	start_server --proxy "/=$UP" --max-body 200m
	f="$BATS_TEST_TMPDIR/up.bin"
	head -c 104857600 /dev/urandom > "$f"
	want="$(sha < "$f") 104857600"
	run curl -sf -H 'Transfer-Encoding: chunked' --data-binary @"$f" "$URL/sha256"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
	run curl -sf --data-binary @"$f" "$URL/sha256"
	[ "$output" = "$want" ]
	# over --max-body: 413 before anything goes upstream
	head -c 1000 /dev/zero > "$BATS_TEST_TMPDIR/small"
	stop_server
	start_server --proxy "/=$UP" --max-body 100
	[ "$(code --data-binary @"$BATS_TEST_TMPDIR/small" "$URL/sha256")" = 413 ]
}

@test "the intermediary's fields: hop-by-hop dropped, Via and X-Forwarded-* set" {
	app bad UP
	start_server --proxy "/=$UP"
	run curl -s -H 'Connection: X-Secret' -H 'X-Secret: no' -H 'Keep-Alive: 5' \
		-H 'TE: trailers' -H 'Proxy-Connection: keep-alive' -H 'X-Fine: yes' \
		-H 'X-Forwarded-For: 6.6.6.6' -H 'Forwarded: for=6.6.6.6' "$URL/echo-head"
	[[ "$output" == *"X-Fine: yes"* ]]
	[[ "$output" != *"X-Secret"* ]]
	[[ "$output" != *"Keep-Alive"* ]]
	[[ "$output" != *"TE: trailers"* ]]
	[[ "$output" != *"Proxy-Connection"* ]]
	[[ "$output" != *"6.6.6.6"* ]]		# untrusted: replaced
	[[ "$output" == *"X-Forwarded-For: 127.0.0.1"* ]]
	[[ "$output" == *"X-Forwarded-Proto: http"* ]]
	[[ "$output" == *"X-Forwarded-Host: 127.0.0.1:$PORT"* ]]
	[[ "$output" == *"Forwarded: for=127.0.0.1;host=\"127.0.0.1:$PORT\";proto=http"* ]]
	[[ "$output" == *"Via: 1.1 zchttpd"* ]]
	[[ "$output" == *"Host: 127.0.0.1:$PORT"* ]]
	# from a trusted address they are extended
	stop_server
	start_server --proxy "/=$UP" --proxy-trust 127.0.0.0/8
	run curl -s -H 'X-Forwarded-For: 192.0.2.7' "$URL/echo-head"
	[[ "$output" == *"X-Forwarded-For: 192.0.2.7, 127.0.0.1"* ]]
	# the response's Connection-named fields are dropped too
	run curl -si "$URL/conn-header"
	[[ "$output" == *"X-Public: visible"* ]]
	[[ "$output" != *"X-Private"* ]]
	[[ "$output" == *"Via: 1.1 zchttpd"* ]]
}

@test "upstream connections are kept and reused" {
	app bad UP
	start_server --proxy "/=$UP" --workers 1
	# (start_server's first request may have opened it)
	a=$(curl -s "$URL/keepalive-count")
	b=$(curl -s "$URL/keepalive-count")
	c=$(curl -s "$URL/keepalive-count")
	[ "$b" = $((a + 1)) ] && [ "$c" = $((a + 2)) ]
}

@test "smuggling: ambiguous request framing is refused before it reaches the upstream" {
	app bad UP
	start_server --proxy "/=$UP"
	log="$BATS_TEST_TMPDIR/bad_upstream.log"
	: > "$log"
	for req in \
		'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' \
		'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!' \
		'POST /x HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n' \
		'GET /x HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n' \
		'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n' \
		'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n' \
		'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n' \
		'G\x01T /x HTTP/1.1\r\nHost: a\r\n\r\n' \
		'GET /x\x7f HTTP/1.1\r\nHost: a\r\n\r\n' \
		'GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n' \
		'GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n'; do
		run bash -c "printf '$req' | $RAW $PORT"
		[[ "$output" == "HTTP/1.1 4"* || "$output" == "HTTP/1.1 5"* ]] ||
			{ echo "not refused: $req -> $output"; false; }
	done
	# the bad chunk's head may have gone (its framing is ours): nothing
	# else did, and no request line of the others
	run grep -c '^POST\|^GET\|^G' "$log"
	[ "$output" -le 1 ]
	! grep -q 'Transfer-Encoding: gzip\|zz' "$log"
}

@test "bad upstream responses are 502s and their connections are not reused" {
	app bad UP
	start_server --proxy "/=$UP" --workers 1 --proxy-max-fails 0
	for p in cl-te two-cl huge-head obs-fold bare-cr die-before-head; do
		[ "$(code "$URL/$p")" = 502 ] || { echo "$p"; false; }
	done
	grep -q 'bad response head' "$BATS_TEST_TMPDIR/server.err"
	# a bad chunk after the head cuts the response
	run curl -s -o /dev/null -w '%{http_code}' "$URL/bad-chunk?after=2"
	[ "$status" -ne 0 ]
	# the server still answers
	[ "$(curl -s "$URL/keepalive-count")" -ge 1 ]
}

@test "an upstream that dies mid-body cuts the client's response" {
	app bad UP
	start_server --proxy "/=$UP"
	for q in "" "?rst=1"; do
		run curl -s -o "$BATS_TEST_TMPDIR/cut" "$URL/die-mid-body$q"
		[ "$status" -eq 18 ]	# partial file: never taken as whole
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/cut")" -lt 1000000 ]
	done
}

@test "close-delimited, HTTP/1.0, interim 1xx, trailers, HEAD, 204 and 304 pass as they should" {
	app bad UP
	app node NODE
	start_server --proxy "/node/=$NODE/" --proxy "/=$UP"
	# close-delimited: whole, and chunked for an HTTP/1.1 client
	run curl -si "$URL/close-delimited?n=100000"
	[[ "$output" == *"Transfer-Encoding: chunked"* ]]
	[ "$(curl -s "$URL/close-delimited?n=100000" | sha)" = "$(pattern 100000 | sha)" ]
	[ "$(curl -s "$URL/http10" | wc -c)" -gt 0 ]
	run curl -si "$URL/100-then-200"
	[[ "$output" == *"HTTP/1.1 103"* ]]
	[[ "$output" == *"HTTP/1.1 200"* ]]
	# trailers pass through to an HTTP/1.1 client, and the body is whole
	run curl -s --raw "$URL/trailers"
	[[ "$output" == *"X-Trailer-Two: two"* ]]
	[ "$(curl -s "$URL/trailers" | sha)" = "$(pattern 100000 | sha)" ]
	run curl -sI "$URL/node/size/5000"
	[[ "$output" == *"Content-Length: 5000"* ]]
	[ "$(code "$URL/node/status/204")" = 204 ]
	[ "$(code "$URL/node/status/304")" = 304 ]
	# keep-alive survives them all: several requests on one connection
	run curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{num_connects}\n' \
		"$URL/node/status/204" "$URL/node/size/10" "$URL/node/status/304"
	[ "$(echo "$output" | paste -sd+ | bc)" = 1 ]
}

@test "Expect: 100-continue gets one 100 and the body goes through" {
	app wsgi UP
	start_server --proxy "/=$UP"
	head -c 200000 /dev/urandom > "$BATS_TEST_TMPDIR/b"
	want="$(sha < "$BATS_TEST_TMPDIR/b") 200000"
	run curl -s -H 'Expect: 100-continue' --data-binary @"$BATS_TEST_TMPDIR/b" "$URL/sha256"
	[ "$output" = "$want" ]
}

@test "a WebSocket echo through the proxy, both ways, large and fragmented" {
	app ws WS
	start_server --proxy "/=$WS"
	run "$PROXY_PY" "$BATS_TEST_DIRNAME/proxy/ws_client.py" "ws://127.0.0.1:$PORT/ws"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "HTTP/2 and HTTPS clients to HTTP/1.1 upstreams, byte-exact, 0 B to 100 MB" {
	app go UP
	openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
		-keyout "$BATS_TEST_TMPDIR/k.pem" -out "$BATS_TEST_TMPDIR/c.pem" 2>/dev/null
	TPORT=$(free_port)
	start_server --proxy "/=$UP" --max-body 10m --tls-listen "127.0.0.1:$TPORT" \
		--tls-cert "$BATS_TEST_TMPDIR/c.pem" --tls-key "$BATS_TEST_TMPDIR/k.pem"
	bodies_exact "$URL" --http2-prior-knowledge
	bodies_exact "https://127.0.0.1:$TPORT" -k --http1.1
	bodies_exact "https://127.0.0.1:$TPORT" -k --http2
	want=$(pattern 104857600 | sha)
	[ "$(curl -sf --http2-prior-knowledge "$URL/size/104857600" | sha)" = "$want" ]
	[ "$(curl -sfk --http2 "https://127.0.0.1:$TPORT/size/104857600" | sha)" = "$want" ]
	[ "$(curl -sfk --http1.1 "https://127.0.0.1:$TPORT/size/104857600" | sha)" = "$want" ]
	head -c 3000000 /dev/urandom > "$BATS_TEST_TMPDIR/b"
	want="$(sha < "$BATS_TEST_TMPDIR/b") 3000000"
	[ "$(curl -s --http2-prior-knowledge --data-binary @"$BATS_TEST_TMPDIR/b" "$URL/sha256")" = "$want" ]
	[ "$(curl -sk --http2 --data-binary @"$BATS_TEST_TMPDIR/b" "https://127.0.0.1:$TPORT/sha256")" = "$want" ]
}

@test "an upstream down is a 502 within the connect timeout; all down, 503; the other takes over" {
	app node UP
	DEAD=$(free_port)
	# one worker: each worker keeps its own account of failures
	start_server --workers 1 --proxy "/one/=http://127.0.0.1:$DEAD/" \
		--proxy "/two/=http://127.0.0.1:$DEAD/,$UP/"
	t0=$(date +%s%N)
	[ "$(code "$URL/one/status/200")" = 502 ]
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ]
	# taken out of service after that failure: 503 at once
	[ "$(code "$URL/one/status/200")" = 503 ]
	# a group with a live server: every request answered
	for i in $(seq 10); do
		[ "$(code "$URL/two/status/200")" = 200 ]
	done
	grep -q "out of service" "$BATS_TEST_TMPDIR/server.err"
}

@test "load balancing: round robin by weight, least-conn, hash affinity, backup" {
	app bad A
	app bad B
	app bad C
	start_server --workers 1 --proxy "/rr/=$A/ weight=3,$B/"
	for i in $(seq 8); do curl -s -o /dev/null "$URL/rr/x"; done
	run curl -s "$URL/.zc/status"
	# 3:1 by weight: 6 and 2
	[[ "$output" == *'"requests":6'* ]]
	[[ "$output" == *'"requests":2'* ]]
	stop_server
	start_server --workers 1 --proxy "/h/=$A/,$B/,$C/" --proxy-balance hash-uri
	first=$(for i in 1 2 3 4 5; do curl -s "$URL/h/keepalive-count?k=abc" >/dev/null; done; curl -s "$URL/.zc/status")
	# one server took all five
	[[ "$first" == *'"requests":5'* ]]
	stop_server
	start_server --workers 1 --proxy "/b/=$A/,$B/ backup"
	for i in $(seq 4); do curl -s -o /dev/null "$URL/b/x"; done
	run curl -s "$URL/.zc/status"
	[[ "$output" == *'"requests":4'* ]]	# all on the primary
	stop_app "${APPS[0]}"
	APPS=("${APPS[@]:1}")
	[ "$(code "$URL/b/x")" = 200 ]		# the backup answers
}

@test "active health checks take a server out and bring it back" {
	app bad A
	app node B
	start_server --workers 1 --proxy "/=$A/,$B/" --proxy-health /status/200 \
		--proxy-health-interval 100 --proxy-health-fall 2 --proxy-health-rise 2
	# A (the raw upstream) answers /status/200 with 200 too: both up
	sleep 0.5
	run curl -s "$URL/.zc/status"
	[[ "$output" != *'"down":1'* ]]
	stop_app "${APPS[0]}"
	APPS=("${APPS[@]:1}")
	sleep 0.6
	run curl -s "$URL/.zc/status"
	[[ "$output" == *'"down":1'* ]]
	# every request now goes to B without a failure
	for i in $(seq 6); do [ "$(code "$URL/status/200")" = 200 ]; done
	grep -q "out of service by health checks" "$BATS_TEST_TMPDIR/server.err"
}

@test "a slow client reading 100 MB keeps the proxy's memory bounded" {
	app go UP
	start_server --proxy "/=$UP" --workers 1
	wpid=$(pgrep -P "$PID" | head -1)
	run python3 - "$PORT" "$wpid" <<'EOF'
import hashlib, socket, sys, time
port, wpid = int(sys.argv[1]), sys.argv[2]
def rss():
    for line in open(f"/proc/{wpid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
n = 104857600
s.sendall(b"GET /size/%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % n)
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
h = hashlib.sha256()
got, peak, base = 0, 0, rss()
t = time.time()
while True:
    b = s.recv(65536)
    if not b:
        break
    h.update(b)
    got += len(b)
    if got % (8 << 20) < 65536:
        peak = max(peak, rss())
        time.sleep(0.01)   # slow: the proxy must wait for us
a = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
w = hashlib.sha256()
left = n
while left:
    k = min(left, 62 * 16384)
    w.update((a * 16384)[:k])
    left -= k
print(got, peak - base)
assert got == n, got
assert h.hexdigest() == w.hexdigest()
assert peak - base < 32 * 1024, f"worker grew by {peak - base} KiB"
EOF
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the access log names the body's bytes, the upstream and its time" {
	app node UP
	start_server --proxy "/=$UP"
	curl -s -o /dev/null "$URL/size/1000"
	curl -s -o /dev/null "$URL/nothing-here"
	sleep 0.3
	grep -q '"GET /size/1000 HTTP/1.1" 200 1000 ' "$BATS_TEST_TMPDIR/access.log"
	grep -q "upstream=127.0.0.1:$UP_PORT" "$BATS_TEST_TMPDIR/access.log"
}

@test "SIGTERM lets a proxied response in flight finish" {
	app bad UP
	start_server --proxy "/=$UP"
	curl -s "$URL/slow-body" > "$BATS_TEST_TMPDIR/slow" &
	cpid=$!
	sleep 0.5
	kill -TERM "$PID"
	wait "$cpid"
	[ "$(sha < "$BATS_TEST_TMPDIR/slow")" = "$(pattern 1048576 | sha)" ]
}

@test "100,000 proxied requests with upstreams killed and restarted at random: no worker lost, descriptors and memory back" {
	# (docs/proxy.md has the 1,000,000-request run: --requests 1000000)
	build_go_app "$BATS_TEST_TMPDIR"
	: > "$BATS_TEST_TMPDIR/server.err"	# (chaos.py checks its own)
	run python3 "$BATS_TEST_DIRNAME/proxy/chaos.py" "$ZCHTTPD" \
		"$BATS_TEST_TMPDIR/go_app" --requests 100000
	echo "$output"
	[ "$status" -eq 0 ]
}
