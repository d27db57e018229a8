"""pytest: zcbench's parsers, config generators, reports and command line
(fixed inputs, no servers).  The real runs are in test_zcbench_smoke.py."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import docroot, h2load, report, servers, wrk  # noqa: E402

ZCBENCH = HERE / "zcbench"

WRK_KEEPALIVE = """\
Running 1s test @ http://127.0.0.1:18081/f1k
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   276.03us  680.24us   5.72ms   92.70%
    Req/Sec    64.79k    13.77k   84.03k    45.45%
  Latency Distribution
     50%   96.00us
     75%  109.00us
     90%  157.00us
     99%    3.74ms
  70816 requests in 1.10s, 84.89MB read
Requests/sec:  64397.56
Transfer/sec:     77.20MB
"""

WRK_ERRORS = """\
Running 3s test @ http://127.0.0.1:40000/file-200k.bin
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.20s   300.50ms   2.00s    70.00%
    Req/Sec     1.50k   200.00     2.10k    60.00%
  Latency Distribution
     50%    1.10s 
     75%    1.30s 
     90%    1.90s 
     99%    2.00s 
  4500 requests in 1.00m, 1.50GB read
  Socket errors: connect 3, read 7, write 1, timeout 2
  Non-2xx or 3xx responses: 5
Requests/sec:     75.00
Transfer/sec:     25.60MB
"""


def run(*args, env=None):
    return subprocess.run([sys.executable, str(ZCBENCH), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=60)


# -- wrk ------------------------------------------------------------------

def test_wrk_parse_keepalive():
    r = wrk.parse(WRK_KEEPALIVE)
    assert r.requests == 70816
    assert r.duration_s == pytest.approx(1.10)
    assert r.bytes_read == pytest.approx(84.89 * 1024 ** 2)
    assert r.requests_per_s == pytest.approx(64397.56)
    assert r.bytes_per_s == pytest.approx(77.20 * 1024 ** 2)
    assert r.latency_avg_s == pytest.approx(276.03e-6)
    assert r.latency_max_s == pytest.approx(5.72e-3)
    assert r.latency_pct == pytest.approx({"50": 96e-6, "75": 109e-6, "90": 157e-6, "99": 3.74e-3})
    assert r.errors == 0 and r.socket_errors == 0


def test_wrk_parse_errors_and_units():
    r = wrk.parse(WRK_ERRORS)
    assert r.duration_s == pytest.approx(60.0)
    assert r.bytes_read == pytest.approx(1.5 * 1024 ** 3)
    assert (r.errors_connect, r.errors_read, r.errors_write, r.errors_timeout) == (3, 7, 1, 2)
    assert r.non_2xx_3xx == 5
    assert r.socket_errors == 13 and r.errors == 18
    assert r.latency_pct["50"] == pytest.approx(1.10)
    assert r.as_dict()["errors"] == 18


def test_wrk_parse_rejects_output_without_summary():
    with pytest.raises(wrk.WrkError):
        wrk.parse("unable to connect to 127.0.0.1:1 Connection refused\n")


def test_wrk_units():
    assert wrk.parse_bytes("512B") == 512
    assert wrk.parse_bytes("1.50KB") == 1536
    assert wrk.parse_time("500ms") == pytest.approx(0.5)
    assert wrk.parse_time("2m") == 120
    assert wrk.parse_metric("1.5k") == 1500
    assert wrk.parse_duration("3s") == 3 and wrk.parse_duration("250ms") == 0.25
    assert wrk.parse_duration("2") == 2
    for bad in ("", "3x", "-1s", "0s"):
        with pytest.raises(ValueError):
            wrk.parse_duration(bad)


def test_wrk_command():
    argv = wrk.command("http://127.0.0.1:1/f", 50, 3.0, close=True)
    assert argv == ["wrk", "-t1", "-c50", "-d3s", "--latency", "-H", "Connection: close",
                    "http://127.0.0.1:1/f"]
    assert "-H" not in wrk.command("http://x/", 10, 0.5)
    assert "-d500ms" in wrk.command("http://x/", 10, 0.5)


# -- docroot ----------------------------------------------------------------

def test_sizes():
    assert docroot.parse_size("500") == 500
    assert docroot.parse_size("1k") == 1024
    assert docroot.parse_size("200K") == 200 * 1024
    assert docroot.parse_size("1.5k") == 1536
    assert docroot.parse_size("1m") == 1 << 20
    for bad in ("", "k", "1q", "0", "-5", "0.3"):
        with pytest.raises(ValueError):
            docroot.parse_size(bad)
    assert docroot.parse_sizes("500,1k,1k,2k") == [500, 1024, 2048]
    assert [docroot.size_label(n) for n in (500, 1024, 1536, 204800, 1 << 20)] == \
        ["500", "1k", "1536", "200k", "1m"]


def test_docroot_is_deterministic(tmp_path):
    a = docroot.make_docroot(tmp_path / "a", [500, 1024])
    b = docroot.make_docroot(tmp_path / "b", [500, 1024])
    assert a == b
    assert a[500][0] == "/file-500.bin"
    assert (tmp_path / "a" / "file-1k.bin").stat().st_size == 1024
    assert (tmp_path / "a" / "index.html").exists()
    assert docroot.content(1024) != docroot.content(1025)[:1024]


# -- server configs -----------------------------------------------------------

def test_nginx_config_has_the_tuning():
    text = servers.nginx_config(8081, "/srv/www", 2, "/tmp/p")
    for want in ("daemon off;", "worker_processes 2;", "pid /tmp/p/nginx.pid;",
                 "error_log /tmp/p/error.log", "sendfile on;", "tcp_nopush on;",
                 "open_file_cache max=10000 inactive=60s;", "open_file_cache_valid 60s;",
                 "access_log off;", "keepalive_requests 1000000;",
                 "listen 127.0.0.1:8081;", "root /srv/www;", "client_body_temp_path /tmp/p/"):
        assert want in text, want
    assert "user root" not in text
    assert "user root;" in servers.nginx_config(1, "/r", 1, "/p", as_root=True)
    assert "/var/log" not in text


def test_h2o_config():
    text = servers.h2o_config(8082, "/srv/www", 3, "/tmp/p")
    for want in ("port: 8082", "host: 127.0.0.1", "num-threads: 3", "pid-file: /tmp/p/h2o.pid",
                 "error-log: /tmp/p/error.log", "file.dir: /srv/www"):
        assert want in text, want
    assert "access-log" not in text and "user:" not in text
    assert servers.h2o_config(1, "/r", 1, "/p", as_root=True).splitlines()[1] == "user: root"


def test_zchttpd_argv():
    assert servers.zchttpd_argv("/b/zchttpd", 9, "/r", 2, ["--x", "1"]) == \
        ["/b/zchttpd", "--root", "/r", "--listen", "127.0.0.1:9", "--workers", "2", "--x", "1"]


def test_generated_configs_pass_the_servers_own_check(tmp_path):
    """nginx -t and h2o -t accept what we generate (both must be installed)."""
    as_root = os.geteuid() == 0
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    (tmp_path / "www").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(servers.nginx_config(servers.free_port(), tmp_path / "www", 1, tmp_path, as_root))
    p = subprocess.run([nginx, "-t", "-p", f"{tmp_path}/", "-c", str(conf), "-e", str(tmp_path / "e.log")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    conf = tmp_path / "h2o.yaml"
    conf.write_text(servers.h2o_config(servers.free_port(), tmp_path / "www", 1, tmp_path, as_root))
    p = subprocess.run(["h2o", "-t", "-c", str(conf)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_tls_servers_config_and_serve_byte_exact_over_https(tmp_path):
    """nginx-tls's config is HTTPS with zchttpd's protocols; both -tls
    servers really start, answer over TLS on the measured port, and
    zchttpd-tls keeps its status endpoint on a plain port."""
    text = servers.nginx_config(8443, "/srv/www", 1, "/tmp/p", tls=("/c.crt", "/c.key"))
    for want in ("listen 127.0.0.1:8443 ssl;", "ssl_certificate /c.crt;",
                 "ssl_certificate_key /c.key;", "ssl_protocols TLSv1.2 TLSv1.3;",
                 "ssl_conf_command Options KTLS;"):
        assert want in text, want
    www = tmp_path / "www"
    files = docroot.make_docroot(www, [1024, 100 * 1024])
    for name in servers.TLS_NAMES:
        srv = servers.Server(name, www, tmp_path / "run", workers=1,
                             probe_path=next(iter(files.values()))[0])
        with srv:
            assert srv.url("/x").startswith("https://")
            for size, (path, digest) in files.items():
                c = srv.connection()
                c.request("GET", path)
                body = c.getresponse().read()
                c.close()
                assert len(body) == size and hashlib.sha256(body).hexdigest() == digest
            if srv.kind == "zchttpd":
                assert srv.status_port != srv.port
                st = servers.zchttpd_status(srv.status_port)
                assert st["tls"]["handshakes"] >= 2, st["tls"]


H2LOAD = """\
starting benchmark...
Application protocol: h2c

