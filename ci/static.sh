#!/usr/bin/env bash
# ci/static.sh [test] - static musl build of zchttpd into build-static/
# (make static; docker/Dockerfile's build stage runs this same script).
#
# musl-gcc searches only musl's headers, and libzc needs the kernel's UAPI
# headers (linux/, asm/) and zchttpd liburing's; build-static/kh/ links
# Debian's copies in rather than copying constants into the sources.  With
# "test", runs the meson tests of that tree (the fuzz corpus replays:
# cmocka has no musl build).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-static
kh=$PWD/$dir/kh
arch=$(gcc -dumpmachine)

if [ ! -f "$dir/build.ninja" ]; then
	rm -rf "$dir"
	mkdir -p "$kh"
	for d in linux asm-generic mtd; do ln -sfn "/usr/include/$d" "$kh/$d"; done
	ln -sfn "/usr/include/$arch/asm" "$kh/asm"
	# liburing (--event io_uring): Debian's liburing.a needs only calloc,
	# free and __stack_chk_fail from the C library, which musl has.
	ln -sfn /usr/include/liburing.h "$kh/liburing.h"
	ln -sfn /usr/include/liburing "$kh/liburing"
	log=$(mktemp)
	if ! CC=musl-gcc meson setup "$dir" -Dstatic_image=true \
		-Dbuildtype=release -Ddefault_library=static -Dprefer_static=true \
		-Dc_args="-isystem $kh" -Dc_link_args=-static >"$log" 2>&1; then
		cat "$log" >&2; rm -f "$log"; exit 1
	fi
	rm -f "$log"
fi

ninja -C "$dir"
strip -o "$dir/zchttpd" "$dir/server/zchttpd"
if [ "${1:-}" = test ]; then
	meson test -C "$dir" --print-errorlogs
fi
