#!/usr/bin/env bats
# libzc-preload.so, conversion 4 (stdio): real glibc programs and a C test
# program run with and without the preload on random inputs of many sizes;
# stdout (sha256), stderr and exit status must be identical.  No timings.
#
# The preload comes from the normal build (build/preload/), or from
# $ZC_PRELOAD_SO.  The C test program is built here with cc.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup_file() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	export PRELOAD="${ZC_PRELOAD_SO:-$ROOT/build/preload/libzc-preload.so}"
	export DATA="$BATS_FILE_TMPDIR/data"
	export PROG="$BATS_FILE_TMPDIR/stdio_prog"
	mkdir -p "$DATA"
	cc -O2 -Wall -Werror -o "$PROG" "$ROOT/tests/preload_stdio/stdio_prog.c" \
		-lpthread -ldl

	# Text: random base64 lines of varying length; with and without a
	# final newline.  Binary: raw random bytes (NULs, no line structure).
	local n
	for n in 0 1 4095 4096 4097 1048579 20971520; do
		head -c "$n" /dev/urandom | base64 -w 0 | fold -w 77 |
			awk 'NR % 3 == 0 { print substr($0, 1, NR % 50) ; next } { print }' |
			head -c "$n" > "$DATA/t$n.nonl"
		if [ "$n" -gt 0 ]; then
			head -c $((n - 1)) "$DATA/t$n.nonl" > "$DATA/t$n.nl"
			echo >> "$DATA/t$n.nl"
		fi
		[ "$n" -le 1048579 ] && head -c "$n" /dev/urandom > "$DATA/b$n.bin"
	done
	# Repeated lines, so uniq and sort -u have work to do.
	for n in 1 2 3; do sed -n '1,400p' "$DATA/t1048579.nl"; done | sort > "$DATA/dups.nl"
}

# Run "$@" without the preload, then with it twice: with the default size
# threshold (small files go back to read() at open) and with ZC_STDIO_MIN=1
# (every regular non-empty file is mapped).  Compare everything.
same() {
	local a="$BATS_TEST_TMPDIR/a" b="$BATS_TEST_TMPDIR/b" ra rb min
	"$@" > "$a.out" 2> "$a.err" && ra=0 || ra=$?
	for min in "" 1; do
		ZC_STDIO_MIN=$min LD_PRELOAD="$PRELOAD" "$@" > "$b.out" 2> "$b.err" &&
			rb=0 || rb=$?
		if [ "$ra" != "$rb" ] ||
		   [ "$(sha256sum < "$a.out")" != "$(sha256sum < "$b.out")" ] ||
		   ! cmp -s "$a.err" "$b.err"; then
			echo "differs (ZC_STDIO_MIN=$min): $* (exit $ra vs $rb)"
			diff "$a.err" "$b.err" | head -5
			cmp "$a.out" "$b.out" | head -2
			return 1
		fi
	done
}

# Same, with FILE on stdin of each run: "-r" redirects it, "-p" pipes it.
same_in() {
	local how=$1 file=$2 a="$BATS_TEST_TMPDIR/a" b="$BATS_TEST_TMPDIR/b" ra rb
	shift 2
	if [ "$how" = -r ]; then
		"$@" < "$file" > "$a.out" 2> "$a.err" && ra=0 || ra=$?
		ZC_STDIO_MIN=1 LD_PRELOAD="$PRELOAD" "$@" < "$file" > "$b.out" 2> "$b.err" && rb=0 || rb=$?
	else
		cat "$file" | "$@" > "$a.out" 2> "$a.err" && ra=0 || ra=$?
		cat "$file" | ZC_STDIO_MIN=1 LD_PRELOAD="$PRELOAD" "$@" > "$b.out" 2> "$b.err" && rb=0 || rb=$?
	fi
	[ "$ra" = "$rb" ] && cmp "$a.out" "$b.out" && cmp "$a.err" "$b.err"
}

