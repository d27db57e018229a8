"""pytest: `zcbench proxy` (bench/zcbench_lib/proxy.py) without a benchmark:
the generated configurations of every proxy, the command line, what
limited a point (annotate), the summary's ratios to the fastest peer, the
relay floor and zchttpd-direct with their per-run ranges, the bars, the
table (a server that did not start says so), the body check against a
tiny origin, and the run's handling of a server that does not start (the
others measured, the failure reported), with fakes for the processes.
The relay itself is tested by test_zcbench_relay.py."""
import http.server
import json
import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import cli, docroot, proxy, servers, static  # noqa: E402

K, M = 1024, 1 << 20


# -- configurations ------------------------------------------------------------------

def test_nginx_proxy_config():
    text = proxy.nginx_proxy_config(8080, 9000, "/root", 1, "/w", as_root=True)
    http_block = text[text.index("http {"):]
    up = http_block.index("upstream zcbench_origin {")
    assert up < http_block.index("server {")            # in the http block, before the server
    assert "server 127.0.0.1:9000;" in text and "keepalive 32;" in text
    assert "listen 127.0.0.1:8080;" in text
    loc = text[text.index("location / {"):]
    assert "proxy_pass http://zcbench_origin;" in loc
    assert "proxy_http_version 1.1;" in loc and 'proxy_set_header Connection "";' in loc
    assert "proxy_buffering" not in text                 # nginx's default buffering
    assert "user root;" in text and "access_log off;" in text
    assert "keepalive 64;" in proxy.nginx_proxy_config(8080, 9000, "/root", 1, "/w", keepalive=64)
    # The static configuration is what it was without http_extra.
    assert "upstream" not in servers.nginx_config(8080, "/root", 1, "/w")


def test_haproxy_configs():
    base = proxy.haproxy_config(8080, 9000, 1, "/w")
    assert "mode http" in base and "http-reuse always" in base
    assert "bind 127.0.0.1:8080" in base and "server origin 127.0.0.1:9000" in base
    assert "nbthread 1" in base and "stats socket /w/haproxy.sock" in base
    assert "splice" not in base
    always = proxy.haproxy_config(8080, 9000, 2, "/w", splice="always")
    assert "option splice-request" in always and "option splice-response" in always
    assert "splice-auto" not in always and "nbthread 2" in always
    auto = proxy.haproxy_config(8080, 9000, 1, "/w", splice="auto")
    assert "option splice-auto" in auto and "splice-response" not in auto
    # Every HAProxy variant is one of these.
    assert set(proxy.HAPROXY_SPLICE) == {n for n in proxy.NAMES if n.startswith("haproxy")}


def test_h2o_proxy_config():
    text = proxy.h2o_proxy_config(8080, 9000, 1, "/w", as_root=True)
    assert "proxy.reverse.url: http://127.0.0.1:9000/" in text
    assert "port: 8080" in text and "num-threads: 1" in text and "user: root" in text
    assert "file.dir" not in text and "access-log" not in text


def test_zchttpd_and_relay_command_lines():
    assert proxy.zchttpd_proxy_args(9000) == ["--proxy", "/=http://127.0.0.1:9000"]
    assert proxy.relay_argv("/b/zcrelay", 8080, 9000, 2) == [
        "/b/zcrelay", "--listen", "127.0.0.1:8080", "--upstream", "127.0.0.1:9000", "--workers", "2"]


def test_relay_binary_follows_zcbench_build(monkeypatch, tmp_path):
    monkeypatch.setenv("ZCBENCH_BUILD", str(tmp_path))
    assert proxy.relay_binary() == str(tmp_path / "bench" / "zcrelay")


