#!/usr/bin/env python3
"""check_answers.py PORT LIST ROOT [CONNECTIONS] - play a request list
(one path per line, as `zcbench replay` writes requests.txt) against a
server on 127.0.0.1:PORT over CONNECTIONS keep-alive connections (default
16), each taking the next path, and check every answer: status 200, a
Content-Length equal to the size of ROOT + path, and the whole body before
the next request.  Stops at the first bad answer and prints it (the
request's index, path, what was wrong, its head); exit status 1 then.

What wrk cannot say: wrk counts an answer it could not parse, or a
connection cut after a head, as one "read error" and reconnects, which
tells a replay that a request was lost but not which or how."""
import os
import re
import socket
import sys
import threading
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    port, root = int(sys.argv[1]), sys.argv[3]
    paths = [line.strip() for line in open(sys.argv[2]) if line.strip()]
    nconn = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    state = {"next": 0, "bad": None}
    lock = threading.Lock()

    def bad(i, path, what, head):
        with lock:
            if state["bad"] is None:
                state["bad"] = (i, path, what, head[:400])

    def play():
        s = socket.create_connection(("127.0.0.1", port))
        buf = b""
        while True:
            with lock:
                if state["next"] >= len(paths) or state["bad"]:
                    break
                i = state["next"]
                state["next"] += 1
            path = paths[i]
            want = os.path.getsize(root + path)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: check\r\n\r\n".encode())
            while b"\r\n\r\n" not in buf:
                d = s.recv(1 << 20)
                if not d:
                    return bad(i, path, "connection closed before the head", buf)
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
            if not head.startswith(b"HTTP/1.1 200 ") or not m:
                return bad(i, path, "not a 200 with a Content-Length", head)
            n = int(m.group(1))
            if n != want:
                return bad(i, path, f"Content-Length {n}, the file has {want}", head)
            while len(buf) < n:
                d = s.recv(1 << 20)
                if not d:
                    return bad(i, path, f"connection closed after {len(buf)} of {n} body bytes", head)
                buf += d
            buf = buf[n:]
        s.close()

    threads = [threading.Thread(target=play) for _ in range(nconn)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{state['next']} requests in {time.monotonic() - t0:.1f} s")
    if state["bad"]:
        print("bad answer: request %d, %s: %s\n%s" % (*state["bad"][:3], state["bad"][3].decode(errors="replace")))
        sys.exit(1)


if __name__ == "__main__":
    main()
