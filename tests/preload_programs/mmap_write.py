#!/usr/bin/env python3
"""mmap_write.py FILE: write FILE to stdout straight from a read-only
mapping of it, the way mmap+write servers (Apache with EnableMMAP) do: one
write(2) per 1 MiB slice, then the last part with writev(2) in two pieces.
Partial writes are continued.  An empty file cannot be mapped; it writes
nothing."""
import mmap
import os
import sys

SLICE = 1 << 20


def write_all(fd, view):
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main():
    with open(sys.argv[1], "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            head = max(0, size - SLICE)
            for off in range(0, head, SLICE):
                write_all(1, view[off:min(off + SLICE, head)])
            tail = view[head:]
            half = len(tail) // 2
            n = os.writev(1, [tail[:half], tail[half:]])
            write_all(1, tail[n:])
            del view, tail
    return 0


if __name__ == "__main__":
    sys.exit(main())
