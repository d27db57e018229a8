#!/usr/bin/env bash
# copy-libs.sh - sourced: copy_libs ROOT BIN...
#
# Copies every shared library ldd lists for the BINs, and the dynamic
# loader, into the initramfs at ROOT, at the paths the loader will look for
# them (the guest has no ld.so.cache, so the host's paths are the only
# ones that work).  Glibc-built programs in the guest need this; the
# musl-built tests are static.
copy_libs() {
	local root=$1 lib
	shift
	ldd "$@" | awk '
		/=> \// { print $3 }
		/^[ \t]*\/[^ ]*ld-linux/ { print $1 }' | sort -u |
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}
