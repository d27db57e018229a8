"""pytest: `zcbench replay` -- the trace reader, the object root, and
replay.lua against a real zchttpd: every listed request is played exactly
once (the server's cache sees exactly that many lookups), bad answers are
counted, and the live hit ratio is gdssim's when the order is strict.
Loopback only; no timing asserted."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import replay, servers, wrk  # noqa: E402

ZCHTTPD = HERE.parent / "build" / "server" / "zchttpd"
GEN = HERE / "trace" / "gen_trace.py"


def write(path, text):
    path.write_text(text)
    return str(path)


# -- pure parts -----------------------------------------------------------------

def test_read_trace_formats_comments_limit_and_errors(tmp_path):
    t = write(tmp_path / "t", "# zctrace 1\n# seed: 1\n\n0 7 100\n1 8 20 GET 200 /x\n2 7 150\n")
    assert replay.read_trace(t) == [(7, 100), (8, 20), (7, 150)]
    assert replay.read_trace(t, limit=2) == [(7, 100), (8, 20)]
    assert replay.objects(replay.read_trace(t)) == {7: 150, 8: 20}
    for bad, line in (("0 7\n", 1), ("# c\n0 7 x\n", 2), ("0 7 0\n", 1), ("0 7 5 GET\n", 1)):
        with pytest.raises(replay.TraceError, match=f":{line}:"):
            replay.read_trace(write(tmp_path / "b", bad))
    with pytest.raises(replay.TraceError, match="no requests"):
        replay.read_trace(write(tmp_path / "e", "# zctrace 1\n"))


def test_content_is_exact_deterministic_and_never_a_filler():
    for oid, size in ((1, 1), (2, 2), (3, 3), (5, 5000), (2 ** 63, (1 << 20) + 3000)):
        b = replay.content(oid, size)
        assert len(b) == size and b == replay.content(oid, size)
        assert not b.startswith(replay.STATUS_MARK.encode()) and not b.startswith(replay.FILLER_BODY)
    assert replay.content(1, 5000) != replay.content(2, 5000)


def test_threads_results_merge():
    parts = [{"requests": 3, "bad": 1, "bytes": 30, "start_s": 10.0, "end_s": 12.5,
              "bad_statuses": {"404": 1}},
             {"requests": 2, "bad": 2, "bytes": 20, "start_s": 10.2, "end_s": 13.0,
              "bad_statuses": {"404": 1, "500": 1}}]
    got = replay.merge_results(parts)
    assert got["requests"] == 5 and got["bad"] == 3 and got["bytes"] == 50
    assert got["elapsed_s"] == pytest.approx(3.0)
    assert got["bad_statuses"] == {"404": 2, "500": 1}


def test_cache_size_percent_bytes_and_floor():
    assert replay.parse_cache_size("5%", 100 << 20) == 5 << 20
    assert replay.parse_cache_size("64m", 1) == 64 << 20
    assert replay.parse_cache_size("3000", 1) == 64 << 10      # at least 64 KiB
    with pytest.raises(replay.TraceError):
        replay.parse_cache_size("lots", 1)


def test_root_is_written_once_and_reused(tmp_path):
    objs = {1: 10, 2: 3000}
    root = replay.make_root(str(tmp_path), objs, log=open(os.devnull, "w"))
    assert (Path(root) / "o" / "2").read_bytes() == replay.content(2, 3000)
    assert (Path(root) / replay.FILLER_FILE).read_bytes() == replay.FILLER_BODY
    (Path(root) / "o" / "1").write_bytes(b"changed")
    assert replay.make_root(str(tmp_path), objs, log=open(os.devnull, "w")) == root
    assert (Path(root) / "o" / "1").read_bytes() == b"changed"   # reused, not rewritten
    assert replay.make_root(str(tmp_path), {1: 11}, log=open(os.devnull, "w")) != root


# -- against a real zchttpd -----------------------------------------------------

@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A 3,000-request Zipf trace, its root and request list."""
    assert os.access(ZCHTTPD, os.X_OK), f"{ZCHTTPD} is not built: run make"
    wrk.find_wrk()
    d = tmp_path_factory.mktemp("replay")
    trace = d / "t.trace"
    subprocess.run([sys.executable, str(GEN), "--requests", "3000", "--objects", "800",
                    "--seed", "11", "--max-size", "200000", "--out", str(trace)], check=True)
    reqs = replay.read_trace(str(trace))
    objs = replay.objects(reqs)
    root = replay.make_root(str(d / "roots"), objs, log=open(os.devnull, "w"))
    lst = str(d / "list.txt")
    replay.write_list(lst, reqs)
    played_trace = str(d / "played.trace")
    replay.write_trace(played_trace, reqs)
    return d, reqs, objs, root, lst, played_trace


