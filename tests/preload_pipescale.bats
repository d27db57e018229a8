#!/usr/bin/env bats
# Self-scaling pipes (preload/pipes.c, docs/preload.md "pipe"): a
# pipeline under zcrun bursts (the pipe grows), goes quiet, trickles, and
# the pipe's size (F_GETPIPE_SZ, asked by the writer of its own stdout)
# falls back to 64 KiB; every byte arrives, in order.  Two ways down: a
# pause of 1.5 s (the idle rule) and a trickle without any pause (the
# pressure rule, halving).  Without the preload the pipe never changes
# size, which shows the test measures the preload and not the kernel.
#
# The preload comes from $ZC_PRELOAD_SO or build/preload/; zcrun from
# beside it.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup_file() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	export PRELOAD="${ZC_PRELOAD_SO:-$ROOT/build/preload/libzc-preload.so}"
	export ZCRUN="$(dirname "$PRELOAD")/zcrun"
	export BURST="$ROOT/tests/helpers/pipeburst.py"
	python3 "$BURST" expect | sha256sum > "$BATS_FILE_TMPDIR/expect.sha"
}

# run_pipeline PREFIX QUIET_S: the writer into `cat` (the reader, under the
# same preload), output checked against the expected stream.
run_pipeline() {
	local log="$BATS_TEST_TMPDIR/sizes" out="$BATS_TEST_TMPDIR/out"
	$1 sh -c "python3 '$BURST' write '$log' $2 | cat > '$out'"
	sha256sum < "$out" | cmp - "$BATS_FILE_TMPDIR/expect.sha"
	cat "$log"
}

size_of() { # PHASE
	awk -v p="$1" '$1 == p { print $2 }' "$BATS_TEST_TMPDIR/sizes"
}

@test "burst grows the pipe, a quiet spell (1.5 s) shrinks it back; bytes exact" {
	run_pipeline "$ZCRUN --" 1.5
	[ "$(size_of start)" = 65536 ]
	[ "$(size_of burst)" -gt 65536 ]
	[ "$(size_of quiet)" = 65536 ]
}

@test "burst then a trickle without a pause: pressure halves it back; bytes exact" {
	run_pipeline "$ZCRUN --" 0
	[ "$(size_of burst)" -gt 65536 ]
	[ "$(size_of quiet)" = 65536 ]
}

@test "without the preload the pipe stays at 64 KiB (the test sees the preload)" {
	run_pipeline "" 0
	[ "$(size_of start)" = 65536 ]
	[ "$(size_of burst)" = 65536 ]
	[ "$(size_of quiet)" = 65536 ]
}

@test "ZC_DISABLE=pipe: no growth, no shrink; bytes exact" {
	run_pipeline "env ZC_DISABLE=pipe $ZCRUN --" 0
	[ "$(size_of burst)" = 65536 ]
	[ "$(size_of quiet)" = 65536 ]
}
