"""`zcbench preload`: unmodified programs with and without libzc-preload.so.

Workloads (docs/bench-preload.md), each run once plain and once under `zcrun
--stats-file=F --`, the two back to back in an order that alternates from
run to run:

  apache     (1) Apache httpd (event MPM, EnableSendfile Off, EnableMMAP On,
             no access log) serving a 1 MiB file to wrk -t1 -cN on
             127.0.0.1; Apache pinned to one CPU inside a cgroup with a CPU
             quota (--server-cpu, default 0.5 of one CPU: budget.py), wrk
             on the other CPU; a run where wrk used more than 80 % of its
             core is marked client-bound.  Apache
             is started afresh for every measurement (so its statistics are
             per measurement) and its answer is checked byte for byte first.
  apache-defaults  the same with the preload's defaults only: the preload
             converts writes from mappings of ordinary files only on
             request (ZC_ENABLE=mapwrite, docs/preload.md), which every
             other workload gets through --enable.
  apache-noguard   apache with mapwrite's cost guard off (ZC_MAPWRITE_GUARD=0:
             every write from the mapping converted, whether or not it
             measured cheaper here)
  apache-sndbuf, apache-sndbuf-noguard
             the same two with Apache's SendBufferSize at 16 KiB: each
             writev of the 1 MiB mapping then hands the socket 16-80 KiB,
             and the conversion's fixed checks per call cost more than the
             copy saves -- the case the guard is for (docs/bench-preload.md,
             "What decides it").  These four are not in the default list.
  dd-pipe    (2) dd if=FILE bs=128k | dd of=/dev/null bs=128k, FILE cached.
  sed        (3) sed -n '$p' TEXT: glibc stdio line reading of a cached file.
  cut        (3) cut -c1-8 TEXT > /dev/null: the same through getc-style reads.
  null-4k    (4) dd if=/dev/zero of=/dev/null bs=4k count=N: syscall-bound,
             nothing to gain; measures the preload's cost per call.
  pingpong   (4) 64-byte messages back and forth over a socketpair between
             two processes (preload_pingpong.py): the same, for sockets.

The figure of merit is a rate (higher is better): requests/s, MB/s of
input, writes/s, round trips/s.  Every rate is the amount of work divided
by the wall time of the whole command (process start and exit included:
the preload's start-up cost is part of what it costs).  For each preload run
the statistics file says which conversions fired (converted / seen calls,
bytes moved without a copy).  The preload runs get zcrun --enable=ENABLE
(default mapwrite: the cases the preload converts only on request)
except apache-defaults, which shows the preload's defaults.

Bars from the issue (preload/plain ratio of the medians): >= 1.3 on apache
and dd-pipe, >= 1.1 on the stdio readers, and no workload below 0.97.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import build_dir, pinning, preload_apache, preload_pingpong, preload_stats, wrk
from .budget import Budget
from .cpu import children_cpu_seconds
from .static import machine_note, measure, verify_bodies

MODES = ("plain", "preload")
WORKLOADS = ("apache", "apache-defaults", "dd-pipe", "sed", "cut", "null-4k", "pingpong",
             "apache-noguard", "apache-sndbuf", "apache-sndbuf-noguard")
DEFAULT_WORKLOADS = WORKLOADS[:7]
# Apache variants: (SendBufferSize or None, environment of the preload run).
APACHE_VARIANTS = {"apache": (None, {}), "apache-defaults": (None, {}),
                   "apache-noguard": (None, {"ZC_MAPWRITE_GUARD": "0"}),
                   "apache-sndbuf": (16384, {}),
                   "apache-sndbuf-noguard": (16384, {"ZC_MAPWRITE_GUARD": "0"})}
DEFAULT_ENABLE = "mapwrite"   # zcrun --enable of the preload runs (not *-defaults)
OVERHEAD_BAR = 0.97
BARS = {"apache": 1.3, "apache-defaults": 1.3, "dd-pipe": 1.3, "sed": 1.1, "cut": 1.1,
        "null-4k": OVERHEAD_BAR, "pingpong": OVERHEAD_BAR, "apache-noguard": 1.3,
        "apache-sndbuf": OVERHEAD_BAR, "apache-sndbuf-noguard": OVERHEAD_BAR}
CLASSES = {"apache": "(1) mmap+write server", "apache-defaults": "(1) mmap+write server", "dd-pipe": "(2) dd into a pipe",
           "sed": "(3) stdio line reader", "cut": "(3) stdio line reader",
           "null-4k": "(4) overhead: 4 KiB writes", "pingpong": "(4) overhead: socket ping-pong",
           "apache-noguard": "(1) mmap+write server, guard off",
           "apache-sndbuf": "(1) ... 16 KiB send buffer",
           "apache-sndbuf-noguard": "(1) ... 16 KiB send buffer, guard off"}
UNITS = {"apache": "req/s", "apache-defaults": "req/s", "dd-pipe": "MB/s", "sed": "MB/s", "cut": "MB/s",
         "null-4k": "writes/s", "pingpong": "round trips/s", "apache-noguard": "req/s",
         "apache-sndbuf": "req/s", "apache-sndbuf-noguard": "req/s"}
APACHE_FILE_SIZE = 1 << 20


class PreloadBenchError(RuntimeError):
    pass


def preload_paths(build=None):
    """(libzc-preload.so, zcrun) of the build tree ($ZC_PRELOAD_SO and
    $ZC_ZCRUN override)."""
    b = build or build_dir()
    so = os.environ.get("ZC_PRELOAD_SO") or os.path.join(b, "preload", "libzc-preload.so")
    zcrun = os.environ.get("ZC_ZCRUN") or os.path.join(os.path.dirname(so), "zcrun")
    return so, zcrun


def wrap(mode, argv, zcrun, stats_file, enable=""):
    """The argv of a measurement: unchanged for plain; for preload under
    zcrun with its statistics file and, when given, --enable=ENABLE."""
    if mode == "plain":
        return list(argv)
    if mode == "preload":
        return [zcrun, f"--stats-file={stats_file}", *([f"--enable={enable}"] if enable else []),
                "--", *argv]
    raise ValueError(f"unknown mode {mode!r}")


def enable_for(name, enable):
    """The --enable list of workload name: none for the *-defaults ones."""
    return "" if name.endswith("-defaults") else enable


def run_order(run_no, modes=MODES):
    """The order of the modes in run run_no (1-based): rotated every run so
    neither always goes first."""
    k = (run_no - 1) % len(modes)
    return list(modes[k:] + modes[:k])


def clean_env():
    """Our environment without any preload settings (the plain runs must not
    inherit one, and zcrun sets what it needs)."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ZC_DISABLE", "ZC_ENABLE", "ZC_STATS", "ZC_STATS_FILE", "ZC_NOFOLLOW",
              "ZC_MAPWRITE_GUARD", "ZC_MAPWRITE_GUARD_TEST"):
        env.pop(k, None)
    return env


