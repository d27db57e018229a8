"""pytest: many cores in zcbench (scaling.py, pinning.place, the budget per
server core, `zcbench static --workers 1,2`'s tables and figures) on fixed
rows, and one real `zcbench static` run at two worker counts.  No timing
asserted."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import pinning, scaling, static  # noqa: E402

ZCBENCH = HERE / "zcbench"


def test_worker_counts_parse():
    assert scaling.parse_counts("1") == [1]
    assert scaling.parse_counts("8,1,4,4") == [1, 4, 8]
    for bad in ("", "0", "1,x", "-1", "2000"):
        with pytest.raises(ValueError):
            scaling.parse_counts(bad)
    p = subprocess.run([sys.executable, str(ZCBENCH), "static", "--workers", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "worker counts" in p.stderr


def test_placement_keeps_a_core_for_wrk_and_a_thread_per_core():
    one = pinning.place([0, 1], 1, 50)
    assert (one.server_cpus, one.client_cpus, one.threads, one.cores_short) == ([1], [0], 1, False)
    two = pinning.place([0, 1], 2, 50)           # a 2-core machine cannot give 2 workers 2 cores
    assert (two.server_cpus, two.client_cpus, two.cores_short) == ([1], [0], True)
    assert "2 workers share 1 core(s)" in two.describe()
    big = pinning.place(list(range(16)), 4, 50)
    assert big.server_cpus == [12, 13, 14, 15] and big.threads == 12 and not big.cores_short
    assert pinning.place(list(range(16)), 4, 3).threads == 3       # at most one per connection
    free = pinning.place(list(range(16)), 4, 50, pin=False)
    assert (free.server_cpus, free.client_cpus, free.threads, free.cores_short) == (None, None, 1, False)
    assert scaling.placement_fields(big) == {"workers": 4, "server_cores": 4, "wrk_threads": 12,
                                             "cores_short": False}


def entry(server, n, rps, cb=False, cb_runs=0, short=False, cpu=10.0, size=1024):
    return {"server": server, "workers": n, "rps_median": rps, "cpu_us_per_req_median": cpu,
            "client_bound": cb, "client_bound_runs": cb_runs, "runs": 3, "server_cores": 1 if short else n,
            "cores_short": short, "mode": "keepalive", "size": size}


def test_verdicts():
    assert scaling.verdict([entry("a", 4, 1), entry("b", 4, 1)]) == "server-bound"
    assert scaling.verdict([entry("a", 2, 1, short=True)]).startswith(
        "not server-bound: 2 workers on 1 core(s)")
    assert scaling.verdict([entry("a", 1, 1, cb=True, cb_runs=3),
                            entry("b", 1, 1, cb=True, cb_runs=3)]) == "not server-bound: client-bound"
    v = scaling.verdict([entry("a", 1, 1, cb_runs=1), entry("b", 1, 1)])
    assert v == "partly client-bound (a 1/3 runs)"
    # cores shared outranks client-bound: it is not an N-core figure either way
    assert scaling.verdict([entry("a", 2, 1, cb=True, short=True)]).startswith("not server-bound: 2")


def test_scaling_table_ratios_to_the_floor_per_worker_count():
    es = [entry("zchttpd", 1, 900, cpu=5.5), entry("floor", 1, 1000, cpu=5.0),
          entry("zchttpd", 4, 3000), entry("floor", 4, 4000)]
    text = scaling.scaling_table(es, ["zchttpd", "nginx", "floor"], lambda e: e["size"], lambda k: f"{k} B")
    assert "**1024 B: scaling with the worker count**" in text
    assert "| workers | server cores | zchttpd req/s | floor req/s | zchttpd CPU us/req | floor CPU us/req" \
           " | zchttpd/floor | measured |" in text
    assert "| 1 | 1 | 900 | 1,000 | 5.5 | 5.0 | 0.90 | server-bound |" in text
    assert "| 4 | 4 | 3,000 | 4,000 | 10.0 | 10.0 | 0.75 | server-bound |" in text


def rows_for(n, short):
    """Two runs of zchttpd and the floor at 1k keep-alive with n workers."""
    out = []
    for run in (1, 2):
        for server, rps in (("zchttpd", 900 * n), ("floor", 1000 * n)):
            out.append({"run": run, "size": 1024, "size_label": "1k", "mode": "keepalive",
                        "server": server, "requests_per_s": rps + run, "mbytes_per_s": 1.0,
                        "errors": 0, "requests": 1000, "server_cpu_us_per_req": 10.0,
                        "client_cpu_util": 0.5, "client_bound": False, "workers": n,
                        "server_cores": 1 if short else n, "wrk_threads": 1, "cores_short": short})
    return out


def test_static_summary_table_and_figures_per_worker_count(tmp_path):
    rows = rows_for(1, False) + rows_for(2, True)
    summary, ratios = static.summarize(rows)
    assert {(s["server"], s["workers"]) for s in summary} == {
        ("zchttpd", 1), ("floor", 1), ("zchttpd", 2), ("floor", 2)}
    r = {(x["workers"], x["peer"]): x["rps_ratio"] for x in ratios}
    assert r[(1, "floor")] == pytest.approx(901.5 / 1001.5)
    assert r[(2, "floor")] == pytest.approx(1801.5 / 2001.5)
    text, figs = static.present(str(tmp_path), {}, rows, summary, ratios, ["zchttpd", "floor"], 0.5)
    assert "## 1 worker(s): server-bound" in text
    assert "## 2 worker(s): not server-bound: 2 workers on 1 core(s)" in text
    assert "keepalive, 1k: scaling with the worker count" in text
    assert sorted(os.path.basename(f) for f in figs) == [
        "static-keepalive-w1.png", "static-keepalive-w2.png", "static-scaling-keepalive.png"]
    for f in figs:
        assert open(f, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    # one worker count: the tables and figures of before
    text, figs = static.present(str(tmp_path), {}, rows_for(1, False), *static.summarize(rows_for(1, False)),
                                ["zchttpd", "floor"], 0.5)
    assert "scaling" not in text and [os.path.basename(f) for f in figs] == ["static-keepalive.png"]


def test_static_at_two_worker_counts(tmp_path):
    """A real `zcbench static` at 1 and 2 workers (1 s, 1k, keep-alive,
    zchttpd and the floor): each count with its own placement, wrk with a
    thread per client CPU, the scaling table, and on a 2-CPU machine the
    2-worker points said not to be server-bound."""
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(ZCBENCH), "static", "--workers", "1,2", "--runs", "1",
                        "--duration", "1s", "--sizes", "1k", "--modes", "keepalive",
                        "--servers", "zchttpd,floor", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert sorted((r["server"], r["workers"]) for r in runs) == [
        ("floor", 1), ("floor", 2), ("zchttpd", 1), ("zchttpd", 2)]
    ncpu = len(pinning.available())
    for r in runs:
        assert r["errors"] == 0 and r["requests"] > 0
        assert r["wrk_threads"] == ncpu - min(r["workers"], ncpu - 1)
        assert r["cores_short"] == (r["workers"] > ncpu - 1)
    assert "scaling with the worker count" in p.stdout
    if ncpu <= 2:
        assert "## 2 worker(s): not server-bound: 2 workers on 1 core(s)" in p.stdout
    assert (out / "static-scaling-keepalive.png").exists()
