#!/usr/bin/env python3
"""pack.py - build the self-contained many-core bundle that run.sh runs.

    python3 bench/manycore/pack.py [--out build/manycore]

writes OUT/zcmanycore/ and OUT/zcmanycore.tar.gz:

  bin/     zchttpd and zcfloor from this build tree (build/, as `zcbench
           static` runs them), nginx, h2o, wrk and taskset from this machine
  lib/     every shared library those load (ldd), under the names they ask
           for, and the dynamic loader itself: run.sh starts every program
           through it, so the target's own libraries (old, other, or none)
           play no part
  conf/    the servers' configurations as zcbench writes them
           (bench/zcbench_lib/servers.py: nginx_config, h2o_config,
           zchttpd_argv, floor_argv), with @PORT@, @ROOT@, @WORKERS@ and
           @PREFIX@ where run.sh puts each start's values -- one
           configuration for both benchmarks, not a second copy
  run.sh   the matrix (bench/manycore/run.sh)
  VERSIONS what is in it: the commit, each program's version line

The bundle needs no Python on the target; it must stay under 64 MiB
(checked here) and is never committed (it is built into build/).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)

from zcbench_lib import build_dir, servers  # noqa: E402

LIMIT = 64 << 20
PLACEHOLDERS = {"port": "@PORT@", "docroot": "@ROOT@", "workers": "@WORKERS@", "prefix": "@PREFIX@"}


def programs():
    """{bundle name: path on this machine} of the programs run.sh starts."""
    found = {"zchttpd": servers.zchttpd_binary(), "zcfloor": servers.floor_binary()}
    for name in ("nginx", "h2o", "wrk", "taskset"):
        path = servers._which(name)
        if not path:
            raise SystemExit(f"pack.py: {name} is not installed (ci/deps.sh)")
        found[name] = path
    for name, path in found.items():
        if not os.access(path, os.X_OK):
            raise SystemExit(f"pack.py: {path} is not built (run `make`)")
    return found


def parse_ldd(text):
    """(the loader's path, {soname: resolved path}) from ldd's output;
    SystemExit for a library ldd cannot find."""
    loader, libs = None, {}
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (\S+) \(0x[0-9a-f]+\)$", line)
        if m:
            libs[m.group(1)] = m.group(2)
            continue
        if "=> not found" in line:
            raise SystemExit(f"pack.py: ldd: {line}")
        m = re.match(r"(/\S+) \(0x[0-9a-f]+\)$", line)
        if m:
            loader = m.group(1)
    return loader, libs


def libraries(paths):
    """(loader path, {soname: path}) of all the programs together."""
    loader, libs = None, {}
    for p in paths:
        out = subprocess.run(["ldd", p], capture_output=True, text=True, check=True).stdout
        ld, found = parse_ldd(out)
        loader = loader or ld
        libs.update(found)
    if not loader:
        raise SystemExit("pack.py: ldd named no dynamic loader")
    return loader, libs


def configs():
    """{file name: text} of conf/: the servers' configurations with placeholders."""
    p = PLACEHOLDERS
    return {
        "nginx.conf.in": servers.nginx_config(p["port"], p["docroot"], p["workers"], p["prefix"],
                                              as_root=True),
        "h2o.yaml.in": servers.h2o_config(p["port"], p["docroot"], p["workers"], p["prefix"],
                                          as_root=True),
        # argv after the program, one argument a line
        "zchttpd.args": "\n".join(servers.zchttpd_argv("zchttpd", p["port"], p["docroot"],
                                                       p["workers"])[1:]) + "\n",
        "floor.args": "\n".join(servers.floor_argv("zcfloor", p["port"], p["docroot"],
                                                   p["workers"])[1:]) + "\n",
        # zchttpd with options (servers.VARIANTS): SERVERS="zchttpd-copy ..."
        **{f"{name}.args": "\n".join(servers.zchttpd_argv("zchttpd", p["port"], p["docroot"],
                                                          p["workers"], extra)[1:]) + "\n"
           for name, (kind, extra) in servers.VARIANTS.items()
           if kind == "zchttpd" and extra},
    }


def version_line(name, path):
    flag = {"nginx": "-v", "h2o": "--version", "wrk": "-v", "taskset": "--version"}.get(name)
    if not flag:
        return ""
    p = subprocess.run([path, flag], capture_output=True, text=True)
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0] if text else ""


def pack(out):
    dest = os.path.join(out, "zcmanycore")
    shutil.rmtree(dest, ignore_errors=True)
    for d in ("bin", "lib", "conf"):
        os.makedirs(os.path.join(dest, d))
    progs = programs()
    for name, path in progs.items():
        shutil.copy2(path, os.path.join(dest, "bin", name))
    loader, libs = libraries(progs.values())
    shutil.copy2(loader, os.path.join(dest, "lib", os.path.basename(loader)))
    for soname, path in libs.items():
        shutil.copy2(path, os.path.join(dest, "lib", soname))     # follows the symlink
    for name, text in configs().items():
        with open(os.path.join(dest, "conf", name), "w") as f:
            f.write(text)
    shutil.copy2(os.path.join(HERE, "run.sh"), os.path.join(dest, "run.sh"))
    os.chmod(os.path.join(dest, "run.sh"), 0o755)
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    with open(os.path.join(dest, "VERSIONS"), "w") as f:
        f.write(f"zcstack {commit or '?'} (zchttpd, zcfloor from {build_dir()})\n")
        for name, path in progs.items():
            v = version_line(name, path)
            if v:
                f.write(f"{name}: {v}\n")
    tar = os.path.join(out, "zcmanycore.tar.gz")
    with tarfile.open(tar, "w:gz") as t:
        t.add(dest, arcname="zcmanycore")
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(dest) for f in fs)
    if size >= LIMIT or os.path.getsize(tar) >= LIMIT:
        raise SystemExit(f"pack.py: the bundle is {size / 2**20:.1f} MiB, over {LIMIT >> 20} MiB")
    return dest, tar, size


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build the self-contained many-core bundle "
                                             "(bench/manycore/run.sh with its programs and libraries).")
    ap.add_argument("--out", default=os.path.join(build_dir(), "manycore"),
                    help="where zcmanycore/ and zcmanycore.tar.gz go (default build/manycore)")
    a = ap.parse_args(argv)
    dest, tar, size = pack(a.out)
    print(f"pack.py: {dest} ({size / 2**20:.1f} MiB), {tar} ({os.path.getsize(tar) / 2**20:.1f} MiB)\n"
          f"on the target: tar xzf zcmanycore.tar.gz && zcmanycore/run.sh   (as root; --help)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
