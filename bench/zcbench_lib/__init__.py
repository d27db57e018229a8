"""zcbench: benchmark drivers of zcstack (the `bench/zcbench` command).

Modules, one job each:
  docroot  the generated document root (one file per size, fixed content)
  servers  configs for nginx, h2o and zchttpd; start, wait until they answer, stop
  wrk      run wrk and parse what it prints
  report   medians, ratios, CSV/JSON, PNG figures, text tables
  static   `zcbench static`: the IO-Lite Figure 3/4 experiment
  proxy    `zcbench proxy`: reverse proxies in front of one origin, and their floor
  load     `zcbench load`: 10,000 idle connections and slowloris
  syscalls `zcbench syscalls`: strace -c of each server's worker, per request
  cli      argument parsing and the subcommands (also `report`: redo figures)
"""
import os

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(BENCH_DIR)


def build_dir():
    """The Meson build tree the binaries come from ($ZCBENCH_BUILD or build/)."""
    return os.environ.get("ZCBENCH_BUILD") or os.path.join(REPO_ROOT, "build")