def start(root, workdir, extra):
    srv = servers.Server("zchttpd", root, str(workdir), workers=1, extra_args=extra)
    return srv.start()


def lookups(srv):
    h, m = replay.cache_counts(srv)
    return h + m


@pytest.mark.parametrize("connections,threads", [(1, 1), (8, 1), (8, 2), (6, 3)])
def test_every_request_played_once_in_order(played, connections, threads):
    """With one wrk thread or several (each plays its share of the list)."""
    d, reqs, objs, root, lst, _ = played
    srv = start(root, d / f"w{connections}-{threads}", [])
    try:
        before = lookups(srv)
        r = replay.play(srv, lst, connections, None, "/.zc/status", replay.STATUS_MARK, 120, threads)
        after = lookups(srv)
    finally:
        srv.stop()
    assert r.requests == len(reqs)
    assert r.non_2xx_3xx == 0
    # Bodies: the played objects' sizes, one answer each.
    assert r.bytes_read == sum(objs[oid] for oid, _ in reqs)
    # The cache looked up exactly the listed requests (fillers are status
    # requests, which touch no cache): each was played once.
    assert after - before == len(reqs)
    assert r.duration_s > 0 and r.client_cpu_s is not None


def test_bad_answers_are_counted_by_status(played, tmp_path):
    d, reqs, objs, root, lst, _ = played
    short = tmp_path / "short.txt"
    short.write_text("".join(f"/o/{oid}\n" for oid, _ in reqs[:50]) + "/o/no-such-object\n"
                     + "/../etc/passwd\n")
    srv = start(root, tmp_path / "w", [])
    try:
        r = replay.play(srv, str(short), 4, None, "/.zc/status", replay.STATUS_MARK, 60)
    finally:
        srv.stop()
    assert r.requests == 52
    assert r.non_2xx_3xx == 2
    assert sum(r.bad_statuses.values()) == 2 and "404" in r.bad_statuses


def test_live_hit_ratio_is_gdssims_in_strict_order(played):
    """One connection keeps the trace's order; the cache policy's charge
    for an entry (512 bytes besides the body, pool rounding) is all that
    differs from gdssim: well within 0.05 of object hit ratio here."""
    d, reqs, objs, root, lst, trace = played
    cache = replay.parse_cache_size("10%", sum(objs.values()))
    sim = replay.simulate(trace, ["gdsf", "lru"], cache)
    for policy in ("gdsf", "lru"):
        srv = start(root, d / f"h-{policy}", ["--cache-policy", policy, "--cache-size", str(cache),
                                             "--page-cache", "policy"])
        try:
            h0, m0 = replay.cache_counts(srv)
            replay.play(srv, lst, 1, None, "/.zc/status", replay.STATUS_MARK, 120)
            h1, m1 = replay.cache_counts(srv)
        finally:
            srv.stop()
        live = (h1 - h0) / ((h1 - h0) + (m1 - m0))
        assert abs(live - sim[policy]) < 0.05, (policy, live, sim[policy])
    assert sim["gdsf"] > sim["lru"]


