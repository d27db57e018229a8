#!/usr/bin/env python3
"""mmap_write.py [--truncate N | --memfd] FILE: write FILE to stdout
straight from a read-only mapping of it, the way mmap+write servers (Apache with
EnableMMAP) do: one write(2) per 1 MiB slice, then the last part with
writev(2) in two pieces.  Partial writes are continued.  An empty file
cannot be mapped; it writes nothing.

--truncate N shrinks the file to N bytes after mapping it and before
writing: the writes then reach pages past the end of the file, where the
kernel's copy fails (a short write, then EFAULT) -- the program reports
how far it got and exits 1.  It must not die of SIGBUS, with or without
the preload, and must report the same.

--memfd copies FILE into a memfd sealed against writes and shrinking
(F_SEAL_WRITE, F_SEAL_SHRINK) and writes from a mapping of that: content
that provably cannot change under a transfer."""
import fcntl
import mmap
import os
import shutil
import sys

SLICE = 1 << 20


def write_all(fd, view):
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main():
    args = sys.argv[1:]
    truncate = None
    if args[:1] == ["--truncate"]:
        truncate, args = int(args[1]), args[2:]
    if args[:1] == ["--memfd"]:
        fd = os.memfd_create("mmap_write", os.MFD_ALLOW_SEALING)
        with open(args[1], "rb") as src, open(fd, "r+b", closefd=False) as dst:
            shutil.copyfileobj(src, dst)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK)
        args = [f"/proc/self/fd/{fd}"]
    with open(args[0], "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if truncate is not None:
                os.truncate(args[0], truncate)
            error = None
            try:
                send(memoryview(m), size)
            except OSError as e:
                error = e.strerror  # keep no frame alive: the mapping must close
    if error:
        print(f"mmap_write: {error}", file=sys.stderr)
        return 1
    return 0


def send(view, size):
    head = max(0, size - SLICE)
    for off in range(0, head, SLICE):
        write_all(1, view[off:min(off + SLICE, head)])
    tail = view[head:]
    half = len(tail) // 2
    n = os.writev(1, [tail[:half], tail[half:]])
    write_all(1, tail[n:])


if __name__ == "__main__":
    sys.exit(main())
