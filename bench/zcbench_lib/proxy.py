"""`zcbench proxy`: reverse proxies in front of one origin, each under the
same CPU budget, against the floor of a proxy (docs/bench-proxy.md).

One origin serves the generated files (docroot.py): nginx with the static
configuration of `zcbench static` (or, with --origin floor, zcfloor's
canned responses), pinned with wrk to the client CPU(s), outside any CPU
budget.  In front of it, each started once on the server CPU(s), each in a
cgroup of its own with a CPU quota (budget.py), exactly as `zcbench static`
runs its servers:

  zchttpd         zchttpd --proxy /=http://127.0.0.1:ORIGIN (every path to
                  the origin; upstream keep-alive is zchttpd's default)
  nginx           proxy_pass to an upstream block with keepalive 32,
                  proxy_http_version 1.1, proxy_set_header Connection "";
                  nginx's default buffering (proxy_buffering on)
  haproxy         HAProxy 2.6, mode http, http-reuse always, no splice
  haproxy-splice  the same told to splice: option splice-request and
                  splice-response, bodies moved with splice(2) both ways
  haproxy-splice-auto  option splice-auto instead (HAProxy's heuristic; it
                  spliced nothing in this benchmark: not measured by default)
  h2o             h2o 2.2, proxy.reverse.url (upstream keep-alive is on by
                  default: proxy.timeout.keepalive 2 s)
  relay           the floor of a proxy, bench/floor/zcrelay.c: every client
                  connection paired with an upstream connection, bytes
                  relayed both ways with splice, no HTTP at all

and two direct references under the same budget, the origin idle:

  origin-direct   nginx serving the files itself (the origin's configuration)
  zchttpd-direct  zchttpd --root DIR serving them itself (as `zcbench static`)

Then, with static.drive (the loop of `zcbench static`: for run: for size:
for mode: for server, the order rotated per run, so that drift on a shared
machine hits every server alike), one wrk run per point.  Every point
records the proxy's CPU time (its cgroup's cpuacct usage), wrk's own CPU,
the origin's CPU and how busy the CPUs were.  wrk and the origin share the
client CPU(s): a point where the two together used more than 80 % of them
is marked client-bound (left out of the medians, as `zcbench static` does
with wrk alone), and a point where the proxy used less than 85 % of its
budget was not proxy-bound; the table says which side limited each point.

Every body is checked byte-exact through every server before anything is
measured (on one kept-alive connection twice, and with Connection: close).
A server that does not start (zchttpd without --proxy says "unknown
option") is reported and left out; the others are measured and zcbench
exits 1 at the end.
"""
import hashlib
import http.client
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

from . import budget as bg
from . import build_dir, pinning, report, servers, static, wrk
from . import docroot as dr
from .cpu import CLIENT_BOUND, client_cores, row_client_bound

NAMES = ("zchttpd", "nginx", "haproxy", "haproxy-splice", "haproxy-splice-auto", "h2o", "relay",
         "origin-direct", "zchttpd-direct", "zchttpd-splice", "zchttpd-copy")
# zchttpd told to splice every response body, or none: what decides
# --proxy-splice-min (docs/proxy.md, "Splice or copy, measured").
ZCHTTPD_VARIANTS = {"zchttpd": [], "zchttpd-splice": ["--proxy-splice-min", "0"],
                    "zchttpd-copy": ["--proxy-splice-min", "1g"]}
PEERS = ("nginx", "haproxy", "haproxy-splice", "haproxy-splice-auto", "h2o")   # "the fastest peer"
HAPROXY_SPLICE = {"haproxy": None, "haproxy-splice": "always", "haproxy-splice-auto": "auto"}
REFERENCE = "zchttpd"
FLOOR = "relay"
DIRECT = "zchttpd-direct"
ORIGINS = ("nginx", "floor")
DEFAULT_SIZES = "1k,100k,1m"
# haproxy-splice-auto is left out by default: its heuristic spliced nothing
# here (docs/bench-proxy.md), so it measured what haproxy measures; the
# zchttpd variants are for the splice-or-copy question only.
DEFAULT_SERVERS = ",".join(n for n in NAMES if n not in ("haproxy-splice-auto", "zchttpd-splice",
                                                         "zchttpd-copy"))
PROXY_BOUND = 0.85          # a proxy that used less of its budget was not the limit
UPSTREAM_KEEPALIVE = 32     # nginx's `keepalive` (idle upstream connections kept)

# The bars: zchttpd / fastest peer at every point; at these sizes
# and up also zchttpd / relay and zchttpd / zchttpd-direct.
BAR_PEER = 1.2
BAR_FLOOR = 0.85
BAR_DIRECT = 0.9
BAR_LARGE = 100 * 1024

