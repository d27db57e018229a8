"""`zcbench streamline`: Streamline's (seed 004) Figures 11 and 16 today.

Figure 11 (section 9.1, "Unix primitives"): write-then-read throughput
through a pipe against block size.  The paper compares a Linux pipe
('posix'), Streamline buffers (4x faster for large blocks, 9x for small)
and two threads on shared memory ('Pthreads', 5x-12x, the upper bound).
Here, all from build/bench/zcbench-ipc (the sender writes every byte of a
block, the receiver reads and checks every byte):

  pipe            (a) write/read over a Linux pipe
  pipe+preload    the same binary and case under zcrun (libzc-preload.so)
  channel-full    (c) libzc channel, cs_write/cs_read, both sides map and touch
  channel-nomap   (e) libzc channel, cs_write/cs_read, neither maps
  shm-ring        (f) two processes on a 1 MiB shared ring, no system calls

Figure 16 (section 9.2.4): dd copying a cached file at increasing bs,
file to file (the paper: Streamline +3.8-23 %, +14 % at the best bs) and,
as the issue asks, through a pipe (dd | dd), each plainly and under zcrun.
"""
import filecmp
import json
import os
import sys

from . import figure
from . import papers
from .preload import clean_env, preload_paths

FIG11_SERIES = ("pipe", "pipe+preload", "channel-full", "channel-nomap", "shm-ring")
FIG11_CASE = {"pipe": "a", "channel-full": "c", "channel-nomap": "e", "shm-ring": "f"}
FIG16_SERIES = ("dd-file", "dd-file+preload", "dd-pipe", "dd-pipe+preload")
FIG11_BLOCKS_PER_POINT = 1 << 17

# The paper's ratios to a Linux pipe (Figure 11: small / large blocks) and
# Figure 16's gain of splicing dd over copying.
PAPER = {
    "pipe": "1x (posix)",
    "pipe+preload": "4x-9x (legacy pipes on Streamline buffers)",
    "channel-full": "4x (large) - 9x (small blocks), Streamline 1 MB buffer",
    "channel-nomap": "- (not in Figure 11; peek() without copies)",
    "shm-ring": "5x (large) - 12x (small), Pthreads 1 MB ring",
    "dd-file": "1x (Linux page cache)",
    "dd-file+preload": "1.04x-1.23x, 1.14x at the best bs (Streamline splice)",
    "dd-pipe": "- (not in the paper)",
    "dd-pipe+preload": "- (not in the paper)",
}

ROW_FIELDS = ["run", "figure", "series", "block", "bytes", "mbps", "bytes_ok"]
SUMMARY_FIELDS = ["figure", "series", "block", "runs", "mbps", "ratio", "ratio_min", "ratio_max", "paper"]


def parse_size(text):
    from .preload_cli import parse_size as ps
    import argparse
    try:
        return ps(text)
    except argparse.ArgumentTypeError as e:
        raise ValueError(str(e))


def parse_opts(a):
    a.figures = [f.strip() for f in a.figures.split(",") if f.strip()]
    if not a.figures or any(f not in ("11", "16") for f in a.figures):
        raise ValueError("--figures: 11, 16 or 11,16")
    a.blocks = [parse_size(b) for b in a.blocks.split(",") if b.strip()]
    a.dd_blocks = [parse_size(b) for b in a.dd_blocks.split(",") if b.strip()]
    if any(b < 64 or b % 8 for b in a.blocks):
        raise ValueError("--blocks: multiples of 8 from 64")


