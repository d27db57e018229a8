"""Many cores in zcbench: one benchmark at several worker counts
(`zcbench static --workers 1,4,8`, `zcbench replay --workers 1,4`).

Every worker count N has its own placement (pinning.place): the servers,
each with N workers (processes or threads), on N CPUs of their own, wrk on
the others with one thread per CPU; the CPU budget is per server core
(budget.Budget.new_group).  Each point records N, the server's cores and
wrk's threads.  What a worker count measured is said beside its figures:

  server-bound    the server had N cores and wrk was not the limit in any
                  counted run
  N on K cores    the machine could not give the server N cores and still
                  keep one for wrk (a 2-core machine at N > 1): the workers
                  shared K cores, so the figures are not those of N workers
                  on N cores, whatever the rates say
  client-bound    wrk used more than cpu.CLIENT_BOUND of its cores in every
                  run (or in some runs: "partly")

The scaling table gives, per group (a size and mode, or a memory limit),
requests/s and server CPU per request at every N and each server's ratio to
the floor's requests/s at the same N; the figure plots both against N.
"""
import statistics

from . import figure

FLOOR = "floor"


def parse_counts(text):
    """--workers: "1" or "1,4,8" -> sorted distinct positive counts;
    ValueError on anything else."""
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        out = []
    if not out or out[0] < 1 or out[-1] > 1024:
        raise ValueError(f"not a list of worker counts 1-1024: {text!r}")
    return out


def placement_fields(p):
    """What every row measured under placement p records about it."""
    return {"workers": p.workers, "server_cores": p.server_cores, "wrk_threads": p.threads,
            "cores_short": p.cores_short}


def by_workers(rows):
    """{N: rows} in increasing N; rows that do not say (from before worker
    lists, or from `zcbench fastcgi`) are under None."""
    out = {}
    for r in rows:
        out.setdefault(r.get("workers"), []).append(r)
    return dict(sorted(out.items(), key=lambda kv: kv[0] or 0))


def verdict(entries):
    """What one worker count's summary entries (one per server) measured:
    "server-bound", "not server-bound: N workers on K core(s)", "not
    server-bound: client-bound", or "partly client-bound (...)"."""
    if not entries:
        return "-"
    e0 = entries[0]
    if any(e.get("cores_short") for e in entries):
        return (f"not server-bound: {e0['workers']} workers on {e0.get('server_cores')} core(s) "
                "(the machine keeps one for wrk)")
    every = [e["server"] for e in entries if e.get("client_bound")]
    if every and len(every) == len(entries):
        return "not server-bound: client-bound"
    some = [e["server"] for e in entries if e.get("client_bound") or e.get("client_bound_runs")]
    if some:
        return "partly client-bound (" + ", ".join(
            f"{e['server']} {e.get('client_bound_runs', 0)}/{e.get('runs', 0)} runs"
            for e in entries if e["server"] in some) + ")"
    return "server-bound"


def verdict_line(summary):
    """One line for a worker count's summary (all sizes and modes): its
    verdicts, each with the points it applies to."""
    by = {}
    for e in summary:
        by.setdefault((e.get("size"), e.get("mode")), []).append(e)
    seen = {}
    for es in by.values():
        v = verdict(es)
        seen[v] = seen.get(v, 0) + 1
    return "; ".join(f"{v} ({k} of {len(by)} points)" if len(seen) > 1 else v for v, k in seen.items())


def server_bound(entries):
    return verdict(entries) == "server-bound"


def _num(x, fmt):
    return "-" if x is None else format(x, fmt)