STYLE = {"zchttpd": ("tab:red", "o", "-"), "nginx": ("tab:green", "s", "-"),
         "haproxy": ("tab:purple", "v", "-"), "haproxy-splice": ("tab:purple", "v", ":"),
         "haproxy-splice-auto": ("tab:pink", "v", ":"),
         "h2o": ("tab:blue", "^", "-"), "relay": ("dimgray", "D", "--"),
         "origin-direct": ("tab:olive", "s", "-."), "zchttpd-direct": ("tab:red", "o", "-."),
         "zchttpd-splice": ("tab:orange", "o", ":"), "zchttpd-copy": ("tab:brown", "o", ":")}

RAW_FIELDS = report.RAW_FIELDS + ["origin_cpu_util", "client_side_util", "wrk_bound",
                                  "proxy_bound", "limit", "haproxy_spliced_bytes", "origin_conns",
                                  "origin_conns_per_req"]
SUMMARY_FIELDS = ["mode", "size", "size_label", "server", "runs", "runs_counted", "client_bound_runs",
                  "client_bound", "rps_median", "rps_min", "rps_max", "mbytes_per_s_median",
                  "cpu_us_per_req_median", "cpu_us_per_req_min", "cpu_us_per_req_max",
                  "latency_p50_ms_median", "latency_p99_ms_median", "server_cpu_util_median",
                  "client_cpu_util_median", "origin_cpu_util_median", "origin_conns_per_req_median",
                  "limits", "errors", "spliced_bytes_per_req_median",
                  "fastest_peer", "vs_fastest_peer", "vs_relay", "vs_zchttpd_direct"]


# -- configurations (pure functions) -------------------------------------------

# The nginx origin's stub_status: its count of accepted connections, read
# around every point, says how many upstream connections a proxy opened
# per request (about 0 with upstream keep-alive, 1 without).
ORIGIN_STATUS = "/zcbench-origin-status"
ORIGIN_STATUS_LOCATION = f"""\
        location = {ORIGIN_STATUS} {{
            stub_status;
        }}
"""


def parse_stub_status(text):
    """nginx's stub_status page: its accepted connections, or None."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.split() == ["server", "accepts", "handled", "requests"]:
            f = lines[i + 1].split()
            if f and f[0].isdigit():
                return int(f[0])
    return None


def nginx_upstream(origin_port, keepalive=UPSTREAM_KEEPALIVE):
    """The http-block upstream of nginx's proxy."""
    return f"""\
    upstream zcbench_origin {{
        server 127.0.0.1:{origin_port};
        keepalive {keepalive};
    }}
"""


NGINX_PROXY_LOCATION = """\
        location / {
            proxy_pass http://zcbench_origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
"""


def nginx_proxy_config(port, origin_port, docroot, workers, prefix, as_root=False,
                       keepalive=UPSTREAM_KEEPALIVE):
    """nginx.conf of the proxy: `zcbench static`'s configuration (workers,
    no access log, keepalive_requests 1000000 on the client side) with every
    path sent to the origin over kept-alive HTTP/1.1 upstream connections.
    Buffering is nginx's default (proxy_buffering on: a response is read
    into proxy_buffers, 8 x 4 KB, and what does not fit while the client is
    slower than the origin goes to a temporary file under proxy_temp_path,
    up to proxy_max_temp_file_size 1024 MB).  keepalive: the idle upstream
    connections each worker keeps (the issue's 32; with more client
    connections than that, nginx closes the idle ones over it and opens new
    ones: the origin_conns_per_req column shows how often)."""
    return servers.nginx_config(port, docroot, workers, prefix, as_root,
                                locations=NGINX_PROXY_LOCATION,
                                http_extra=nginx_upstream(origin_port, keepalive))


def haproxy_config(port, origin_port, workers, prefix, splice=None):
    """haproxy.cfg (HAProxy 2.6): one frontend, one backend with the origin,
    HTTP mode, keep-alive on both sides (the default), idle server
    connections shared between clients (http-reuse always), no splicing;
    splice "always": option splice-request and splice-response (kernel
    splicing of bodies both ways, pipes of tune.pipesize, the system's
    default 64 KiB); "auto": option splice-auto (HAProxy's heuristic).  A
    stats socket in prefix says how many bytes were spliced (`show info`)."""
    opt = {None: "", "always": "    option splice-request\n    option splice-response\n",
           "auto": "    option splice-auto\n"}[splice]
    return f"""\
# generated by zcbench (bench/zcbench_lib/proxy.py)
global
    nbthread {workers}
    maxconn 4096
    pidfile {prefix}/haproxy.pid
    stats socket {prefix}/haproxy.sock mode 600 level admin

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    http-reuse always
{opt}
frontend zcbench
    bind 127.0.0.1:{port}
    default_backend origin

backend origin
    server origin 127.0.0.1:{origin_port}
"""


