"""The paper experiments' subcommands (docs/bench-papers.md):

  zcbench mach        Mach Tables 6-1..6-3 (mapped stdio, fmap)       mach.py
  zcbench streamline  Streamline Figure 11 (pipes by block size) and
                      Figure 16 (dd file to file, dd | dd)            streamline.py
  zcbench cs-ipc      Container Shipping Figure 4, every case         csipc.py

Each prints a table (or --json), writes results.csv, summary.csv,
results.json and a PNG into --out, and exits 1 when a measured program
produced wrong bytes.
"""
import json
import os
import sys

from . import build_dir, papers


def add_parsers(sub, positive, size):
    ps = {}
    m = sub.add_parser(
        "mach", help="Mach Tables 6-1..6-3: getc with plain and mapped stdio, fmap, read()",
        description="The Mach paper's Tables 6-1 to 6-3 with tests/preload_stdio/mach_read.c: a getc "
                    "loop plainly (old_read) and under zcrun (mapped stdio, new_read), fmap() under "
                    "zcrun (map_read), one whole-file read() (6-3's old_read); first time = the "
                    "file's pages dropped (posix_fadvise DONTNEED), second time = cached; 6-2: three "
                    "readers at once with /proc/PID/io.  Writes results.csv, summary.csv, "
                    "results.json and mach.png into --out.")
    m.add_argument("--size", type=size, default="256m", help="file size (k/m/g)")
    m.add_argument("--runs", type=positive, default=5, help="interleaved repetitions (median reported)")
    m.add_argument("--tables", default="6-1,6-2,6-3", help="which tables, e.g. 6-1,6-3")
    m.add_argument("--workdir", default=None,
                   help="where the input file is made (a disk filesystem, not tmpfs: the first-time "
                        "runs read it from the disk; default build/bench)")
    ps["mach"] = m

    s = sub.add_parser(
        "streamline", help="Streamline Figure 11 (pipe/preload/channel by block size) and Figure 16 (dd)",
        description="Figure 11: write-then-read throughput against block size through a Linux pipe, "
                    "the same pipe program under zcrun, a libzc channel (cs_write/cs_read full map "
                    "and no map) and a shared-memory ring (the paper's Pthreads bound), all from "
                    "build/bench/zcbench-ipc.  Figure 16: dd of a cached file to a file, and dd | dd, "
                    "plainly and under zcrun, against bs.  Writes results.csv, summary.csv, "
                    "results.json, streamline-fig11.png and streamline-fig16.png into --out.")
    s.add_argument("--figures", default="11,16", help="11, 16 or both")
    s.add_argument("--blocks", default="64,256,1k,4k,16k,64k,256k,1m",
                   help="Figure 11 block sizes (bytes, k/m)")
    s.add_argument("--max-bytes", type=size, default="256m",
                   help="Figure 11: bytes per point at most (small blocks move 64Ki blocks)")
    s.add_argument("--dd-blocks", default="4k,16k,64k,128k,1m", help="Figure 16 dd bs values")
    s.add_argument("--dd-size", type=size, default="256m", help="Figure 16 file size")
    s.add_argument("--runs", type=positive, default=5, help="interleaved repetitions (median reported)")
    s.add_argument("--workdir", default=None, help="where dd's input file is made (default build/bench)")
    s.add_argument("--dd-out-dir", default="/dev/shm",
                   help="where dd writes its copy (tmpfs by default: no disk writeback in the "
                        "timings; the paper's dd wrote to a file in the page cache)")
    ps["streamline"] = s

    c = sub.add_parser(
        "cs-ipc", help="Container Shipping Figure 4, all cases (zcbench-ipc a-h) with the paper's bars",
        description="Runs build/bench/zcbench-ipc --json with every case (conventional read/write, "
                    "the two mixed cases, full/half/no map, and the shared-memory ring) and prints "
                    "each case's MB/s and ratio to write/read over AF_UNIX beside the paper's "
                    "Figure 4, and full map over the shared-memory ring (the bar: >= 0.90).  Writes "
                    "results.csv, summary.csv, results.json and cs-ipc.png into --out.")
    c.add_argument("--bytes", default="2G", help="bytes per case and run (zcbench-ipc --bytes)")
    c.add_argument("--block", default="128K", help="bytes per transfer (zcbench-ipc --block)")
    c.add_argument("--runs", type=positive, default=5, help="runs (median reported)")
    ps["cs-ipc"] = c
    for p in ps.values():
        p.add_argument("--out", default=None, help="result directory (default build/bench/<command>-<time>)")
        p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
        p.add_argument("--no-plot", action="store_true", help="skip the PNG figure(s)")
    return ps


def _log(name):
    return lambda m: print(f"zcbench {name}: {m}", file=sys.stderr, flush=True)


def _finish(name, a, meta, rows, summary, row_fields, summary_fields, plot, text):
    papers.write_all(a.out, meta, rows, summary, row_fields, summary_fields)
    figs = []
    if not a.no_plot:
        try:
            figs = plot(a.out, summary)
            figs = figs if isinstance(figs, list) else [figs]
        except ImportError:
            print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figure", file=sys.stderr)
    if a.json:
        json.dump({"meta": meta, "summary": summary, "out": a.out}, sys.stdout, indent=1)
        print()
    else:
        print(text)
    print(f"zcbench {name}: results in {a.out}" +
          (f" ({', '.join(os.path.basename(f) for f in figs)})" if figs else ""), file=sys.stderr)
    if meta.get("wrong_outputs"):
        print(f"zcbench {name}: {meta['wrong_outputs']} measurements produced wrong bytes",
              file=sys.stderr)
        return 1
    return 0


def cmd(a):
    name = a.cmd
    a.out = a.out or papers.default_out(name)
    workdir = getattr(a, "workdir", None)
    if hasattr(a, "workdir") and not workdir:
        a.workdir = os.path.join(build_dir(), "bench")
    try:
        if name == "mach":
            from . import mach
            a.tables = [t.strip() for t in a.tables.split(",") if t.strip()]
            if not a.tables or any(t not in mach.TABLES for t in a.tables):
                print(f"zcbench mach: --tables: choose from {','.join(mach.TABLES)}", file=sys.stderr)
                return 2
            meta, rows, summary = mach.run(a, _log(name))
            return _finish(name, a, meta, rows, summary, mach.ROW_FIELDS, mach.SUMMARY_FIELDS,
                           mach.plot, mach.table_text(summary, meta))
        if name == "streamline":
            from . import streamline
            try:
                streamline.parse_opts(a)
            except ValueError as e:
                print(f"zcbench streamline: {e}", file=sys.stderr)
                return 2
            meta, rows, summary = streamline.run(a, _log(name))
            return _finish(name, a, meta, rows, summary, streamline.ROW_FIELDS,
                           streamline.SUMMARY_FIELDS, streamline.plot,
                           streamline.table_text(summary, meta))
        if name == "cs-ipc":
            from . import csipc
            meta, rows, summary = csipc.run(a, _log(name))
            return _finish(name, a, meta, rows, summary, csipc.ROW_FIELDS, csipc.SUMMARY_FIELDS,
                           csipc.plot, csipc.table_text(summary, meta))
    except papers.PaperBenchError as e:
        print(f"zcbench {name}: {e}", file=sys.stderr)
        return 1
    return 2
