#!/usr/bin/env python3
"""Pipeline many requests at once, read late, and check every response.

usage: pipeflood.py PORT ROOT N [--pause SECONDS]

Sends N GET requests for ROOT's small.txt and big.bin, alternating, each
with a padding header of a different length, in one burst (far more than
the server's 32 KiB input buffer), and only starts reading after --pause
(default 0.5 s), so that the server's socket fills and it has to stop and
resume both sending and reading several times.  Then reads every response
and checks, in order: status 200, Content-Length, and the body byte for
byte against the file.  Exit 0 and prints "ok N" if all are right; exit 1
with the first difference otherwise.
"""
import os
import socket
import sys
import threading
import time


def main():
    port, root, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    pause = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--pause" else 0.5
    names = ["small.txt", "big.bin"]
    files = {nm: open(os.path.join(root, nm), "rb").read() for nm in names}
    reqs = b"".join(
        b"GET /%s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n"
        % (names[i % 2].encode(), b"p" * (i * 37 % 3000))
        for i in range(n))
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sent_err = []

    def send():
        try:
            s.sendall(reqs)
        except OSError as e:
            sent_err.append(e)

    t = threading.Thread(target=send)
    t.start()
    time.sleep(pause)
    f = s.makefile("rb")
    for i in range(n):
        want = files[names[i % 2]]
        status = f.readline()
        if not status.startswith(b"HTTP/1.1 200 "):
            sys.exit("response %d: status %r" % (i, status))
        length = None
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        if length != len(want):
            sys.exit("response %d: Content-Length %r, file has %d" % (i, length, len(want)))
        body = f.read(length)
        if body != want:
            sys.exit("response %d (%s): body differs" % (i, names[i % 2]))
    t.join()
    if sent_err:
        sys.exit("sending failed: %s" % sent_err[0])
    print("ok", n)


if __name__ == "__main__":
    main()