def scaling_table(entries, servers, group_of, title_of, floor=FLOOR, extra=()):
    """Markdown, one table per group (group_of(entry) -> key, title_of(key)
    -> its heading): a row per worker count with each server's requests/s
    (median), server CPU us per request, ratio to the floor's requests/s
    and what the worker count measured (verdict).  extra: more columns,
    (heading, fn(entries of the row) -> text)."""
    groups = {}
    for e in entries:
        groups.setdefault(group_of(e), {}).setdefault(e.get("workers") or 1, []).append(e)
    names = [s for s in servers if any(e["server"] == s for e in entries)]
    has_floor = floor in names
    out = []
    for key, per_n in groups.items():
        head = (["workers", "server cores"] + [f"{s} req/s" for s in names]
                + [f"{s} CPU us/req" for s in names]
                + ([f"{s}/{floor}" for s in names if s != floor] if has_floor else [])
                + [h for h, _ in extra] + ["measured"])
        out.append(f"**{title_of(key)}: scaling with the worker count**\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for n, es in sorted(per_n.items()):
            by = {e["server"]: e for e in es}
            cells = [str(n), _num(es[0].get("server_cores"), "d")]
            cells += [_num(by[s]["rps_median"], ",.0f") + ("*" if by[s].get("client_bound") else "")
                      if s in by else "-" for s in names]
            cells += [_num(by.get(s, {}).get("cpu_us_per_req_median"), ".1f") for s in names]
            if has_floor:
                fl = by.get(floor, {}).get("rps_median")
                cells += [_num(by[s]["rps_median"] / fl if fl and s in by else None, ".2f")
                          for s in names if s != floor]
            cells += [fn(es) for _, fn in extra]
            cells.append(verdict(es))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out.append("(* every run of that point was client-bound; CPU us/req: the server's CPU time, "
               "all its processes and threads, per request; ratios to the floor at the same "
               "worker count)")
    return "\n".join(out)


def plot_scaling(out_dir, entries, servers, group_of, title_of, name, suptitle, style, dpi=80):
    """name.png: a row per group, requests/s (left) and server CPU us per
    request (right) against the worker count, a line per server; a hollow
    marker where that worker count was not server-bound."""
    plt = figure.pyplot()
    groups = {}
    for e in entries:
        groups.setdefault(group_of(e), []).append(e)
    fig, axes = plt.subplots(len(groups), 2, figsize=(10, 3.2 * len(groups)), squeeze=False)
    for (key, es), (a, b) in zip(groups.items(), axes):
        ns = sorted({e.get("workers") or 1 for e in es})
        bound = {n: server_bound([e for e in es if (e.get("workers") or 1) == n]) for n in ns}
        for s in servers:
            pts = sorted(((e.get("workers") or 1), e) for e in es if e["server"] == s)
            if not pts:
                continue
            # a configuration of a server ("zchttpd-gdsf") is drawn as that server
            color, marker, line = style.get(s) or style.get(s.split("-")[0], (None, "x", "-"))
            for ax, key_ in ((a, "rps_median"), (b, "cpu_us_per_req_median")):
                xs = [n for n, e in pts if e.get(key_) is not None]
                ys = [e[key_] for n, e in pts if e.get(key_) is not None]
                ax.plot(xs, ys, linestyle=line, color=color, label=s)
                for x, y in zip(xs, ys):
                    ax.plot([x], [y], marker=marker, color=color,
                            markerfacecolor=color if bound[x] else "none")
        for ax in (a, b):
            ax.set_xticks(ns)
            ax.set_xlabel("workers (server cores)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
        a.set_ylabel("requests/s (median)")
        b.set_ylabel("server CPU us per request")
        a.set_title(title_of(key), fontsize=9)
        a.legend(fontsize=7)
    fig.suptitle(suptitle + "\nhollow: not server-bound (cores shared or client-bound)", fontsize=10)
    fig.tight_layout()
    return figure.save(fig, out_dir, f"{name}.png", dpi)


def hit_ratio_spread(entries):
    """{server: (min, max) of the live hit ratio medians over the worker
    counts}: with one cache for the whole server it does not depend on N."""
    out = {}
    for e in entries:
        if e.get("hit_ratio_median") is not None:
            out.setdefault(e["server"], []).append(e["hit_ratio_median"])
    return {s: (min(v), max(v), statistics.median(v)) for s, v in out.items()}
