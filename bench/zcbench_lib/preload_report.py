"""`zcbench preload` results: medians, ratios against the bars, CSV/JSON, the
figure and the Markdown table.

A row is one measurement: {"run", "workload", "mode" ("plain"|"preload"),
"unit", "rate" (higher is better), "seconds", ...}; preload rows also carry
the statistics of that measurement ("<conv>_seen", "<conv>_converted",
"<conv>_bytes", "processes").

summarize() gives per workload the median rate of each mode, the ratio
preload/plain of the medians, the per-run ratios (the two modes of one run
were measured back to back, so their spread shows how far the median ratio
can be trusted on a shared machine), the bar and whether the ratio meets
it, and the mean statistics of the preload runs.

Server workloads (Apache) mark a run "client_bound" when wrk used more
than 80 % of its core (cpu.py): such runs are left out of the medians and
of the per-run ratios (all runs are used, and the workload is marked, when
every run of a mode was client-bound).
"""
import json
import os
import statistics

from . import figure
from .cpu import row_client_bound
from .preload_stats import CONVERSIONS
from .report import median_of, num, write_csv

RAW_FIELDS = (["run", "workload", "mode", "unit", "rate", "seconds", "cpu_s", "mbytes_per_s",
               "requests", "errors", "server_cpu_us_per_req", "server_cpu_util", "throttled_share",
               "client_cpu_util", "client_bound", "processes", "cached_before"] +
              [f"{c}_{k}" for c in CONVERSIONS for k in ("seen", "converted", "bytes")])
# Server workloads (Apache): the server's CPU per request and wrk's CPU use
# (1.0 = one core), medians per mode.  wrk near 1.0 means the client, not
# the server, limits requests/s: the preload can only lower the server side.
CPU_FIELDS = [f"{m}_{k}" for k in ("server_cpu_us", "server_cpu_used", "client_cpu")
              for m in ("plain", "preload")] + ["client_bound_runs", "client_bound"]
SUMMARY_FIELDS = ["workload", "class", "unit", "runs", "plain_median", "preload_median", "ratio",
                  "ratio_min", "ratio_max", "bar", "meets"] + CPU_FIELDS + \
                 [f"{c}_converted_per_run" for c in CONVERSIONS] + \
                 [f"{c}_seen_per_run" for c in CONVERSIONS] + \
                 [f"{c}_mbytes_per_run" for c in CONVERSIONS]


def summarize(rows, bars, classes=None, order=None):
    """[{workload, class, unit, runs, plain_median, preload_median, ratio,
    plain_runs, preload_runs (every rate), ratio_runs, ratio_min, ratio_max, bar, meets, <conv>_converted_per_run,
    <conv>_seen_per_run, <conv>_mbytes_per_run}], in `order` (default: first
    appearance)."""
    classes = classes or {}
    names = order or list(dict.fromkeys(r["workload"] for r in rows))
    out = []
    for name in names:
        rs = [r for r in rows if r["workload"] == name]
        if not rs:
            continue
        by_mode = {m: {r["run"]: r for r in rs if r["mode"] == m} for m in ("plain", "preload")}
        # the runs that count: not client-bound (all of a mode's when none is left)
        counted = {m: ({k: r for k, r in by_mode[m].items() if not row_client_bound(r)} or by_mode[m])
                   for m in by_mode}
        plain = [r["rate"] for r in counted["plain"].values()]
        pre = [r["rate"] for r in counted["preload"].values()]
        pm = statistics.median(plain) if plain else None
        qm = statistics.median(pre) if pre else None
        ratio = qm / pm if pm and qm is not None else None
        runs = sorted(set(by_mode["plain"]) & set(by_mode["preload"]))
        good = [k for k in runs if k in counted["plain"] and k in counted["preload"]] or runs
        ratio_runs = [by_mode["preload"][k]["rate"] / by_mode["plain"][k]["rate"]
                      for k in good if by_mode["plain"][k]["rate"]]
        n_cb = sum(row_client_bound(r) for r in rs)
        bar = bars.get(name)
        s = {"workload": name, "class": classes.get(name, ""), "unit": rs[0].get("unit", ""),
             "runs": len(runs), "plain_median": pm, "preload_median": qm, "ratio": ratio,
             "plain_runs": plain, "preload_runs": pre,
             "ratio_runs": ratio_runs, "ratio_min": min(ratio_runs) if ratio_runs else None,
             "ratio_max": max(ratio_runs) if ratio_runs else None, "bar": bar,
             "meets": (ratio >= bar) if ratio is not None and bar is not None else None,
             "client_bound_runs": n_cb,
             "client_bound": any(by_mode[m] and all(row_client_bound(r) for r in by_mode[m].values())
                                 for m in by_mode)}
        for m in ("plain", "preload"):
            for key, field in (("server_cpu_us", "server_cpu_us_per_req"),
                               ("server_cpu_used", "server_cpu_util"), ("client_cpu", "client_cpu_util")):
                s[f"{m}_{key}"] = median_of(counted[m].values(), field)
        prs = list(by_mode["preload"].values())
        for c in CONVERSIONS:
            for key, field, scale in (("converted_per_run", "converted", 1), ("seen_per_run", "seen", 1),
                                      ("mbytes_per_run", "bytes", 1e6)):
                xs = [r.get(f"{c}_{field}") for r in prs if r.get(f"{c}_{field}") is not None]
                s[f"{c}_{key}"] = (sum(xs) / len(xs) / scale) if xs else None
        out.append(s)
    return out


