#!/usr/bin/env python3
"""edge_io.py MODE ...: small real programs for the preload's edge cases (docs/preload.md).

  nonblock            copy stdin to stdout with stdout set O_NONBLOCK:
                      os.read into a buffer, os.write it back unmodified;
                      EAGAIN waits in select() and retries the rest.
  eintr               the same copy (blocking) while a 1 ms interval timer
                      interrupts the process with SIGALRM (a handler runs).
  threads-write FILE  4 threads write FILE's 4096-byte records, each its
                      own records, from a read-only mapping, to stdout
                      (one write per record: atomic on a pipe).
  threads-verify FILE read 4096-byte records from stdin; every record must
                      be one of FILE's, each exactly once.  Prints
                      "N records intact" or what is wrong (exit 1).

Output is deterministic (counts of EAGAIN or signals are not printed), so
runs with and without the preload can be compared byte for byte.
"""
import collections
import errno
import hashlib
import mmap
import os
import select
import signal
import sys
import threading

REC = 4096


def copy(nonblock):
    if nonblock:
        os.set_blocking(1, False)
    while True:
        data = os.read(0, 1 << 16)
        if not data:
            return 0
        view = memoryview(data)
        while view:
            try:
                n = os.write(1, view)
            except BlockingIOError:
                select.select([], [1], [])
                continue
            view = view[n:]


def eintr():
    hits = [0]

    def on_alarm(sig, frame):
        hits[0] += 1
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        return copy(False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)


def threads_write(path):
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)
        nrec = len(m) // REC
        errors = []

        def worker(k):
            try:
                for i in range(k, nrec, 4):
                    rec = view[i * REC:(i + 1) * REC]
                    if os.write(1, rec) != REC:
                        errors.append(f"short write of record {i}")
                        return
            except OSError as e:
                errors.append(f"record write: {e.strerror}")
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        del view
    for e in errors:
        print(f"edge_io: {e}", file=sys.stderr)
    return 1 if errors else 0


def threads_verify(path):
    with open(path, "rb") as f:
        data = f.read()
    want = collections.Counter(hashlib.sha256(data[i:i + REC]).digest()
                               for i in range(0, len(data) - len(data) % REC, REC))
    got = collections.Counter()
    n = 0
    buf = b""
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= REC:
            got[hashlib.sha256(buf[:REC]).digest()] += 1
            buf = buf[REC:]
            n += 1
    if buf:
        print(f"{len(buf)} bytes left over after {n} records")
        return 1
    if got != want:
        bad = sum((got - want).values())
        print(f"{n} records, {bad} of them not records of the file (interleaved writes?)")
        return 1
    print(f"{n} records intact")
    return 0


def main():
    mode = sys.argv[1]
    if mode == "nonblock":
        return copy(True)
    if mode == "eintr":
        return eintr()
    if mode == "threads-write":
        return threads_write(sys.argv[2])
    if mode == "threads-verify":
        return threads_verify(sys.argv[2])
    print(f"edge_io: unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
