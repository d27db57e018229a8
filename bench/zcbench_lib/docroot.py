"""The generated document root: one file per size, deterministic content.

Sizes are written like the paper's axis: "500" is 500 bytes, "1k" is 1024
bytes, "1m" is 1 MiB.  The content of a file depends only on its size, so two
runs (and all servers) serve byte-identical files and a response can be
checked by its length and digest.
"""
import hashlib
import os
import random
import re

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024 * 1024, "mb": 1024 * 1024}


def parse_size(text):
    """"500" -> 500, "1k" -> 1024, "1.5k" -> 1536; ValueError on anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"bad size {text!r} (examples: 500, 1k, 200k, 1m)")
    n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if n != int(n) or n <= 0:
        raise ValueError(f"bad size {text!r}: must be a positive whole number of bytes")
    return int(n)


def size_label(nbytes):
    """The short name of a size: 500 -> "500", 1024 -> "1k", 204800 -> "200k"."""
    for unit, mult in (("m", 1024 * 1024), ("k", 1024)):
        if nbytes >= mult and nbytes % mult == 0:
            return f"{nbytes // mult}{unit}"
    return str(nbytes)


def parse_sizes(text):
    """A comma-separated size list, kept in the given order, no duplicates."""
    out = []
    for part in text.split(","):
        if part.strip():
            n = parse_size(part)
            if n not in out:
                out.append(n)
    if not out:
        raise ValueError("empty size list")
    return out


def file_name(nbytes):
    return f"file-{size_label(nbytes)}.bin"


def content(nbytes):
    """Pseudo-random bytes seeded by the size (incompressible, reproducible)."""
    return random.Random(nbytes).randbytes(nbytes)


def make_docroot(path, sizes):
    """Write one file per size under path; return {size: (url_path, sha256)}."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o755)  # servers may run workers as another user
    files = {}
    for n in sizes:
        data = content(n)
        name = file_name(n)
        full = os.path.join(path, name)
        with open(full, "wb") as f:
            f.write(data)
        os.chmod(full, 0o644)
        files[n] = ("/" + name, hashlib.sha256(data).hexdigest())
    with open(os.path.join(path, "index.html"), "w") as f:
        f.write("<h1>zcbench docroot</h1>\n")
    os.chmod(os.path.join(path, "index.html"), 0o644)
    return files
