"""`zcbench static`: IO-Lite's Figures 3 and 4 on today's servers.

One docroot (a file per size), every server started once (per worker
count), then

    for workers in --workers: for run in 1..runs: for size: for mode:
        for server (order rotated per run)
            wrk -t<client CPUs> -c<connections> -d<duration> --latency [-H "Connection: close"] URL

with every server pinned to the same CPU(s) and wrk to the others, a
thread per CPU (pinning.py; --no-pin to let the scheduler place them, one
wrk thread), so drift on a shared machine hits every server alike; the
median of the runs is reported per (workers, server, size, mode) with the
ratios zchttpd/peer.  Several worker counts (--workers 1,4,8) add the
scaling table and figures of scaling.py.

The method (docs/bench-static.md, "The method"): each server runs in a cgroup of its own with a CPU
quota (--server-cpu, default 0.5 of one CPU per server core; budget.py), so requests/s
say what it does with a fixed CPU budget; every point records the group's
CPU time and wrk's, and a point where wrk used more than 80 % of its core
is marked client-bound (cpu.py) and left out of the medians and ratios
(report.py).  The "floor" server (bench/floor/zcfloor.c: accept4, one recv,
one send of a canned response) is measured with the others: zchttpd/floor
is how close zchttpd gets to the least an epoll server can do.

Mode "close" sends "Connection: close": each response ends its connection and
wrk opens a new one (the paper's HTTP/1.0 one-request-per-connection case).
For zchttpd the server's own connections.total counter is read around every
run (server_conns), which shows that wrk really reconnected.
"""
import hashlib
import http.client
import json
import os
import shutil
import sys
import tempfile
import time

from . import budget as bg
from . import docroot as dr
from . import h2load, pinning, report, scaling, servers, wrk
from .cpu import busy_share, client_cores, cpu_times, is_client_bound

DEFAULT_SIZES = "500,1k,2k,5k,10k,20k,50k,100k,200k"
DEFAULT_SERVERS = "zchttpd,nginx,h2o,floor"
MODES = ("keepalive", "close")
ERROR_FRACTION = 0.001  # a run with more errors than this share of requests is flagged
MAX_RESTARTS = 20       # servers started afresh after refusing connections, per zcbench run


def verify_bodies(srv, wanted):
    """GET every (path, sha256, size) of wanted once from srv and compare
    the body's digest (also warms caches and starts FastCGI applications'
    connections); a wrong one is a ServerError."""
    for path, digest, size in wanted:
        status, body = srv.fetch(path)
        if status != 200 or hashlib.sha256(body).hexdigest() != digest:
            raise servers.ServerError(f"{srv.name} served {path} wrong: status {status}, "
                                      f"{len(body)} bytes (want {size})\n{srv.log_tail(10)}")


def file_bodies(files):
    """verify_bodies' list for a docroot (docroot.make_docroot's files)."""
    return [(path, digest, size) for size, (path, digest) in files.items()]


def _conns_total(srv):
    if srv.kind != "zchttpd":
        return None
    try:
        return servers.zchttpd_status(srv.status_port)["connections"]["total"]
    except (OSError, KeyError, ValueError, servers.ServerError):
        return None


def measure(srv, run_wrk, client_cpus=None, threads=1):
    """Call run_wrk() (one wrk run against srv) and return (its WrkResult,
    the method's fields of the row): the server's CPU time (its cgroup's,
    or its processes' from /proc without one) in total, per request and as
    a share of one CPU, how often the quota throttled it, and wrk's own CPU
    use: above 80 % of its core (cpu.CLIENT_BOUND) the client, not the
    server, set the rate, and the row is marked client_bound.  Also how
    busy the client's and the server's CPUs were with everything on them
    (others' work included): on a shared machine a client CPU that is full
    while wrk is below 80 % was taken by someone else."""
    thr0, cpu0, t0 = srv.throttling(), srv.cpu_seconds(), time.monotonic()
    ticks0 = cpu_times()
    res = run_wrk()
    ticks1 = cpu_times()
    wall = time.monotonic() - t0
    cpu1, thr1 = srv.cpu_seconds(), srv.throttling()
    fields = {
        "server_cpu_s": cpu1 - cpu0,
        "server_cpu_us_per_req": (cpu1 - cpu0) * 1e6 / res.requests if res.requests else None,
        "server_cpu_util": (cpu1 - cpu0) / wall if wall > 0 else None,
        "client_cpu_util": res.client_cpu_util,
        "client_bound": is_client_bound(res.client_cpu_util, client_cores(threads, client_cpus)),
        "wrk_retries": res.retries,
        "client_cpus_busy": busy_share(ticks0, ticks1, client_cpus),
        "server_cpus_busy": busy_share(ticks0, ticks1, srv.cpus),
    }
    if thr0 is not None and thr1 is not None:
        periods = thr1["periods"] - thr0["periods"]
        fields["throttled_share"] = (thr1["throttled"] - thr0["throttled"]) / periods if periods else 0.0
    return res, fields


