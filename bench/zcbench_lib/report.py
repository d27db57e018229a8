"""Results: medians, ratios, CSV/JSON files, PNG figures and text tables.

A result row is one wrk run (MB = 10^6 bytes, Mb = 10^6 bits): {"run",
"size", "size_label", "mode", "server", "requests_per_s", "mbytes_per_s",
"errors", ...}.  summarize() reduces the runs of each (server, size, mode) to
their median and adds, per (size, mode), the ratio of zchttpd's median to
each peer's median, plus the per-run ratios (zchttpd and the peer measured
back to back in the same run): on a shared machine their spread shows how
far the median ratio can be trusted.

Rows may carry "server_cpu_us_per_req" (the server's CPU time per request),
"client_cpu_util" (wrk's CPU use, 1.0 = one core) and "client_waits_per_req"
(how often wrk slept waiting for an answer, per response).  With wrk and the
server on the same two cores, wrk near 1.0 means the client caps requests/s,
so the servers' CPU cost per request is reported beside the throughput:
cpu_ratio = peer's cost / zchttpd's cost (> 1: zchttpd is cheaper).

Client-bound runs (docs/bench-static.md, "The method"): a row whose wrk used more than 80 % of its
core (its "client_bound" field; for rows from before that field, decided
from "client_cpu_util") measured the client.  It is left out of the
medians and of the per-run ratios; a point whose every run was
client-bound keeps the medians of those runs but is marked "client_bound"
(a "*" in the tables, a hollow marker in the figures), and so is every
ratio it enters.  The tables say how many runs were client-bound.
"""
import csv
import json
import os
import statistics

from . import figure
from .cpu import CLIENT_BOUND, row_client_bound
from .docroot import size_label

REFERENCE = "zchttpd"
SERVER_ORDER = ("zchttpd", "nginx", "h2o", "floor", "zchttpd-uring", "floor-uring", "h2floor")

RAW_FIELDS = ["run", "size", "size_label", "mode", "server", "requests", "duration_s",
              "requests_per_s", "mbytes_per_s", "latency_p50_ms", "latency_p99_ms",
              "errors", "socket_errors", "non_2xx_3xx", "server_conns",
              "server_cpu_s", "server_cpu_us_per_req", "server_cpu_util", "throttled_share",
              "client_cpu_util", "client_waits_per_req", "client_bound", "wrk_retries", "client_cpus_busy", "server_cpus_busy", "loadavg1",
              "workers", "server_cores", "wrk_threads", "cores_short"]
SUMMARY_FIELDS = ["mode", "size", "size_label", "server", "runs", "runs_counted", "client_bound_runs",
                  "client_bound", "rps_median", "rps_min", "rps_max", "mbytes_per_s_median",
                  "cpu_us_per_req_median", "cpu_us_per_req_min", "cpu_us_per_req_max",
                  "server_cpu_util_median", "client_cpu_util_median", "errors",
                  "workers", "server_cores", "ratio_vs_nginx", "ratio_vs_h2o", "ratio_vs_floor"]


def median_of(rs, key):
    """Median of the rows' `key` where present; None when no row has it."""
    xs = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def num(x, fmt):
    """x formatted, or "-" for a figure that was not measured."""
    return "-" if x is None else format(x, fmt)


def _range(rs, key):
    xs = [r[key] for r in rs if r.get(key) is not None]
    return (min(xs), max(xs)) if xs else (None, None)