def test_every_server_argv(monkeypatch, tmp_path):
    """Each name's command line and config file, with the programs faked."""
    monkeypatch.setattr(servers, "_which", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setenv("ZCBENCH_BUILD", str(tmp_path / "build"))
    for sub, name in (("server", "zchttpd"), ("bench", "zcrelay")):
        p = tmp_path / "build" / sub / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    got = {}
    for name in proxy.NAMES:
        srv = proxy.ProxyServer(name, tmp_path / "root", tmp_path / "w", 9000)
        os.makedirs(srv.dir)
        srv.port = srv.status_port = 8080
        got[name] = srv.argv()
        assert srv.name == name
    assert got["zchttpd"][-2:] == ["--proxy", "/=http://127.0.0.1:9000"]
    assert "--proxy" not in got["zchttpd-direct"]
    assert got["nginx"][0] == "/usr/sbin/nginx"
    assert "proxy_pass" in (tmp_path / "w" / "nginx" / "nginx.conf").read_text()
    assert "proxy_pass" not in (tmp_path / "w" / "origin-direct" / "nginx.conf").read_text()
    assert got["haproxy-splice"][:2] == ["/usr/sbin/haproxy", "-db"]
    assert "splice-response" in (tmp_path / "w" / "haproxy-splice" / "haproxy.cfg").read_text()
    assert "proxy.reverse.url" in (tmp_path / "w" / "h2o" / "h2o.yaml").read_text()
    assert got["relay"][1:5] == ["--listen", "127.0.0.1:8080", "--upstream", "127.0.0.1:9000"]
    with pytest.raises(servers.ServerError):
        proxy.ProxyServer("apache", tmp_path, tmp_path, 9000)


def test_origin_status():
    text = ("Active connections: 3 \nserver accepts handled requests\n 1203 1203 99812 \n"
            "Reading: 0 Writing: 1 Waiting: 2 \n")
    assert proxy.parse_stub_status(text) == 1203
    assert proxy.parse_stub_status("nothing") is None
    loc = proxy.ORIGIN_STATUS_LOCATION
    assert "location = /zcbench-origin-status {" in loc and "stub_status;" in loc


def test_haproxy_show_info():
    info = proxy.parse_haproxy_info("Name: HAProxy\nPipesUsed: 0\nTotalSplicdedBytesOut: 8150223636\n")
    assert info == {"PipesUsed": 0, "TotalSplicdedBytesOut": 8150223636}
    assert proxy.spliced_bytes(info) == 8150223636
    assert proxy.spliced_bytes({"TotalSplicedBytesOut": 5}) == 5
    assert proxy.spliced_bytes({}) is None


def test_start_failure_names_the_cause(tmp_path):
    log = tmp_path / "stderr.log"
    log.write_text("zchttpd: unknown option 'proxy'\nusage: zchttpd --root DIR [options]\n"
                   "  --tls-ktls on|off  let the kernel encrypt\n")
    msg = "zchttpd exited with 2 at start:\n  /x/zc_httpd --root /r --proxy /=http://127.0.0.1:1\n"
    assert proxy.start_failure(msg, str(log)) == \
        "zchttpd exited with 2 at start: zchttpd: unknown option 'proxy'"
    assert proxy.start_failure("/b/zcrelay is not built (run `make`)") == \
        "/b/zcrelay is not built (run `make`)"
    assert proxy.start_failure("something odd\nmore", str(tmp_path / "none")) == "something odd"


# -- the command line ------------------------------------------------------------------

def parse(*argv):
    p = cli.build_parser()
    return p.commands["proxy"].parse_args(list(argv))


def test_defaults():
    a = parse()
    assert a.sizes == [K, 100 * K, M]
    assert a.modes == ["keepalive", "close"]
    assert a.servers == ["zchttpd", "nginx", "haproxy", "haproxy-splice", "h2o", "relay",
                         "origin-direct", "zchttpd-direct"]
    assert a.server_cpu == 0.5 and a.runs == 5 and a.duration == 5.0
    assert a.origin == "nginx" and a.origin_workers is None and a.pin and a.workers == 1
    assert a.nginx_keepalive == 32


def test_options():
    a = parse("--sizes", "1k,1m", "--modes", "close", "--runs", "3", "--duration", "500ms",
              "--budget", "0.25", "--servers", "relay,nginx,haproxy-splice-auto", "--out", "/o",
              "--origin", "floor", "--no-pin")
    assert a.sizes == [K, M] and a.modes == ["close"] and a.runs == 3 and a.duration == 0.5
    assert a.server_cpu == 0.25 and a.servers == ["relay", "nginx", "haproxy-splice-auto"]
    assert a.out == "/o" and a.origin == "floor" and not a.pin
    assert parse("--server-cpu", "0").server_cpu == 0          # the other commands' name


@pytest.mark.parametrize("argv", [["--servers", "apache"], ["--modes", "pipelined"],
                                  ["--budget", "-1"], ["--sizes", "1x"], ["--runs", "0"],
                                  ["--origin", "h2o"]])
def test_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2


# -- what limited a point ----------------------------------------------------------------

def row(**kw):
    return {"client_cpu_util": 0.3, "server_cpu_util": 0.5, "client_bound": False, **kw}


@pytest.mark.parametrize("fields,origin,limit,cb", [
    ({}, 0.2, "proxy", False),                                   # proxy at its budget
    ({"server_cpu_util": 0.3}, 0.2, "?", False),                 # nobody full
    ({"client_cpu_util": 0.9, "client_bound": True}, 0.0, "wrk", True),
    ({"client_cpu_util": 0.05}, 0.85, "origin", True),
    ({"client_cpu_util": 0.5}, 0.4, "wrk+origin", True),         # together over 0.8 of the core
])
def test_annotate(fields, origin, limit, cb):
    r = proxy.annotate(row(**fields), origin, 0.5, 1)
    assert r["limit"] == limit and r["client_bound"] is cb
    assert r["origin_cpu_util"] == origin
    assert r["client_side_util"] == pytest.approx(r["client_cpu_util"] + origin)
    assert r["wrk_bound"] == fields.get("client_bound", False)


def test_annotate_without_budget_or_wrk_cpu():
    r = proxy.annotate(row(), 0.1, None, 1)
    assert r["proxy_bound"] is None and r["limit"] == "?"
    r = proxy.annotate(row(client_cpu_util=None), 0.1, 0.5, 1)
    assert r["client_bound"] is None and r["limit"] == "proxy"
    # Two client cores: 1.5 of them busy is not client-bound.
    assert proxy.annotate(row(client_cpu_util=1.0), 0.5, 0.5, 2)["client_bound"] is False


# -- the summary, the bars, the table ------------------------------------------------------

RPS = {   # (size, run) -> {server: req/s}
    (K, 1): {"zchttpd": 30000, "nginx": 20000, "haproxy": 24000, "h2o": 22000,
             "relay": 36000, "zchttpd-direct": 60000},
    (K, 2): {"zchttpd": 32000, "nginx": 21000, "haproxy": 25000, "h2o": 27000,
             "relay": 40000, "zchttpd-direct": 64000},
    (K, 3): {"zchttpd": 31000, "nginx": 19000, "haproxy": 26000, "h2o": 23000,
             "relay": 38000, "zchttpd-direct": 62000},
    (M, 1): {"zchttpd": 900, "nginx": 600, "haproxy": 700, "h2o": 650,
             "relay": 1000, "zchttpd-direct": 1100},
    (M, 2): {"zchttpd": 950, "nginx": 610, "haproxy": 720, "h2o": 640,
             "relay": 1100, "zchttpd-direct": 1000},
    (M, 3): {"zchttpd": 920, "nginx": 590, "haproxy": 710, "h2o": 660,
             "relay": 9999, "zchttpd-direct": 1050},      # run 3's relay: client-bound
}


def synthetic_rows():
    rows = []
    for (size, run), got in RPS.items():
        for server, rps in got.items():
            cb = size == M and run == 3 and server == "relay"
            rows.append({"run": run, "size": size, "size_label": docroot.size_label(size),
                         "mode": "keepalive", "server": server, "requests_per_s": rps,
                         "mbytes_per_s": rps * size / 1e6, "errors": 0, "requests": rps * 5,
                         "server_cpu_us_per_req": 0.5e6 / rps, "server_cpu_util": 0.5,
                         "client_cpu_util": 0.9 if cb else 0.3, "client_bound": cb,
                         "origin_cpu_util": 0.2, "latency_p50_ms": 1.0 + run, "latency_p99_ms": 10.0 * run,
                         "limit": "wrk" if cb else "proxy"})
    return rows


def entry(summary, size, server):
    return next(s for s in summary if s["size"] == size and s["server"] == server)


def test_summary_ratios():
    summary, ratios = proxy.summarize(synthetic_rows())
    z = entry(summary, K, "zchttpd")
    # Medians: zchttpd 31000; peers nginx 20000, haproxy 25000, h2o 23000.
    assert z["rps_median"] == 31000 and z["fastest_peer"] == "haproxy"
    assert z["vs_fastest_peer"] == pytest.approx(31000 / 25000)
    assert z["vs_relay"] == pytest.approx(31000 / 38000)
    assert z["vs_zchttpd_direct"] == pytest.approx(31000 / 62000)
    # Per run, against the fastest peer of that run (h2o in run 2).
    assert z["vs_fastest_peer_runs"] == pytest.approx([30000 / 24000, 32000 / 27000, 31000 / 26000])
    assert z["latency_p50_ms_median"] == 3.0 and z["latency_p99_ms_median"] == 20.0
    assert z["limits"] == {"proxy": 3} and z["origin_cpu_util_median"] == 0.2
    # The fastest peer is 1.00 of itself; the relay is 1.00 of itself.
    assert entry(summary, K, "haproxy")["vs_fastest_peer"] == pytest.approx(1.0)
    assert entry(summary, K, "relay")["vs_relay"] == pytest.approx(1.0)
    # report.summarize's zchttpd/peer ratios are kept.
    assert {r["peer"] for r in ratios if r["size"] == K} == {"nginx", "haproxy", "h2o", "relay",
                                                             "zchttpd-direct"}


def test_client_bound_runs_stay_out_of_medians_and_pairs():
    summary, _ = proxy.summarize(synthetic_rows())
    relay = entry(summary, M, "relay")
    assert relay["rps_median"] == 1050 and relay["client_bound_runs"] == 1   # not 1100 with 9999
    assert relay["limits"] == {"proxy": 2, "wrk": 1}
    z = entry(summary, M, "zchttpd")
    assert z["vs_relay"] == pytest.approx(920 / 1050)
    assert z["vs_relay_runs"] == pytest.approx([900 / 1000, 950 / 1100])     # run 3 left out


def test_bars():
    summary, _ = proxy.summarize(synthetic_rows())
    got = {(b[0].split(" >=")[0], b[1]): (round(b[3], 3), b[4]) for b in proxy.bars(summary)}
    assert got[("zchttpd / fastest peer", "1k")] == (round(31000 / 25000, 3), True)
    assert got[("zchttpd / fastest peer", "1m")] == (round(920 / 710, 3), True)
    assert got[("zchttpd / relay", "1m")] == (round(920 / 1050, 3), True)
    assert got[("zchttpd / zchttpd-direct", "1m")] == (round(920 / 1050, 3), False)
    assert ("zchttpd / relay", "1k") not in got                 # only from 100 KB on
    # Without zchttpd: every bar is there, unmeasured.
    summary, _ = proxy.summarize([r for r in synthetic_rows() if r["server"] != "zchttpd"])
    assert [b[3:] for b in proxy.bars(summary)] == [(None, None)] * 4
    assert "| zchttpd / relay >= 0.85 | 1m | keepalive | - | - |" in proxy.bars_table(summary)


def test_table_and_not_started():
    rows = [r for r in synthetic_rows() if r["server"] != "zchttpd"]
    summary, _ = proxy.summarize(rows)
    names = ["zchttpd", "nginx", "haproxy", "h2o", "relay", "zchttpd-direct"]
    text = proxy.table(summary, names, {"zchttpd": "unknown option 'proxy'"}, budget=0.5)
    lines = text.splitlines()
    assert lines[0] == "**keepalive** (budget 0.5 CPU per proxy)"
    assert sum("| zchttpd | did not start |" in x for x in lines) == 2     # 1k and 1m
    nginx = next(x for x in lines if x.startswith("| 1k | nginx |"))
    cells = [c.strip() for c in nginx.split("|")[1:-1]]
    assert cells[2] == "20,000 (19,000-21,000)"
    assert cells[7].startswith("0.80 (")                        # 20000 / 25000, per-run range
    assert cells[8].startswith("0.53")                          # 20000 / 38000
    assert cells[-1] == "proxy 3" and cells[-2] == "-"          # no origin counts in these rows
    relay = next(x for x in lines if x.startswith("| 1m | relay |"))
    assert "proxy 2, wrk 1" in relay


def test_spliced_bytes_per_request():
    rows = synthetic_rows()
    for r in rows:
        if r["server"] == "haproxy":
            r["haproxy_spliced_bytes"] = r["requests"] * r["size"]
    summary, _ = proxy.summarize(rows)
    assert entry(summary, M, "haproxy")["spliced_bytes_per_req_median"] == M
    assert entry(summary, M, "nginx")["spliced_bytes_per_req_median"] is None
    assert proxy.splice_lines(summary) == [
        "haproxy: bytes spliced per request: 1k keepalive 1,024, 1m keepalive 1,048,576", ""]


def test_client_bound_note_counts_others_work():
    rows = [{"server": "relay", "mode": "keepalive", "client_bound": False, "client_side_util": 0.6,
             "client_cpus_busy": 0.65, "server_cpu_util": 0.5, "server_cpus_busy": 0.6},
            {"server": "nginx", "mode": "keepalive", "client_bound": False, "client_side_util": 0.5,
             "client_cpus_busy": 0.95, "server_cpu_util": 0.3, "server_cpus_busy": 1.0},
            {"server": "h2o", "mode": "close", "client_bound": True, "client_side_util": 0.9,
             "client_cpus_busy": 0.97, "server_cpu_util": 0.5, "server_cpus_busy": 0.6}]
    assert proxy.others_work(rows, 0.5) == (1, 1, 3)
    note = proxy.client_bound_note(rows, 0.5)
    assert note.startswith("Client-bound runs: 1 of 3 (wrk and the origin together")
    assert ": close h2o 1." in note and "in 1 runs others used more than 15 %" in note


def test_warnings_name_points_not_proxy_bound():
    w = proxy.warnings(synthetic_rows())
    assert w == ["keepalive 1m relay: 1 of 3 run(s) not proxy-bound (wrk 1)"]


def test_report_redoes_tables_and_figures(tmp_path, capsys):
    rows = synthetic_rows()
    meta = {"benchmark": "proxy", "servers": ["zchttpd", "nginx", "haproxy", "h2o", "relay",
                                              "zchttpd-direct"],
            "budget": {"server_cpu": 0.5}, "not_started": {}, "origin": "nginx"}
    (tmp_path / "results.json").write_text(json.dumps({"meta": meta, "runs": rows}))
    assert cli.main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 1k | zchttpd | 31,000 (30,000-32,000)" in out and "Bars" in out
    assert (tmp_path / "summary.csv").exists()
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["bars"]) == 4 and data["runs"] == rows
    if (tmp_path / "proxy-keepalive.png").exists() is False:
        pytest.importorskip("matplotlib")
        raise AssertionError("no figure")


