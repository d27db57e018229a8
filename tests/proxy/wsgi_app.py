"""The upstream contract (README.md) as a WSGI application, for gunicorn:

  .venv/bin/gunicorn --chdir tests/proxy --bind 127.0.0.1:PORT \
      --workers 2 --worker-class gthread --threads 8 wsgi_app:app
"""
import hashlib
import http
import json
import time
from urllib.parse import parse_qs

PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PIECE = 64 * 1024
# Byte i of a /size body is PATTERN[i % 62]: a piece that starts at offset
# off is BLOCK[off % 62:][:len].
BLOCK = PATTERN * (PIECE // len(PATTERN) + 2)


def pattern_pieces(n):
    off = 0
    while off < n:
        k = min(PIECE, n - off)
        start = off % len(PATTERN)
        yield BLOCK[start:start + k]
        off += k


def read_body(environ):
    """Yield the request body in pieces (gunicorn undoes chunking)."""
    inp = environ["wsgi.input"]
    while True:
        data = inp.read(PIECE)
        if not data:
            return
        yield data


def reply(start_response, code, body, ctype="text/plain", extra=()):
    reason = http.HTTPStatus(code).phrase if code in http.HTTPStatus._value2member_map_ else "Unknown"
    headers = [("Content-Type", ctype)] + list(extra)
    if code in (204, 304):
        body = b""
    else:
        headers.append(("Content-Length", str(len(body))))
    start_response("%d %s" % (code, reason), headers)
    return [body]


def app(environ, start_response):
    method = environ["REQUEST_METHOD"]
    path = environ["PATH_INFO"]
    query = parse_qs(environ.get("QUERY_STRING", ""))

    if path.startswith("/size/"):
        if method not in ("GET", "HEAD"):
            return reply(start_response, 405, b"method not allowed\n")
        try:
            n = int(path[len("/size/"):])
            delay = int(query.get("delay_ms", ["0"])[0])
            assert n >= 0 and delay >= 0
        except (ValueError, AssertionError):
            return reply(start_response, 400, b"bad size\n")
        time.sleep(delay / 1000)
        headers = [("Content-Type", "application/octet-stream")]
        if query.get("chunked") != ["1"]:
            headers.append(("Content-Length", str(n)))
        # No Content-Length: gunicorn sends each piece as one chunk.
        start_response("200 OK", headers)
        return pattern_pieces(0 if method == "HEAD" else n)

    if path == "/sha256":
        if method not in ("POST", "PUT"):
            return reply(start_response, 405, b"method not allowed\n")
        h, count = hashlib.sha256(), 0
        for data in read_body(environ):
            h.update(data)
            count += len(data)
        return reply(start_response, 200, b"%s %d\n" % (h.hexdigest().encode(), count))

    if path == "/echo" or path.startswith("/echo/"):
        body_len = sum(len(d) for d in read_body(environ))
        headers = []
        # gunicorn fills environ in the order the fields came (a repeated
        # field joined with ","), and drops names holding "_".
        for key, value in environ.items():
            if key.startswith("HTTP_"):
                headers.append([key[5:].replace("_", "-").lower(), value])
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                headers.append([key.replace("_", "-").lower(), value])
        doc = {"method": method, "path": environ["RAW_URI"],
               "headers": headers, "body_len": body_len}
        body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        return reply(start_response, 200, body.encode("utf-8") + b"\n", "application/json")

    if path.startswith("/status/"):
        try:
            code = int(path[len("/status/"):])
            assert 200 <= code <= 599
        except (ValueError, AssertionError):
            return reply(start_response, 400, b"bad status\n")
        return reply(start_response, code, b"status %d\n" % code)

    if path == "/set-cookie":
        return reply(start_response, 200, b"two cookies\n", extra=[
            ("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; Path=/; HttpOnly")])

    return reply(start_response, 404, b"not found\n")
