#!/usr/bin/env python3
"""pipeburst.py - a pipeline writer that bursts, goes quiet, and trickles.

    pipeburst.py write LOG QUIET_S   write the stream to stdout (a pipe);
                                     log F_GETPIPE_SZ of stdout at each phase
    pipeburst.py expect               print the same stream (to compare)

The stream: BURST blocks of 128 KiB (large writes, which make the preload
grow the pipe), then QUIET_S seconds of silence, then TRICKLE blocks of
1 KiB, one every 20 ms (a pipeline gone quiet: a reader that keeps up).
Each block is a distinct pattern, so a lost, doubled or reordered block
changes the bytes.  LOG gets one line per phase: "PHASE BYTES", where BYTES
is what F_GETPIPE_SZ says of the pipe right then.
"""
import fcntl
import hashlib
import os
import sys
import time

F_GETPIPE_SZ = 1032
BURST, TRICKLE = 64, 60


def block(i, n):
    return hashlib.sha256(b"%d" % i).digest() * (n // 32)


def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main():
    if sys.argv[1] == "expect":
        out = sys.stdout.buffer
        for i in range(BURST):
            out.write(block(i, 131072))
        for i in range(BURST, BURST + TRICKLE):
            out.write(block(i, 1024))
        return
    log = open(sys.argv[2], "w")
    quiet = float(sys.argv[3])

    def phase(name):
        log.write("%s %d\n" % (name, fcntl.fcntl(1, F_GETPIPE_SZ)))
        log.flush()

    phase("start")
    for i in range(BURST):
        write_all(block(i, 131072))
    phase("burst")
    time.sleep(quiet)
    for i in range(BURST, BURST + TRICKLE):
        write_all(block(i, 1024))
        time.sleep(0.02)
    phase("quiet")


if __name__ == "__main__":
    main()
