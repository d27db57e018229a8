"""The servers under test: generated configs, start, wait until they answer, stop.

Every server listens on 127.0.0.1 on a free ephemeral port, keeps its pid file,
logs and temporary files in its own directory under the run's temp dir (no
/var/log, no /run), runs in the foreground as a child of zcbench in its own
process group, and gets the same number of workers:

  zchttpd  --workers N --listen 127.0.0.1:PORT --root DIR (access log is off
           by default)
  nginx    worker_processes N; sendfile on; tcp_nopush on; open_file_cache;
           access_log off; keepalive_requests 1000000 (the tuning the issue
           asks for; everything else Debian's default)
  h2o      num-threads N; file.dir; no access log
  floor    build/bench/zcfloor --workers N --listen 127.0.0.1:PORT --root DIR:
           the reference "server" (bench/floor/zcfloor.c): accept4, one
           recv, one send of a canned response read from DIR at start
  h2floor  build/bench/zch2floor --workers N --listen 127.0.0.1:PORT --root
           DIR, h2c only: the floor of a server built on libnghttp2
           (bench/floor/zch2floor.c): nghttp2's part of each request, the
           files read from DIR at start, one recv and one send per wake-up
  zchttpd-uring, floor-uring
           the same two with --event io_uring (server/event/event_uring.c,
           bench/floor/floor_uring.c)
  zchttpd-tls, nginx-tls
           HTTPS on the measured port (TLS 1.2/1.3, a self-signed P-256
           certificate made for the run, session caches on, kTLS asked for
           where the kernel has it: zchttpd by default, nginx with
           `ssl_conf_command Options KTLS`); zchttpd keeps a plain port
           for its status endpoint

HTTP/2 (protocol "h2" or "h2c", `zcbench static --protocol`) is for
zchttpd, nginx and h2o alone, each on the measured port: h2 over TLS by
ALPN (the certificate as above; nginx `listen ... ssl http2`, h2o's `ssl`
listener), or h2c with prior knowledge on a plain port (zchttpd's plain
port takes both; nginx 1.22 `listen ... http2` is h2c alone; h2o takes
both).  They are probed and checked with curl over the same protocol.

When zcbench runs as root, nginx and h2o would switch their workers to
nobody; they are told to stay root instead, so every server reads the docroot
with the same privileges (h2o refuses to write its pid file otherwise).

With a budget (budget.py), the server is started inside its own cgroup
with a CPU quota -- it joins the group between fork and exec, so every
process and thread it starts is in it too -- and its CPU time is the
group's; the group is removed when the server stops.

The config generators are pure functions of their arguments (tested on fixed
inputs); Server does the process work.
"""
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time

from . import build_dir, pinning
from .cpu import cpu_seconds

NAMES = ("zchttpd", "nginx", "h2o", "floor", "zchttpd-uring", "floor-uring",
         "zchttpd-tls", "nginx-tls", "zchttpd-copy", "zchttpd-sendfile", "h2floor",
         "floor-open")
# name: (kind, more arguments) -- a server that is another one with options.
# zchttpd-copy and zchttpd-sendfile are the two ways to send a hot body up
# to 128 KiB (docs/bench-static.md, "How a hot body is sent"): copied from
# the cache's shared memory with its head, or sendfile from the page cache.
VARIANTS = {"zchttpd-uring": ("zchttpd", ["--event", "io_uring"]),
            "zchttpd-copy": ("zchttpd", ["--cache-small-max", "128k",
                                         "--cache-copy-max", "128k"]),
            "zchttpd-sendfile": ("zchttpd", ["--cache-small-max", "0"]),
            "floor-uring": ("floor", ["--event", "io_uring"]),
            # The floor, also opening and stat'ing each file at its first
            # request: the least a server that finds its files when asked
            # pays on a trace's first requests (docs/bench-replay.md).
            "floor-open": ("floor", ["--open-first"]),
            "zchttpd-tls": ("zchttpd", []),
            "nginx-tls": ("nginx", [])}
TLS_NAMES = ("zchttpd-tls", "nginx-tls")

PROTOCOLS = ("http/1.1", "h2", "h2c")
H2_KINDS = ("zchttpd", "nginx", "h2o", "h2floor")   # the servers that speak HTTP/2
H2C_ONLY = ("h2floor",)                  # ... and of them those without TLS or HTTP/1.1

