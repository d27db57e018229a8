"""Run wrk and parse what it prints.

wrk's output (4.1, with --latency) looks like:

    Running 1s test @ http://127.0.0.1:18081/f1k
      1 threads and 10 connections
      Thread Stats   Avg      Stdev     Max   +/- Stdev
        Latency   276.03us  680.24us   5.72ms   92.70%
        Req/Sec    64.79k    13.77k   84.03k    45.45%
      Latency Distribution
         50%   96.00us
         99%    3.74ms
      70816 requests in 1.10s, 84.89MB read
      Socket errors: connect 0, read 0, write 0, timeout 0
      Non-2xx or 3xx responses: 5
    Requests/sec:  64397.56
    Transfer/sec:     77.20MB

Byte units are binary (KB = 1024 B), Req/Sec counts are decimal (k = 1000),
times are us/ms/s/m/h.  "Socket errors" and "Non-2xx" lines appear only when
non-zero.  Despite its name, wrk counts only statuses > 399 as "Non-2xx or 3xx".
"""
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field

_BYTES = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4, "PB": 1024 ** 5}
_METRIC = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
CONNECT_RETRIES = 3
_TIME = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class WrkError(RuntimeError):
    pass


def parse_bytes(text):
    m = re.fullmatch(r"([\d.]+)([KMGTP]?B)", text.strip())
    if not m:
        raise ValueError(f"not a wrk byte count: {text!r}")
    return float(m.group(1)) * _BYTES[m.group(2)]


def parse_time(text):
    """Seconds from a wrk time ("96.00us", "3.74ms", "1.10s", "1.00m")."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        raise ValueError(f"not a wrk time: {text!r}")
    return float(m.group(1)) * _TIME[m.group(2)]


def parse_metric(text):
    m = re.fullmatch(r"([\d.]+)([kMGT]?)", text.strip())
    if not m:
        raise ValueError(f"not a wrk count: {text!r}")
    return float(m.group(1)) * _METRIC[m.group(2)]


@dataclass
class WrkResult:
    requests: int = 0            # completed responses
    duration_s: float = 0.0      # wrk's measured run time
    bytes_read: float = 0.0      # headers + bodies
    requests_per_s: float = 0.0
    bytes_per_s: float = 0.0
    latency_avg_s: float = 0.0
    latency_max_s: float = 0.0
    latency_pct: dict = field(default_factory=dict)  # {"50": seconds, ...}
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_timeout: int = 0
    non_2xx_3xx: int = 0         # wrk: responses with status > 399
    client_cpu_s: float = None   # wrk's own CPU time (run() measures it)
    client_waits: int = None     # wrk's voluntary context switches (run())
    retries: int = 0             # runs started again because wrk's first connect failed

    @property
    def client_cpu_util(self):
        """wrk's CPU use over the run, 1.0 = one core busy: near 1.0 the
        client, not the server, limits the rate."""
        if self.client_cpu_s is None or not self.duration_s:
            return None
        return self.client_cpu_s / self.duration_s

    @property
    def client_waits_per_req(self):
        """How often wrk slept waiting for an answer, per response: about 0
        means the server always had one ready, the client is the limit."""
        if self.client_waits is None or not self.requests:
            return None
        return self.client_waits / self.requests

    @property
    def socket_errors(self):
        return self.errors_connect + self.errors_read + self.errors_write + self.errors_timeout

    @property
    def errors(self):
        return self.socket_errors + self.non_2xx_3xx

    def as_dict(self):
        d = asdict(self)
        d["socket_errors"] = self.socket_errors
        d["errors"] = self.errors
        return d


def parse(text):
    """A WrkResult from wrk's stdout; WrkError if the summary lines are missing."""
    r = WrkResult()
    seen = set()
    in_dist = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Latency Distribution"):
            in_dist = True
            continue
        if in_dist:
            m = re.fullmatch(r"([\d.]+)%\s+(\S+)", s)
            if m:
                r.latency_pct["%g" % float(m.group(1))] = parse_time(m.group(2))
                continue
            in_dist = False
        m = re.match(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", s)
        if m:
            r.latency_avg_s = parse_time(m.group(1))
            r.latency_max_s = parse_time(m.group(3))
            continue
        m = re.fullmatch(r"(\d+) requests in (\S+), (\S+) read", s)
        if m:
            r.requests = int(m.group(1))
            r.duration_s = parse_time(m.group(2))
            r.bytes_read = parse_bytes(m.group(3))
            seen.add("requests")
            continue
        m = re.fullmatch(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", s)
        if m:
            r.errors_connect, r.errors_read, r.errors_write, r.errors_timeout = map(int, m.groups())
            continue
        m = re.fullmatch(r"Non-2xx or 3xx responses: (\d+)", s)
        if m:
            r.non_2xx_3xx = int(m.group(1))
            continue
        m = re.fullmatch(r"Requests/sec:\s+([\d.]+)", s)
        if m:
            r.requests_per_s = float(m.group(1))
            seen.add("rps")
            continue
        m = re.fullmatch(r"Transfer/sec:\s+(\S+)", s)
        if m:
            r.bytes_per_s = parse_bytes(m.group(1))
            seen.add("tps")
    missing = {"requests", "rps", "tps"} - seen
    if missing:
        raise WrkError("wrk printed no summary (missing: %s):\n%s" % (", ".join(sorted(missing)), text))
    return r


def command(url, connections, duration_s, threads=1, close=False, latency=True, wrk="wrk",
            timeout_s=None):
    """The wrk argv.  close=True sends "Connection: close": one request per connection."""
    argv = [wrk, f"-t{threads}", f"-c{connections}", f"-d{format_duration(duration_s)}"]
    if timeout_s:
        argv.append(f"--timeout={format_duration(timeout_s)}")
    if latency:
        argv.append("--latency")
    if close:
        argv += ["-H", "Connection: close"]
    argv.append(url)
    return argv


def format_duration(seconds):
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{int(seconds * 1000)}ms"


def parse_duration(text):
    """"5s" / "500ms" / "1m" / "5" -> seconds."""
    t = text.strip()
    if re.fullmatch(r"[\d.]+", t):
        t += "s"
    try:
        v = parse_time(t)
    except ValueError:
        raise ValueError(f"bad duration {text!r} (examples: 5s, 500ms, 1m)") from None
    if v <= 0:
        raise ValueError(f"bad duration {text!r}: must be positive")
    return v


def find_wrk():
    path = shutil.which("wrk")
    if not path:
        raise WrkError("wrk is not installed (ci/deps.sh installs the Debian package)")
    return path


def connect_diagnosis(url, tries=3):
    """What a failed connect to url's host:port looks like from here: a
    few connects of our own (error or the local port they got) and the
    sockets on that port (ss), for the error message."""
    import socket
    m = re.match(r"https?://([^:/]+):(\d+)", url)
    if not m:
        return ""
    host, port = m.group(1), int(m.group(2))
    lines = []
    for _ in range(tries):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, port))
            lines.append(f"connect from port {s.getsockname()[1]}: ok")
        except OSError as e:
            lines.append(f"connect: {e}")
        finally:
            s.close()
    try:
        ss = subprocess.run(["ss", "-tanp", f"( sport = :{port} )"], capture_output=True, text=True,
                            timeout=10).stdout.splitlines()
        states = {}
        for line in ss[1:]:
            states[line.split()[0]] = states.get(line.split()[0], 0) + 1
        lines.append(f"sockets on port {port}: {states}")
        lines += [x for x in ss if x.startswith("LISTEN")]
    except (OSError, subprocess.SubprocessError):
        pass
    return "\n".join(["", "diagnosis:"] + lines) + "\n"


