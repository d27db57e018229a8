"""`zcbench replay`: a request trace played against the live servers.

The trace (docs/trace-format.md; access logs through bench/trace/clf2trace.py)
becomes a document root -- every object a file of its size, `/o/ID` -- and a
request list, the first --requests requests in order.  wrk plays that list
once over --connections persistent connections (replay.lua: one Lua state
per wrk thread hands its share of the requests out in order; every
answer's status is checked; the run ends at the last answer), against each
server started afresh (cold cache) under a CPU budget (budget.py; 0.25 CPU
per server core by default, where wrk -- about 60 us of CPU per request
with its Lua script -- is not the limit on a 2-core machine) with
cpu.py's client-bound marking: a run where wrk used more than 80 % of its
cores is left out of the medians, and the table says how many were:

  zchttpd-POLICY  zchttpd --workers N --cache-policy POLICY --cache-size B
                  for every --policies entry; B is the whole server's
                  budget whatever N is (passed once); its cache hit ratio
                  is read from its status endpoint (hits and misses during
                  the run, all workers) and put beside gdssim's for the
                  same requests, policy and cache size
  nginx, h2o      servers.py's configurations (nginx with open_file_cache)
  floor           bench/floor/zcfloor.c: every object read into memory at
                  start, one recv and one send of a canned response per
                  request -- the least a server can do on this trace; the
                  table gives every server's ratio to it ("vs floor")
  floor-open      the same, also opening and stat'ing each object's file at
                  its first request (--open-first): the least a server that
                  finds its files when asked can do ("vs floor-open")

With --workers N,... (scaling.py) every point is measured at each worker
count: the servers on N CPUs of their own, wrk on the others with a thread
per CPU (each thread plays every T-th request of the list); a count the
machine cannot give N cores while keeping one for wrk is said not to be
server-bound.  The scaling table gives requests/s, CPU per request, the
ratio to the floor and the live hit ratio per N.

The live and simulated hit ratios differ for known reasons: the server sees
the requests of --connections connections interleaved as they complete, not
strictly in trace order; its cache charges each entry 512 bytes besides the
body (gdssim charges the size only) and rounds small bodies to the pool's
buffer sizes; and a file is revalidated (one stat) every --cache-ttl.

With --memory-limit (IO-Lite's trace experiment, Table 1) every server runs
in a memory cgroup (memlimit.py) at each limit given -- "2x" is half the
objects' bytes: a data set twice the memory -- and starts with none of the
objects in the page cache; zchttpd then gets a --cache-size of CACHE_SHARE
of the limit (with --page-cache policy, the default here, its policy
decides what stays in the memory it has; with kernel, Linux's page cache
does within the group), and every run reports the bytes the server read
from the disk.

With --slow-clients N,... (IO-Lite section 4.4, Figure 7) every point is
measured again while N slow clients (slowclients.py: small receive
buffers, paced reads of a 1 MiB file) hold connections to the server; the
replay's requests/s are the fast clients'.

Objects' content is deterministic (a fixed random block, shifted by the id),
starts with "o:" so that no body begins like a filler answer (replay.lua),
and is written once per object set under build/bench/replay-roots/.
"""
import dataclasses
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from . import figure
from . import build_dir, pinning, scaling, servers, wrk
from . import budget as bg
from . import memlimit
from . import report
from .slowclients import SlowClients
from .cpu import children_cpu_seconds, children_waits
from .static import measure, setup

LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay.lua")
FILLER_FILE = "zcbench-filler"
SLOW_FILE = "zcbench-slow.bin"      # what slow clients ask for
SLOW_SIZE = 1 << 20
FILLER_BODY = b"zcbench-filler\n"
STATUS_MARK = '{"workers":'        # zchttpd's status page begins so
POLICIES = ("gds1", "gdsp", "gdsf", "gdsf-all", "lru")
CACHE_SHARE = 0.9      # of a memory limit, zchttpd's --cache-size (the rest: heap, sockets)
PEERS = ("nginx", "h2o", "floor", "floor-open")
START_TIMEOUT_S = 120  # the floor reads every object into memory before it answers
_BLOCK = random.Random(0x5eed).randbytes(1 << 20)


