"""pytest: zcfloor, `zcbench static`'s reference "server" (bench/floor/zcfloor.c):
it answers every request with the canned response of the file asked for,
byte-exact, on keep-alive connections (also pipelined), closes after
"Connection: close", finishes responses larger than the socket buffer, and
404s anything else; it serves the files of one level of subfolders (a
trace replay's /o/ID root), found among thousands of names, on epoll and
on io_uring, also with --open-first (each file opened and stat'ed at
its first request: one gone by then is a 404).  Loopback only; no timing anywhere."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import docroot, servers  # noqa: E402

ZCFLOOR = HERE.parent / "build" / "bench" / "zcfloor"
SIZES = [500, 1024, 10 * 1024, 200 * 1024, 4 << 20]


NAMES = 3000          # files in the subfolder: a table to search, not to scan


def sub_body(i):
    return f"o:{i}:".encode() * (1 + i % 50)


def start_floor(root, extra=()):
    """A zcfloor on a free port with 2 workers; (process, port) once it
    accepts connections."""
    port = servers.free_port()
    p = subprocess.Popen(servers.floor_argv(str(ZCFLOOR), port, str(root), 2) + list(extra),
                         stderr=subprocess.PIPE, start_new_session=True)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.02)
    return p, port


@pytest.fixture(scope="module", params=[("epoll",), ("io_uring",), ("epoll", "--open-first"),
                                        ("io_uring", "--open-first")],
                ids=lambda p: "".join(p))
def floor(request, tmp_path_factory):
    """The docroot's files at the top, NAMES files in the subfolder o/ and
    one file two levels down (o/deep/x), which must not be served."""
    assert os.access(ZCFLOOR, os.X_OK), f"{ZCFLOOR} is not built: run make"
    root = tmp_path_factory.mktemp("floor") / "root"
    files = docroot.make_docroot(root, SIZES)
    (root / "o" / "deep").mkdir(parents=True)
    for i in range(NAMES):
        (root / "o" / str(i)).write_bytes(sub_body(i))
    (root / "o" / "deep" / "x").write_bytes(b"too deep")
    p, port = start_floor(root, ["--event", *request.param])
    yield port, files
    p.terminate()
    p.wait(timeout=10)


def read_response(f):
    """(status line, headers dict, body) of one response from file f."""
    status = f.readline().decode().rstrip("\r\n")
    headers = {}
    while True:
        line = f.readline().decode().rstrip("\r\n")
        if not line:
            break
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers["content-length"]))
    return status, headers, body


def get(path, close=False):
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n".encode()


def test_keepalive_every_size_on_one_connection(floor):
    port, files = floor
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
        for n in SIZES:
            s.sendall(get(files[n][0]))
            status, headers, body = read_response(f)
            assert status == "HTTP/1.1 200 OK"
            assert "connection" not in headers
            assert body == docroot.content(n)


def test_pipelined_requests_in_one_send(floor):
    port, files = floor
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
        s.sendall(get(files[1024][0]) + get(files[500][0]) + get("/nope"))
        assert read_response(f)[2] == docroot.content(1024)
        assert read_response(f)[2] == docroot.content(500)
        status, _, body = read_response(f)
        assert status == "HTTP/1.1 404 Not Found" and body == b"not found\n"


def test_connection_close_closes_after_the_response(floor):
    port, files = floor
    for n in (500, 4 << 20):
        with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
            s.sendall(get(files[n][0], close=True))
            status, headers, body = read_response(f)
            assert headers["connection"] == "close" and body == docroot.content(n)
            assert f.read() == b""          # the server closed the connection


def test_request_split_over_several_sends(floor):
    port, files = floor
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
        req = get(files[10 * 1024][0])
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(0, len(req), 7):
            s.sendall(req[i:i + 7])
            time.sleep(0.001)
        assert read_response(f)[2] == docroot.content(10 * 1024)


def test_subfolder_files_are_found_among_many_names(floor):
    """Every name of the subfolder (and the top's) answers its own bytes
    on one connection, pipelined in batches; near-misses are 404s."""
    port, files = floor
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
        for start in range(0, NAMES, 100):
            batch = range(start, min(start + 100, NAMES))
            s.sendall(b"".join(get(f"/o/{i}") for i in batch))
            for i in batch:
                status, _, body = read_response(f)
                assert status == "HTTP/1.1 200 OK" and body == sub_body(i), i
        for miss in ("/o/", "/o", "/o/3000", "/o/00", "/o/deep", "/o/deep/x", "/0", "/o/1x"):
            s.sendall(get(miss))
            assert read_response(f)[0] == "HTTP/1.1 404 Not Found", miss
        s.sendall(get(files[500][0]))
        assert read_response(f)[2] == docroot.content(500)


@pytest.mark.parametrize("open_first", [False, True])
def test_files_are_read_at_start_and_opened_at_first_request(tmp_path, open_first):
    """The bytes a file had when the floor started, always; with
    --open-first a file gone before its first request is a 404 (then and
    later), one gone after it is still served."""
    root = tmp_path / "root"
    (root / "o").mkdir(parents=True)
    for name in ("a", "gone", "later"):
        (root / "o" / name).write_bytes(b"old " + name.encode())
    p, port = start_floor(root, ["--open-first"] if open_first else [])
    try:
        (root / "o" / "a").write_bytes(b"new a, longer")
        (root / "o" / "gone").unlink()
        with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
            def ask(path):
                s.sendall(get(path))
                status, _, body = read_response(f)
                return status.split(" ", 2)[1], body
            answers = [ask("/o/a"), ask("/o/gone"), ask("/o/later")]
            (root / "o" / "later").unlink()
            answers += [ask("/o/gone"), ask("/o/later")]
    finally:
        p.terminate()
        p.wait(timeout=10)
    gone = ("404", b"not found\n") if open_first else ("200", b"old gone")
    assert answers == [("200", b"old a"), gone, ("200", b"old later"), gone,
                       ("200", b"old later")]


def test_usage():
    assert subprocess.run([str(ZCFLOOR), "--help"], capture_output=True).returncode == 0
    assert subprocess.run([str(ZCFLOOR)], capture_output=True).returncode == 2
    assert subprocess.run([str(ZCFLOOR), "--root", "/", "--listen", "nohost"],
                          capture_output=True).returncode == 2
