"""Run h2load (nghttp2's HTTP/2 load generator, Debian's nghttp2-client)
and parse what it prints, into wrk.py's WrkResult so that the rest of
`zcbench static` (measure, report) takes HTTP/2 points as it takes wrk's.

h2load's output (1.52, a timed run: -D) ends like:

    finished in 2.00s, 102435.00 req/s, 199.97MB/s
    requests: 204870 total, 204910 started, 204870 done, 204870 succeeded, 0 failed, 0 errored, 0 timeout
    status codes: 204870 2xx, 0 3xx, 0 4xx, 0 5xx
    traffic: 399.94MB (419369570) total, 6.25MB (6556324) headers (space savings 83.67%), 390.17MB (409125390) data
                         min         max         mean         sd        +/- sd
    time for request:       48us      6.55ms       367us       337us    92.86%

It gives no latency percentiles: the rows' p50/p99 stay empty (the mean
and the maximum are kept).  A request that did not succeed (failed,
errored, timed out, or a status >= 400) counts as an error.
"""
import re
import shutil
import subprocess

from .wrk import WrkError, WrkResult, format_duration, parse_time

_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}


def find_h2load():
    path = shutil.which("h2load")
    if not path:
        raise WrkError("h2load is not installed (ci/deps.sh installs Debian's nghttp2-client)")
    return path


def command(url, connections, streams, duration_s, threads=1, h2load="h2load"):
    """The h2load argv: `connections` connections, `streams` concurrent
    streams on each (-m), for duration_s (-D; no warm-up, so that the
    CPU times measure() takes cover what h2load counts)."""
    return [h2load, f"-t{threads}", f"-c{connections}", f"-m{streams}",
            f"-D{format_duration(duration_s)}", url]


def parse(text):
    """A WrkResult from h2load's stdout; WrkError without its summary."""
    r = WrkResult()
    seen = set()
    for line in text.splitlines():
        s = line.strip()
        m = re.fullmatch(r"finished in (\S+), ([\d.]+) req/s, ([\d.]+)([KMGT]?B)/s", s)
        if m:
            r.duration_s = parse_time(m.group(1))
            r.requests_per_s = float(m.group(2))
            r.bytes_per_s = float(m.group(3)) * _UNITS[m.group(4)]
            seen.add("finished")
            continue
        m = re.fullmatch(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                         r"(\d+) failed, (\d+) errored, (\d+) timeout", s)
        if m:
            _, _, done, _, failed, _, timeout = map(int, m.groups())
            r.requests = done
            # "failed" includes the errored and the timed-out ones.
            r.errors_read = max(failed - timeout, 0)
            r.errors_timeout = timeout
            seen.add("requests")
            continue
        m = re.fullmatch(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", s)
        if m:
            r.non_2xx_3xx = int(m.group(3)) + int(m.group(4))
            continue
        m = re.fullmatch(r"traffic: \S+ \((\d+)\) total,.*", s)
        if m:
            r.bytes_read = float(m.group(1))
            continue
        m = re.fullmatch(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+.*", s)
        if m:
            r.latency_max_s = parse_time(m.group(2))
            r.latency_avg_s = parse_time(m.group(3))
    missing = {"finished", "requests"} - seen
    if missing:
        raise WrkError("h2load printed no summary (missing: %s):\n%s" % (", ".join(sorted(missing)), text))
    return r


def run(url, connections, streams, duration_s, threads=1, cpus=None):
    """Run h2load once (pinned to cpus if given); a parsed WrkResult with
    its own CPU time and waits, as wrk.run measures them."""
    from . import pinning
    from .cpu import children_cpu_seconds, children_waits
    argv = command(url, connections, streams, duration_s, threads, h2load=find_h2load())
    cpu0, waits0 = children_cpu_seconds(), children_waits()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 30,
                           preexec_fn=pinning.preexec(cpus))
    except subprocess.TimeoutExpired:
        raise WrkError(f"h2load did not finish in {duration_s + 30:.0f}s: {' '.join(argv)}") from None
    if p.returncode != 0:
        raise WrkError(f"h2load exited {p.returncode}: {' '.join(argv)}\n{p.stdout}{p.stderr}")
    r = parse(p.stdout)
    r.raw = p.stdout
    r.client_cpu_s = children_cpu_seconds() - cpu0
    r.client_waits = children_waits() - waits0
    return r
