#!/usr/bin/env python3
"""gen_trace.py - synthetic web request traces in the spirit of SURGE.

Writes a trace in zcstack's format (docs/trace-format.md):

    time_ms object_id size_bytes [GET 200 /obj/<id>]

The model (Barford and Crovella, SURGE, SIGMETRICS'98), every part of it
driven by one seeded random.Random, so that the same arguments and --seed give
a byte-identical file on every run (random.Random's generator and our
formatting are fixed; the float transforms go through the platform's libm,
so compare traces across machines by their gdssim results, not their bytes):

  popularity   Zipf: the object of popularity rank r is requested with
               probability proportional to 1 / r**alpha (--alpha).  Ranks are
               assigned to object ids by a seeded shuffle, so ids say nothing
               about popularity.
  sizes        one size per object, independent of popularity: a lognormal
               body (SURGE's mu=9.357, sigma=1.318, bytes) below the cutoff k,
               a Pareto tail (k=133000, alpha=1.1) for a fraction of objects
               (--tail-fraction), capped at --max-size.
  locality     temporal locality by re-reference: with probability
               --locality a request repeats the object requested d requests
               earlier, d lognormal (--locality-mu, --locality-sigma),
               otherwise it is a fresh Zipf draw.  A repeat copies a past
               request, so the overall popularity stays Zipf; what changes is
               that repeats cluster in time, as in real logs (SURGE gets the
               same effect from an LRU stack-distance model).
  arrivals     Poisson at --rate requests per second; time_ms is the arrival
               time in integer milliseconds from 0.
"""

import argparse
import bisect
import itertools
import math
import random
import sys

SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text):
    """'64M' -> 67108864 (binary units)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    num = t[: len(t) - len(unit)]
    if not num.isdigit() or int(num) == 0:
        raise argparse.ArgumentTypeError(f"not a positive byte count: {text!r}")
    return int(num) * SIZE_UNITS[unit]


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def fraction(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return v


def nonneg_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (v >= 0.0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return v


def build_parser():
    p = argparse.ArgumentParser(
        description="Generate a SURGE-like synthetic trace (docs/trace-format.md).")
    p.add_argument("--requests", type=positive_int, default=1_000_000)
    p.add_argument("--objects", type=positive_int, default=100_000,
                   help="size of the object population (default 100000)")
    p.add_argument("--alpha", type=nonneg_float, default=0.8,
                   help="Zipf exponent of popularity (default 0.8)")
    p.add_argument("--seed", type=int, required=True,
                   help="random seed: same seed, same arguments -> same bytes")
    p.add_argument("--body-mu", type=float, default=9.357)
    p.add_argument("--body-sigma", type=nonneg_float, default=1.318)
    p.add_argument("--tail-k", type=parse_bytes, default=133_000,
                   help="Pareto scale, also the body's cutoff (default 133000)")
    p.add_argument("--tail-alpha", type=nonneg_float, default=1.1)
    p.add_argument("--tail-fraction", type=fraction, default=0.07)
    p.add_argument("--max-size", type=parse_bytes, default=64 << 20,
                   help="cap on object size (default 64M)")
    p.add_argument("--locality", type=fraction, default=0.2,
                   help="probability that a request re-references a recent one")
    p.add_argument("--locality-mu", type=float, default=3.0,
                   help="log of the median re-reference distance, in requests")
    p.add_argument("--locality-sigma", type=nonneg_float, default=1.5)
    p.add_argument("--rate", type=nonneg_float, default=1000.0,
                   help="mean arrival rate, requests per second (default 1000)")
    p.add_argument("--with-request", action="store_true",
                   help="add the method, status and path fields (GET 200 /obj/ID)")
    p.add_argument("--out", "-o", default="-", help="output file (default stdout)")
    return p


def object_sizes(rng, args):
    sizes = []
    for _ in range(args.objects):
        if rng.random() < args.tail_fraction:
            s = args.tail_k * rng.paretovariate(args.tail_alpha) if args.tail_alpha > 0 \
                else args.max_size
        else:
            while True:  # the body lives below the cutoff
                s = rng.lognormvariate(args.body_mu, args.body_sigma)
                if s < args.tail_k:
                    break
        sizes.append(max(1, min(args.max_size, int(round(s)))))
    return sizes


def generate(args, out):
    rng = random.Random(args.seed)
    n = args.objects
    sizes = object_sizes(rng, args)
    by_rank = list(range(n))
    rng.shuffle(by_rank)                # rank r -> object id by_rank[r]
    cum = list(itertools.accumulate(1.0 / (r + 1) ** args.alpha for r in range(n)))
    total = cum[-1]

    window = 1 << 16                    # how far back a re-reference can reach
    history = [0] * window
    t = 0.0
    mean_gap_ms = 1000.0 / args.rate if args.rate > 0 else 0.0

    w = out.write
    w("# zctrace 1\n")
    w("# generator: bench/trace/gen_trace.py (SURGE-like)\n")
    w(f"# seed: {args.seed}\n")
    w(f"# requests: {args.requests}\n")
    w(f"# objects: {n}\n")
    w(f"# alpha: {args.alpha}\n")
    w(f"# sizes: lognormal(mu={args.body_mu}, sigma={args.body_sigma}) below {args.tail_k}, "
      f"pareto(k={args.tail_k}, alpha={args.tail_alpha}) for {args.tail_fraction} of objects, "
      f"max {args.max_size}\n")
    w(f"# locality: p={args.locality} distance lognormal(mu={args.locality_mu}, "
      f"sigma={args.locality_sigma}) requests\n")
    w(f"# rate: {args.rate} requests/s (poisson)\n")

    buf = []
    rand = rng.random
    for i in range(args.requests):
        if i > 0 and rand() < args.locality:
            d = int(rng.lognormvariate(args.locality_mu, args.locality_sigma)) + 1
            d = min(d, i, window)
            obj = history[(i - d) % window]
        else:
            obj = by_rank[bisect.bisect_left(cum, rand() * total)]
            # bisect can return n only through rounding at the very top
            if obj >= n:
                obj = by_rank[n - 1]
        history[i % window] = obj
        if mean_gap_ms:
            t += rng.expovariate(1.0) * mean_gap_ms
        if args.with_request:
            buf.append(f"{int(t)} {obj} {sizes[obj]} GET 200 /obj/{obj}\n")
        else:
            buf.append(f"{int(t)} {obj} {sizes[obj]}\n")
        if len(buf) >= 65536:
            w("".join(buf))
            buf.clear()
    w("".join(buf))


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        if args.out == "-":
            generate(args, sys.stdout)
            sys.stdout.flush()
        else:
            with open(args.out, "w", encoding="ascii", newline="\n") as f:
                generate(args, f)
    except OSError as e:
        print(f"gen_trace: {args.out}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
