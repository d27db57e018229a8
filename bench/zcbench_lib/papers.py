"""What the paper experiments (`zcbench mach`, `zcbench streamline`,
`zcbench cs-ipc`; docs/bench-papers.md) share: running one program with its
time and CPU (wait4), dropping a file's pages from the page cache, medians,
and writing results.csv / summary.csv / results.json.

Each experiment module gives rows (one measurement each, a dict) and a
summary (one row per table line, with the paper's figure beside ours).
"""
import csv
import json
import os
import resource
import statistics
import subprocess
import threading
import time

from . import build_dir


class PaperBenchError(RuntimeError):
    pass


def binary(*parts):
    """A program of the build tree; PaperBenchError if it is not built."""
    path = os.path.join(build_dir(), *parts)
    if not os.access(path, os.X_OK):
        raise PaperBenchError(f"{path} is not built (run `make`, or set ZCBENCH_BUILD)")
    return path


def default_out(name):
    return os.path.join(build_dir(), "bench", f"{name}-" + time.strftime("%Y%m%d-%H%M%S"))


# -- running programs ----------------------------------------------------------

class Proc:
    """One started program: its pid, start time and, once reaped, elapsed
    seconds, user and system CPU seconds (its own and its waited-for
    children's, from wait4), exit status, stdout and stderr."""

    def __init__(self, argv, env=None, stdin=None, stdout=subprocess.PIPE):
        self.argv = list(argv)
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(self.argv, env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                  stdout=stdout, stderr=subprocess.PIPE)
        self.out = self.err = b""
        self._readers = []
        for name, pipe in (("out", self.p.stdout), ("err", self.p.stderr)):
            if pipe is not None:
                t = threading.Thread(target=self._drain, args=(name, pipe), daemon=True)
                t.start()
                self._readers.append(t)

    def _drain(self, name, pipe):
        setattr(self, name, pipe.read())
        pipe.close()

    def wait(self, timeout_s=600):
        """Reap it (wait4: its rusage); raises PaperBenchError on a non-zero
        exit or after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.p.kill()
                os.wait4(self.p.pid, 0)
                raise PaperBenchError(f"timeout after {timeout_s} s: {' '.join(self.argv)}")
            time.sleep(0.0005)
        self.elapsed = time.perf_counter() - self.t0
        self.user, self.sys = ru.ru_utime, ru.ru_stime
        self.p.returncode = os.waitstatus_to_exitcode(status)
        for t in self._readers:
            t.join()
        if self.p.returncode != 0:
            raise PaperBenchError(f"exit {self.p.returncode}: {' '.join(self.argv)}\n"
                                  f"{self.err.decode(errors='replace')[-2000:]}")
        return self


def run(argv, env=None, timeout_s=600, **kw):
    return Proc(argv, env=env, **kw).wait(timeout_s)


def run_together(argvs, env=None, timeout_s=600):
    """Start every argv at once; reap each as it ends (its own elapsed time
    from the common start).  Returns the Procs in argv order."""
    procs = [Proc(a, env=env) for a in argvs]
    t0 = min(p.t0 for p in procs)
    errors = []

    def reap(p):
        try:
            p.wait(timeout_s)
            p.elapsed = time.perf_counter() - t0
        except PaperBenchError as e:
            errors.append(e)

    ts = [threading.Thread(target=reap, args=(p,)) for p in procs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return procs


# -- the page cache ------------------------------------------------------------

def drop_file_cache(path):
    """Evict path's clean pages from the page cache (fdatasync, then
    posix_fadvise DONTNEED): the next reader reads it from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm_file(path):
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass


def resident(path):
    """Fraction of path in the page cache (mincore)."""
    from .preload import resident_fraction
    return resident_fraction(path)


# -- inputs ----------------------------------------------------------------------

def make_file(path, size, seed_block=None):
    """size bytes: a random 1 MiB block repeated (the tail cut).  Returns
    (byte count, sum of all bytes) for checking what a reader printed."""
    block = seed_block if seed_block is not None else os.urandom(1 << 20)
    bsum = sum(block)
    full, tail = divmod(size, len(block))
    with open(path, "wb") as f:
        for _ in range(full):
            f.write(block)
        f.write(block[:tail])
    return size, bsum * full + sum(block[:tail])


# -- numbers and files ---------------------------------------------------------

def med(values):
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})


def write_all(out, meta, rows, summary, row_fields, summary_fields):
    """results.csv (every measurement), summary.csv (the table),
    results.json (meta, runs, summary)."""
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, "results.csv"), rows, row_fields)
    write_csv(os.path.join(out, "summary.csv"), summary, summary_fields)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows, "summary": summary}, f, indent=1)
        f.write("\n")


def fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return str(v)


def table(summary, cols, title=None):
    """A Markdown table of summary rows; cols = [(header, key, digits)]."""
    lines = [title, ""] if title else []
    lines.append("| " + " | ".join(h for h, _, _ in cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for s in summary:
        lines.append("| " + " | ".join(fmt(s.get(k), nd) for _, k, nd in cols) + " |")
    return "\n".join(lines)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