class TraceError(ValueError):
    pass


# -- the trace ------------------------------------------------------------------

def read_trace(path, limit=None):
    """[(object_id, size)] of the first `limit` requests (all if None), in
    order.  The format's rules: '#' lines and blank lines carry nothing; a
    request has 3 or 6 fields; ids and sizes are plain decimal integers,
    sizes > 0.  TraceError names the line of anything else."""
    reqs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            fields = s.split()
            if len(fields) not in (3, 6) or not (fields[1].isdigit() and fields[2].isdigit()):
                raise TraceError(f"{path}:{lineno}: not a trace request: {s[:80]!r}")
            size = int(fields[2])
            if size <= 0:
                raise TraceError(f"{path}:{lineno}: size must be > 0")
            reqs.append((int(fields[1]), size))
            if limit is not None and len(reqs) >= limit:
                break
    if not reqs:
        raise TraceError(f"{path}: no requests")
    return reqs


def objects(reqs):
    """{object_id: size}: each object at its largest size (a size change is a
    new version; serving the largest keeps every request's length at least
    its own)."""
    objs = {}
    for oid, size in reqs:
        if size > objs.get(oid, 0):
            objs[oid] = size
    return objs


def content(oid, size):
    """The bytes of object `oid` at `size`: "o:" then the fixed block from an
    offset that depends on the id, repeated as needed."""
    off = (oid * 2654435761) % len(_BLOCK)
    need = max(0, size - 2)
    body = bytearray(b"o:")
    while len(body) - 2 < need:
        chunk = _BLOCK[off:off + (need - (len(body) - 2))]
        body += chunk
        off = 0
    return bytes(body[:size])


def root_id(objs):
    """A name for this set of objects (the root is reused when it matches)."""
    h = hashlib.sha256()
    for oid in sorted(objs):
        h.update(b"%d %d\n" % (oid, objs[oid]))
    return h.hexdigest()[:16]


def make_root(base, objs, log=sys.stderr):
    """The document root for objs under base/<root_id>: o/ID files, an
    index.html (the servers' start probe) and the filler file.  Written once;
    a root whose marker says it is complete is reused."""
    root = os.path.join(base, root_id(objs))
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        if not os.path.exists(os.path.join(root, SLOW_FILE)):   # roots from before it
            with open(os.path.join(root, SLOW_FILE), "wb") as f:
                f.write(content(0, SLOW_SIZE))
        return root
    os.makedirs(os.path.join(root, "o"), exist_ok=True)
    total = sum(objs.values())
    print(f"zcbench: writing {len(objs):,} objects ({total / 1e6:,.1f} MB) under {root}",
          file=log, flush=True)
    for oid, size in objs.items():
        with open(os.path.join(root, "o", str(oid)), "wb") as f:
            f.write(content(oid, size))
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<h1>zcbench replay</h1>\n")
    with open(os.path.join(root, FILLER_FILE), "wb") as f:
        f.write(FILLER_BODY)
    with open(os.path.join(root, SLOW_FILE), "wb") as f:
        f.write(content(0, SLOW_SIZE))
    for d, _, _ in os.walk(root):
        os.chmod(d, 0o755)
    with open(marker, "w") as f:
        f.write(f"{len(objs)} objects {total} bytes\n")
    return root


def write_list(path, reqs):
    with open(path, "w") as f:
        for oid, _ in reqs:
            f.write(f"/o/{oid}\n")


def write_trace(path, reqs):
    """The played requests as a trace of their own (what gdssim replays)."""
    with open(path, "w") as f:
        f.write("# zctrace 1\n")
        for i, (oid, size) in enumerate(reqs):
            f.write(f"{i} {oid} {size}\n")