def test_cli_end_to_end(played, tmp_path):
    """zchttpd, nginx and the floor at 1 and 2 workers: every request of
    every run answered, the live hit ratio per worker count, ratios to the
    floor, the scaling table, and on a machine that cannot give 2 workers
    2 cores and keep one for wrk, the 2-worker rows said not to be
    server-bound."""
    from zcbench_lib import pinning
    d, reqs, objs, root, lst, trace = played
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(HERE / "zcbench"), "replay", "--trace", str(d / "t.trace"),
                        "--requests", "600", "--runs", "1", "--servers", "zchttpd,nginx,floor",
                        "--policies", "gdsf", "--server-cpu", "0", "--workers", "1,2",
                        "--root-base", str(tmp_path / "roots"), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads((out / "results.json").read_text())
    assert [(r["server"], r["workers"]) for r in res["runs"]] == [
        ("zchttpd-gdsf", 1), ("nginx", 1), ("floor", 1), ("zchttpd-gdsf", 2), ("nginx", 2), ("floor", 2)]
    assert all(r["requests"] == 600 and r["errors"] == 0 for r in res["runs"])
    for r in res["runs"]:
        if r["server"] == "zchttpd-gdsf":
            assert 0 <= r["hit_ratio"] <= 1 and 0 <= r["sim_hit_ratio"] <= 1
            # What the policy did, per run: a 5 % cache must evict, and in
            # policy mode (the replay's default) an evicted file's pages go.
            assert r["cache_evictions"] > 0 and r["cache_dropped"] > 0, r
            assert 0 <= r["cache_not_admitted"] <= 600, r
    for s in res["summary"]:
        if s["server"] != "floor":
            assert s["ratio_vs_floor"] > 0, s
    assert "| zchttpd-gdsf |" in p.stdout and "vs floor" in p.stdout
    assert "scaling with the worker count" in p.stdout and "zchttpd-gdsf hit ratio live" in p.stdout
    assert "Client-bound runs:" in p.stdout
    if len(pinning.available()) <= 2:
        assert "not server-bound: 2 workers on 1 core(s)" in p.stdout
        assert all(r["cores_short"] == (r["workers"] == 2) for r in res["runs"])
    for f in ("summary.csv", "results.csv", "replay.png", "replay-scaling.png"):
        assert (out / f).exists(), f
    assert "ratio_vs_floor" in (out / "summary.csv").read_text().splitlines()[0]
    assert "cache_not_admitted" in (out / "results.csv").read_text().splitlines()[0]


