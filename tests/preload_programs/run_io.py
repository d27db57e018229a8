#!/usr/bin/env python3
"""run_io.py - run one command with its stdin and stdout on a chosen kind of
descriptor, so the same program can be compared with and without
libzc-preload.so reading from a file, a pipe or a socket.

    run_io.py --in KIND --input FILE --out KIND --stdout FILE --stderr FILE
              [--cwd DIR] [--timeout S] -- argv...

  --in   file   stdin is FILE opened read-only (a regular file)
         pipe   stdin is a pipe; this process writes FILE into it
         unix   stdin is one end of an AF_UNIX stream socketpair, fed with FILE
         tcp    stdin is an accepted TCP connection on 127.0.0.1, fed with FILE
         null   stdin is /dev/null
  --out  file   stdout is the regular file --stdout (created, truncated)
         pipe   stdout is a pipe; this process copies it into --stdout
         unix   stdout is an AF_UNIX stream socket, copied into --stdout
         tcp    stdout is a TCP connection on 127.0.0.1, copied into --stdout

The feeder and the drain are threads of this process, which never has the
preload (only argv does, through env or zcrun): the plumbing is the same
for both runs.  Prints the command's status the way a shell reports it
(0-255, or 128+N when signal N killed it) and exits 0; exits 3 when the
plumbing itself failed, 4 on --timeout (the command is killed).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading

CHUNK = 1 << 16


def tcp_pair():
    """(ours, theirs): two ends of one loopback TCP connection."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as lst:
        lst.bind(("127.0.0.1", 0))
        lst.listen(1)
        ours = socket.create_connection(lst.getsockname())
        theirs, _ = lst.accept()
    return ours, theirs


def make_ends(kind, child_reads):
    """(ours, theirs): file descriptors of a pipe or a connected socket pair;
    theirs becomes the command's stdin (child_reads) or stdout."""
    if kind == "pipe":
        r, w = os.pipe()
        return (w, r) if child_reads else (r, w)
    if kind == "unix":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        a, b = tcp_pair()
    return (a.detach(), b.detach())


def feed(fd, path, is_socket, errors):
    """Write the whole file into fd, then signal EOF.  EPIPE is not an error:
    the command may stop reading early (head, a failing program)."""
    try:
        with open(path, "rb") as f:
            while True:
                data = f.read(CHUNK)
                if not data:
                    break
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
    except (BrokenPipeError, ConnectionResetError):
        pass
    except OSError as e:
        errors.append(f"feeder: {e}")
    finally:
        if is_socket:
            try:
                socket.socket(fileno=os.dup(fd)).shutdown(socket.SHUT_WR)
            except OSError:
                pass
        os.close(fd)


def drain(fd, path, errors):
    try:
        with open(path, "wb") as out:
            while True:
                data = os.read(fd, CHUNK)
                if not data:
                    break
                out.write(data)
    except ConnectionResetError:
        pass
    except OSError as e:
        errors.append(f"drain: {e}")
    finally:
        os.close(fd)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--in", dest="kin", choices=("file", "pipe", "unix", "tcp", "null"), default="null")
    p.add_argument("--input")
    p.add_argument("--out", dest="kout", choices=("file", "pipe", "unix", "tcp"), default="file")
    p.add_argument("--stdout", required=True)
    p.add_argument("--stderr", required=True)
    p.add_argument("--cwd")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("argv", nargs=argparse.REMAINDER)
    a = p.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not argv or (a.kin not in ("null",) and not a.input):
        p.error("need --input for that --in, and a command after --")

    errors, threads, close_after = [], [], []
    if a.kin == "file":
        stdin = os.open(a.input, os.O_RDONLY)
    elif a.kin == "null":
        stdin = os.open(os.devnull, os.O_RDONLY)
    else:
        ours, stdin = make_ends(a.kin, child_reads=True)
        threads.append(threading.Thread(target=feed, args=(ours, a.input, a.kin != "pipe", errors)))
    close_after.append(stdin)

    if a.kout == "file":
        stdout = os.open(a.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    else:
        ours, stdout = make_ends(a.kout, child_reads=False)
        threads.append(threading.Thread(target=drain, args=(ours, a.stdout, errors)))
    close_after.append(stdout)
    stderr = os.open(a.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    close_after.append(stderr)

    # SIGPIPE at its default in the child, as from a shell (Python ignores it).
    def child_setup():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    try:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=a.cwd,
                                preexec_fn=child_setup, close_fds=True)
    except OSError as e:
        print(f"run_io: cannot run {argv[0]}: {e}", file=sys.stderr)
        return 3
    for fd in close_after:
        os.close(fd)
    for t in threads:
        t.daemon = True
        t.start()
    try:
        rc = proc.wait(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        print(f"run_io: timeout after {a.timeout}s: {' '.join(argv)}", file=sys.stderr)
        return 4
    for t in threads:
        t.join(timeout=a.timeout)
        if t.is_alive():
            print("run_io: a feeder/drain thread did not finish (descriptor kept open by a "
                  "leftover process?)", file=sys.stderr)
            return 3
    if errors:
        print("run_io: " + "; ".join(errors), file=sys.stderr)
        return 3
    print(rc if rc >= 0 else 128 - rc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