def h2o_proxy_config(port, origin_port, workers, prefix, as_root=False):
    """h2o.yaml (h2o 2.2) of the proxy: every path to the origin by
    proxy.reverse.url; upstream keep-alive is on by default
    (proxy.timeout.keepalive 2000 ms); no access log."""
    user = "user: root\n" if as_root else ""
    return f"""\
# generated by zcbench (bench/zcbench_lib/proxy.py)
{user}listen:
  host: 127.0.0.1
  port: {port}
num-threads: {workers}
pid-file: {prefix}/h2o.pid
error-log: {prefix}/error.log
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: http://127.0.0.1:{origin_port}/
"""


def zchttpd_proxy_args(origin_port):
    """zchttpd's options that send every path to the origin."""
    return ["--proxy", f"/=http://127.0.0.1:{origin_port}"]


def relay_binary():
    return os.path.join(build_dir(), "bench", "zcrelay")


def relay_argv(binary, port, origin_port, workers):
    return [binary, "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{origin_port}",
            "--workers", str(workers)]


# -- the servers ---------------------------------------------------------------

_BASE = {"zchttpd": "zchttpd", "zchttpd-direct": "zchttpd", "zchttpd-splice": "zchttpd",
         "zchttpd-copy": "zchttpd", "nginx": "nginx",
         "origin-direct": "nginx", "h2o": "h2o", "haproxy": "nginx", "haproxy-splice": "nginx",
         "haproxy-splice-auto": "nginx", "relay": "floor"}


