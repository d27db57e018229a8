#!/usr/bin/env python3
"""Check bad_upstream.py straight, on raw sockets: each path answers the
bytes it promises, closes or keeps the connection as it promises, and the
--log file holds every request head as sent.

  python3 tests/proxy/check_bad_upstream.py PORT LOGFILE

One line per check; exit status: the number of failures.
"""
import hashlib
import re
import socket
import sys
import time

PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
port, log = int(sys.argv[1]), sys.argv[2]
sent_heads = []
failures = 0


def pattern(n):
    return (PATTERN * (n // 62 + 1))[:n]


def exchange(request, wait=1.0):
    """Send REQUEST (its heads are recorded for the log check); return
    (bytes received, how it ended: "closed", "reset" or "open")."""
    i = 0
    while (j := request.find(b"\r\n\r\n", i)) >= 0:
        head = request[i:j + 4]
        sent_heads.append(head)
        i = j + 4
        if b"chunked" in head:	# skip the chunked body of the examples
            i = request.index(b"0\r\n\r\n", i) + 5
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    s.settimeout(wait)
    got = b""
    try:
        while d := s.recv(65536):
            got += d
        end = "closed"
    except socket.timeout:
        end = "open"
    except ConnectionResetError:
        end = "reset"
    s.close()
    return got, end


def get(path, wait=1.0, extra=b""):
    return exchange(b"GET %s HTTP/1.1\r\nHost: upstream\r\n%s\r\n" % (path, extra), wait)


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok   " + name)
    else:
        print("FAIL %s %s" % (name, detail))
        failures += 1


def split(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), body


def dechunk(body):
    out = b""
    while True:
        line, _, body = body.partition(b"\r\n")
        n = int(line, 16)
        if n == 0:
            return out, body	# body: the trailer section
        out, body = out + body[:n], body[n + 2:]


r, end = get(b"/cl-te")
h, body = split(r)
check("/cl-te: both framings, then close",
      {b"Content-Length: 5", b"Transfer-Encoding: chunked"} <= set(h) and end == "closed", r)
r, end = get(b"/two-cl")
h, body = split(r)
check("/two-cl: two Content-Lengths, then close",
      {b"Content-Length: 5", b"Content-Length: 6"} <= set(h) and end == "closed", r)
r, end = get(b"/bad-chunk")
check("/bad-chunk: chunk size zz, then close", split(r)[1].startswith(b"zz\r\n") and end == "closed", r)
r, end = get(b"/bad-chunk?after=2")
check("/bad-chunk?after=2: 2 good chunks first",
      split(r)[1].startswith(b"5\r\nhello\r\n5\r\nhello\r\nzz\r\n") and end == "closed", r)
r, end = get(b"/huge-head")
h, body = split(r)
check("/huge-head: a 100 KiB field, then close",
      b"X-Huge: " + b"a" * 102400 in h and body == b"ok\n" and end == "closed", r[:100])
r, end = get(b"/obs-fold")
check("/obs-fold: a folded field, then close",
      b"\r\nX-Folded: first\r\n  second\r\n" in r and end == "closed", r)
r, end = get(b"/bare-cr")
check("/bare-cr: a bare CR in a value, then close", b"\r\nX-Bare: a\rb\r\n" in r and end == "closed", r)
for path, ends in ((b"/die-mid-body", ("closed",)), (b"/die-mid-body?rst=1", ("reset", "closed"))):
    r, end = get(path)
    h, body = split(r)
    check("%s: Content-Length 1000000, %s after %d bytes" % (path.decode(), end, len(body)),
          b"Content-Length: 1000000" in h and pattern(len(body)) == body and len(body) <= 100000
          and end in ends and (end != "closed" or len(body) == 100000), h)
r, end = get(b"/die-before-head")
check("/die-before-head: closed without a byte", r == b"" and end == "closed", r)
r, end = get(b"/hang", wait=1.5)
check("/hang: nothing, still open after 1.5 s", r == b"" and end == "open", r)
r, end = get(b"/close-delimited")
h, body = split(r)
check("/close-delimited: no length, 100000 bytes, close",
      h[0] == b"HTTP/1.1 200 OK" and not any(f.lower().startswith((b"content-length", b"transfer-encoding"))
                                             for f in h) and body == pattern(100000) and end == "closed", h)
r, end = get(b"/close-delimited?n=7")
check("/close-delimited?n=7", split(r)[1] == pattern(7) and end == "closed", r)
r, end = get(b"/http10")
check("/http10: HTTP/1.0 200, then close",
      r.startswith(b"HTTP/1.0 200 OK\r\n") and r.endswith(b"\r\n\r\nan HTTP/1.0 answer\n") and end == "closed", r)
r, end = get(b"/100-then-200")
check("/100-then-200: 103, 100, 200, connection kept",
      r.startswith(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                   b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") and r.endswith(b"\r\n\r\nfinal\n")
      and end == "open", r)
r, end = get(b"/trailers")
h, body = split(r)
data, trailer = dechunk(body)
check("/trailers: 100000 bytes in 3 chunks, X-Checksum trailer, connection kept",
      b"Transfer-Encoding: chunked" in h and data == pattern(100000) and body.startswith(b"1\r\n0\r\nffff\r\n")
      and trailer == b"X-Checksum: sha256=%s\r\nX-Trailer-Two: two\r\n\r\n"
      % hashlib.sha256(data).hexdigest().encode() and end == "open", trailer)
t = time.monotonic()
r, end = get(b"/slow-body")
took = time.monotonic() - t
check("/slow-body: 1 MiB in %.1f s, connection kept" % took,
      split(r)[1] == pattern(1 << 20) and took > 2.5 and end == "open")
r, end = exchange(b"GET /keepalive-count HTTP/1.1\r\nHost: u\r\n\r\n" * 2 +
                  b"GET /keepalive-count HTTP/1.1\r\nHost: u\r\nConnection: close\r\n\r\n")
check("/keepalive-count: 1, 2, 3 on one connection, close on Connection: close",
      re.findall(rb"\r\n\r\n(\d+)\n", r) == [b"1", b"2", b"3"]
      and end == "closed", r)
r, end = get(b"/conn-header")
h, body = split(r)
check("/conn-header: Connection: close, X-Private; X-Private: secret; then close",
      {b"Connection: close, X-Private", b"X-Private: secret", b"X-Public: visible"} <= set(h)
      and end == "closed", r)

req = b"GET /any/th%20ing?q=1 HTTP/1.1\r\nHost: upstream\r\nX-lower-Case:  spaced \r\nX-Dup: 1\r\nX-Dup: 2\r\n\r\n"
r, end = exchange(req)
h, body = split(r)
check("GET /any/th%20ing?q=1: the request head, byte for byte, connection kept",
      body == req and b"Content-Length: %d" % len(req) in h and end == "open", r)
req = (b"POST /upload HTTP/1.1\r\nHost: upstream\r\nTransfer-Encoding: chunked\r\n"
       b"Expect: 100-continue\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
r, end = exchange(req)
check("POST chunked with Expect: 100 Continue, then the head, body length and SHA-256",
      r.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") and b"X-Request-Body-Length: 7\r\n" in r
      and (b"X-Request-Body-Sha256: %s\r\n" % hashlib.sha256(b"abcdefg").hexdigest().encode()) in r
      and r.endswith(req[:req.index(b"\r\n\r\n") + 4]), r)
req = b"HEAD /x HTTP/1.1\r\nHost: u\r\n\r\n"
r, end = exchange(req)
check("HEAD /x: the head only", r.endswith(b"\r\n\r\n") and b"Content-Length: %d\r\n" % len(req) in r, r)

time.sleep(0.2)
logged = open(log, "rb").read()
ours = b"".join(sent_heads)
before = logged[:len(logged) - len(ours)]	# the probes of start_app (curl)
check("--log: all %d request heads, in order, byte for byte" % len(sent_heads),
      logged.endswith(ours) and all(x.startswith(b"GET /status/200 ") for x in before.split(b"\r\n\r\n")[:-1]),
      "%d bytes logged, %d sent" % (len(logged), len(ours)))
sys.exit(min(failures, 100))
