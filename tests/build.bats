#!/usr/bin/env bats
# libzc as a user gets it: the generated pkg-config file and the static
# library are enough to build a program against zc.h.
#
# Runs against the normal build in build/ (ci/test.sh builds it first).

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	BUILD="$ROOT/build"
	TMP="$(mktemp -d)"
}

teardown() {
	rm -rf "$TMP"
}

@test "the uninstalled libzc.pc gives usable cflags and libs" {
	[ -f "$BUILD/meson-uninstalled/libzc-uninstalled.pc" ]
	run env PKG_CONFIG_PATH="$BUILD/meson-uninstalled" pkg-config --cflags --libs libzc
	[ "$status" -eq 0 ]
	[[ "$output" == *"-I$ROOT/libzc/include"* ]] || [[ "$output" == *"libzc/include"* ]]
	[[ "$output" == *"-lzc"* ]]
}

@test "the installable libzc.pc names the library and its header dir" {
	[ -f "$BUILD/meson-private/libzc.pc" ]
	run env PKG_CONFIG_PATH="$BUILD/meson-private" pkg-config --cflags --libs libzc
	[ "$status" -eq 0 ]
	[[ "$output" == *"-lzc"* ]]
	run env PKG_CONFIG_PATH="$BUILD/meson-private" pkg-config --modversion libzc
	[ "$status" -eq 0 ]
	[ -n "$output" ]
}

@test "a program including zc.h links against libzc.a and reports the portable backend" {
	[ -f "$BUILD/libzc/libzc.a" ]
	cat > "$TMP/hello.c" <<'C'
#include <stdio.h>
#include <zc.h>

int main(void)
{
	puts(zc_backend_name());
	return 0;
}
C
	cflags=$(PKG_CONFIG_PATH="$BUILD/meson-uninstalled" pkg-config --cflags libzc)
	run cc -std=gnu11 -Wall -Werror $cflags -o "$TMP/hello" "$TMP/hello.c" \
		"$BUILD/libzc/libzc.a" -pthread
	echo "$output"
	[ "$status" -eq 0 ]
	run "$TMP/hello"
	[ "$status" -eq 0 ]
	[ "$output" = "portable" ]
}
