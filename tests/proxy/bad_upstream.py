#!/usr/bin/env python3
"""An HTTP/1.1 upstream that misbehaves on purpose, chosen by path, to test
a reverse proxy's defenses.  Raw sockets, one thread per connection.

  python3 tests/proxy/bad_upstream.py PORT [--log FILE]

--log FILE: every request head received is appended to FILE exactly as it
came (request line to the blank line), so a test can show that a smuggled
request never reached the upstream.  Requests are read leniently
(Transfer-Encoding: chunked wins over Content-Length, bare LF ends nothing):
whatever a proxy lets through shows up in the log as it was sent.
"Expect: 100-continue" gets "100 Continue" before the body is read.

Paths (the query string is ignored unless said):
  /cl-te            Content-Length: 5 and Transfer-Encoding: chunked, then close
  /two-cl           Content-Length: 5 and Content-Length: 6, then close
  /bad-chunk        chunked; "zz" as a chunk size (?after=N: N good chunks
                    of "hello" first), then close
  /huge-head        a 100 KiB X-Huge field, then close
  /obs-fold         a field folded onto a second line (obs-fold), then close
  /bare-cr          a field value holding a bare CR, then close
  /die-mid-body     Content-Length: 1000000, 100000 bytes, then close (FIN;
                    ?rst=1: RST)
  /die-before-head  reads the request, closes without a byte
  /hang             reads the request, never answers (holds the connection
                    until the peer closes it)
  /close-delimited  HTTP/1.1 200 with neither length nor chunking: 100000
                    pattern bytes (?n=N: N), then close
  /http10           HTTP/1.0 200, Content-Length, body, then close
  /100-then-200     103 Early Hints (a Link field), 100 Continue, then 200
  /trailers         chunked, 3 chunks (100000 pattern bytes), trailer fields
                    X-Checksum: sha256=<hex of the body> and X-Trailer-Two: two
  /slow-body        1 MiB of pattern bytes in 4 KiB pieces 10 ms apart (3 to 4 s)
  /keepalive-count  body "N\\n": N is the number of requests this TCP
                    connection has carried, this one included
  /conn-header      Connection: close, X-Private; X-Private: secret;
                    X-Public: visible; then close (a proxy must drop X-Private)
  anything else     200, the request head as received is the body
                    (application/octet-stream); X-Request-Body-Length and
                    X-Request-Body-Sha256 describe the request body as read
                    (after undoing chunking)
Every answer but the bad ones keeps the connection open, unless the request
said "Connection: close".  Pattern bytes are
the /size ones of README.md: byte i is
"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 62].
"""
import hashlib
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
MAX_HEAD = 1 << 20

log_file = None
log_lock = threading.Lock()


def pattern(n, off=0):
    reps = (off + n) // len(PATTERN) + 2
    return (PATTERN * reps)[off % len(PATTERN):][:n]


class Closed(Exception):
    """The peer went away or sent something we cannot frame."""


class Conn:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise Closed()
        self.buf += data

    def read_until(self, sep, limit):
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise Closed()
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, data):
        self.sock.sendall(data)


def parse_head(head):
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        raise Closed()
    fields = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields.append((name.strip().lower(), value.strip()))
    return parts[0], parts[1], fields


def field(fields, name):
    return [v for n, v in fields if n == name]


def read_body(c, fields):
    te = b",".join(field(fields, b"transfer-encoding")).lower()
    if b"chunked" in te:
        body = b""
        while True:
            line = c.read_until(b"\r\n", 4096)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise Closed()
            if size == 0:
                while c.read_until(b"\r\n", MAX_HEAD) != b"\r\n":
                    pass	# trailer fields
                return body
            body += c.read_exact(size)
            if c.read_exact(2) != b"\r\n":
                raise Closed()
    cl = field(fields, b"content-length")
    if cl:
        try:
            return c.read_exact(int(cl[0]))
        except ValueError:
            raise Closed()
    return b""


def simple(head_fields, body, status=b"200 OK"):
    head = b"HTTP/1.1 " + status + b"\r\n" + b"".join(f + b"\r\n" for f in head_fields)
    return head + b"\r\n" + body


# Each handler answers one request: c the connection, q its parsed query
# string (then the method, raw head and body).  True keeps the connection open.

def cl_te(c, q, *_):
    c.send(simple([b"Content-Length: 5", b"Transfer-Encoding: chunked"],
                  b"5\r\nhello\r\n0\r\n\r\n"))


def two_cl(c, q, *_):
    c.send(simple([b"Content-Length: 5", b"Content-Length: 6"], b"hello!"))


