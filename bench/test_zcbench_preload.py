"""pytest: `zcbench preload`'s code paths -- the statistics file parser, the
summary math, the tables and files, Apache's generated config, argv
building, the ping-pong program -- on fixed inputs; and one smoke run of
the real command against the build (no timing thresholds anywhere)."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import (preload, preload_apache, preload_cli, preload_pingpong,  # noqa: E402
                         preload_report, preload_stats)

ZCBENCH = HERE / "zcbench"


def rec(pid, exe, **convs):
    return json.dumps({"pid": pid, "exe": exe, "conversions": convs})


def conv(seen, converted, nbytes, **passed):
    return {"seen": seen, "converted": converted, "bytes_zero_copy": nbytes, "passed": passed}


# -- statistics file -----------------------------------------------------------

STATS = "\n".join([
    rec(10, "/usr/bin/cat", pipe=conv(2, 1, 0, small=1), forward=conv(5, 4, 4096)),
    rec(11, "/usr/bin/cat", forward=conv(3, 3, 100, modified=0)),
    rec(12, "/bin/bash", pipe=conv(1, 1, 0), stdio=conv(0, 0, 0)),
]) + "\n"


def test_stats_parse_and_total():
    recs = preload_stats.parse(STATS)
    assert [r["pid"] for r in recs] == [10, 11, 12]
    t = preload_stats.total(recs)
    assert t["processes"] == 3
    assert t["pipe"] == {"seen": 3, "converted": 2, "bytes_zero_copy": 0, "passed": {"small": 1}}
    assert t["forward"]["converted"] == 7 and t["forward"]["bytes_zero_copy"] == 4196
    assert t["forward"]["passed"] == {"modified": 0}
    assert t["mapwrite"] == {"seen": 0, "converted": 0, "bytes_zero_copy": 0, "passed": {}}
    cat = preload_stats.total(recs, exe="cat")
    assert cat["processes"] == 2 and cat["pipe"]["converted"] == 1
    assert preload_stats.total(recs, exe="sed")["processes"] == 0


def test_stats_brief_and_table():
    t = preload_stats.total(preload_stats.parse(STATS))
    assert preload_stats.brief(t) == "pipe 2/3 (0.0 MB), forward 7/8 (0.0 MB)"
    assert preload_stats.brief(preload_stats.empty_totals()) == "nothing seen"
    lines = preload_stats.table(t).splitlines()
    assert lines[0] == "processes 3"
    assert lines[1] == "pipe seen=3 converted=2 bytes_zero_copy=0 passed: small=1"


def test_stats_blank_lines_and_missing_file(tmp_path):
    assert preload_stats.parse("\n\n") == []
    assert preload_stats.read(str(tmp_path / "none")) == []


@pytest.mark.parametrize("line", [
    "not json",
    "[1, 2]",
    json.dumps({"pid": "1", "exe": "x", "conversions": {}}),
    json.dumps({"pid": 1, "conversions": {}}),
    rec(1, "x", bogus=conv(1, 1, 1)),
    rec(1, "x", pipe={"seen": 1, "converted": 1}),
    rec(1, "x", pipe=conv(-1, 0, 0)),
    rec(1, "x", pipe={"seen": 1, "converted": 1, "bytes_zero_copy": 0, "passed": {"r": "many"}}),
])
def test_stats_malformed_lines_are_errors(line):
    with pytest.raises(preload_stats.StatsError):
        preload_stats.parse(STATS + line + "\n")


def test_stats_command(tmp_path, capsys):
    f = tmp_path / "s.jsonl"
    f.write_text(STATS)
    assert preload_stats.main([str(f), "forward", "converted"]) == 0
    assert capsys.readouterr().out == "7\n"
    assert preload_stats.main([str(f), "processes", "--exe", "bash"]) == 0
    assert capsys.readouterr().out == "1\n"
    assert preload_stats.main([str(f), "pipe", "passed"]) == 0
    assert capsys.readouterr().out == "1\n"
    assert preload_stats.main([str(f), "--table"]) == 0
    assert "forward seen=8 converted=7" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        preload_stats.main([str(f), "pipe"])
    assert e.value.code == 2
    f.write_text("garbage\n")
    assert preload_stats.main([str(f), "pipe", "seen"]) == 1


# -- summary math --------------------------------------------------------------

def row(run, workload, mode, rate, **extra):
    return {"run": run, "workload": workload, "mode": mode, "unit": "MB/s", "rate": rate, **extra}


ROWS = [
    row(1, "dd-pipe", "plain", 100.0), row(1, "dd-pipe", "preload", 150.0, pipe_seen=4, pipe_converted=2,
                                            pipe_bytes=0, forward_seen=10, forward_converted=8,
                                            forward_bytes=8_000_000),
    row(2, "dd-pipe", "preload", 120.0, pipe_seen=2, pipe_converted=2, pipe_bytes=0, forward_seen=10,
        forward_converted=10, forward_bytes=10_000_000),
    row(2, "dd-pipe", "plain", 110.0),
    row(3, "dd-pipe", "plain", 90.0), row(3, "dd-pipe", "preload", 160.0, pipe_seen=3, pipe_converted=2,
                                           pipe_bytes=0, forward_seen=10, forward_converted=9,
                                           forward_bytes=9_000_000),
    row(1, "null-4k", "plain", 1000.0), row(1, "null-4k", "preload", 950.0),
    row(2, "null-4k", "preload", 990.0), row(2, "null-4k", "plain", 1000.0),
]


def test_summarize_medians_ratios_and_bars():
    s = preload_report.summarize(ROWS, preload.BARS, preload.CLASSES)
    assert [x["workload"] for x in s] == ["dd-pipe", "null-4k"]
    dd, null = s
    assert dd["plain_median"] == 100.0 and dd["preload_median"] == 150.0
    assert sorted(dd["plain_runs"]) == [90.0, 100.0, 110.0] and len(dd["preload_runs"]) == 3
    assert dd["ratio"] == pytest.approx(1.5)
    # per-run ratios pair the two modes of the same run, whatever their order
    assert dd["ratio_runs"] == pytest.approx([1.5, 120 / 110, 160 / 90])
    assert dd["ratio_min"] == pytest.approx(120 / 110) and dd["ratio_max"] == pytest.approx(160 / 90)
    assert dd["runs"] == 3 and dd["bar"] == 1.3 and dd["meets"] is True
    assert dd["forward_converted_per_run"] == pytest.approx(9.0)
    assert dd["forward_mbytes_per_run"] == pytest.approx(9.0)
    assert dd["pipe_seen_per_run"] == pytest.approx(3.0)
    assert dd["stdio_converted_per_run"] is None
    # 970 / 1000 = 0.97: exactly the overhead bar still meets it
    assert null["ratio"] == pytest.approx(0.97) and null["meets"] is True
    assert null["class"].startswith("(4)")


def test_summarize_a_miss_and_a_missing_mode():
    rows = [row(1, "sed", "plain", 100.0), row(1, "sed", "preload", 105.0), row(1, "cut", "plain", 50.0)]
    sed, cut = preload_report.summarize(rows, preload.BARS, preload.CLASSES)
    assert sed["ratio"] == pytest.approx(1.05) and sed["meets"] is False
    assert cut["preload_median"] is None and cut["ratio"] is None and cut["meets"] is None
    assert cut["ratio_runs"] == [] and cut["runs"] == 0


def test_summarize_order():
    s = preload_report.summarize(ROWS, preload.BARS, order=["null-4k", "apache", "dd-pipe"])
    assert [x["workload"] for x in s] == ["null-4k", "dd-pipe"]


def test_table_shows_every_figure_and_misses():
    rows = ROWS + [row(1, "apache", "plain", 2000.0), row(1, "apache", "preload", 2100.0)]
    s = preload_report.summarize(rows, preload.BARS, preload.CLASSES, order=list(preload.WORKLOADS))
    text = preload_report.table(s)
    lines = text.splitlines()
    assert lines[0].startswith("| workload |")
    apache = next(x for x in lines if x.startswith("| apache |"))
    assert "| 2,000 | 2,100 | 1.050 |" in apache and "MISSES" in apache and ">= 1.30" in apache
    dd = next(x for x in lines if x.startswith("| dd-pipe |"))
    assert "1.500 (1.091-1.778)" in dd and "meets" in dd
    assert "forward 9/10 (9.0 MB), pipe" not in dd        # conversions in fixed order
    assert "pipe 2/3, forward 9/10 (9.0 MB)" in dd
    null = next(x for x in lines if x.startswith("| null-4k |"))
    assert null.endswith("| nothing |")
    assert "server CPU" not in text             # no server workload measured its CPU


def test_table_shows_server_and_wrk_cpu_of_server_workloads():
    rows = ROWS + [row(1, "apache", "plain", 2000.0, server_cpu_us_per_req=400.0, client_cpu_util=0.9),
                   row(1, "apache", "preload", 2400.0, server_cpu_us_per_req=300.0, client_cpu_util=0.99),
                   row(2, "apache", "plain", 2100.0, server_cpu_us_per_req=420.0, client_cpu_util=0.92),
                   row(2, "apache", "preload", 2500.0, server_cpu_us_per_req=320.0, client_cpu_util=0.97)]
    s = preload_report.summarize(rows, preload.BARS, preload.CLASSES, order=list(preload.WORKLOADS))
    apache = s[0]
    assert apache["plain_server_cpu_us"] == pytest.approx(410.0)
    assert apache["preload_client_cpu"] == pytest.approx(0.98)
    assert s[1]["plain_server_cpu_us"] is None and s[1]["plain_client_cpu"] is None
    lines = preload_report.table(s).splitlines()
    cpu = [x for x in lines if x.startswith("| apache |")]
    assert len(cpu) == 2                      # the results line and the CPU line
    assert cpu[1] == "| apache | 410.0 | 310.0 | 1.32 | 0.91 | 0.98 |"
    assert not any(x.startswith("| dd-pipe |") and x.count("|") == 7 for x in lines)


def test_fired_rounding():
    s = {"pipe_seen_per_run": 2.5, "pipe_converted_per_run": 1.5, "pipe_mbytes_per_run": 0,
         "forward_seen_per_run": 1234.0, "forward_converted_per_run": 1200.0, "forward_mbytes_per_run": 2.25}
    assert preload_report.fired(s) == "pipe 1.5/2.5, forward 1,200/1,234 (2.2 MB)"


def test_write_all_and_plot(tmp_path):
    s = preload_report.summarize(ROWS, preload.BARS, preload.CLASSES)
    meta = {"benchmark": "preload", "bars": preload.BARS}
    preload_report.write_all(str(tmp_path), meta, ROWS, s)
    csv_lines = (tmp_path / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("run,workload,mode,unit,rate")
    assert len(csv_lines) == 1 + len(ROWS)
    summary = (tmp_path / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("workload,class,unit,runs,plain_median,preload_median,ratio")
    assert summary[1].startswith("dd-pipe,(2) dd into a pipe,MB/s,3,100,150,1.5,")
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["meta"]["benchmark"] == "preload" and len(data["runs"]) == len(ROWS)
    pytest.importorskip("matplotlib")
    ratios, rates = preload_report.plot(str(tmp_path), s)
    assert ratios.endswith("preload-ratios.png") and os.path.getsize(ratios) > 1000
    assert rates.endswith("preload-rates.png") and os.path.getsize(rates) > 1000


def test_zcbench_report_redoes_a_preload_result(tmp_path):
    """`zcbench report DIR` recognises a preload results.json and rewrites it."""
    meta = {"benchmark": "preload", "bars": preload.BARS}
    (tmp_path / "results.json").write_text(json.dumps({"meta": meta, "runs": ROWS, "summary": []}))
    p = subprocess.run([sys.executable, str(ZCBENCH), "report", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "| dd-pipe |" in p.stdout and "| null-4k |" in p.stdout
    assert (tmp_path / "summary.csv").exists() and (tmp_path / "preload-ratios.png").exists()
    assert json.loads((tmp_path / "results.json").read_text())["summary"][0]["ratio"] == pytest.approx(1.5)


# -- argv, inputs, Apache's config ---------------------------------------------

def test_wrap_and_order():
    assert preload.wrap("plain", ["dd", "x"], "/z/zcrun", "/s") == ["dd", "x"]
    assert preload.wrap("preload", ["dd", "x"], "/z/zcrun", "/s") == \
        ["/z/zcrun", "--stats-file=/s", "--", "dd", "x"]
    with pytest.raises(ValueError):
        preload.wrap("other", [], "z", "s")
    assert [preload.run_order(n) for n in (1, 2, 3)] == [
        ["plain", "preload"], ["preload", "plain"], ["plain", "preload"]]


def test_clean_env(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/x.so")
    monkeypatch.setenv("ZC_DISABLE", "pipe")
    monkeypatch.setenv("ZC_ENABLE", "forward")
    monkeypatch.setenv("ZC_STATS_FILE", "/tmp/s")
    env = preload.clean_env()
    assert not {"LD_PRELOAD", "ZC_DISABLE", "ZC_ENABLE", "ZC_STATS_FILE"} & set(env)
    assert env["PATH"] == os.environ["PATH"]


def test_enable_for_defaults_workloads():
    assert preload.enable_for("apache", "mapwrite") == "mapwrite"
    assert preload.enable_for("apache-defaults", "mapwrite") == ""
    assert preload.enable_for("sed", "") == ""
    assert preload.wrap("preload", ["x"], "zcrun", "/s", "mapwrite") == \
        ["zcrun", "--stats-file=/s", "--enable=mapwrite", "--", "x"]


def test_inputs_have_the_exact_size(tmp_path):
    for n in (0, 1, 4097, (1 << 20) + 3):
        preload.make_binary(str(tmp_path / "b"), n)
        preload.make_text(str(tmp_path / "t"), n)
        assert os.path.getsize(tmp_path / "b") == n and os.path.getsize(tmp_path / "t") == n
    text = (tmp_path / "t").read_bytes()
    lines = text.split(b"\n")
    assert len(lines) > 5000 and max(len(x) for x in lines) < 130


def test_command_workloads_amounts():
    opts = SimpleNamespace(dd_bytes=2_000_000, text_bytes=3_000_000, null_writes=7, pingpong_rounds=9)
    cmds = preload.command_workloads({"dd": "/d", "text": "/t"}, opts, "/pp")
    assert cmds["dd-pipe"][1] == 2.0 and cmds["sed"][1] == 3.0 and cmds["cut"][1] == 3.0
    assert cmds["null-4k"][0][-2:] == ["count=7", "status=none"] and cmds["null-4k"][1] == 7
    assert cmds["pingpong"] == (["/pp", "9"], 9)
    assert "bs=128k" in cmds["dd-pipe"][0][2] and "/d" in cmds["dd-pipe"][0][2]
    assert cmds["sed"][0] == ["sed", "-n", "$p", "/t"]
    assert set(cmds) | set(preload.APACHE_VARIANTS) == set(preload.WORKLOADS)
    assert set(preload.DEFAULT_WORKLOADS) <= set(preload.WORKLOADS)
    assert "apache-sndbuf" not in preload.DEFAULT_WORKLOADS
    assert set(preload.BARS) == set(preload.WORKLOADS) == set(preload.UNITS) == set(preload.CLASSES)


def test_apache_config():
    conf = preload_apache.apache_config(8123, "/srv/root", "/tmp/run", user="www-data")
    for line in ("Listen 127.0.0.1:8123", "EnableSendfile Off", "EnableMMAP On",
                 "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so",
                 'DocumentRoot "/srv/root"', "PidFile /tmp/run/httpd.pid", "ErrorLog /tmp/run/error.log",
                 "User www-data", "ServerLimit 1"):
        assert line in conf.splitlines(), line
    assert "CustomLog" not in conf and "TransferLog" not in conf      # no access log
    assert "User" not in preload_apache.apache_config(1, "/r", "/p", user=None)
    assert "SendBufferSize" not in conf
    assert "SendBufferSize 16384\n" in preload_apache.apache_config(1, "/r", "/p", send_buffer=16384)


def test_apache_variants_guard_off_only_under_the_preload(monkeypatch):
    """apache-noguard's ZC_MAPWRITE_GUARD=0 goes to the preload run only; a
    guard setting of the caller's never leaks into a run."""
    monkeypatch.setenv("ZC_MAPWRITE_GUARD", "0")
    monkeypatch.setenv("ZC_MAPWRITE_GUARD_TEST", "ref:1")
    env = preload.clean_env()
    assert "ZC_MAPWRITE_GUARD" not in env and "ZC_MAPWRITE_GUARD_TEST" not in env
    assert preload.APACHE_VARIANTS["apache-noguard"] == (None, {"ZC_MAPWRITE_GUARD": "0"})
    assert preload.APACHE_VARIANTS["apache-sndbuf-noguard"][0] == 16384
    assert preload.APACHE_VARIANTS["apache"] == (None, {})
    assert preload.BARS["apache-sndbuf"] == preload.OVERHEAD_BAR      # never slower