def run(url, connections, duration_s, threads=1, close=False, latency=True, cpus=None):
    """Run wrk once (pinned to cpus if given); a parsed WrkResult (raw stdout in .raw)."""
    from . import pinning
    from .cpu import children_cpu_seconds, children_waits
    argv = command(url, connections, duration_s, threads, close, latency, wrk=find_wrk())
    for attempt in range(CONNECT_RETRIES + 1):
        cpu0, waits0 = children_cpu_seconds(), children_waits()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 30,
                               preexec_fn=pinning.preexec(cpus))
        except subprocess.TimeoutExpired:
            raise WrkError(f"wrk did not finish in {duration_s + 30:.0f}s: {' '.join(argv)}") from None
        # wrk gives up at once when its first test connection fails, and
        # on this machine that connect was refused now and then by a
        # server that was alive and answered afterwards: tried again up to
        # CONNECT_RETRIES times, 1, 2, 4 s apart.
        if p.returncode != 0 and "unable to connect" in p.stdout + p.stderr and attempt < CONNECT_RETRIES:
            time.sleep(2.0 ** attempt)
            continue
        break
    if p.returncode != 0:
        diag = connect_diagnosis(url) if "unable to connect" in p.stdout + p.stderr else ""
        raise WrkError(f"wrk exited {p.returncode} (after {attempt} retries): {' '.join(argv)}\n"
                       f"{p.stdout}{p.stderr}{diag}")
    r = parse(p.stdout)
    r.raw = p.stdout
    r.client_cpu_s = children_cpu_seconds() - cpu0
    r.client_waits = children_waits() - waits0
    r.retries = attempt
    return r
