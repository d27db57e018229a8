"""CPU time accounting shared by the benchmarks: the CPU time of running
processes (servers) and of finished children (wrk, the measured commands).

Who limits a loopback benchmark matters as much as its rate: a client at
one full core caps requests/s whatever the server does, so every benchmark
records both sides' CPU beside the rate."""
import os
import resource


def cpu_seconds(pids):
    """User + system CPU time of the processes `pids` (all their threads),
    from /proc/PID/stat; processes that are gone count 0."""
    ticks = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])    # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """User + system CPU time of this process's waited-for children so far:
    the difference around a subprocess.run is that child's CPU time."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def children_waits():
    """Voluntary context switches of this process's waited-for children so
    far.  Around a wrk run, per request: how often the client found nothing
    to do and slept until a server answered.  Near 0 the client never waits,
    so it, not the server, sets the rate."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw


# A point where wrk used more than this share of the CPU it may use was
# limited by the client, not the server: it is marked client-bound and does
# not count toward a median or a bar (docs/bench-static.md, "The method").
CLIENT_BOUND = 0.8


def client_cores(threads, client_cpus):
    """How many cores wrk can keep busy: its threads, at most its CPUs."""
    n = len(client_cpus) if client_cpus else os.cpu_count() or 1
    return max(1, min(threads, n))


def is_client_bound(client_cpu_util, cores=1, limit=CLIENT_BOUND):
    """True when wrk's CPU use (1.0 = one core) exceeds limit of its cores;
    None when wrk's CPU was not measured."""
    if client_cpu_util is None:
        return None
    return client_cpu_util > limit * cores


def row_client_bound(row, limit=CLIENT_BOUND):
    """A result row's mark: its own "client_bound" field, or for rows from
    before the mark existed, decided from its "client_cpu_util" (one wrk
    thread); False when neither was recorded."""
    cb = row.get("client_bound")
    if cb is None:
        cb = is_client_bound(row.get("client_cpu_util"), 1, limit)
    return bool(cb)


def cpu_times(path="/proc/stat"):
    """{cpu id: (busy ticks, all ticks)} from /proc/stat: busy is user, nice,
    system, irq, softirq and steal; all adds idle and iowait."""
    out = {}
    with open(path) as f:
        for line in f:
            name, *vals = line.split()
            if not name.startswith("cpu") or name == "cpu":
                continue
            v = [int(x) for x in vals[:8]] + [0] * (8 - len(vals[:8]))
            busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
            out[int(name[3:])] = (busy, busy + v[3] + v[4])
    return out


def busy_share(before, after, cpus):
    """How busy cpus were between two cpu_times() samples, 0.0-1.0 (all of
    their processes, not just ours); None without cpus or ticks."""
    if not cpus:
        return None
    busy = sum(after[c][0] - before[c][0] for c in cpus if c in before and c in after)
    total = sum(after[c][1] - before[c][1] for c in cpus if c in before and c in after)
    return busy / total if total > 0 else None
