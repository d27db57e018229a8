"""The server's CPU budget: a cgroup with a CPU quota around the server
under test, and the group's CPU time (the server-bound method,
docs/bench-static.md).

Why: on a 2-core machine wrk fills its own core before a server fills its
core, so unconstrained requests/s measure the client.  Under a quota
(`--server-cpu 0.5`: 50 ms of CPU per 100 ms period) the server runs out of
CPU well before wrk does, so requests/s measure what the server does with a
fixed CPU budget; cpu.py marks the points where wrk still was the limit.

One group per server process tree, named zcbench-<pid>-<start>-<n>-<label>
(pid and start time of the zcbench that made it, so a sweep can tell the
groups of a zcbench that is gone from those of one still running):

  cgroup v1 (this machine): a directory in the `cpu` hierarchy
      (cpu.cfs_period_us, cpu.cfs_quota_us, cgroup.procs, cpu.stat) and, for
      the CPU time, one of the same name in the `cpuacct` hierarchy
      (cpuacct.usage, nanoseconds); the two may be one mount (cpu,cpuacct).
  cgroup v2 (unified hierarchy whose cgroup.controllers lists cpu):
      cpu.max ("QUOTA PERIOD" or "max PERIOD"), cgroup.procs, cpu.stat
      (usage_usec, nr_periods, nr_throttled, throttled_usec).

The server joins its group in the child between fork and exec (preexec), so
every process and thread it starts later (workers, helper threads, FastCGI
apps, Apache children) is born inside it.  The group is removed when the
server stops; every group still alive is removed at exit (atexit) and on
SIGTERM/SIGHUP (turned into KeyboardInterrupt, so `finally` blocks run),
with any process left in it killed first -- only processes zcbench itself
started are ever in a group.  A zcbench killed with SIGKILL leaves its
groups behind: sweep_stale() at the start of the next run removes groups
whose zcbench is gone.

Everything that does not touch the system (quota math, mountinfo and
cpu.stat parsing, names) is a pure function, tested without root.
"""
import atexit
import errno
import os
import re
import signal
import time

from .cpu import cpu_seconds

PERIOD_US = 100_000          # the CFS period: 100 ms
MIN_QUOTA_US = 1_000         # the kernel's smallest quota
PREFIX = "zcbench"
_NAME = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-(\d+)-([A-Za-z0-9_.]+)$")


class BudgetError(RuntimeError):
    pass


# -- pure functions -------------------------------------------------------------

def quota_us(fraction, period_us=PERIOD_US):
    """The quota for `fraction` of one CPU per period, or None for no quota
    (fraction 0: the unconstrained method)."""
    if fraction is None or fraction == 0:
        return None
    if fraction < 0:
        raise ValueError(f"negative CPU fraction {fraction}")
    return max(MIN_QUOTA_US, int(round(fraction * period_us)))


def parse_fraction(text):
    """--server-cpu: a fraction of one CPU, >= 0 (0: no quota)."""
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"not a CPU fraction: {text!r} (examples: 0.5, 0.25, 0)") from None
    if v < 0 or v != v or v > 1024:
        raise ValueError(f"CPU fraction out of range: {text!r}")
    if 0 < v < MIN_QUOTA_US / PERIOD_US:
        raise ValueError(f"CPU fraction below {MIN_QUOTA_US / PERIOD_US}: {text!r}")
    return v


def v1_quota_files(fraction, period_us=PERIOD_US):
    """{file: content} that sets the quota in a cgroup v1 cpu directory."""
    q = quota_us(fraction, period_us)
    return {"cpu.cfs_period_us": str(period_us), "cpu.cfs_quota_us": str(-1 if q is None else q)}


def v2_cpu_max(fraction, period_us=PERIOD_US):
    """The cpu.max line of a cgroup v2 directory."""
    q = quota_us(fraction, period_us)
    return f"{'max' if q is None else q} {period_us}"


