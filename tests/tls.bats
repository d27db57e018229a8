#!/usr/bin/env bats
# HTTPS (zchttpd --tls-listen): byte-exact bodies over TLS 1.2 and 1.3,
# keep-alive and pipelining, SNI, ALPN, session resumption across workers,
# certificate reload on SIGHUP, configuration errors, handshakes that fail
# or stall, request bodies to a FastCGI application, and the status
# endpoint's account of who encrypts the records.  curl and openssl
# s_client are the clients; tests/helpers/tlsclient.py does what they
# cannot (pipelining, resumption counts, a reset mid-body).

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

TLSC="python3 $BATS_TEST_DIRNAME/helpers/tlsclient.py"
OURS="$BATS_TEST_DIRNAME/../build/cgi"

setup_file() {
	local d=$BATS_FILE_TMPDIR
	# a.test (RSA, with a wildcard), b.test (ECDSA), a second a.test for
	# the reload test, and a key that belongs to neither.
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/a.key" -out "$d/a.crt" \
		-days 2 -subj /CN=a.test -addext 'subjectAltName=DNS:a.test,DNS:*.a.test' 2>/dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$d/b.key" -out "$d/b.crt" -days 2 -subj /CN=b.test \
		-addext 'subjectAltName=DNS:b.test' 2>/dev/null
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/a2.key" -out "$d/a2.crt" \
		-days 2 -subj '/CN=a.test/O=renewed' -addext 'subjectAltName=DNS:a.test' 2>/dev/null
	openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$d/other.key" 2>/dev/null
}

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT"
	echo hello > "$ROOT/a.txt"
	: > "$ROOT/empty.txt"
	head -c 16384 /dev/urandom > "$ROOT/record.bin"	# one record exactly, from memory
	head -c 100001 /dev/urandom > "$ROOT/mid.bin"	# above --cache-small-max: by extent
	head -c 3000001 /dev/urandom > "$ROOT/big.bin"	# many records
	cp "$BATS_FILE_TMPDIR/a.crt" "$BATS_TEST_TMPDIR/site.crt"
	cp "$BATS_FILE_TMPDIR/a.key" "$BATS_TEST_TMPDIR/site.key"
}

teardown() {
	stop_server
	check_sanitizers
}

tls_server() { # extra options...
	TPORT=$(free_port)
	start_server --tls-listen "127.0.0.1:$TPORT" "$@" || return 1
	TURL="https://127.0.0.1:$TPORT"
	wait_answer "$TURL/a.txt" -k
}

two_certs() {
	tls_server --tls-cert "$BATS_TEST_TMPDIR/site.crt" --tls-key "$BATS_TEST_TMPDIR/site.key" \
		--tls-cert "$BATS_FILE_TMPDIR/b.crt" --tls-key "$BATS_FILE_TMPDIR/b.key" "$@"
}

# The subject of the certificate the server presents for NAME ("" = no SNI).
subject() { # NAME
	local sni=(-servername "$1")
	[ -n "$1" ] || sni=(-noservername)
	openssl s_client -connect "127.0.0.1:$TPORT" "${sni[@]}" </dev/null 2>/dev/null |
		sed -n 's/^subject=//p'
}

status_json() { curl -s "$URL/.zc/status"; }

