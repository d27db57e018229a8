#!/usr/bin/env python3
"""Send raw bytes to a server and print what comes back.

usage: rawhttp.py PORT [--drip SECONDS] [--wait SECONDS] [--half-close]
The request comes from stdin, taken literally (use printf to build it).
--drip sends one byte at a time with that pause (slowloris).
--wait is how long to wait for the answer before giving up (default 5 s).
--half-close shuts our sending side after the request.
Prints the response bytes to stdout; exit 0 if the server closed the
connection, 3 if it was still open at the deadline.
"""
import socket
import sys
import time


def main():
    args = sys.argv[1:]
    port = int(args.pop(0))
    drip = wait = None
    half = False
    while args:
        a = args.pop(0)
        if a == "--drip":
            drip = float(args.pop(0))
        elif a == "--wait":
            wait = float(args.pop(0))
        elif a == "--half-close":
            half = True
        else:
            sys.exit("unknown argument " + a)
    data = sys.stdin.buffer.read()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if drip is not None:
        for i in range(len(data)):
            try:
                s.sendall(data[i:i + 1])
            except OSError:
                break
            time.sleep(drip)
    else:
        s.sendall(data)
    if half:
        s.shutdown(socket.SHUT_WR)
    deadline = time.time() + (wait if wait is not None else 5.0)
    out = bytearray()
    closed = False
    while time.time() < deadline:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        out += chunk
    sys.stdout.buffer.write(out)
    sys.exit(0 if closed else 3)


if __name__ == "__main__":
    main()
