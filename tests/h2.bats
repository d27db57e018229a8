#!/usr/bin/env bats
# HTTP/2 in zchttpd: h2 over TLS (chosen by ALPN) and h2c with prior
# knowledge on the plain port.  curl --http2 / --http2-prior-knowledge for
# byte-exact bodies, ranges, conditional requests, HEAD, errors, FastCGI
# request bodies through DATA frames, the status endpoint and the access
# log; h2spec for conformance; tests/helpers/h2client.py for clients that
# misbehave (each abuse test checks that the connection is ended or
# bounded, that the worker's memory stays bounded, and that another client
# is still served meanwhile and after).

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

# Debian's hpack and hyperframe (python3-h2) are the system Python's.
H2C="/usr/bin/python3 $BATS_TEST_DIRNAME/helpers/h2client.py"
OURS="$BATS_TEST_DIRNAME/../build/cgi"

# h2spec where ci/deps.sh installs it: $(go env GOPATH)/bin, Go from PATH
# or /usr/local/go.
h2spec_path() {
	local go
	go=$(command -v go || echo /usr/local/go/bin/go)
	echo "$("$go" env GOPATH)/bin/h2spec"
}

setup_file() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$BATS_FILE_TMPDIR/site.key" \
		-out "$BATS_FILE_TMPDIR/site.crt" -days 2 -subj /CN=a.test \
		-addext 'subjectAltName=DNS:a.test' 2>/dev/null
}

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT"
	echo hello > "$ROOT/small.txt"
	: > "$ROOT/empty.txt"
	# The sizes tests/zchttpd.bats and tests/tls.bats use, and the edges
	# of a DATA frame (16 KiB) and of a stream's window (64 KiB).
	for n in 1 1997 16383 16384 16385 40000 65535 65536 100000 100001 300000 3000001; do
		head -c "$n" /dev/urandom > "$ROOT/b$n.bin"
	done
}

teardown() {
	stop_server
	if [ -f "$BATS_TEST_TMPDIR/apps" ]; then
		kill $(cat "$BATS_TEST_TMPDIR/apps") 2>/dev/null || true
	fi
	check_sanitizers
}

# Plain port (HTTP/1.1 and h2c) and TLS port (h2 by ALPN).
h2_server() { # extra options...
	TPORT=$(free_port)
	start_server --tls-listen "127.0.0.1:$TPORT" \
		--tls-cert "$BATS_FILE_TMPDIR/site.crt" --tls-key "$BATS_FILE_TMPDIR/site.key" "$@" || return 1
	TURL="https://127.0.0.1:$TPORT"
	wait_answer "$TURL/small.txt" -k
}

# curl over h2c or h2: C2 for h2c, T2 for h2 over TLS.
C2() { curl -s --http2-prior-knowledge "$@"; }
T2() { curl -sk --http2 "$@"; }

# The server's only worker (started with --workers 1).
worker_pid() {
	pgrep -P "$PID" zchttpd | head -1
}

# Another client is served, over HTTP/1.1 and h2c, within 5 s each.
served() {
	[ "$(curl -s --max-time 5 "$URL/small.txt")" = hello ] &&
		[ "$(C2 --max-time 5 "$URL/small.txt")" = hello ]
}

value() { # key output
	echo "$2" | sed -n "s/^$1 //p"
}