def summarize(rows, reference=REFERENCE):
    """[{size, size_label, mode, server, runs, runs_counted,
    client_bound_runs, client_bound, rps_median, rps_min, rps_max,
    mbytes_per_s_median, cpu_us_per_req_median/min/max, ...}] and
    [{size, size_label, mode, peer, rps_ratio, rps_ratio_runs, mbps_ratio,
    cpu_ratio, client_bound}].  Medians and ranges are over the runs that
    were not client-bound (over all runs when every one was)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["size"], r["mode"], r["server"]), []).append(r)
    summary = []
    for (size, mode, server), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        good = [r for r in rs if not row_client_bound(r)]
        use = good or rs
        rps = [r["requests_per_s"] for r in use]
        mbps = [r["mbytes_per_s"] for r in use]
        cpu_lo, cpu_hi = _range(use, "server_cpu_us_per_req")
        summary.append({
            "size": size, "size_label": rs[0]["size_label"], "mode": mode, "server": server,
            "runs": len(rs), "runs_counted": len(good), "client_bound_runs": len(rs) - len(good),
            "client_bound": not good,
            "rps_median": statistics.median(rps), "rps_min": min(rps),
            "rps_max": max(rps), "mbytes_per_s_median": statistics.median(mbps),
            "errors": sum(r["errors"] for r in rs),
            "cpu_us_per_req_median": median_of(use, "server_cpu_us_per_req"),
            "cpu_us_per_req_min": cpu_lo, "cpu_us_per_req_max": cpu_hi,
            "server_cpu_util_median": median_of(use, "server_cpu_util"),
            "client_cpu_util_median": median_of(use, "client_cpu_util"),
            "client_waits_per_req_median": median_of(use, "client_waits_per_req"),
            "client_cpus_busy_median": median_of(use, "client_cpus_busy"),
            "server_cpus_busy_median": median_of(use, "server_cpus_busy"),
        })
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    ratios = []
    for (size, mode, server), s in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        if server == reference or (size, mode, reference) not in med:
            continue
        ref = med[(size, mode, reference)]
        peer_runs = {r["run"]: r for r in groups[(size, mode, server)]}
        pairs = [(r, peer_runs[r["run"]]) for r in groups[(size, mode, reference)]
                 if r["run"] in peer_runs and peer_runs[r["run"]]["requests_per_s"]]
        counted = [(a, b) for a, b in pairs if not row_client_bound(a) and not row_client_bound(b)]
        runs = sorted((a["run"], a["requests_per_s"] / b["requests_per_s"]) for a, b in (counted or pairs))
        ratios.append({
            "rps_ratio_runs": [x for _, x in runs],
            "size": size, "size_label": s["size_label"], "mode": mode, "peer": server,
            "rps_ratio": ref["rps_median"] / s["rps_median"] if s["rps_median"] else float("inf"),
            "mbps_ratio": (ref["mbytes_per_s_median"] / s["mbytes_per_s_median"]
                           if s["mbytes_per_s_median"] else float("inf")),
            "cpu_ratio": (s["cpu_us_per_req_median"] / ref["cpu_us_per_req_median"]
                          if s.get("cpu_us_per_req_median") and ref.get("cpu_us_per_req_median")
                          else None),
            "client_bound": ref["client_bound"] or s["client_bound"],
        })
    return summary, ratios


def client_bound_count(rows):
    """(client-bound runs, all runs) of a result."""
    return sum(row_client_bound(r) for r in rows), len(rows)


def contention(rows, budget=None, busy=0.9):
    """(client CPU taken, server CPU taken, runs): runs that were not
    client-bound but whose client CPUs were more than `busy` busy (others'
    work on wrk's core), and runs whose server used less than 90 % of its
    budget while its CPU was more than `busy` busy (others' work on the
    server's core).  Rows without the CPU samples count in neither."""
    client = sum(1 for r in rows if not row_client_bound(r) and (r.get("client_cpus_busy") or 0) > busy)
    server = sum(1 for r in rows if budget and r.get("server_cpu_util") is not None
                 and r["server_cpu_util"] < 0.9 * budget and (r.get("server_cpus_busy") or 0) > busy)
    return client, server, len(rows)


def client_bound_note(rows, limit=CLIENT_BOUND, budget=None):
    """One line: how many runs were client-bound and what that means."""
    n, total = client_bound_count(rows)
    by = {}
    for r in rows:
        if row_client_bound(r):
            key = (r.get("mode") or "", r["server"])
            by[key] = by.get(key, 0) + 1
    detail = ", ".join(f"{m} {s} {k}".lstrip() for (m, s), k in sorted(by.items()))
    text = (f"Client-bound runs: {n} of {total} (wrk above {limit:.0%} of its core; left out of "
            f"medians and ratios; * = every run of that point was client-bound)"
            + (f": {detail}" if detail else "") + ".")
    c, srv, _ = contention(rows, budget)
    if any(r.get("client_cpus_busy") is not None for r in rows):
        text += (f"  Other work on the machine: in {c} more runs wrk's core was over 90 % busy "
                 f"(wrk below {limit:.0%}: others used the rest)"
                 + (f"; in {srv} runs the server used under 90 % of its budget while its core was "
                    f"over 90 % busy" if budget else "") + ".")
    return text


def pool(row_sets, reference=REFERENCE):
    """Pool the per-run ratios of several results (each a list of rows):
    [{mode, size, size_label, peer, runs, ratio_median, below_1}], sorted.
    A run pairs the reference and a peer measured back to back; pooling the
    pairs of several sessions says more about a point than any one session's
    median when the per-run spread is as wide as the difference sought."""
    pooled = {}
    for rows in row_sets:
        _, ratios = summarize(rows, reference)
        for r in ratios:
            key = (r["mode"] != "keepalive", r["mode"], r["size"], r["peer"])
            entry = pooled.setdefault(key, {"mode": r["mode"], "size": r["size"],
                                            "size_label": r["size_label"], "peer": r["peer"], "xs": []})
            entry["xs"].extend(r["rps_ratio_runs"])
    out = []
    for _, e in sorted(pooled.items()):
        xs = e.pop("xs")
        if xs:
            out.append({**e, "runs": len(xs), "ratio_median": statistics.median(xs),
                        "ratio_min": min(xs), "ratio_max": max(xs), "below_1": sum(x < 1.0 for x in xs)})
    return out


def pool_table(pooled, reference=REFERENCE):
    """Markdown: one line per (mode, size, peer) of pool()."""
    head = ["mode", "size", "peer", "paired runs", f"{reference}/peer median (range)", "runs below 1.0"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in pooled:
        out.append(f"| {p['mode']} | {p['size_label']} | {p['peer']} | {p['runs']} | "
                   f"{p['ratio_median']:.2f} ({p['ratio_min']:.2f}-{p['ratio_max']:.2f}) | {p['below_1']} |")
    return "\n".join(out)


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def write_all(out_dir, meta, rows, summary, ratios, reference=REFERENCE, peers=SERVER_ORDER[1:]):
    """results.csv (every run), summary.csv (medians + ratios of the
    reference's median to each peer's), results.json (all)."""
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "results.csv"), rows, RAW_FIELDS)
    srows = []
    rmap = {(r["size"], r["mode"], r.get("workers"), r["peer"]): r for r in ratios}
    for s in summary:
        row = dict(s)
        for peer in peers:
            r = rmap.get((s["size"], s["mode"], s.get("workers"), peer))
            if s["server"] == reference and r:
                row[f"ratio_vs_{peer}"] = r["rps_ratio"]
        srows.append(row)
    fields = SUMMARY_FIELDS[:-3] + [f"ratio_vs_{p}" for p in peers]
    write_csv(os.path.join(out_dir, "summary.csv"), srows, fields)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows, "summary": summary, "ratios": ratios}, f, indent=1)
        f.write("\n")


