"""`zcbench preload`'s arguments and command (cli.py adds the subparser and
dispatches here; `zcbench report DIR` comes here for a preload result)."""
import argparse
import json
import os
import re
import sys

from . import preload, preload_pingpong, preload_report, preload_stats, servers, wrk
from .budget import BudgetError


def parse_size(text):
    """"1g" / "256m" / "4096" / "64k" -> bytes (k, m, g = 1024-based)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgKMG]?)i?[bB]?\s*", text)
    if not m or int(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (examples: 4096, 64k, 256m, 1g)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def add_parser(sub, list_type, duration_type, positive_type, fraction_type):
    pp = sub.add_parser(
        "preload", help="unmodified programs with and without libzc-preload.so",
        description="Apache httpd (mmap+write) with wrk, dd into a pipe, stdio line readers (sed, "
                    "cut), and two overhead workloads (4 KiB writes to /dev/null, socket ping-pong), "
                    "each run plainly and under zcrun, interleaved with the order alternating; "
                    "median of the runs, preload/plain ratios against the issue's bars and the "
                    "conversions that fired.  Writes results.csv, summary.csv, results.json and "
                    "preload-ratios.png into --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pp.add_argument("--workloads", type=list_type(preload.WORKLOADS), default=",".join(preload.DEFAULT_WORKLOADS),
                    help="also apache-noguard, apache-sndbuf, apache-sndbuf-noguard (mapwrite's cost guard off; "
                         "a 16 KiB send buffer), not run by default")
    pp.add_argument("--runs", type=positive_type, default=5, help="interleaved repetitions (median reported)")
    pp.add_argument("--duration", type=duration_type, default="5s", help="wrk duration per Apache run")
    pp.add_argument("--connections", type=positive_type, default=16, help="wrk connections to Apache")
    pp.add_argument("--dd-size", type=parse_size, default="2g", help="file dd copies into the pipe")
    pp.add_argument("--text-size", type=parse_size, default="512m", help="text file the stdio readers read")
    pp.add_argument("--null-writes", type=positive_type, default=2000000, help="4 KiB writes to /dev/null")
    pp.add_argument("--pingpong-rounds", type=positive_type, default=100000,
                    help="64-byte round trips of the ping-pong")
    pp.add_argument("--enable", default=preload.DEFAULT_ENABLE,
                    help="zcrun --enable of the preload runs (every workload but apache-defaults); "
                         "'' for the preload's defaults everywhere")
    pp.add_argument("--no-pin", dest="pin", action="store_false",
                    help="do not pin Apache and wrk to separate CPUs")
    pp.add_argument("--server-cpu", type=fraction_type, default="0.5",
                    help="CPU budget of Apache, a fraction of one CPU (cgroup CPU quota); "
                         "0: no quota (the unconstrained method)")
    pp.add_argument("--out", default=None, help="result directory (default build/bench/preload-<timestamp>)")
    pp.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    pp.add_argument("--quick", action="store_true",
                    help="smoke run: 1 run, 1 s of wrk, 64 MiB inputs, fewer writes and round trips")
    pp.add_argument("--no-plot", action="store_true", help="skip the PNG figure")
    return pp


def _finish(out, meta, rows, plot=True):
    """Summary, files, figure, table; (summary, figure paths, table text)."""
    summary = preload_report.summarize(rows, meta.get("bars") or preload.BARS, preload.CLASSES,
                                       order=[w for w in preload.WORKLOADS
                                              if any(r["workload"] == w for r in rows)])
    preload_report.write_all(out, meta, rows, summary)
    figs = []
    if plot:
        try:
            figs = preload_report.plot(out, summary)
        except ImportError:
            print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figure", file=sys.stderr)
    return summary, figs, preload_report.table(summary)


def cmd_preload(a):
    if a.quick:
        a.runs, a.duration, a.dd_size, a.text_size = 1, 1.0, 64 << 20, 64 << 20
        a.null_writes, a.pingpong_rounds = 300000, 20000
    a.duration_s, a.dd_bytes, a.text_bytes = a.duration, a.dd_size, a.text_size
    a.out = a.out or preload.default_out()
    os.makedirs(a.out, exist_ok=True)
    try:
        meta, rows = preload.run(a)
    except (preload.PreloadBenchError, preload_pingpong.BuildError, preload_stats.StatsError,
            servers.ServerError, wrk.WrkError, BudgetError) as e:
        print(f"zcbench preload: {e}", file=sys.stderr)
        return 1
    summary, figs, text = _finish(a.out, meta, rows, plot=not a.no_plot)
    if a.json:
        json.dump({"summary": summary, "out": a.out}, sys.stdout, indent=1)
        print()
    else:
        print(text)
    print(f"zcbench: results in {a.out}" + (f" ({', '.join(os.path.basename(f) for f in figs)})"
                                             if figs else ""), file=sys.stderr)
    return 0


def cmd_report(data, out):
    """`zcbench report DIR` for a preload results.json."""
    summary, figs, text = _finish(out, data.get("meta", {}), data["runs"])
    print(text)
    print(f"zcbench: wrote {out} ({', '.join(os.path.basename(f) for f in figs)})", file=sys.stderr)
    return 0
