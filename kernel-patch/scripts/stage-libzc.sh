#!/usr/bin/env bash
# stage-libzc.sh ROOT - put libzc's own tests into the guest initramfs.
#
# Builds, with the host's glibc toolchain, in a meson tree of this lane's
# own (out/meson, never build/): libzc's cmocka test programs (the meson
# suite zcstack:libzc, the same programs `make test` runs on the host),
# zcbench-ipc, and tests/libzc/zc_backend.c.  Copies them stripped of debug
# information to ROOT/libzc/{tests,bin}, with every shared library they
# load and the dynamic loader (scripts/copy-libs.sh), and
# the guest-side scripts tests/libzc/{run,ipc}.sh as ROOT/libzc/{run,ipc}.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/copy-libs.sh
root=$1
top=$(cd .. && pwd)
build=out/meson

# Configured once; after that ninja re-runs meson when a meson file
# changes.  Regenerate before the introspection below reads the test list.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$build/build.ninja" ]; then
	rm -rf "$build"
	meson setup "$build" "$top" --buildtype=debugoptimized >"$log" 2>&1 ||
		{ cat "$log"; exit 1; }
fi
ninja -C "$build" build.ninja >"$log" 2>&1 || { cat "$log"; exit 1; }

# The libzc suite's programs, by their paths in the build tree.
mapfile -t tests < <(meson introspect "$build" --tests | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    if "zcstack:libzc" in t["suite"]:
        print(os.path.relpath(t["cmd"][0], build))' "$build")
[ "${#tests[@]}" -gt 0 ] || { echo "stage-libzc: no libzc tests found"; exit 1; }
nice -n 10 ninja -C "$build" "${tests[@]}" bench/zcbench-ipc libzc/libzc.a \
	>"$log" 2>&1 || { tail -40 "$log"; exit 1; }
gcc -O2 -Wall -Wextra -Werror -I"$top/libzc/include" \
	-o "$build/zc-backend" tests/libzc/zc_backend.c "$build/libzc/libzc.a" \
	-lpthread

mkdir -p "$root/libzc/tests" "$root/libzc/bin"
bins=()
for t in "${tests[@]}"; do
	strip -g -o "$root/libzc/tests/${t##*/}" "$build/$t"
	bins+=("$build/$t")
done
strip -g -o "$root/libzc/bin/zcbench-ipc" "$build/bench/zcbench-ipc"
strip -g -o "$root/libzc/bin/zc-backend" "$build/zc-backend"
bins+=("$build/bench/zcbench-ipc" "$build/zc-backend")
install -m 755 tests/libzc/run.sh "$root/libzc/run"
install -m 755 tests/libzc/ipc.sh "$root/libzc/ipc"

# Shared libraries and the loader, where the binaries will look for them.
copy_libs "$root" "${bins[@]}"
echo "stage-libzc: ${#tests[@]} test programs, zcbench-ipc, zc-backend"