# -- the body check ----------------------------------------------------------------------------

class _Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies = {}

    def do_GET(self):
        body = self.bodies.get(self.path, b"")
        self.send_response(200 if self.path in self.bodies else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def tiny_origin():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_verify_proxy(tiny_origin, tmp_path):
    files = docroot.make_docroot(tmp_path / "root", [K, 100 * K])
    _Files.bodies = {p: docroot.content(n) for n, (p, _) in files.items()}
    fake = SimpleNamespace(port=tiny_origin.server_address[1], name="fake", log_tail=lambda n=10: "")
    proxy.verify_proxy(fake, static.file_bodies(files))               # right: no error
    _Files.bodies[files[K][0]] = b"x" * K
    with pytest.raises(servers.ServerError, match="served /file-1k.bin wrong"):
        proxy.verify_proxy(fake, static.file_bodies(files))
    _Files.protocol_version = "HTTP/1.0"                               # closes after each answer
    try:
        _Files.bodies[files[K][0]] = docroot.content(K)
        with pytest.raises(servers.ServerError, match="keep-alive"):
            proxy.verify_proxy(fake, static.file_bodies(files))
    finally:
        _Files.protocol_version = "HTTP/1.1"


# -- a run with a server that does not start (processes faked) -----------------------------------

class FakeServer:
    """What proxy.run uses of servers.Server and ProxyServer."""
    fail = ()

    def __init__(self, name, docroot_, workdir, origin_port=None, label=None, **kw):
        self.name = label or name
        self.kind = "haproxy" if self.name.startswith("haproxy") else self.name
        self.port, self.cmdline = 1234, [self.name]
        self.proc = SimpleNamespace(poll=lambda: None)
        self.cpu = 0.0
        self.stopped = False

    def start(self):
        if self.name in self.fail:
            raise servers.ServerError(f"{self.name} exited with 2 at start:\n  {self.name} --proxy")
        return self

    def stop(self):
        self.stopped = True

    def cpu_seconds(self):
        return self.cpu

    def haproxy_spliced(self):
        return None

    def fetch(self, path, timeout=10):
        self.accepts = getattr(self, "accepts", 100) + 1 + 7   # 7 upstream connections a point
        return 200, f"server accepts handled requests\n {self.accepts} 0 0\n".encode()

    def log_tail(self, n=20):
        return ""


def test_run_goes_on_without_a_server_that_does_not_start(monkeypatch, tmp_path):
    FakeServer.fail = ("zchttpd",)
    monkeypatch.setattr(proxy.wrk, "find_wrk", lambda: "wrk")
    real_budget = proxy.bg.Budget
    monkeypatch.setattr(proxy.bg, "Budget", lambda f: real_budget(f, hier=None))
    monkeypatch.setattr(proxy.servers, "Server", FakeServer)
    monkeypatch.setattr(proxy, "ProxyServer", FakeServer)
    monkeypatch.setattr(proxy, "verify_proxy", lambda srv, wanted: None)
    monkeypatch.setattr(proxy.static, "verify_bodies", lambda srv, wanted: None)
    driven = {}

    def drive(opts, names, start, path_of, client_cpus, meta, log, threads, observe=None):
        driven["names"] = names
        rows = []
        for name in names:
            srv = start(name)
            done = observe()
            r = {"run": 1, "size": K, "size_label": "1k", "mode": "keepalive", "server": name,
                 "requests_per_s": 1000.0, "mbytes_per_s": 1.0, "errors": 0, "requests": 5000,
                 "client_cpu_util": 0.3, "server_cpu_util": 0.5, "client_bound": False,
                 "path": path_of(srv, K)}
            done(r)
            rows.append(r)
        return rows, []
    monkeypatch.setattr(proxy.static, "drive", drive)
    opts = SimpleNamespace(servers=["zchttpd", "nginx", "relay"], sizes=[K], modes=["keepalive"],
                           runs=1, duration_s=1.0, connections=50, workers=1, server_cpu=0.0,
                           origin="nginx", origin_workers=None, pin=True, out=str(tmp_path),
                           argv=[])
    log = open(os.devnull, "w")
    meta, rows, summary, _, problems = proxy.run(opts, log=log)
    assert driven["names"] == ["nginx", "relay"]
    assert list(meta["not_started"]) == ["zchttpd"]
    assert problems == ["zchttpd did not start: zchttpd exited with 2 at start:"]
    assert [r["server"] for r in rows] == ["nginx", "relay"]
    assert all(r["origin_cpu_util"] is not None and r["limit"] == "?" for r in rows)
    assert [r["origin_conns"] for r in rows] == [7, 7] and rows[0]["origin_conns_per_req"] == 7 / 5000
    assert rows[0]["path"] == "/file-1k.bin"
    assert meta["benchmark"] == "proxy" and meta["origin"] == "nginx"
    assert (tmp_path / "configs" / "commands.txt").read_text().splitlines() == [
        "origin: origin", "nginx: nginx", "relay: relay"]
    text, _ = proxy.present(str(tmp_path), meta, rows, summary, plot=False)
    assert "| 1k | zchttpd | did not start |" in text
    assert "zchttpd did not start: zchttpd exited with 2 at start:" in text


def test_run_where_nothing_starts(monkeypatch, tmp_path):
    FakeServer.fail = ("zchttpd", "relay")
    monkeypatch.setattr(proxy.wrk, "find_wrk", lambda: "wrk")
    real_budget = proxy.bg.Budget
    monkeypatch.setattr(proxy.bg, "Budget", lambda f: real_budget(f, hier=None))
    monkeypatch.setattr(proxy.servers, "Server", FakeServer)
    monkeypatch.setattr(proxy, "ProxyServer", FakeServer)
    monkeypatch.setattr(proxy.static, "verify_bodies", lambda srv, wanted: None)
    monkeypatch.setattr(proxy.static, "drive", lambda *a, **k: pytest.fail("nothing to drive"))
    opts = SimpleNamespace(servers=["zchttpd", "relay"], sizes=[K], modes=["keepalive"], runs=1,
                           duration_s=1.0, connections=50, workers=1, server_cpu=0.0, origin="nginx",
                           origin_workers=None, pin=True, out=str(tmp_path), argv=[])
    meta, rows, summary, _, problems = proxy.run(opts, log=open(os.devnull, "w"))
    assert rows == [] and summary == [] and len(problems) == 2
    text, _ = proxy.present(str(tmp_path), meta, rows, summary, plot=False)
    assert "relay did not start" in text
