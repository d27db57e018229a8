#!/usr/bin/env bash
# ci/build.sh [normal|asan] - configure (if needed) and build one build tree.
#
#   normal  -> build/       debugoptimized
#   asan    -> build-asan/  ASan + UBSan (-Db_sanitize=address,undefined)
#   static  -> build-static/ musl, static (ci/static.sh, its own setup)
#
# A tree is configured once; after that ninja re-runs meson by itself
# whenever a meson.build or meson_options.txt changes.
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-normal}
case "$flavour" in
normal) dir=build; opts=() ;;
static) exec ci/static.sh ;;
asan)   dir=build-asan; opts=(-Db_sanitize=address,undefined -Db_lundef=false) ;;
*) echo "usage: $0 [normal|asan|static]" >&2; exit 2 ;;
esac

setup() { # meson setup arguments...; quiet unless it fails
	local log
	log=$(mktemp)
	if ! meson setup "$@" >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		return 1
	fi
	rm -f "$log"
}

if [ ! -f "$dir/build.ninja" ]; then
	rm -rf "$dir"
	setup "$dir" "${opts[@]}"
fi

ninja -C "$dir"