finished in 2.00s, 102435.00 req/s, 199.97MB/s
requests: 204870 total, 204910 started, 204870 done, 204860 succeeded, 10 failed, 4 errored, 2 timeout
status codes: 204850 2xx, 0 3xx, 6 4xx, 4 5xx
traffic: 399.94MB (419369570) total, 6.25MB (6556324) headers (space savings 83.67%), 390.17MB (409125390) data
                     min         max         mean         sd        +/- sd
time for request:       48us      6.55ms       367us       337us    92.86%
time for connect:       76us       138us       112us        27us    75.00%
"""


def test_h2load_parse():
    r = h2load.parse(H2LOAD)
    assert r.requests == 204870 and r.duration_s == 2.0
    assert r.requests_per_s == 102435.0
    assert r.bytes_per_s == pytest.approx(199.97 * 1024 ** 2)
    assert r.bytes_read == 419369570
    assert r.latency_avg_s == pytest.approx(367e-6) and r.latency_max_s == pytest.approx(6.55e-3)
    assert r.latency_pct == {}          # h2load has no percentiles
    assert r.socket_errors == 10 and r.errors_timeout == 2
    assert r.non_2xx_3xx == 10 and r.errors == 20
    with pytest.raises(wrk.WrkError):
        h2load.parse("starting benchmark...\n")


def test_h2load_command():
    assert h2load.command("http://x/f", 50, 10, 5.0, threads=2) == \
        ["h2load", "-t2", "-c50", "-m10", "-D5s", "http://x/f"]


def test_http2_configs():
    """nginx 1.22's syntax for h2 (ssl http2) and h2c (http2 alone); h2o's
    ssl listener; a server that does not speak HTTP/2 is refused."""
    assert "listen 127.0.0.1:8443 ssl http2;" in servers.nginx_config(
        8443, "/r", 1, "/p", tls=("/c.crt", "/c.key"), http2=True)
    assert "listen 127.0.0.1:8080 http2;" in servers.nginx_config(8080, "/r", 1, "/p", http2=True)
    text = servers.h2o_config(8443, "/r", 1, "/p", tls=("/c.crt", "/c.key"))
    assert "  ssl:\n    certificate-file: /c.crt\n    key-file: /c.key\n" in text
    with pytest.raises(servers.ServerError):
        servers.Server("floor", "/r", "/tmp", protocol="h2")


@pytest.mark.parametrize("protocol", ["h2", "h2c"])
def test_http2_servers_start_and_serve_byte_exact(tmp_path, protocol):
    """zchttpd, nginx and h2o (and for h2c the nghttp2 floor) really start
    with HTTP/2 on the measured port and serve every size byte-exact over
    it (curl says HTTP/2)."""
    www = tmp_path / "www"
    files = docroot.make_docroot(www, [1024, 100 * 1024])
    for name in servers.H2_KINDS:
        if name in servers.H2C_ONLY and protocol != "h2c":
            with pytest.raises(servers.ServerError):
                servers.Server(name, www, tmp_path / "run", protocol=protocol)
            continue
        srv = servers.Server(name, www, tmp_path / "run", workers=1, protocol=protocol,
                             probe_path=next(iter(files.values()))[0])
        with srv:
            assert srv.url("/x").startswith("https://" if protocol == "h2" else "http://")
            for size, (path, digest) in files.items():
                status, body = srv.fetch(path)
                assert status == 200, (name, path)
                assert len(body) == size and hashlib.sha256(body).hexdigest() == digest


# -- report -------------------------------------------------------------------

def _rows():
    rows = []
    for run_no, (z, n, h) in enumerate([(100, 50, 80), (110, 60, 70), (90, 55, 100)], 1):
        for server, rps in (("zchttpd", z), ("nginx", n), ("h2o", h)):
            for mode in ("keepalive", "close"):
                rows.append({"run": run_no, "size": 1024, "size_label": "1k", "mode": mode,
                             "server": server, "requests": rps * 3, "duration_s": 3.0,
                             "requests_per_s": float(rps), "mbytes_per_s": rps * 1.1 / 1000,
                             "errors": 0, "socket_errors": 0, "non_2xx_3xx": 0})
    return rows


def test_summarize_medians_and_ratios():
    summary, ratios = report.summarize(_rows())
    med = {(s["server"], s["mode"]): s for s in summary}
    assert med[("zchttpd", "keepalive")]["rps_median"] == 100
    assert med[("nginx", "close")]["rps_median"] == 55
    assert med[("h2o", "close")]["rps_min"] == 70 and med[("h2o", "close")]["rps_max"] == 100
    assert med[("zchttpd", "close")]["runs"] == 3
    r = {(x["peer"], x["mode"]): x["rps_ratio"] for x in ratios}
    assert r[("nginx", "keepalive")] == pytest.approx(100 / 55)
    assert r[("h2o", "close")] == pytest.approx(100 / 80)
    assert len(ratios) == 4


def test_pool_pairs_runs_of_several_results():
    first = _rows()                      # zchttpd/h2o per run: 1.25, 1.571, 0.9
    second = [dict(r) for r in _rows() if r["run"] == 1]
    for r in second:                     # one more pair: 100 / 125 = 0.8
        if r["server"] == "h2o":
            r["requests_per_s"] = 125.0
    pooled = report.pool([first, second])
    assert [(p["mode"], p["peer"]) for p in pooled] == [
        ("keepalive", "h2o"), ("keepalive", "nginx"), ("close", "h2o"), ("close", "nginx")]
    h2o = pooled[0]
    assert h2o["runs"] == 4 and h2o["below_1"] == 2
    assert h2o["ratio_median"] == pytest.approx((100 / 80 + 90 / 100) / 2)
    assert h2o["ratio_min"] == pytest.approx(0.8) and h2o["ratio_max"] == pytest.approx(110 / 70)
    text = report.pool_table(pooled)
    assert "| keepalive | 1k | h2o | 4 | 1.07 (0.80-1.57) | 2 |" in text


def test_zcbench_pool_command(tmp_path):
    for i, rows in enumerate((_rows(), _rows())):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "results.json").write_text(json.dumps({"meta": {}, "runs": rows}))
    p = subprocess.run([sys.executable, str(ZCBENCH), "pool", str(tmp_path / "r0"), str(tmp_path / "r1")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "| keepalive | 1k | nginx | 6 | 1.83 (1.64-2.00) | 0 |" in p.stdout
    p = subprocess.run([sys.executable, str(ZCBENCH), "pool", str(tmp_path / "missing")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no readable results.json" in p.stderr


def test_report_files_table_and_plots(tmp_path):
    rows = _rows()
    summary, ratios = report.summarize(rows)
    report.write_all(tmp_path, {"command": "x"}, rows, summary, ratios)
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["runs"]) == 18 and len(data["summary"]) == 6 and len(data["ratios"]) == 4
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0].startswith("run,size,size_label,mode,server,") and len(lines) == 19
    summ = (tmp_path / "summary.csv").read_text()
    assert "ratio_vs_nginx" in summ and "1.81818" in summ
    text = report.table(summary, ratios, ["zchttpd", "nginx", "h2o"])
    assert "| 1k | 100 | 55 | 80 |" in text and "| 1.82 (1.64-2.00) | 1.25 (0.90-1.57) |" in text
    paths = report.plot(tmp_path, summary, ["zchttpd", "nginx", "h2o"])
    assert sorted(os.path.basename(p) for p in paths) == ["static-close.png", "static-keepalive.png"]
    for p in paths:
        assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        assert os.path.getsize(p) < 200_000


def test_cpu_per_request_medians_ratio_and_table():
    rows = _rows()
    cost = {"zchttpd": [10.0, 12.0, 11.0], "nginx": [20.0, 25.0, 22.0], "h2o": [30.0, 33.0, 36.0]}
    for r in rows:
        r["server_cpu_us_per_req"] = cost[r["server"]][r["run"] - 1]
        r["client_cpu_util"] = 0.97
    summary, ratios = report.summarize(rows)
    med = {(s["server"], s["mode"]): s for s in summary}
    assert med[("zchttpd", "close")]["cpu_us_per_req_median"] == 11.0
    r = {(x["peer"], x["mode"]): x["cpu_ratio"] for x in ratios}
    assert r[("nginx", "keepalive")] == pytest.approx(22.0 / 11.0)
    assert r[("h2o", "close")] == pytest.approx(33.0 / 11.0)
    text = report.table(summary, ratios, ["zchttpd", "nginx", "h2o"])
    assert "| 1k | 11.0 | 22.0 | 33.0 | 0.97 | 0.97 | 0.97 | 2.00 | 3.00 |" in text
    assert "waits" not in text                  # rows from before wrk's waits were counted
    for r in rows:
        r["client_waits_per_req"] = {"zchttpd": 0.01, "nginx": 0.4, "h2o": 0.2}[r["server"]]
    summary, ratios = report.summarize(rows)
    text = report.table(summary, ratios, ["zchttpd", "nginx", "h2o"])
    assert "| wrk waits/req (zchttpd) |" in text
    assert "| 1k | 11.0 | 22.0 | 33.0 | 0.97 | 0.97 | 0.97 | 0.01 | 0.40 | 0.20 | 2.00 | 3.00 |" in text


def test_cpu_seconds_of_this_process_grows():
    from zcbench_lib import cpu
    t0 = cpu.cpu_seconds([os.getpid()])
    x = 0
    while cpu.cpu_seconds([os.getpid()]) - t0 < 0.05:
        x += sum(range(1000))
    assert cpu.cpu_seconds([os.getpid(), 2 ** 22 + 7]) >= t0 + 0.05   # a gone pid counts 0


def test_children_cpu_seconds_counts_a_finished_child():
    from zcbench_lib import cpu
    t0 = cpu.children_cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.2: pass"], check=True)
    assert cpu.children_cpu_seconds() - t0 >= 0.19


def test_children_waits_counts_a_sleeping_child():
    from zcbench_lib import cpu
    w0 = cpu.children_waits()
    subprocess.run([sys.executable, "-c", "import time\nfor _ in range(5): time.sleep(0.01)"], check=True)
    assert cpu.children_waits() - w0 >= 5


def test_wrk_client_cpu_util_is_cpu_over_duration():
    r = wrk.WrkResult(duration_s=4.0)
    assert r.client_cpu_util is None                 # not measured
    r.client_cpu_s = 3.0
    assert r.client_cpu_util == 0.75
    assert wrk.WrkResult(duration_s=0.0, client_cpu_s=1.0).client_cpu_util is None
    assert wrk.WrkResult(requests=200, client_waits=50).client_waits_per_req == 0.25
    assert wrk.WrkResult(requests=0, client_waits=5).client_waits_per_req is None


def test_pinning_split_leaves_the_client_a_core():
    from zcbench_lib import pinning
    assert pinning.split([0], 1) == (None, None)              # nothing to separate
    assert pinning.split([1, 0], 1) == ([1], [0])
    assert pinning.split([0, 1, 2, 3], 2) == ([2, 3], [0, 1])
    assert pinning.split([0, 1, 2], 8) == ([1, 2], [0])       # never all of them
    assert pinning.preexec(None) is None


def test_pinning_preexec_pins_the_child():
    from zcbench_lib import pinning
    cpu = pinning.available()[-1]
    out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, check=True,
                         preexec_fn=pinning.preexec([cpu])).stdout
    assert out.strip() == f"[{cpu}]"


# -- command line ---------------------------------------------------------------

@pytest.mark.parametrize("args", [[], ["bogus"], ["static", "--bogus"], ["static", "--runs", "0"],
                                  ["static", "--sizes", "1q"], ["static", "--servers", "apache"],
                                  ["static", "--modes", "pipeline"], ["load", "--idle", "x"]])
def test_bad_usage_exits_2(args):
    p = run(*args)
    assert p.returncode == 2, p.stderr
    assert "usage:" in p.stderr


@pytest.mark.parametrize("args", [["--help"], ["static", "--help"], ["load", "--help"]])
def test_help(args):
    p = run(*args)
    assert p.returncode == 0 and "usage:" in p.stdout


def test_ipc_without_binary_is_a_clear_error(tmp_path):
    env = dict(os.environ, ZCBENCH_BUILD=str(tmp_path))
    p = run("ipc", "--runs", "1", env=env)
    assert p.returncode == 1
    assert "zcbench-ipc is not built" in p.stderr


def test_ipc_passes_arguments_through(tmp_path):
    fake = tmp_path / "bench" / "zcbench-ipc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"args: $*\"\n")
    fake.chmod(0o755)
    p = run("ipc", "--runs", "1", "--json", env=dict(os.environ, ZCBENCH_BUILD=str(tmp_path)))
    assert p.returncode == 0 and p.stdout == "args: --runs 1 --json\n"


def test_report_subcommand_redoes_tables_and_figures(tmp_path):
    rows = _rows()
    summary, ratios = report.summarize(rows)
    report.write_all(tmp_path, {"command": "x"}, rows, summary, ratios)
    out = tmp_path / "again"
    p = run("report", tmp_path, "--out", out)
    assert p.returncode == 0, p.stderr
    assert "| 1k | 100 | 55 | 80 |" in p.stdout
    assert (out / "static-keepalive.png").exists() and (out / "summary.csv").exists()
    assert run("report", tmp_path / "missing").returncode == 1


STRACE_C = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.10    0.120000          18      6450           sendmsg
 20.00    0.060000           4     12901           recvfrom
  5.00    0.015000           2      6630       129 accept4
------ ----------- ----------- --------- --------- ----------------
100.00    0.300000          11     25981       129 total
"""


def test_parse_strace_c_and_table():
    from zcbench_lib import syscalls
    counts = syscalls.parse_strace_c(STRACE_C)
    assert counts == {"sendmsg": (6450, 0), "recvfrom": (12901, 0), "accept4": (6630, 129)}
    res = {"zchttpd": {"per_request": {k: c / 6450 for k, (c, _) in counts.items()}}}
    text = syscalls.table(res)
    assert "| recvfrom | 2.00 |" in text and "**4.03**" in text
