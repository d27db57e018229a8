"""pytest: the server-bound method (docs/bench-static.md) as zcbench uses it -- client-bound marking
in the results, tables and files (cpu.py, report.py, preload_report.py),
--server-cpu on the command line, and a real `zcbench static` interrupted
by a signal leaving no cgroup behind.  The budget module itself is tested
in test_zcbench_budget.py.  No timing thresholds."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import budget, cpu, report  # noqa: E402

ZCBENCH = HERE / "zcbench"


def real_hierarchy():
    h = budget.detect()
    return h if h is not None and os.geteuid() == 0 else None


needs_cgroup = pytest.mark.skipif(real_hierarchy() is None,
                                  reason="no cgroup cpu controller (or not root)")


# -- client-bound marking and the report -----------------------------------------

def test_client_bound_marking():
    assert cpu.is_client_bound(0.81) is True and cpu.is_client_bound(0.8) is False
    assert cpu.is_client_bound(None) is None
    assert cpu.is_client_bound(1.5, cores=2) is False and cpu.is_client_bound(1.7, cores=2) is True
    assert cpu.client_cores(1, [0]) == 1 and cpu.client_cores(4, [0, 1]) == 2
    assert cpu.client_cores(2, None) == min(2, os.cpu_count())
    assert cpu.row_client_bound({"client_bound": True, "client_cpu_util": 0.1}) is True
    assert cpu.row_client_bound({"client_bound": False, "client_cpu_util": 0.99}) is False
    assert cpu.row_client_bound({"client_cpu_util": 0.99}) is True      # a row from before the mark
    assert cpu.row_client_bound({}) is False


def rows_with_client_bound():
    """zchttpd, nginx, floor at 1k keep-alive, 3 runs; wrk was the limit in
    run 2 of zchttpd and in every close-mode run of nginx."""
    rows = []
    table = {"zchttpd": [(100, 0.6), (150, 0.95), (110, 0.6)],
             "nginx": [(80, 0.5), (70, 0.5), (90, 0.5)],
             "floor": [(125, 0.7), (120, 0.7), (100, 0.7)]}
    for server, runs in table.items():
        for mode in ("keepalive", "close"):
            for n, (rps, util) in enumerate(runs, 1):
                if mode == "close" and server == "nginx":
                    util = 0.99
                rows.append({"run": n, "size": 1024, "size_label": "1k", "mode": mode, "server": server,
                             "requests": rps * 5, "duration_s": 5.0, "requests_per_s": float(rps),
                             "mbytes_per_s": rps / 1000, "errors": 0, "socket_errors": 0,
                             "non_2xx_3xx": 0, "server_cpu_us_per_req": 5e5 / rps,
                             "server_cpu_util": 0.5, "client_cpu_util": util,
                             "client_bound": cpu.is_client_bound(util)})
    return rows


def test_summarize_leaves_client_bound_runs_out():
    rows = rows_with_client_bound()
    summary, ratios = report.summarize(rows)
    med = {(s["server"], s["mode"]): s for s in summary}
    z = med[("zchttpd", "keepalive")]
    assert (z["runs"], z["runs_counted"], z["client_bound_runs"], z["client_bound"]) == (3, 2, 1, False)
    assert z["rps_median"] == 105 and z["rps_max"] == 110          # run 2's 150 is not counted
    n = med[("nginx", "close")]
    assert n["client_bound"] is True and n["runs_counted"] == 0 and n["rps_median"] == 80
    r = {(x["peer"], x["mode"]): x for x in ratios}
    assert r[("floor", "keepalive")]["rps_ratio"] == pytest.approx(105 / 120)
    assert r[("floor", "keepalive")]["rps_ratio_runs"] == pytest.approx([100 / 125, 110 / 100])
    assert r[("floor", "keepalive")]["client_bound"] is False
    assert r[("nginx", "close")]["client_bound"] is True
    assert len(r[("nginx", "close")]["rps_ratio_runs"]) == 3       # all pairs when none is counted
    assert report.client_bound_count(rows) == (5, 18)


def test_table_marks_client_bound_points_and_counts_them(tmp_path):
    rows = rows_with_client_bound()
    summary, ratios = report.summarize(rows)
    servers = ["zchttpd", "nginx", "floor"]
    text = report.table(summary, ratios, servers, rows)
    assert "| zchttpd/nginx | zchttpd/floor |" in text
    assert "| 1k | 105 | 80 | 120 |" in text                      # keep-alive: nothing starred
    assert "| 1k | 105 | 80* | 120 |" in text.split("**close**")[1]
    assert "Client-bound runs: 5 of 18" in text and "close nginx 3" in text
    assert "| nginx CPU used |" in text
    report.write_all(tmp_path, {"budget": {"server_cpu": 0.5}}, rows, summary, ratios)
    head = (tmp_path / "summary.csv").read_text().splitlines()[0].split(",")
    for col in ("client_bound_runs", "client_bound", "cpu_us_per_req_median", "ratio_vs_floor"):
        assert col in head
    assert "client_bound" in (tmp_path / "results.csv").read_text().splitlines()[0]
    pytest.importorskip("matplotlib")
    paths = report.plot(tmp_path, summary, servers, note=report.budget_note({"budget": {"server_cpu": 0.5}}))
    assert len(paths) == 2 and all(os.path.getsize(p) > 1000 for p in paths)
    assert report.budget_note({}) .startswith("no CPU budget")


def test_preload_summary_leaves_client_bound_apache_runs_out():
    from zcbench_lib import preload, preload_report
    rows = []
    for run, (plain, pre, util) in enumerate([(1000, 1400, 0.5), (1100, 1500, 0.9), (900, 1300, 0.5)], 1):
        rows.append({"run": run, "workload": "apache", "mode": "plain", "unit": "req/s", "rate": plain,
                     "server_cpu_us_per_req": 500.0, "server_cpu_util": 0.5, "client_cpu_util": 0.4,
                     "client_bound": False})
        rows.append({"run": run, "workload": "apache", "mode": "preload", "unit": "req/s", "rate": pre,
                     "server_cpu_us_per_req": 350.0, "server_cpu_util": 0.5, "client_cpu_util": util,
                     "client_bound": util > 0.8})
    (s,) = preload_report.summarize(rows, preload.BARS, preload.CLASSES)
    assert s["preload_median"] == 1350 and s["plain_median"] == 1000
    assert s["ratio_runs"] == pytest.approx([1.4, 1300 / 900])
    assert s["client_bound_runs"] == 1 and s["client_bound"] is False
    text = preload_report.table([s])
    assert "| apache | 500.0 | 350.0 | 1.43 | 0.40 | 0.50 | 0.50 | 0.50 | 1 of 6 |" in text


def zcbench_groups(pid):
    h = real_hierarchy()
    return [n for root in {h.cpu_root, h.acct_root} if root for n in os.listdir(root)
            if n.startswith(f"zcbench-{pid}-")]


@needs_cgroup
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_zcbench_static_leaves_nothing(tmp_path, sig):
    """A real `zcbench static` stopped by a signal in the middle of its
    first wrk run: it exits 130, its servers are stopped and its groups are
    gone."""
    p = subprocess.Popen([sys.executable, str(ZCBENCH), "static", "--servers", "zchttpd,floor",
                          "--sizes", "1k", "--modes", "keepalive", "--runs", "5", "--duration", "3s",
                          "--no-plot", "--out", str(tmp_path / "out")],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    seen = ""
    while "[1/10]" not in seen:
        line = p.stderr.readline()
        assert line, seen
        seen += line
        if "zcbench: zchttpd on" in line:
            groups = zcbench_groups(p.pid)
            assert groups, "zchttpd started without a group"
    time.sleep(0.5)
    assert zcbench_groups(p.pid)
    p.send_signal(sig)
    rest = p.stderr.read()
    assert p.wait(timeout=60) == 130, seen + rest
    assert "interrupted" in rest
    assert zcbench_groups(p.pid) == []


def test_static_server_cpu_option():
    p = subprocess.run([sys.executable, str(ZCBENCH), "static", "--server-cpu", "-1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--server-cpu" in p.stderr
    p = subprocess.run([sys.executable, str(ZCBENCH), "static", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert "--server-cpu" in p.stdout and "floor" in p.stdout
    p = subprocess.run([sys.executable, str(ZCBENCH), "preload", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert "--server-cpu" in p.stdout


def test_results_json_of_an_old_run_is_marked_client_bound(tmp_path):
    """`zcbench report` on a result of the old method (rows without the
    client_bound field) marks the runs where wrk was above 80 %."""
    rows = rows_with_client_bound()
    for r in rows:
        del r["client_bound"]
        r.pop("server_cpu_util")
    (tmp_path / "results.json").write_text(json.dumps({"meta": {}, "runs": rows}))
    p = subprocess.run([sys.executable, str(ZCBENCH), "report", str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Client-bound runs: 5 of 18" in p.stdout and "80*" in p.stdout


def test_cpu_busy_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\n"
                    "cpu1 5 0 5 60 0 0 0 0 0 0\nintr 1\n")
    a = cpu.cpu_times(str(stat))
    assert a == {0: (10, 50), 1: (10, 70)}
    stat.write_text("cpu  0\ncpu0 50 0 10 45 0 0 0 0 0 0\ncpu1 10 0 10 140 0 0 5 0 0 0\n")
    b = cpu.cpu_times(str(stat))
    assert cpu.busy_share(a, b, [0]) == pytest.approx(50 / 55)
    assert cpu.busy_share(a, b, [1]) == pytest.approx(15 / 95)
    assert cpu.busy_share(a, b, [0, 1]) == pytest.approx(65 / 150)
    assert cpu.busy_share(a, b, None) is None and cpu.busy_share(a, a, [0]) is None
    now = cpu.cpu_times()
    assert set(now) == set(range(len(now))) and all(all_ >= busy for busy, all_ in now.values())


def test_contention_counts_others_work():
    rows = [{"client_cpu_util": 0.5, "client_cpus_busy": 0.95, "server_cpu_util": 0.5, "server_cpus_busy": 0.6},
            {"client_cpu_util": 0.9, "client_cpus_busy": 0.95, "server_cpu_util": 0.3, "server_cpus_busy": 0.97},
            {"client_cpu_util": 0.5, "client_cpus_busy": 0.5, "server_cpu_util": 0.3, "server_cpus_busy": 0.5},
            {"client_cpu_util": 0.5}]
    assert report.contention(rows, budget=0.5) == (1, 1, 4)
    assert report.contention(rows) == (1, 0, 4)
    for r in rows:
        r.update(run=1, mode="keepalive", server="zchttpd")
    note = report.client_bound_note(rows, budget=0.5)
    assert "Client-bound runs: 1 of 4" in note and "in 1 more runs wrk's core" in note


@pytest.mark.parametrize("how", ["refused", "died"])
def test_a_server_that_refuses_connections_or_dies_is_restarted(tmp_path, monkeypatch, how):
    """When wrk cannot connect to a server in the middle of a run, or the
    server dies during a run (as when someone's `pkill` hits it), the server
    is started again (a new process in a new group), the point is measured
    again, and the result says so with the server's state."""
    from types import SimpleNamespace
    from zcbench_lib import static, wrk
    real_run_one, calls = static.run_one, []

    def trouble_once(srv, *a, **k):
        calls.append((srv.name, srv.port))
        if len(calls) == 2 and how == "refused":
            raise wrk.WrkError(f"wrk exited 1: unable to connect to 127.0.0.1:{srv.port} Connection refused")
        row = real_run_one(srv, *a, **k)
        if len(calls) == 2:
            srv.proc.kill()
            srv.proc.wait()
        return row

    monkeypatch.setattr(static, "run_one", trouble_once)
    opts = SimpleNamespace(servers=["floor"], sizes=[1024], modes=["keepalive", "close"], runs=1,
                           duration_s=1.0, connections=4, workers=1, out=str(tmp_path),
                           server_cpu=0.0, pin=True, argv=[])
    with open(os.devnull, "w") as log:
        meta, rows, summary, ratios, problems = static.run(opts, log=log)
    assert [r["mode"] for r in rows] == ["keepalive", "close"] and problems == []
    assert len(calls) == 3 and calls[1][1] != calls[2][1]        # a new server on a new port
    (restart,) = meta["restarts"]
    assert restart["server"] == "floor" and restart["mode"] == "close" and restart["point"] == 2
    assert ("died during the run" if how == "died" else "unable to connect") in restart["why"]
    assert f"listening on {calls[1][1]}:" in restart["state"]


def test_private_copy_of_the_server_binary(tmp_path):
    """With private_copy the floor and zchttpd run from a byte-identical
    copy whose name does not contain the server's name."""
    from zcbench_lib import servers
    srv = servers.Server("floor", tmp_path / "root", tmp_path, private_copy=True)
    srv.port = 1
    os.makedirs(srv.dir)
    exe = srv.argv()[0]
    assert os.path.dirname(exe) == str(tmp_path / "bin") and os.path.basename(exe) == "zc_floor"
    assert open(exe, "rb").read() == open(servers.floor_binary(), "rb").read()
    plain = servers.Server("floor", tmp_path / "root", tmp_path)
    plain.port = 1
    assert plain.argv()[0] == servers.floor_binary()
    assert "zchttpd" not in servers.PRIVATE_NAMES["zchttpd"]