def run_one(srv, path, mode, connections, duration_s, client_cpus=None, threads=1, streams=10):
    """One wrk run against srv (h2load for HTTP/2: `streams` at a time on
    each connection); a result row (without run/size fields): the load
    generator's figures and the method's (measure())."""
    before = _conns_total(srv)
    if srv.protocol == "http/1.1":
        def load():
            return wrk.run(srv.url(path), connections, duration_s, threads=threads,
                           close=(mode == "close"), cpus=client_cpus)
    else:
        def load():
            return h2load.run(srv.url(path), connections, streams, duration_s, threads=threads,
                              cpus=client_cpus)
    res, fields = measure(srv, load, client_cpus, threads)
    after = _conns_total(srv)
    row = {
        "requests": res.requests, "duration_s": res.duration_s,
        "requests_per_s": res.requests_per_s, "mbytes_per_s": res.bytes_per_s / 1e6,
        # h2load gives no percentiles: empty, not 0.
        "latency_p50_ms": res.latency_pct["50"] * 1e3 if "50" in res.latency_pct else None,
        "latency_p99_ms": res.latency_pct["99"] * 1e3 if "99" in res.latency_pct else None,
        "errors": res.errors, "socket_errors": res.socket_errors, "non_2xx_3xx": res.non_2xx_3xx,
        # connections the server accepted during the run; -1 for the status
        # request's own connection (the "before" one was counted before it).
        "server_conns": (after - before - 1) if before is not None and after is not None else None,
        "client_waits_per_req": res.client_waits_per_req,
        **fields,
    }
    return row


def drive(opts, names, start, path_of, client_cpus, meta, log=sys.stderr, threads=1, tag="",
          observe=None):
    """The measurement loop shared by `zcbench static` and `zcbench fastcgi`:
    start(name) every server (or configuration), then

        for run in 1..runs: for size: for mode: for server (order rotated per run)

    one wrk run each (run_one), a row per point.  A server that refuses
    connections or dies during a run is started again and the point measured
    again (at most MAX_RESTARTS times); on this shared machine other
    people's `pkill zchttpd` stopped the benchmark's servers now and then.
    An interrupted or failed run writes what it measured to
    results-partial.json.  Every server is stopped at the end.  Returns
    (rows, problems).  threads: wrk's (-t); tag: what the progress lines
    say before each point (the worker count); observe: called before each
    point, returns a function that is given the point's row (server, size,
    mode and run filled in) to add what else was watched around it (`zcbench
    proxy`: the origin's CPU)."""
    started, rows, problems = [], [], []
    meta.setdefault("restarts", [])
    total = 0

    def restart(srv, j, order, why, where):
        state = srv.state_report()
        meta["restarts"].append({"server": srv.name, **where, "why": why[-1500:], "state": state})
        print(f"{why.splitlines()[0][:120]}; restarting {srv.name}:\n{state}", file=log, flush=True)
        srv.stop()
        new = start(srv.name)
        started[started.index(srv)] = order[j] = new
        print(f"[{where['point']}/{total}] {srv.name} again ... ", end="", file=log, flush=True)
        return new

    def measured(srv, j, order, path, mode, where):
        while True:
            try:
                row = run_one(srv, path, mode, opts.connections, opts.duration_s, client_cpus, threads,
                              getattr(opts, "streams", 10))
                if srv.proc.poll() is None:
                    return srv, row
                why = f"{srv.name} died during the run"
            except wrk.WrkError as e:
                if "unable to connect" not in str(e):
                    raise
                why = str(e)
            if len(meta["restarts"]) >= MAX_RESTARTS:
                raise servers.ServerError(f"{why}\n{srv.state_report()}")
            srv = restart(srv, j, order, why, where)

    try:
        for name in names:
            started.append(start(name))
        total = opts.runs * len(opts.sizes) * len(opts.modes) * len(started)
        i = 0
        for run_no in range(1, opts.runs + 1):
            k = (run_no - 1) % len(started)
            order = started[k:] + started[:k]
            for size in opts.sizes:
                label = dr.size_label(size)
                for mode in opts.modes:
                    for j, srv in enumerate(order):
                        i += 1
                        print(f"[{i}/{total}] {tag}run {run_no}/{opts.runs} size {label} {mode} {srv.name} ... ",
                              end="", file=log, flush=True)
                        watched = observe() if observe else None
                        srv, row = measured(srv, j, order, path_of(srv, size), mode,
                                            {"run": run_no, "size": size, "mode": mode, "point": i})
                        row.update(run=run_no, size=size, size_label=label, mode=mode, server=srv.name,
                                   loadavg1=os.getloadavg()[0])
                        if watched:
                            watched(row)
                        rows.append(row)
                        who, util = (("wrk + origin", row["client_side_util"]) if "client_side_util" in row
                                     else ("wrk", row["client_cpu_util"]))
                        note = "  (client-bound: {} at {:.0%} of {} core(s))".format(
                            who, util, threads) if row["client_bound"] else ""
                        if row["requests"] == 0 or row["errors"] > ERROR_FRACTION * row["requests"]:
                            msg = (f"{srv.name} {label} {mode} run {run_no}: {row['errors']} errors "
                                   f"({row['socket_errors']} socket, {row['non_2xx_3xx']} status>399) "
                                   f"in {row['requests']} requests")
                            problems.append(msg)
                            note += f"  ({row['errors']} errors!)"
                        elif row["errors"]:
                            note += f"  ({row['errors']} errors)"
                        util = row.get("server_cpu_util")
                        print(f"{row['requests_per_s']:,.0f} req/s" +
                              (f", server {util:.2f} CPU" if util is not None else "") +
                              note, file=log, flush=True)
    except BaseException:
        if rows:   # an interrupted or failed run keeps what it measured
            with open(os.path.join(opts.out, "results-partial.json"), "w") as f:
                json.dump({"meta": meta, "runs": rows}, f, indent=1)
        raise
    finally:
        for srv in started:
            srv.stop()
    return rows, problems


