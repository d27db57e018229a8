"""Slow clients for `zcbench replay --slow-clients` (IO-Lite section 4.4,
Figure 7).

Each slow client is one keep-alive connection with a small receive buffer
that asks for a large file over and over and reads its answer a few KB at a
time with pauses between reads, like a client behind a slow link: the
server's send buffer for it stays full and every response takes seconds.
This machine has no netem (docs: emulate delay by pacing), so the link's
slowness is the client's own pacing; on loopback the kernel then holds the
unsent part of each response in the server's socket -- by reference to
page-cache pages with sendfile, as a copy with write.

Clients run as threads of zcbench, pinned with wrk to the client CPUs;
they sleep nearly all the time.  Each counts the bytes it
received and the responses it completed, so a run can check that the slow
clients were really being served.
"""
import os
import socket
import threading
import time

RCVBUF = 4096          # bytes: a small receive window
CHUNK = 2048           # bytes per read
PAUSE_S = 0.05         # between reads: about 40 KB/s per client


class SlowClient(threading.Thread):
    def __init__(self, port, path, stop, cpus=None):
        super().__init__(daemon=True)
        self.port, self.path, self.stop_ev, self.cpus = port, path, stop, cpus
        self.bytes = 0
        self.responses = 0
        self.errors = 0

    def run(self):
        if self.cpus:   # this thread only: beside wrk, off the server's CPU
            os.sched_setaffinity(0, set(self.cpus))
        req = f"GET {self.path} HTTP/1.1\r\nHost: slow\r\n\r\n".encode()
        while not self.stop_ev.is_set():
            try:
                s = None
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
                s.settimeout(30)
                s.connect(("127.0.0.1", self.port))
                while not self.stop_ev.is_set():
                    s.sendall(req)
                    if not self.read_response(s):
                        break
                    self.responses += 1
            except OSError:
                self.errors += 1
                self.stop_ev.wait(0.2)
            finally:
                if s is not None:
                    s.close()

    def read_response(self, s):
        """Read one response slowly; False if the connection ended."""
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(CHUNK)
            if not b:
                return False
            head += b
            self.bytes += len(b)
        h, _, rest = head.partition(b"\r\n\r\n")
        length = 0
        for line in h.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        left = length - len(rest)
        while left > 0 and not self.stop_ev.is_set():
            self.stop_ev.wait(PAUSE_S)
            b = s.recv(min(CHUNK, left))
            if not b:
                return False
            self.bytes += len(b)
            left -= len(b)
        return left <= 0


class SlowClients:
    """n slow clients of 127.0.0.1:port asking for path; a context manager."""

    def __init__(self, port, path, n, cpus=None):
        self.stop_ev = threading.Event()
        self.clients = [SlowClient(port, path, self.stop_ev, cpus) for _ in range(n)]

    def __enter__(self):
        for c in self.clients:
            c.start()
        time.sleep(0.5 if self.clients else 0)   # all connected and waiting on the server
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        for c in self.clients:
            c.join(timeout=35)

    @property
    def bytes(self):
        return sum(c.bytes for c in self.clients)

    @property
    def responses(self):
        return sum(c.responses for c in self.clients)

