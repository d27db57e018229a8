"""`zcbench load`: two load checks on zchttpd, loopback only, bounded in time.

idle       Open --idle keep-alive connections, each makes one request and then
           stays idle; while they are held, wrk runs --duration against a 1 KB
           file.  Passes when every idle connection was established and answered,
           wrk got answers without errors, and afterwards every idle connection
           still answers a second request (they really were held, not dropped).
           wrk's req/s is reported against a run without the idle connections.
           zchttpd runs with --keepalive-timeout 60000 so that a slow machine
           cannot turn the check into a test of the 30 s default.

slowloris  Open --slowloris connections that send "GET /... HTTP/1.1\\r\\n" and
           then one more header byte every second, never finishing the head.
           wrk runs --duration meanwhile.  Passes when wrk got answers without
           errors, the slowloris connections were still open when wrk finished
           (so the load really ran during the attack), and every one of them got
           a 408 or was closed once zchttpd's --header-timeout had passed (and
           not much earlier).

The client raises its own RLIMIT_NOFILE to the hard limit; zchttpd raises its
own.  Everything runs in this process except wrk and zchttpd.
"""
import errno
import os
import resource
import selectors
import shutil
import socket
import statistics
import tempfile
import threading
import time

from . import docroot as dr
from . import servers, wrk

FILE_SIZE = 1024
ERROR_FRACTION = 0.001


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(want, soft)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _wrk_summary(res):
    return {"requests": res.requests, "requests_per_s": res.requests_per_s,
            "errors": res.errors, "socket_errors": res.socket_errors,
            "non_2xx_3xx": res.non_2xx_3xx,
            "latency_p99_ms": res.latency_pct.get("99", 0) * 1e3}


def _wrk_ok(res):
    return res.requests > 0 and res.errors <= ERROR_FRACTION * res.requests


def _status(srv):
    try:
        return servers.zchttpd_status(srv.port)
    except Exception as e:  # a status that fails is reported, not fatal
        return {"error": str(e)}


# -- idle keep-alive connections ---------------------------------------------

class _Conn:
    __slots__ = ("sock", "state", "buf", "need")

    def __init__(self, sock):
        self.sock, self.state, self.buf, self.need = sock, "connecting", b"", None


def _response_complete(c):
    """True once c.buf holds one whole response (Content-Length framing)."""
    if c.need is None:
        end = c.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        length = 0
        for line in c.buf[:end].split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        c.need = end + 4 + length
    return len(c.buf) >= c.need


def _exchange(conns, request, timeout_s, connect=False):
    """Drive conns (in batches) through [connect,] send request, read one response.
    Returns the number that completed; the others are marked "failed"."""
    done = 0
    batch = 500
    for start in range(0, len(conns), batch):
        group = conns[start:start + batch]
        sel = selectors.DefaultSelector()
        pending = 0
        for c in group:
            if c.state == "failed":
                continue
            c.buf, c.need = b"", None
            if connect:
                sel.register(c.sock, selectors.EVENT_WRITE, c)
            else:
                try:
                    c.sock.send(request)
                    c.state = "reading"
                    sel.register(c.sock, selectors.EVENT_READ, c)
                except OSError:
                    c.state = "failed"
                    continue
            pending += 1
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(0.5):
                c = key.data
                try:
                    if c.state == "connecting":
                        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if err:
                            raise OSError(err, os.strerror(err))
                        c.sock.send(request)
                        c.state = "reading"
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                        continue
                    data = c.sock.recv(65536)
                    if not data:
                        raise OSError(errno.ECONNRESET, "closed by server")
                    c.buf += data
                    if _response_complete(c):
                        ok = c.buf.startswith(b"HTTP/1.1 200")
                        c.state = "idle" if ok else "failed"
                        done += ok
                        c.buf = b""
                        sel.unregister(c.sock)
                        pending -= 1
                except (OSError, ValueError):
                    c.state = "failed"
                    sel.unregister(c.sock)
                    pending -= 1
        for key in list(sel.get_map().values()):
            key.data.state = "failed"
        sel.close()
    return done


