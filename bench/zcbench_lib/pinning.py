"""CPU placement for the web benchmarks: the server under test on cores of its
own, the load generator (wrk) on the others.

Why: on a small machine, wrk and the server otherwise compete for the same
cores and the scheduler moves them around; a server then gets whatever wrk
leaves, and run-to-run noise swamps differences between servers.  With the
same placement for every server, each gets the same dedicated core(s) and
the same client.  `--no-pin` turns it off (the README and docs say which
mode a published figure used).
"""
import os
from dataclasses import dataclass


def split(cpus, workers):
    """(server_cpus, client_cpus) from the usable CPU ids, or (None, None) when
    there is only one CPU (nothing to separate).  The server gets `workers`
    CPUs from the end of the list but always leaves at least one to the client."""
    cpus = sorted(cpus)
    if len(cpus) < 2:
        return None, None
    n = max(1, min(workers, len(cpus) - 1))
    return cpus[-n:], cpus[:-n]


@dataclass
class Placement:
    """Where one worker count runs: the server's CPUs, wrk's CPUs and wrk's
    threads (one per client CPU, at most one per connection).  cores_short:
    the server has fewer CPUs than workers (a small machine keeps one CPU
    for wrk): its workers share cores, so what it measures is not N
    workers on N cores."""
    workers: int
    server_cpus: list
    client_cpus: list
    threads: int

    @property
    def server_cores(self):
        return len(self.server_cpus) if self.server_cpus else None

    @property
    def cores_short(self):
        return self.server_cpus is not None and len(self.server_cpus) < self.workers

    def describe(self):
        where = (f"servers on CPU {describe(self.server_cpus)}, wrk on CPU "
                 f"{describe(self.client_cpus)} ({self.threads} thread(s))")
        if self.cores_short:
            where += (f"; {self.workers} workers share {len(self.server_cpus)} core(s): not a "
                      f"{self.workers}-core measurement on this {len(self.server_cpus) + len(self.client_cpus)}"
                      f"-CPU machine")
        return where


def place(cpus, workers, connections, pin=True):
    """The Placement of `workers` workers on cpus (split()); unpinned or on
    one CPU: no CPUs named and one wrk thread (the method before pinning)."""
    server_cpus, client_cpus = split(cpus, workers) if pin else (None, None)
    n = len(client_cpus) if client_cpus else 1
    return Placement(workers, server_cpus, client_cpus, max(1, min(n, connections)))


def available():
    """CPU ids this process may run on."""
    return sorted(os.sched_getaffinity(0))


def preexec(cpus):
    """A subprocess preexec_fn that pins the child (and all it starts) to cpus;
    None when cpus is None."""
    if not cpus:
        return None
    cpuset = set(cpus)

    def _pin():
        os.sched_setaffinity(0, cpuset)
    return _pin


def describe(cpus):
    return ",".join(str(c) for c in cpus) if cpus else "any"