# -- inputs ------------------------------------------------------------------

def make_binary(path, size):
    """size random bytes (written in 1 MiB pieces)."""
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            f.write(os.urandom(n))
            left -= n


def make_text(path, size):
    """size bytes of text lines: base64-like words of ragged lengths, made by
    repeating a random 1 MiB block of lines (the readers do the same work on
    every block; nothing to compress away for a reader)."""
    import base64
    raw = base64.b64encode(os.urandom(3 << 18)).decode()
    lines, i, n = [], 0, 0
    while i < len(raw):
        w = 10 + (n * 37) % 110
        lines.append(raw[i:i + w])
        i += w
        n += 1
    block = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            piece = block[:left]
            f.write(piece)
            left -= len(piece)


def warm(path):
    """Read the file once so that it is in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass


def resident_fraction(path):
    """The part of path that is in the page cache (mincore(2)), 0.0-1.0."""
    import ctypes
    import mmap
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    vec = ctypes.create_string_buffer(pages)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw) / pages


def rewarm(path):
    """Bring path back into the page cache right before a measurement; the
    fraction that was still there.  The workloads are specified on cached
    files, and a host may evict idle page cache on its own: this machine
    runs DAMON proactive reclaim (kdamond, action pageout for regions idle
    for about a minute; a 1 GiB file left idle for 12 minutes was 73 %
    resident).  In the runs of 2026-11-23 the inputs were 99-100 % cached
    before every measurement, so this guards the method, it did not
    change those results."""
    before = resident_fraction(path)
    warm(path)
    return before


# -- one measurement -------------------------------------------------------

def timed(argv, env, timeout_s=600, stdout=subprocess.DEVNULL):
    """Run argv to completion; (wall seconds, child CPU seconds, stdout bytes).
    A non-zero exit is an error: a failing program measures nothing."""
    cpu0 = children_cpu_seconds()
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                       stderr=subprocess.PIPE, timeout=timeout_s)
    wall = time.perf_counter() - t0
    cpu = children_cpu_seconds() - cpu0
    if p.returncode != 0:
        raise PreloadBenchError(f"exit {p.returncode}: {' '.join(argv)}\n"
                                f"{p.stderr.decode(errors='replace')[-2000:]}")
    return wall, cpu, p.stdout


def command_workloads(paths, opts, pingpong):
    """{name: (argv, amount of work, to rate)}: rate = amount / seconds."""
    mb = 1e6
    dd, text = paths.get("dd", "DD-INPUT"), paths.get("text", "TEXT-INPUT")  # unused unless prepared
    return {
        "dd-pipe": (["sh", "-c", f"dd if='{dd}' bs=128k status=none | "
                                 "dd of=/dev/null bs=128k status=none"],
                    opts.dd_bytes / mb),
        "sed": (["sed", "-n", "$p", text], opts.text_bytes / mb),
        "cut": (["cut", "-c1-8", text], opts.text_bytes / mb),
        "null-4k": (["dd", "if=/dev/zero", "of=/dev/null", "bs=4k", f"count={opts.null_writes}",
                     "status=none"], opts.null_writes),
        "pingpong": ([pingpong or "PINGPONG", str(opts.pingpong_rounds)], opts.pingpong_rounds),
    }


def measure_command(name, mode, argv, amount, zcrun, stats_file, enable, inputs=()):
    """One timed run; the files in inputs are brought into the page cache
    first (cached_before: how much of them still was)."""
    cached = [rewarm(p) for p in inputs]
    wall, cpu, _ = timed(wrap(mode, argv, zcrun, stats_file, enable_for(name, enable)), clean_env())
    row = {"seconds": wall, "cpu_s": cpu, "rate": amount / wall}
    if cached:
        row["cached_before"] = round(min(cached), 4)
    return row


def workload_inputs(name, paths):
    """The cached files a command workload reads."""
    key = {"dd-pipe": "dd", "sed": "text", "cut": "text"}.get(name)
    return (paths[key],) if key in paths else ()


def measure_apache(name, mode, paths, opts, zcrun, stats_file, server_cpus, client_cpus, workdir,
                   budget=None):
    """Start Apache (under zcrun for preload; in a cgroup of its own with
    the CPU budget when given), check the file, run wrk, stop (so the
    statistics file is complete)."""
    prefix = wrap(mode, [], zcrun, stats_file, enable_for(name, opts.enable))
    send_buffer, more_env = APACHE_VARIANTS[name]
    srv = preload_apache.Apache(paths["docroot"], workdir, prefix=prefix,
                                env={**clean_env(), **(more_env if mode == "preload" else {})},
                                probe_path="/index.html", cpus=server_cpus, budget=budget,
                                send_buffer=send_buffer)
    srv.start()
    try:
        verify_bodies(srv, [("/f1m", paths["f1m_sha256"], APACHE_FILE_SIZE)])
        res, fields = measure(srv, lambda: wrk.run(srv.url("/f1m"), opts.connections, opts.duration_s,
                                                   threads=1, cpus=client_cpus), client_cpus)
        if srv.proc.poll() is not None:
            raise PreloadBenchError(f"Apache died during the run:\n{srv.log_tail()}")
    finally:
        srv.stop()
    if res.requests == 0 or res.errors > 0.001 * res.requests:
        raise PreloadBenchError(f"Apache ({mode}): {res.errors} errors in {res.requests} requests")
    return {"seconds": res.duration_s, "rate": res.requests_per_s, "mbytes_per_s": res.bytes_per_s / 1e6,
            "requests": res.requests, "errors": res.errors, **fields,
            "command": " ".join(srv.cmdline)}


def stats_fields(stats_file):
    """Flat per-conversion statistics of one preload measurement."""
    t = preload_stats.total(preload_stats.read(stats_file))
    row = {"processes": t["processes"]}
    for c in preload_stats.CONVERSIONS:
        row[f"{c}_seen"] = t[c]["seen"]
        row[f"{c}_converted"] = t[c]["converted"]
        row[f"{c}_bytes"] = t[c]["bytes_zero_copy"]
    return row


# -- the experiment --------------------------------------------------------

def prepare(tmp, opts, log):
    """Inputs in tmp (cached before each use: rewarm), the ping-pong program; paths."""
    paths = {}
    if "dd-pipe" in opts.workloads:
        paths["dd"] = os.path.join(tmp, "dd.bin")
        make_binary(paths["dd"], opts.dd_bytes)
    if {"sed", "cut"} & set(opts.workloads):
        paths["text"] = os.path.join(tmp, "lines.txt")
        make_text(paths["text"], opts.text_bytes)
    if any(w in APACHE_VARIANTS for w in opts.workloads):
        root = os.path.join(tmp, "docroot")
        os.makedirs(root)
        make_binary(os.path.join(root, "f1m"), APACHE_FILE_SIZE)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("<h1>zcbench preload</h1>\n")
        for n in os.listdir(root):
            os.chmod(os.path.join(root, n), 0o644)
        with open(os.path.join(root, "f1m"), "rb") as f:
            paths["f1m_sha256"] = hashlib.sha256(f.read()).hexdigest()
        paths["docroot"] = root
    if "pingpong" in opts.workloads:
        paths["pingpong"] = preload_pingpong.build(tmp)
    # No warming here: measure_command brings each input back into the
    # page cache right before every measurement (rewarm).
    print(f"zcbench preload: inputs in {tmp}", file=log)
    return paths


def check_preload(so, zcrun):
    if not os.path.exists(so):
        raise PreloadBenchError(f"no preload at {so} (build it: `make`, or set ZC_PRELOAD_SO)")
    if not os.access(zcrun, os.X_OK):
        raise PreloadBenchError(f"no zcrun at {zcrun} (build it, or set ZC_ZCRUN)")


def run(opts, log=sys.stderr):
    """The whole experiment.  opts: workloads, runs, duration_s, connections,
    dd_bytes, text_bytes, null_writes, pingpong_rounds, enable, out, pin.
    Returns (meta, rows)."""
    so, zcrun = preload_paths(getattr(opts, "build", None))
    check_preload(so, zcrun)
    web = any(w in APACHE_VARIANTS for w in opts.workloads)
    if web:
        wrk.find_wrk()
    budget = Budget(getattr(opts, "server_cpu", 0.0)) if web else None
    server_cpus, client_cpus = (pinning.split(pinning.available(), 1)
                                if getattr(opts, "pin", True) else (None, None))
    meta = {
        "benchmark": "preload",
        "command": "zcbench " + " ".join(getattr(opts, "argv", ["preload"])),
        "workloads": opts.workloads, "runs": opts.runs, "duration_s": opts.duration_s,
        "connections": opts.connections, "dd_bytes": opts.dd_bytes, "text_bytes": opts.text_bytes,
        "null_writes": opts.null_writes, "pingpong_rounds": opts.pingpong_rounds,
        "preload": so, "zcrun": zcrun, "enable": opts.enable, "bars": {w: BARS[w] for w in opts.workloads},
        "placement": {"apache_cpus": server_cpus, "wrk_cpus": client_cpus},
        "budget": budget.as_dict() if budget else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_note(),
    }
    tmp = tempfile.mkdtemp(prefix="zcbench-preload-")
    os.chmod(tmp, 0o755)          # Apache's child (www-data) reads the docroot
    rows = []
    try:
        paths = prepare(tmp, opts, log)
        cmds = command_workloads(paths, opts, paths.get("pingpong"))
        stats_dir = os.path.join(tmp, "stats")
        os.makedirs(stats_dir)
        os.chmod(stats_dir, 0o777)  # written by Apache's child as www-data too
        total = opts.runs * len(opts.workloads) * len(MODES)
        i = 0
        for run_no in range(1, opts.runs + 1):
            for name in opts.workloads:
                for mode in run_order(run_no):
                    i += 1
                    print(f"[{i}/{total}] run {run_no}/{opts.runs} {name} {mode} ... ",
                          end="", file=log, flush=True)
                    stats_file = os.path.join(stats_dir, f"{name}-{run_no}-{mode}.jsonl")
                    if name in APACHE_VARIANTS:
                        m = measure_apache(name, mode, paths, opts, zcrun, stats_file, server_cpus,
                                           client_cpus, os.path.join(tmp, f"{name}-{run_no}-{mode}"),
                                           budget)
                    else:
                        argv, amount = cmds[name]
                        m = measure_command(name, mode, argv, amount, zcrun, stats_file, opts.enable,
                                            workload_inputs(name, paths))
                        m["command"] = " ".join(argv)
                    row = {"run": run_no, "workload": name, "mode": mode, "unit": UNITS[name], **m}
                    if mode == "preload":
                        row.update(stats_fields(stats_file))
                    rows.append(row)
                    note = ""
                    if mode == "preload":
                        note = "  [" + preload_stats.brief(preload_stats.total(
                            preload_stats.read(stats_file))) + "]"
                    if m.get("server_cpu_util") is not None:
                        note = f", server {m['server_cpu_util']:.2f} CPU" + note
                    if m.get("client_bound"):
                        note += f"  (client-bound: wrk at {m['client_cpu_util']:.0%})"
                    print(f"{row['rate']:,.1f} {row['unit']}{note}", file=log, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["machine_after"] = machine_note()
    return meta, rows


def default_out():
    return os.path.join(build_dir(), "bench", "preload-" + time.strftime("%Y%m%d-%H%M%S"))