def _unescape(path):
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def parse_mountinfo(text):
    """[{mount_point, root, fstype, super_opts (set)}] from /proc/*/mountinfo."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3:
            continue
        out.append({"mount_point": _unescape(f[4]), "root": _unescape(f[3]), "fstype": r[0],
                    "super_opts": set(r[2].split(","))})
    return out


class Hierarchy:
    """Where the groups go: version 1 or 2, the directory that holds the
    cpu controller's groups and the one for CPU time (v1 cpuacct; may be
    None, then the CPU time is summed from /proc)."""

    def __init__(self, version, cpu_root, acct_root):
        self.version, self.cpu_root, self.acct_root = version, cpu_root, acct_root

    def __repr__(self):
        return f"Hierarchy(v{self.version}, cpu={self.cpu_root}, acct={self.acct_root})"

    def describe(self):
        if self.version == 2:
            return f"cgroup v2 {self.cpu_root} (cpu.max, cpu.stat usage_usec)"
        acct = f"cpuacct.usage in {self.acct_root}" if self.acct_root else "CPU time from /proc"
        return f"cgroup v1 cpu at {self.cpu_root} (cpu.cfs_quota_us), {acct}"

    def as_dict(self):
        return {"version": self.version, "cpu_root": self.cpu_root, "acct_root": self.acct_root}


def find_hierarchy(mounts, sysroot=""):
    """The Hierarchy of these mounts (parse_mountinfo), or None.  A v1
    mount with the cpu controller wins (the cpu controller can be bound to
    only one hierarchy; on a hybrid machine the v2 mount then has no cpu);
    else a cgroup2 mount whose cgroup.controllers lists cpu.  sysroot
    prefixes every path (tests use a fake tree)."""
    def real(p):
        return os.path.join(sysroot, p.lstrip("/")) if sysroot else p
    cpu = acct = None
    for m in mounts:
        if m["fstype"] != "cgroup":
            continue
        if "cpu" in m["super_opts"] and cpu is None:
            cpu = real(m["mount_point"])
        if "cpuacct" in m["super_opts"] and acct is None:
            acct = real(m["mount_point"])
    if cpu:
        return Hierarchy(1, cpu, acct)
    for m in mounts:
        if m["fstype"] != "cgroup2":
            continue
        root = real(m["mount_point"])
        try:
            with open(os.path.join(root, "cgroup.controllers")) as f:
                if "cpu" in f.read().split():
                    return Hierarchy(2, root, root)
        except OSError:
            continue
    return None


def detect(mountinfo="/proc/self/mountinfo", sysroot=""):
    """This machine's Hierarchy, or None when there is no cpu controller."""
    try:
        with open(mountinfo) as f:
            return find_hierarchy(parse_mountinfo(f.read()), sysroot)
    except OSError:
        return None


