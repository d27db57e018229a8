#!/usr/bin/env python3
"""clf2trace.py - Common/Combined Log Format access logs -> zcstack traces.

Reads nginx or Apache access logs in Common Log Format,

    host ident user [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326

optionally followed by the Combined fields ("referer" "user-agent") and
anything else a custom format appends, and writes the trace format of
docs/trace-format.md with all six fields:

    time_ms object_id size_bytes method status path

  time_ms    milliseconds since the first logged request (the log's clock
             has one-second resolution).  Logs are written when responses
             finish, so timestamps can step back a little; such a request
             gets the previous time (counted as "clamped").
  object_id  one per distinct request target (path with query), numbered
             0, 1, 2... in order of first appearance: the same path always
             has the same id within a trace.
  size_bytes the logged response byte count.

Lines that cannot be replayed are never dropped silently.  They are counted
per reason, reported on stderr and in '#' lines at the end of the trace:

  no_body        size '-' or 0 (304 Not Modified, HEAD, errors): the trace
                 format needs a positive size
  bad_request    request line is not "METHOD target [PROTOCOL]" (e.g. "-"
                 from a timed-out connection, or a scanner's junk)
  status         status not selected by --status
  malformed      not a CLF line at all: an error that stops the conversion
                 with the line number (exit 2), unless --skip-malformed

Exit status: 0 ok, 1 I/O error, 2 malformed input or bad arguments.
"""

import argparse
import re
import sys
from datetime import datetime

CLF = re.compile(
    r'(?P<host>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    r'"(?P<request>(?:[^"\\]|\\.)*)" (?P<status>\d{3}) (?P<bytes>\d+|-)'
    r'(?P<rest>\s.*)?$')
METHOD = re.compile(r'[A-Z][A-Z_-]*$')
TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"
REASONS = ("no_body", "bad_request", "status", "malformed")


class Malformed(Exception):
    pass


def parse_status_list(text):
    try:
        codes = {int(s) for s in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of status codes: {text!r}") from None
    if not codes or any(c < 100 or c > 599 for c in codes):
        raise argparse.ArgumentTypeError(f"status codes are 100-599: {text!r}")
    return codes


def encode_target(target):
    """Keep the target one whitespace-free token (it already is, in practice)."""
    return re.sub(r"\s", lambda m: "%%%02X" % ord(m.group()), target)


class Converter:
    def __init__(self, out, statuses=None, skip_malformed=False):
        self.out = out
        self.statuses = statuses
        self.skip_malformed = skip_malformed
        self.ids = {}
        self.first_ms = None
        self.last_ms = 0
        self.lines = 0
        self.requests = 0
        self.clamped = 0
        self.skipped = dict.fromkeys(REASONS, 0)
        self._time_cache = (None, 0)

    def epoch_ms(self, text):
        if self._time_cache[0] != text:  # logs repeat each second many times
            try:
                dt = datetime.strptime(text, TIME_FORMAT)
            except ValueError:
                raise Malformed(f"bad timestamp [{text}]") from None
            self._time_cache = (text, int(dt.timestamp()) * 1000)
        return self._time_cache[1]

    def header(self, source):
        self.out.write("# zctrace 1\n")
        self.out.write("# generator: bench/trace/clf2trace.py\n")
        self.out.write(f"# source: {source}\n")

    def line(self, raw):
        self.lines += 1
        text = raw.rstrip("\r\n")
        if not text.strip():
            return  # an empty line is not a request
        m = CLF.match(text)
        if not m:
            raise Malformed("not a Common/Combined Log Format line")
        status = int(m["status"])
        if not 100 <= status <= 599:
            raise Malformed(f"status {status} is not an HTTP status")
        ms = self.epoch_ms(m["time"])  # validate even lines we skip
        parts = m["request"].split(" ")
        if len(parts) not in (2, 3) or not METHOD.match(parts[0]) or not parts[1]:
            self.skipped["bad_request"] += 1
            return
        if self.statuses is not None and status not in self.statuses:
            self.skipped["status"] += 1
            return
        if m["bytes"] == "-" or int(m["bytes"]) == 0:
            self.skipped["no_body"] += 1
            return
        if self.first_ms is None:
            self.first_ms = ms
            self.out.write(f"# start_epoch_ms: {ms}\n")
        t = ms - self.first_ms
        if t < self.last_ms:
            t = self.last_ms
            self.clamped += 1
        self.last_ms = t
        target = encode_target(parts[1])
        oid = self.ids.setdefault(target, len(self.ids))
        self.out.write(f"{t} {oid} {int(m['bytes'])} {parts[0]} {status} {target}\n")
        self.requests += 1

    def trailer(self):
        w = self.out.write
        w(f"# lines: {self.lines}\n")
        w(f"# requests: {self.requests}\n")
        w(f"# objects: {len(self.ids)}\n")
        for r in REASONS:
            w(f"# skipped_{r}: {self.skipped[r]}\n")
        w(f"# clamped_time: {self.clamped}\n")

    def summary(self):
        s = self.skipped
        return (f"{self.lines} lines, {self.requests} requests written "
                f"({len(self.ids)} objects); skipped: {s['no_body']} without a body "
                f"(size '-' or 0), {s['bad_request']} without a usable request line, "
                f"{s['status']} by --status, {s['malformed']} malformed; "
                f"{self.clamped} timestamps clamped")


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Convert Common/Combined Log Format access logs to a zcstack trace.")
    p.add_argument("logs", nargs="*", default=["-"],
                   help="access logs, read in order (default stdin)")
    p.add_argument("--out", "-o", default="-", help="trace file (default stdout)")
    p.add_argument("--status", type=parse_status_list,
                   help="keep only these status codes, e.g. 200,206")
    p.add_argument("--skip-malformed", action="store_true",
                   help="count and skip lines that are not CLF instead of failing")
    args = p.parse_args(argv)

    try:
        out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8",
                                                        newline="\n")
    except OSError as e:
        print(f"clf2trace: {args.out}: {e.strerror}", file=sys.stderr)
        return 1
    conv = Converter(out, args.status, args.skip_malformed)
    conv.header(" ".join(args.logs))
    try:
        for name in args.logs:
            f = sys.stdin if name == "-" else open(name, encoding="utf-8",
                                                   errors="surrogateescape")
            with f:
                for lineno, raw in enumerate(f, 1):
                    try:
                        conv.line(raw)
                    except Malformed as e:
                        if not args.skip_malformed:
                            print(f"clf2trace: {name}:{lineno}: {e}", file=sys.stderr)
                            return 2
                        conv.skipped["malformed"] += 1
        conv.trailer()
        out.flush()
    except OSError as e:
        print(f"clf2trace: {e.filename or args.out}: {e.strerror}", file=sys.stderr)
        return 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"clf2trace: {conv.summary()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
