#!/usr/bin/env python3
"""compare_libcachesim.py - gdssim's policies beside libCacheSim's on one trace.

    compare_libcachesim.py --trace T [--gdssim build/gds-cache/gdssim]
                           [--cache-size 1%,5%,10%] [--ours gdsf,...]
                           [--theirs GDSF,...]

Runs gdssim --json on the trace (docs/trace-format.md), then replays the
same requests through the libcachesim Python package (requirements.txt) at
exactly the byte budgets gdssim used (a percentage of the trace's unique
bytes, as gdssim computes it), and prints one Markdown table of object hit
ratios: a row per cache size, a column per policy.  Each request is one
libcachesim get() of (object id, size), as gdssim replays it.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from zcbench_lib.replay import read_trace  # noqa: E402  (the one Python trace reader)
OURS = "gds1,gdsf,gdsf-all,lru,sieve,s3fifo"
THEIRS = "GDSF,WTinyLFU,LHD,S3FIFO,Sieve,LRU"


def reference(lcs, name, cache_bytes, reqs):
    """libCacheSim's object hit ratio for class `name` (GDSF, LRU, ...) at
    cache_bytes over reqs [(object id, size)], one get() per request."""
    cache = getattr(lcs, name)(cache_bytes)
    hits = 0
    for i, (obj, size) in enumerate(reqs):
        hits += bool(cache.get(lcs.Request(obj_size=size, obj_id=obj, clock_time=i,
                                           op=lcs.ReqOp.OP_GET)))
    return hits / len(reqs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", required=True)
    p.add_argument("--gdssim", default=str(ROOT / "build" / "gds-cache" / "gdssim"))
    p.add_argument("--cache-size", default="1%,5%,10%")
    p.add_argument("--ours", default=OURS, help=f"gdssim policies (default {OURS})")
    p.add_argument("--theirs", default=THEIRS,
                   help=f"libcachesim classes (default {THEIRS})")
    args = p.parse_args(argv)
    try:
        import libcachesim as lcs
    except ImportError:
        print("compare_libcachesim: the libcachesim package is missing (ci/deps.sh "
              "installs it into .venv)", file=sys.stderr)
        return 1
    theirs = args.theirs.split(",")
    for name in theirs:
        if not hasattr(lcs, name):
            print(f"compare_libcachesim: libcachesim has no policy {name}", file=sys.stderr)
            return 2
    run = subprocess.run([args.gdssim, "--trace", args.trace, "--json", "--policy", args.ours,
                          "--cache-size", args.cache_size], capture_output=True, text=True)
    if run.returncode:
        sys.stderr.write(run.stderr)
        return run.returncode
    d = json.loads(run.stdout)
    ours = args.ours.split(",")
    by = {(r["policy"], r["cache_size"]): r for r in d["results"]}
    labels = {r["policy"]: r["label"] for r in d["results"]}
    reqs = read_trace(args.trace)
    print(f"trace {args.trace}: {d['requests']} requests, {d['objects']} objects, "
          f"{d['unique_bytes']} unique bytes; libcachesim {lcs.__version__}\n")
    print("| cache | bytes | " + " | ".join(f"ours {labels[o]}" for o in ours) + " | "
          + " | ".join(f"libCacheSim {t}" for t in theirs) + " |")
    print("|---" * (2 + len(ours) + len(theirs)) + "|")
    for size in args.cache_size.split(","):
        cache_bytes = by[(ours[0], size)]["cache_bytes"]
        row = [f"{by[(o, size)]['hit_ratio']:.4f}" for o in ours]
        row += [f"{reference(lcs, t, cache_bytes, reqs):.4f}" for t in theirs]
        print(f"| {size} | {cache_bytes} | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