def speaks_http2(name):
    """Can `--protocol h2|h2c` measure this server?  A variant speaks what
    its kind speaks (zchttpd-copy is zchttpd with other cache options)."""
    return VARIANTS.get(name, (name, []))[0] in H2_KINDS
PRIVATE_NAMES = {"zchttpd": "zc_httpd", "floor": "zc_floor", "h2floor": "zc_h2floor",
                 "relay": "zc_relay"}   # see Server._private


class ServerError(RuntimeError):
    pass


def free_port():
    """A port the kernel just handed out for 127.0.0.1 (racy, but only we bind here)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# nginx's open_file_cache keeps up to this many descriptors open, besides two
# per connection: its worker's descriptor limit must hold both (a trace
# replay of 16,000 objects ran nginx out of descriptors at 8,192).
OPEN_FILE_CACHE_MAX = 10000


def make_certificate(directory):
    """A self-signed P-256 certificate and key for 127.0.0.1 in directory:
    (cert path, key path)."""
    crt, key = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    if not os.path.exists(crt):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt,
                        "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
    return crt, key


def nginx_tls_directives(crt, key):
    """What makes nginx's server block HTTPS: the same protocols, a session
    cache, and kTLS asked for as zchttpd asks for it."""
    return f"""\
        ssl_certificate {crt};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        ssl_conf_command Options KTLS;
