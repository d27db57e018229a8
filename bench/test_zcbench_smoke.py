"""pytest: zcbench against the real servers (nginx, h2o, zchttpd, wrk).

No skips: ci/deps.sh installs nginx, h2o and wrk, so a machine without them is
a broken test machine and these tests fail saying so.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ZCBENCH = HERE / "zcbench"
ZCHTTPD = HERE.parent / "build" / "server" / "zchttpd"


def test_tools_are_installed():
    for tool in ("wrk", "nginx", "h2o"):
        found = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
        assert found, f"{tool} is not installed: run ci/deps.sh"
    assert os.access(ZCHTTPD, os.X_OK), f"{ZCHTTPD} is not built: run make"


def test_static_quick_smoke(tmp_path):
    """`zcbench static --quick` starts all four servers (the floor too), each
    in a cgroup with the default 0.5 CPU quota, runs every point, and writes
    the tables and figures; Connection: close really reconnects; the
    groups' CPU time was read for every point and the groups are gone
    afterwards."""
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, str(ZCBENCH), "static", "--quick", "--json", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate(timeout=180)
    assert p.returncode == 0, stdout + stderr
    assert "[16/16] run 1/1 size 100k close" in stderr  # progress is shown
    assert "0.5 CPU per server core (50000 us per 100000 us per core; cgroup" in stderr
    printed = json.loads(stdout)
    assert printed["problems"] == []
    assert printed["budget"]["quota_us"] == 50000 and printed["budget"]["cgroup"]["cpu_root"]
    root = printed["budget"]["cgroup"]["cpu_root"]
    assert not [n for n in os.listdir(root) if n.startswith(f"zcbench-{p.pid}-")]
    assert 0 <= printed["client_bound_runs"] <= printed["runs"] == 16
    for f in ("results.csv", "summary.csv", "results.json", "static-keepalive.png", "static-close.png",
              "configs/nginx-nginx.conf", "configs/h2o-h2o.yaml"):
        assert (out / f).exists(), f
    data = json.loads((out / "results.json").read_text())
    runs = data["runs"]
    assert {(r["server"], r["size"], r["mode"]) for r in runs} == {
        (s, n, m) for s in ("zchttpd", "nginx", "h2o", "floor") for n in (1024, 102400)
        for m in ("keepalive", "close")}
    for r in runs:
        assert r["requests"] > 100 and r["requests_per_s"] > 0, r
        assert r["errors"] == 0, r
        assert r["server_cpu_s"] > 0 and r["server_cpu_util"] > 0, r     # the group's CPU time
        assert "throttled_share" in r, r                                  # the group's cpu.stat
        assert r["client_bound"] in (True, False), r
    assert len(data["ratios"]) == 12
    assert {r["peer"] for r in data["ratios"]} == {"nginx", "h2o", "floor"}
    assert "client_bound_runs" in (out / "summary.csv").read_text().splitlines()[0]
    # zchttpd counted its accepted connections around each run: with
    # keep-alive wrk keeps its 50, with Connection: close every request
    # is a new connection (plus the 50 wrk had open when it stopped).
    for r in runs:
        if r["server"] != "zchttpd":
            continue
        assert r["server_conns"] is not None
        if r["mode"] == "keepalive":
            assert r["server_conns"] <= 50 + 5, r
        else:
            assert r["requests"] <= r["server_conns"] <= r["requests"] + 50 + 5, r


def test_load_checks(tmp_path):
    """10,000 idle keep-alive connections and 500 slowloris connections (shorter
    wrk runs and header timeout than `zcbench load`'s defaults, to keep the
    suite fast)."""
    p = subprocess.run([sys.executable, str(HERE / "load_checks.py"), "--json", "--duration", "2s",
                        "--header-timeout", "4000"],
                       capture_output=True, text=True, timeout=240)
    assert p.stdout, p.stderr
    res = json.loads(p.stdout)
    idle, slow = res["idle"], res["slowloris"]
    assert idle["idle_established"] == 10000, idle
    assert idle["idle_alive_after"] == 10000, idle
    assert idle["with_idle"]["requests"] > 0 and idle["with_idle"]["errors"] == 0, idle
    assert slow["during_attack"]["requests"] > 0 and slow["during_attack"]["errors"] == 0, slow
    assert slow["open_when_wrk_finished"] >= 475, slow
    assert slow["still_open_at_end"] == 0, slow
    assert p.returncode == 0, p.stderr