class ProxyServer(servers.Server):
    """A servers.Server whose configuration is a proxy's (or a direct
    reference's): name is one of NAMES, origin_port where the origin
    listens."""

    def __init__(self, name, docroot, workdir, origin_port, nginx_keepalive=UPSTREAM_KEEPALIVE, **kw):
        if name not in _BASE:
            raise servers.ServerError(f"unknown proxy {name!r} (known: {', '.join(NAMES)})")
        extra = (zchttpd_proxy_args(origin_port) + ZCHTTPD_VARIANTS[name]
                 if name in ZCHTTPD_VARIANTS else [])
        super().__init__(_BASE[name], docroot, workdir, label=name, extra_args=extra, **kw)
        self.role = name
        self.origin_port = origin_port
        self.nginx_keepalive = nginx_keepalive
        if name.startswith("haproxy"):
            self.kind = "haproxy"
        elif name == "relay":
            self.kind = "relay"

    def _write(self, fname, text):
        path = os.path.join(self.dir, fname)
        with open(path, "w") as f:
            f.write(text)
        return path

    def argv(self):
        as_root = os.geteuid() == 0
        role = self.role
        if role in ZCHTTPD_VARIANTS or role in ("zchttpd-direct", "origin-direct"):
            return super().argv()
        if role == "nginx":
            binary = servers._which("nginx")
            if not binary:
                raise servers.ServerError("nginx is not installed (ci/deps.sh installs nginx-light)")
            conf = self._write("nginx.conf", nginx_proxy_config(
                self.port, self.origin_port, self.docroot, self.workers, self.dir, as_root,
                self.nginx_keepalive))
            return [binary, "-p", self.dir + "/", "-c", conf, "-e", os.path.join(self.dir, "error.log")]
        if role == "h2o":
            binary = servers._which("h2o")
            if not binary:
                raise servers.ServerError("h2o is not installed (ci/deps.sh installs it)")
            conf = self._write("h2o.yaml", h2o_proxy_config(self.port, self.origin_port, self.workers,
                                                            self.dir, as_root))
            return [binary, "-c", conf]
        if role in HAPROXY_SPLICE:
            binary = servers._which("haproxy")
            if not binary:
                raise servers.ServerError("haproxy is not installed (ci/deps.sh installs it)")
            conf = self._write("haproxy.cfg", haproxy_config(self.port, self.origin_port, self.workers,
                                                             self.dir, splice=HAPROXY_SPLICE[role]))
            return [binary, "-db", "-f", conf]
        binary = relay_binary()                                   # relay
        if not os.access(binary, os.X_OK):
            raise servers.ServerError(f"{binary} is not built (run `make`, or set ZCBENCH_BUILD)")
        return relay_argv(self._private(binary), self.port, self.origin_port, self.workers)

    def haproxy_spliced(self):
        """Bytes HAProxy has spliced so far (`show info`), or None (another
        server, no answer)."""
        if self.kind != "haproxy":
            return None
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(2)
                s.connect(os.path.join(self.dir, "haproxy.sock"))
                s.sendall(b"show info\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
        except OSError:
            return None
        return spliced_bytes(parse_haproxy_info(data.decode(errors="replace")))


def spliced_bytes(info):
    """TotalSplicedBytesOut of parse_haproxy_info (2.6 spells it
    TotalSplicdedBytesOut), or None."""
    for key in ("TotalSplicedBytesOut", "TotalSplicdedBytesOut"):
        if key in info:
            return info[key]
    return None


def parse_haproxy_info(text):
    """{key: int} of the numeric lines of HAProxy's `show info`."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and v.strip().lstrip("-").isdigit():
            out[k.strip()] = int(v.strip())
    return out


def verify_proxy(srv, wanted):
    """Every (path, sha256, size) through srv byte-exact: twice on one
    kept-alive connection (the second request rides the upstream connection
    the first one left), then once with Connection: close, after which the
    server must close.  A wrong answer is a ServerError."""
    def bad(path, how, status, body, size):
        return servers.ServerError(f"{srv.name} served {path} wrong ({how}): status {status}, "
                                   f"{len(body)} bytes (want {size})\n{srv.log_tail(10)}")
    for path, digest, size in wanted:
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        try:
            for i in range(2):
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                if r.status != 200 or hashlib.sha256(body).hexdigest() != digest:
                    raise bad(path, f"keep-alive, request {i + 1}", r.status, body, size)
            if r.will_close:
                raise bad(path, "keep-alive: the server closed", r.status, body, size)
        finally:
            c.close()
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        try:
            c.request("GET", path, headers={"Connection": "close"})
            r = c.getresponse()
            body = r.read()
            if r.status != 200 or hashlib.sha256(body).hexdigest() != digest:
                raise bad(path, "Connection: close", r.status, body, size)
        finally:
            c.close()


# -- what limited a point ----------------------------------------------------------

def annotate(row, origin_util, budget_cpus, client_cores_n, origin_cores=1, limit=CLIENT_BOUND):
    """Add to a point's row the origin's CPU use and what limited the point.

    wrk and the origin share the client CPU(s): client_side_util is their
    sum, and the point is client-bound when it exceeds `limit` of those
    cores (then left out of the medians); wrk_bound keeps the mark of wrk
    alone.  proxy_bound: the server used at least PROXY_BOUND of its budget
    (budget_cpus: the quota in CPUs; None without a budget).  limit: "proxy",
    "wrk", "origin", "wrk+origin" or "?" (neither side full: the latency of
    the chain, or others' work on the machine)."""
    wrk_util = row.get("client_cpu_util")
    row["origin_cpu_util"] = origin_util
    row["wrk_bound"] = row.get("client_bound")
    side = None if wrk_util is None else wrk_util + (origin_util or 0.0)
    row["client_side_util"] = side
    row["client_bound"] = None if side is None else side > limit * client_cores_n
    util = row.get("server_cpu_util")
    row["proxy_bound"] = (None if not budget_cpus or util is None
                          else util >= PROXY_BOUND * budget_cpus)
    if row["client_bound"]:
        if wrk_util > limit * client_cores_n:
            row["limit"] = "wrk"
        elif (origin_util or 0.0) > limit * min(origin_cores, client_cores_n):
            row["limit"] = "origin"
        else:
            row["limit"] = "wrk+origin"
    elif row["proxy_bound"]:
        row["limit"] = "proxy"
    else:
        row["limit"] = "?"
    return row


# -- the summary ---------------------------------------------------------------------

def _per_run(rows):
    """{(size, mode): {run: {server: row}}}"""
    out = {}
    for r in rows:
        out.setdefault((r["size"], r["mode"]), {}).setdefault(r["run"], {})[r["server"]] = r
    return out


def _ratio_runs(runs, server, others):
    """Per run, server's req/s over the largest of `others`' in that run
    (the pairs where no side was client-bound; all pairs if none such)."""
    pairs = []
    for _, got in sorted(runs.items()):
        a = got.get(server)
        bs = [got[o] for o in others if o in got and got[o]["requests_per_s"]]
        if a is None or not bs:
            continue
        b = max(bs, key=lambda r: r["requests_per_s"])
        pairs.append((a, b))
    counted = [(a, b) for a, b in pairs if not row_client_bound(a) and not row_client_bound(b)]
    return [a["requests_per_s"] / b["requests_per_s"] for a, b in (counted or pairs)]


def summarize(rows):
    """(summary, ratios): report.summarize's (medians over the runs that
    were not client-bound, zchttpd's ratios to each server), each summary
    entry with its latency medians, the origin's CPU, what limited its runs
    ({limit: runs}) and its ratios to the fastest peer, the relay floor and
    zchttpd-direct (of the medians; `*_runs`: per run, the same run's
    servers)."""
    summary, ratios = report.summarize(rows, REFERENCE)
    groups, runs = {}, _per_run(rows)
    for r in rows:
        groups.setdefault((r["size"], r["mode"], r["server"]), []).append(r)
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    for s in summary:
        rs = groups[(s["size"], s["mode"], s["server"])]
        use = [r for r in rs if not row_client_bound(r)] or rs
        s["latency_p50_ms_median"] = report.median_of(use, "latency_p50_ms")
        s["latency_p99_ms_median"] = report.median_of(use, "latency_p99_ms")
        s["origin_cpu_util_median"] = report.median_of(use, "origin_cpu_util")
        s["origin_conns_per_req_median"] = report.median_of(use, "origin_conns_per_req")
        s["client_side_util_median"] = report.median_of(use, "client_side_util")
        limits = {}
        for r in rs:
            limits[r.get("limit") or "?"] = limits.get(r.get("limit") or "?", 0) + 1
        s["limits"] = limits
        spliced = [r["haproxy_spliced_bytes"] / r["requests"] for r in use
                   if r.get("haproxy_spliced_bytes") is not None and r.get("requests")]
        s["spliced_bytes_per_req_median"] = statistics.median(spliced) if spliced else None
        peers = [p for p in PEERS if (s["size"], s["mode"], p) in med]
        fastest = max(peers, key=lambda p: med[(s["size"], s["mode"], p)]["rps_median"], default=None)
        s["fastest_peer"] = fastest
        point = runs[(s["size"], s["mode"])]
        for key, others in (("vs_fastest_peer", peers), ("vs_relay", [FLOOR]),
                            ("vs_zchttpd_direct", [DIRECT])):
            base = [med[(s["size"], s["mode"], o)]["rps_median"] for o in others
                    if (s["size"], s["mode"], o) in med]
            s[key] = s["rps_median"] / max(base) if base and max(base) else None
            s[key + "_runs"] = _ratio_runs(point, s["server"], others) if base else []
    return summary, ratios


def bars(summary):
    """The issue's bars from the medians: [(bar, size_label, mode, value or
    None, met or None)].  zchttpd / fastest peer >= 1.2 at every point; from
    100 KB on also zchttpd / relay >= 0.85 and zchttpd / zchttpd-direct >=
    0.9.  A point where zchttpd was not measured has value None."""
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    points = sorted({(s["mode"] != "keepalive", s["mode"], s["size"]) for s in summary})
    out = []
    for _, mode, size in points:
        z = med.get((size, mode, REFERENCE))
        checks = [(f"zchttpd / fastest peer >= {BAR_PEER}", "vs_fastest_peer", BAR_PEER)]
        if size >= BAR_LARGE:
            checks += [(f"zchttpd / relay >= {BAR_FLOOR}", "vs_relay", BAR_FLOOR),
                       (f"zchttpd / zchttpd-direct >= {BAR_DIRECT}", "vs_zchttpd_direct", BAR_DIRECT)]
        for name, key, want in checks:
            v = z.get(key) if z else None
            out.append((name, dr.size_label(size), mode, v, None if v is None else v >= want))
    return out


def bars_table(summary):
    out = ["| bar | size | mode | value | met |", "|---|---|---|---|---|"]
    for name, label, mode, v, ok in bars(summary):
        out.append(f"| {name} | {label} | {mode} | {report.num(v, '.2f')} | "
                   f"{'-' if ok is None else 'yes' if ok else 'no'} |")
    return "\n".join(out) + "\n"


def _rng(xs):
    return f" ({min(xs):.2f}-{max(xs):.2f})" if len(xs) > 1 else ""


def _limits(d):
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1]))


