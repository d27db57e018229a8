"""pytest: zcrelay, `zcbench proxy`'s floor (bench/floor/zcrelay.c), in front
of a tiny Python HTTP origin: a 1 MB body comes through byte-exact on a
kept-alive connection (three times, over one upstream connection) and with
Connection: close (the origin's close reaches the client); a 1 MB upload
goes the other way; a client's half-close is passed on and the answer still
comes back; twenty connections at once; an upstream that refuses ends the
client's connection and the relay goes on.  Loopback only; no timing."""
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zcbench_lib import build_dir, docroot, servers  # noqa: E402

ZCRELAY = Path(build_dir()) / "bench" / "zcrelay"     # ZCBENCH_BUILD or build/
BODY = docroot.content(1 << 20)


class Origin(BaseHTTPRequestHandler):
    """GET: BODY (Content-Length; "Connection: close" answered in kind);
    POST: the hex SHA-256 of the request body."""
    protocol_version = "HTTP/1.1"

    def _answer(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if self.headers.get("Connection", "").lower() == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(BODY)

    def do_POST(self):
        data = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(hashlib.sha256(data).hexdigest().encode())

    def log_message(self, *args):
        pass


class OriginServer(ThreadingHTTPServer):
    """Counts the connections it accepts (in its one accepting thread).  A
    backlog for twenty connects at once (socketserver's is 5: the rest
    would wait for a SYN retransmission)."""
    daemon_threads = True
    request_queue_size = 64
    connections = 0

    def process_request(self, request, client_address):
        OriginServer.connections += 1
        super().process_request(request, client_address)


def stop(p):
    """SIGTERM to the relay's process group (its workers too), then wait."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def start_relay(upstream_port):
    """A zcrelay with 2 workers in front of upstream_port; (process, port)
    once it accepts connections."""
    port = servers.free_port()
    p = subprocess.Popen([str(ZCRELAY), "--listen", f"127.0.0.1:{port}",
                          "--upstream", f"127.0.0.1:{upstream_port}", "--workers", "2"],
                         stderr=subprocess.PIPE, start_new_session=True)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.02)
    return p, port


@pytest.fixture(scope="module")
def relay():
    assert os.access(ZCRELAY, os.X_OK), f"{ZCRELAY} is not built: run make"
    origin = OriginServer(("127.0.0.1", 0), Origin)
    t = threading.Thread(target=origin.serve_forever, daemon=True)
    t.start()
    p, port = start_relay(origin.server_address[1])
    # One whole request first: start_relay's probe (a connection closed
    # without a byte) is accepted and paired with an upstream connection
    # too, before this one, so the counts of the tests below are their own.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s, s.makefile("rb") as f:
        s.sendall(get(close=True))
        assert read_response(f)[2] == BODY
    yield port
    stop(p)
    origin.shutdown()
    origin.server_close()


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


def get(path="/big", close=False):
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\n" + ("Connection: close\r\n" if close else "")
            + "\r\n").encode()


def test_keepalive_1mb_three_times_over_one_upstream_connection(relay):
    before = OriginServer.connections
    with socket.create_connection(("127.0.0.1", relay), timeout=10) as s, s.makefile("rb") as f:
        for _ in range(3):
            s.sendall(get())
            status, headers, body = read_response(f)
            assert status == "HTTP/1.1 200 OK" and "connection" not in headers
            assert body == BODY
    assert OriginServer.connections - before == 1     # one upstream connection per client connection


def test_close_1mb_and_the_connection_ends(relay):
    with socket.create_connection(("127.0.0.1", relay), timeout=10) as s, s.makefile("rb") as f:
        s.sendall(get(close=True))
        status, headers, body = read_response(f)
        assert headers["connection"] == "close" and body == BODY
        assert f.read() == b""                  # the origin's close came through


def test_upload_1mb_the_other_way(relay):
    with socket.create_connection(("127.0.0.1", relay), timeout=10) as s, s.makefile("rb") as f:
        s.sendall(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
        assert read_response(f)[2] == hashlib.sha256(BODY).hexdigest().encode()
        s.sendall(get())                        # and the same connection goes on
        assert read_response(f)[2] == BODY


def test_half_close_is_passed_on(relay):
    """A client that ends its side right after the request still gets the
    whole answer, then the end of the connection."""
    with socket.create_connection(("127.0.0.1", relay), timeout=10) as s, s.makefile("rb") as f:
        s.sendall(get())
        s.shutdown(socket.SHUT_WR)
        assert read_response(f)[2] == BODY
        assert f.read() == b""


def test_twenty_connections_at_once(relay):
    errors = []

    def client():
        try:
            with socket.create_connection(("127.0.0.1", relay), timeout=30) as s, \
                    s.makefile("rb") as f:
                for close in (False, True):
                    s.sendall(get(close=close))
                    if read_response(f)[2] != BODY:
                        errors.append("wrong body")
        except OSError as e:
            errors.append(str(e))
    threads = [threading.Thread(target=client) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []


def test_refused_upstream_ends_the_client_connection():
    gone = servers.free_port()                  # nothing listens there
    p, port = start_relay(gone)
    try:
        for _ in range(3):                      # and the relay goes on
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(get())
                try:
                    assert s.recv(100) == b""
                except ConnectionResetError:
                    pass
        assert p.poll() is None
    finally:
        stop(p)


def test_usage():
    assert subprocess.run([str(ZCRELAY), "--help"], capture_output=True).returncode == 0
    assert subprocess.run([str(ZCRELAY)], capture_output=True).returncode == 2
    assert subprocess.run([str(ZCRELAY), "--listen", "127.0.0.1:0"], capture_output=True).returncode == 2
    assert subprocess.run([str(ZCRELAY), "--listen", "127.0.0.1:0", "--upstream", "nohost"],
                          capture_output=True).returncode == 2
