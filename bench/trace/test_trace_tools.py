"""pytest: the trace tools of bench/trace (generator, CLF converter, plot).

The generator and converter run as the user runs them (a subprocess of the
venv's python), so argument handling and exit codes are tested too.  Trace
lines are checked field by field here only for what each tool promises; the
format itself is validated by the one parser (gdssim's, tests/gdssim.bats).
"""
import json
import math
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GEN = HERE / "gen_trace.py"
CLF = HERE / "clf2trace.py"
PLOT = HERE / "plot_hitratio.py"


def run(script, *args, input=None):
    return subprocess.run([sys.executable, str(script), *map(str, args)],
                          input=input, capture_output=True, text=True)


def requests(text):
    return [line.split() for line in text.splitlines() if line and not line.startswith("#")]


# ------------------------------------------------------------- generator

def test_same_seed_gives_byte_identical_traces(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for out in (a, b):
        r = run(GEN, "--requests", 20000, "--objects", 2000, "--seed", 7, "--out", out)
        assert r.returncode == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()
    c = tmp_path / "c.txt"
    assert run(GEN, "--requests", 20000, "--objects", 2000, "--seed", 8,
               "--out", c).returncode == 0
    assert c.read_bytes() != a.read_bytes()


def test_generated_trace_shape():
    r = run(GEN, "--requests", 5000, "--objects", 500, "--seed", 1, "--with-request")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# zctrace 1"
    assert "# seed: 1" in lines
    reqs = requests(r.stdout)
    assert len(reqs) == 5000
    last = -1
    sizes = {}
    for t, oid, size, method, status, path in reqs:
        assert int(t) >= last
        last = int(t)
        assert 0 <= int(oid) < 500 and int(size) > 0
        assert sizes.setdefault(oid, size) == size  # one size per object
        assert (method, status, path) == ("GET", "200", f"/obj/{oid}")


def test_zipf_alpha_controls_skew():
    def top_share(alpha):
        r = run(GEN, "--requests", 30000, "--objects", 3000, "--seed", 3,
                "--alpha", alpha, "--locality", 0)
        counts = Counter(req[1] for req in requests(r.stdout))
        return sum(c for _, c in counts.most_common(30)) / 30000

    low, mid, high = top_share(0.0), top_share(0.8), top_share(1.2)
    assert low < 0.03          # uniform: 30 of 3000 objects get ~1%
    assert low < mid < high
    assert high > 0.4


def test_sizes_heavy_tailed():
    # the population's sizes, drawn through the module itself
    sys.path.insert(0, str(HERE))
    try:
        import gen_trace
    finally:
        sys.path.pop(0)
    args = gen_trace.build_parser().parse_args(["--seed", "5", "--objects", "20000"])
    sizes = gen_trace.object_sizes(random.Random(5), args)
    body = sorted(s for s in sizes if s < 133000)
    tail = [s for s in sizes if s >= 133000]
    assert 0.04 < len(tail) / len(sizes) < 0.10          # ~7% Pareto tail
    median = body[len(body) // 2]
    assert abs(math.log(median) - 9.357) < 0.3           # lognormal body
    assert max(sizes) <= 64 << 20 and min(sizes) >= 1
    assert max(tail) > 20 * 133000                       # a real tail


def test_locality_repeats_recent_objects():
    def near_repeats(p):
        reqs = requests(run(GEN, "--requests", 20000, "--objects", 5000, "--seed", 9,
                            "--alpha", 0.5, "--locality", p).stdout)
        ids = [q[1] for q in reqs]
        return sum(1 for i in range(1, len(ids)) if ids[i] in ids[max(0, i - 20):i])

    assert near_repeats(0.5) > 2 * near_repeats(0.0)


@pytest.mark.parametrize("args", [
    ["--requests", "0", "--seed", "1"],
    ["--requests", "10"],                       # --seed is required
    ["--requests", "10", "--seed", "1", "--alpha", "-1"],
    ["--requests", "10", "--seed", "1", "--locality", "2"],
    ["--requests", "10", "--seed", "1", "--max-size", "0"],
])
def test_generator_rejects_bad_arguments(args):
    r = run(GEN, *args)
    assert r.returncode == 2
    assert "error" in r.stderr


# ------------------------------------------------------------- converter

LOG = """\
127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326
127.0.0.1 - frank [10/Oct/2000:13:55:37 -0700] "GET /index.html HTTP/1.1" 200 1043 "http://example.com/" "Mozilla/5.0 (X11)"
10.0.0.2 - - [10/Oct/2000:13:55:37 -0700] "GET /apache_pb.gif HTTP/1.1" 304 -
10.0.0.2 - - [10/Oct/2000:13:55:38 -0700] "HEAD /index.html HTTP/1.1" 200 0
10.0.0.3 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.1" 200 2326 "-" "curl/8.0" 0.001
10.0.0.3 - - [10/Oct/2000:13:55:39 -0700] "-" 408 0
10.0.0.3 - - [10/Oct/2000:13:55:40 -0700] "\\x16\\x03\\x01" 400 157
10.0.0.4 - - [10/Oct/2000:13:55:41 -0700] "POST /form?a=1 HTTP/1.1" 404 512
"""


def test_converts_common_and_combined_lines():
    r = run(CLF, input=LOG)
    assert r.returncode == 0, r.stderr
    reqs = requests(r.stdout)
    assert reqs == [
        ["0", "0", "2326", "GET", "200", "/apache_pb.gif"],
        ["1000", "1", "1043", "GET", "200", "/index.html"],
        ["1000", "0", "2326", "GET", "200", "/apache_pb.gif"],   # clamped: 36 < 37
        ["5000", "2", "512", "POST", "404", "/form?a=1"],
    ]
    out = r.stdout
    assert out.startswith("# zctrace 1\n")
    for line in ("# skipped_no_body: 2", "# skipped_bad_request: 2",
                 "# skipped_malformed: 0", "# clamped_time: 1", "# requests: 4",
                 "# lines: 8", "# objects: 3"):
        assert line in out
    # the counts are reported to the user, not only buried in the file
    assert "2 without a body" in r.stderr and "1 timestamps clamped" in r.stderr


def test_status_filter_is_counted():
    r = run(CLF, "--status", "200", input=LOG)
    assert r.returncode == 0
    assert len(requests(r.stdout)) == 3
    # the 304 and the 404; the status filter applies before the size check
    assert "# skipped_status: 2" in r.stdout
    assert "# skipped_no_body: 1" in r.stdout


def test_malformed_line_is_an_error_with_its_line_number(tmp_path):
    log = tmp_path / "access.log"
    log.write_text(LOG + "this is not a log line\n")
    r = run(CLF, log)
    assert r.returncode == 2
    assert f"{log}:9: not a Common/Combined Log Format line" in r.stderr
    r = run(CLF, "--skip-malformed", log)
    assert r.returncode == 0
    assert "# skipped_malformed: 1" in r.stdout
    assert "1 malformed" in r.stderr


def test_bad_timestamp_is_malformed():
    r = run(CLF, input='1.2.3.4 - - [99/Foo/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 5\n')
    assert r.returncode == 2
    assert "<stdin>" not in r.stderr and "-:1: bad timestamp" in r.stderr


def test_ids_are_stable_per_path():
    lines = "".join(
        f'1.2.3.4 - - [10/Oct/2000:13:55:{s:02d} +0000] "GET /p{p} HTTP/1.1" 200 {10 + p}\n'
        for s, p in enumerate([3, 1, 3, 2, 1, 3]))
    reqs = requests(run(CLF, input=lines).stdout)
    assert [q[1] for q in reqs] == ["0", "1", "0", "2", "1", "0"]
    assert {q[5]: q[1] for q in reqs} == {"/p3": "0", "/p1": "1", "/p2": "2"}


def test_missing_log_file():
    r = run(CLF, "/nonexistent/access.log")
    assert r.returncode == 1
    assert "/nonexistent/access.log" in r.stderr


# ------------------------------------------------------------------ plot

def test_plot_writes_a_small_png(tmp_path):
    doc = {"requests": 10, "objects": 3,
           "ceiling": {"hit_ratio": 0.7, "byte_hit_ratio": 0.6},
           "results": [{"label": lab, "cache_fraction": f, "hit_ratio": h,
                        "byte_hit_ratio": h / 2}
                       for lab in ("GDS(1)", "LRU")
                       for f, h in ((0.01, 0.3), (0.05, 0.5), (0.1, 0.6))]}
    out = tmp_path / "fig.png"
    r = run(PLOT, "--out", out, input=json.dumps(doc))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) < 200_000


def test_plot_rejects_bad_json(tmp_path):
    r = run(PLOT, "--out", tmp_path / "x.png", input="{not json")
    assert r.returncode != 0
    assert "cannot read gdssim JSON" in r.stderr