def check_idle(a, root, path, log):
    n = a.idle
    limit = raise_nofile(n + 1000)
    out = {"idle_wanted": n, "client_nofile": limit, "duration_s": a.duration_s}
    if limit < n + 100:
        out.update(ok=False, error=f"client RLIMIT_NOFILE is {limit}, need {n + 100}")
        return out
    srv = servers.Server("zchttpd", root, a.tmp, workers=a.workers,
                         extra_args=["--keepalive-timeout", "60000"])
    srv.start()
    conns = []
    try:
        url = srv.url(path)
        log(f"idle: wrk {a.duration_s:g}s without idle connections")
        base = wrk.run(url, a.connections, a.duration_s)
        out["without_idle"] = _wrk_summary(base)
        log(f"idle: {base.requests_per_s:,.0f} req/s; opening {n} keep-alive connections")
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        t0 = time.monotonic()
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", srv.port))
            conns.append(_Conn(s))
        established = _exchange(conns, request, timeout_s=20, connect=True)
        out["idle_established"] = established
        out["open_seconds"] = round(time.monotonic() - t0, 2)
        out["status_before_load"] = _status(srv).get("connections")
        log(f"idle: {established}/{n} answered and idle in {out['open_seconds']}s; "
            f"wrk {a.duration_s:g}s while they are held")
        held = wrk.run(url, a.connections, a.duration_s)
        out["with_idle"] = _wrk_summary(held)
        out["status_after_load"] = _status(srv).get("connections")
        alive = _exchange(conns, request, timeout_s=20)
        out["idle_alive_after"] = alive
        out["held_seconds"] = round(time.monotonic() - t0, 2)
        out["ratio_with_vs_without"] = (held.requests_per_s / base.requests_per_s
                                        if base.requests_per_s else 0.0)
        log(f"idle: {held.requests_per_s:,.0f} req/s with {established} idle connections "
            f"({out['ratio_with_vs_without']:.2f}x); {alive}/{n} still answer afterwards")
        out["ok"] = established == n and alive == n and _wrk_ok(held)
    finally:
        for c in conns:
            c.sock.close()
        srv.stop()
    return out


# -- slowloris ----------------------------------------------------------------

def check_slowloris(a, root, path, log):
    m = a.slowloris
    raise_nofile(m + 1000)
    ht = a.header_timeout / 1000.0
    out = {"slowloris": m, "header_timeout_s": ht, "duration_s": a.duration_s}
    srv = servers.Server("zchttpd", root, a.tmp, workers=a.workers,
                         extra_args=["--header-timeout", str(a.header_timeout)])
    srv.start()
    socks = {}
    try:
        url = srv.url(path)
        log(f"slowloris: wrk {a.duration_s:g}s without the attack")
        base = wrk.run(url, a.connections, a.duration_s)
        out["without_attack"] = _wrk_summary(base)
        log(f"slowloris: {base.requests_per_s:,.0f} req/s; opening {m} slowloris connections")
        sel = selectors.DefaultSelector()
        opened = {}
        for i in range(m):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(f"GET {path} HTTP/1.1\r\n".encode())
            s.setblocking(False)
            socks[s.fileno()] = s
            opened[s.fileno()] = time.monotonic()
            sel.register(s, selectors.EVENT_READ)
        t0 = time.monotonic()
        result = {}
        th = threading.Thread(target=lambda: result.update(
            res=_safe_wrk(url, a.connections, a.duration_s)))
        th.start()
        log(f"slowloris: {m} connections send one header byte a second; wrk {a.duration_s:g}s meanwhile")
        got408, closed_silently, reset, ended = 0, 0, 0, {}
        open_at_wrk_end = None
        deadline = t0 + max(ht + 3.0, a.duration_s + 2.0)
        next_byte = time.monotonic() + 1.0
        while time.monotonic() < deadline and len(ended) < m:
            for key, _ in sel.select(max(0.0, min(0.2, next_byte - time.monotonic()))):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except OSError:
                    data, kind = b"", "reset"
                else:
                    kind = "408" if data.startswith(b"HTTP/1.1 408") or data.startswith(b"HTTP/1.0 408") \
                        else ("closed" if not data else "other:" + data[:12].decode(errors="replace"))
                if kind == "408":
                    got408 += 1
                elif kind == "closed":
                    closed_silently += 1
                elif kind == "reset":
                    reset += 1
                ended[s.fileno()] = (kind, time.monotonic() - opened[s.fileno()])
                sel.unregister(s)
            if time.monotonic() >= next_byte:
                for fd, s in socks.items():
                    if fd not in ended:
                        try:
                            s.send(b"X")  # one byte of a header name that never ends
                        except OSError:
                            pass
                next_byte += 1.0
            if open_at_wrk_end is None and not th.is_alive():
                open_at_wrk_end = m - len(ended)
                out["status_at_wrk_end"] = _status(srv).get("connections")
        th.join()
        if open_at_wrk_end is None:
            open_at_wrk_end = m - len(ended)
        res = result.get("res")
        if isinstance(res, Exception):
            raise res
        out["during_attack"] = _wrk_summary(res)
        out["ratio_during_vs_without"] = (res.requests_per_s / base.requests_per_s
                                          if base.requests_per_s else 0.0)
        out["open_when_wrk_finished"] = open_at_wrk_end
        out["got_408"] = got408
        out["closed_without_response"] = closed_silently
        out["reset"] = reset
        out["other"] = sum(1 for k, _ in ended.values() if k.startswith("other"))
        out["still_open_at_end"] = m - len(ended)
        times = [t for _, t in ended.values()]
        if times:
            out["closed_after_s"] = {"min": round(min(times), 2), "median": round(statistics.median(times), 2),
                                     "max": round(max(times), 2)}
        log(f"slowloris: wrk {res.requests_per_s:,.0f} req/s during the attack "
            f"({out['ratio_during_vs_without']:.2f}x), {res.errors} errors; {open_at_wrk_end}/{m} "
            f"attackers open when wrk finished; then {got408} got 408, {closed_silently} closed, "
            f"{reset} reset, {out['still_open_at_end']} still open")
        early = times and min(times) < ht - 0.5
        out["ok"] = (_wrk_ok(res) and open_at_wrk_end >= 0.95 * m and out["still_open_at_end"] == 0
                     and out["other"] == 0 and not early)
        sel.close()
    finally:
        for s in socks.values():
            s.close()
        srv.stop()
    return out


