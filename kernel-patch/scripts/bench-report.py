#!/usr/bin/env python3
"""bench-report.py - the tables and out/bench.json of `make -C kernel-patch
bench`, from the guest's console lines (out/bench.txt):

  IPC-RATIOS backend=B transport=T rc=N {zcbench-ipc --json}
  IPC-COUNTERS backend=B transport=T block=K case=C rc=N by_reference=X copied=Y
  BENCH-JSON {one run of zcb_csum or zcb_fwd}
  INFO bench: ...

Every figure is a median over the runs with the runs' range beside it.
Under TCG the tables say that the figures mean nothing.
"""
import argparse
import json
import re
import statistics
import sys

GB = 1e9


# zcbench-ipc prints a rate as inf (or nan) when a run took less than its
# clock's resolution (tiny TCG sizes): not JSON; such a figure is null.
NONFINITE = re.compile(r'(?<=[:\[,])-?(?:inf|nan)(?=[,\]}])')


def load(text):
    return json.loads(NONFINITE.sub("null", text))


def parse(lines):
    out = {"ipc": [], "ipc_counters": [], "csum": [], "forward": [],
           "info": []}
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("IPC-RATIOS "):
            head, _, body = line.partition(" {")
            fields = dict(kv.split("=", 1) for kv in head.split()[1:])
            rec = load("{" + body) if body else {}
            rec["rc"] = int(fields.get("rc", 1))
            out["ipc"].append(rec)
        elif line.startswith("IPC-COUNTERS "):
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            for k in ("rc", "by_reference", "copied"):
                fields[k] = int(fields[k])
            out["ipc_counters"].append(fields)
        elif line.startswith("BENCH-JSON "):
            rec = load(line[len("BENCH-JSON "):])
            out[rec.pop("bench")].append(rec)
        elif line.startswith("INFO bench"):
            out["info"].append(line[len("INFO "):])
    return out


def med_range(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    m = statistics.median(values)
    if len(values) == 1:
        return fmt % m
    return (fmt + " (" + fmt + "-" + fmt + ")") % (m, min(values), max(values))


def per_gb(runs, key):
    return [r[key] / (r["bytes"] / GB) for r in runs if r["bytes"] > 0]


def mbps(runs):
    return [r["bytes"] / r["wall_s"] / 1e6 for r in runs if r["wall_s"] > 0]


def by_case(runs):
    cases = {}
    for r in runs:
        cases.setdefault(r["case"], []).append(r)
    return cases


def summarize(runs, extra=None):
    rows = []
    for case, rs in by_case(runs).items():
        row = {
            "case": case,
            "runs": len(rs),
            "ok": all(r["ok"] for r in rs),
            "bytes_per_run": rs[0]["bytes"],
            "all_cpu_s_per_gb": statistics.median(per_gb(rs, "all_cpu_s")),
            "proc_cpu_s_per_gb": statistics.median(per_gb(rs, "proc_cpu_s")),
            "mb_per_s": statistics.median(mbps(rs)) if mbps(rs) else None,
        }
        if extra:
            row.update(extra(rs))
        rows.append(row)
    return rows


def csum_extra(rs):
    comp = sum(r["csum_computed"] for r in rs)
    cached = sum(r["csum_cached"] for r in rs)
    return {"csum_cached_fraction": cached / (comp + cached) if comp + cached
            else 0.0}


def table(title, header, rows):
    print(title)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for r in [header] + rows:
        print("  " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accel", required=True, choices=("tcg", "kvm"))
    ap.add_argument("--json", required=True)
    ap.add_argument("log")
    a = ap.parse_args()
    with open(a.log) as f:
        data = parse(f)
    data["accel"] = a.accel
    data["tcg_smoke_test"] = a.accel == "tcg"
    data["csum_summary"] = summarize(data["csum"], csum_extra)
    data["forward_summary"] = summarize(data["forward"])

    note = ("TCG emulation: a smoke test with small sizes -- these figures "
            "mean nothing" if a.accel == "tcg" else "KVM")
    print("bench: %s; median (min-max) over the runs" % note)
    for i in data["info"]:
        print("  " + i)
    print()

    rows = []
    for rec in data["ipc"]:
        for c in rec.get("cases", []):
            rows.append([rec.get("backend", "?"), rec.get("transport", "?"),
                         "%d KiB" % (rec.get("block", 0) // 1024),
                         "(%s) %s" % (c["id"], c["name"]),
                         med_range(c["runs_mbps"], "%.0f"),
                         "%.2fx" % c["ratio_vs_b"] if c["ratio_vs_b"]
                         else "-"])
    table("IPC (zcbench-ipc), MB/s", ["backend", "transport", "block",
                                      "case", "MB/s", "vs (b)"], rows)

    rows = []
    for case, rs in by_case(data["csum"]).items():
        s = next(x for x in data["csum_summary"] if x["case"] == case)
        rows.append([case, med_range(per_gb(rs, "all_cpu_s"), "%.3f"),
                     med_range(per_gb(rs, "proc_cpu_s"), "%.3f"),
                     med_range(mbps(rs), "%.0f"),
                     "%.0f %%" % (100 * s["csum_cached_fraction"]),
                     "ok" if s["ok"] else "LOST BYTES"])
    table("Checksum caching over veth, tx checksumming off: CPU s per GB sent",
          ["case", "all CPUs", "sender", "MB/s", "sums cached", "bytes"],
          rows)

    rows = []
    for case, rs in by_case(data["forward"]).items():
        ok = all(r["ok"] for r in rs)
        rows.append([case, med_range(per_gb(rs, "proc_cpu_s"), "%.3f"),
                     med_range(per_gb(rs, "all_cpu_s"), "%.3f"),
                     med_range(mbps(rs), "%.0f"),
                     "ok" if ok else "LOST BYTES"])
    table("Forwarding to a TCP socket (loopback): CPU s per GB",
          ["case", "forwarder", "all CPUs", "MB/s", "bytes"], rows)

    with open(a.json, "w") as f:
        json.dump(data, f, indent=1)
    print("bench: wrote %s" % a.json)
    if not data["ipc"] or not data["csum"] or not data["forward"]:
        print("bench: a table is empty (see the guest log)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
