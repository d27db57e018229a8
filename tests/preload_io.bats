#!/usr/bin/env bats
# libzc-preload.so, conversions pipe and mapwrite, at the edges: blocking
# and non-blocking pipes and sockets, partial writes, EAGAIN, EINTR with and
# without SA_RESTART, EPIPE/SIGPIPE in every disposition, threads writing
# one descriptor, the program's own SIGSEGV/SIGBUS handlers, a file
# truncated under a transfer, mappings changed behind the preload's back,
# descriptor games (close/dup2/close_range on the preload's numbers), fork,
# vfork, exec.  tests/preload_io/io_prog.c prints only timing-independent
# facts; every mode runs without the preload, with it (its defaults), and
# with ZC_ENABLE=mapwrite, and the transcripts and exit statuses must be
# identical.  The statistics file then proves the conversion really ran:
# those two runs turn mapwrite's cost guard off (ZC_MAPWRITE_GUARD=0, so
# that every call it can take is converted, whatever this machine's costs);
# a fourth run with the guard on, which mixes converted and plain calls,
# must give the same transcript too.
# The same program is also run built with musl and with ASan+UBSan.
#
# The preload comes from $ZC_PRELOAD_SO or build/preload/; zcrun from
# beside it.  No timings are asserted.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup_file() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	export PRELOAD="${ZC_PRELOAD_SO:-$ROOT/build/preload/libzc-preload.so}"
	export ZCRUN="$(dirname "$PRELOAD")/zcrun"
	export D="$BATS_FILE_TMPDIR"
	export PROG="$D/io_prog"
	local src="$ROOT/tests/preload_io/io_prog.c"
	cc -O2 -Wall -Wextra -Werror -o "$PROG" "$src" -lpthread
	musl-gcc -O2 -o "$PROG-musl" "$src" -lpthread
	cc -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
		-o "$PROG-asan" "$src" -lpthread
	head -c 20971520 /dev/urandom > "$D/f20"
	head -c 1048579 /dev/urandom > "$D/f1"
	head -c 70000 /dev/urandom > "$D/f70k"
	local i
	for i in 1 2 3 4; do
		head -c $((i * 3000007)) /dev/zero | tr '\0' "\\$((100 + i))" > "$D/t$i"
	done
	export STATS_PY='
import json, sys
path, conv, field = sys.argv[1:4]
n = 0
for line in open(path):
    c = json.loads(line)["conversions"][conv]
    n += c[field] if field != "passed" else sum(c["passed"].values())
print(n)'
}

# run NAME PROG ARGS...: one run in the current settings, transcript (stdout
# + exit status) to $BATS_TEST_TMPDIR/NAME.out, stderr to NAME.err.  A mode
# that truncates its file gets a fresh copy ($D/work) each run.
run1() {
	local name=$1 out="$BATS_TEST_TMPDIR/$1"
	shift
	cp "$D/f20" "$D/work"
	"$@" > "$out.out" 2> "$out.err" && echo "exit 0" >> "$out.out" ||
		echo "exit $?" >> "$out.out"
}

# three PROG MODE ARGS...: plain, ld (defaults), optin (ZC_ENABLE=mapwrite),
# the last two with the cost guard off; and guarded (ZC_ENABLE=mapwrite,
# guard on): identical transcripts.  Statistics in
# $BATS_TEST_TMPDIR/{ld,optin,guarded}.json.
three() {
	local t="$BATS_TEST_TMPDIR"
	rm -f "$t/ld.json" "$t/optin.json" "$t/guarded.json"
	run1 plain "$@"
	ZC_MAPWRITE_GUARD=0 ZC_STATS_FILE="$t/ld.json" LD_PRELOAD="$PRELOAD" run1 ld "$@"
	ZC_MAPWRITE_GUARD=0 ZC_STATS_FILE="$t/optin.json" ZC_ENABLE=mapwrite \
		LD_PRELOAD="$PRELOAD" run1 optin "$@"
	ZC_STATS_FILE="$t/guarded.json" ZC_ENABLE=mapwrite LD_PRELOAD="$PRELOAD" \
		run1 guarded "$@"
	for m in ld optin guarded; do
		if ! cmp -s "$t/plain.out" "$t/$m.out"; then
			echo "# transcripts differ ($m): $*"
			diff "$t/plain.out" "$t/$m.out" | head -20 | sed 's/^/# /'
			return 1
		fi
	done
	if grep -q 'CHECK FAILED' "$t/plain.out"; then
		sed 's/^/# /' "$t/plain.out" | head -20
		return 1
	fi
}

