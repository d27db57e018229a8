"""zcbench's command line: `zcbench ipc|static|fastcgi|proxy|replay|preload|load|mach|streamline|cs-ipc ...`.

Exit status: 0 success, 1 the benchmark failed (a server did not start, wrk
errors above the threshold, a load check failed), 2 bad usage.
"""
import argparse
import json
import os
import sys
import time

from . import build_dir
from . import docroot as dr
from . import wrk
from .servers import NAMES as SERVERS

USAGE_EXIT = 2


def _sizes(text):
    try:
        return dr.parse_sizes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _duration(text):
    try:
        return wrk.parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return n


def _counts(text):
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(n < 0 or n > 4096 for n in out):
        raise argparse.ArgumentTypeError(f"not a list of counts 0-4096: {text!r}")
    return sorted(dict.fromkeys(out))


def _workers(text):
    from .scaling import parse_counts
    try:
        return parse_counts(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


WORKERS_HELP = ("workers of every server, or a list (1,4,8): each count on its own CPUs (the "
                "servers on N CPUs, wrk on the others with a thread per CPU, the CPU budget per "
                "server core), with a scaling table and figure; a count the machine cannot give "
                "N cores and keep one for wrk is measured but said not to be server-bound")


def _fraction(text):
    from .budget import parse_fraction
    try:
        return parse_fraction(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _list(choices):
    def parse(text):
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{','.join(bad) or 'empty list'}: choose from {','.join(choices)}")
        return list(dict.fromkeys(items))
    return parse


def build_parser():
    p = argparse.ArgumentParser(
        prog="zcbench",
        description="zcstack benchmarks: zero-copy IPC, static files against nginx/h2o, load checks.")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True

    sub.add_parser("ipc", add_help=False,
                   help="the IPC benchmark (runs build/bench/zcbench-ipc with the remaining arguments)")

    s = sub.add_parser(
        "static", help="static files: zchttpd vs nginx vs h2o vs the floor (IO-Lite Figures 3/4)",
        description="Serve one generated file per size from zchttpd, nginx, h2o and the floor "
                    "(bench/floor/zcfloor.c: accept, one recv, one send of a canned response) on "
                    "127.0.0.1 (same worker count, configs generated), each in a cgroup with a CPU "
                    "quota of --server-cpu on the last CPU, wrk on the others; interleaved runs; "
                    "a run where wrk used more than 80%% of its core is marked client-bound and "
                    "left out of the medians; print medians and ratios, write "
                    "results.csv/summary.csv/results.json and static-<mode>.png into --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    s.add_argument("--servers", type=_list(SERVERS), default="zchttpd,nginx,h2o,floor",
                   help="servers to compare (floor: the reference, bench/floor/zcfloor.c; "
                        "zchttpd-uring, floor-uring: the same on io_uring, --event io_uring; "
                        "zchttpd-tls, nginx-tls: HTTPS)")
    s.add_argument("--server-cpu", type=_fraction, default="0.5",
                   help="CPU budget of every server per core it runs on, a fraction of one CPU "
                        "(cgroup CPU quota per 100 ms period); 0: no quota (the unconstrained method)")
    s.add_argument("--sizes", type=_sizes, default="500,1k,2k,5k,10k,20k,50k,100k,200k",
                   help="file sizes (k = 1024 bytes)")
    s.add_argument("--modes", type=_list(("keepalive", "close")), default="keepalive,close",
                   help="keepalive: persistent connections; close: Connection: close, one request "
                        "per connection")
    s.add_argument("--protocol", choices=("http/1.1", "h2", "h2c"), default="http/1.1",
                   help="what the measured port speaks: h2 (over TLS, by ALPN) and h2c (prior "
                        "knowledge) are measured with h2load, keep-alive only, for zchttpd, nginx "
                        "and h2o")
    s.add_argument("--streams", type=_positive, default=10,
                   help="with --protocol h2/h2c: concurrent streams per connection (h2load -m)")
    s.add_argument("--runs", type=_positive, default=5, help="interleaved repetitions (median reported)")
    s.add_argument("--duration", type=_duration, default="5s", help="wrk duration per point")
    s.add_argument("--connections", type=_positive, default=50, help="wrk connections (-c)")
    s.add_argument("--workers", type=_workers, default="1", help=WORKERS_HELP)
    s.add_argument("--out", default=None, help="result directory (default build/bench/static-<timestamp>)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    s.add_argument("--quick", action="store_true",
                   help="smoke run: 1 run, 1 s, sizes 1k,100k (overrides --runs/--duration/--sizes)")
    s.add_argument("--no-plot", action="store_true", help="skip the PNG figures")
    s.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin the servers and wrk to separate CPUs (default: the servers "
                        "get the last --workers CPUs, wrk the rest, with a thread per CPU)")

    rp = sub.add_parser(
        "report", help="redo the tables and figures of a `zcbench static` result directory",
        description="Read DIR/results.json and rewrite summary.csv, results.json and the PNG "
                    "figures (into --out, default DIR); print the table.")
    rp.add_argument("dir", help="a `zcbench static` --out directory")
    rp.add_argument("--out", default=None, help="where to write (default: DIR)")

    po = sub.add_parser(
        "pool", help="pool the per-run ratios of several `zcbench static` results",
        description="Read DIR/results.json of each DIR and print, per mode, size and peer, "
                    "the median and range of every paired run's zchttpd/peer ratio and how "
                    "many were below 1.0.")
    po.add_argument("dirs", nargs="+", metavar="DIR", help="`zcbench static` --out directories")

    sc = sub.add_parser(
        "syscalls", help="system calls per request of each server (strace -c on its worker)",
        description="Attach strace -c to each server's worker during a wrk run and print "
                    "system calls per request.  strace slows the servers: only the per-request "
                    "counts mean something.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sc.add_argument("--servers", type=_list(SERVERS), default="zchttpd,nginx,h2o")
    sc.add_argument("--size", type=lambda t: _sizes(t)[0], default="1k", help="file size")
    sc.add_argument("--mode", choices=("keepalive", "close"), default="close")
    sc.add_argument("--duration", type=_duration, default="3s", help="wrk duration")
    sc.add_argument("--connections", type=_positive, default=50, help="wrk connections")
    sc.add_argument("--json", action="store_true", help="print JSON instead of a table")

    ld = sub.add_parser(
        "load", help="load checks on zchttpd: 10,000 idle keep-alive connections, slowloris",
        description="(a) hold --idle keep-alive connections (each made one request) while wrk "
                    "runs; (b) --slowloris connections send one header byte per second while wrk "
                    "runs, and must get 408 or be closed after --header-timeout.  Loopback only, "
                    "bounded in time (about 4 * --duration + --header-timeout).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ld.add_argument("--checks", type=_list(("idle", "slowloris")), default="idle,slowloris")
    ld.add_argument("--idle", type=_positive, default=10000, help="idle keep-alive connections")
    ld.add_argument("--slowloris", type=_positive, default=500, help="slowloris connections")
    ld.add_argument("--header-timeout", type=_positive, default=10000,
                    help="zchttpd --header-timeout (ms) for the slowloris check")
    ld.add_argument("--duration", type=_duration, default="5s", help="wrk duration")
    ld.add_argument("--connections", type=_positive, default=50, help="wrk connections")
    ld.add_argument("--workers", type=_positive, default=1, help="zchttpd workers")
    ld.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    from .preload_cli import add_parser as add_preload_parser
    pre = add_preload_parser(sub, _list, _duration, _positive, _fraction)
    from .fastcgi import CONFIGS, DEFAULT_SIZES
    fc = sub.add_parser(
        "fastcgi", help="dynamic content: zchttpd + FastCGI (zero-copy and standard) vs nginx, "
                        "static and php-fpm (IO-Lite Figures 5/6)",
        description="Serve ?size=N from zcgen (cgi/apps/zcgen.c) behind zchttpd on the zero-copy "
                    "transport and on a standard UNIX socket, behind nginx on Debian's libfcgi, "
                    "and from php-fpm behind both; and the same sizes as static files from "
                    "zchttpd and nginx.  Every configuration (server, workers and applications) "
                    "runs in one cgroup with a CPU quota of --server-cpu on the last CPU, wrk on "
                    "the others; interleaved runs; client-bound runs are left out of the medians. "
                    "Print medians, zc-gen-zc's ratios and the issue's bars; write "
                    "results.csv/summary.csv/results.json and fastcgi-<mode>.png into --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    fc.add_argument("--configs", type=_list(CONFIGS), default=",".join(CONFIGS),
                    help="configurations to compare")
    fc.add_argument("--server-cpu", type=_fraction, default="0.5",
                    help="CPU budget of every configuration, a fraction of one CPU; 0: no quota")
    fc.add_argument("--sizes", type=_sizes, default=DEFAULT_SIZES, help="response sizes (k = 1024 bytes)")
    fc.add_argument("--modes", type=_list(("keepalive", "close")), default="keepalive,close",
                    help="keepalive: persistent connections; close: one request per connection")
    fc.add_argument("--runs", type=_positive, default=5, help="interleaved repetitions (median reported)")
    fc.add_argument("--duration", type=_duration, default="5s", help="wrk duration per point")
    fc.add_argument("--connections", type=_positive, default=50, help="wrk connections (-c)")
    fc.add_argument("--workers", type=_positive, default=1, help="workers of every server")
    fc.add_argument("--apps", type=_positive, default=1,
                    help="FastCGI application processes of every dynamic configuration")
    fc.add_argument("--out", default=None, help="result directory (default build/bench/fastcgi-<timestamp>)")
    fc.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    fc.add_argument("--no-plot", action="store_true", help="skip the PNG figures")
    fc.add_argument("--no-pin", dest="pin", action="store_false",
                    help="do not pin the servers and wrk to separate CPUs")
    from .replay import POLICIES as REPLAY_POLICIES
    rpl = sub.add_parser(
        "replay", help="play a request trace against zchttpd (per cache policy), nginx and h2o",
        description="Make a document root from a trace (docs/trace-format.md; every object a "
                    "file of its size) and play its first --requests requests once, in order, "
                    "over --connections persistent connections (wrk + replay.lua), against "
                    "each server started afresh under a CPU quota of --server-cpu; check every "
                    "status; report requests/s, MB/s, errors and, for zchttpd, the cache hit "
                    "ratio beside gdssim's for the same requests, policy and cache size.  "
                    "Writes results.csv/summary.csv/results.json and replay.png into --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    rpl.add_argument("--trace", required=True, help="the trace file")
    rpl.add_argument("--requests", type=_positive, default=100000, help="requests played (a prefix)")
    rpl.add_argument("--servers", type=_list(("zchttpd", "nginx", "h2o", "floor", "floor-open")),
                     default="zchttpd,nginx,h2o,floor",
                     help="servers to compare (floor: bench/floor/zcfloor.c with every object in "
                          "memory, the least a server can do per request on this trace; "
                          "floor-open: the same, also opening each object's file at its first "
                          "request)")
    rpl.add_argument("--policies", type=_list(REPLAY_POLICIES), default="gdsf,gds1,lru",
                     help="zchttpd --cache-policy values, one configuration each")
    rpl.add_argument("--cache-size", default="5%",
                     help="zchttpd's (and gdssim's) cache: a percentage of the played objects' "
                          "bytes, or bytes (k/m/g)")
    rpl.add_argument("--page-cache", choices=("policy", "kernel"), default="policy",
                     help="zchttpd --page-cache: its cache's policy, or Linux's page cache, decides "
                          "what file data stays in memory")
    rpl.add_argument("--memory-limit", default=None,
                     help="IO-Lite's trace experiment: run every server in a memory cgroup at each "
                          "limit of this list, \"2x\" = half the objects' bytes, or bytes (256m); "
                          "zchttpd then gets 0.9 of the limit as its --cache-size")
    rpl.add_argument("--slow-clients", type=_counts, default=None,
                     help="IO-Lite's Figure 7: measure again with each number of slow clients "
                          "(small receive buffers, paced reads of a 1 MiB file) beside wrk, e.g. 0,16,64")
    rpl.add_argument("--connections", type=_positive, default=16, help="wrk connections (-c)")
    rpl.add_argument("--runs", type=_positive, default=3, help="interleaved repetitions (median reported)")
    rpl.add_argument("--server-cpu", type=_fraction, default="0.25",
                     help="CPU budget of every server per core it runs on, a fraction of one CPU; "
                          "0: no quota.  wrk with replay.lua costs about 60 us of CPU per request "
                          "on this 2-core machine, so one wrk core tops out near 15k req/s: at 0.5 "
                          "CPU every fast server is client-bound; at 0.25 the floor (the fastest, "
                          "about 26 us per request) keeps wrk near 0.55 of its core")
    rpl.add_argument("--workers", type=_workers, default="1",
                     help=WORKERS_HELP + "; zchttpd's --cache-size is the whole server's, whatever N")
    rpl.add_argument("--out", default=None, help="result directory (default build/bench/replay-<timestamp>)")
    rpl.add_argument("--root-base", default=None,
                     help="where document roots are kept (default build/bench/replay-roots)")
    rpl.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    rpl.add_argument("--no-plot", action="store_true", help="skip the PNG figure")
    rpl.add_argument("--no-pin", dest="pin", action="store_false",
                     help="do not pin the servers and wrk to separate CPUs")
    from . import proxy as px
    pr = sub.add_parser(
        "proxy", help="reverse proxies: zchttpd vs nginx, HAProxy, h2o and the floor of a proxy, "
                      "in front of one origin",
        description="Put zchttpd (--proxy), nginx (proxy_pass, upstream keepalive), HAProxy "
                    "(http-reuse always; and haproxy-splice: option splice-auto), h2o "
                    "(proxy.reverse.url) and the relay floor (bench/floor/zcrelay.c: splice both "
                    "ways, no HTTP) in front of one origin (nginx serving the generated files, on "
                    "the client CPU with wrk, no budget); measure each, and the origin and zchttpd "
                    "serving the files themselves (origin-direct, zchttpd-direct), in a cgroup "
                    "with a CPU quota of --budget on the last CPU; interleaved runs; a run where "
                    "wrk and the origin used more than 80 percent of the client CPU is marked "
                    "client-bound and left out of the medians.  Print medians, ratios to the "
                    "fastest peer, the relay and zchttpd-direct, and the issue's bars; write "
                    "results.csv/summary.csv/results.json, the configs and proxy-<mode>.png "
                    "into --out (docs/bench-proxy.md).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pr.add_argument("--servers", type=_list(px.NAMES), default=px.DEFAULT_SERVERS,
                    help="what to measure: the proxies (relay: the floor) and the direct references")
    pr.add_argument("--budget", "--server-cpu", dest="server_cpu", type=_fraction, default="0.5",
                    help="CPU budget of every proxy and direct reference per core it runs on, a "
                         "fraction of one CPU (cgroup quota); 0: no quota")
    pr.add_argument("--sizes", type=_sizes, default=px.DEFAULT_SIZES, help="body sizes (k = 1024 bytes)")
    pr.add_argument("--modes", type=_list(("keepalive", "close")), default="keepalive,close",
                    help="keepalive: persistent client connections; close: one request per "
                         "client connection (upstream connections are the proxy's business)")
    pr.add_argument("--runs", type=_positive, default=5, help="interleaved repetitions (median reported)")
    pr.add_argument("--duration", type=_duration, default="5s", help="wrk duration per point")
    pr.add_argument("--connections", type=_positive, default=50, help="wrk connections (-c)")
    pr.add_argument("--workers", type=_positive, default=1, help="workers of every proxy")
    pr.add_argument("--origin", choices=px.ORIGINS, default="nginx",
                    help="the origin: nginx serving the files, or zcfloor's canned responses "
                         "(cheaper per request: more room for wrk on the client CPU)")
    pr.add_argument("--nginx-keepalive", type=_positive, default=px.UPSTREAM_KEEPALIVE,
                    help="nginx's upstream `keepalive` (idle upstream connections kept per worker)")
    pr.add_argument("--origin-workers", type=_positive, default=None,
                    help="origin workers (default: one per client CPU)")
    pr.add_argument("--out", default=None, help="result directory (default build/bench/proxy-<timestamp>)")
    pr.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    pr.add_argument("--no-plot", action="store_true", help="skip the PNG figures")
    pr.add_argument("--no-pin", dest="pin", action="store_false",
                    help="do not pin the proxies and wrk to separate CPUs")
    from .papers_cli import add_parsers as add_paper_parsers
    from .preload_cli import parse_size
    papers = add_paper_parsers(sub, _positive, parse_size)
    p.commands = {"static": s, "load": ld, "report": rp, "syscalls": sc, "pool": po, "preload": pre,
                  "fastcgi": fc, "replay": rpl, "proxy": pr, **papers}
    return p


def cmd_ipc(args):
    binary = os.path.join(build_dir(), "bench", "zcbench-ipc")
    if not os.access(binary, os.X_OK):
        if args[:1] in (["--help"], ["-h"]):
            print("usage: zcbench ipc [ARGS...]\n\nRuns build/bench/zcbench-ipc with ARGS.")
        print(f"zcbench: {binary} is not built (bench/ipc/zcbench_ipc.c, then `make`)", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(binary, [binary, *args])


def cmd_static(a):
    from . import report, static
    if a.quick:
        a.runs, a.duration_s, a.sizes = 1, 1.0, [1024, 100 * 1024]
    else:
        a.duration_s = a.duration
    if a.protocol != "http/1.1":
        from .servers import H2_KINDS, speaks_http2
        other = [n for n in a.servers if not speaks_http2(n)]
        a.servers = [n for n in a.servers if speaks_http2(n)]
        if other:
            print(f"zcbench: --protocol {a.protocol}: {', '.join(other)} left out (HTTP/2 is "
                  f"measured on {', '.join(H2_KINDS)})", file=sys.stderr)
        if not a.servers:
            return 2
        a.modes = ["keepalive"]   # h2load keeps its connections
    if a.out is None:
        a.out = os.path.join(build_dir(), "bench", "static-" + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(a.out, exist_ok=True)
    meta, rows, summary, ratios, problems = static.run(a)
    report.write_all(a.out, meta, rows, summary, ratios)
    try:
        text, figs = static.present(a.out, meta, rows, summary, ratios, a.servers, a.server_cpu,
                                    plot=not a.no_plot)
    except ImportError:
        print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figures", file=sys.stderr)
        text, figs = static.present(a.out, meta, rows, summary, ratios, a.servers, a.server_cpu,
                                    plot=False)
    if a.json:
        n_cb, n_runs = report.client_bound_count(rows)
        json.dump({"summary": summary, "ratios": ratios, "problems": problems, "out": a.out,
                   "client_bound_runs": n_cb, "runs": n_runs, "budget": meta.get("budget")},
                  sys.stdout, indent=1)
        print()
    else:
        print(text)
    print(f"zcbench: results in {a.out}" + (f" ({', '.join(os.path.basename(f) for f in figs)})"
                                             if figs else ""), file=sys.stderr)
    for msg in problems:
        print(f"zcbench: errors: {msg}", file=sys.stderr)
    return 1 if problems else 0


def cmd_proxy(a):
    from . import proxy
    a.duration_s = a.duration
    if a.out is None:
        a.out = os.path.join(build_dir(), "bench", "proxy-" + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(a.out, exist_ok=True)
    meta, rows, summary, ratios, problems = proxy.run(a)
    proxy.write_all(a.out, meta, rows, summary, ratios)
    try:
        text, figs = proxy.present(a.out, meta, rows, summary, plot=not a.no_plot)
    except ImportError:
        print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figures", file=sys.stderr)
        text, figs = proxy.present(a.out, meta, rows, summary, plot=False)
    if a.json:
        json.dump({"summary": summary, "problems": problems, "out": a.out,
                   "bars": proxy.bars(summary), "not_started": meta["not_started"],
                   "warnings": proxy.warnings(rows), "budget": meta.get("budget")},
                  sys.stdout, indent=1)
        print()
    else:
        print(text)
    print(f"zcbench: results in {a.out}" + (f" ({', '.join(os.path.basename(f) for f in figs)})"
                                             if figs else ""), file=sys.stderr)
    for msg in proxy.warnings(rows):
        print(f"zcbench: warning: {msg}", file=sys.stderr)
    for msg in problems:
        print(f"zcbench: errors: {msg}", file=sys.stderr)
    return 1 if problems else 0


def cmd_replay(a):
    from . import replay, report
    if a.out is None:
        a.out = os.path.join(build_dir(), "bench", "replay-" + time.strftime("%Y%m%d-%H%M%S"))
    if a.root_base is None:
        a.root_base = os.path.join(build_dir(), "bench", "replay-roots")
    try:
        meta, rows, summary = replay.run(a)
    except replay.TraceError as e:
        print(f"zcbench: {e}", file=sys.stderr)
        return USAGE_EXIT
    replay.write_all(a.out, meta, rows, summary)
    figs = []
    if not a.no_plot:
        try:
            figs = replay.plot(a.out, summary, meta)
        except ImportError:
            print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figure", file=sys.stderr)
    if a.json:
        n_cb, n_runs = report.client_bound_count(rows)
        json.dump({"summary": summary, "out": a.out, "meta": meta, "client_bound_runs": n_cb,
                   "runs": n_runs}, sys.stdout, indent=1)
        print()
    else:
        print(replay.table(summary, rows, a.server_cpu))
    print(f"zcbench: results in {a.out}" + (f" ({', '.join(os.path.basename(f) for f in figs)})"
                                             if figs else ""), file=sys.stderr)
    bad = [s for s in summary if s["errors"]]
    for s in bad:
        print(f"zcbench: errors: {s['server']}: {s['errors']} bad answers", file=sys.stderr)
    return 1 if bad else 0


def cmd_fastcgi(a):
    from . import fastcgi, report
    a.duration_s = a.duration
    if a.out is None:
        a.out = os.path.join(build_dir(), "bench", "fastcgi-" + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(a.out, exist_ok=True)
    meta, rows, summary, ratios, problems = fastcgi.run(a)
    peers = [c for c in a.configs if c != fastcgi.REFERENCE]
    report.write_all(a.out, meta, rows, summary, ratios, fastcgi.REFERENCE, peers)
    figs = []
    if not a.no_plot:
        try:
            figs = report.plot(a.out, summary, a.configs, note=report.budget_note(meta),
                               what="fastcgi", style=fastcgi.STYLE)
        except ImportError:
            print("zcbench: matplotlib missing (run ci/deps.sh): no PNG figures", file=sys.stderr)
    if a.json:
        n_cb, n_runs = report.client_bound_count(rows)
        json.dump({"summary": summary, "ratios": ratios, "problems": problems, "out": a.out,
                   "bars": fastcgi.bars(summary), "client_bound_runs": n_cb, "runs": n_runs,
                   "budget": meta.get("budget")}, sys.stdout, indent=1)
        print()
    else:
        print(report.table(summary, ratios, a.configs, rows, budget=a.server_cpu,
                           reference=fastcgi.REFERENCE))
        print(fastcgi.bars_table(summary))
    print(f"zcbench: results in {a.out}" + (f" ({', '.join(os.path.basename(f) for f in figs)})"
                                             if figs else ""), file=sys.stderr)
    for msg in problems:
        print(f"zcbench: errors: {msg}", file=sys.stderr)
    return 1 if problems else 0


def _load_result(d):
    """DIR/results.json of a zcbench result, or None (said on stderr)."""
    try:
        with open(os.path.join(d, "results.json")) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"zcbench: {d}: no readable results.json ({e})", file=sys.stderr)
        return None


def cmd_report(a):
    from . import report
    data = _load_result(a.dir)
    if data is None:
        return 1
    out = a.out or a.dir
    if data.get("meta", {}).get("benchmark") == "preload":
        from . import preload_cli
        return preload_cli.cmd_report(data, out)
    if data.get("meta", {}).get("benchmark") == "proxy":
        from . import proxy
        return proxy.cmd_report(data, out)
    from . import static
    rows = data["runs"]
    servers = [s for s in SERVERS if any(r["server"] == s for r in rows)]
    summary, ratios = static.summarize(rows)
    meta = data.get("meta", {})
    report.write_all(out, meta, rows, summary, ratios)
    text, figs = static.present(out, meta, rows, summary, ratios, servers,
                                (meta.get("budget") or {}).get("server_cpu"))
    print(text)
    print(f"zcbench: wrote {out} ({', '.join(os.path.basename(f) for f in figs)})", file=sys.stderr)
    return 0


def cmd_pool(a):
    from . import report
    row_sets = []
    for d in a.dirs:
        data = _load_result(d)
        if data is None:
            return 1
        if data.get("meta", {}).get("benchmark") == "preload":
            print(f"zcbench: {d}: a `zcbench preload` result; pool takes `zcbench static` ones",
                  file=sys.stderr)
            return 1
        row_sets.append(data["runs"])
    print(report.pool_table(report.pool(row_sets)))
    return 0


def cmd_syscalls(a):
    from . import syscalls
    res = syscalls.run(a, lambda m: print(f"zcbench syscalls: {m}", file=sys.stderr, flush=True))
    if a.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        print(syscalls.table(res))
    return 0


def cmd_load(a):
    from . import load
    results = load.run(a)
    if a.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        print(load.describe(results))
    return 0 if all(r["ok"] for r in results.values()) else 1


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["ipc"]:
        return cmd_ipc(argv[1:])
    parser = build_parser()
    if argv and argv[0] in parser.commands:
        # the subcommand's own parser, so a bad flag prints that command's usage
        a = parser.commands[argv[0]].parse_args(argv[1:])
        a.cmd = argv[0]
    else:
        a = parser.parse_args(argv)
    a.argv = argv
    from .budget import BudgetError
    from .servers import ServerError
    try:
        if a.cmd == "static":
            return cmd_static(a)
        if a.cmd == "load":
            return cmd_load(a)
        if a.cmd == "report":
            return cmd_report(a)
        if a.cmd == "syscalls":
            return cmd_syscalls(a)
        if a.cmd == "pool":
            return cmd_pool(a)
        if a.cmd == "fastcgi":
            return cmd_fastcgi(a)
        if a.cmd == "replay":
            return cmd_replay(a)
        if a.cmd == "proxy":
            return cmd_proxy(a)
        if a.cmd == "preload":
            from . import preload_cli
            return preload_cli.cmd_preload(a)
        if a.cmd in ("mach", "streamline", "cs-ipc"):
            from . import papers_cli
            return papers_cli.cmd(a)
    except (ServerError, wrk.WrkError, BudgetError) as e:
        print(f"zcbench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zcbench: interrupted", file=sys.stderr)
        return 130
    return USAGE_EXIT
