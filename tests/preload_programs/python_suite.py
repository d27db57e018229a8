#!/usr/bin/env python3
"""python_suite.py: a real project's own test suite under libzc-preload.so.

Runs CPython's regression tests (Debian's python3.11 with the
libpython3.11-testsuite package) twice -- without the preload, then with
LD_PRELOAD (every process the tests start inherits it) -- and compares the
outcome of every test case (passed, failed, error, skipped) between the
two runs.  The modules are the ones about files, pipes, sockets, mmap,
subprocesses and compression: what the preload touches.

    python_suite.py [--fast] [--tests a,b] [--out DIR] [--preload SO] [--enable LIST]

--fast   a subset that runs in seconds (tests/preload_programs.bats uses it)
default  the full list below (about 2 x 100 s on the 2-core machine)

Prints per run "N passed, N failed, N skipped", the conversions the preload
made during its run (ZC_STATS_FILE), and every test case whose outcome
differs.  Exit status 0 only when both runs have the same outcome for every
test case, the preloaded run wrote statistics (so the preload was loaded),
and the plain run found test cases at all.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from zcbench_lib import preload_stats  # noqa: E402

PYTHON = "/usr/bin/python3"
FAST = ["test_fileio", "test_file", "test_bufio", "test_mmap", "test_shutil", "test_gzip",
        "test_fileinput", "test_pipes", "test_popen", "test_univnewlines", "test_tempfile",
        "test_fcntl", "test_filecmp"]
FULL = FAST + ["test_io", "test_subprocess", "test_os", "test_tarfile", "test_zipfile",
               "test_largefile", "test_bz2", "test_zlib", "test_select", "test_posix",
               "test_csv", "test_memoryio", "test_pathlib", "test_mailbox"]


def outcomes(xml_path):
    """{test case id: "passed" | "failed" | "error" | "skipped"} from
    regrtest's --junit-xml file."""
    out = {}
    root = ET.parse(xml_path).getroot()
    for tc in root.iter("testcase"):
        kind = "passed"
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed"}.get(child.tag, child.tag)
                break
        out[tc.get("name")] = kind
    return out


def counts(res):
    c = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for v in res.values():
        c[v] += 1
    return c


def run_suite(tests, env_extra, workdir, label, timeout_s):
    """Run regrtest once; (outcomes, exit status, seconds, log path)."""
    xml = os.path.join(workdir, f"{label}.xml")
    log = os.path.join(workdir, f"{label}.log")
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ZC_DISABLE", "ZC_STATS", "ZC_STATS_FILE", "ZC_NOFOLLOW"):
        env.pop(k, None)
    env.update(env_extra)
    cwd = os.path.join(workdir, f"{label}-cwd")
    os.makedirs(cwd, exist_ok=True)
    argv = [PYTHON, "-m", "test", "--junit-xml", xml, "--timeout", str(timeout_s), *tests]
    t0 = time.monotonic()
    with open(log, "wb") as f:
        rc = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                             cwd=cwd, env=env)
    secs = time.monotonic() - t0
    try:
        res = outcomes(xml)
    except (OSError, ET.ParseError):
        res = {}
    return res, rc, secs, log


def compare(a, b):
    """[(case, outcome without, outcome with)] for cases whose outcome differs
    (a case missing from one run counts as "missing")."""
    return [(k, a.get(k, "missing"), b.get(k, "missing"))
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", action="store_true", help="the quick subset")
    p.add_argument("--tests", help="comma-separated test modules instead of the lists")
    p.add_argument("--out", help="keep logs and JUnit XML here (default: a temp dir, removed)")
    p.add_argument("--preload", default=os.environ.get("ZC_PRELOAD_SO") or
                   os.path.join(ROOT, "build/preload/libzc-preload.so"))
    p.add_argument("--enable", default="", help="ZC_ENABLE of the preloaded run (opt-in cases)")
    p.add_argument("--timeout", type=int, default=600, help="regrtest's per-test timeout (s)")
    a = p.parse_args()
    tests = a.tests.split(",") if a.tests else (FAST if a.fast else FULL)
    if not os.path.exists(os.path.join(os.path.dirname(os.__file__), "test", "test_fileio.py")):
        print("python_suite: CPython's tests are not installed (ci/deps.sh installs "
              "libpython3.11-testsuite)", file=sys.stderr)
        return 1
    if not os.path.exists(a.preload):
        print(f"python_suite: no preload at {a.preload}", file=sys.stderr)
        return 1
    workdir = a.out or tempfile.mkdtemp(prefix="zc-pysuite-")
    os.makedirs(workdir, exist_ok=True)
    stats = os.path.join(workdir, "preload.stats")
    if os.path.exists(stats):
        os.unlink(stats)
    print(f"python_suite: {len(tests)} modules: {' '.join(tests)}" +
          (f"; preloaded run with ZC_ENABLE={a.enable}" if a.enable else ""))
    plain, rc0, s0, log0 = run_suite(tests, {}, workdir, "plain", a.timeout)
    env = {"LD_PRELOAD": a.preload, "ZC_STATS_FILE": stats, **({"ZC_ENABLE": a.enable} if a.enable else {})}
    pre, rc1, s1, log1 = run_suite(tests, env, workdir, "preload", a.timeout)
    problems = []
    for label, res, rc, secs, log in (("without preload", plain, rc0, s0, log0),
                                      ("with preload   ", pre, rc1, s1, log1)):
        c = counts(res)
        print(f"{label}: {len(res)} cases: {c['passed']} passed, {c['failed'] + c['error']} failed "
              f"({c['error']} errors), {c['skipped']} skipped; regrtest exit {rc}, {secs:.0f} s")
        if not res:
            problems.append(f"{label.strip()}: no test results (see {log})")
    try:
        totals = preload_stats.total(preload_stats.read(stats))
        print(f"preload statistics: {totals['processes']} processes; {preload_stats.brief(totals)}")
        if totals["processes"] == 0:
            problems.append("the preloaded run wrote no statistics: was the preload loaded?")
    except preload_stats.StatsError as e:
        problems.append(str(e))
    diff = compare(plain, pre)
    for case, x, y in diff:
        print(f"  DIFFERS {case}: {x} without, {y} with the preload")
    if diff:
        problems.append(f"{len(diff)} test cases differ (logs: {log0}, {log1})")
    if rc0 != rc1:
        problems.append(f"regrtest exit status differs: {rc0} without, {rc1} with")
    for msg in problems:
        print(f"python_suite: {msg}", file=sys.stderr)
    if not a.out and not problems:
        subprocess.call(["rm", "-rf", workdir])
    print("same outcomes" if not problems else "DIFFERENT")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
