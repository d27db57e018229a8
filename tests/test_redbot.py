"""REDbot ("lint for HTTP") on zchttpd, with nginx as the yardstick.

The demo site (ci/demo.sh --site-only: its HTML page and a text file) plus
a stylesheet, a PNG image (binary) and a script with its precompressed
FILE.gz are served side by side by zchttpd (--precompressed on) and by
nginx (gzip_static on).  REDbot checks each URL on both -- the response,
and the range, validation and content-negotiation requests it makes
itself -- and a test fails on every problem (level "bad" or "warning")
REDbot reports for zchttpd and not for nginx.  What both get (REDbot's
warning about heuristic freshness: neither sends Cache-Control by default)
is the site's configuration, not the server's.

REDbot is the `redbot` package, installed by ci/deps.sh from
requirements.txt into .venv: when it is missing these tests fail and say
so, they install nothing and do not skip.
"""

import gzip
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ZCHTTPD = Path(os.environ.get("ZCHTTPD", ROOT / "build" / "server" / "zchttpd"))
NOTES = Path(__file__).resolve().parent / "redbot" / "notes.py"
FILES = ["index.html", "style.css", "logo.png", "app.js"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def png(width, height):
    """A real PNG (REDbot sniffs content against Content-Type)."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    rows = b"".join(b"\0" + bytes((x * 7 + y * 3) & 255 for x in range(width * 3))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def make_site(site):
    subprocess.run([str(ROOT / "ci" / "demo.sh"), "--site-only"], check=True)
    demo = ROOT / "build" / "demo-site"
    site.mkdir()
    shutil.copy(demo / "index.html", site / "index.html")
    shutil.copy(demo / "10k.txt", site / "10k.txt")
    (site / "style.css").write_text(
        "".join(f".c{i} {{ color: #{i:06x}; margin: {i % 17}px; }}\n" for i in range(200)))
    (site / "logo.png").write_bytes(png(64, 64))
    js = "".join(f"function f{i}(x) {{ return x * {i} + {i % 7}; }}\n" for i in range(400))
    (site / "app.js").write_text(js)
    (site / "app.js.gz").write_bytes(gzip.compress(js.encode(), 9))


def wait_http(url, proc, what):
    for _ in range(100):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not answer at {url}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("redbot")
    site = tmp / "site"
    make_site(site)
    zport, nport = free_port(), free_port()
    event = os.environ.get("ZCHTTPD_EVENT")
    zc = subprocess.Popen(
        [str(ZCHTTPD), "--root", str(site), "--listen", f"127.0.0.1:{zport}",
         "--workers", "1", "--precompressed", "on"] +
        (["--event", event] if event else []),
        stderr=open(tmp / "zchttpd.err", "w"))
    (tmp / "nginx").mkdir()
    user = "user root;" if os.getuid() == 0 else ""
    (tmp / "nginx.conf").write_text(f"""{user}
daemon off;
worker_processes 1;
pid {tmp}/nginx/nginx.pid;
error_log {tmp}/nginx/error.log warn;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path {tmp}/nginx/body;
    fastcgi_temp_path {tmp}/nginx/fastcgi;
    proxy_temp_path {tmp}/nginx/proxy;
    uwsgi_temp_path {tmp}/nginx/uwsgi;
    scgi_temp_path {tmp}/nginx/scgi;
    server {{
        listen 127.0.0.1:{nport};
        root {site};
        gzip_static on;
    }}
}}
""")
    ng = subprocess.Popen(["nginx", "-c", str(tmp / "nginx.conf"), "-p", str(tmp / "nginx")],
                          stderr=open(tmp / "nginx.err", "w"))
    try:
        wait_http(f"http://127.0.0.1:{zport}/", zc, "zchttpd")
        wait_http(f"http://127.0.0.1:{nport}/", ng, "nginx")
        yield {"zchttpd": f"http://127.0.0.1:{zport}", "nginx": f"http://127.0.0.1:{nport}"}
    finally:
        for p in (zc, ng):
            p.send_signal(signal.SIGTERM)
        for p in (zc, ng):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def redbot_notes(url):
    out = subprocess.run([sys.executable, str(NOTES), url], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, f"REDbot failed on {url}:\n{out.stderr}"
    return json.loads(out.stdout)


def problems(notes):
    return {n["name"]: n["summary"] for n in notes if n["level"] in ("bad", "warning")}


def test_redbot_is_installed():
    try:
        import redbot  # noqa: F401
    except ImportError:
        pytest.fail("the redbot package is missing: run ci/deps.sh (requirements.txt)")


@pytest.mark.parametrize("path", FILES)
def test_no_problem_nginx_does_not_have(servers, path):
    ours = redbot_notes(f"{servers['zchttpd']}/{path}")
    theirs = redbot_notes(f"{servers['nginx']}/{path}")
    extra = {k: v for k, v in problems(ours).items() if k not in problems(theirs)}
    assert not extra, (f"REDbot on zchttpd's /{path}: {extra}\n"
                       f"(nginx's problems: {problems(theirs)})")


def test_date_is_the_second_of_the_response(servers):
    """What REDbot's CURRENT_AGE note caught now and then: Date was the time
    the loop last went to sleep (respond.c), a second behind whenever it
    woke in the next one.  Requests made just after a second begins show
    it every time."""
    from email.utils import parsedate_to_datetime
    for _ in range(4):
        time.sleep(1.03 - time.time() % 1)	# 30 ms into a second
        before = int(time.time())
        with urllib.request.urlopen(f"{servers['zchttpd']}/style.css", timeout=5) as r:
            date = int(parsedate_to_datetime(r.headers["Date"]).timestamp())
        after = int(time.time())
        assert before <= date <= after, (r.headers["Date"], before, after)