def bad_chunk(c, q, *_):
    good = int(q.get("after", ["0"])[0])
    c.send(simple([b"Transfer-Encoding: chunked"],
                  b"5\r\nhello\r\n" * good + b"zz\r\nhello\r\n0\r\n\r\n"))


def huge_head(c, q, *_):
    c.send(simple([b"X-Huge: " + b"a" * (100 << 10), b"Content-Length: 3"], b"ok\n"))


def obs_fold(c, q, *_):
    c.send(simple([b"X-Folded: first", b"  second", b"Content-Length: 3"], b"ok\n"))


def bare_cr(c, q, *_):
    c.send(simple([b"X-Bare: a\rb", b"Content-Length: 3"], b"ok\n"))


def die_mid_body(c, q, *_):
    c.send(simple([b"Content-Type: application/octet-stream", b"Content-Length: 1000000"],
                  pattern(100000)))
    if q.get("rst") == ["1"]:	# linger 0: close sends RST, not FIN
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.sock.close()


def die_before_head(c, q, *_):
    pass


def hang(c, q, *_):
    try:
        while c.sock.recv(65536):
            pass
    except OSError:
        pass


def close_delimited(c, q, *_):
    n = int(q.get("n", ["100000"])[0])
    c.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
    for off in range(0, n, 65536):
        c.send(pattern(min(65536, n - off), off))


def http10(c, q, *_):
    body = b"an HTTP/1.0 answer\n"
    c.send(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
           % (len(body), body))


def interim(c, q, *_):
    c.send(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
    c.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    c.send(simple([b"Content-Type: text/plain", b"Content-Length: 6"], b"final\n"))
    return True


def trailers(c, q, *_):
    body = pattern(100000)
    out = simple([b"Content-Type: application/octet-stream", b"Transfer-Encoding: chunked",
                  b"Trailer: X-Checksum, X-Trailer-Two"], b"")
    for a, b in ((0, 1), (1, 65536), (65536, len(body))):
        out += b"%x\r\n%s\r\n" % (b - a, body[a:b])
    digest = hashlib.sha256(body).hexdigest().encode()
    c.send(out + b"0\r\nX-Checksum: sha256=" + digest + b"\r\nX-Trailer-Two: two\r\n\r\n")
    return True


def slow_body(c, q, *_):
    n, piece = 1 << 20, 4096
    c.send(simple([b"Content-Type: application/octet-stream", b"Content-Length: %d" % n], b""))
    for off in range(0, n, piece):
        c.send(pattern(piece, off))
        time.sleep(0.01)
    return True


def keepalive_count(c, q, *_):
    body = b"%d\n" % c.count
    c.send(simple([b"Content-Type: text/plain", b"Content-Length: %d" % len(body)], body))
    return True


def conn_header(c, q, *_):
    c.send(simple([b"Connection: close, X-Private", b"X-Private: secret", b"X-Public: visible",
                   b"Content-Type: text/plain", b"Content-Length: 3"], b"ok\n"))


ROUTES = {
    "/cl-te": cl_te, "/two-cl": two_cl, "/bad-chunk": bad_chunk, "/huge-head": huge_head,
    "/obs-fold": obs_fold, "/bare-cr": bare_cr, "/die-mid-body": die_mid_body,
    "/die-before-head": die_before_head, "/hang": hang, "/close-delimited": close_delimited,
    "/http10": http10, "/100-then-200": interim, "/trailers": trailers,
    "/slow-body": slow_body, "/keepalive-count": keepalive_count, "/conn-header": conn_header,
}


def echo_head(c, q, method, head, body):
    c.send(simple([b"Content-Type: application/octet-stream",
                   b"Content-Length: %d" % len(head),
                   b"X-Request-Body-Length: %d" % len(body),
                   b"X-Request-Body-Sha256: " + hashlib.sha256(body).hexdigest().encode()],
                  b"" if method == b"HEAD" else head))
    return True


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        c = Conn(self.request)
        c.count = 0
        try:
            while True:
                head = c.read_until(b"\r\n\r\n", MAX_HEAD)
                c.count += 1
                if log_file:
                    with log_lock:
                        log_file.write(head)
                        log_file.flush()
                method, target, fields = parse_head(head)
                if b"100-continue" in b",".join(field(fields, b"expect")).lower():
                    c.send(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = read_body(c, fields)
                url = urlsplit(target.decode("latin-1"))
                route = ROUTES.get(url.path, echo_head)
                if not route(c, parse_qs(url.query), method, head, body):
                    return
                if b"close" in b",".join(field(fields, b"connection")).lower():
                    return
        except (Closed, OSError):
            return


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def main():
    global log_file
    args = sys.argv[1:]
    if "--log" in args:
        i = args.index("--log")
        log_file = open(args[i + 1], "ab")
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with Server(("127.0.0.1", int(args[0])), Handler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
