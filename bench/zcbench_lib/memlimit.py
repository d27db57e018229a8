"""A memory limit around a server under test (`zcbench replay --memory-limit`).

IO-Lite's trace experiment ran servers whose working set exceeded memory.
Here the server, with every process and thread it starts, runs in a memory
cgroup whose limit is smaller than the trace's objects: its anonymous memory
and the page cache it brings in are charged to the group, and the kernel
reclaims within the group at the limit, so misses go to the disk.

  cgroup v1 (this machine): a directory in the `memory` hierarchy,
      memory.limit_in_bytes, cgroup.procs, memory.max_usage_in_bytes.
  cgroup v2: memory.max, cgroup.procs, memory.peak where the kernel has it.

The group is named zcbench-mem-<pid>-<n>, joined between fork and exec (as
budget.py's CPU group), and removed when the server stops; a group whose
zcbench is gone is swept at the next start.  Bytes the server read from
the disk come from /proc/PID/io (read_bytes: storage reads the process
caused, page-cache misses of sendfile and read included), summed over the
server's processes just before it stops.
"""
import os
import re

V1 = "/sys/fs/cgroup/memory"
V2 = "/sys/fs/cgroup"
_NAME = re.compile(r"^zcbench-mem-(\d+)-(\d+)$")


class MemLimitError(RuntimeError):
    pass


def parse_bytes(text):
    """"256m" -> 268435456; k/m/g binary, a plain number is bytes."""
    t = text.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    try:
        n = int(float(t[:-1] if t[-1:] in "kmg" else t) * mult)
    except ValueError:
        raise ValueError(f"bad byte count {text!r} (examples: 256m, 1g)") from None
    if n < (16 << 20):
        raise ValueError(f"memory limit {text!r} below 16 MiB")
    return n


def hierarchy():
    """("v1", dir) or ("v2", dir) of a memory controller we can use."""
    if os.path.exists(os.path.join(V1, "memory.limit_in_bytes")):
        return "v1", V1
    try:
        with open(os.path.join(V2, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                return "v2", V2
    except OSError:
        pass
    raise MemLimitError("no memory cgroup controller here (cgroup v1 memory or v2 with memory)")


def sweep_stale(base):
    """Remove groups of zcbench processes that are gone."""
    for name in os.listdir(base):
        m = _NAME.match(name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            try:
                os.rmdir(os.path.join(base, name))
            except OSError:
                pass


class MemGroup:
    _n = 0

    def __init__(self, limit_bytes):
        self.kind, base = hierarchy()
        sweep_stale(base)
        MemGroup._n += 1
        self.path = os.path.join(base, f"zcbench-mem-{os.getpid()}-{MemGroup._n}")
        try:
            os.mkdir(self.path)
            limit_file = "memory.limit_in_bytes" if self.kind == "v1" else "memory.max"
            with open(os.path.join(self.path, limit_file), "w") as f:
                f.write(str(limit_bytes))
        except OSError as e:
            self.remove()
            raise MemLimitError(f"cannot make a memory cgroup at {self.path}: {e} (root needed)") from e
        self.limit = limit_bytes

    def join(self):
        """Move the calling process in (for a preexec function)."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def peak(self):
        name = "memory.max_usage_in_bytes" if self.kind == "v1" else "memory.peak"
        try:
            with open(os.path.join(self.path, name)) as f:
                return int(f.read())
        except OSError:
            return None

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def read_bytes(pids):
    """Bytes the processes made the kernel read from storage (/proc/PID/io)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/io") as f:
                for line in f:
                    if line.startswith("read_bytes:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def drop_cached(root):
    """Write back and drop the page cache of every file under root, so that
    every server starts cold.  The write-back is ours to do: DONTNEED only
    starts writing a dirty page and leaves it in memory, so a document root
    written moments before (the first run of a new trace) would stay
    cached and its first server would read almost nothing from disk."""
    for d, _, files in os.walk(root):
        for name in files:
            try:
                fd = os.open(os.path.join(d, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
