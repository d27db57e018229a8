#!/usr/bin/env python3
"""pipeline_load.py PORT PATH: many clients at once on one FastCGI route
(tests/fastcgi.bats, the pipelining tests), each checking its own answer.

A first client asks PATH?sleep=400 so that the application is busy while
the others arrive and wait behind it (queued, or pipelined on its
connection).  Then at once: GETs of distinct sizes (framed by length, by
chunks, or cut into many records), POSTs whose bodies the application
hashes, and clients that give up after 100 ms (their requests are
dropped wherever they wait).  Prints one line per failure and "ok N" with
the number of answers checked; exit status 1 on any failure."""
import socket
import sys
import threading

ALPHA = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def body_of(n):
    return (ALPHA * (n // len(ALPHA) + 1))[:n]


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def exchange(port, request, timeout):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    s.sendall(request)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    finally:
        s.close()
    return data


def unchunk(b):
    out = b""
    while True:
        line, _, b = b.partition(b"\r\n")
        n = int(line.split(b";")[0], 16)
        if n == 0:
            return out
        out, b = out + b[:n], b[n + 2:]


def body(resp):
    head, _, rest = resp.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        return head, unchunk(rest)
    return head, rest


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    failures, checked = [], [0]
    lock = threading.Lock()

    def get(query, want):
        req = (f"GET {path}?{query} HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n").encode()
        head, got = body(exchange(port, req, 20))
        with lock:
            if not head.startswith(b"HTTP/1.1 200") or got != want:
                failures.append(f"{query}: {head[:40]!r}, {len(got)} bytes")
            checked[0] += 1

    def post(n):
        data = bytes((i * 7 + n) & 0xff for i in range(n))
        req = (f"POST {path}?echo HTTP/1.1\r\nHost: x\r\nContent-Length: {n}\r\n"
               "Connection: close\r\n\r\n").encode() + data
        head, got = body(exchange(port, req, 20))
        want = b"%d %016x\n" % (n, fnv(data))
        with lock:
            if not head.startswith(b"HTTP/1.1 200") or got.strip() != want.strip():
                failures.append(f"POST {n}: {head[:40]!r} {got[:60]!r}")
            checked[0] += 1

    def leave(n):
        req = (f"GET {path}?size={n} HTTP/1.1\r\nHost: x\r\n\r\n").encode()
        try:
            exchange(port, req, 0.1)
        except (socket.timeout, OSError):
            pass

    first = threading.Thread(target=get, args=("sleep=400&size=7", body_of(7)))
    first.start()
    threading.Event().wait(0.1)
    jobs = []
    for i in range(30):
        n = 1000 + 4099 * i
        q = [f"size={n}", f"size={n}&len", f"size={n}&chunk=997"][i % 3]
        jobs.append(threading.Thread(target=get, args=(q, body_of(n))))
        if i % 6 == 2:
            jobs.append(threading.Thread(target=post, args=(100 + 37 * i,)))
        if i % 6 == 4:
            jobs.append(threading.Thread(target=leave, args=(50 + i,)))
    for t in jobs:
        t.start()
    for t in jobs + [first]:
        t.join()
    for f in failures:
        print(f)
    print(f"ok {checked[0]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