def table(summary, names, not_started=None, budget=None):
    """Markdown, a table per mode: a line per (size, server) with req/s
    (median, per-run range), CPU per request, p50/p99, the ratios to the
    fastest peer, to the relay floor and to zchttpd-direct (of the medians,
    per-run range in parentheses), the CPU used by the proxy, wrk and the
    origin, the connections the origin accepted per request (the proxy's
    upstream connections: about 0 when it keeps them), and what limited its
    runs; servers that did not start say so."""
    not_started = not_started or {}
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    modes = sorted({s["mode"] for s in summary}, key=lambda m: (m != "keepalive", m))
    sizes = sorted({s["size"] for s in summary})
    head = ["size", "server", "req/s (range)", "MB/s", "CPU us/req", "p50 ms", "p99 ms",
            "x fastest peer", "x relay", "x zchttpd-direct", "proxy CPU", "wrk CPU", "origin CPU",
            "upstream conns/req", "limit (runs)"]
    out = []
    for mode in modes:
        out.append(f"**{mode}**" + (f" (budget {budget:g} CPU per proxy)" if budget else "") + "\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for size in sizes:
            label = dr.size_label(size)
            for name in names:
                s = med.get((size, mode, name))
                if s is None:
                    why = not_started.get(name)
                    if why is not None:
                        out.append(f"| {label} | {name} | did not start | " + " | ".join(["-"] * (len(head) - 3)) + " |")
                    continue
                star = "*" if s.get("client_bound") else ""
                cells = [label, name,
                         f"{s['rps_median']:,.0f}{star} ({s['rps_min']:,.0f}-{s['rps_max']:,.0f})",
                         f"{s['mbytes_per_s_median']:,.1f}",
                         report.num(s.get("cpu_us_per_req_median"), ".1f"),
                         report.num(s.get("latency_p50_ms_median"), ".2f"),
                         report.num(s.get("latency_p99_ms_median"), ".2f")]
                for key in ("vs_fastest_peer", "vs_relay", "vs_zchttpd_direct"):
                    v = s.get(key)
                    cells.append("-" if v is None else f"{v:.2f}{_rng(s.get(key + '_runs') or [])}")
                cells += [report.num(s.get("server_cpu_util_median"), ".2f"),
                          report.num(s.get("client_cpu_util_median"), ".2f"),
                          report.num(s.get("origin_cpu_util_median"), ".2f"),
                          report.num(s.get("origin_conns_per_req_median"), ".3f"),
                          _limits(s.get("limits") or {})]
                out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def not_proxy_bound(rows):
    """[(mode, size_label, server, runs not proxy-bound, runs, limits)] of
    the points some of whose runs the proxy did not limit."""
    groups = {}
    for r in rows:
        groups.setdefault((r["mode"], r["size"], r["server"]), []).append(r)
    out = []
    for (mode, size, server), rs in sorted(groups.items()):
        bad = [r for r in rs if r.get("limit") not in ("proxy", None)]
        if bad:
            lim = {}
            for r in bad:
                lim[r["limit"]] = lim.get(r["limit"], 0) + 1
            out.append((mode, dr.size_label(size), server, len(bad), len(rs), lim))
    return out


def warnings(rows):
    """One line per point that was not proxy-bound in some run."""
    return [f"{mode} {label} {server}: {n} of {total} run(s) not proxy-bound ({_limits(lim)})"
            for mode, label, server, n, total, lim in not_proxy_bound(rows)]


def others_work(rows, budget=None, client_cores_n=1, margin=0.15):
    """(runs whose client CPU(s) others used, runs whose server CPU others
    took, runs): the first, runs where the client CPUs were busier than wrk
    and the origin (ours) make them by more than `margin`; the second, runs
    where the proxy used under 90 % of its budget while its CPU was over 90 %
    busy (report.contention's test).  Rows without the samples count in
    neither."""
    client = sum(1 for r in rows if r.get("client_cpus_busy") is not None
                 and r.get("client_side_util") is not None
                 and r["client_cpus_busy"] - r["client_side_util"] / client_cores_n > margin)
    _, server, n = report.contention(rows, budget)
    return client, server, n


def client_bound_note(rows, budget=None, client_cores_n=1, limit=CLIENT_BOUND):
    """report.client_bound_note for this benchmark: client-bound is wrk and
    the origin together, and others' work is what is left of the CPUs' busy
    time once ours is taken out."""
    n, total = report.client_bound_count(rows)
    by = {}
    for r in rows:
        if row_client_bound(r):
            key = (r.get("mode") or "", r["server"])
            by[key] = by.get(key, 0) + 1
    detail = ", ".join(f"{m} {s} {k}" for (m, s), k in sorted(by.items()))
    text = (f"Client-bound runs: {n} of {total} (wrk and the origin together above {limit:.0%} of "
            "the client CPU; left out of medians and ratios; * = every run of that point was "
            "client-bound)" + (f": {detail}" if detail else "") + ".")
    c, srv, _ = others_work(rows, budget, client_cores_n)
    if any(r.get("client_cpus_busy") is not None for r in rows):
        text += (f"  Other work on the machine: in {c} runs others used more than 15 % of the client "
                 "CPU" + (f"; in {srv} runs the proxy used under 90 % of its budget while its CPU "
                          "was over 90 % busy (others took it)" if budget else "") + ".")
    return text


def splice_lines(summary):
    """A line per HAProxy variant: the bytes it spliced per request (median)
    at each point, which says whether splicing happened at all."""
    out = []
    for name in [n for n in NAMES if n in HAPROXY_SPLICE]:
        here = [s for s in summary if s["server"] == name and s.get("spliced_bytes_per_req_median") is not None]
        if here:
            here.sort(key=lambda s: (s["mode"] != "keepalive", s["mode"], s["size"]))
            out.append(f"{name}: bytes spliced per request: " + ", ".join(
                f"{s['size_label']} {s['mode']} {s['spliced_bytes_per_req_median']:,.0f}" for s in here))
    return out + ([""] if out else [])


def plot_note(meta):
    """The figures' subtitle: the budget and where the origin ran."""
    b = (meta.get("budget") or {}).get("server_cpu")
    return ((f"budget {b:g} CPU per proxy (cgroup quota)" if b else "no CPU budget")
            + f"; origin {meta.get('origin', 'nginx')} and wrk on the other CPU")


def present(out, meta, rows, summary, plot=True):
    """The text (tables, bars, the notes) and the figures of a result."""
    names = [n for n in meta.get("servers", NAMES)]
    budget = (meta.get("budget") or {}).get("server_cpu")
    text = [table(summary, names, meta.get("not_started"), budget)]
    text.append(client_bound_note(rows, budget, len((meta.get("placement") or {}).get("client_cpus") or [1])))
    text.append("")
    text.append("Bars (medians; - : zchttpd not measured):\n")
    text.append(bars_table(summary))
    text += splice_lines(summary)
    for name, why in (meta.get("not_started") or {}).items():
        text.append(f"{name} did not start: {why or '?'}")
    figs = []
    if plot:
        figs = report.plot(out, summary, [n for n in names if any(s["server"] == n for s in summary)],
                           note=plot_note(meta), what="proxy", style=STYLE)
    return "\n".join(text), figs


def write_all(out, meta, rows, summary, ratios):
    """results.csv (every run), summary.csv (medians, ratios), results.json
    (everything, with the bars)."""
    import json
    os.makedirs(out, exist_ok=True)
    report.write_csv(os.path.join(out, "results.csv"), rows, RAW_FIELDS)
    report.write_csv(os.path.join(out, "summary.csv"),
                     [dict(s, limits=_limits(s.get("limits") or {})) for s in summary], SUMMARY_FIELDS)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows, "summary": summary, "ratios": ratios,
                   "bars": [dict(zip(("bar", "size", "mode", "value", "met"), b)) for b in bars(summary)]},
                  f, indent=1)
        f.write("\n")