def parse_cpu_stat(text):
    """{key: int} of a cpu.stat file (v1: nr_periods, nr_throttled,
    throttled_time ns; v2: usage_usec, ..., throttled_usec)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].lstrip("-").isdigit():
            out[f[0]] = int(f[1])
    return out


def throttling(stat):
    """{"periods", "throttled", "throttled_s"} from parse_cpu_stat() of either version."""
    if "throttled_usec" in stat:
        t = stat["throttled_usec"] / 1e6
    else:
        t = stat.get("throttled_time", 0) / 1e9
    return {"periods": stat.get("nr_periods", 0), "throttled": stat.get("nr_throttled", 0),
            "throttled_s": t}


def group_name(pid, start, n, label):
    return f"{PREFIX}-{pid}-{start}-{n}-{re.sub(r'[^A-Za-z0-9_.]', '_', label) or 'x'}"


def parse_group_name(name):
    """(pid, start) of a zcbench group's name, or None for any other name."""
    m = _NAME.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def proc_start(pid):
    """The start time (clock ticks after boot) of process pid, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def is_stale(name, start_of=proc_start):
    """True for a zcbench group whose zcbench (pid with that start time) is gone."""
    owner = parse_group_name(name)
    if owner is None:
        return False
    return start_of(owner[0]) != owner[1]


# -- the system side --------------------------------------------------------------

_live = {}          # path of a group's first directory -> CpuGroup
_counter = [0]
_handlers = [False]


def _read(path):
    with open(path) as f:
        return f.read()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _pids_in(d):
    try:
        return [int(x) for x in _read(os.path.join(d, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def _empty_and_rmdir(d, timeout_s=5.0):
    """Kill what is left in group directory d, then remove it (EBUSY while
    the killed processes exit: retried until timeout_s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for pid in _pids_in(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.rmdir(d)
            return True
        except FileNotFoundError:
            return True
        except OSError as e:
            # EBUSY: processes still exiting.  Anything else (ENOTEMPTY: not
            # a cgroup directory at all) will not change by waiting.
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        time.sleep(0.02)


class CpuGroup:
    """One cgroup for one server process tree: create(), preexec(cpus) for
    Popen, usage_s() and throttling() around a measurement, remove()."""

    def __init__(self, hier, label, fraction, period_us=PERIOD_US):
        self.hier, self.fraction, self.period_us = hier, fraction, period_us
        _counter[0] += 1
        self.name = group_name(os.getpid(), proc_start(os.getpid()) or 0, _counter[0], label)
        self.cpu_dir = os.path.join(hier.cpu_root, self.name)
        self.acct_dir = (os.path.join(hier.acct_root, self.name)
                         if hier.acct_root and hier.acct_root != hier.cpu_root else None)
        self.created = False

    @property
    def dirs(self):
        return [d for d in (self.cpu_dir, self.acct_dir) if d]

    def create(self):
        install_cleanup()
        try:
            _live[self.cpu_dir] = self
            for d in self.dirs:
                os.mkdir(d)
            self.created = True
            if self.hier.version == 2:
                parent = os.path.join(self.hier.cpu_root, "cgroup.subtree_control")
                try:
                    if "cpu" not in _read(parent).split():
                        _write(parent, "+cpu")
                except OSError:
                    pass
                _write(os.path.join(self.cpu_dir, "cpu.max"), v2_cpu_max(self.fraction, self.period_us))
            else:
                for f, v in v1_quota_files(self.fraction, self.period_us).items():
                    _write(os.path.join(self.cpu_dir, f), v)
        except OSError as e:
            self.remove()
            raise BudgetError(f"cannot set up cgroup {self.cpu_dir}: {e} (needs root and the cpu "
                              "controller; --server-cpu 0 measures without a budget)") from None
        return self

    def join(self, pid=None):
        """Move process pid (default: the caller) into the group."""
        pid = os.getpid() if pid is None else pid
        for d in self.dirs:
            _write(os.path.join(d, "cgroup.procs"), str(pid))

    def preexec(self, cpus=None):
        """A Popen preexec_fn: join the group, then pin to cpus (if any);
        both are inherited by everything the child starts."""
        dirs = [os.path.join(d, "cgroup.procs") for d in self.dirs]
        cpuset = set(cpus) if cpus else None

        def _enter():
            me = str(os.getpid())
            for p in dirs:
                with open(p, "w") as f:
                    f.write(me)
            if cpuset:
                os.sched_setaffinity(0, cpuset)
        return _enter

    def pids(self):
        return _pids_in(self.cpu_dir)

    def usage_s(self):
        """CPU time (user + system) of everything that ran in the group, s."""
        if self.hier.version == 2:
            return parse_cpu_stat(_read(os.path.join(self.cpu_dir, "cpu.stat")))["usage_usec"] / 1e6
        acct = self.acct_dir or (self.cpu_dir if self.hier.acct_root else None)
        if acct:
            return int(_read(os.path.join(acct, "cpuacct.usage"))) / 1e9
        return cpu_seconds(self.pids())

    def throttling(self):
        try:
            return throttling(parse_cpu_stat(_read(os.path.join(self.cpu_dir, "cpu.stat"))))
        except OSError:
            return {"periods": 0, "throttled": 0, "throttled_s": 0.0}

    def quota_check(self):
        """The quota as the kernel holds it: (quota_us or None, period_us)."""
        if self.hier.version == 2:
            q, p = _read(os.path.join(self.cpu_dir, "cpu.max")).split()
            return (None if q == "max" else int(q)), int(p)
        q = int(_read(os.path.join(self.cpu_dir, "cpu.cfs_quota_us")))
        return (None if q < 0 else q), int(_read(os.path.join(self.cpu_dir, "cpu.cfs_period_us")))

    def remove(self):
        """Kill anything left in the group and remove its directories."""
        ok = True
        for d in reversed(self.dirs):
            if os.path.isdir(d):
                ok = _empty_and_rmdir(d) and ok
        _live.pop(self.cpu_dir, None)
        self.created = False
        return ok


def remove_all():
    """Remove every group this process still has (atexit, signal handlers)."""
    for g in list(_live.values()):
        try:
            g.remove()
        except Exception:   # noqa: BLE001 -- at exit, keep removing the others
            pass


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def install_cleanup():
    """Once per process: remove_all at exit; SIGTERM and SIGHUP raise
    KeyboardInterrupt (like SIGINT) so that servers are stopped and groups
    removed on the way out.  Handlers someone else set are kept."""
    if _handlers[0]:
        return
    _handlers[0] = True
    atexit.register(remove_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _terminate)
        except ValueError:      # not the main thread
            pass


def sweep_stale(hier, start_of=proc_start):
    """Remove the groups of zcbench runs that are gone (killed with SIGKILL,
    say), and what is still running in them; the names removed."""
    removed = []
    for root in dict.fromkeys(r for r in (hier.cpu_root, hier.acct_root) if r):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for n in names:
            d = os.path.join(root, n)
            if os.path.isdir(d) and is_stale(n, start_of) and _empty_and_rmdir(d):
                removed.append(n)
    return removed


class Budget:
    """What a benchmark asks for: fraction of one CPU per server (0: no
    quota, but still a group for the CPU time when the machine has one).
    new_group(label) -> CpuGroup or None (no cgroup: /proc accounting)."""

    def __init__(self, fraction, hier="detect"):
        self.fraction = fraction
        self.hier = detect() if hier == "detect" else hier
        if self.hier is None and fraction:
            raise BudgetError("--server-cpu needs a cgroup cpu controller (v1 cpu or v2 cpu.max) "
                              "and root; --server-cpu 0 measures without a budget")
        if self.hier is not None:
            try:
                probe = os.path.join(self.hier.cpu_root, "tasks" if self.hier.version == 1
                                     else "cgroup.procs")
                writable = os.access(probe, os.W_OK) and os.access(self.hier.cpu_root, os.W_OK)
            except OSError:
                writable = False
            if not writable:
                if fraction:
                    raise BudgetError(f"cannot write {self.hier.cpu_root} (run as root); "
                                      "--server-cpu 0 measures without a budget")
                self.hier = None
        if self.hier is not None:
            install_cleanup()
            self.swept = sweep_stale(self.hier)
        else:
            self.swept = []

    def new_group(self, label, cores=1):
        """A group for a server on `cores` CPUs of its own: the budget is
        per server core (workers on N cores get N times the quota), so
        every worker count has the same share of each of its cores."""
        return CpuGroup(self.hier, label, self.fraction * max(1, cores)) if self.hier else None

    def as_dict(self):
        return {"server_cpu": self.fraction, "period_us": PERIOD_US,
                "quota_us": quota_us(self.fraction),
                "cgroup": self.hier.as_dict() if self.hier else None}

    def describe(self):
        if not self.fraction:
            where = self.hier.describe() if self.hier else "CPU time from /proc"
            return f"no CPU budget (--server-cpu 0; {where})"
        return f"{self.fraction:g} CPU per server core ({quota_us(self.fraction)} us per {PERIOD_US} us " \
               f"per core; {self.hier.describe()})"
