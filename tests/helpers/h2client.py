#!/usr/bin/python3
"""HTTP/2 clients that misbehave, for tests/h2.bats (h2c, prior knowledge).

usage: h2client.py PORT COMMAND [ARGS] [--pid PID]

  rapid-reset N         HEADERS then RST_STREAM, N streams (CVE-2023-44487)
  continuation N        one HEADERS, then up to N CONTINUATION frames that
                        never end the head (CVE-2024-27316)
  flood ping|settings N [--no-read]
                        N PINGs or SETTINGS; --no-read never reads a byte
                        (a small receive buffer), else the acks are read
  hpack-bomb            a 4,000-byte field put in the dynamic table, then a
                        head that names it 16,000 times (64 MB decoded), then
                        an ordinary request on the same connection
  zero-window PATH N S  SETTINGS_INITIAL_WINDOW_SIZE 0, N requests for PATH,
                        never a WINDOW_UPDATE: waits up to S seconds for the
                        server to close
  no-read PATH N S      every window wide open, N requests for PATH, then no
                        read for S seconds (a small receive buffer); then
                        reads what is left: did the server close?
  reload PATH PID       a request for PATH (larger than 64 KiB) whose window
                        runs out, then SIGHUP to PID (the master) while it
                        waits: the GOAWAY's code, then the window opened:
                        did the whole body come?
  frames PATH F N       SETTINGS_MAX_FRAME_SIZE F, windows wide open, N
                        requests for PATH on one connection: the largest
                        DATA frame and the bodies' SHA-256 (one if all agree)
  idle N S              N connections that send the preface and nothing more:
                        waits up to S seconds until the server closed them

Each prints what the server did (GOAWAY and its code, whether and after
what it closed, statuses) as "key value" lines; with --pid, also the
server worker's resident memory (VmRSS, KiB) before and at its highest.
Exits 0 when it ran to the end (the server's verdict is for the test to
judge), 2 on bad usage.  Debian's python3-h2 (hpack, hyperframe).
"""
import hashlib
import os
import resource
import select
import signal
import socket
import sys
import threading
import time

import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame,
                              GoAwayFrame, HeadersFrame, PingFrame,
                              RstStreamFrame, SettingsFrame,
                              WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR",
         3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED",
         6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL",
         9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Watch:
    """The server worker's VmRSS, sampled in the background."""

    def __init__(self, pid):
        self.pid = pid
        self.before = rss_kib(pid) if pid else 0
        self.peak = self.before
        self.stop = False
        if pid:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stop:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def report(self):
        self.stop = True
        if self.pid:
            self.peak = max(self.peak, rss_kib(self.pid))
            print("rss_before_kib", self.before)
            print("rss_peak_kib", self.peak)


class Conn:
    def __init__(self, port, settings=None, rcvbuf=None):
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.port = port
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.dec.max_allowed_table_size = 65536
        self.buf = b""
        self.goaway = None
        self.closed = False
        self.statuses = {}
        self.data = {}
        self.max_data = 0        # the largest DATA payload seen
        self.keep = False        # keep DATA bytes in bodies
        self.bodies = {}
        self.ended = set()       # streams whose END_STREAM came
        self.sock.sendall(PREFACE + SettingsFrame(0, settings or {}).serialize())

    def send(self, frames):
        self.sock.sendall(b"".join(f.serialize() for f in frames))

    def head(self, path, extra=()):
        return self.enc.encode([(":method", "GET"), (":scheme", "http"),
                                (":path", path),
                                (":authority", "127.0.0.1:%d" % self.port)]
                               + list(extra))

    def get(self, sid, path, extra=()):
        return HeadersFrame(sid, self.head(path, extra),
                            flags=["END_HEADERS", "END_STREAM"])

    def _frame(self):
        """The next whole frame in buf, or None."""
        if len(self.buf) < 9:
            return None
        f, length = Frame.parse_frame_header(memoryview(self.buf[:9]))
        if len(self.buf) < 9 + length:
            return None
        f.parse_body(memoryview(self.buf[9:9 + length]))
        self.buf = self.buf[9 + length:]
        return f

    def pump(self, timeout):
        """Read for up to timeout seconds (or until the server closes):
        statuses, DATA bytes, GOAWAY; SETTINGS are acknowledged."""
        end = time.time() + timeout
        first = True
        while not self.closed:
            left = max(0.0, end - time.time())
            if left <= 0 and not first:
                return
            first = False
            p = select.poll()
            p.register(self.sock, select.POLLIN)
            if not p.poll(left * 1000):
                return
            try:
                got = self.sock.recv(1 << 16)
            except OSError:
                got = b""
            if not got:
                self.closed = True
                return
            self.buf += got
            while True:
                f = self._frame()
                if f is None:
                    break
                self.on_frame(f)

    def on_frame(self, f):
        if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
            try:
                self.sock.sendall(SettingsFrame(0, flags=["ACK"]).serialize())
            except OSError:
                pass    # it closed: the next read says so
        elif isinstance(f, HeadersFrame):
            for k, v in self.dec.decode(f.data):
                if k in (":status", b":status"):
                    self.statuses[f.stream_id] = int(v)
        elif isinstance(f, DataFrame):
            self.data[f.stream_id] = self.data.get(f.stream_id, 0) + len(f.data)
            self.max_data = max(self.max_data, len(f.data))
            if self.keep:
                self.bodies.setdefault(f.stream_id, bytearray()).extend(f.data)
            if "END_STREAM" in f.flags:
                self.ended.add(f.stream_id)
        elif isinstance(f, GoAwayFrame) and self.goaway is None:
            self.goaway = CODES.get(f.error_code, str(f.error_code))

    def report(self):
        print("goaway", self.goaway or "none")
        print("closed", "yes" if self.closed else "no")


