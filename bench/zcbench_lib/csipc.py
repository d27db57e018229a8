"""`zcbench cs-ipc`: Container Shipping's Figure 4 (seed 000, section 3),
every case, from build/bench/zcbench-ipc (docs/ipc-benchmark.md has the
method): 32 MB in 128 KB transfers between two processes over AF_UNIX on a
DEC 3000/800 in the paper; --bytes (2 GiB) in --block (128 KiB) transfers
here, median of --runs interleaved runs.
"""
import json
import sys

from . import figure
from . import papers

# zcbench-ipc case id -> (the paper's label, its MB/s in Figure 4)
PAPER = {
    "b": ("Conventional I/O", 30),
    "g": ("Conv. read, CS write", 36),
    "h": ("CS read, Conv. write", 48),
    "c": ("CS full map and access", 88),
    "d": ("CS half map and access", 128),
    "e": ("CS no map no access", 248),
    "a": (None, None),
    "f": (None, None),
}
ORDER = ("b", "g", "h", "c", "d", "e", "a", "f")
SHM_BAR = 0.90

ROW_FIELDS = ["run", "id", "name", "mbps"]
SUMMARY_FIELDS = ["id", "name", "what", "mbps", "ratio_vs_b", "ratio_vs_shm", "paper_label", "paper_mbps",
                  "paper_ratio"]


def summarize(res):
    cases = {c["id"]: c for c in res["cases"]}
    b = cases.get("b", {}).get("median_mbps")
    f = cases.get("f", {}).get("median_mbps")
    out = []
    for cid in ORDER:
        c = cases.get(cid)
        if not c:
            continue
        label, pm = PAPER[cid]
        out.append({"id": cid, "name": c["name"], "what": c["what"], "mbps": c["median_mbps"],
                    "ratio_vs_b": c["median_mbps"] / b if b else None,
                    "ratio_vs_shm": c["median_mbps"] / f if f else None,
                    "paper_label": label, "paper_mbps": pm,
                    "paper_ratio": pm / PAPER["b"][1] if pm else None})
    return out


COLS = [("case", "id", 0), ("what", "what", 0), ("MB/s", "mbps", 0), ("vs (b)", "ratio_vs_b", 2),
        ("vs (f) shm", "ratio_vs_shm", 2), ("paper case", "paper_label", 0),
        ("paper MB/s", "paper_mbps", 0), ("paper vs conv.", "paper_ratio", 2)]


def table_text(summary, meta):
    full = next((s for s in summary if s["id"] == "c"), None)
    bar = ""
    if full and full["ratio_vs_shm"] is not None:
        bar = (f"\n\nfull map / shared-memory ring = {full['ratio_vs_shm']:.2f} "
               f"(bar >= {SHM_BAR:.2f}: {'met' if full['ratio_vs_shm'] >= SHM_BAR else 'NOT met'})")
    return papers.table(summary, COLS, title=(
        f"zcbench cs-ipc: Container Shipping Figure 4, {meta['bytes']} in {meta['block']} blocks, "
        f"median of {meta['runs']} runs, backend {meta['backend']}")) + bar


def plot(out, summary, dpi=80):
    plt = figure.pyplot()

    ss = [s for s in summary if s["ratio_vs_b"] is not None]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    xs = range(len(ss))
    ax.bar([x - 0.2 for x in xs], [s["ratio_vs_b"] for s in ss], width=0.4, label="measured")
    ax.bar([x + 0.2 for x in xs], [s["paper_ratio"] or 0 for s in ss], width=0.4, alpha=0.6,
           label="paper (1995)")
    for x, s in zip(xs, ss):
        ax.annotate(f"{s['ratio_vs_b']:.1f}", (x - 0.2, s["ratio_vs_b"]), textcoords="offset points",
                    xytext=(0, 3), ha="center", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"({s['id']}) {s['name']}" for s in ss], fontsize=8, rotation=20)
    ax.set_ylabel("throughput / conventional write+read over AF_UNIX")
    ax.set_title("Container Shipping Figure 4 today (zcbench-ipc)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return figure.save(fig, out, "cs-ipc.png", dpi)


def run(a, log=lambda m: print(f"zcbench cs-ipc: {m}", file=sys.stderr, flush=True)):
    ipc = papers.binary("bench", "zcbench-ipc")
    argv = [ipc, "--json", "--bytes", a.bytes, "--block", a.block, "--runs", str(a.runs),
            "--cases", ",".join(ORDER)]
    log(" ".join(argv))
    p = papers.Proc(argv)
    try:
        p.wait(timeout_s=3600)
    except papers.PaperBenchError as e:
        # zcbench-ipc exits 1 when a block arrived wrong (it says so on stderr)
        raise papers.PaperBenchError(f"{e}")
    sys.stderr.write(p.err.decode(errors="replace"))
    res = json.loads(p.out)
    rows = [{"run": r + 1, "id": c["id"], "name": c["name"], "mbps": v}
            for c in res["cases"] for r, v in enumerate(c["runs_mbps"])]
    meta = {"benchmark": "cs-ipc", "bytes": a.bytes, "block": a.block, "runs": a.runs,
            "backend": res.get("backend"), "argv": argv, "wrong_outputs": 0, "shm_bar": SHM_BAR}
    return meta, rows, summarize(res)
