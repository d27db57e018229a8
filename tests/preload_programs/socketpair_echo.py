#!/usr/bin/env python3
"""socketpair_echo.py: copy stdin to stdout through an AF_UNIX socketpair
inside one process.  A thread reads stdin into a buffer and sends it
unmodified (send/sendall); the main thread receives into a buffer and
writes it unmodified to stdout.  Both halves are the "read into a buffer,
write it out unchanged" shape the forward conversion looks for."""
import os
import socket
import sys
import threading

CHUNK = 1 << 16


def sender(sock):
    with sock:
        while True:
            data = os.read(0, CHUNK)
            if not data:
                break
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)


def main():
    a, b = socket.socketpair()
    t = threading.Thread(target=sender, args=(a,))
    t.start()
    buf = bytearray(CHUNK)
    with b:
        while True:
            n = b.recv_into(buf)
            if not n:
                break
            view = memoryview(buf)[:n]
            while view:
                w = os.write(1, view)
                view = view[w:]
    t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