@test "HTTPS bodies are byte-exact at 0 B, one record and across many, on TLS 1.2 and 1.3; HTTP still works" {
	two_certs
	for v in --tlsv1.2 --tlsv1.3; do
		for f in a.txt empty.txt record.bin mid.bin big.bin; do
			curl -sk "$v" --tls-max "${v#--tlsv}" -o "$BATS_TEST_TMPDIR/got" "$TURL/$f"
			cmp "$BATS_TEST_TMPDIR/got" "$ROOT/$f"
		done
	done
	# Twice from the cache, once more as a range.
	curl -sk -o "$BATS_TEST_TMPDIR/got" "$TURL/big.bin"
	cmp "$BATS_TEST_TMPDIR/got" "$ROOT/big.bin"
	[ "$(curl -sk -r 1000-1999 "$TURL/big.bin" | cmp - <(tail -c +1001 "$ROOT/big.bin" | head -c 1000) && echo same)" = same ]
	[ "$(curl -s "$URL/a.txt")" = hello ]
	# The same server on plain HTTP and HTTPS: the status page says how the
	# records were encrypted and counts what was encrypted here.
	run status_json
	echo "$output"
	[[ "$output" == *"\"tls\":{\"listen\":\"127.0.0.1:$TPORT\""* ]]
	python3 - "$output" <<'PY'
import json, sys
t = json.loads(sys.argv[1])["tls"]
assert t["handshakes"] >= 12, t
assert t["failed"] == 0, t
assert t["kernel_send"] + t["user_send"] == t["handshakes"], t
ulp = open("/proc/sys/net/ipv4/tcp_available_ulp").read().split()
if "tls" not in ulp:   # this host: the records are ours
    assert t["records"].startswith("user"), t
    assert t["kernel_send"] == 0 and t["user_bytes"] > 2 * 3000001, t
PY
}

@test "keep-alive and pipelining over TLS: 600 requests in one write, every response in order and byte-exact" {
	two_certs
	# curl reuses one connection for several URLs.
	run curl -sk -w '%{num_connects}\n' -o /dev/null -o /dev/null -o /dev/null \
		"$TURL/a.txt" "$TURL/record.bin" "$TURL/mid.bin"
	[ "$output" = $'1\n0\n0' ]
	run $TLSC pipeline "$TPORT" "$ROOT" 600
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "pipelined 600 ok" ]
}