def fired(s):
    """"forward 8192/8192 (1073.7 MB), pipe 2/3": converted/seen per run and
    MB moved without a copy, for the conversions that saw anything."""
    parts = []
    for c in CONVERSIONS:
        seen, conv = s.get(f"{c}_seen_per_run"), s.get(f"{c}_converted_per_run")
        if not seen and not conv:
            continue
        mb = s.get(f"{c}_mbytes_per_run") or 0
        parts.append(f"{c} {_n(conv)}/{_n(seen)}" + (f" ({mb:,.1f} MB)" if mb else ""))
    return ", ".join(parts) or "nothing"


def _n(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 or float(x).is_integer() else f"{x:,.1f}"


def _rate(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 1000 else f"{x:,.1f}"


def table(summary):
    """The Markdown results table: one line per workload."""
    head = ["workload", "class", "unit", "without", "with preload", "ratio (per-run range)", "bar",
            "verdict", "converted/seen per run (MB without copy)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summary:
        ratio = "-" if s["ratio"] is None else f"{s['ratio']:.3f}"
        if s["ratio_runs"] and len(s["ratio_runs"]) > 1:
            ratio += f" ({s['ratio_min']:.3f}-{s['ratio_max']:.3f})"
        if s.get("client_bound"):
            ratio += "*"
        verdict = {True: "meets", False: "MISSES", None: "-"}[s["meets"]]
        out.append("| " + " | ".join([
            s["workload"], s["class"], s["unit"], _rate(s["plain_median"]), _rate(s["preload_median"]),
            ratio, f">= {s['bar']:.2f}" if s["bar"] is not None else "-", verdict, fired(s)]) + " |")
    return "\n".join(out + cpu_table(summary))


def cpu_table(summary):
    """Lines of the CPU table for the workloads with a server (none: [])."""
    rows = [s for s in summary if s.get("plain_server_cpu_us") is not None
            or s.get("preload_server_cpu_us") is not None]
    if not rows:
        return []
    used = any(s.get(f"{m}_server_cpu_used") is not None for s in rows for m in ("plain", "preload"))
    head = ["workload", "server CPU us/req without", "with preload", "without/with",
            "wrk CPU without", "wrk CPU with"] + \
        (["server CPU used without", "with", "client-bound runs"] if used else [])
    out = ["", "Server workloads: server CPU time per request and wrk's CPU use (1.00 = one core"
           " busy: the client, not the server, limits requests/s; a run above 0.80 is"
           " client-bound and left out of the medians; * = every run of a mode was).", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in rows:
        a, b = s.get("plain_server_cpu_us"), s.get("preload_server_cpu_us")
        cells = [s["workload"], num(a, ".1f"), num(b, ".1f"), num(a / b if a and b else None, ".2f"),
                 num(s.get("plain_client_cpu"), ".2f"), num(s.get("preload_client_cpu"), ".2f")]
        if used:
            cells += [num(s.get("plain_server_cpu_used"), ".2f"), num(s.get("preload_server_cpu_used"), ".2f"),
                      f"{s.get('client_bound_runs', 0)} of {2 * s['runs']}"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def write_all(out_dir, meta, rows, summary):
    """results.csv (every measurement), summary.csv, results.json (all)."""
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "results.csv"), rows, RAW_FIELDS)
    write_csv(os.path.join(out_dir, "summary.csv"), summary, SUMMARY_FIELDS)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows, "summary": summary}, f, indent=1)
        f.write("\n")


def plot(out_dir, summary, dpi=80):
    """preload-ratios.png: per workload the preload/plain ratio of the
    medians (bar), the per-run ratios (dots), the workload's bar (a blue
    tick) and a line at 1.0; and preload-rates.png (plot_rates).  Returns
    both paths."""
    plt = figure.pyplot()

    ss = [s for s in summary if s["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    xs = range(len(ss))
    colors = ["tab:green" if s["meets"] else "tab:red" for s in ss]
    ax.bar(xs, [s["ratio"] for s in ss], color=colors, alpha=0.55, width=0.6,
           label="median ratio (green: meets its bar, red: misses)")
    for x, s in zip(xs, ss):
        ax.plot([x] * len(s["ratio_runs"]), s["ratio_runs"], "k.", markersize=5,
                label="per-run ratio" if x == 0 else None)
        if s["bar"] is not None:
            ax.plot([x - 0.35, x + 0.35], [s["bar"]] * 2, color="tab:blue", linewidth=2,
                    label="bar (never >3% slower)" if x == 0 else None)
        ax.annotate(f"{s['ratio']:.2f}", (x, s["ratio"]), textcoords="offset points", xytext=(0, 4),
                    ha="center", fontsize=9)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{s['workload']}\n{s['class'].split(')')[0] + ')' if s['class'] else ''}"
                        for s in ss])
    ax.set_ylabel("rate with preload / without (higher is better)")
    top = max([1.4] + [max(s["ratio_runs"] or [s["ratio"]]) for s in ss] + [s["ratio"] for s in ss])
    lo = min([0.9] + [min(s["ratio_runs"] or [s["ratio"]]) for s in ss])
    ax.set_ylim(max(0, lo - 0.05), top * 1.08)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("zcbench preload: unmodified programs under libzc-preload.so, median of runs")
    path = figure.save(fig, out_dir, "preload-ratios.png", dpi)
    return [path, plot_rates(out_dir, summary, plt, dpi)]


def plot_rates(out_dir, summary, plt, dpi):
    """preload-rates.png: one panel per workload, the rate of every run
    without and with the preload (dots) and their medians (bars), in the
    workload's own unit."""
    ss = [s for s in summary if s["plain_median"] is not None or s["preload_median"] is not None]
    cols = min(3, max(1, len(ss)))
    rows = (len(ss) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.9 * rows), squeeze=False)
    for ax, s in zip([a for r in axes for a in r], ss):
        for x, (mode, color) in enumerate((("plain", "tab:gray"), ("preload", "tab:orange"))):
            med = s[f"{mode}_median"]
            if med is None:
                continue
            ax.bar(x, med, color=color, alpha=0.6, width=0.6)
            runs = s.get(f"{mode}_runs") or []
            ax.plot([x] * len(runs), runs, "k.", markersize=4)
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["without", "with preload"])
        ax.set_title(f"{s['workload']} {s['class'].split(')')[0] + ')' if s['class'] else ''}", fontsize=10)
        ax.set_ylabel(s["unit"], fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in [a for r in axes for a in r][len(ss):]:
        ax.axis("off")
    fig.suptitle("zcbench preload: rate of every run (dots) and median (bar)", fontsize=11)
    return figure.save(fig, out_dir, "preload-rates.png", dpi)