def test_the_floor_is_refused_under_a_memory_limit(played, tmp_path):
    d, *_ = played
    p = subprocess.run([sys.executable, str(HERE / "zcbench"), "replay", "--trace", str(d / "t.trace"),
                        "--requests", "100", "--servers", "nginx,floor", "--memory-limit", "2x",
                        "--root-base", str(tmp_path / "roots"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no place in --memory-limit runs" in p.stderr


def test_summary_ratios_to_the_floor_per_worker_count():
    """Medians leave client-bound runs out, and every ratio compares
    servers at the same worker count."""
    def row(server, n, rps, cb=False, run=1):
        return {"run": run, "server": server, "workers": n, "limit_label": None, "slow_clients": 0,
                "requests_per_s": rps, "mbytes_per_s": rps / 100, "errors": 0, "client_bound": cb,
                "server_cpu_us_per_req": 1e6 / rps, "server_cores": 1, "cores_short": n > 1}
    rows = [row("zchttpd-gdsf", 1, 900), row("floor", 1, 1000), row("floor", 1, 5000, cb=True, run=2),
            row("nginx", 1, 750), row("zchttpd-gdsf", 2, 800), row("floor", 2, 1600)]
    by = {(s["server"], s["workers"]): s for s in replay.summarize(rows)}
    assert by[("floor", 1)]["rps_median"] == 1000 and by[("floor", 1)]["client_bound_runs"] == 1
    assert by[("zchttpd-gdsf", 1)]["ratio_vs_floor"] == pytest.approx(0.9)
    assert by[("zchttpd-gdsf", 1)]["ratio_vs_nginx"] == pytest.approx(1.2)
    assert by[("zchttpd-gdsf", 2)]["ratio_vs_floor"] == pytest.approx(0.5)
    assert "ratio_vs_nginx" not in by[("zchttpd-gdsf", 2)]      # no nginx at 2 workers
    text = replay.table(replay.summarize(rows), rows)
    assert "Client-bound runs: 1 of 6" in text and "floor 1" in text
    assert "not server-bound: 2 workers on 1 core(s)" in text


def test_memory_limits_parse():
    assert replay.parse_limits("2x,1x,4x", 400 << 20) == [("1x", 400 << 20), ("2x", 200 << 20),
                                                          ("4x", 100 << 20)]
    assert replay.parse_limits("64m", 1) == [("64m", 64 << 20)]
    for bad in ("0x", "lots", "1m"):       # 1m: below memlimit's 16 MiB floor
        with pytest.raises(replay.TraceError):
            replay.parse_limits(bad, 1 << 30)


def resident_pages(path):
    """Pages of the file in the page cache now (mmap + mincore)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    n = os.path.getsize(path)
    pages = (n + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        a = libc.mmap(None, n, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert a not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        try:
            assert libc.mincore(ctypes.c_void_p(a), ctypes.c_size_t(n), vec) == 0
        finally:
            libc.munmap(ctypes.c_void_p(a), ctypes.c_size_t(n))
    finally:
        os.close(fd)
    return sum(v & 1 for v in vec)


def test_drop_cached_drops_files_just_written():
    """A root written moments before a run is still dirty in the page cache:
    drop_cached must write it back before dropping it, or the run's first
    server finds every object in memory and reads nothing from disk.  (On
    the build's file system: tmpfs would keep the pages whatever we do.)"""
    import tempfile
    from zcbench_lib import memlimit
    base = HERE.parent / "build"
    base.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as d:
        sub = Path(d) / "o"
        sub.mkdir()
        paths = [sub / str(i) for i in range(4)]
        for p in paths:
            p.write_bytes(os.urandom(1 << 20))      # dirty, not yet written back
        assert sum(resident_pages(p) for p in paths) > 0
        memlimit.drop_cached(d)
        assert [resident_pages(p) for p in paths] == [0] * len(paths)


def test_memory_limit_binds_and_disk_reads_are_counted(played, tmp_path):
    """A server in a memory cgroup below its data set: the group exists while
    it runs (its processes are in it), is gone after, and replaying cold
    reads the objects from disk."""
    from zcbench_lib import memlimit
    d, reqs, objs, root, lst, _ = played
    try:
        group = memlimit.MemGroup(64 << 20)
    except memlimit.MemLimitError as e:
        # A machine without a memory controller: the error must say so.
        assert "memory cgroup" in str(e)
        return
    memlimit.drop_cached(root)
    srv = servers.Server("zchttpd", root, str(tmp_path / "w"), workers=1, mem_group=group,
                         extra_args=["--page-cache", "policy", "--cache-size", str(48 << 20)])
    try:
        srv.start()
        procs = open(os.path.join(group.path, "cgroup.procs")).read().split()
        assert set(map(str, srv.pids())) <= set(procs) and procs
        disk0 = memlimit.read_bytes(srv.pids())
        r = replay.play(srv, lst, 4, None, "/.zc/status", replay.STATUS_MARK, 120)
        disk = memlimit.read_bytes(srv.pids()) - disk0
    finally:
        srv.stop()
        group.remove()
    assert r.requests == len(reqs) and r.non_2xx_3xx == 0
    assert not os.path.exists(group.path)
    # Cold: at least the distinct objects' bytes up to the cache came from disk.
    assert disk >= min(sum(objs.values()), 48 << 20) // 2, disk


def test_slow_clients_hold_connections_and_read_slowly(played, tmp_path):
    """N slow clients stay connected, are served (their bytes grow) and,
    reading about 40 KB/s each, take far longer than the file's size at
    loopback speed would: they are slow, not idle."""
    import time as _time
    from zcbench_lib.slowclients import SlowClients, PAUSE_S, CHUNK
    d, reqs, objs, root, lst, _ = played
    srv = start(root, tmp_path / "w", [])
    try:
        with SlowClients(srv.port, "/" + replay.SLOW_FILE, 6) as slow:
            open_conns = servers.zchttpd_status(srv.port)["connections"]["open"]
            b0 = slow.bytes
            _time.sleep(1.0)
            got = slow.bytes - b0
        assert open_conns >= 6
        assert got > 0
        # At most one CHUNK per PAUSE_S per client (plus a head each).
        assert got <= 6 * (1.0 / PAUSE_S + 2) * CHUNK + 6 * 4096
        assert slow.responses == 0      # 1 MiB at ~40 KB/s: none finished yet
    finally:
        srv.stop()
