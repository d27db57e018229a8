#!/usr/bin/env python3
"""apache_check.py DATA_DIR: Apache httpd (EnableMMAP On, EnableSendfile Off)
serves the files of DATA_DIR once without the preload and once under
`zcrun --stats-file` with ZC_ENABLE=mapwrite; every response (status, length, range, body sha256)
must match the file and be the same in both runs, and the mapwrite
conversion must have converted writes in Apache's child.

Requests per file: a plain GET, a GET with a Range, a HEAD; and a missing
file (404); all over one keep-alive connection, then again on new ones.
Exits 0 when all is well, 1 with the reasons on stderr.
"""
import hashlib
import http.client
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from zcbench_lib import preload_apache, preload_stats  # noqa: E402


def fetch_all(port, names, sizes):
    """[(request, status, headers-that-matter, sha256 of body)] for every file."""
    out = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for reuse in (True, False):
        for name in names + ["missing"]:
            reqs = [("GET", {}), ("HEAD", {})]
            if sizes.get(name, 0) > 2:
                n = sizes[name]
                reqs.append(("GET", {"Range": f"bytes=1-{n * 2 // 3}"}))
            for method, hdrs in reqs:
                if not reuse:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request(method, "/" + name, headers=hdrs)
                r = conn.getresponse()
                body = r.read()
                keep = {k: r.getheader(k) for k in ("Content-Length", "Content-Range", "Last-Modified")}
                out.append(((method, name, tuple(hdrs.items())), r.status, keep,
                            hashlib.sha256(body).hexdigest(), len(body)))
    conn.close()
    return out


def expected(docroot, name, method, hdrs):
    """(status, sha256, length) the file on disk says the answer must be."""
    path = os.path.join(docroot, name)
    if not os.path.exists(path):
        return 404, None, None
    with open(path, "rb") as f:
        data = f.read()
    if method == "HEAD":
        return 200, hashlib.sha256(b"").hexdigest(), 0
    rng = dict(hdrs).get("Range")
    if rng:
        a, b = map(int, rng.split("=")[1].split("-"))
        data = data[a:b + 1]
        return 206, hashlib.sha256(data).hexdigest(), len(data)
    return 200, hashlib.sha256(data).hexdigest(), len(data)


def serve(docroot, workdir, names, sizes, prefix=(), env_extra=None):
    os.makedirs(workdir)
    os.chmod(workdir, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZC_") and k != "LD_PRELOAD"}
    env.update(env_extra or {})
    srv = preload_apache.Apache(docroot, workdir, prefix=prefix, env=env, probe_path="/index.html")
    srv.start()
    try:
        got = fetch_all(srv.port, names, sizes)
        alive = srv.proc.poll() is None
    finally:
        rc = srv.stop()
    return got, alive, rc, srv.log_tail()


def main():
    data = sys.argv[1]
    zcrun = os.environ.get("ZCRUN") or os.path.join(
        os.path.dirname(os.environ.get("PRELOAD", os.path.join(ROOT, "build/preload/x"))), "zcrun")
    problems = []
    tmp = tempfile.mkdtemp(prefix="zc-apache-check-")
    try:
        os.chmod(tmp, 0o755)  # Apache's child runs as www-data
        docroot = os.path.join(tmp, "root")
        os.makedirs(docroot)
        names = sorted(n for n in os.listdir(data) if n.startswith("b"))
        for n in names:
            shutil.copy(os.path.join(data, n), docroot)
        with open(os.path.join(docroot, "index.html"), "w") as f:
            f.write("<h1>index</h1>\n")
        for n in os.listdir(docroot):
            os.chmod(os.path.join(docroot, n), 0o644)
        sizes = {n: os.path.getsize(os.path.join(docroot, n)) for n in names}
        stats = os.path.join(tmp, "stats.jsonl")
        open(stats, "w").close()
        os.chmod(stats, 0o666)  # appended by the child as www-data, too

        plain = serve(docroot, os.path.join(tmp, "plain"), names, sizes)
        # Apache's files are not rewritten in place: the opt-in that lets
        # mapwrite convert writes from mappings of ordinary files.
        pre = serve(docroot, os.path.join(tmp, "zcrun"), names, sizes,
                    prefix=[zcrun, f"--stats-file={stats}", "--"], env_extra={"ZC_ENABLE": "mapwrite"})
        for label, (got, alive, rc, log) in (("plain", plain), ("zcrun", pre)):
            if not alive:
                problems.append(f"{label}: Apache died while serving:\n{log}")
            for (method, name, hdrs), status, keep, digest, length in got:
                want = expected(docroot, name, method, hdrs)
                if want[0] != status or (want[1] is not None and (want[1], want[2]) != (digest, length)):
                    problems.append(f"{label}: {method} /{name} {dict(hdrs)}: got {status} {length} bytes "
                                    f"{digest[:12]}, want {want[0]} {want[2]} bytes {str(want[1])[:12]}")
        if plain[0] != pre[0]:
            for a, b in zip(plain[0], pre[0]):
                if a != b:
                    problems.append(f"plain and zcrun differ: {a} vs {b}")
        totals = preload_stats.total(preload_stats.read(stats), exe="apache2")
        print(preload_stats.table(totals))
        if totals["processes"] < 1:
            problems.append("no statistics record from an apache2 process (was the preload loaded?)")
        if totals["mapwrite"]["converted"] <= 0:
            problems.append("mapwrite converted nothing in Apache: " + preload_stats.brief(totals))
    except Exception as e:  # a server that did not start, a connection error
        problems.append(f"{type(e).__name__}: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print(f"apache_check: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