# stat_of RUN CONV FIELD: summed over the run's processes.
stat_of() {
	python3 -c "$STATS_PY" "$BATS_TEST_TMPDIR/$1.json" "$2" "$3"
}

# converted RUN CONV [MIN_BYTES]: the conversion really ran.
converted() {
	local n b
	n=$(stat_of "$1" "$2" converted)
	b=$(stat_of "$1" "$2" bytes_zero_copy)
	if [ "$n" -le 0 ] || [ "$b" -lt "${3:-0}" ]; then
		echo "# $2 converted $n calls, $b bytes in the $1 run"
		cat "$BATS_TEST_TMPDIR/$1.json" | sed 's/^/# /' | head -5
		return 1
	fi
}

@test "the preload and zcrun are built" {
	[ -f "$PRELOAD" ]
	[ -x "$ZCRUN" ]
}

@test "blocking pipe: chunks of 4 KiB to 3 MiB from odd offsets, shared and private mappings" {
	three "$PROG" pipe "$D/f1"
	converted optin mapwrite 20000000
	converted ld pipe
	three "$PROG" pipe-private "$D/f1"
	converted optin mapwrite 20000000
	three "$PROG" pipe "$D/f70k"
	three "$PROG" pipe-quick "$D/f20"
	converted optin mapwrite 20000000
}

@test "writev: heap header, mapped body, trailer; into a pipe and a socket" {
	three "$PROG" writev-pipe "$D/f20"
	converted optin mapwrite 20000000
	three "$PROG" writev-socket "$D/f20"
	converted optin mapwrite 20000000
	three "$PROG" writev-socket "$D/f1"
}

@test "non-blocking pipe and socket: partial writes, EAGAIN, PIPE_BUF writes stay whole" {
	three "$PROG" nonblock-pipe "$D/f20"
	grep -q 'EAGAIN met yes' "$BATS_TEST_TMPDIR/plain.out"
	converted optin mapwrite 1000000
	three "$PROG" nonblock-socket "$D/f20"
	grep -q 'EAGAIN met yes' "$BATS_TEST_TMPDIR/plain.out"
	converted optin mapwrite 1000000
}

@test "EINTR: a timer signal every 500 us, with and without SA_RESTART, pipe and socket" {
	three "$PROG" eintr-pipe "$D/f20"
	converted optin mapwrite 1000000
	three "$PROG" eintr-pipe-restart "$D/f20"
	three "$PROG" eintr-socket "$D/f20"
	converted optin mapwrite 1000000
}

@test "EPIPE and SIGPIPE: default (killed), ignored, handled, MSG_NOSIGNAL" {
	local kind how
	for kind in pipe socket; do
		for how in default ignore handler nosignal; do
			[ "$kind/$how" = pipe/nosignal ] && continue
			three "$PROG" "epipe-$kind" "$D/f20" "$how" || return 1
		done
	done
	grep -q 'exit 0' "$BATS_TEST_TMPDIR/plain.out"
	three "$PROG" epipe-pipe "$D/f20" default
	grep -q 'exit 141' "$BATS_TEST_TMPDIR/plain.out"
}

@test "threads: four threads writing their files into one pipe and one socket" {
	three "$PROG" threads-pipe "$D/t1" "$D/t2" "$D/t3" "$D/t4"
	[ "$(grep -c 'threads: byte' "$BATS_TEST_TMPDIR/plain.out")" = 4 ]
	converted optin mapwrite 10000000
	three "$PROG" threads-socket "$D/t1" "$D/t2" "$D/t3" "$D/t4"
	converted optin mapwrite 10000000
}

@test "the program's own SIGSEGV and SIGBUS handlers run as without the preload" {
	three "$PROG" signals "$D/f20"
	grep -q '2 SIGSEGV handled by the program' "$BATS_TEST_TMPDIR/plain.out"
	converted optin mapwrite 20000000
}

@test "a file truncated under the transfer: no SIGBUS, EFAULT past the end" {
	three "$PROG" truncate "$D/work"
	grep -q 'truncate: survived' "$BATS_TEST_TMPDIR/optin.out"
	converted optin mapwrite
	[ "$(python3 -c "$STATS_PY" "$BATS_TEST_TMPDIR/optin.json" mapwrite passed)" -ge 1 ]
}

@test "mappings changed behind the preload's back (raw mprotect, raw MAP_FIXED)" {
	three "$PROG" behind "$D/f20"
	grep -q 'private mapping has written pages' "$BATS_TEST_TMPDIR/optin.json"
	grep -q 'mapping changed behind our back' "$BATS_TEST_TMPDIR/optin.json"
}

