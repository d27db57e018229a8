#!/usr/bin/env python3
"""bench/load_checks.py - the same as `bench/zcbench load` (10,000 idle
keep-alive connections and 500 slowloris connections against zchttpd, with wrk
running meanwhile).  `load_checks.py --help` for the options."""
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))

if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from zcbench_lib.cli import main
    sys.exit(main(["load", *sys.argv[1:]]))
