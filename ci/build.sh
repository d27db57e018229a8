#!/usr/bin/env bash
# ci/build.sh [normal|asan] - configure (if needed) and build one build tree.
#
#   normal  -> build/       debugoptimized
#   asan    -> build-asan/  ASan + UBSan (-Db_sanitize=address,undefined)
#
# The meson files compile only the sources that exist yet (fs.exists), and
# meson does not notice a file appearing.  So we keep a signature of the set
# of C sources and meson files in the build tree and reconfigure when it
# changes.
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-normal}
case "$flavour" in
normal) dir=build; opts=() ;;
asan)   dir=build-asan; opts=(-Db_sanitize=address,undefined -Db_lundef=false) ;;
*) echo "usage: $0 [normal|asan]" >&2; exit 2 ;;
esac

signature() {
	# Names only: content changes are ninja's job, presence is meson's.
	# kernel-patch/ is left out: it has its own build (and a kernel tree).
	local d dirs=()
	for d in libzc server cgi gds-cache bench tests; do
		[ -d "$d" ] && dirs+=("$d")
	done
	{
		ls meson.build meson_options.txt 2>/dev/null
		find "${dirs[@]}" \( -name '*.c' -o -name 'meson.build' \) -print
	} | LC_ALL=C sort | sha256sum | cut -d' ' -f1
}

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

sig=$(signature)
stamp="$dir/.zc-source-set"

if [ ! -f "$dir/build.ninja" ]; then
	rm -rf "$dir"
	setup "$dir" "${opts[@]}"
	echo "$sig" > "$stamp"
elif [ "$(cat "$stamp" 2>/dev/null)" != "$sig" ]; then
	setup --reconfigure "$dir" "${opts[@]}"
	echo "$sig" > "$stamp"
fi

ninja -C "$dir"