@test "descriptor numbers: close and dup2 on the preload's numbers, close_range (libc and raw)" {
	three "$PROG" fds "$D/f20"
	grep -q 'program closed the file descriptors' "$BATS_TEST_TMPDIR/optin.json"
	three "$PROG" fds-raw "$D/f20"
}

@test "ZC_STATS: a program that dup2s onto the preload's stderr copy does not get the table in its file" {
	local f="$BATS_TEST_TMPDIR/prog.out"
	# dup2 onto every number the preload may have hidden its copy at
	# (from half the descriptor limit, at most 1024, upward).
	run env ZC_STATS=1 LD_PRELOAD="$PRELOAD" /usr/bin/python3 -c '
import os, sys
f = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for n in range(3, 1100):
    if n != f:
        os.dup2(f, n)
os.write(f, b"program\n")
' "$f"
	[ "$status" -eq 0 ]
	[ "$(cat "$f")" = program ]
	[[ "$output" == *"zc-preload: conversion"* ]]   # the table went to stderr
}

@test "fork, vfork and exec children writing from mappings" {
	three "$PROG" fork "$D/f20"
	grep -q "exec'd: 20971520 bytes intact" "$BATS_TEST_TMPDIR/plain.out"
	converted optin mapwrite 20000000
	# The exec'd image reported under the preload too.
	[ "$(grep -c '"exe":"[^"]*io_prog"' "$BATS_TEST_TMPDIR/optin.json")" -ge 3 ]
}

@test "fork while other threads map, unmap and open streams: no child inherits a held lock" {
	three "$PROG" fork-locks "$D/f1"
	ZC_STDIO_MIN=1 three "$PROG" fork-locks "$D/f1"
}

@test "pipe sizes: the default before traffic, a size set by the program is kept" {
	three "$PROG" pipesize "$D/f20"
	grep -q 'fresh 65536, set by the program 8192, after traffic 8192' \
		"$BATS_TEST_TMPDIR/ld.out"
	grep -q 'pipe size set by someone else' "$BATS_TEST_TMPDIR/ld.json"
}

@test "defaults: a sealed memfd is converted, an ordinary file only with ZC_ENABLE=mapwrite" {
	three "$PROG" memfd "$D/f20"
	converted ld mapwrite 20000000
	three "$PROG" pipe-quick "$D/f20"
	[ "$(stat_of ld mapwrite converted)" = 0 ]
	grep -q 'source file can change (ZC_ENABLE=mapwrite converts it)' \
		"$BATS_TEST_TMPDIR/ld.json"
	converted optin mapwrite 20000000
}

# guard_run NAME SETTING: pipe-quick (192 calls of 1 MiB from a mapping
# into a pipe) with ZC_ENABLE=mapwrite, the guard on, and
# ZC_MAPWRITE_GUARD_TEST=SETTING making each call of one way 5 ms dearer.
guard_run() {
	local t="$BATS_TEST_TMPDIR"
	rm -f "$t/$1.json"
	ZC_MAPWRITE_GUARD_TEST="$2" ZC_STATS_FILE="$t/$1.json" ZC_ENABLE=mapwrite \
		LD_PRELOAD="$PRELOAD" run1 "$1" "$PROG" pipe-quick "$D/f192"
	cmp "$t/plain.out" "$t/$1.out"
}

@test "cost guard: the way measured dearer is not taken, but for the warm-up" {
	[ -f "$D/f192" ] || head -c 201326592 /dev/urandom > "$D/f192"
	run1 plain "$PROG" pipe-quick "$D/f192"
	# Epochs of 32 calls (or more, to 5 ms of CPU): the conversion, the
	# copy, the conversion, the copy (the warm-up), then the cheaper way to
	# the end (the first probe would be epoch 32).  The conversion dearer
	# (160 ms an epoch): its two warm-up epochs, 64 calls, are all it gets.
	guard_run refdear ref:5000000
	[ "$(stat_of refdear mapwrite seen)" = 192 ]
	[ "$(stat_of refdear mapwrite converted)" = 64 ]
	grep -q '"the copy measured cheaper here (cost guard)":' "$BATS_TEST_TMPDIR/refdear.json"
	# The copy dearer: its warm-up epochs (at most 64 calls; a conversion
	# epoch may need more than 32 calls to reach 5 ms of CPU and leave
	# room for only one) and the conversion for the rest.
	guard_run copydear copy:5000000
	[ "$(stat_of copydear mapwrite passed)" -le 64 ]
	[ "$(stat_of copydear mapwrite converted)" -ge 128 ]
	grep -q '"a plain call of the cost guard.s measuring epochs":' "$BATS_TEST_TMPDIR/copydear.json"
	# Off: every call converted.
	ZC_MAPWRITE_GUARD=0 guard_run off ref:5000000
	[ "$(stat_of off mapwrite converted)" = 192 ]
}

@test "ZC_DISABLE: pipe,mapwrite off: same results, nothing converted" {
	local t="$BATS_TEST_TMPDIR"
	run1 plain "$PROG" writev-socket "$D/f20"
	ZC_DISABLE=pipe,mapwrite ZC_ENABLE=mapwrite ZC_STATS_FILE="$t/off.json" \
		LD_PRELOAD="$PRELOAD" run1 off "$PROG" writev-socket "$D/f20"
	cmp "$t/plain.out" "$t/off.out"
	[ "$(stat_of off mapwrite seen)" = 0 ]
	[ "$(stat_of off pipe converted)" = 0 ]
}

@test "musl: a musl-built program under the (glibc-built) preload is unharmed" {
	local m
	for m in pipe writev-socket nonblock-pipe epipe-socket fds-raw fork memfd; do
		if [ "$m" = epipe-socket ]; then
			three "$PROG-musl" "$m" "$D/f20" handler || return 1
		else
			three "$PROG-musl" "$m" "$D/f20" || return 1
		fi
	done
	# The preload loaded and converted (pipe and mapwrite need no glibc).
	converted ld mapwrite 20000000
	converted ld pipe
	# stdio is glibc's: a musl program's fopen passes through.
	run env LD_PRELOAD="$PRELOAD" ZC_STATS=1 "$PROG-musl" pipe-quick "$D/f1"
	[ "$status" -eq 0 ]
}

@test "ASan+UBSan build of the test program under the preload" {
	# The preload is not instrumented, so ASan's runtime is not first in
	# the library list; it may come second (verify_asan_link_order=0).
	export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	local m
	# (Not fork-locks: an ASan program that forks while other threads
	# allocate can hang in the child without any preload - ASan's lock.)
	for m in pipe writev-socket nonblock-socket eintr-pipe threads-pipe truncate behind fds fork memfd; do
		case $m in
		threads-pipe) three "$PROG-asan" "$m" "$D/t1" "$D/t2" || return 1 ;;
		truncate | nonblock-socket | eintr-pipe) three "$PROG-asan" "$m" "$D/work" || return 1 ;;
		*) three "$PROG-asan" "$m" "$D/f1" || return 1 ;;
		esac
		! grep -q 'Sanitizer' "$BATS_TEST_TMPDIR/optin.err" || {
			sed 's/^/# /' "$BATS_TEST_TMPDIR/optin.err" | head -20
			return 1
		}
	done
	converted optin mapwrite 1000000
}

