#!/usr/bin/env python3
"""check_exports.py - libzc.so exports exactly the functions its public
headers declare.

usage: check_exports.py NM LIBZC_SO VERSION HEADER... -- CC [CC_ARGS...]

Each header (zc.h, zc_channel.h, zc_cs.h) is run through the C preprocessor
(CC -E) and only the text that comes from that header itself is kept (so a
header that includes zc.h does not count zc.h's functions twice); every
top-level declaration with a parameter list that is not a typedef is one
API function.  The shared library's defined dynamic symbols (NM -D
--defined-only) must be the union of them exactly, each with the version
node VERSION (libzc/libzc.map).  So declaring a function in a public header
without exporting it fails, and so does exporting anything that no public
header declares (an internal function, a global variable).

Exit status 0 when they match, 1 with the differences otherwise.
"""
import os
import re
import subprocess
import sys


def header_functions(cc, header):
    out = subprocess.run(cc + ["-E", "-x", "c", header], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    # Keep the lines the line markers attribute to the header itself.
    real = os.path.realpath(header)
    keep, text = False, []
    for line in out.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            keep = os.path.realpath(m.group(1)) == real
            continue
        if keep:
            text.append(line)
    src = " ".join(text)
    # Drop brace bodies (struct and enum members): only top-level
    # declarations are left, separated by ';'.
    while True:
        flat = re.sub(r"\{[^{}]*\}", " ", src)
        if flat == src:
            break
        src = flat
    names = set()
    for decl in src.split(";"):
        decl = " ".join(decl.split())
        if "(" not in decl or re.match(r"(typedef|extern\s+\"C\")\b", decl):
            continue
        m = re.search(r"([A-Za-z_]\w*)\s*\(", decl)
        rest = decl[m.end():] if m else ""
        if not m or rest.lstrip().startswith("*"):
            sys.exit(f"check_exports: cannot read this declaration: {decl}")
        names.add(m.group(1))
    return names


def exported_symbols(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", "--format=posix", lib],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    syms = {}
    for line in out.splitlines():
        name, kind = line.split()[:2]
        if kind == "A":		# the version node itself
            continue
        base, _, version = name.partition("@")
        syms[base] = version.lstrip("@")
    return syms


def main():
    args = sys.argv[1:]
    if "--" not in args or args.index("--") < 4 or args[-1] == "--":
        sys.exit(__doc__)
    sep = args.index("--")
    nm, lib, version = args[:3]
    headers, cc = args[3:sep], args[sep + 1:]
    api = set()
    for header in headers:
        funcs = header_functions(cc, header)
        if api & funcs:
            sys.exit(f"check_exports: declared twice: {sorted(api & funcs)}")
        api |= funcs
    exported = exported_symbols(nm, lib)
    missing = sorted(api - exported.keys())
    extra = sorted(exported.keys() - api)
    unversioned = sorted(s for s in api & exported.keys()
                         if exported[s] != version)
    for s in missing:
        print(f"declared in a public header, not exported: {s}")
    for s in extra:
        print(f"exported, not declared in a public header: {s}")
    for s in unversioned:
        print(f"exported without version {version}: {s} "
              f"({exported[s] or 'no version'})")
    print(f"{', '.join(os.path.basename(h) for h in headers)} declare "
          f"{len(api)} functions; "
          f"{os.path.basename(lib)} exports {len(exported)} symbols")
    return 1 if missing or extra or unversioned else 0


if __name__ == "__main__":
    sys.exit(main())