def setup(opts, what, names, budget, log=sys.stderr):
    """The run's meta (command, parameters, machine, placement, budget) and
    the CPUs of the servers and of wrk; says where everything runs."""
    meta = {
        "command": f"zcbench {what} " + " ".join(getattr(opts, "argv", [])),
        "servers": names, "sizes": opts.sizes, "modes": opts.modes, "runs": opts.runs,
        "duration_s": opts.duration_s, "connections": opts.connections, "workers": opts.workers,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_note(),
    }
    first = opts.workers[0] if isinstance(opts.workers, list) else opts.workers
    server_cpus, client_cpus = (pinning.split(pinning.available(), first)
                                if getattr(opts, "pin", True) else (None, None))
    meta["placement"] = {"server_cpus": server_cpus, "client_cpus": client_cpus}
    meta["budget"] = budget.as_dict()
    meta["client_bound_limit"] = report.CLIENT_BOUND
    print(f"zcbench: servers on CPU {pinning.describe(server_cpus)}, wrk on CPU "
          f"{pinning.describe(client_cpus)}; {budget.describe()}", file=log)
    if budget.swept:
        print(f"zcbench: removed {len(budget.swept)} cgroup(s) left by an earlier zcbench: "
              f"{', '.join(budget.swept)}", file=log)
    return meta, server_cpus, client_cpus


def summarize(rows, reference=report.REFERENCE):
    """report.summarize per worker count: (summary, ratios), every entry
    with its "workers" and the placement of its rows (scaling.py)."""
    summary, ratios = [], []
    for n, rs in scaling.by_workers(rows).items():
        s, r = report.summarize(rs, reference)
        where = {k: rs[0].get(k) for k in ("server_cores", "wrk_threads", "cores_short")}
        for e in s:
            e.update(workers=n, **where)
        for e in r:
            e["workers"] = n
        summary += s
        ratios += r
    return summary, ratios


def finish(meta, rows, problems, reference=report.REFERENCE, log=sys.stderr):
    """Summary and ratios of the rows (against `reference`); meta completed."""
    if meta["restarts"]:
        print(f"zcbench: {len(meta['restarts'])} server(s) refused connections and were started "
              f"again: {', '.join(r['server'] + ' at point ' + str(r['point']) for r in meta['restarts'])} "
              "(results.json: meta.restarts)", file=log)
    summary, ratios = summarize(rows, reference)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["machine_after"] = machine_note()
    meta["problems"] = problems
    return meta, rows, summary, ratios, problems