@test "SNI picks the certificate whose names match, wildcards included; others get the first" {
	two_certs
	[[ "$(subject b.test)" == *"CN = b.test"* ]]
	[[ "$(subject a.test)" == *"CN = a.test"* ]]
	[[ "$(subject www.a.test)" == *"CN = a.test"* ]]
	[[ "$(subject unknown.example)" == *"CN = a.test"* ]]
	[[ "$(subject '')" == *"CN = a.test"* ]]
	# And the right one serves the request.
	[ "$(curl -sk --resolve b.test:"$TPORT":127.0.0.1 "https://b.test:$TPORT/a.txt")" = hello ]
}

@test "ALPN: h2 is chosen when offered, in any order; http/1.1 alone; with --http2 off a client offering only h2 is refused; none is fine" {
	two_certs
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -alpn http/1.1,h2 </dev/null 2>&1"
	[[ "$output" == *"ALPN protocol: h2"* ]]
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -alpn http/1.1 </dev/null 2>&1"
	[[ "$output" == *"ALPN protocol: http/1.1"* ]]
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -alpn spdy/3 </dev/null 2>&1"
	[[ "$output" == *"no application protocol"* ]]
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT </dev/null 2>&1"
	[[ "$output" == *"No ALPN negotiated"* ]]
	[[ "$output" == *"Verify return code"* ]]
	stop_server
	two_certs --http2 off
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -alpn h2,http/1.1 </dev/null 2>&1"
	[[ "$output" == *"ALPN protocol: http/1.1"* ]]
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -alpn h2 </dev/null 2>&1"
	[[ "$output" == *"no application protocol"* ]]
	[ "$(curl -sk -o /dev/null -w '%{http_version}' "$TURL/a.txt")" = 1.1 ]
}

@test "protocols: TLS 1.0 and 1.1 refused, 1.2 with an ECDHE AEAD cipher, 1.3" {
	two_certs
	for old in -tls1 -tls1_1; do
		run bash -c "openssl s_client -connect 127.0.0.1:$TPORT $old </dev/null 2>&1"
		[[ "$output" != *"Cipher is ECDHE"* ]]
		[[ "$output" == *"Cipher is (NONE)"* || "$output" == *"alert"* || "$output" == *"no protocols available"* ]]
	done
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -tls1_2 </dev/null 2>&1"
	[[ "$output" == *"Protocol  : TLSv1.2"* ]]
	[[ "$output" =~ Cipher\ is\ ECDHE-(RSA|ECDSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305) ]]
	# Not negotiable even when asked for: CBC and plain RSA key exchange.
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -tls1_2 -cipher AES128-SHA:ECDHE-RSA-AES128-SHA </dev/null 2>&1"
	[[ "$output" == *"Cipher is (NONE)"* || "$output" == *"alert"* ]]
	run bash -c "openssl s_client -connect 127.0.0.1:$TPORT -tls1_3 </dev/null 2>&1"
	[[ "$output" == *"New, TLSv1.3, Cipher is TLS_"* ]]
}

@test "sessions resume across workers, with TLS 1.2 and with TLS 1.3 tickets" {
	two_certs
	run $TLSC resume "$TPORT" 1.3
	echo "$output"
	[ "$output" = "resumed 8 of 8 with TLSv1.3" ]
	run $TLSC resume "$TPORT" 1.2
	echo "$output"
	[ "$output" = "resumed 8 of 8 with TLSv1.2" ]
	run status_json
	python3 -c 'import json, sys; t = json.loads(sys.argv[1])["tls"]; assert t["resumed"] >= 16, t' "$output"
	run curl -s "$URL/.zc/status?format=prometheus"
	[[ "$output" =~ zchttpd_tls_handshakes_total\{result=\"resumed\"\}\ (1[6-9]|[2-9][0-9]) ]]
}

@test "SIGHUP reads renewed certificates; a broken one is refused and the old one goes on" {
	two_certs
	[[ "$(subject a.test)" != *renewed* ]]
	cp "$BATS_FILE_TMPDIR/a2.crt" "$BATS_TEST_TMPDIR/site.crt"
	cp "$BATS_FILE_TMPDIR/a2.key" "$BATS_TEST_TMPDIR/site.key"
	kill -HUP "$PID"
	for _ in $(seq 50); do
		[[ "$(subject a.test)" == *renewed* ]] && break
		sleep 0.1
	done
	[[ "$(subject a.test)" == *"O = renewed"* ]]
	# A key that does not match the certificate: refused, nothing changes.
	cp "$BATS_FILE_TMPDIR/other.key" "$BATS_TEST_TMPDIR/site.key"
	kill -HUP "$PID"
	for _ in $(seq 50); do
		grep -q 'reload refused' "$BATS_TEST_TMPDIR/server.err" && break
		sleep 0.1
	done
	grep -q 'TLS: .*site.key' "$BATS_TEST_TMPDIR/server.err"
	grep -q 'reload refused' "$BATS_TEST_TMPDIR/server.err"
	[[ "$(subject a.test)" == *"O = renewed"* ]]
	[ "$(curl -sk "$TURL/a.txt")" = hello ]
}

@test "configuration errors name the file and the reason, at start and with -t" {
	local d=$BATS_FILE_TMPDIR
	: > "$BATS_TEST_TMPDIR/server.err"	# no server runs here
	PORT=$(free_port)
	run "$ZCHTTPD" --root "$ROOT" --listen "127.0.0.1:$PORT" --tls-listen "127.0.0.1:$(free_port)" \
		--tls-cert "$d/missing.crt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"TLS: $d/missing.crt: "* ]]
	run "$ZCHTTPD" --root "$ROOT" --tls-listen "127.0.0.1:$(free_port)" \
		--tls-cert "$d/a.crt" --tls-key "$d/other.key" -t
	[ "$status" -eq 1 ]
	[[ "$output" == *"TLS: $d/other.key: the key does not match the certificate in $d/a.crt"* ]]
	run "$ZCHTTPD" --root "$ROOT" --tls-listen "127.0.0.1:1" -t
	[ "$status" -eq 1 ]
	[[ "$output" == *"--tls-listen needs a --tls-cert"* ]]
	run "$ZCHTTPD" --root "$ROOT" --tls-cert "$d/a.crt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--tls-cert without --tls-listen"* ]]
	run "$ZCHTTPD" --root "$ROOT" --tls-listen "127.0.0.1:1" --tls-key "$d/a.key"
	[ "$status" -eq 2 ]
	[[ "$output" == *"after its --tls-cert"* ]]
	run "$ZCHTTPD" --root "$ROOT" --tls-listen "127.0.0.1:1" --tls-cert "$d/a.crt" \
		--tls-key "$d/a.key" --tls-ciphers NOTACIPHER -t
	[ "$status" -eq 1 ]
	[[ "$output" == *"TLS: --tls-ciphers: "* ]]
	# A PEM with both the chain and the key needs no --tls-key.
	cat "$d/b.crt" "$d/b.key" > "$BATS_TEST_TMPDIR/both.pem"
	run "$ZCHTTPD" --root "$ROOT" --tls-listen "127.0.0.1:1" --tls-cert "$BATS_TEST_TMPDIR/both.pem" -t
	[ "$status" -eq 0 ]
}

@test "failed and stalled handshakes: plain HTTP, garbage, half a ClientHello, silence; the server goes on" {
	two_certs --header-timeout 1000
	# Plain HTTP to the HTTPS port: no answer in clear, a failed handshake.
	run bash -c "printf 'GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 5 $RAW $TPORT"
	[[ "$output" != *"200 OK"* ]]
	run bash -c "head -c 3000 /dev/urandom | timeout 5 $RAW $TPORT"
	# The first bytes of a ClientHello, then nothing; and nothing at all:
	# both are closed once the header timeout passes.
	python3 - "$TPORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
half = socket.create_connection(("127.0.0.1", port))
half.sendall(bytes.fromhex("160301020001"))
silent = socket.create_connection(("127.0.0.1", port))
start = time.time()
for s in (half, silent):
    s.settimeout(10)
    assert s.recv(100) == b"", "the server answered something"
assert time.time() - start < 8, "not closed by the header timeout"
PY
	[ "$(curl -sk "$TURL/a.txt")" = hello ]
	run status_json
	echo "$output"
	python3 -c 'import json, sys
j = json.loads(sys.argv[1])
assert j["tls"]["failed"] >= 2, j["tls"]
assert j["connections"]["timeouts"] >= 1, j["connections"]' "$output"
}

@test "a client that resets mid-download leaves the server serving" {
	two_certs
	for _ in 1 2 3; do
		run $TLSC cut "$TPORT" /big.bin
		[ "$output" = cut ]
	done
	curl -sk -o "$BATS_TEST_TMPDIR/got" "$TURL/big.bin"
	cmp "$BATS_TEST_TMPDIR/got" "$ROOT/big.bin"
}

@test "a slow reader with a small receive buffer: the socket fills in the middle of many records, every byte arrives" {
	two_certs
	# 12 MB is more than a socket's send buffer can grow to (tcp_wmem's
	# 4 MiB here), so the server's writes meet a full socket many times
	# (about 30 EAGAINs under strace), most of them part-way through the
	# records of one copy; mid.bin goes from the file, then the cache.
	head -c 12000001 /dev/urandom > "$ROOT/huge.bin"
	run $TLSC slow "$TPORT" "$ROOT" huge.bin mid.bin record.bin mid.bin huge.bin
	[ "$status" -eq 0 ]
	[ "$output" = "slow 5 ok" ]
	curl -sk -o "$BATS_TEST_TMPDIR/got" "$TURL/big.bin"
	cmp "$BATS_TEST_TMPDIR/got" "$ROOT/big.bin"
}

@test "request bodies reach a FastCGI application byte-exact over HTTPS, by length and chunked" {
	head -c 5000000 /dev/urandom > "$BATS_TEST_TMPDIR/body"
	LD_LIBRARY_PATH="$OURS" two_certs --max-body 10m \
		--fastcgi-spawn "/echo=zc:1:$OURS/apps/zcecho"
	for n in 0 1 16384 100000 5000000; do
		head -c "$n" "$BATS_TEST_TMPDIR/body" > "$BATS_TEST_TMPDIR/part"
		want="length $n sha256 $(sha256sum < "$BATS_TEST_TMPDIR/part" | cut -d' ' -f1)"
		got=$(curl -sk --data-binary @"$BATS_TEST_TMPDIR/part" "$TURL/echo" | head -2 | tr '\n' ' ')
		[ "$got" = "$want " ]
		got=$(curl -sk -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/part" \
			"$TURL/echo" | head -2 | tr '\n' ' ')
		[ "$got" = "$want " ]
	done
}
