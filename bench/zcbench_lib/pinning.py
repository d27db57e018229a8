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


def split(cpus, workers):
    """(server_cpus, client_cpus) from the usable CPU ids, or (None, None) when
    there is only one CPU (nothing to separate).  The server gets `workers`
    CPUs from the end of the list but always leaves at least one to the client."""
    cpus = sorted(cpus)
    if len(cpus) < 2:
        return None, None
    n = max(1, min(workers, len(cpus) - 1))
    return cpus[-n:], cpus[:-n]


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
