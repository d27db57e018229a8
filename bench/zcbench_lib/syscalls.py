"""`zcbench syscalls`: system calls per request of each server's worker.

Attaches `strace -c -f` to the serving process of each server while wrk runs
for --duration, then divides each call count by the requests wrk completed.
strace slows the server many times over: the req/s printed here mean nothing,
the calls per request are the point (they explain differences in `static`).
"""
import os
import shutil
import subprocess
import tempfile
import time

from . import docroot as dr
from . import servers, wrk


def parse_strace_c(text):
    """{syscall: (calls, errors)} from `strace -c` output."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[3].isdigit() and f[-1] != "total":
            errors = int(f[4]) if len(f) == 6 and f[4].isdigit() else 0
            out[f[-1]] = (int(f[3]), errors)
    return out


def run(a, log):
    if not shutil.which("strace"):
        raise servers.ServerError("strace is not installed (ci/deps.sh installs it)")
    tmp = tempfile.mkdtemp(prefix="zcbench-syscalls-")
    os.chmod(tmp, 0o755)
    results = {}
    try:
        root = os.path.join(tmp, "docroot")
        size = a.size
        path = dr.make_docroot(root, [size])[size][0]
        close = a.mode == "close"
        for name in a.servers:
            srv = servers.Server(name, root, tmp, workers=1).start()
            try:
                url = srv.url(path)
                wrk.run(url, a.connections, 1, close=close)  # warm caches
                pid = srv.worker_pids()[0]
                out = os.path.join(tmp, name + ".strace")
                st = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", str(pid)],
                                      stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                r = wrk.run(url, a.connections, a.duration, close=close)
                st.terminate()
                st.wait(timeout=10)
                with open(out) as f:
                    counts = parse_strace_c(f.read())
                results[name] = {"requests": r.requests,
                                 "per_request": {k: c / max(r.requests, 1) for k, (c, _) in counts.items()},
                                 "calls": {k: c for k, (c, _) in counts.items()},
                                 "errors": {k: e for k, (_, e) in counts.items() if e}}
                log(f"{name}: {r.requests} requests traced")
            finally:
                srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def table(results):
    names = list(results)
    calls = sorted({c for r in results.values() for c in r["per_request"]},
                   key=lambda c: -max(r["per_request"].get(c, 0) for r in results.values()))
    lines = ["| syscall per request | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for c in calls:
        lines.append(f"| {c} | " + " | ".join(f"{results[n]['per_request'].get(c, 0):.2f}" for n in names) + " |")
    lines.append("| **total** | " + " | ".join(
        f"**{sum(results[n]['per_request'].values()):.2f}**" for n in names) + " |")
    return "\n".join(lines)
