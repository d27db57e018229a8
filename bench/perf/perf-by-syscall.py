#!/usr/bin/env python3
"""perf-by-syscall.py PERF_DATA REQUESTS COMM...: a `perf record -g -F 4999`
profile of a server (the samples of the named commands) as microseconds per
request by the system call that was running (the libc wrapper under the
kernel frames: openat2 and cachestat show as `syscall`), page faults in
system calls and in user code, and user code by DSO.  Used by
replay-profile.sh; docs/bench-replay.md, runs R6-R9."""
import collections
import subprocess
import sys

HZ = 4999


def classify(frames):
    kern = [f for f in frames if "[kernel" in f]
    user = [f for f in frames if "[kernel" not in f]
    wrapper = user[0].split()[1] if user and len(user[0].split()) > 1 else "?"
    if not kern:
        top = frames[0] if frames else "?"
        return "user: " + top.split("(")[-1].rstrip(")").split("/")[-1]
    fault = any("exc_page_fault" in f for f in kern)
    if any("entry_SYSCALL" in f for f in kern):
        return "system call " + wrapper + (" (its page faults)" if fault else "")
    return ("page fault in user code " + wrapper) if fault else "kernel, other"


def main():
    data, n, comms = sys.argv[1], int(sys.argv[2]), set(sys.argv[3:])
    # zcbench's private copies of zchttpd and the floor run as zc_httpd, zc_floor.
    comms |= {c.replace("zc", "zc_", 1) for c in comms}
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    by, total = collections.Counter(), 0
    for block in out.split("\n\n"):
        lines = [ln for ln in block.strip().split("\n") if ln.strip()]
        if not lines or lines[0].split()[0] not in comms:
            continue
        total += 1
        by[classify(lines[1:])] += 1
    us = lambda c: c / HZ / n * 1e6   # noqa: E731
    print(f"{us(total):.2f} us per request in {total} samples:")
    for k, c in by.most_common(20):
        print(f"  {us(c):6.2f}  {k}")


if __name__ == "__main__":
    main()
