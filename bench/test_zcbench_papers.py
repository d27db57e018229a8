"""pytest: the paper experiments `zcbench mach`, `zcbench streamline` and
`zcbench cs-ipc` (docs/bench-papers.md): their summaries on fixed inputs,
the reader program's bytes, and one tiny real run of each command that
checks the files, the rows and that the measured programs produced the
right bytes (no timing thresholds anywhere)."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import build_dir, csipc, mach, papers, streamline  # noqa: E402

ZCBENCH = HERE / "zcbench"
BUILD = Path(build_dir())
MACH_READ = BUILD / "tests" / "mach_read"
ZCRUN = BUILD / "preload" / "zcrun"
IPC = BUILD / "bench" / "zcbench-ipc"

needs_build = pytest.mark.skipif(not (MACH_READ.exists() and ZCRUN.exists() and IPC.exists()),
                                 reason="build/ lacks mach_read, zcrun or zcbench-ipc (run `make`)")


def zcbench(*args, timeout=300):
    return subprocess.run([sys.executable, str(ZCBENCH), *args], capture_output=True, text=True,
                          timeout=timeout)


# -- pieces on fixed inputs ------------------------------------------------------

def test_make_file_sum(tmp_path):
    f = tmp_path / "x"
    n, s = papers.make_file(str(f), 3 * (1 << 20) + 5, seed_block=bytes(range(256)) * 4096)
    data = f.read_bytes()
    assert (n, s) == (len(data), sum(data))


def test_mach_parse_io():
    assert mach.parse_io(b"junk\nio: rchar 10 syscr 2 read_bytes 4096\n") == {
        "rchar": 10, "syscr": 2, "read_bytes": 4096}
    with pytest.raises(papers.PaperBenchError):
        mach.parse_io(b"nothing")


def test_mach_summarize_speedups():
    rows = []
    for run, t_old, t_new in ((1, 2.0, 1.0), (2, 4.0, 1.0), (3, 3.0, 1.5)):
        for prog, t in (("old_read", t_old), ("new_read", t_new)):
            rows.append({"run": run, "table": "6-1", "program": prog, "instance": 0, "cache": "second",
                         "elapsed_s": t, "user_s": t, "sys_s": 0.0, "rchar": 1, "syscr": 3,
                         "read_bytes": 8192, "bytes_ok": True})
    s = mach.summarize(rows)
    assert [(x["program"], x["cache"]) for x in s] == [("old_read", "second"), ("new_read", "second")]
    assert s[0]["elapsed_s"] == 3.0 and s[1]["elapsed_s"] == 1.0
    assert s[1]["speedup"] == 3.0 and s[1]["io_pages"] == 2
    assert s[1]["paper_elapsed_s"] == 6 and s[1]["paper_speedup"] == pytest.approx(8 / 6)
    assert "new_read" in mach.table_text(s, {"size": 1, "runs": 3})


def test_streamline_summarize_and_table():
    rows = []
    for run in (1, 2, 3):
        for series, v in (("pipe", 100.0), ("channel-full", 400.0 + run), ("pipe+preload", 100.0)):
            rows.append({"run": run, "figure": "11", "series": series, "block": 64, "bytes": 1,
                         "mbps": v, "bytes_ok": True})
        for series, v in (("dd-file", 10.0), ("dd-file+preload", 11.0)):
            rows.append({"run": run, "figure": "16", "series": series, "block": 4096, "bytes": 1,
                         "mbps": v, "bytes_ok": True})
    s = streamline.summarize(rows)
    by = {(x["figure"], x["series"]): x for x in s}
    assert by[("11", "channel-full")]["ratio"] == pytest.approx(4.02)
    assert by[("11", "pipe+preload")]["ratio"] == 1.0
    assert by[("16", "dd-file+preload")]["ratio"] == pytest.approx(1.1)
    text = streamline.table_text(s, {"runs": 3})
    assert "Figure 11" in text and "Figure 16" in text and "402 (4.02x)" in text


def test_streamline_dd_argv():
    assert streamline.dd_argv("dd-file", "/a", "/b", 4096, "/z")[:2] == ["dd", "if=/a"]
    pre = streamline.dd_argv("dd-pipe+preload", "/a", "/b", 4096, "/z")
    assert pre[:3] == ["/z", "--", "sh"] and pre[-2:] == ["/a", "/b"]
    assert streamline.fig11_bytes(64, 1 << 30) == 64 << 17
    assert streamline.fig11_bytes(1 << 20, 64 << 20) == 64 << 20


def test_csipc_summarize():
    res = {"backend": "portable", "cases": [
        {"id": i, "name": i, "what": i, "median_mbps": v, "runs_mbps": [v]}
        for i, v in (("b", 100.0), ("c", 180.0), ("f", 200.0), ("g", 50.0))]}
    s = csipc.summarize(res)
    assert [x["id"] for x in s] == ["b", "g", "c", "f"]
    c = next(x for x in s if x["id"] == "c")
    assert c["ratio_vs_b"] == 1.8 and c["ratio_vs_shm"] == 0.9
    assert c["paper_mbps"] == 88 and c["paper_ratio"] == pytest.approx(88 / 30)
    text = csipc.table_text(s, {"bytes": "1G", "block": "128K", "runs": 1, "backend": "portable"})
    assert "0.90 (bar >= 0.90: met)" in text


def test_cli_bad_usage():
    assert zcbench("mach", "--tables", "7-1").returncode == 2
    assert zcbench("streamline", "--blocks", "7").returncode == 2
    assert zcbench("streamline", "--figures", "12").returncode == 2
    p = zcbench("cs-ipc", "--help")
    assert p.returncode == 0 and "--block" in p.stdout


# -- the reader program ----------------------------------------------------------

@needs_build
@pytest.mark.parametrize("mode,pre", [("getc", False), ("getc", True), ("fmap", True), ("read", False)])
def test_mach_read_bytes(tmp_path, mode, pre):
    f = tmp_path / "in"
    data = os.urandom(300000)
    f.write_bytes(data)
    argv = [str(MACH_READ), mode, str(f)]
    if pre:
        argv = [str(ZCRUN), "--", *argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MACH_READ_IO": "1"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(len(data)), str(sum(data))]
    io = mach.parse_io(p.stderr.encode())
    if not pre and mode == "getc":
        assert io["syscr"] >= len(data) // 4096   # plain stdio reads the file in pieces
    if mode == "read":
        assert io["rchar"] >= len(data)


# -- the commands, tiny ----------------------------------------------------------

@needs_build
def test_mach_smoke(tmp_path):
    out = tmp_path / "out"
    p = zcbench("mach", "--size", "1m", "--runs", "1", "--json", "--workdir", str(tmp_path),
                "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads(p.stdout)["summary"]
    keys = [(s["table"], s["program"], s["instance"], s["cache"]) for s in summary]
    assert set(keys) == set(mach.PAPER)     # every line of the paper's three tables
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["wrong_outputs"] == 0 and all(r["bytes_ok"] for r in data["runs"])
    for name in ("results.csv", "summary.csv", "mach.png"):
        assert (out / name).stat().st_size > 0
    assert not list(tmp_path.glob("mach-input-*"))    # the input file is removed


@needs_build
def test_streamline_smoke(tmp_path):
    out = tmp_path / "out"
    p = zcbench("streamline", "--runs", "1", "--blocks", "64,64k", "--max-bytes", "2m",
                "--dd-blocks", "4k,64k", "--dd-size", "1m", "--workdir", str(tmp_path),
                "--out", str(out), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / "results.json").read_text())
    rows = data["runs"]
    assert {(r["figure"], r["series"], r["block"]) for r in rows} == \
        {("11", s, b) for s in streamline.FIG11_SERIES for b in (64, 65536)} | \
        {("16", s, b) for s in streamline.FIG16_SERIES for b in (4096, 65536)}
    assert all(r["mbps"] > 0 and r["bytes_ok"] for r in rows)   # dd's copies compared byte by byte
    for name in ("results.csv", "summary.csv", "streamline-fig11.png", "streamline-fig16.png"):
        assert (out / name).stat().st_size > 0


@needs_build
def test_cs_ipc_smoke(tmp_path):
    out = tmp_path / "out"
    p = zcbench("cs-ipc", "--bytes", "8M", "--runs", "1", "--out", str(out))
    # zcbench-ipc checks every block the receiver maps and exits 1 on a wrong one
    assert p.returncode == 0, p.stdout + p.stderr
    assert "full map / shared-memory ring" in p.stdout
    data = json.loads((out / "results.json").read_text())
    assert [s["id"] for s in data["summary"]] == list(csipc.ORDER)
    assert all(s["mbps"] > 0 for s in data["summary"])
    assert (out / "cs-ipc.png").stat().st_size > 0


@needs_build
def test_ipc_mixed_cases_small_blocks():
    """(g) and (h) over AF_UNIX with blocks that do not divide a page: the
    receiver sums pieces of any length and checks every block."""
    p = subprocess.run([str(IPC), "--bytes", "2M", "--block", "200", "--runs", "1",
                        "--cases", "b,g,h,c"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "(g)" in p.stdout and "(h)" in p.stdout