# -- the run -------------------------------------------------------------------------

def run(opts, log=sys.stderr):
    """Run the experiment.  opts: servers, sizes, modes, runs, duration_s,
    connections, workers, server_cpu, origin, origin_workers, pin, out.
    Returns (meta, rows, summary, ratios, problems)."""
    wrk.find_wrk()
    budget = bg.Budget(opts.server_cpu)
    tmp = tempfile.mkdtemp(prefix="zcbench-proxy-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "docroot")
    files = dr.make_docroot(root, opts.sizes)
    wanted = static.file_bodies(files)
    place = pinning.place(pinning.available(), opts.workers, opts.connections, opts.pin)
    meta, _, _ = static.setup(opts, "proxy", opts.servers, budget, log)
    meta.update(benchmark="proxy", origin=opts.origin, placement={
        "server_cpus": place.server_cpus, "client_cpus": place.client_cpus,
        "origin_cpus": place.client_cpus, "wrk_threads": place.threads},
        proxy_bound_limit=PROXY_BOUND, not_started={}, commands={}, restarts=[])
    origin_workers = opts.origin_workers or (len(place.client_cpus) if place.client_cpus else 1)
    meta["origin_workers"] = origin_workers
    meta["nginx_keepalive"] = getattr(opts, "nginx_keepalive", UPSTREAM_KEEPALIVE)
    budget_cpus = opts.server_cpu * (len(place.server_cpus) if place.server_cpus else 1)
    cores = client_cores(place.threads, place.client_cpus)
    live = {}
    rows, problems = [], []
    origin = None
    try:
        origin = servers.Server(opts.origin, root, tmp, workers=origin_workers, cpus=place.client_cpus,
                                private_copy=True, label="origin",
                                nginx_locations=ORIGIN_STATUS_LOCATION if opts.origin == "nginx" else "")
        origin.start()
        static.verify_bodies(origin, wanted)
        meta["commands"]["origin"] = " ".join(origin.cmdline)
        print(f"zcbench: origin {opts.origin} on 127.0.0.1:{origin.port} ({origin_workers} worker(s), "
              f"CPU {pinning.describe(place.client_cpus)} with wrk, no budget)", file=log)

        def start(name):
            if origin.proc.poll() is not None:
                raise servers.ServerError(f"the origin died:\n{origin.log_tail()}")
            srv = ProxyServer(name, root, tmp, origin.port, workers=opts.workers, cpus=place.server_cpus,
                              budget=budget, private_copy=True,
                              nginx_keepalive=getattr(opts, "nginx_keepalive", UPSTREAM_KEEPALIVE))
            srv.start()
            try:
                verify_proxy(srv, wanted)
            except BaseException:
                srv.stop()
                raise
            meta["commands"][name] = " ".join(srv.cmdline)
            live[name] = srv
            print(f"zcbench: {name} on 127.0.0.1:{srv.port}, bodies verified", file=log, flush=True)
            return srv

        started = {}
        for name in opts.servers:
            try:
                started[name] = start(name)
            except servers.ServerError as e:
                why = start_failure(str(e), os.path.join(tmp, name, "stderr.log"))
                meta["not_started"][name] = why
                meta.setdefault("not_started_details", {})[name] = str(e)
                problems.append(f"{name} did not start: {why}")
                print(f"zcbench: {name} did not start, left out: {e}", file=log, flush=True)
        names = [n for n in opts.servers if n in started]

        def start_once(name):      # drive's start: the one started above, then afresh
            srv = started.pop(name, None)
            return srv if srv is not None else start(name)

        def observe():
            spliced = {n: srv.haproxy_spliced() for n, srv in live.items() if srv.kind == "haproxy"}
            a0 = origin_accepts(origin, opts.origin)
            c0, t0 = origin.cpu_seconds(), time.monotonic()

            def done(row):
                wall = time.monotonic() - t0
                annotate(row, (origin.cpu_seconds() - c0) / wall if wall > 0 else None,
                         budget_cpus if opts.server_cpu else None, cores, origin_workers)
                a1 = origin_accepts(origin, opts.origin)
                if a0 is not None and a1 is not None:
                    row["origin_conns"] = a1 - a0 - 1    # less the second status request's own
                    row["origin_conns_per_req"] = (row["origin_conns"] / row["requests"]
                                                   if row.get("requests") else None)
                srv = live.get(row["server"])
                after = srv.haproxy_spliced() if srv is not None else None
                if after is not None and spliced.get(row["server"]) is not None:
                    row["haproxy_spliced_bytes"] = max(0, after - spliced[row["server"]])
            return done

        if names:
            got, bad = static.drive(opts, names, start_once, lambda srv, size: files[size][0],
                                    place.client_cpus, meta, log, place.threads, observe=observe)
            rows += got
            problems += bad
        else:
            for srv in started.values():
                srv.stop()
        meta["nginx_temp_file_warnings"] = count_in(os.path.join(tmp, "nginx", "error.log"),
                                                    "buffered to a temporary file")
    finally:
        if origin is not None:
            origin.stop()
        static.save_configs(tmp, opts.out, list(opts.servers) + ["origin"], ("haproxy.cfg",))
        save_commands(opts.out, meta.get("commands") or {})
        shutil.rmtree(tmp, ignore_errors=True)
    meta, rows, _, _, problems = static.finish(meta, rows, problems, REFERENCE, log)
    summary, ratios = summarize(rows)
    return meta, rows, summary, ratios, problems


_WHY = ("unknown option", "alert", "error", "cannot", "not built", "not installed", "refused",
        "served", "did not answer")


def start_failure(message, log_path=None):
    """One line that says why a server did not start: the first line of its
    log (else of the message) that names a cause, else the message's first
    line.  zchttpd without --proxy: "zchttpd: unknown option 'proxy'"."""
    lines = []
    try:
        with open(log_path, errors="replace") as f:
            lines = [x.strip() for x in f.read().splitlines() if x.strip()]
    except (OSError, TypeError):
        pass
    first = message.splitlines()[0] if message else "?"
    for line in lines + [x.strip() for x in message.splitlines()]:
        if any(w in line.lower() for w in _WHY):
            return line if line == first else f"{first} {line}"
    return first


def save_commands(out, commands):
    """configs/commands.txt: every server's command line (zchttpd's and the
    relay's are their whole configuration)."""
    if commands:
        os.makedirs(os.path.join(out, "configs"), exist_ok=True)
        with open(os.path.join(out, "configs", "commands.txt"), "w") as f:
            f.writelines(f"{name}: {cmd}\n" for name, cmd in commands.items())


def origin_accepts(origin, kind):
    """The nginx origin's accepted connections so far (stub_status; the
    status request's own connection included), or None."""
    if kind != "nginx":
        return None
    try:
        status, body = origin.fetch(ORIGIN_STATUS, timeout=5)
    except (OSError, http.client.HTTPException):
        return None
    return parse_stub_status(body.decode(errors="replace")) if status == 200 else None


def count_in(path, needle):
    """Lines of file path that contain needle (0 without the file)."""
    try:
        with open(path, errors="replace") as f:
            return sum(needle in line for line in f)
    except OSError:
        return 0


def cmd_report(data, out):
    """`zcbench report DIR` of a proxy result: tables and figures again."""
    rows, meta = data["runs"], data.get("meta", {})
    summary, ratios = summarize(rows)
    write_all(out, meta, rows, summary, ratios)
    text, figs = present(out, meta, rows, summary)
    print(text)
    print(f"zcbench: wrote {out} ({', '.join(os.path.basename(f) for f in figs)})", file=sys.stderr)
    return 0