@test "h2 and h2c: byte-exact bodies at every size, from the disk and from the cache, on one connection and many" {
	h2_server
	for f in empty.txt small.txt "$ROOT"/b*.bin; do
		f=${f##*/}
		for pass in 1 2; do
			C2 -o "$BATS_TEST_TMPDIR/got" "$URL/$f"
			cmp "$BATS_TEST_TMPDIR/got" "$ROOT/$f"
			T2 -o "$BATS_TEST_TMPDIR/got" "$TURL/$f"
			cmp "$BATS_TEST_TMPDIR/got" "$ROOT/$f"
		done
	done
	# Which protocol answered.
	[ "$(C2 -o /dev/null -w '%{http_version}' "$URL/small.txt")" = 2 ]
	[ "$(T2 -o /dev/null -w '%{http_version}' "$TURL/small.txt")" = 2 ]
	# Many streams on one connection at once: curl multiplexes over TLS
	# (7.88's --parallel waits forever for a second stream with prior
	# knowledge); h2load does h2c, 10 streams at a time on 1 connection.
	local args=() f
	for f in "$ROOT"/b*.bin; do
		args+=(-o "$BATS_TEST_TMPDIR/m.${f##*/}" "$TURL/${f##*/}")
	done
	T2 --parallel --parallel-max 20 -w '%{num_connects}\n' "${args[@]}" > "$BATS_TEST_TMPDIR/connects"
	[ "$(paste -sd+ "$BATS_TEST_TMPDIR/connects" | bc)" -eq 1 ]
	for f in "$ROOT"/b*.bin; do
		cmp "$BATS_TEST_TMPDIR/m.${f##*/}" "$f"
	done
	run h2load -n 120 -c 1 -m 10 "$URL/b1997.bin" "$URL/b100000.bin" "$URL/b16385.bin"
	echo "$output"
	[[ "$output" == *"requests: 120 total, 120 started, 120 done, 120 succeeded, 0 failed, 0 errored"* ]]
	[[ "$output" == *"status codes: 120 2xx"* ]]
}

@test "h2 and h2c: ranges, conditional requests (304), HEAD, 404, 405" {
	h2_server
	local f=$ROOT/b300000.bin
	for u in "$URL" "$TURL"; do
		c=(curl -sk --http2-prior-knowledge)
		[ "$u" = "$TURL" ] && c=(curl -sk --http2)
		[ "$("${c[@]}" -r 100-199 "$u/b300000.bin" | sha256sum)" = "$(tail -c +101 "$f" | head -c 100 | sha256sum)" ]
		[ "$("${c[@]}" -r -500 "$u/b300000.bin" | sha256sum)" = "$(tail -c 500 "$f" | sha256sum)" ]
		[ "$("${c[@]}" -r 299000- "$u/b300000.bin" | sha256sum)" = "$(tail -c 1000 "$f" | sha256sum)" ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' -r 100-199 "$u/b300000.bin")" = 206 ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' -r 400000-500000 "$u/b300000.bin")" = 416 ]
		etag=$("${c[@]}" -I "$u/b300000.bin" | sed -n 's/^etag: //p' | tr -d '\r')
		lm=$("${c[@]}" -I "$u/b300000.bin" | sed -n 's/^last-modified: //p' | tr -d '\r')
		[ -n "$etag" ] && [ -n "$lm" ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code} %{size_download}' -H "If-None-Match: $etag" "$u/b300000.bin")" = "304 0" ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' -H "If-Modified-Since: $lm" "$u/b300000.bin")" = 304 ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' -H 'If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT' "$u/b300000.bin")" = 200 ]
		# HEAD: the length of the body, no body.
		run "${c[@]}" -I "$u/b300000.bin"
		[[ "$output" == "HTTP/2 200"* ]]
		[[ "$output" == *"content-length: 300000"* ]]
		[ "$("${c[@]}" -I -o /dev/null -w '%{size_download}' "$u/b300000.bin")" = 0 ]
		# No HTTP/1.1 connection fields in an HTTP/2 head.
		[[ "$output" != *"connection:"* ]] && [[ "$output" != *"keep-alive"* ]]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' "$u/nope.txt")" = 404 ]
		[ "$("${c[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$u/small.txt")" = 405 ]
	done
}

@test "status endpoint: per-protocol counters, 100 KB bodies over h2c copied from the file's mapping in 16 KiB frames; access log says HTTP/2.0" {
	h2_server
	for _ in 1 2 3 4 5; do
		C2 -o /dev/null "$URL/b100000.bin"
	done
	T2 -o /dev/null "$TURL/b100000.bin"
	curl -s -o /dev/null "$URL/small.txt"
	run C2 "$URL/.zc/status"
	echo "$output"
	python3 - "$output" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
p = s["protocols"]
h2 = p["h2"]
assert p["http/1.1"]["requests"] >= 1, p
# 6 bodies and the status request itself, over 1 TLS and 6 h2c connections.
assert h2["requests"] >= 7, h2
assert h2["tls"] >= 1 and h2["h2c"] >= 6, h2
assert h2["connections"] == h2["tls"] + h2["h2c"], h2
# The five 100 KB bodies over h2c went in 16 KiB frames (curl's frame
# size): copied from the file's mapping, one sendmsg for all of a body's
# frames, not a sendfile per frame (h2_conn.c, choose_data_path).
assert h2["bytes_copied"] >= 5 * 100000, h2
assert h2["bytes_by_reference"] < 100000, h2
PY
	run C2 "$URL/.zc/status?format=prometheus"
	[[ "$output" == *'zchttpd_protocol_requests_total{protocol="h2"}'* ]]
	[[ "$output" == *'zchttpd_protocol_connections_total{protocol="h2c"}'* ]]
	[[ "$output" == *'zchttpd_h2_zero_copy_bytes_total{how="copied"}'* ]]
	h2=$(echo "$output" | sed -n 's/^zchttpd_protocol_requests_total{protocol="h2"} //p')
	[ "$h2" -ge 8 ]
	stop_server	# the workers write their last lines
	grep -q '"GET /b100000.bin HTTP/2.0" 200 100000' "$BATS_TEST_TMPDIR/access.log"
	grep -q '"GET /small.txt HTTP/1.1" 200 ' "$BATS_TEST_TMPDIR/access.log"
}

@test "h2c: DATA frames of 1 MiB carry a file's pages by reference, 16 KiB ones copy them; both byte-exact" {
	h2_server --workers 1
	want=$(sha256sum "$ROOT/b3000001.bin" | cut -d' ' -f1)
	status_h2() { C2 "$URL/.zc/status" | python3 -c 'import json,sys; h=json.load(sys.stdin)["protocols"]["h2"]; print(h["bytes_by_reference"], h["bytes_copied"])'; }
	read -r ref0 copy0 < <(status_h2)
	run $H2C "$PORT" frames /b3000001.bin 1048576 3
	echo "$output"
	[ "$(value ended "$output")" = 3 ]
	[ "$(value sha256 "$output")" = "$want" ]
	# nghttp2 fills the frames the client allows (the stream's window
	# permitting): larger than 64 KiB, so by sendfile.
	[ "$(value largest_data_frame "$output")" -gt 65536 ]
	read -r ref1 copy1 < <(status_h2)
	echo "by reference $ref0 -> $ref1, copied $copy0 -> $copy1"
	[ $((ref1 - ref0)) -ge $((3 * 2900000)) ]
	run $H2C "$PORT" frames /b3000001.bin 16384 3
	echo "$output"
	[ "$(value ended "$output")" = 3 ]
	[ "$(value sha256 "$output")" = "$want" ]
	[ "$(value largest_data_frame "$output")" = 16384 ]
	read -r ref2 copy2 < <(status_h2)
	echo "by reference $ref1 -> $ref2, copied $copy1 -> $copy2"
	[ $((copy2 - copy1)) -ge $((3 * 3000001)) ]
	[ $((ref2 - ref1)) -lt 100000 ]
}

@test "h2c: a file that shrinks under a mapped copy cuts the stream, not the worker" {
	h2_server --workers 1
	head -c 64000000 /dev/urandom > "$ROOT/shrinks.bin"
	cp "$ROOT/shrinks.bin" "$BATS_TEST_TMPDIR/was"
	C2 -o /dev/null "$URL/shrinks.bin"	# cached, mapped by this worker
	w=$(worker_pid)
	# A reader too slow to take it all (socket buffers hold ~10 MB)
	# before the file shrinks under the copies from its mapping.
	C2 --limit-rate 4M -o "$BATS_TEST_TMPDIR/got" "$URL/shrinks.bin" &
	sleep 0.5
	truncate -s 20000 "$ROOT/shrinks.bin"
	wait $! || true
	# Cut short, and what came is the file's bytes as they were.
	size=$(stat -c %s "$BATS_TEST_TMPDIR/got")
	echo "got $size bytes"
	[ "$size" -lt 64000000 ]
	cmp -n "$size" "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/was"
	# The worker took EFAULT, not SIGBUS.
	[ "$(worker_pid)" = "$w" ]
	served
}

@test "FastCGI over h2 and h2c: request bodies through DATA frames byte-exact, responses back as DATA" {
	head -c 3000000 /dev/urandom > "$BATS_TEST_TMPDIR/body"
	LD_LIBRARY_PATH="$OURS" h2_server --max-body 10m \
		--fastcgi-spawn "/echo=zc:1:$OURS/apps/zcecho"
	for n in 0 1 16384 65535 65536 100000 3000000; do
		head -c "$n" "$BATS_TEST_TMPDIR/body" > "$BATS_TEST_TMPDIR/part"
		want="length $n sha256 $(sha256sum < "$BATS_TEST_TMPDIR/part" | cut -d' ' -f1)"
		got=$(C2 --data-binary @"$BATS_TEST_TMPDIR/part" "$URL/echo" | head -2 | tr '\n' ' ')
		[ "$got" = "$want " ]
		got=$(T2 --data-binary @"$BATS_TEST_TMPDIR/part" "$TURL/echo" | head -2 | tr '\n' ' ')
		[ "$got" = "$want " ]
	done
	# A body over --max-body is refused.
	head -c 11000000 /dev/zero > "$BATS_TEST_TMPDIR/big"
	[ "$(C2 -o /dev/null -w '%{http_code}' --data-binary @"$BATS_TEST_TMPDIR/big" "$URL/echo")" = 413 ]
	served
}

@test "h2spec: every case passes on h2 over TLS and on an h2c-only port" {
	H2SPEC=$(h2spec_path)
	[ -x "$H2SPEC" ]	# ci/deps.sh installs it
	h2_server
	run timeout 120 "$H2SPEC" -h 127.0.0.1 -p "$TPORT" -t -k -o 2
	echo "$output" | tail -30
	[[ "$output" == *"145 tests, 145 passed, 0 skipped, 0 failed"* ]]
	stop_server
	WAIT_CURL=--http2-prior-knowledge start_server --h2c-only
	run timeout 120 "$H2SPEC" -h 127.0.0.1 -p "$PORT" -o 2
	echo "$output" | tail -30
	[[ "$output" == *"145 tests, 145 passed, 0 skipped, 0 failed"* ]]
}

@test "h2spec on the shared plain port: every case but the invalid preface, which HTTP/1.1 answers there" {
	# A plain port that speaks both takes a first line that is not the
	# preface for HTTP/1.x and answers it (400), where h2spec wants the
	# connection closed without a word: --h2c-only does that (above).
	H2SPEC=$(h2spec_path)
	[ -x "$H2SPEC" ]
	start_server
	run timeout 120 "$H2SPEC" -h 127.0.0.1 -p "$PORT" -o 2
	echo "$output" | sed -n '/^Failures:/,$p'
	[[ "$output" == *"145 tests, 144 passed, 0 skipped, 1 failed"* ]]
	failures=$(echo "$output" | sed -n '/^Failures:/,$p')
	[[ "$failures" == *"2: Sends invalid connection preface"* ]]
	[ "$(echo "$failures" | grep -c '×')" -eq 1 ]
}

@test "graceful reload: GOAWAY NO_ERROR to an HTTP/2 connection, and its stream in flight is finished" {
	h2_server --workers 1
	run $H2C "$PORT" reload /b3000001.bin "$PID"
	echo "$output"
	[ "$(value data_before "$output")" -eq 65535 ]
	[ "$(value goaway_before_window "$output")" = NO_ERROR ]
	[ "$(value status "$output")" = 200 ]
	[ "$(value data_bytes "$output")" -eq 3000001 ]
	[ "$(value closed "$output")" = yes ]
	served
}

# ---------------------------------------------------------------- abuse
# Each: --workers 1 (the other client meets the same worker), h2c.  The
# worker's resident memory may grow by at most 32 MiB (twice that with
# ASan, whose redzones and quarantine hold freed memory for a while).

ASAN_FACTOR=1
[[ "$ZCHTTPD" == *asan* ]] && ASAN_FACTOR=2

rss_bounded() { # output [KiB]
	local before peak
	before=$(value rss_before_kib "$1")
	peak=$(value rss_peak_kib "$1")
	[ -n "$before" ] && [ "$before" -gt 0 ]
	[ $((peak - before)) -le $((${2:-32768} * ASAN_FACTOR)) ]
}

# The abuse runs in the background while another client is served.
abuse() { # h2client arguments...
	$H2C "$PORT" "$@" --pid "$(worker_pid)" > "$BATS_TEST_TMPDIR/abuse.out" 2>&1 &
	local a=$!
	sleep 0.3
	served || { kill $a; return 1; }
	wait $a
	cat "$BATS_TEST_TMPDIR/abuse.out"
}

@test "abuse: rapid reset (HEADERS then RST_STREAM, 100,000 streams) ends in GOAWAY ENHANCE_YOUR_CALM" {
	h2_server --workers 1
	run abuse rapid-reset 100000
	echo "$output"
	[ "$(value goaway "$output")" = ENHANCE_YOUR_CALM ]
	[ "$(value closed "$output")" = yes ]
	[ "$(value streams_sent "$output")" -lt 100000 ]
	rss_bounded "$output"
	served
}

@test "abuse: CONTINUATION flood (a head that never ends) is cut off" {
	h2_server --workers 1
	run abuse continuation 100000
	echo "$output"
	[ "$(value closed "$output")" = yes ]
	[ "$(value frames_sent "$output")" -lt 100000 ]
	goaway=$(value goaway "$output")
	# Which limit comes first depends on how the frames arrive: the
	# header list size (PROTOCOL_ERROR from nghttp2) or the count of
	# CONTINUATION frames (ENHANCE_YOUR_CALM).  A GOAWAY a reset
	# overtook reads as none.
	[[ "$goaway" =~ ^(PROTOCOL_ERROR|ENHANCE_YOUR_CALM|none)$ ]]
	rss_bounded "$output"
	served
}

@test "abuse: SETTINGS and PING floods end in GOAWAY ENHANCE_YOUR_CALM, read or not" {
	h2_server --workers 1
	for kind in ping settings; do
		for mode in "" --no-read; do
			run abuse flood "$kind" 100000 $mode
			echo "$kind $mode: $output"
			[ "$(value goaway "$output")" = ENHANCE_YOUR_CALM ]
			[ "$(value closed "$output")" = yes ]
			rss_bounded "$output"
		done
	done
	served
}

@test "abuse: an HPACK header-list bomb is refused (431) and the connection still serves" {
	h2_server --workers 1
	run abuse hpack-bomb
	echo "$output"
	[ "$(value status_1 "$output")" = 200 ]
	[ "$(value status_3 "$output")" = 431 ]
	[ "$(value status_5 "$output")" = 200 ]
	rss_bounded "$output"
	served
}

@test "abuse: a zero window never opened, and a client that never reads, are closed by --send-timeout" {
	h2_server --workers 1 --send-timeout 1000
	run abuse zero-window /b3000001.bin 20 8
	echo "$output"
	[ "$(value headers "$output")" -eq 20 ]
	[ "$(value data_bytes "$output")" -eq 0 ]
	[ "$(value closed "$output")" = yes ]
	rss_bounded "$output"
	run abuse no-read /b3000001.bin 20 4
	echo "$output"
	[ "$(value closed "$output")" = yes ]
	[ "$(value data_bytes "$output")" -lt $((20 * 3000001)) ]
	rss_bounded "$output"
	served
}

@test "abuse: 500 idle connections are held cheaply, then sent GOAWAY and closed by --h2-idle-timeout" {
	h2_server --workers 1 --h2-idle-timeout 2000
	run abuse idle 500 6
	echo "$output"
	[ "$(value open_after_preface "$output")" -eq 500 ]
	[ "$(value goaways "$output")" -eq 500 ]
	[ "$(value closed "$output")" -eq 500 ]
	# An idle connection holds its nghttp2 session and little more (no
	# input buffer, no frame chunks): 40 KiB each at most (about 20 here).
	rss_bounded "$output" $((500 * 40))
	served
}
