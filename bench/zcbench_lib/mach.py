"""`zcbench mach`: the Mach paper's Tables 6-1 to 6-3 (seed 002, section
6.2: stdio rebuilt on mapped files, and fmap()) measured today with
tests/preload_stdio/mach_read.c (built as build/tests/mach_read):

  6-1  getc() loop over a file: plain stdio ("old_read"), the same binary
       under zcrun, whose stdio buffer is a mapping of the file ("new_read"),
       and fmap() + array reference ("map_read"); first time (the file's
       pages dropped from the page cache) and second time (cached).
  6-2  three getc readers of the same file at once, plain and under zcrun,
       the file's pages dropped first: elapsed time of each and its I/O
       (/proc/PID/io: read_bytes from storage, read system calls).
  6-3  the whole file with one read() into malloc'ed memory ("old_read")
       against fmap() ("map_read"), first and second time.

fmap() and fbufsize() are libzc-preload.so's (Mach's calls on a mapping of
the file; docs/preload.md), not zc.h's: map_read runs under zcrun.
"""
import os
import sys

from . import figure
from . import papers
from .preload import clean_env, preload_paths

TABLES = ("6-1", "6-2", "6-3")

# (table, program, mode of mach_read, under the preload)
PROGRAMS = {
    "6-1": [("old_read", "getc", False), ("new_read", "getc", True), ("map_read", "fmap", True)],
    "6-2": [("old_read", "getc", False), ("new_read", "getc", True)],
    "6-3": [("old_read", "read", False), ("map_read", "fmap", True)],
}
READERS_6_2 = 3

# The paper's figures (MicroVAX II, 4K file system): elapsed s, user s, sys s, I/Os.
PAPER = {
    ("6-1", "old_read", 0, "first"): (8, 6.1, 0.62, None),
    ("6-1", "new_read", 0, "first"): (8, 6.0, 0.71, None),
    ("6-1", "map_read", 0, "first"): (4, 2.8, 0.76, None),
    ("6-1", "old_read", 0, "second"): (8, 6.1, 0.62, None),
    ("6-1", "new_read", 0, "second"): (6, 6.0, 0.21, None),
    ("6-1", "map_read", 0, "second"): (3, 2.7, 0.17, None),
    ("6-2", "old_read", 1, "first"): (83, 25.4, 1.8, 217),
    ("6-2", "old_read", 2, "first"): (86, 25.3, 2.0, 326),
    ("6-2", "old_read", 3, "first"): (86, 25.1, 2.2, 439),
    ("6-2", "new_read", 1, "first"): (77, 24.0, 1.6, 89),
    ("6-2", "new_read", 2, "first"): (78, 24.0, 1.8, 194),
    ("6-2", "new_read", 3, "first"): (78, 24.2, 1.6, 197),
    ("6-3", "old_read", 0, "first"): (21, 11.5, 3.1, 481),
    ("6-3", "map_read", 0, "first"): (15, 11.2, 2.9, 480),
    ("6-3", "old_read", 0, "second"): (21, 11.5, 3.0, 482),
    ("6-3", "map_read", 0, "second"): (12, 11.0, 0.9, 0),
}
PAPER_SIZES = {"6-1": 492544, "6-2": 1970176, "6-3": 1970176}

ROW_FIELDS = ["run", "table", "program", "instance", "cache", "elapsed_s", "user_s", "sys_s",
              "rchar", "syscr", "read_bytes", "resident_before", "bytes_ok"]
SUMMARY_FIELDS = ["table", "program", "instance", "cache", "runs", "elapsed_s", "user_s", "sys_s",
                  "io_pages", "syscr", "speedup", "paper_elapsed_s", "paper_user_s", "paper_sys_s",
                  "paper_io", "paper_speedup"]


def parse_io(stderr):
    """The 'io: rchar N syscr N read_bytes N' line mach_read prints."""
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("io: "):
            f = line.split()
            return {f[i]: int(f[i + 1]) for i in range(1, len(f) - 1, 2)}
    raise papers.PaperBenchError(f"no io: line from mach_read:\n{stderr[-1000:]!r}")


def argv_of(reader, mode, preload, path, zcrun):
    argv = [reader, mode, path]
    return [zcrun, "--", *argv] if preload else argv


def check(proc, expect):
    """mach_read printed 'bytes sum'; True when both are the file's."""
    try:
        n, s = (int(x) for x in proc.out.split())
    except ValueError:
        return False
    return (n, s) == expect


def row(run_no, table, program, instance, cache, proc, expect, resident_before):
    io = parse_io(proc.err)
    return {"run": run_no, "table": table, "program": program, "instance": instance, "cache": cache,
            "elapsed_s": proc.elapsed, "user_s": proc.user, "sys_s": proc.sys,
            "rchar": io.get("rchar"), "syscr": io.get("syscr"), "read_bytes": io.get("read_bytes"),
            "resident_before": resident_before, "bytes_ok": check(proc, expect)}


def rotate(items, k):
    k %= max(1, len(items))
    return items[k:] + items[:k]


