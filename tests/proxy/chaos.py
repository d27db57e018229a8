#!/usr/bin/env python3
"""Many proxied requests while the upstreams are killed and restarted at
random: afterwards zchttpd's workers must be the same processes, with the
descriptors and (within a bound) the memory they had before.

  chaos.py ZCHTTPD GO_APP --requests N [--upstreams 3] [--workers 2]

GO_APP is tests/proxy/go_app.go built (apps.bash's build_go_app).  wrk
drives keep-alive and close requests of /size/N, in rounds of a few
seconds until N requests were made (wrk runs for its duration, whatever
its threads do); meanwhile a killer sends SIGKILL to a
random upstream every 100-400 ms and starts it again 50-300 ms later on
the same port.  Requests that meet a dead server get 502/503/504 or a cut
connection -- allowed; what is checked is the server afterwards:

  - every worker pid seen before is still there (no worker died);
  - each worker's open descriptors are back to the count before the load
    (upstream connections close after --proxy-idle, which is short here);
  - each worker's RSS grew by less than 64 MiB (ASan's quarantine of
    freed memory, 256 MiB by default, on top under ASan);
  - the status endpoint answers, and a last request through each upstream
    is byte-exact.
Prints what it measured; exit status 0 when every check holds.
"""
import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LUA = """
local paths = {"/size/0", "/size/1000", "/size/100000", "/size/300000",
               "/size/70000?chunked=1", "/status/204"}
local i = 0
request = function()
  i = i + 1
  local hdrs = {}
  if i % 7 == 0 then hdrs["Connection"] = "close" end
  return wrk.format("GET", paths[i % #paths + 1], hdrs)
end
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def fds(pid):
    """What each open descriptor is (a socket, a pipe, a file)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        out.append(t.split(":")[0] if ":[" in t else t)
    return sorted(out)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def workers(master):
    with open(f"/proc/{master}/task/{master}/children") as f:
        return sorted(int(p) for p in f.read().split())


def asan_quarantine(binary):
    """MiB an ASan build keeps of freed memory (0 for a plain build)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return 256 if "libasan" in out else 0


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def pattern(n):
    a = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return (a * (n // 62 + 1))[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zchttpd")
    ap.add_argument("go_app")
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--upstreams", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="chaos.")
    os.makedirs(f"{tmp}/root")

    ports = [free_port() for _ in range(a.upstreams)]
    apps = {}

    def start_app(port):
        apps[port] = subprocess.Popen([a.go_app, str(port)],
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        wait_port(port)

    for p in ports:
        start_app(p)
    port = free_port()
    err = open(f"{tmp}/server.err", "w")
    srv = subprocess.Popen(
        [a.zchttpd, "--root", f"{tmp}/root", "--listen", f"127.0.0.1:{port}",
         "--workers", str(a.workers), "--io-threads", "0",
         "--proxy", "/=" + ",".join(f"http://127.0.0.1:{p}" for p in ports),
         "--proxy-idle", "300", "--proxy-fail-timeout", "200",
         "--proxy-connect-timeout", "500", "--proxy-timeout", "2000"] +
        (["--event", os.environ["ZCHTTPD_EVENT"]]
         if os.environ.get("ZCHTTPD_EVENT") else []),
        stderr=err)
    ok = True
    try:
        if not wait_port(port):
            print("zchttpd did not start")
            return 1
        base = f"http://127.0.0.1:{port}"
        lua = f"{tmp}/chaos.lua"
        with open(lua, "w") as f:
            f.write(LUA)
        kills = [0]

        def chaos(requests):
            """wrk rounds until `requests` were made, the killer at work."""
            stop = threading.Event()

            def killer():
                while not stop.is_set():
                    time.sleep(rnd.uniform(0.1, 0.4))
                    p = rnd.choice(ports)
                    apps[p].kill()
                    apps[p].wait()
                    kills[0] += 1
                    time.sleep(rnd.uniform(0.05, 0.3))
                    start_app(p)

            t = threading.Thread(target=killer)
            t.start()
            t0 = time.time()
            done = errors = 0
            good = True
            while done < requests:
                w = subprocess.run(["wrk", "-t", "2", "-c", "32", "-d", "4s",
                                    "--timeout", "5s", "-s", lua, base],
                                   capture_output=True, text=True)
                m = re.search(r"(\d+) requests in", w.stdout)
                if not m:
                    print(w.stdout, w.stderr)
                    good = False
                    break
                done += int(m.group(1))
                m = re.search(r"Socket errors: connect (\d+), read (\d+), "
                              r"write (\d+), timeout (\d+)", w.stdout)
                if m:
                    errors += sum(int(x) for x in m.groups())
            took = time.time() - t0
            stop.set()
            t.join()
            for p in ports:
                if apps[p].poll() is not None:
                    start_app(p)
            print(f"{done} requests in {took:.1f} s ({done / took:.0f}/s), "
                  f"{errors} socket errors seen by wrk, {kills[0]} upstream "
                  f"kills so far")
            # Let the servers come back, then check each answers right,
            # then let idle connections and spare pipes time out.
            time.sleep(0.5)
            for _ in range(3 * len(ports)):
                st, body = get(base + "/size/100000")
                if st != 200 or body != pattern(100000):
                    print(f"a request after the chaos was wrong: {st}")
                    good = False
            time.sleep(1.5)
            return good

        # Warm up (lazily made things: pools, spare pipes' peak), then the
        # state to come back to, then the rest.
        ok &= chaos(max(a.requests // 10, 1000))
        ws = workers(srv.pid)
        before = {w: (fds(w), rss_kib(w)) for w in ws}
        ok &= chaos(a.requests)
        now = workers(srv.pid)
        if now != ws:
            print(f"workers changed: {ws} -> {now}")
            ok = False
        for wp in ws:
            if wp not in now:
                continue
            f0, r0 = before[wp]
            f1, r1 = fds(wp), rss_kib(wp)
            print(f"worker {wp}: {len(f0)} -> {len(f1)} descriptors, "
                  f"rss {r0} -> {r1} KiB")
            if f1 != f0:
                ok = False
                print(f"worker {wp}: descriptors not back: {f0} -> {f1}")
            if r1 - r0 > (64 + asan_quarantine(a.zchttpd)) * 1024:
                ok = False
                print(f"worker {wp}: grew {r1 - r0} KiB")
        st, _ = get(base + "/.zc/status")
        ok &= st == 200
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(15)
        except subprocess.TimeoutExpired:
            srv.kill()
            ok = False
        for p in apps.values():
            p.kill()
            p.wait()
        err.close()
        with open(f"{tmp}/server.err") as f:
            text = f.read()
        if "Sanitizer" in text or "runtime error" in text:
            print(text[-4000:])
            ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