def hpack_int(value, prefix_bits, first):
    """RFC 7541 5.1: value with an N-bit prefix, `first` the byte's
    other bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A literal field without indexing, new name, no Huffman (RFC 7541
    6.2.2): it touches no table, so any number of them is valid."""
    return (b"\x00" + hpack_int(len(name), 7, 0) + name +
            hpack_int(len(value), 7, 0) + value)


def reader(c, seconds):
    t = threading.Thread(target=c.pump, args=(seconds,), daemon=True)
    t.start()
    return t


def send_until_closed(c, batches):
    """Send batches of frames until the server ends the connection;
    returns how many batches went."""
    sent = 0
    for b in batches:
        if c.closed:
            break
        try:
            c.send(b())
        except OSError:
            break
        sent += 1
    return sent


def rapid_reset(port, n):
    c = Conn(port)
    t = reader(c, 60)

    def pair(i):
        sid = 2 * i + 1
        return lambda: [c.get(sid, "/small.txt"),
                        RstStreamFrame(sid, error_code=8)]
    sent = send_until_closed(c, (pair(i) for i in range(n)))
    t.join()
    print("streams_sent", sent)
    c.report()


def continuation(port, n):
    c = Conn(port)
    t = reader(c, 30)
    block = c.head("/small.txt")

    def frames():
        yield lambda: [HeadersFrame(1, block)]
        for i in range(n):
            # A valid field that never ends the head.
            part = literal(b"x-c%d" % i, b"v" * 1000)
            yield lambda part=part: [ContinuationFrame(1, part)]
    sent = send_until_closed(c, frames())
    t.join()
    print("frames_sent", sent)
    c.report()