def measure(opts, path, expect, reader, zcrun, log):
    """Every measurement of every run, the programs' order rotated per run."""
    env = clean_env()
    env["MACH_READ_IO"] = "1"
    rows = []
    for r in range(1, opts.runs + 1):
        for table in opts.tables:
            for program, mode, pre in rotate(PROGRAMS[table], r - 1):
                argv = argv_of(reader, mode, pre, path, zcrun)
                if table == "6-2":
                    papers.drop_file_cache(path)
                    res = papers.resident(path)
                    procs = papers.run_together([argv] * READERS_6_2, env=env)
                    for i, p in enumerate(procs, 1):
                        rows.append(row(r, table, program, i, "first", p, expect, res))
                    continue
                for cache in ("first", "second"):
                    if cache == "first":
                        papers.drop_file_cache(path)
                    res = papers.resident(path)
                    p = papers.run(argv, env=env)
                    rows.append(row(r, table, program, 0, cache, p, expect, res))
        log(f"run {r}/{opts.runs}: " + ", ".join(
            f"{x['table']} {x['program']}{'[%d]' % x['instance'] if x['instance'] else ''} "
            f"{x['cache'][0]} {x['elapsed_s']:.3f}s" for x in rows if x["run"] == r))
    return rows


def summarize(rows):
    keys = list(dict.fromkeys((x["table"], x["program"], x["instance"], x["cache"]) for x in rows))
    out = []
    for key in keys:
        rs = [x for x in rows if (x["table"], x["program"], x["instance"], x["cache"]) == key]
        rb = papers.med([x["read_bytes"] for x in rs])
        s = {"table": key[0], "program": key[1], "instance": key[2], "cache": key[3], "runs": len(rs),
             "elapsed_s": papers.med([x["elapsed_s"] for x in rs]),
             "user_s": papers.med([x["user_s"] for x in rs]),
             "sys_s": papers.med([x["sys_s"] for x in rs]),
             "io_pages": None if rb is None else rb / 4096,
             "syscr": papers.med([x["syscr"] for x in rs])}
        p = PAPER.get(key)
        s.update(dict(zip(("paper_elapsed_s", "paper_user_s", "paper_sys_s", "paper_io"),
                          p or (None,) * 4)))
        out.append(s)
    # speedup = old_read's elapsed / this one's, same table, cache (and instance)
    for s in out:
        base = [b for b in out if b["program"] == "old_read" and
                (b["table"], b["instance"], b["cache"]) == (s["table"], s["instance"], s["cache"])]
        if base and s["elapsed_s"]:
            s["speedup"] = base[0]["elapsed_s"] / s["elapsed_s"]
        pb = PAPER.get((s["table"], "old_read", s["instance"], s["cache"]))
        s["paper_speedup"] = (pb[0] / s["paper_elapsed_s"]) if pb and s["paper_elapsed_s"] else None
    return out


COLS = [("table", "table", 0), ("program", "program", 0), ("inst.", "instance", 0),
        ("time", "cache", 0), ("elapsed s", "elapsed_s", 3), ("user s", "user_s", 3),
        ("sys s", "sys_s", 3), ("I/O (4 KiB pages read)", "io_pages", 0),
        ("read calls", "syscr", 0), ("speedup vs old_read", "speedup", 2),
        ("paper elapsed s", "paper_elapsed_s", 0), ("paper I/O", "paper_io", 0),
        ("paper speedup", "paper_speedup", 2)]


def table_text(summary, meta):
    return papers.table(summary, COLS, title=(
        f"zcbench mach: {meta['size']} byte file, median of {meta['runs']} runs "
        f"(paper: {PAPER_SIZES['6-1']} / {PAPER_SIZES['6-2']} bytes, MicroVAX II)"))


def plot(out, summary, dpi=80):
    """mach.png: per table, old_read's elapsed over each program's (ours and
    the paper's), first and second time."""
    plt = figure.pyplot()

    tables = list(dict.fromkeys(s["table"] for s in summary))
    fig, axes = plt.subplots(1, len(tables), figsize=(4.2 * len(tables), 4), squeeze=False)
    for ax, t in zip(axes[0], tables):
        ss = [s for s in summary if s["table"] == t]
        labels = [f"{s['program']}{'[%d]' % s['instance'] if s['instance'] else ''}\n{s['cache']}"
                  for s in ss]
        xs = range(len(ss))
        ax.bar([x - 0.2 for x in xs], [s["speedup"] or 0 for s in ss], width=0.4, label="measured")
        ax.bar([x + 0.2 for x in xs], [s["paper_speedup"] or 0 for s in ss], width=0.4,
               label="paper (1987)", alpha=0.6)
        for x, s in zip(xs, ss):
            if s["speedup"]:
                ax.annotate(f"{s['speedup']:.2f}", (x - 0.2, s["speedup"]), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7)
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title(f"Table {t}")
        ax.set_ylabel("old_read elapsed / program's (higher is faster)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("zcbench mach: Mach mapped stdio and fmap, today vs the paper")
    return figure.save(fig, out, "mach.png", dpi)


def run(opts, log=lambda m: print(f"zcbench mach: {m}", file=sys.stderr, flush=True)):
    """(meta, rows, summary); the input file is made in opts.workdir and removed."""
    reader = papers.binary("tests", "mach_read")
    so, zcrun = preload_paths()
    if not (os.access(so, os.R_OK) and os.access(zcrun, os.X_OK)):
        raise papers.PaperBenchError(f"no preload/zcrun at {so} (run `make`)")
    os.makedirs(opts.workdir, exist_ok=True)
    path = os.path.join(opts.workdir, f"mach-input-{os.getpid()}.dat")
    try:
        expect = papers.make_file(path, opts.size)
        rows = measure(opts, path, expect, reader, zcrun, log)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    bad = [x for x in rows if not x["bytes_ok"]]
    meta = {"benchmark": "mach", "size": opts.size, "runs": opts.runs, "tables": opts.tables,
            "reader": reader, "zcrun": zcrun, "wrong_outputs": len(bad),
            "paper_sizes": PAPER_SIZES}
    return meta, rows, summarize(rows)
