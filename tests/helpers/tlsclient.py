#!/usr/bin/env python3
"""tlsclient.py - HTTPS checks for tests/tls.bats that curl cannot make.

  tlsclient.py pipeline PORT ROOT N        N GETs of ROOT's files written at
                                           once over one TLS connection; every
                                           response byte-exact and in order
  tlsclient.py resume PORT VERSION         a session from a first connection
                                           resumed on new ones (VERSION 1.2 or
                                           1.3); prints how many resumed of 8
  tlsclient.py cut PORT PATH               start a large download, read a
                                           little, vanish with a reset
  tlsclient.py slow PORT ROOT NAME...      GET each file, one after the other
                                           on one connection, through a 4 KiB
                                           receive buffer read in small, paced
                                           pieces (the server's socket fills in
                                           the middle of its writes again and
                                           again); every body byte-exact

Certificates are not verified (the tests' are self-signed); the checks are
about the bytes and the sessions.
"""
import os
import socket
import ssl
import struct
import sys
import time


def context(version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if version == "1.2":
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    elif version == "1.3":
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return ctx


def connect(port, ctx, session=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(raw, server_hostname="a.test", session=session)


def read_response(f):
    """One response from a buffered reader: (status, headers, body)."""
    status = f.readline()
    if not status:
        raise EOFError("connection closed before a response")
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return int(status.split()[1]), headers, body


def pipeline(port, root, n):
    names = sorted(os.listdir(root))
    want = [names[i % len(names)] for i in range(n)]
    s = connect(port, context())
    # Long query strings: the requests fill several TLS records and more
    # than the server's 32 KiB input buffer, so it must take decrypted
    # bytes OpenSSL holds beyond what epoll can report.
    reqs = b"".join(b"GET /%s?%s HTTP/1.1\r\nHost: a.test\r\n\r\n" %
                    (name.encode(), b"q" * 100) for name in want)
    s.sendall(reqs)
    f = s.makefile("rb")
    for name in want:
        status, _, body = read_response(f)
        with open(os.path.join(root, name), "rb") as fh:
            if status != 200 or body != fh.read():
                sys.exit("response for %s: status %d, %d bytes, wrong"
                         % (name, status, len(body)))
    s.close()
    print("pipelined %d ok" % n)


def resume(port, version):
    ctx = context(version)
    s = connect(port, ctx)
    s.sendall(b"GET /a.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
    read_response(s.makefile("rb"))   # TLS 1.3 tickets arrive by now
    session = s.session
    s.close()
    resumed = 0
    for _ in range(8):   # new connections land on either worker
        s = connect(port, ctx, session)
        s.sendall(b"GET /a.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
        status, _, _ = read_response(s.makefile("rb"))
        assert status == 200
        resumed += s.session_reused
        version = s.version()
        s.close()
    print("resumed %d of 8 with %s" % (resumed, version))


def cut(port, path):
    s = connect(port, context())
    s.sendall(b"GET %s HTTP/1.1\r\nHost: a.test\r\n\r\n" % path.encode())
    s.recv(1000)
    # A reset, not a clean close: the worst way a client can leave.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print("cut")


def slow(port, root, names):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(60)
    raw.connect(("127.0.0.1", port))
    s = context().wrap_socket(raw, server_hostname="a.test")
    f = s.makefile("rb", buffering=0)
    for name in names:
        s.sendall(b"GET /%s HTTP/1.1\r\nHost: a.test\r\n\r\n" % name.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            piece = f.read(1)
            if not piece:
                sys.exit("%s: connection closed in the head" % name)
            head += piece
        status = int(head.split()[1])
        length = int([l.split(b":")[1] for l in head.split(b"\r\n")
                      if l.lower().startswith(b"content-length:")][0])
        body = bytearray()
        n = 0
        while len(body) < length:
            piece = f.read(min(3000, length - len(body)))
            if not piece:
                break
            body += piece
            n += 1
            if n % 8 == 0:
                time.sleep(0.002)
        with open(os.path.join(root, name), "rb") as fh:
            if status != 200 or bytes(body) != fh.read():
                sys.exit("%s: status %d, %d of %d bytes, wrong"
                         % (name, status, len(body), length))
    s.close()
    print("slow %d ok" % len(names))


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "pipeline":
        pipeline(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "resume":
        resume(port, sys.argv[3])
    elif cmd == "cut":
        cut(port, sys.argv[3])
    elif cmd == "slow":
        slow(port, sys.argv[3], sys.argv[4:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
