"""pytest: the server's CPU budget of the server-bound method (budget.py): quota
math, cgroup v1/v2 detection and paths on a fake sysfs tree, the group's
CPU accounting, and on this machine's real v1 controller: the quota binds,
a process killed by SIGINT/SIGTERM/SIGHUP removes its group, and one killed
by SIGKILL has its group swept by the next run.  (Client-bound marking and
an interrupted `zcbench static`: test_zcbench_method.py.)  No timing
thresholds: only whether things happened."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import budget  # noqa: E402

# /proc/self/mountinfo of this machine (hybrid: v1 controllers, empty v2)
HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
COMOUNTED = """\
25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
"""
UNIFIED = """\
22 1 0:5 / /proc rw - proc proc rw
30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
"""


def real_hierarchy():
    h = budget.detect()
    return h if h is not None and os.geteuid() == 0 else None


needs_cgroup = pytest.mark.skipif(real_hierarchy() is None,
                                  reason="no cgroup cpu controller (or not root)")


# -- pure functions ---------------------------------------------------------------

def test_quota_math():
    assert budget.quota_us(0.5) == 50_000
    assert budget.quota_us(0.25) == 25_000
    assert budget.quota_us(1.5) == 150_000
    assert budget.quota_us(0.5, period_us=10_000) == 5_000
    assert budget.quota_us(0) is None and budget.quota_us(None) is None
    assert budget.quota_us(0.0001) == budget.MIN_QUOTA_US
    with pytest.raises(ValueError):
        budget.quota_us(-0.5)
    assert budget.v1_quota_files(0.5) == {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}
    assert budget.v1_quota_files(0)["cpu.cfs_quota_us"] == "-1"
    assert budget.v2_cpu_max(0.25) == "25000 100000"
    assert budget.v2_cpu_max(0) == "max 100000"


@pytest.mark.parametrize("text,want", [("0.5", 0.5), ("0", 0.0), ("1", 1.0), ("0.01", 0.01)])
def test_parse_fraction(text, want):
    assert budget.parse_fraction(text) == want


@pytest.mark.parametrize("text", ["", "half", "-0.5", "nan", "0.001", "1e9"])
def test_parse_fraction_rejects(text):
    with pytest.raises(ValueError):
        budget.parse_fraction(text)


def test_parse_mountinfo():
    m = budget.parse_mountinfo(HYBRID + "garbage line\n")
    assert [x["mount_point"] for x in m] == ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct",
                                             "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/unified"]
    assert m[1]["fstype"] == "cgroup" and m[1]["super_opts"] == {"rw", "cpu"}
    assert m[4]["fstype"] == "cgroup2"
    esc = budget.parse_mountinfo(r"1 2 0:3 / /mnt/a\040b rw - cgroup cgroup rw,cpu" + "\n")
    assert esc[0]["mount_point"] == "/mnt/a b"


def test_find_hierarchy_v1_separate_and_comounted(tmp_path):
    h = budget.find_hierarchy(budget.parse_mountinfo(HYBRID))
    assert (h.version, h.cpu_root, h.acct_root) == (1, "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct")
    h = budget.find_hierarchy(budget.parse_mountinfo(COMOUNTED), sysroot=str(tmp_path))
    assert h.version == 1 and h.cpu_root == h.acct_root == str(tmp_path / "sys/fs/cgroup/cpu,cpuacct")
    assert budget.find_hierarchy(budget.parse_mountinfo("")) is None


def test_find_hierarchy_v2_needs_cpu_in_controllers(tmp_path):
    root = tmp_path / "sys/fs/cgroup"
    root.mkdir(parents=True)
    mounts = budget.parse_mountinfo(UNIFIED)
    assert budget.find_hierarchy(mounts, sysroot=str(tmp_path)) is None       # no cgroup.controllers
    (root / "cgroup.controllers").write_text("memory pids\n")
    assert budget.find_hierarchy(mounts, sysroot=str(tmp_path)) is None       # no cpu controller
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    h = budget.find_hierarchy(mounts, sysroot=str(tmp_path))
    assert (h.version, h.cpu_root, h.acct_root) == (2, str(root), str(root))
    # hybrid: the v1 cpu mount wins even when a cgroup2 mount lists cpu
    unified = tmp_path / "sys/fs/cgroup/unified"
    unified.mkdir()
    (unified / "cgroup.controllers").write_text("cpu\n")
    assert budget.find_hierarchy(budget.parse_mountinfo(HYBRID), sysroot=str(tmp_path)).version == 1


def test_detect_reads_a_mountinfo_file(tmp_path):
    (tmp_path / "mountinfo").write_text(COMOUNTED)
    h = budget.detect(str(tmp_path / "mountinfo"), sysroot=str(tmp_path))
    assert h.version == 1
    assert budget.detect(str(tmp_path / "missing")) is None


def test_parse_cpu_stat_and_throttling():
    v1 = "nr_periods 120\nnr_throttled 60\nthrottled_time 3000000000\nnr_bursts 0\nburst_time 0\n"
    assert budget.throttling(budget.parse_cpu_stat(v1)) == {"periods": 120, "throttled": 60,
                                                             "throttled_s": 3.0}
    v2 = ("usage_usec 2500000\nuser_usec 1000000\nsystem_usec 1500000\nnr_periods 10\n"
          "nr_throttled 4\nthrottled_usec 200000\n")
    st = budget.parse_cpu_stat(v2)
    assert st["usage_usec"] == 2_500_000
    assert budget.throttling(st) == {"periods": 10, "throttled": 4, "throttled_s": 0.2}


def test_group_names_and_staleness():
    name = budget.group_name(1234, 5678, 3, "zchttpd")
    assert name == "zcbench-1234-5678-3-zchttpd"
    assert budget.parse_group_name(name) == (1234, 5678)
    assert budget.group_name(1, 2, 3, "a/b c") == "zcbench-1-2-3-a_b_c"
    for other in ("user.slice", "zcbench", "zcbench-x-1-1-a", "zcbench-1-2-a"):
        assert budget.parse_group_name(other) is None
        assert budget.is_stale(other, lambda pid: None) is False     # never someone else's
    alive = {1234: 5678}
    assert budget.is_stale(name, alive.get) is False
    assert budget.is_stale(budget.group_name(1234, 1, 1, "x"), alive.get) is True   # pid reused
    assert budget.is_stale(budget.group_name(99, 1, 1, "x"), alive.get) is True     # gone
    assert budget.proc_start(os.getpid()) == budget.proc_start(os.getpid()) > 0


# -- groups in a fake sysfs tree -----------------------------------------------

def fake_v1(tmp_path):
    cpu_root, acct_root = tmp_path / "cpu", tmp_path / "cpuacct"
    cpu_root.mkdir()
    acct_root.mkdir()
    return budget.Hierarchy(1, str(cpu_root), str(acct_root))


def test_budget_is_per_server_core(tmp_path):
    """A server on 4 CPUs of its own gets 4 times the quota of one on 1."""
    h = fake_v1(tmp_path)
    Path(h.cpu_root, "tasks").write_text("")      # what Budget probes for write access
    b = budget.Budget(0.25, hier=h)
    for cores, quota in ((1, "25000"), (4, "100000")):
        g = b.new_group(f"c{cores}", cores=cores).create()
        try:
            assert (Path(g.cpu_dir) / "cpu.cfs_quota_us").read_text() == quota
        finally:
            g.remove()


def test_group_in_a_fake_v1_tree(tmp_path):
    h = fake_v1(tmp_path)
    g = budget.CpuGroup(h, "nginx", 0.25).create()
    try:
        assert g.name.startswith(f"zcbench-{os.getpid()}-") and g.name.endswith("-nginx")
        assert g.cpu_dir == os.path.join(h.cpu_root, g.name)
        assert g.acct_dir == os.path.join(h.acct_root, g.name)
        assert (Path(g.cpu_dir) / "cpu.cfs_quota_us").read_text() == "25000"
        assert (Path(g.cpu_dir) / "cpu.cfs_period_us").read_text() == "100000"
        assert g.quota_check() == (25000, 100000)
        g.join(4321)
        assert (Path(g.cpu_dir) / "cgroup.procs").read_text() == "4321"
        assert (Path(g.acct_dir) / "cgroup.procs").read_text() == "4321"
        (Path(g.acct_dir) / "cpuacct.usage").write_text("1500000000\n")
        assert g.usage_s() == 1.5
        (Path(g.cpu_dir) / "cpu.stat").write_text("nr_periods 10\nnr_throttled 5\nthrottled_time 1000\n")
        assert g.throttling()["throttled"] == 5
        assert g.cpu_dir in budget._live
    finally:
        assert g.remove() is False          # a plain directory with files is no cgroup
    assert g.cpu_dir not in budget._live


def test_group_in_a_fake_v2_tree(tmp_path):
    (tmp_path / "cgroup.subtree_control").write_text("")
    h = budget.Hierarchy(2, str(tmp_path), str(tmp_path))
    g = budget.CpuGroup(h, "h2o", 0.5).create()
    try:
        assert g.dirs == [g.cpu_dir]
        assert (Path(g.cpu_dir) / "cpu.max").read_text() == "50000 100000"
        assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
        (Path(g.cpu_dir) / "cpu.stat").write_text("usage_usec 250000\nnr_periods 2\nnr_throttled 1\n"
                                                  "throttled_usec 10\n")
        assert g.usage_s() == 0.25
        assert g.quota_check() == (50000, 100000)
    finally:
        g.remove()
    g0 = budget.CpuGroup(h, "floor", 0).create()
    assert (Path(g0.cpu_dir) / "cpu.max").read_text() == "max 100000"
    g0.remove()


def test_sweep_stale_in_a_fake_tree(tmp_path):
    h = fake_v1(tmp_path)
    me = (os.getpid(), budget.proc_start(os.getpid()))
    stale = budget.group_name(999999, 1, 1, "zchttpd")
    mine = budget.group_name(*me, 1, "nginx")
    for root in (h.cpu_root, h.acct_root):
        for n in (stale, mine, "someone-else"):
            os.mkdir(os.path.join(root, n))
    assert budget.sweep_stale(h) == [stale, stale]
    for root in (h.cpu_root, h.acct_root):
        assert sorted(os.listdir(root)) == sorted([mine, "someone-else"])


def test_budget_without_a_controller():
    b = budget.Budget(0, hier=None)
    assert b.new_group("x") is None and b.as_dict()["cgroup"] is None
    assert "no CPU budget" in b.describe()
    with pytest.raises(budget.BudgetError):
        budget.Budget(0.5, hier=None)


# -- CPU accounting -----------------------------------------------------------------

def test_cpu_accounting_of_a_group_matches_its_processes():
    """A group's CPU time counts a busy child and its grandchild, and keeps
    counting them after they exit (which /proc cannot)."""
    h = real_hierarchy()
    if h is None:
        pytest.skip("no cgroup cpu controller (or not root)")
    g = budget.CpuGroup(h, "acct", 0).create()
    try:
        spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
        code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}])\n{spin}"
        subprocess.run([sys.executable, "-c", code], preexec_fn=g.preexec(), check=True)
        assert g.usage_s() >= 0.6
        assert g.pids() == []
    finally:
        assert g.remove()


# -- the real controller ---------------------------------------------------------------

@needs_cgroup
def test_real_group_binds_and_is_removed():
    """On this machine's controller: the quota is set, a spinning child and
    its children are inside the group, the group throttles them, and
    remove() kills what is left and deletes the directories."""
    b = budget.Budget(0.25)
    g = b.new_group("spin")
    g.create()
    assert g.quota_check() == (25000, 100000)
    g4 = b.new_group("four", cores=4)         # the budget is per server core
    try:
        assert g4.create().quota_check() == (100000, 100000)
    finally:
        assert g4.remove()
    cpus = sorted(os.sched_getaffinity(0))[-1:]
    p = subprocess.Popen(["sh", "-c", "sh -c 'while :; do :; done' & while :; do :; done"],
                         preexec_fn=g.preexec(cpus), start_new_session=True)
    try:
        while len(g.pids()) < 2:
            time.sleep(0.05)
        for pid in g.pids():
            with open(f"/proc/{pid}/cgroup") as f:
                assert f"/{g.name}" in f.read()
            assert os.sched_getaffinity(pid) == set(cpus)
        while g.throttling()["throttled"] == 0:
            time.sleep(0.05)
        assert g.usage_s() > 0
    finally:
        dirs = g.dirs
        assert g.remove()
        p.wait(timeout=10)
    assert p.returncode == -signal.SIGKILL
    assert not any(os.path.exists(d) for d in dirs)


# The helper starts with SIGTERM and SIGHUP at their defaults, as zcbench
# usually does: under nohup (SIGHUP ignored, and inherited) zcbench keeps
# the ignore on purpose, and the SIGHUP case would wait out its timeout.
HELPER = textwrap.dedent("""\
    import os, signal, subprocess, sys, time
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    sys.path.insert(0, {bench!r})
    from zcbench_lib import budget
    b = budget.Budget(0.5)
    g = b.new_group("sleeper")
    g.create()
    p = subprocess.Popen(["sleep", "300"], preexec_fn=g.preexec(), start_new_session=True)
    print(" ".join(g.dirs), p.pid, flush=True)
    try:
        time.sleep(300)
    finally:
        p.kill()
        p.wait()
        g.remove()
""")


def start_helper():
    p = subprocess.Popen([sys.executable, "-c", HELPER.format(bench=str(HERE))], stdout=subprocess.PIPE,
                         text=True)
    *dirs, child = p.stdout.readline().split()
    assert all(os.path.isdir(d) for d in dirs) and dirs
    return p, dirs, int(child)


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@needs_cgroup
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_process_leaves_no_group(sig):
    p, dirs, child = start_helper()
    p.send_signal(sig)
    p.wait(timeout=30)
    assert not any(os.path.exists(d) for d in dirs)
    assert gone(child)


@needs_cgroup
def test_killed_process_group_is_swept_by_the_next_run():
    p, dirs, child = start_helper()
    p.kill()                                  # SIGKILL: nothing can clean up
    p.wait(timeout=30)
    assert all(os.path.isdir(d) for d in dirs)
    swept = budget.Budget(0).swept            # what the next zcbench does first
    assert os.path.basename(dirs[0]) in swept
    assert not any(os.path.exists(d) for d in dirs)
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child)
