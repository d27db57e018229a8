#!/usr/bin/env python3
"""Check a WebSocket echo server:  .venv/bin/python tests/proxy/ws_client.py URL

URL is ws://HOST:PORT/ws, straight at ws_echo.py or through a proxy.
Sends text and binary messages of 0, 125, 126, 65535, 65536 bytes and
8 MiB (the lengths where the frame header changes size, and a large one),
fragmented messages (several frames, one message; a text one cut inside
UTF-8 characters), and 1000 small messages in a row before reading any
answer; each must come back whole, byte-exact, with its type, in order.
--deflate offers permessage-deflate.  Prints one line per check; exit 0
when all pass, 1 otherwise (the failures named at the end).
"""
import random
import sys
import time

from websockets.sync.client import connect

PATTERN = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
SIZES = [0, 125, 126, 65535, 65536, 8 << 20]


def text(n):
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


def binary(n):
    return random.Random(n).randbytes(n)


def describe(m):
    return "%s of %d bytes" % (type(m).__name__, len(m))


def main():
    args = sys.argv[1:]
    deflate = "--deflate" in args
    args = [a for a in args if a != "--deflate"]
    if len(args) != 1:
        sys.exit(__doc__)
    failed = []

    def check(name, sent, got):
        if type(got) is type(sent) and got == sent:
            print("ok   %s" % name)
        else:
            print("FAIL %s: sent %s, got %s" % (name, describe(sent), describe(got)))
            failed.append(name)

    t0 = time.monotonic()
    with connect(args[0], max_size=64 << 20, max_queue=None, proxy=None,
                 compression="deflate" if deflate else None,
                 open_timeout=10, close_timeout=5) as ws:
        for n in SIZES:
            for kind, msg in (("text", text(n)), ("binary", binary(n))):
                ws.send(msg)
                check("%s %d B" % (kind, n), msg, ws.recv(timeout=30))

        pieces = [binary(1), binary(0), binary(125), binary(70000), binary(1 << 20)]
        ws.send(pieces)
        check("binary in %d frames" % len(pieces), b"".join(pieces), ws.recv(timeout=30))

        utf8 = ("héllo wörld ✓ 🎉 " * 5000).encode()
        cuts = [0, 1, 2, 7, 4099, 30001, len(utf8)]	# some inside characters
        ws.send((utf8[a:b] for a, b in zip(cuts, cuts[1:])), text=True)
        check("text in %d frames, cut inside UTF-8" % (len(cuts) - 1), utf8.decode(), ws.recv(timeout=30))

        many = [text(i % 100) if i % 2 else binary(i % 100) for i in range(1000)]
        for m in many:
            ws.send(m)
        got = [ws.recv(timeout=30) for _ in many]
        bad = [i for i, (s, g) in enumerate(zip(many, got)) if type(s) is not type(g) or s != g]
        if bad:
            print("FAIL 1000 small messages in a row: %d differ, first #%d" % (len(bad), bad[0]))
            failed.append("1000 small messages")
        else:
            print("ok   1000 small messages in a row")
    print("closed with code %s after %.2f s" % (ws.close_code, time.monotonic() - t0))
    if ws.close_code != 1000:
        failed.append("close code %s" % ws.close_code)
    if failed:
        print("FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