def run(opts, log=sys.stderr):
    """Run the whole experiment.  opts: servers, sizes, modes, runs, duration_s,
    connections, workers, out.  Returns (meta, rows, summary, ratios, problems)."""
    protocol = getattr(opts, "protocol", "http/1.1")
    if protocol == "http/1.1":
        wrk.find_wrk()
    else:
        h2load.find_h2load()
    budget = bg.Budget(getattr(opts, "server_cpu", 0.0))   # BudgetError before anything is made
    tmp = tempfile.mkdtemp(prefix="zcbench-static-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "docroot")
    files = dr.make_docroot(root, opts.sizes)
    meta, _, _ = setup(opts, "static", opts.servers, budget, log)
    meta["protocol"] = protocol
    if protocol != "http/1.1":
        meta["load"] = f"h2load, {getattr(opts, 'streams', 10)} streams per connection"
    counts = opts.workers if isinstance(opts.workers, list) else [opts.workers]
    rows, problems = [], []
    meta["placements"] = {}

    def start_with(place):
        def start(name):
            srv = servers.Server(name, root, tmp, workers=place.workers, cpus=place.server_cpus,
                                 budget=budget, private_copy=True, protocol=protocol)
            srv.start()
            try:
                verify_bodies(srv, file_bodies(files))
            except BaseException:
                srv.stop()
                raise
            key = name if len(counts) == 1 else f"{name} workers={place.workers}"
            meta.setdefault("commands", {})[key] = " ".join(srv.cmdline)
            print(f"zcbench: {name} on 127.0.0.1:{srv.port} ({place.workers} worker(s))", file=log)
            return srv
        return start

    try:
        for n in counts:
            place = pinning.place(pinning.available(), n, opts.connections, getattr(opts, "pin", True))
            meta["placements"][str(n)] = scaling.placement_fields(place) | {
                "server_cpus": place.server_cpus, "client_cpus": place.client_cpus}
            print(f"zcbench: {n} worker(s): {place.describe()}", file=log, flush=True)
            got, bad = drive(opts, opts.servers, start_with(place), lambda srv, size: files[size][0],
                             place.client_cpus, meta, log, place.threads,
                             f"workers {n} " if len(counts) > 1 else "")
            for r in got:
                r.update(scaling.placement_fields(place))
            rows += got
            problems += bad
    finally:
        save_configs(tmp, opts.out, opts.servers)
        shutil.rmtree(tmp, ignore_errors=True)
    return finish(meta, rows, problems, log=log)


def present(out, meta, rows, summary, ratios, names, budget=None, plot=True):
    """The text (report.table per worker count, and with several the
    scaling table) and the figures (static-<mode>.png, per worker count
    static-<mode>-w<N>.png when there are several, static-scaling-<mode>.png)
    of a result.  Returns (text, figure paths)."""
    per_n = scaling.by_workers(rows)
    many = len(per_n) > 1
    text, figs = [], []
    for n, rs in per_n.items():
        s = [e for e in summary if e.get("workers") == n]
        r = [e for e in ratios if e.get("workers") == n]
        if many:
            text.append(f"## {n} worker(s): {scaling.verdict_line(s)}\n")
        text.append(report.table(s, r, names, rs, budget=budget))
        if plot:
            figs += report.plot(out, s, names, note=report.budget_note(meta)
                                + (f"; {n} workers" if many else ""),
                                suffix=f"-w{n}" if many else "")
    if many:
        text.append(scaling.scaling_table(summary, names, lambda e: (e["mode"] != "keepalive", e["mode"], e["size"]),
                                          lambda k: f"{k[1]}, {dr.size_label(k[2])}"))
        if plot:
            for mode in sorted({e["mode"] for e in summary}):
                here = [e for e in summary if e["mode"] == mode]
                figs.append(scaling.plot_scaling(
                    out, here, names, lambda e: e["size"], dr.size_label,
                    f"static-scaling-{mode}", f"zcbench static, {mode}: scaling with the worker count; "
                    + report.budget_note(meta), report.STYLE))
    return "\n".join(text), figs


def save_configs(tmp, out, names=servers.NAMES, more=()):
    """Keep the generated server configs (and error logs) beside the results."""
    dest = os.path.join(out, "configs")
    for name in names:
        for f in ("nginx.conf", "h2o.yaml", "error.log", "stderr.log", *more):
            src = os.path.join(tmp, name, f)
            if os.path.exists(src) and os.path.getsize(src) <= 1 << 20:
                os.makedirs(dest, exist_ok=True)
                shutil.copy(src, os.path.join(dest, f"{name}-{f}"))


def machine_note():
    """CPU model, core count, kernel and load: enough to read the numbers by."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return {"cpu": model, "cores": os.cpu_count(), "kernel": os.uname().release, "loadavg": load}
