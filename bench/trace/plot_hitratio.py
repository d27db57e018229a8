#!/usr/bin/env python3
"""plot_hitratio.py - draw gdssim's results: hit ratio and byte hit ratio
against cache size, one line per policy, the infinite cache as a dashed
ceiling.

    gdssim --trace T --json | plot_hitratio.py --out fig.png
    plot_hitratio.py --json results.json --out fig.png

gdssim --plot runs this script itself, feeding the JSON on stdin.
"""

import argparse
import json
import sys


def load(path):
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"plot_hitratio: cannot read gdssim JSON from {path}: {e}")


def series(doc):
    """{label: [(percent of unique bytes, hit ratio, byte hit ratio), ...]}"""
    lines = {}
    for r in doc["results"]:
        lines.setdefault(r["label"], []).append(
            (100.0 * r["cache_fraction"], r["hit_ratio"], r["byte_hit_ratio"]))
    return {k: sorted(v) for k, v in lines.items()}


def default_title(doc):
    meta = doc.get("metadata", {})
    extra = ", ".join(f"{k} {meta[k]}" for k in ("alpha", "seed") if k in meta)
    return (f"gdssim: {doc['requests']:,} requests, {doc['objects']:,} objects"
            + (f" ({extra})" if extra else ""))


def plot(doc, out, title=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("plot_hitratio: matplotlib is not installed "
                         "(run ci/deps.sh, or set GDSSIM_PYTHON to a python with it)")
    lines = series(doc)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), dpi=100)
    keys = (("hit_ratio", 1, "object hit ratio"), ("byte_hit_ratio", 2, "byte hit ratio"))
    for ax, (ceil_key, idx, name) in zip(axes, keys):
        for label, pts in lines.items():
            ax.plot([p[0] for p in pts], [p[idx] for p in pts], marker="o",
                    markersize=3, linewidth=1.4, label=label)
        ax.axhline(doc["ceiling"][ceil_key], color="grey", linestyle="--", linewidth=1,
                   label="infinite cache")
        ax.set_xlabel("cache size (% of unique bytes)")
        ax.set_ylabel(name)
        ax.set_ylim(0, 1)
        ax.grid(True, linewidth=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title or default_title(doc), fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(out)
    except OSError as e:
        raise SystemExit(f"plot_hitratio: {out}: {e.strerror}")
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="-", help="gdssim --json output (default stdin)")
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--title", help="figure title")
    args = p.parse_args(argv)
    doc = load(args.json)
    if not doc.get("results"):
        raise SystemExit("plot_hitratio: the gdssim results are empty")
    plot(doc, args.out, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