@pytest.mark.parametrize("text,want", [("4096", 4096), ("64k", 65536), ("256m", 256 << 20),
                                        ("2g", 2 << 30), ("1MiB", 1 << 20), ("3M", 3 << 20)])
def test_parse_size(text, want):
    assert preload_cli.parse_size(text) == want


@pytest.mark.parametrize("text", ["", "0", "-1", "1t", "k", "1.5m"])
def test_parse_size_rejects(text):
    with pytest.raises(Exception):
        preload_cli.parse_size(text)


def test_cli_usage():
    p = subprocess.run([sys.executable, str(ZCBENCH), "preload", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--workloads" in p.stdout and "--dd-size" in p.stdout
    p = subprocess.run([sys.executable, str(ZCBENCH), "preload", "--workloads", "bogus"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "bogus" in p.stderr
    p = subprocess.run([sys.executable, str(ZCBENCH), "preload", "--dd-size", "lots"],
                       capture_output=True, text=True)
    assert p.returncode == 2


def test_pingpong_program(tmp_path):
    exe = preload_pingpong.build(str(tmp_path))
    p = subprocess.run([exe, "1000"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "1000\n"


# -- the real thing, small -------------------------------------------------------

def test_preload_quick_smoke(tmp_path):
    """`zcbench preload --quick` on the cheap workloads, against the build's
    preload and zcrun: every measurement ran, the preloaded ones wrote
    statistics (so the preload really was loaded), files are written."""
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(ZCBENCH), "preload", "--quick", "--json", "--no-plot",
                        "--workloads", "dd-pipe,sed,null-4k,pingpong", "--dd-size", "8m",
                        "--text-size", "8m", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[8/8] run 1/1 pingpong" in p.stderr
    data = json.loads((out / "results.json").read_text())
    rows = data["runs"]
    assert {(r["workload"], r["mode"]) for r in rows} == {
        (w, m) for w in ("dd-pipe", "sed", "null-4k", "pingpong") for m in ("plain", "preload")}
    for r in rows:
        assert r["rate"] > 0
        if r["mode"] == "preload":
            assert r["processes"] >= 1, r     # the preload wrote its record
    sed = next(r for r in rows if r["workload"] == "sed" and r["mode"] == "preload")
    assert sed["stdio_converted"] >= 1, sed   # sed's file went through mapped stdio
    summary = json.loads(p.stdout)["summary"]
    assert [s["workload"] for s in summary] == ["dd-pipe", "sed", "null-4k", "pingpong"]


def test_resident_fraction_and_rewarm(tmp_path):
    """mincore says how much of a file is cached; rewarm reads it all in."""
    f = tmp_path / "input.bin"
    f.write_bytes(os.urandom(3 * 4096 + 100))
    fd = os.open(f, os.O_RDONLY)
    try:
        os.fsync(fd)  # clean pages can be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    assert preload.resident_fraction(str(f)) < 1.0
    preload.rewarm(str(f))
    assert preload.resident_fraction(str(f)) == 1.0
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert preload.resident_fraction(str(empty)) == 1.0
    assert preload.workload_inputs("dd-pipe", {"dd": "/x"}) == ("/x",)
    assert preload.workload_inputs("cut", {"text": "/t"}) == ("/t",)
    assert preload.workload_inputs("null-4k", {"dd": "/x"}) == ()


def test_preload_apache_under_the_budget_smoke(tmp_path):
    """`zcbench preload --quick --workloads apache`: Apache runs in a cgroup
    with the default 0.5 CPU quota; every measurement has its CPU time,
    the client-bound mark and the group's throttling; no group is left."""
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, str(ZCBENCH), "preload", "--quick", "--no-plot",
                          "--workloads", "apache", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stdout + stderr
    data = json.loads((out / "results.json").read_text())
    b = data["meta"]["budget"]
    assert b["quota_us"] == 50000
    for r in data["runs"]:
        assert r["server_cpu_us_per_req"] > 0 and r["server_cpu_util"] > 0, r
        assert r["client_bound"] in (True, False) and "throttled_share" in r, r
    root = b["cgroup"]["cpu_root"]
    assert not [n for n in os.listdir(root) if n.startswith(f"zcbench-{p.pid}-")]
    assert "client-bound runs" in stdout and "server CPU used without" in stdout