def flood(port, kind, n, no_read):
    c = Conn(port, rcvbuf=4096 if no_read else None)
    if no_read:
        # Let the server's preface in, acknowledge it, then read no more.
        c.pump(0.5)
        c.sock.settimeout(3)
    else:
        t = reader(c, 30)

    def one(i):
        if kind == "ping":
            return lambda: [PingFrame(0, (i % 2**64).to_bytes(8, "big"))
                            for _ in range(100)]
        return lambda: [SettingsFrame(0, {0x4: 65535}) for _ in range(100)]
    sent = send_until_closed(c, (one(i) for i in range(n // 100)))
    print("frames_sent", sent * 100)
    if no_read:
        # What did the server do meanwhile?  Read it now.
        c.sock.settimeout(None)
        c.pump(10)
    else:
        t.join()
    c.report()


def hpack_bomb(port):
    c = Conn(port)
    c.pump(0.3)
    big = ("x-big", "a" * 4000)
    c.send([c.get(1, "/small.txt", [big])])
    c.pump(1)
    # The head names the field once (it is in the table after), then
    # refers to it by index, one byte each.
    block = c.head("/small.txt", [big])
    idx = c.enc.header_table.search(big[0].encode(), big[1].encode())[0]
    block += bytes([0x80 | idx]) * 16000
    c.send([HeadersFrame(3, block[:16000]),
            ContinuationFrame(3, block[16000:],
                              flags=["END_HEADERS"])])
    c.pump(2)
    c.send([c.get(5, "/small.txt")])
    c.pump(2)
    for sid in (1, 3, 5):
        print("status_%d" % sid, c.statuses.get(sid, "none"))
    c.report()


def zero_window(port, path, n, wait):
    c = Conn(port, settings={0x4: 0})
    c.send([c.get(2 * i + 1, path) for i in range(n)])
    start = time.time()
    c.pump(wait)
    print("headers", len(c.statuses))
    print("data_bytes", sum(c.data.values()))
    print("closed_after_s", "%.1f" % (time.time() - start))
    c.report()


def no_read(port, path, n, wait):
    # Every window open as wide as it goes: only TCP holds the server back.
    c = Conn(port, settings={0x4: 2**31 - 1}, rcvbuf=4096)
    c.pump(0.3)
    c.send([WindowUpdateFrame(0, 2**31 - 1 - 65535)] +
           [c.get(2 * i + 1, path) for i in range(n)])
    time.sleep(wait)
    # Now read what is left: a server that gave up has closed.
    c.pump(5)
    print("data_bytes", sum(c.data.values()))
    c.report()


def reload(port, path, pid):
    c = Conn(port)
    c.send([c.get(1, path)])
    # The stream's window (65,535 bytes) is used up, and stays so.
    c.pump(1)
    print("data_before", c.data.get(1, 0))
    os.kill(pid, signal.SIGHUP)
    c.pump(3)
    print("goaway_before_window", c.goaway or "none")
    c.send([WindowUpdateFrame(0, 2**31 - 1 - 65535),
            WindowUpdateFrame(1, 2**31 - 1 - 65535)])
    c.pump(10)
    print("status", c.statuses.get(1, "none"))
    print("data_bytes", c.data.get(1, 0))
    c.report()


def frames(port, path, max_frame, n):
    # Windows wide open and the frame size asked: only TCP paces the
    # server, and its DATA frames may be up to max_frame long.
    c = Conn(port, settings={0x4: 2**31 - 1, 0x5: max_frame})
    c.keep = True
    c.send([WindowUpdateFrame(0, 2**31 - 1 - 65535)] +
           [c.get(2 * i + 1, path) for i in range(n)])
    end = time.time() + 30
    while len(c.ended) < n and not c.closed and time.time() < end:
        c.pump(1)
    print("ended", len(c.ended))
    print("largest_data_frame", c.max_data)
    digests = sorted({hashlib.sha256(b).hexdigest() for b in c.bodies.values()})
    print("sha256", " ".join(digests) or "none")
    c.report()


def idle(port, n, wait, watch=None):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    conns = [Conn(port) for _ in range(n)]
    start = time.time()

    def pump_all(seconds):
        end = time.time() + seconds
        while time.time() < end and any(not c.closed for c in conns):
            p = select.poll()
            fds = {c.sock.fileno(): c for c in conns if not c.closed}
            for fd in fds:
                p.register(fd, select.POLLIN)
            for fd, _ in p.poll(200):
                fds[fd].pump(0)
    # The server's SETTINGS acknowledged, then nothing more from us.
    pump_all(0.5)
    print("opened", n)
    print("open_after_preface", sum(1 for c in conns if not c.closed))
    print("preface_s", "%.1f" % (time.time() - start))
    if watch:
        watch.peak = max(watch.peak, rss_kib(watch.pid))
        print("rss_all_open_kib", rss_kib(watch.pid))
    pump_all(wait)
    print("goaways", sum(1 for c in conns if c.goaway))
    print("closed", sum(1 for c in conns if c.closed))


def main():
    args = sys.argv[1:]
    pid = None
    if "--pid" in args:
        i = args.index("--pid")
        pid = int(args[i + 1])
        del args[i:i + 2]
    no_read_flag = "--no-read" in args
    args = [a for a in args if a != "--no-read"]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    port, cmd, rest = int(args[0]), args[1], args[2:]
    w = Watch(pid)
    if cmd == "rapid-reset":
        rapid_reset(port, int(rest[0]))
    elif cmd == "continuation":
        continuation(port, int(rest[0]))
    elif cmd == "flood":
        flood(port, rest[0], int(rest[1]), no_read_flag)
    elif cmd == "hpack-bomb":
        hpack_bomb(port)
    elif cmd == "zero-window":
        zero_window(port, rest[0], int(rest[1]), float(rest[2]))
    elif cmd == "no-read":
        no_read(port, rest[0], int(rest[1]), float(rest[2]))
    elif cmd == "reload":
        reload(port, rest[0], int(rest[1]))
    elif cmd == "frames":
        frames(port, rest[0], int(rest[1]), int(rest[2]))
    elif cmd == "idle":
        idle(port, int(rest[0]), float(rest[1]), w if pid else None)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    w.report()


if __name__ == "__main__":
    main()