def _ratio_cell(r):
    """"1.23" or, with several runs, "1.23 (0.91-1.59)": the per-run range;
    "*" when a side of it was client-bound in every run."""
    cell = f"{r['rps_ratio']:.2f}"
    runs = r.get("rps_ratio_runs") or []
    if len(runs) > 1:
        cell += f" ({min(runs):.2f}-{max(runs):.2f})"
    return cell + ("*" if r.get("client_bound") else "")


def _star(s):
    return "*" if s.get("client_bound") else ""


def table(summary, ratios, servers, rows=None, budget=None, reference=REFERENCE):
    """A Markdown table per mode: req/s and MB/s medians per server and
    the reference's ratios (of the medians; per-run range in parentheses);
    with rows, a line saying how many runs were client-bound."""
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    rat = {(r["size"], r["mode"], r["peer"]): r for r in ratios}
    peers = [p for p in servers if p != reference]
    out = []
    for mode in sorted({s["mode"] for s in summary}, key=lambda m: (m != "keepalive", m)):
        head = ["size"] + [f"{s} req/s" for s in servers] + [f"{s} MB/s" for s in servers]
        if reference in servers:
            head += [f"{reference}/{p}" for p in peers]
        out.append(f"**{mode}**\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for size in sorted({s["size"] for s in summary if s["mode"] == mode}):
            label = next(s["size_label"] for s in summary if s["size"] == size)
            cells = [label]
            cells += [f"{med[(size, mode, s)]['rps_median']:,.0f}{_star(med[(size, mode, s)])}"
                      if (size, mode, s) in med else "-" for s in servers]
            cells += [f"{med[(size, mode, s)]['mbytes_per_s_median']:,.1f}" if (size, mode, s) in med else "-"
                      for s in servers]
            if reference in servers:
                cells += [_ratio_cell(rat[(size, mode, p)]) if (size, mode, p) in rat else "-" for p in peers]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if rows is not None:
        out.append(client_bound_note(rows, budget=budget))
        out.append("")
    cpu = cpu_table(summary, ratios, servers, reference)
    if cpu:
        out.append(cpu)
    return "\n".join(out)


def cpu_table(summary, ratios, servers, reference=REFERENCE):
    """Server CPU microseconds per request (median), the server's CPU use
    (1.00 = one CPU; near the budget: the server was the limit) when
    measured, wrk's CPU use, and the peers' cost relative to zchttpd's; ""
    when the rows have no CPU data."""
    if not any(s.get("cpu_us_per_req_median") for s in summary):
        return ""
    med = {(s["size"], s["mode"], s["server"]): s for s in summary}
    rat = {(r["size"], r["mode"], r["peer"]): r for r in ratios}
    peers = [p for p in servers if p != reference]

    out = []
    for mode in sorted({s["mode"] for s in summary}, key=lambda m: (m != "keepalive", m)):
        here = [s for s in summary if s["mode"] == mode]
        waits = any(s.get("client_waits_per_req_median") is not None for s in here)
        util = any(s.get("server_cpu_util_median") is not None for s in here)
        head = (["size"] + [f"{s} CPU us/req" for s in servers] +
                ([f"{s} CPU used" for s in servers] if util else []) +
                [f"wrk CPU ({s})" for s in servers] +
                ([f"wrk waits/req ({s})" for s in servers] if waits else []))
        if reference in servers:
            head += [f"{p}/{reference} CPU" for p in peers]
        out.append(f"**{mode}: server CPU per request** ("
                   + ("server CPU used: 1.00 = one CPU; " if util else "")
                   + "wrk CPU: 1.00 = one core busy"
                   + ("; wrk waits: times wrk slept for an answer, per response" if waits else "") + ")\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for size in sorted({s["size"] for s in here}):
            label = next(s["size_label"] for s in summary if s["size"] == size)
            row = [med.get((size, mode, s), {}) for s in servers]
            cells = [label] + [num(r.get("cpu_us_per_req_median"), ".1f") for r in row]
            if util:
                cells += [num(r.get("server_cpu_util_median"), ".2f") for r in row]
            cells += [num(r.get("client_cpu_util_median"), ".2f") for r in row]
            if waits:
                cells += [num(r.get("client_waits_per_req_median"), ".2f") for r in row]
            if reference in servers:
                cells += [num(rat.get((size, mode, p), {}).get("cpu_ratio"), ".2f") for p in peers]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


STYLE = {"zchttpd": ("tab:red", "o", "-"), "nginx": ("tab:green", "s", "-"),
          "h2o": ("tab:blue", "^", "-"), "floor": ("dimgray", "D", "--"),
          "zchttpd-uring": ("tab:orange", "o", "-."), "floor-uring": ("black", "D", ":"),
          "h2floor": ("gray", "D", ":")}


def plot(out_dir, summary, servers, dpi=80, note="", what="static", style=None, suffix=""):
    """One PNG per mode (IO-Lite Figures 3/4): x = file size; left panel
    throughput in Mb/s, right panel requests/s; one line per server (the
    floor dashed); a point whose every run was client-bound has a hollow
    marker.  note goes under the title (the CPU budget); suffix ends the
    file names (a worker count's "-w4").  Returns the paths written."""
    plt = figure.pyplot()

    paths = []
    titles = {"keepalive": "persistent connections (HTTP/1.1 keep-alive)",
              "close": "one request per connection (Connection: close)"}
    for mode in sorted({s["mode"] for s in summary}):
        fig, (ax_bw, ax_rps) = plt.subplots(1, 2, figsize=(10, 4))
        any_cb = False
        for server in servers:
            pts = sorted((s["size"], s) for s in summary if s["mode"] == mode and s["server"] == server)
            if not pts:
                continue
            xs = [p[0] / 1024 for p in pts]
            color, marker, line = (style or STYLE).get(server, (None, "x", "-"))
            for ax, ys in ((ax_bw, [p[1]["mbytes_per_s_median"] * 8 for p in pts]),
                           (ax_rps, [p[1]["rps_median"] for p in pts])):
                ax.plot(xs, ys, linestyle=line, color=color, label=server)
                for x, y, (_, s) in zip(xs, ys, pts):
                    any_cb |= bool(s.get("client_bound"))
                    ax.plot([x], [y], marker=marker, color=color,
                            markerfacecolor="none" if s.get("client_bound") else color)
        ax_bw.set_ylabel("throughput (Mb/s)")
        ax_rps.set_ylabel("requests/s")
        # The paper's axis is linear up to 200 KB; a log axis keeps the small
        # files (where servers differ most) readable.
        sizes = sorted({s["size"] for s in summary if s["mode"] == mode})
        for ax in (ax_bw, ax_rps):
            ax.set_xscale("log")
            ax.set_xticks([n / 1024 for n in sizes])
            ax.set_xticklabels([size_label(n) for n in sizes])
            ax.minorticks_off()
            ax.set_xlabel("document size (bytes; k = 1024), log scale")
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
            ax.legend()
        sub = note + ("; hollow: every run client-bound" if any_cb else "")
        fig.suptitle(f"zcbench {what}: {titles.get(mode, mode)}, median of runs"
                     + (f"\n{sub}" if sub else ""), fontsize=11)
        paths.append(figure.save(fig, out_dir, f"{what}-{mode}{suffix}.png", dpi))
    return paths


def budget_note(meta):
    """"server budget 0.5 CPU per server core (cgroup quota), wrk on the other core(s)" or the
    unconstrained method's note, from a result's meta."""
    b = (meta or {}).get("budget")
    if not b:
        return "no CPU budget (before the server-bound method)"
    if not b.get("server_cpu"):
        return "no CPU budget (--server-cpu 0)"
    return f"server budget {b['server_cpu']:g} CPU per server core (cgroup quota), wrk on the other core(s)"