def fig11_bytes(block, max_bytes):
    n = min(max_bytes, block * FIG11_BLOCKS_PER_POINT)
    return max(block, n // block * block)


def ipc_json(argv, env):
    p = papers.run(argv, env=env)
    try:
        return json.loads(p.out)
    except ValueError:
        raise papers.PaperBenchError(f"zcbench-ipc printed no JSON: {p.out[-500:]!r}")


def fig11_point(run_no, block, nbytes, ipc, zcrun, env, order):
    """One run at one block size: zcbench-ipc with (a),(c),(e),(f), and (a)
    under zcrun, in `order`.  zcbench-ipc exits non-zero (an error here)
    when any block arrived wrong."""
    base = [ipc, "--json", "--runs", "1", "--block", str(block), "--bytes", str(nbytes)]
    rows = []
    for which in order:
        if which == "plain":
            res = ipc_json(base + ["--cases", "a,c,e,f"], env)
            by = {c["id"]: c["median_mbps"] for c in res["cases"]}
            for s, cid in FIG11_CASE.items():
                rows.append({"series": s, "mbps": by[cid]})
        else:
            res = ipc_json([zcrun, "--", *base, "--cases", "a"], env)
            rows.append({"series": "pipe+preload", "mbps": res["cases"][0]["median_mbps"]})
    for r in rows:
        r.update({"run": run_no, "figure": "11", "block": block, "bytes": nbytes, "bytes_ok": True})
    return rows


def dd_argv(series, src, dst, bs, zcrun):
    if series.startswith("dd-file"):
        argv = ["dd", f"if={src}", f"of={dst}", f"bs={bs}", "status=none"]
    else:
        argv = ["sh", "-c", f'dd if="$1" bs={bs} status=none | dd of="$2" bs={bs} status=none',
                "sh", src, dst]
    return [zcrun, "--", *argv] if series.endswith("+preload") else argv


def fig16_point(run_no, bs, src, dst, size, zcrun, env, order, check):
    rows = []
    for series in order:
        papers.warm_file(src)
        try:
            os.unlink(dst)
        except FileNotFoundError:
            pass
        p = papers.run(dd_argv(series, src, dst, bs, zcrun), env=env)
        ok = os.path.getsize(dst) == size and (not check or filecmp.cmp(src, dst, shallow=False))
        rows.append({"run": run_no, "figure": "16", "series": series, "block": bs, "bytes": size,
                     "mbps": size / p.elapsed / 1e6, "bytes_ok": ok})
    try:
        os.unlink(dst)
    except FileNotFoundError:
        pass
    return rows


def rotate(items, k):
    items = list(items)
    k %= len(items)
    return items[k:] + items[:k]


def measure(a, ipc, zcrun, log):
    env = clean_env()
    rows = []
    src = dst = None
    if "16" in a.figures:
        os.makedirs(a.workdir, exist_ok=True)
        src = os.path.join(a.workdir, f"streamline-dd-{os.getpid()}.in")
        out_dir = a.dd_out_dir if os.path.isdir(a.dd_out_dir or "") else a.workdir
        dst = os.path.join(out_dir, f"streamline-dd-{os.getpid()}.out")
        papers.make_file(src, a.dd_size)
    try:
        for r in range(1, a.runs + 1):
            if "11" in a.figures:
                for b in a.blocks:
                    rows += fig11_point(r, b, fig11_bytes(b, a.max_bytes), ipc, zcrun, env,
                                        rotate(("plain", "preload"), r - 1))
            if "16" in a.figures:
                for bs in a.dd_blocks:
                    rows += fig16_point(r, bs, src, dst, a.dd_size, zcrun, env,
                                        rotate(FIG16_SERIES, r - 1), check=(r == 1))
            log(f"run {r}/{a.runs} done")
    finally:
        for f in (src, dst):
            if f:
                try:
                    os.unlink(f)
                except OSError:
                    pass
    return rows


def summarize(rows):
    out = []
    for fig, series_list, base in (("11", FIG11_SERIES, "pipe"), ("16", FIG16_SERIES, None)):
        fr = [x for x in rows if x["figure"] == fig]
        for series in series_list:
            for block in sorted({x["block"] for x in fr}):
                rs = [x for x in fr if x["series"] == series and x["block"] == block]
                if not rs:
                    continue
                # the baseline: Figure 11 the pipe, Figure 16 the same dd without preload
                bname = base or series.replace("+preload", "")
                bs = {x["run"]: x["mbps"] for x in fr if x["series"] == bname and x["block"] == block}
                per_run = [x["mbps"] / bs[x["run"]] for x in rs if bs.get(x["run"])]
                m = papers.med([x["mbps"] for x in rs])
                mb = papers.med(list(bs.values()))
                out.append({"figure": fig, "series": series, "block": block, "runs": len(rs), "mbps": m,
                            "ratio": m / mb if m and mb else None,
                            "ratio_min": min(per_run) if per_run else None,
                            "ratio_max": max(per_run) if per_run else None,
                            "paper": PAPER[series]})
    return out


def human(n):
    for unit, sh in (("M", 20), ("k", 10)):
        if n >= 1 << sh and n % (1 << sh) == 0:
            return f"{n >> sh}{unit}"
    return str(n)


def table_text(summary, meta):
    parts = []
    for fig, title, base in (("11", "Figure 11: write-then-read through a pipe vs block size (MB/s)", "pipe"),
                             ("16", "Figure 16: dd of a cached file at bs (MB/s)", None)):
        ss = [s for s in summary if s["figure"] == fig]
        if not ss:
            continue
        blocks = sorted({s["block"] for s in ss})
        series = list(dict.fromkeys(s["series"] for s in ss))
        by = {(s["series"], s["block"]): s for s in ss}
        hdr = "| series | " + " | ".join(human(b) for b in blocks) + " | paper |"
        lines = [f"zcbench streamline {title}, median of {meta['runs']} runs; "
                 f"(ratio) = vs {'the pipe' if base else 'the same dd without the preload'}", "",
                 hdr, "|" + "---|" * (len(blocks) + 2)]
        for se in series:
            cells = []
            for b in blocks:
                s = by.get((se, b))
                cells.append("-" if not s or s["mbps"] is None else
                             f"{s['mbps']:,.0f} ({s['ratio']:.2f}x)" if s["ratio"] else f"{s['mbps']:,.0f}")
            lines.append(f"| {se} | " + " | ".join(cells) + f" | {PAPER[se]} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def plot(out, summary, dpi=80):
    plt = figure.pyplot()

    paths = []
    for fig_id, title, ylog in (("11", "Streamline Fig. 11 today: write+read through a pipe", True),
                                ("16", "Streamline Fig. 16 today: dd of a cached file", False)):
        ss = [s for s in summary if s["figure"] == fig_id]
        if not ss:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for se in dict.fromkeys(s["series"] for s in ss):
            pts = sorted((s["block"], s["mbps"]) for s in ss if s["series"] == se and s["mbps"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=se)
        ax.set_xscale("log", base=2)
        if ylog:
            ax.set_yscale("log")
        blocks = sorted({s["block"] for s in ss})
        ax.set_xticks(blocks)
        ax.set_xticklabels([human(b) for b in blocks])
        ax.set_xlabel("block size (bytes)" if fig_id == "11" else "dd bs (bytes)")
        ax.set_ylabel("MB/s (median)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        paths.append(figure.save(fig, out, f"streamline-fig{fig_id}.png", dpi))
    return paths


def run(a, log=lambda m: print(f"zcbench streamline: {m}", file=sys.stderr, flush=True)):
    ipc = papers.binary("bench", "zcbench-ipc")
    so, zcrun = preload_paths()
    if not (os.access(so, os.R_OK) and os.access(zcrun, os.X_OK)):
        raise papers.PaperBenchError(f"no preload/zcrun at {so} (run `make`)")
    rows = measure(a, ipc, zcrun, log)
    meta = {"benchmark": "streamline", "runs": a.runs, "figures": a.figures, "blocks": a.blocks,
            "max_bytes": a.max_bytes, "dd_blocks": a.dd_blocks, "dd_size": a.dd_size,
            "dd_out_dir": a.dd_out_dir,
            "wrong_outputs": sum(1 for x in rows if not x["bytes_ok"])}
    return meta, rows, summarize(rows)