"""


def nginx_config(port, docroot, workers, prefix, as_root=False, worker_connections=4096, locations="",
                 tls=None, http2=False, http_extra=""):
    """nginx.conf text.  prefix is the directory for pid, logs and temp files;
    locations: more directives for the server block (zcbench fastcgi's);
    http_extra: more for the http block (zcbench proxy's upstream block);
    tls: (certificate, key) to listen with HTTPS; http2: the port speaks
    HTTP/2 (h2 by ALPN with tls, else h2c alone: nginx 1.22's syntax)."""
    user = "user root;\n" if as_root else ""
    ssl = (" ssl" if tls else "") + (" http2" if http2 else "")
    locations = (nginx_tls_directives(*tls) if tls else "") + locations
    return f"""\
# generated by zcbench (bench/zcbench_lib/servers.py)
{user}daemon off;
master_process on;
worker_processes {workers};
worker_rlimit_nofile {max(2 * worker_connections, 1024) + OPEN_FILE_CACHE_MAX};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;

events {{
    worker_connections {worker_connections};
}}

http {{
    types {{
        text/html html;
        application/octet-stream bin;
    }}
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max={OPEN_FILE_CACHE_MAX} inactive=60s;
    open_file_cache_valid 60s;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
{http_extra}
    server {{
        listen 127.0.0.1:{port}{ssl};
        server_name localhost;
        root {docroot};
{locations}    }}
}}
"""


def h2o_config(port, docroot, workers, prefix, as_root=False, tls=None):
    """h2o.yaml text (h2o 2.2).  No access-log key: h2o logs nothing then.
    tls: (certificate, key) to listen with HTTPS (h2 by ALPN, or
    http/1.1); a plain port takes HTTP/1.1 and h2c with prior knowledge."""
    user = "user: root\n" if as_root else ""
    ssl = (f"  ssl:\n    certificate-file: {tls[0]}\n    key-file: {tls[1]}\n"
           if tls else "")
    return f"""\
# generated by zcbench (bench/zcbench_lib/servers.py)
{user}listen:
  host: 127.0.0.1
  port: {port}
{ssl}num-threads: {workers}
pid-file: {prefix}/h2o.pid
error-log: {prefix}/error.log
hosts:
  default:
    paths:
      /:
        file.dir: {docroot}
"""


def zchttpd_argv(binary, port, docroot, workers, extra=()):
    return [binary, "--root", docroot, "--listen", f"127.0.0.1:{port}",
            "--workers", str(workers), *extra]


def zchttpd_binary():
    return os.path.join(build_dir(), "server", "zchttpd")


def floor_binary():
    return os.path.join(build_dir(), "bench", "zcfloor")


def h2floor_binary():
    return os.path.join(build_dir(), "bench", "zch2floor")


def floor_argv(binary, port, docroot, workers):
    return [binary, "--root", docroot, "--listen", f"127.0.0.1:{port}", "--workers", str(workers)]


def _which(name):
    for d in (None, "/usr/sbin", "/usr/local/sbin", "/sbin"):
        p = shutil.which(name, path=d) if d else shutil.which(name)
        if p:
            return p
    return None


class Server:
    """One server process tree.  start() returns once it answers GET probe_path."""

    def __init__(self, name, docroot, workdir, workers=1, extra_args=(), probe_path="/index.html",
                 cpus=None, budget=None, private_copy=False, label=None, sidecars=(), extra_env=None,
                 nginx_locations="", mem_group=None, protocol="http/1.1"):
        """name: which server (NAMES).  label: what results and logs call it
        (default: name).  sidecars: Sidecar processes (FastCGI applications)
        started first, in the server's group, and stopped with it.
        extra_env: more environment for the server.  mem_group: a
        memlimit.MemGroup the server (every process it starts) runs in.
        protocol: what the measured port speaks (PROTOCOLS)."""
        if name not in NAMES:
            raise ServerError(f"unknown server {name!r} (known: {', '.join(NAMES)})")
        if protocol not in PROTOCOLS:
            raise ServerError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})")
        if protocol != "http/1.1" and not speaks_http2(name):
            raise ServerError(f"{name} does not speak HTTP/2 (--protocol {protocol}: "
                              f"{', '.join(H2_KINDS)})")
        if name in H2C_ONLY and protocol != "h2c":
            raise ServerError(f"{name} speaks h2c alone (--protocol h2c)")
        self.protocol = protocol
        self.kind, variant_args = VARIANTS.get(name, (name, []))
        self.name = label or name
        self.sidecars = list(sidecars)
        self.extra_env = extra_env
        self.nginx_locations = nginx_locations
        self.docroot = os.path.abspath(docroot)
        self.dir = os.path.join(os.path.abspath(workdir), self.name)
        self.workers = workers
        self.extra_args = variant_args + list(extra_args)
        self.probe_path = probe_path
        self.cpus = cpus          # pin the whole process tree here (pinning.py)
        self.budget = budget      # budget.Budget: run it in a cgroup of its own
        self.mem_group = mem_group
        self.private_copy = private_copy
        self.group = None
        self.port = None
        self.tls = name in TLS_NAMES or protocol == "h2"
        self.status_port = None   # zchttpd's status endpoint (plain HTTP)
        self.proc = None
        self.log_path = os.path.join(self.dir, "stderr.log")

    # -- configuration ------------------------------------------------
    def argv(self):
        as_root = os.geteuid() == 0
        if self.kind == "zchttpd":
            binary = zchttpd_binary()
            if not os.access(binary, os.X_OK):
                raise ServerError(f"{binary} is not built (run `make`)")
            binary = self._private(binary)
            if self.tls:
                crt, key = make_certificate(self.dir)
                return zchttpd_argv(binary, self.status_port, self.docroot, self.workers,
                                    ["--tls-listen", f"127.0.0.1:{self.port}",
                                     "--tls-cert", crt, "--tls-key", key, *self.extra_args])
            return zchttpd_argv(binary, self.port, self.docroot, self.workers, self.extra_args)
        if self.kind in ("floor", "h2floor"):
            binary = floor_binary() if self.kind == "floor" else h2floor_binary()
            if not os.access(binary, os.X_OK):
                raise ServerError(f"{binary} is not built (run `make`)")
            binary = self._private(binary)
            return floor_argv(binary, self.port, self.docroot, self.workers) + self.extra_args
        if self.kind == "nginx":
            binary = _which("nginx")
            if not binary:
                raise ServerError("nginx is not installed (ci/deps.sh installs nginx-light)")
            conf = os.path.join(self.dir, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_config(self.port, self.docroot, self.workers, self.dir, as_root,
                                     locations=self.nginx_locations,
                                     tls=make_certificate(self.dir) if self.tls else None,
                                     http2=self.protocol != "http/1.1"))
            return [binary, "-p", self.dir + "/", "-c", conf, "-e", os.path.join(self.dir, "error.log"),
                    *self.extra_args]
        binary = _which("h2o")
        if not binary:
            raise ServerError("h2o is not installed (ci/deps.sh installs it)")
        conf = os.path.join(self.dir, "h2o.yaml")
        with open(conf, "w") as f:
            f.write(h2o_config(self.port, self.docroot, self.workers, self.dir, as_root,
                               tls=make_certificate(self.dir) if self.tls else None))
        return [binary, "-c", conf, *self.extra_args]

    def _private(self, binary):
        """binary, or with private_copy a byte-identical copy of it in the
        run's bin/ directory under a name without the server's name in it.
        On this shared machine someone ran `pkill zchttpd` every few minutes
        during the benchmark (seen with perf's signal:signal_generate), which
        stopped the benchmark's own zchttpd too; a process named zc_httpd
        run from a private path is not what such a pattern matches."""
        if not self.private_copy:
            return binary
        bindir = os.path.join(os.path.dirname(self.dir), "bin")   # not under .../zchttpd/
        os.makedirs(bindir, exist_ok=True)
        copy = os.path.join(bindir, PRIVATE_NAMES.get(self.kind, "zcb_server"))
        if not os.path.exists(copy):
            shutil.copy2(binary, copy)
        return copy

    # -- process ------------------------------------------------------
    def start(self, timeout_s=10.0):
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.status_port = free_port() if self.tls else self.port
        argv = self.argv()
        self.cmdline = argv
        try:
            preexec = pinning.preexec(self.cpus)
            if self.budget is not None:
                self.group = self.budget.new_group(self.name, len(self.cpus) if self.cpus else 1)
                if self.group is not None:
                    preexec = self.group.create().preexec(self.cpus)
            if self.mem_group is not None:
                inner = preexec

                def preexec():
                    self.mem_group.join()
                    if inner:
                        inner()
            for sc in self.sidecars:
                sc.start(self.dir, preexec)
            log = open(self.log_path, "wb")
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                             start_new_session=True, preexec_fn=preexec,
                                             env={**os.environ, **self.extra_env} if self.extra_env else None)
            finally:
                log.close()
            deadline = time.monotonic() + timeout_s
            while True:
                if self.proc.poll() is not None:
                    raise ServerError(f"{self.name} exited with {self.proc.returncode} at start:\n"
                                      f"  {' '.join(argv)}\n{self.log_tail()}")
                if self._probe():
                    return self
                if time.monotonic() > deadline:
                    raise ServerError(f"{self.name} did not answer on port {self.port} in "
                                      f"{timeout_s:.0f}s:\n{self.log_tail()}")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def connection(self, timeout=10):
        """An http.client connection to the measured port (HTTPS for the
        -tls servers, the certificate not checked: it is the run's own)."""
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def fetch(self, path, timeout=10):
        """GET path on the measured port, over its protocol: (status, body).
        HTTP/2 goes through curl (--http2 with ALPN, or with prior
        knowledge), which must say it spoke HTTP/2 (status 0 if not)."""
        if self.protocol == "http/1.1":
            c = self.connection(timeout=timeout)
            try:
                c.request("GET", path)
                r = c.getresponse()
                return r.status, r.read()
            finally:
                c.close()
        how = "--http2" if self.protocol == "h2" else "--http2-prior-knowledge"
        try:
            p = subprocess.run(["curl", "-sk", how, "--max-time", str(timeout), "-o", "-",
                                "-w", "\n%{http_code} %{http_version}", self.url(path)],
                               capture_output=True, timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            return 0, b""
        body, _, tail = p.stdout.rpartition(b"\n")
        code, _, version = tail.decode(errors="replace").partition(" ")
        if p.returncode != 0 or version != "2":
            return 0, body
        return int(code), body

    def _probe(self):
        if self.protocol != "http/1.1":
            return self.fetch(self.probe_path, timeout=1)[0] == 200
        try:
            c = self.connection(timeout=1)
            c.request("GET", self.probe_path)
            r = c.getresponse()
            r.read()
            c.close()
            return r.status == 200
        except OSError:
            return False
        except http.client.HTTPException:
            return False

    def url(self, path):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    def log_tail(self, n=20):
        text = ""
        for p in (self.log_path, os.path.join(self.dir, "error.log"),
                  *(sc.log_path for sc in self.sidecars if sc.log_path)):
            try:
                with open(p, errors="replace") as f:
                    lines = f.read().splitlines()[-n:]
            except OSError:
                continue
            if lines:
                text += f"--- {p}\n" + "\n".join(lines) + "\n"
        return text

    def pids(self):
        """The master and every descendant (the workers), master first; then
        the sidecars and theirs."""
        if not self.proc or self.proc.poll() is not None:
            return []
        out, todo = [], [self.proc.pid] + [sc.proc.pid for sc in self.sidecars
                                           if sc.proc and sc.proc.poll() is None]
        while todo:
            pid = todo.pop(0)
            out.append(pid)
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/children") as f:
                        todo += [int(x) for x in f.read().split()]
            except OSError:
                pass
        return out

    def worker_pids(self):
        """Processes that serve requests: nginx's and zchttpd's children; h2o
        serves from threads of its main process (its child is a helper)."""
        p = self.pids()
        if self.kind == "h2o":
            return p[:1]
        return p[1:] or p

    def state_report(self):
        """What the server looks like from outside, for an error report: its
        processes, their socket descriptors, whether anything listens on its
        port (/proc/net/tcp), and its log's tail."""
        lines = [f"{self.name} on port {self.port}: master {'alive' if self.proc and self.proc.poll() is None else 'gone'}"]
        for pid in self.pids():
            try:
                socks = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") + f"@{fd}"
                               for fd in os.listdir(f"/proc/{pid}/fd")
                               if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"))
            except OSError:
                socks = ["?"]
            lines.append(f"  pid {pid}: {len(socks)} sockets, first {socks[:4]}")
        listening = []
        try:
            with open("/proc/net/tcp") as f:
                for row in f.read().splitlines()[1:]:
                    x = row.split()
                    if x[3] == "0A" and int(x[1].split(":")[1], 16) == self.port:
                        listening.append(f"inode {x[9]}")
        except (OSError, IndexError, ValueError):
            pass
        lines.append(f"  listening on {self.port}: {listening or 'nothing'}")
        return "\n".join(lines) + "\n" + self.log_tail(5)

    def cpu_seconds(self):
        """CPU time of the whole server so far: its cgroup's (every process
        and thread that ever ran in it), else the running processes' from
        /proc."""
        if self.group is not None:
            return self.group.usage_s()
        return cpu_seconds(self.pids())

    def throttling(self):
        """The group's throttling counters (budget.throttling), or None."""
        return self.group.throttling() if self.group is not None else None

    def stop(self, timeout_s=10.0):
        """SIGTERM, then SIGKILL to our own process group if it hangs; then
        the cgroup goes (with anything that escaped the process group)."""
        try:
            return self._stop(timeout_s)
        finally:
            if self.group is not None:
                self.group.remove()
                self.group = None

    def _stop(self, timeout_s):
        for sc in self.sidecars:
            sc.stop()
        if not self.proc:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group we created in start()
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)
        return self.proc.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Sidecar:
    """A process started before a server, in its group, and stopped with it:
    a FastCGI application on a UNIX socket.  With `listen`, zcbench makes
    the listening socket and hands it over as fd 0, as spawn-fcgi does
    (`count` processes share it); else the program makes its own."""

    def __init__(self, name, argv, listen=None, count=1, env=None, ready_path=None):
        self.name, self.argv, self.listen, self.count = name, list(argv), listen, count
        self.env = env
        self.ready_path = ready_path     # wait until this socket exists
        self.procs = []
        self.log_path = None

    @property
    def proc(self):
        return self.procs[0] if self.procs else None

    def start(self, workdir, preexec):
        self.log_path = os.path.join(workdir, f"{self.name}.log")
        sock = None
        if self.listen:
            if os.path.exists(self.listen):
                os.unlink(self.listen)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(self.listen)
            os.chmod(self.listen, 0o777)
            sock.listen(128)
        try:
            with open(self.log_path, "ab") as log:
                for _ in range(self.count):
                    self.procs.append(subprocess.Popen(
                        self.argv, stdin=sock.fileno() if sock else subprocess.DEVNULL,
                        stdout=log, stderr=log, start_new_session=True, preexec_fn=preexec,
                        env={**os.environ, **self.env} if self.env else None))
        finally:
            if sock:
                sock.close()
        deadline = time.monotonic() + 10
        while self.ready_path and not os.path.exists(self.ready_path):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise ServerError(f"{self.name} did not create {self.ready_path}")
            time.sleep(0.05)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if p.poll() is None:
                p.wait(timeout=5)
        self.procs = []


def zchttpd_status(port, path="/.zc/status"):
    """zchttpd's status endpoint as a dict (counters summed over workers)."""
    import json
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            raise ServerError(f"status endpoint answered {r.status}")
        return json.loads(body)
    finally:
        c.close()