def _safe_wrk(url, conns, dur):
    try:
        return wrk.run(url, conns, dur)
    except Exception as e:
        return e


def run(a, log=None):
    import sys
    if log is None:
        def log(msg):
            print(f"zcbench load: {msg}", file=sys.stderr, flush=True)
    a.duration_s = a.duration
    wrk.find_wrk()
    a.tmp = tempfile.mkdtemp(prefix="zcbench-load-")
    os.chmod(a.tmp, 0o755)
    try:
        root = os.path.join(a.tmp, "docroot")
        files = dr.make_docroot(root, [FILE_SIZE])
        path = files[FILE_SIZE][0]
        results = {}
        if "idle" in a.checks:
            results["idle"] = check_idle(a, root, path, log)
        if "slowloris" in a.checks:
            results["slowloris"] = check_slowloris(a, root, path, log)
        return results
    finally:
        shutil.rmtree(a.tmp, ignore_errors=True)


def describe(results):
    lines = []
    r = results.get("idle")
    if r:
        if "with_idle" in r:
            lines.append(
                f"idle: {'PASS' if r['ok'] else 'FAIL'}  {r['idle_established']}/{r['idle_wanted']} idle "
                f"keep-alive connections held ({r['idle_alive_after']} still answer after the load); "
                f"wrk {r['without_idle']['requests_per_s']:,.0f} req/s without, "
                f"{r['with_idle']['requests_per_s']:,.0f} req/s with them "
                f"({r['ratio_with_vs_without']:.2f}x), {r['with_idle']['errors']} errors")
        else:
            lines.append(f"idle: FAIL  {r.get('error')}")
    r = results.get("slowloris")
    if r:
        lines.append(
            f"slowloris: {'PASS' if r['ok'] else 'FAIL'}  {r['slowloris']} attackers; wrk "
            f"{r['without_attack']['requests_per_s']:,.0f} req/s without, "
            f"{r['during_attack']['requests_per_s']:,.0f} req/s during "
            f"({r['ratio_during_vs_without']:.2f}x), {r['during_attack']['errors']} errors; "
            f"{r['open_when_wrk_finished']} attackers open when wrk finished; after "
            f"--header-timeout {r['header_timeout_s']:g}s: {r['got_408']} got 408, "
            f"{r['closed_without_response']} closed, {r['reset']} reset, {r['still_open_at_end']} open; "
            f"closed after {r.get('closed_after_s')} s")
    return "\n".join(lines)
