#!/bin/bash
# tests/proxy/contract_checks.sh URL [DIR] - check that the HTTP server at
# URL (one of the apps straight, or a proxy in front of one) keeps the
# upstream contract of README.md, byte for byte.  DIR: scratch space
# (default: a temporary directory, removed afterwards; it needs ~110 MiB).
# Prints one line per check; exit status: the number of failures (max 100).
set -u
URL=$1
if [ $# -ge 2 ]; then D=$2; else D=$(mktemp -d); trap 'rm -rf "$D"' EXIT; fi
C=(curl -s --noproxy '*' --max-time 60)
FAILS=0

ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; FAILS=$((FAILS + 1)); }
expect() { # name expected actual
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: expected [$2], got [$3]"; fi
}
# N bytes of the /size pattern, generated as it goes.
pattern() { # n
	python3 -c '
import sys
p = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 1058	# 65596 bytes
n, off = int(sys.argv[1]), 0
while off < n:
    k = min(65536, n - off); s = off % 62
    sys.stdout.buffer.write(p[s:s + k]); off += k' "$1"
}
sha() { sha256sum | cut -d' ' -f1; }
field() { # name headers-file: values of a response field, one a line
	tr -d '\r' < "$2" | grep -i "^$1:" | cut -d: -f2- | sed 's/^ //'
}
code() { "${C[@]}" -o /dev/null -w '%{http_code}' "$@"; }

# GET /size/N, with Content-Length and ?chunked=1
for n in 0 1 61 62 63 65536 65537 1000000 $((100 << 20)); do
	want=$(pattern "$n" | sha)
	got=$("${C[@]}" -D "$D/h" "$URL/size/$n" | sha)
	expect "GET /size/$n: body" "$want" "$got"
	expect "GET /size/$n: Content-Length, Content-Type" "$n application/octet-stream" \
		"$(field content-length "$D/h") $(field content-type "$D/h")"
	got=$("${C[@]}" -D "$D/h" "$URL/size/$n?chunked=1" | sha)
	expect "GET /size/$n?chunked=1: body" "$want" "$got"
	expect "GET /size/$n?chunked=1: chunked, no Content-Length" "chunked " \
		"$(field transfer-encoding "$D/h") $(field content-length "$D/h")"