@test "UBSan build of the preload (build-asan flavour) under the same edge cases" {
	# ci/test.sh builds build-asan before the bats suites; locally point
	# ZC_PRELOAD_UBSAN_SO at any UBSan-flavour build of the library.
	local so="${ZC_PRELOAD_UBSAN_SO:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/build-asan/preload/libzc-preload.so}"
	[ -f "$so" ] || { echo "# no UBSan preload at $so"; return 1; }
	readelf -d "$so" | grep -q 'libubsan' || { echo "# $so is not built with UBSan"; return 1; }
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	local m
	for m in pipe writev-socket nonblock-pipe eintr-pipe epipe-socket truncate behind fds fork fork-locks memfd; do
		case $m in
		epipe-socket) PRELOAD="$so" three "$PROG" "$m" "$D/work" handler || return 1 ;;
		truncate | nonblock-pipe | eintr-pipe) PRELOAD="$so" three "$PROG" "$m" "$D/work" || return 1 ;;
		*) PRELOAD="$so" three "$PROG" "$m" "$D/f1" || return 1 ;;
		esac
		! grep -q 'runtime error' "$BATS_TEST_TMPDIR/optin.err" "$BATS_TEST_TMPDIR/ld.err" || {
			cat "$BATS_TEST_TMPDIR/optin.err" "$BATS_TEST_TMPDIR/ld.err" | sed 's/^/# /' | head -20
			return 1
		}
	done
	converted optin mapwrite 1000000
	# stdio, fmap and the exit report run through it too.
	run env LD_PRELOAD="$so" ZC_STDIO_MIN=1 ZC_STATS=1 sed -n '$=' "$D/f1"
	[ "$status" -eq 0 ]
	[[ "$output" != *"runtime error"* ]]
	[[ "$output" == *"zc-preload: stdio"* ]]
}
