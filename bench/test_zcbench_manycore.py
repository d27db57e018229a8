"""pytest: the self-contained many-core bundle (bench/manycore/pack.py,
run.sh).  The bundle is built into a temporary directory and run inside a
bare root -- bash, coreutils and a two-line /etc/passwd, nothing else: no
Python, no nginx, no libraries but the ones those two need -- with one
worker, every server, two sizes and short points: every point measured,
no errors, the tables written, no server and no cgroup left behind.  No
timing asserted."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "manycore"))

import pack  # noqa: E402
from zcbench_lib import servers  # noqa: E402

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd5a1f2000)
\tliburing.so.2 => /lib/x86_64-linux-gnu/liburing.so.2 (0x00007f44c12e6000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f44c0a1e000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f44c133f000)
"""


def test_ldd_output_parses():
    loader, libs = pack.parse_ldd(LDD)
    assert loader == "/lib64/ld-linux-x86-64.so.2"
    assert libs == {"liburing.so.2": "/lib/x86_64-linux-gnu/liburing.so.2",
                    "libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6"}
    with pytest.raises(SystemExit):
        pack.parse_ldd("\tlibfoo.so.1 => not found\n")


def test_configs_are_zcbenchs_with_placeholders():
    conf = pack.configs()
    assert conf["nginx.conf.in"] == servers.nginx_config("@PORT@", "@ROOT@", "@WORKERS@", "@PREFIX@",
                                                         as_root=True)
    assert "listen 127.0.0.1:@PORT@;" in conf["nginx.conf.in"]
    assert "worker_processes @WORKERS@;" in conf["nginx.conf.in"]
    assert "num-threads: @WORKERS@" in conf["h2o.yaml.in"]
    assert conf["zchttpd.args"].split("\n")[:-1] == ["--root", "@ROOT@", "--listen", "127.0.0.1:@PORT@",
                                                     "--workers", "@WORKERS@"]
    assert conf["floor.args"] == conf["zchttpd.args"]


def copy_with_libs(path, root):
    """path and every library ldd names for it, at the same places under root."""
    todo = [path]
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    loader, libs = pack.parse_ldd(out) if "=>" in out else (None, {})
    todo += list(libs.values()) + ([loader] if loader else [])
    for p in todo:
        dest = root / p.lstrip("/")
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(p), dest)


def bare_root(root):
    """bash and coreutils (what the brief says a target has), /etc/passwd
    and /etc/group with root, empty /proc, /sys, /dev and /tmp."""
    listed = subprocess.run(["dpkg", "-L", "coreutils"], capture_output=True, text=True,
                            check=True).stdout.split()
    progs = ["/bin/bash"] + [p for p in listed if "/bin/" in p and os.path.isfile(p)
                             and os.access(p, os.X_OK)]
    for p in progs:
        copy_with_libs(os.path.realpath(p) if os.path.islink(p) else p, root)
        if os.path.islink(p) or not (root / p.lstrip("/")).exists():
            dest = root / p.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.exists():
                shutil.copy2(os.path.realpath(p), dest)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc" / "group").write_text("root:x:0:\n")
    for d in ("proc", "sys", "dev", "tmp", "root"):
        (root / d).mkdir(exist_ok=True)
    os.chmod(root / "tmp", 0o1777)


def in_bare_root(root, script, env):
    """Run bash `script` chrooted into root in a mount namespace of its own
    (/proc, /sys and /dev bound in; gone with the namespace)."""
    r = str(root)
    inner = (f"mount -t proc proc {r}/proc && mount --rbind /sys {r}/sys && "
             f"mount --bind /dev {r}/dev && exec chroot {r} /bin/bash -c '{script}'")
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **env})


@pytest.fixture(scope="module")
def bundle_root(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("chroot"):
        pytest.skip("the bare-root run needs root, unshare and chroot")
    d = tmp_path_factory.mktemp("manycore")
    dest, tar, size = pack.pack(str(d / "out"))
    assert size < pack.LIMIT and os.path.getsize(tar) < pack.LIMIT
    root = d / "root"
    bare_root(root)
    subprocess.run(["tar", "xzf", tar, "-C", str(root)], check=True)
    assert not (root / "usr" / "bin" / "python3").exists() and not (root / "usr" / "sbin" / "nginx").exists()
    return root


def test_bundle_runs_in_a_bare_root(bundle_root):
    root = bundle_root
    p = in_bare_root(root, "cd /root && /zcmanycore/run.sh",
                     {"WORKERS": "1", "SIZES": "1k 100k", "RUNS": "1", "DURATION": "1", "WARMUP": "0",
                      "OUT": "/root/out", "CONNECTIONS": "32"})
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [x.split("\t") for x in (root / "root" / "out" / "results.tsv").read_text().splitlines()
             if not x.startswith("#")]
    head, points = lines[0], lines[1:]
    assert head[:4] == ["run", "workers", "size", "server"]
    assert sorted((x[2], x[3]) for x in points) == sorted(
        (s, n) for s in ("1k", "100k") for n in ("zchttpd", "nginx", "h2o", "floor"))
    col = {k: i for i, k in enumerate(head)}
    for x in points:
        assert int(x[col["requests"]]) > 0 and x[col["errors"]] == "0", x
        assert int(x[col["cpu_us_per_req_x10"]]) > 0, x       # the server's CPU time was read
    md = (root / "root" / "out" / "results.md").read_text()
    assert "| workers | 1k keep-alive: zchttpd / nginx / h2o / floor | 100k keep-alive: zchttpd / nginx / h2o / floor |" in md
    assert "| 1 | 1k | zchttpd |" in md and "Client-bound points:" in md
    assert "Points where neither side was the limit" in md
    assert md in p.stdout
    # nothing left: no cgroup of the run, no temporary directory
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/cpuacct"):
        if os.path.isdir(base):
            assert not [n for n in os.listdir(base) if n.startswith("zcmanycore-")]
    assert not [n for n in os.listdir(root / "tmp") if n.startswith("zcmanycore.")]


def test_bundle_refuses_a_matrix_without_a_core_for_wrk(bundle_root):
    p = in_bare_root(bundle_root, "/zcmanycore/run.sh", {"WORKERS": str(os.cpu_count()), "OUT": "/root/o2"})
    assert p.returncode == 1 and "leaves no core for wrk" in p.stderr
    p = in_bare_root(bundle_root, "/zcmanycore/run.sh --help", {})
    assert p.returncode == 0 and "self-contained" in p.stdout
