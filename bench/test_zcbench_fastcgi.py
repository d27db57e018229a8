"""pytest: `zcbench fastcgi` (bench/zcbench_lib/fastcgi.py): the expected
bodies (checked against the real apps: a wrong one stops the run), the
generated php-fpm and nginx configs, a
short real run of three configurations (server, applications and wrk
started, bodies verified, rows and bars reported), and a run interrupted by
a signal that leaves no cgroup and no process behind.  No timing anywhere."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import budget, fastcgi, servers  # noqa: E402

ZCBENCH = HERE / "zcbench"


def test_gen_body_is_zcgens_pattern():
    assert fastcgi.gen_body(0) == b""
    assert fastcgi.gen_body(3) == b"abc"
    b = fastcgi.gen_body(100)
    assert len(b) == 100 and b[36] == ord("\n") and b[37] == ord("a")


def test_url_paths_and_digests():
    files = {1024: ("/1k.bin", "d1")}
    assert fastcgi.url_path("zc-static", 1024, files) == "/1k.bin"
    assert fastcgi.url_path("nginx-static", 1024, files) == "/1k.bin"
    assert fastcgi.url_path("zc-gen-zc", 1024, files) == "/gen?size=1024"
    assert fastcgi.url_path("nginx-gen", 1024, files) == "/gen?size=1024"
    assert fastcgi.url_path("zc-php", 1024, files) == "/gen.php?size=1024"
    assert fastcgi.expected_digest("zc-static", 1024, files) == "d1"
    assert fastcgi.expected_digest("nginx-php", 5, files) == hashlib.sha256(b"abcde").hexdigest()


def test_php_fpm_config():
    text = fastcgi.php_fpm_config("/w/php.sock", "/w", 3, as_root=True)
    assert "listen = /w/php.sock" in text and "pm = static" in text
    assert "pm.max_children = 3" in text and "daemonize = no" in text
    assert "user = root" in text
    assert "user = root" not in fastcgi.php_fpm_config("/w/php.sock", "/w", 3)


def test_nginx_config_with_fastcgi_locations():
    loc = fastcgi.nginx_locations(gen_sock="/w/gen.sock", php_sock="/w/php.sock")
    text = servers.nginx_config(8080, "/root", 1, "/w", locations=loc)
    assert "location /gen {" in text and "fastcgi_pass unix:/w/gen.sock;" in text
    assert "fastcgi_pass unix:/w/php.sock;" in text
    assert "SCRIPT_FILENAME $document_root$fastcgi_script_name" in text
    # Without locations the static config is what it was.
    assert "fastcgi_pass" not in servers.nginx_config(8080, "/root", 1, "/w")


def test_bars_from_medians():
    s = [{"size": 102400, "mode": "keepalive", "server": c, "rps_median": v}
         for c, v in (("zc-gen-zc", 9000), ("zc-static", 10000), ("nginx-gen", 2000),
                      ("nginx-static", 8000))]
    got = {b[0]: (round(b[3], 2), b[4]) for b in fastcgi.bars(s)}
    assert got == {"zc-gen-zc / nginx-static >= 1": (1.12, True),
                   "zc-gen-zc / zc-static >= 0.9": (0.9, True),
                   "zc-gen-zc / nginx-gen >= 4": (4.5, True)}
    s[0]["rps_median"] = 7000
    assert [b[4] for b in fastcgi.bars(s)] == [False, False, False]


def run_opts(tmp_path, configs, **kw):
    o = dict(configs=configs, sizes=[1024, 70000], modes=["keepalive"], runs=1, duration_s=1.0,
             connections=4, workers=1, apps=1, out=str(tmp_path), server_cpu=0.5, pin=True, argv=[])
    o.update(kw)
    return SimpleNamespace(**o)


def test_a_short_real_run(tmp_path):
    """Three configurations for real: every body verified before measuring
    (a wrong one raises), one row per point with requests and the CPU
    of the server and its applications, ratios against zc-gen-zc."""
    with open(os.devnull, "w") as log:
        meta, rows, summary, ratios, problems = fastcgi.run(
            run_opts(tmp_path, ["zc-gen-zc", "zc-gen-sock", "nginx-gen"]), log=log)
    assert problems == []
    assert sorted((r["server"], r["size"]) for r in rows) == sorted(
        (c, s) for c in ("zc-gen-zc", "zc-gen-sock", "nginx-gen") for s in (1024, 70000))
    for r in rows:
        assert r["requests"] > 0 and r["errors"] == 0
        assert r["server_cpu_us_per_req"] > 0
    assert {(r["peer"], r["size"]) for r in ratios} == {
        (c, s) for c in ("zc-gen-sock", "nginx-gen") for s in (1024, 70000)}
    assert meta["reference"] == "zc-gen-zc" and meta["apps"] == 1
    assert "--fastcgi-spawn /gen=zc:1:" in meta["commands"]["zc-gen-zc"]
    assert os.path.exists(tmp_path / "configs" / "nginx-gen-nginx.conf")


def test_a_wrong_body_stops_the_run_before_measuring(tmp_path, monkeypatch):
    """verify() compares what the applications answer with gen_body: an
    expectation one byte off is caught, and nothing is measured."""
    real = fastcgi.gen_body
    monkeypatch.setattr(fastcgi, "gen_body", lambda n: real(n)[:-1] + b"?" if n else b"")
    with open(os.devnull, "w") as log, pytest.raises(servers.ServerError, match="served /gen"):
        fastcgi.run(run_opts(tmp_path, ["zc-gen-zc"]), log=log)


def test_php_fpm_behind_both_servers(tmp_path):
    with open(os.devnull, "w") as log:
        meta, rows, summary, ratios, problems = fastcgi.run(
            run_opts(tmp_path, ["zc-php", "nginx-php"], sizes=[5000]), log=log)
    assert problems == [] and {r["server"] for r in rows} == {"zc-php", "nginx-php"}
    assert all(r["requests"] > 0 for r in rows)


def test_cli_writes_results_and_bars(tmp_path):
    p = subprocess.run([sys.executable, str(ZCBENCH), "fastcgi", "--configs", "zc-static,zc-gen-zc",
                        "--sizes", "100k", "--modes", "keepalive", "--runs", "1", "--duration", "1s",
                        "--no-plot", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "| zc-gen-zc / zc-static >= 0.9 | 100k | keepalive |" in p.stdout
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["meta"]["reference"] == "zc-gen-zc" and len(res["runs"]) == 2
    assert "ratio_vs_zc-static" in (tmp_path / "summary.csv").read_text().splitlines()[0]


def test_unknown_configuration_is_a_usage_error():
    p = subprocess.run([sys.executable, str(ZCBENCH), "fastcgi", "--configs", "zc-gen-zc,apache"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "apache" in p.stderr


def zcbench_groups(pid):
    h = budget.detect()
    return [n for root in {h.cpu_root, h.acct_root} if root for n in os.listdir(root)
            if n.startswith(f"zcbench-{pid}-")]


def descendants_named(names):
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() in names:
                        out.append(int(pid))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_leaves_nothing(tmp_path, sig):
    """Stopped by a signal during its first wrk run: exit 130, the servers,
    their applications (zcgen started by zcbench for nginx, php-fpm) and
    their cgroups are gone."""
    if budget.detect() is None:
        pytest.fail("no cgroup cpu controller: the method needs one (see budget.py)")
    before = set(descendants_named({"zcgen", "php-fpm8.2"}))
    p = subprocess.Popen([sys.executable, str(ZCBENCH), "fastcgi", "--configs", "nginx-gen,nginx-php",
                          "--sizes", "1k", "--modes", "keepalive", "--runs", "3", "--duration", "3s",
                          "--no-plot", "--out", str(tmp_path / "out")],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    seen = ""
    while "[1/6]" not in seen:
        line = p.stderr.readline()
        assert line, seen
        seen += line
    time.sleep(0.5)
    assert zcbench_groups(p.pid)
    assert set(descendants_named({"zcgen", "php-fpm8.2"})) - before
    p.send_signal(sig)
    rest = p.stderr.read()
    assert p.wait(timeout=60) == 130, seen + rest
    assert zcbench_groups(p.pid) == []
    deadline = time.monotonic() + 10
    while set(descendants_named({"zcgen", "php-fpm8.2"})) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(descendants_named({"zcgen", "php-fpm8.2"})) - before


def test_zcroundtrip_reports_rate_and_cpu():
    """bench/floor/zcroundtrip.c, the round-trip floor docs/bench-fastcgi.md
    quotes: it completes its round trips and reports both figures."""
    binary = HERE.parent / "build" / "bench" / "zcroundtrip"
    assert os.access(binary, os.X_OK), f"{binary} is not built: run make"
    p = subprocess.run([str(binary), "2000"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rate, cpu = p.stdout.split(" round trips/s, ")
    assert float(rate) > 0 and float(cpu.split()[0]) > 0
    assert subprocess.run([str(binary), "0"], capture_output=True, timeout=10).returncode == 2
