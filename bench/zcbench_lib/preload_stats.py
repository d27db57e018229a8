"""The statistics file of libzc-preload.so (ZC_STATS_FILE), read and summed.

The preload appends one JSON object per process at exit, in one write(2):

    {"pid": N, "exe": "...", "conversions": {"pipe": {"seen": N,
     "converted": N, "bytes_zero_copy": N, "passed": {"reason": N, ...}}, ...}}

parse() checks every line against that shape (a malformed line is an error,
not something to skip: the tests rely on these numbers), total() sums the
processes, optionally only those whose exe has a given basename.

Also a command, so the shell tests (tests/preload_programs.bats) read the
file with the same code as `zcbench preload`:

    preload_stats.py FILE CONV FIELD [--exe NAME]   print one summed number (FIELD: a
                                                    counter, or passed: every reason)
    preload_stats.py FILE processes [--exe NAME]    how many processes wrote a record
    preload_stats.py FILE --table [--exe NAME]      every total, a line per conversion
"""
import argparse
import json
import os
import sys

CONVERSIONS = ("pipe", "mapwrite", "forward", "stdio")
COUNTERS = ("seen", "converted", "bytes_zero_copy")


class StatsError(ValueError):
    pass


def _check_conv(where, name, c):
    if not isinstance(c, dict):
        raise StatsError(f"{where}: conversion {name!r} is not an object")
    for k in COUNTERS:
        if not isinstance(c.get(k), int) or c[k] < 0:
            raise StatsError(f"{where}: {name}.{k} missing or not a count: {c.get(k)!r}")
    passed = c.get("passed", {})
    if not isinstance(passed, dict) or not all(isinstance(v, int) and v >= 0 for v in passed.values()):
        raise StatsError(f"{where}: {name}.passed is not an object of counts: {passed!r}")


def parse(text, where="stats"):
    """The records of a stats file's text: a list of dicts (may be empty)."""
    records = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise StatsError(f"{where}:{no}: not JSON ({e}): {line[:200]!r}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("pid"), int) \
                or not isinstance(rec.get("exe"), str) or not isinstance(rec.get("conversions"), dict):
            raise StatsError(f"{where}:{no}: want {{pid, exe, conversions}}: {line[:200]!r}")
        for name, c in rec["conversions"].items():
            if name not in CONVERSIONS:
                raise StatsError(f"{where}:{no}: unknown conversion {name!r}")
            _check_conv(f"{where}:{no}", name, c)
        records.append(rec)
    return records


def read(path):
    """Records of the file at path; [] when it does not exist (no process wrote)."""
    try:
        with open(path) as f:
            return parse(f.read(), where=path)
    except FileNotFoundError:
        return []


def empty_totals():
    return {c: {"seen": 0, "converted": 0, "bytes_zero_copy": 0, "passed": {}} for c in CONVERSIONS}


def total(records, exe=None):
    """Sum of every record (or of those whose exe's basename is exe):
    {conv: {"seen", "converted", "bytes_zero_copy", "passed": {reason: n}}, ...}
    with every conversion present, plus "processes": how many were summed."""
    out = empty_totals()
    n = 0
    for rec in records:
        if exe is not None and os.path.basename(rec["exe"]) != exe:
            continue
        n += 1
        for name, c in rec["conversions"].items():
            t = out[name]
            for k in COUNTERS:
                t[k] += c[k]
            for reason, v in c.get("passed", {}).items():
                t["passed"][reason] = t["passed"].get(reason, 0) + v
    out["processes"] = n
    return out


def brief(totals):
    """"pipe 12/40 (3.1 MB), stdio 1/1 (20.0 MB)": converted/seen and bytes
    moved without copy, for the conversions that saw anything."""
    parts = []
    for c in CONVERSIONS:
        t = totals[c]
        if t["seen"] or t["converted"]:
            parts.append(f"{c} {t['converted']}/{t['seen']} ({t['bytes_zero_copy'] / 1e6:.1f} MB)")
    return ", ".join(parts) or "nothing seen"


def table(totals):
    lines = [f"processes {totals['processes']}"]
    for c in CONVERSIONS:
        t = totals[c]
        passed = " ".join(f"{k}={v}" for k, v in sorted(t["passed"].items()))
        lines.append(f"{c} seen={t['seen']} converted={t['converted']} "
                     f"bytes_zero_copy={t['bytes_zero_copy']}" + (f" passed: {passed}" if passed else ""))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="preload_stats.py",
                                description="Sum a libzc-preload ZC_STATS_FILE.")
    p.add_argument("file")
    p.add_argument("conv", nargs="?", help="|".join(CONVERSIONS) + ", or 'processes'")
    p.add_argument("field", nargs="?", help="|".join(COUNTERS) + "|passed (all reasons summed)")
    p.add_argument("--exe", help="only processes whose executable has this basename")
    p.add_argument("--table", action="store_true", help="print every total")
    a = p.parse_args(argv)
    if not a.table and not (a.conv == "processes" and a.field is None) \
            and not (a.conv in CONVERSIONS and a.field in COUNTERS + ("passed",)):
        p.error("give CONV FIELD, 'processes', or --table")
    try:
        totals = total(read(a.file), a.exe)
    except StatsError as e:
        print(f"preload_stats: {e}", file=sys.stderr)
        return 1
    if a.table:
        print(table(totals))
    elif a.conv == "processes":
        print(totals["processes"])
    elif a.field == "passed":
        print(sum(totals[a.conv]["passed"].values()))
    else:
        print(totals[a.conv][a.field])
    return 0


if __name__ == "__main__":
    sys.exit(main())