done
# the chunks as sent: several, none over 64 KiB
"${C[@]}" --raw "$URL/size/300000?chunked=1" > "$D/raw"
got=$(python3 -c '
import sys
b, sizes = open(sys.argv[1], "rb").read(), []
while True:
    i = b.index(b"\r\n"); n = int(b[:i], 16); sizes.append(n)
    if n == 0: break
    b = b[i + 2 + n + 2:]
print(len(sizes) >= 6 and max(sizes) <= 65536, sum(sizes))' "$D/raw")
expect "GET /size/300000?chunked=1: chunks of at most 64 KiB" "True 300000" "$got"
# HEAD: the head of a GET, no body bytes after it
got=$(python3 -c '
import socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
s = socket.create_connection((u.hostname, u.port), timeout=10)
s.sendall(b"HEAD /size/1000 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % u.netloc.encode())
b = b""
while d := s.recv(65536):
    b += d
head, _, rest = b.partition(b"\r\n\r\n")
cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
print(head.split(b" ")[1].decode(), cl[0].split(b":")[1].strip().decode() if cl else "-", len(rest))' "$URL")
expect "HEAD /size/1000: 200, Content-Length: 1000, no body" "200 1000 0" "$got"
t=$("${C[@]}" -o /dev/null -w '%{time_starttransfer}' "$URL/size/10?delay_ms=500")
expect "GET /size/10?delay_ms=500 waits" 1 "$(python3 -c "print(int($t >= 0.5))")"
expect "GET /size/x: 400" 400 "$(code "$URL/size/x")"

# POST or PUT /sha256
head -c $((1 << 20)) /dev/urandom > "$D/1m"
head -c $((100 << 20)) /dev/urandom > "$D/100m"
want1="$(sha < "$D/1m") 1048576"
expect "POST /sha256, 1 MiB, Content-Length" "$want1" "$("${C[@]}" --data-binary @"$D/1m" "$URL/sha256")"
expect "PUT /sha256, 1 MiB, Content-Length" "$want1" "$("${C[@]}" -T "$D/1m" "$URL/sha256")"
expect "POST /sha256, 1 MiB, chunked" "$want1" \
	"$("${C[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$D/1m" "$URL/sha256")"
expect "POST /sha256, 100 MiB, chunked" "$(sha < "$D/100m") $((100 << 20))" \
	"$("${C[@]}" -X POST -H 'Transfer-Encoding: chunked' -T "$D/100m" "$URL/sha256")"
expect "POST /sha256, empty" "$(sha < /dev/null) 0" "$("${C[@]}" -X POST "$URL/sha256")"
expect "GET /sha256: 405" 405 "$(code "$URL/sha256")"
rm -f "$D/100m"

# ANY /echo: PYTHON runs with d (the JSON), h (its headers), names (theirs)
echo_check() { # name PYTHON curl-args...
	local name=$1 test=$2 out
	shift 2
	"${C[@]}" -D "$D/h" "$@" > "$D/echo.json"
	if out=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
h = d["headers"]
names = [n for n, v in h]
'"$test" "$D/echo.json" 2>&1) && [ "$(field content-type "$D/h")" = application/json ]; then
		ok "$name"
	else
		fail "$name: $(cat "$D/echo.json") $out"
	fi
}
echo_check "PATCH /echo: method, raw target, fields in order, body length" '
assert d["method"] == "PATCH" and d["body_len"] == 5, d
assert d["path"] == "/echo/a%20b%2Fc?x=1&y=%41&z", d["path"]
assert ["x-one", "1"] in h and ["x-two", "two words"] in h and ["content-length", "5"] in h, h
assert names.index("x-one") < names.index("x-two"), names
assert h[names.index("host")][1].startswith("127.0.0.1:"), h
assert all(n == n.lower() for n in names), names' \
	-X PATCH -H 'X-One: 1' -H 'X-Two: two words' --data-binary hello "$URL/echo/a%20b%2Fc?x=1&y=%41&z"
echo_check "POST /echo, chunked body" '
assert d["method"] == "POST" and d["path"] == "/echo" and d["body_len"] == 1048576, d
assert ["transfer-encoding", "chunked"] in h, h' \
	-H 'Transfer-Encoding: chunked' --data-binary @"$D/1m" "$URL/echo"
echo_check "GET /echo, repeated field" '
assert d["method"] == "GET" and d["body_len"] == 0, d
v = [v for n, v in h if n == "x-rep"]
assert v in (["a", "b"], ["a,b"]), v' \
	-H 'X-Rep: a' -H 'X-Rep: b' "$URL/echo"

# GET /status/CODE
for c in 200 201 204 304 400 404 418 500 503; do
	body="status $c"
	case $c in 204 | 304) body="" ;; esac
	expect "GET /status/$c" "$c [$body]" \
		"$("${C[@]}" -o "$D/b" -w '%{http_code}' "$URL/status/$c") [$(cat "$D/b")]"
done
expect "GET /status/99: 400" 400 "$(code "$URL/status/99")"

# GET /set-cookie, unknown paths
"${C[@]}" -D "$D/h" -o "$D/b" "$URL/set-cookie"
expect "GET /set-cookie: two Set-Cookie fields" "a=1; Path=/|b=2; Path=/; HttpOnly|two cookies" \
	"$(field set-cookie "$D/h" | paste -sd'|')|$(cat "$D/b")"
expect "GET /nowhere: 404" "404 not found" \
	"$("${C[@]}" -o "$D/b" -w '%{http_code}' "$URL/nowhere") $(cat "$D/b")"

# keep-alive: three requests, one connection
expect "keep-alive: 3 requests on 1 connection" "1 0 0" \
	"$("${C[@]}" -o /dev/null -o /dev/null -o /dev/null -w '%{num_connects} ' \
		"$URL/size/100" "$URL/echo" "$URL/status/201" | xargs)"

[ "$FAILS" -gt 100 ] && FAILS=100
exit "$FAILS"
