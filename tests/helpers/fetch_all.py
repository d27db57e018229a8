#!/usr/bin/env python3
"""fetch_all.py URL ROOT ROUNDS CONNS: GET every file under ROOT (one level)
ROUNDS times over CONNS keep-alive connections, each round on a different
connection for a file (so several workers see it), and check every body
against the file.  Prints "fetched N"; exits 1 at the first wrong body."""
import http.client
import os
import sys
import urllib.parse


def main():
    url, root, rounds, nconns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    u = urllib.parse.urlparse(url)
    conns = [http.client.HTTPConnection(u.hostname, u.port, timeout=30) for _ in range(nconns)]
    names = sorted(n for n in os.listdir(root) if os.path.isfile(os.path.join(root, n)))
    want = {}
    n = 0
    for r in range(rounds):
        for i, name in enumerate(names):
            c = conns[(i + r) % nconns]
            c.request("GET", "/" + urllib.parse.quote(name))
            resp = c.getresponse()
            body = resp.read()
            if name not in want:
                with open(os.path.join(root, name), "rb") as f:
                    want[name] = f.read()
            if resp.status != 200 or body != want[name]:
                print(f"{name}: status {resp.status}, {len(body)} bytes, want {len(want[name])}")
                return 1
            n += 1
    print(f"fetched {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