def parse_cache_size(text, unique_bytes):
    """--cache-size: "5%" of the played objects' bytes, or bytes with an
    optional k/m/g suffix (binary).  At least 64 KiB."""
    t = text.strip().lower()
    try:
        if t.endswith("%"):
            n = int(float(t[:-1]) / 100 * unique_bytes)
        else:
            mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
            n = int(float(t[:-1] if t[-1:] in "kmg" else t) * mult)
    except ValueError:
        raise TraceError(f"bad cache size {text!r} (examples: 5%, 64m)") from None
    return max(n, 64 << 10)


def simulate(trace_path, policies, cache_bytes):
    """{policy: object hit ratio} from gdssim for the played requests."""
    gdssim = os.path.join(build_dir(), "gds-cache", "gdssim")
    if not os.access(gdssim, os.X_OK):
        raise servers.ServerError(f"{gdssim} is not built (run `make`)")
    p = subprocess.run([gdssim, "--trace", trace_path, "--policy", ",".join(policies),
                        "--cache-size", str(cache_bytes), "--json"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise servers.ServerError(f"gdssim failed: {p.stderr.strip()}")
    return {r["policy"]: r["hit_ratio"] for r in json.loads(p.stdout)["results"]}


# -- one run --------------------------------------------------------------------

def merge_results(parts):
    """One result from the threads' OUT.k objects (replay.lua): their
    counts added up, the run's time from the earliest start to the latest
    end, the bad answers by status."""
    statuses = {}
    for p in parts:
        for k, v in p.get("bad_statuses", {}).items():
            statuses[k] = statuses.get(k, 0) + v
    return {"requests": sum(p["requests"] for p in parts), "bad": sum(p["bad"] for p in parts),
            "bytes": sum(p["bytes"] for p in parts),
            "elapsed_s": max(p["end_s"] for p in parts) - min(p["start_s"] for p in parts),
            "bad_statuses": statuses}


def play(srv, list_path, connections, client_cpus, filler, mark, time_limit_s, threads=1):
    """wrk plays the list once against srv (replay.lua, `threads` wrk
    threads, each with every threads-th request); a wrk.WrkResult
    (requests, duration, bytes, bad answers as non_2xx_3xx) with the
    client's CPU time.  WrkError if the run did not complete."""
    out = list_path + ".result.json"
    outs = [f"{out}.{k}" for k in range(1, threads + 1)]
    for o in outs:
        if os.path.exists(o):
            os.unlink(o)
    argv = [wrk.find_wrk(), f"-t{threads}", f"-c{connections}", f"-d{int(time_limit_s)}s", "-s", LUA,
            srv.url("/"), "--", list_path, filler, mark, out, str(threads)]
    cpu0, waits0 = children_cpu_seconds(), children_waits()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=time_limit_s + 30,
                           preexec_fn=pinning.preexec(client_cpus))
    except subprocess.TimeoutExpired:
        raise wrk.WrkError(f"wrk did not finish: {' '.join(argv)}") from None
    if not all(os.path.exists(o) for o in outs):
        raise wrk.WrkError(f"the replay did not complete in {time_limit_s:.0f} s against "
                           f"{srv.name} (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    parts = []
    for o in outs:
        with open(o) as f:
            parts.append(json.load(f))
    got = merge_results(parts)
    r = wrk.WrkResult(requests=got["requests"], duration_s=got["elapsed_s"],
                      bytes_read=got["bytes"], non_2xx_3xx=got["bad"])
    r.requests_per_s = r.requests / r.duration_s if r.duration_s else 0.0
    r.bytes_per_s = r.bytes_read / r.duration_s if r.duration_s else 0.0
    r.client_cpu_s = children_cpu_seconds() - cpu0
    r.client_waits = children_waits() - waits0
    r.bad_statuses = got["bad_statuses"]
    return r


def parse_limits(text, unique_bytes):
    """--memory-limit: comma-separated "2x" (the objects' bytes over 2) or
    byte counts ("256m"); [(label, bytes)] largest first."""
    out = []
    for tok in (t.strip() for t in text.split(",") if t.strip()):
        if tok.lower().endswith("x"):
            k = float(tok[:-1])
            if k <= 0:
                raise TraceError(f"bad memory limit {tok!r}")
            out.append((tok.lower(), int(unique_bytes / k)))
        else:
            try:
                out.append((tok, memlimit.parse_bytes(tok)))
            except ValueError as e:
                raise TraceError(str(e)) from None
    return sorted(out, key=lambda x: -x[1])


# zchttpd's cache counters a run reports besides its hit ratio, as
# "cache_<name>" (what the policy did: evicted, refused, pages let go).
POLICY_COUNTERS = ("evictions", "not_admitted", "dropped")


def cache_status(srv):
    return servers.zchttpd_status(srv.port)["cache"]


def cache_counts(srv):
    st = cache_status(srv)
    return st["hits"], st["misses"]


def configs(opts, cache_bytes, page_cache):
    """[(label, server name, extra args, policy or None)]."""
    out = [(f"zchttpd-{p}", "zchttpd", ["--cache-policy", p, "--cache-size", str(cache_bytes),
                                        "--page-cache", page_cache], p)
           for p in opts.policies]
    out += [(s, s, [], None) for s in opts.servers if s != "zchttpd"]
    return out


def run(opts, log=sys.stderr):
    """Play the trace against every configuration (at every memory limit),
    --runs times interleaved.  Returns (meta, rows, summary)."""
    wrk.find_wrk()
    budget = bg.Budget(opts.server_cpu)
    reqs = read_trace(opts.trace, opts.requests)
    objs = objects(reqs)
    unique = sum(objs.values())
    limits = parse_limits(opts.memory_limit, unique) if opts.memory_limit else [(None, None)]
    opts.cache_bytes = parse_cache_size(opts.cache_size, unique)
    opts.sizes, opts.modes, opts.duration_s = [], ["keepalive"], 0.0   # for setup()'s meta
    root = make_root(opts.root_base, objs, log)
    os.makedirs(opts.out, exist_ok=True)
    list_path = os.path.join(opts.out, "requests.txt")
    trace_path = os.path.join(opts.out, "played.trace")
    write_list(list_path, reqs)
    write_trace(trace_path, reqs)
    if limits[0][0] and {"floor", "floor-open"} & set(opts.servers):
        raise TraceError("the floor holds every object in memory (twice): it has no place in "
                         "--memory-limit runs; leave it out of --servers")
    meta, _, _ = setup(opts, "replay", [c[0] for c in configs(opts, 0, opts.page_cache)], budget, log)
    places = {n: pinning.place(pinning.available(), n, opts.connections, getattr(opts, "pin", True))
              for n in opts.workers}
    # every wrk thread plays a share of the list: at least one request each
    places = {n: dataclasses.replace(p, threads=min(p.threads, len(reqs))) for n, p in places.items()}
    meta["placements"] = {str(n): {**scaling.placement_fields(p), "server_cpus": p.server_cpus,
                                   "client_cpus": p.client_cpus} for n, p in places.items()}
    for n, p in places.items():
        print(f"zcbench: {n} worker(s): {p.describe()}", file=log, flush=True)
    meta.update(trace=os.path.abspath(opts.trace), requests=len(reqs), objects=len(objs),
                unique_bytes=unique, cache_bytes=opts.cache_bytes, root=root,
                memory_limits=[{"label": lab, "bytes": b} for lab, b in limits], simulated={})
    tmp = tempfile.mkdtemp(prefix="zcbench-replay-")
    rows = []
    time_limit = max(120.0, len(reqs) / 200.0)
    slows = opts.slow_clients or [0]
    total = opts.runs * len(limits) * len(slows) * len(places) * len(configs(opts, 0, opts.page_cache))
    point = 0
    # Slow-client counts are interleaved within each run (not measured one
    # after the other): the first runs after the objects were written meet
    # a colder host cache under the virtual disk, which S1 showed favours
    # whatever comes later.
    for lim_label, lim in limits:
        cache = int(CACHE_SHARE * lim) if lim else opts.cache_bytes
        page_cache = opts.page_cache
        sim = simulate(trace_path, opts.policies, cache) if opts.policies else {}
        meta["simulated"][lim_label or "none"] = sim
        cfgs = configs(opts, cache, page_cache)
        print(f"zcbench: {len(reqs):,} requests for {len(objs):,} objects ({unique / 1e6:,.1f} MB)"
              + (f"; memory limit {lim / 1e6:,.1f} MB ({lim_label})" if lim else "")
              + (f"; slow clients {', '.join(map(str, slows))}" if slows != [0] else "")
              + f"; zchttpd cache {cache / 1e6:,.1f} MB; gdssim hit ratios "
              + ", ".join(f"{p} {h:.3f}" for p, h in sim.items()), file=log, flush=True)
        for run_no, nslow, place in ((r, n, p) for r in range(1, opts.runs + 1) for n in slows
                                     for p in places.values()):
            k = (run_no - 1) % len(cfgs)
            for label, name, extra, policy in cfgs[k:] + cfgs[:k]:
                point += 1
                print(f"[{point}/{total}] run {run_no}/{opts.runs} {label}"
                      + (f" with {place.workers} workers" if len(places) > 1 else "")
                      + (f" at {lim_label}" if lim else "")
                      + (f" with {nslow} slow" if nslow else "") + " ... ", end="", file=log, flush=True)
                group = memlimit.MemGroup(lim) if lim else None
                if lim:
                    memlimit.drop_cached(root)   # everyone starts cold
                srv = servers.Server(name, root, tmp, workers=place.workers, extra_args=extra,
                                     cpus=place.server_cpus, budget=budget, private_copy=True,
                                     label=label, mem_group=group)
                disk = peak = None
                try:
                    srv.start(START_TIMEOUT_S)
                    filler, mark = (("/.zc/status", STATUS_MARK) if name == "zchttpd"
                                    else ("/" + FILLER_FILE, FILLER_BODY.decode()))
                    before = cache_status(srv) if name == "zchttpd" else None
                    client_cpus = place.client_cpus
                    with SlowClients(srv.port, "/" + SLOW_FILE, nslow, client_cpus) as slow:
                        disk0 = memlimit.read_bytes(srv.pids())
                        slow0 = slow.bytes
                        res, fields = measure(srv, lambda: play(srv, list_path, opts.connections,
                                                                client_cpus, filler, mark,
                                                                time_limit, place.threads),
                                              client_cpus, place.threads)
                        disk = memlimit.read_bytes(srv.pids()) - disk0
                        slow_mb = (slow.bytes - slow0) / 1e6
                    after = cache_status(srv) if name == "zchttpd" else None
                    peak = group.peak() if group else None
                finally:
                    srv.stop()
                    if group:
                        group.remove()
                row = {"run": run_no, "server": label, "policy": policy, "memory_limit": lim,
                       "limit_label": lim_label, "slow_clients": nslow,
                       "slow_mb": slow_mb if nslow else None, "requests": res.requests,
                       "duration_s": res.duration_s, "requests_per_s": res.requests_per_s,
                       "mbytes_per_s": res.bytes_per_s / 1e6, "errors": res.non_2xx_3xx,
                       "bad_statuses": res.bad_statuses, "disk_read_mb": disk / 1e6,
                       "peak_mb": peak / 1e6 if peak else None, **fields,
                       **scaling.placement_fields(place)}
                if before is not None:
                    hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
                    row["hit_ratio"] = hits / (hits + misses) if hits + misses else None
                    row["sim_hit_ratio"] = sim.get(policy)
                    row.update({f"cache_{k}": after[k] - before[k] for k in POLICY_COUNTERS})
                rows.append(row)
                note = (f"  (client-bound: wrk at {row['client_cpu_util']:.0%} of "
                        f"{place.threads} core(s))" if row["client_bound"] else "")
                if row["errors"]:
                    note += f"  ({row['errors']} bad answers: {row['bad_statuses']})"
                hr = (f", hit ratio {row['hit_ratio']:.3f} (gdssim {row['sim_hit_ratio']:.3f}), "
                      f"{row['cache_evictions']} evicted, {row['cache_not_admitted']} not admitted"
                      if row.get("hit_ratio") is not None else "")
                print(f"{row['requests_per_s']:,.0f} req/s{hr}, {row['disk_read_mb']:,.1f} MB from disk"
                      f"{note}", file=log, flush=True)
    summary = summarize(rows)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return meta, rows, summary


def summarize(rows):
    """Per memory limit, slow-client count, worker count and configuration:
    medians over the runs that were not client-bound (all runs if every one
    was), the hit ratios, the bytes read from disk, and the ratio of its
    median req/s to nginx's, h2o's and the floor's at the same limit and
    worker count."""
    by = {}
    for r in rows:
        by.setdefault((r.get("limit_label"), r.get("slow_clients", 0), r.get("workers") or 1,
                       r["server"]), []).append(r)
    out = []
    for (lim, nslow, n, label), rs in by.items():
        counted = [r for r in rs if not r["client_bound"]]
        use = counted or rs
        s = {"limit": lim, "memory_limit": rs[0].get("memory_limit"), "slow_clients": nslow,
             "workers": n, "server_cores": rs[0].get("server_cores"),
             "cores_short": rs[0].get("cores_short"),
             "slow_mb_median": report.median_of(use, "slow_mb"), "server": label, "runs": len(rs),
             "runs_counted": len(counted), "client_bound_runs": len(rs) - len(counted),
             "client_bound": not counted,
             "rps_median": statistics.median(r["requests_per_s"] for r in use),
             "rps_min": min(r["requests_per_s"] for r in use),
             "rps_max": max(r["requests_per_s"] for r in use),
             "mbytes_per_s_median": statistics.median(r["mbytes_per_s"] for r in use),
             "cpu_us_per_req_median": report.median_of(use, "server_cpu_us_per_req"),
             "client_cpu_util_median": report.median_of(use, "client_cpu_util"),
             "disk_read_mb_median": report.median_of(use, "disk_read_mb"),
             "errors": sum(r["errors"] for r in rs)}
        hrs = [r["hit_ratio"] for r in use if r.get("hit_ratio") is not None]
        if hrs:
            s["hit_ratio_median"] = statistics.median(hrs)
            s["hit_ratio_min"], s["hit_ratio_max"] = min(hrs), max(hrs)
            s["sim_hit_ratio"] = use[0].get("sim_hit_ratio")
        out.append(s)
    med = {(s["limit"], s["slow_clients"], s["workers"], s["server"]): s["rps_median"] for s in out}
    for s in out:
        for peer in PEERS:
            m = med.get((s["limit"], s["slow_clients"], s["workers"], peer))
            if m and s["server"] != peer:
                s[f"ratio_vs_{peer}"] = s["rps_median"] / m
    return out


def table(summary, rows=None, budget=None):
    """The summary as a Markdown table (a workers column when there are
    several worker counts), and with rows the line on client-bound runs;
    with several worker counts, the scaling table (scaling.py) with the
    live hit ratio of each zchttpd configuration."""
    many = len({s["workers"] for s in summary}) > 1
    head = (["limit", "slow"] + (["workers"] if many else []) +
            ["server", "req/s median (range)", "MB/s", "CPU us/req", "wrk CPU", "hit ratio live",
             "gdssim", "MB from disk"] + [f"vs {p}" for p in PEERS] + ["errors"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summary:
        def f(k, fmt):
            return "-" if s.get(k) is None else format(s[k], fmt)
        lines.append("| " + " | ".join(
            [s["limit"] or "-", str(s["slow_clients"])] + ([str(s["workers"])] if many else []) + [
                s["server"] + ("*" if s["client_bound"] else ""),
                f"{s['rps_median']:,.0f} ({s['rps_min']:,.0f}-{s['rps_max']:,.0f})",
                f("mbytes_per_s_median", ",.1f"), f("cpu_us_per_req_median", ".1f"),
                f("client_cpu_util_median", ".2f"), f("hit_ratio_median", ".3f"),
                f("sim_hit_ratio", ".3f"), f("disk_read_mb_median", ",.1f")]
            + [f(f"ratio_vs_{p}", ".2f") for p in PEERS] + [str(s["errors"])]) + " |")
    if rows is not None:
        lines += ["", report.client_bound_note(rows, budget=budget)]
    if many:
        names = list(dict.fromkeys(s["server"] for s in summary))
        zc = [n for n in names if any(s["server"] == n and s.get("hit_ratio_median") is not None
                                      for s in summary)]
        extra = [(f"{n} hit ratio live", lambda es, n=n: next(
            (f"{e['hit_ratio_median']:.3f}" for e in es if e["server"] == n
             and e.get("hit_ratio_median") is not None), "-")) for n in zc]
        lines += ["", scaling.scaling_table(
            summary, names, lambda e: (e["limit"], e["slow_clients"]),
            lambda k: "replay" + (f" at memory limit {k[0]}" if k[0] else "")
            + (f" with {k[1]} slow clients" if k[1] else ""), extra=extra)]
    return "\n".join(lines)


def write_all(out_dir, meta, rows, summary):
    fields = ["run", "limit_label", "memory_limit", "slow_clients", "slow_mb", "workers", "server_cores",
              "wrk_threads", "server", "policy", "requests", "duration_s",
              "requests_per_s", "mbytes_per_s", "errors", "hit_ratio", "sim_hit_ratio", "disk_read_mb",
              "peak_mb", "server_cpu_s", "server_cpu_us_per_req", "server_cpu_util", "client_cpu_util",
              "client_bound"] + [f"cache_{k}" for k in POLICY_COUNTERS]
    report.write_csv(os.path.join(out_dir, "results.csv"), rows, fields)
    report.write_csv(os.path.join(out_dir, "summary.csv"), summary,
                     ["limit", "memory_limit", "slow_clients", "slow_mb_median", "workers", "server_cores",
                      "server", "runs", "runs_counted", "rps_median", "rps_min",
                      "rps_max", "mbytes_per_s_median", "cpu_us_per_req_median", "client_cpu_util_median",
                      "hit_ratio_median", "sim_hit_ratio", "disk_read_mb_median",
                      *[f"ratio_vs_{p}" for p in PEERS], "errors"])
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows, "summary": summary}, f, indent=1)
        f.write("\n")


def plot(out_dir, summary, meta, dpi=80):
    """replay.png (for the smallest worker count) and, with several worker
    counts, replay-scaling.png (scaling.plot_scaling); the paths.  Without
    memory limits: requests/s per server (median,
    range) and, for zchttpd's policies, the live hit ratio beside gdssim's.
    With them (IO-Lite Table 1): requests/s and bytes read from disk against
    the memory limit, one line per server."""
    plt = figure.pyplot()

    paths = []
    counts = sorted({s["workers"] for s in summary})
    if len(counts) > 1:
        paths.append(scaling.plot_scaling(
            out_dir, summary, list(dict.fromkeys(s["server"] for s in summary)),
            lambda e: (e["limit"], e["slow_clients"]),
            lambda k: "replay" + (f" at {k[0]}" if k[0] else "") + (f", {k[1]} slow clients" if k[1] else ""),
            "replay-scaling", f"zcbench replay: {meta['requests']:,} requests; {report.budget_note(meta)}",
            report.STYLE, dpi))
        summary = [s for s in summary if s["workers"] == counts[0]]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=dpi)
    limited = any(s.get("memory_limit") for s in summary)
    slowed = len({s["slow_clients"] for s in summary}) > 1
    if slowed:
        ns = sorted({s["slow_clients"] for s in summary})
        for name in dict.fromkeys(s["server"] for s in summary):
            pts = {s["slow_clients"]: s for s in summary if s["server"] == name}
            style = dict(marker="o", color="tab:red") if name.startswith("zchttpd") else dict(marker="s")
            a.plot(ns, [pts[n]["rps_median"] if n in pts else float("nan") for n in ns], label=name,
                   **style)
            b.plot(ns, [(pts[n]["disk_read_mb_median"] or 0) if n in pts else float("nan") for n in ns],
                   label=name, **style)
        for ax in (a, b):
            ax.set_xlabel("slow clients")
        a.set_ylabel("fast clients' requests/s")
        b.set_ylabel("MB read from disk per run")
        a.set_ylim(bottom=0)
        a.legend(fontsize=8)
        a.set_title("fast clients beside slow ones")
        b.set_title("disk reads")
    elif limited:
        labels = [lim["label"] for lim in meta["memory_limits"]]
        for name in dict.fromkeys(s["server"] for s in summary):
            pts = {s["limit"]: s for s in summary if s["server"] == name}
            xs = [i for i, lab in enumerate(labels) if lab in pts]
            style = dict(marker="o", color="tab:red") if name.startswith("zchttpd") else dict(marker="s")
            a.plot(xs, [pts[labels[i]]["rps_median"] for i in xs], label=name, **style)
            b.plot(xs, [pts[labels[i]]["disk_read_mb_median"] or 0 for i in xs], label=name, **style)
        for ax in (a, b):
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels([f"{lab}\n{lim['bytes'] / 1e6:,.0f} MB" for lab, lim in
                                zip(labels, meta["memory_limits"])])
            ax.set_xlabel("data set / memory limit")
        a.set_ylabel("requests/s (median of runs)")
        b.set_ylabel("MB read from disk per run")
        a.legend(fontsize=8)
        a.set_title("trace replay under a memory limit")
        b.set_title("disk reads")
    else:
        names = [s["server"] for s in summary]
        med = [s["rps_median"] for s in summary]
        err = [[m - s["rps_min"] for m, s in zip(med, summary)],
               [s["rps_max"] - m for m, s in zip(med, summary)]]
        a.bar(names, med, yerr=err,
              color=["tab:red" if n.startswith("zchttpd") else "tab:gray" for n in names])
        a.set_ylabel("requests/s (median of runs)")
        a.set_title("trace replay")
        a.tick_params(axis="x", rotation=30)
        z = [s for s in summary if s.get("hit_ratio_median") is not None]
        x = range(len(z))
        b.bar([i - 0.2 for i in x], [s["hit_ratio_median"] for s in z], width=0.4,
              label="zchttpd (live)", color="tab:red")
        b.bar([i + 0.2 for i in x], [s["sim_hit_ratio"] or 0 for s in z], width=0.4, label="gdssim",
              color="tab:blue")
        b.set_xticks(list(x))
        b.set_xticklabels([s["server"].replace("zchttpd-", "") for s in z])
        b.set_ylim(0, 1)
        b.set_ylabel("object hit ratio")
        b.set_title(f"cache {meta['cache_bytes'] / 1e6:.1f} MB of {meta['unique_bytes'] / 1e6:.1f} MB")
        b.legend()
    fig.suptitle(f"{meta['requests']:,} requests, {meta['objects']:,} objects "
                 f"({meta['unique_bytes'] / 1e6:,.0f} MB); {report.budget_note(meta)}", fontsize=9)
    return [figure.save(fig, out_dir, "replay.png", dpi)] + paths