# Every input file against one command line (the file is the last word).
each_file() {
	local f
	for f in "$DATA"/*.nl "$DATA"/*.nonl "$DATA"/*.bin; do
		same "$@" "$f" || return 1
	done
}

@test "the preload exists and the stdio conversion is active" {
	[ -f "$PRELOAD" ]
	run "$PROG" mapped "$DATA/t1048579.nl"
	[ "$output" = "mapped 0" ]
	run env LD_PRELOAD="$PRELOAD" "$PROG" mapped "$DATA/t1048579.nl"
	[ "$output" = "mapped 1" ]
	# Below the size threshold (256 KiB by default) it stays on read().
	run env ZC_STDIO_MIN=2000000 LD_PRELOAD="$PRELOAD" "$PROG" mapped "$DATA/t1048579.nl"
	[ "$output" = "mapped 0" ]
	# Switched off, it passes through.
	run env ZC_DISABLE=stdio LD_PRELOAD="$PRELOAD" "$PROG" mapped "$DATA/t1048579.nl"
	[ "$output" = "mapped 0" ]
}

@test "sed reads every size the same" {
	each_file sed -n '$p'
	each_file sed 's/[aeiou]/_/g; 3d'
}

@test "cut reads every size the same" {
	each_file cut -c1-5
	each_file cut -d/ -f2
}

@test "stats count the bytes a mapped stream served, also after fflush (cut)" {
	local f="$DATA/t1048579.nl" size
	size=$(stat -c %s "$f")
	# cut's fclose (gnulib) fflush()es first, which empties the get area.
	ZC_STATS=1 LD_PRELOAD="$PRELOAD" cut -c1-5 "$f" 2> "$BATS_TEST_TMPDIR/err" > /dev/null
	run awk '$2 == "stdio" { print $3, $4, $5 }' "$BATS_TEST_TMPDIR/err"
	[ "$output" = "1 1 $size" ]
	ZC_STATS=1 LD_PRELOAD="$PRELOAD" sed -n '$p' "$f" 2> "$BATS_TEST_TMPDIR/err" > /dev/null
	run awk '$2 == "stdio" { print $5 }' "$BATS_TEST_TMPDIR/err"
	[ "$output" = "$size" ]
}

@test "uniq (freopen on stdin) reads every size the same" {
	each_file uniq
	same uniq -c "$DATA/dups.nl"
	same uniq -d "$DATA/dups.nl"
}

@test "sort, md5sum, sha256sum, od, nl read every size the same" {
	each_file sort
	same sort -u "$DATA/dups.nl"
	each_file sha256sum
	each_file md5sum
	same od -An -tx1 "$DATA/b4097.bin"
	each_file nl -ba
}

@test "awk, grep, wc, python3 (not stdio readers) are unchanged" {
	each_file awk '{ n += length } END { print n, NR }'
	each_file grep -c a
	each_file wc -lc
	same python3 -c 'import sys, hashlib
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for line in f: h.update(line)
print(h.hexdigest())' "$DATA/t1048579.nonl"
}

@test "several files in one run, and stdin mixed with files" {
	same sed -n '$p' "$DATA/t4095.nl" "$DATA/t0.nonl" "$DATA/t4097.nonl"
	same_in -r "$DATA/t4097.nl" cut -c2-3 "$DATA/t4096.nl" - "$DATA/t1.nl"
	same_in -p "$DATA/t4097.nl" cut -c2-3 "$DATA/t4096.nl" - "$DATA/t1.nl"
	# /dev/stdin names a regular file here: converted, same bytes.
	same_in -r "$DATA/t1048579.nl" sed -n '$p' /dev/stdin
	same sort -m "$DATA/dups.nl" "$DATA/dups.nl"
}

@test "errors: missing file, directory, unreadable, /dev/null" {
	same sed -n p "$DATA/nonexistent"
	same sed -n p "$DATA"
	same cut -c1 "$DATA"
	same sed -n p /dev/null
	same sha256sum /dev/null
	if [ "$(id -u)" != 0 ]; then
		install -m 000 /dev/null "$BATS_TEST_TMPDIR/noread"
		same sed -n p "$BATS_TEST_TMPDIR/noread"
	fi
}

@test "special files pass through: /proc (size 0), fifo, pipe" {
	same sed -n '1p' /proc/version
	same cut -c1-20 /proc/self/cmdline
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	# One writer per run (same() runs the command three times); a writer
	# shared between runs could be read by two of them.
	same sh -c 'cat "$1" > "$2" & sed -n "\$p" "$2"; wait' sh \
		"$DATA/t4097.nl" "$BATS_TEST_TMPDIR/fifo"
	same_in -p "$DATA/t1048579.nl" sed -n '$p' /dev/stdin
}

@test "C: ftell/fseek/fgetpos/ungetc/rewind/SEEK_END" {
	for f in t4097.nl t4096.nonl t1048579.nl; do
		same "$PROG" seek "$DATA/$f"
	done
}

@test "C: fread in odd sizes and getline over every size" {
	local f
	for f in "$DATA"/*; do
		same "$PROG" read "$f"
	done
}

@test "C: fmap and fbufsize (read and write mappings)" {
	local f
	for f in t0.nonl t1.nl t4095.nl t4096.nl t1048579.nonl b4097.bin; do
		rm -f "$BATS_TEST_TMPDIR/w"
		same "$PROG" fmap "$DATA/$f" "$BATS_TEST_TMPDIR/w"
	done
	run env ZC_STDIO_MIN=1 LD_PRELOAD="$PRELOAD" "$PROG" fmap "$DATA/t4097.nl" "$BATS_TEST_TMPDIR/w2"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "wmap middle 10000" ]
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/w2")" = 10000 ]
}

@test "C: a file appended while read, SEEK_END after growth" {
	local i
	for i in 1 2; do
		cp "$DATA/t1048579.nl" "$BATS_TEST_TMPDIR/grow$i"
	done
	"$PROG" append "$BATS_TEST_TMPDIR/grow1" > "$BATS_TEST_TMPDIR/o1"
	ZC_STDIO_MIN=1 LD_PRELOAD="$PRELOAD" "$PROG" append "$BATS_TEST_TMPDIR/grow2" > "$BATS_TEST_TMPDIR/o2"
	cmp "$BATS_TEST_TMPDIR/o1" "$BATS_TEST_TMPDIR/o2"
	cmp "$BATS_TEST_TMPDIR/grow1" "$BATS_TEST_TMPDIR/grow2"
}

@test "C: a file truncated while read does not SIGBUS" {
	local f
	for f in t4097.nl t1048579.nl; do
		cp "$DATA/$f" "$BATS_TEST_TMPDIR/trunc"
		run env ZC_STDIO_MIN=1 LD_PRELOAD="$PRELOAD" "$PROG" truncate "$BATS_TEST_TMPDIR/trunc"
		[ "$status" -eq 0 ]
		[ "$output" = "survived" ]
	done
}

@test "C: threads reading private and shared streams" {
	same "$PROG" threads "$DATA/t1048579.nl"
	same "$PROG" threads "$DATA/t20971520.nonl"
}

@test "C: fork before the first read, fdopen at an offset, fflush then read()" {
	same "$PROG" fork "$DATA/t4097.nl"
	same "$PROG" fork "$DATA/t1048579.nl"
	same "$PROG" fd "$DATA/t4097.nl"
	same "$PROG" fd "$DATA/t1048579.nonl"
}

@test "C: the program's own SIGBUS handler keeps working" {
	same "$PROG" sigbus "$DATA/t4097.nl"
	# Default disposition: a real bus error still kills the program.
	run env LD_PRELOAD="$PRELOAD" sh -c 'kill -BUS $$'
	[ "$status" -eq 135 ]
}
