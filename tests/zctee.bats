#!/usr/bin/env bats
# zctee against GNU tee: the same outputs byte for byte, the same exit
# statuses and (with "tee:" for "zctee:") the same stderr, on pipes,
# regular files, O_APPEND files, process substitutions, early-exiting
# readers with and without -p/--output-error; and strace proving the
# pipe-to-pipe path moves the data with splice/tee, never read/write.
#
# The binary comes from $ZCTEE or build/preload/zctee (ci/test.sh
# runs this file again with the ASan+UBSan build).  No timings asserted.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup_file() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	export ZCTEE="${ZCTEE:-$ROOT/build/preload/zctee}"
	export D="$BATS_FILE_TMPDIR"
	head -c 6000011 /dev/urandom > "$D/in"
	export SUM
	SUM=$(sha256sum < "$D/in" | cut -d' ' -f1)
}

sum() { sha256sum < "$1" | cut -d' ' -f1; }

@test "regular-file outputs and a stdout pipe: byte-identical to the input and to GNU tee" {
	cat "$D/in" | "$ZCTEE" "$D/z1" "$D/z2" | sha256sum > "$D/zs"
	cat "$D/in" | tee "$D/g1" "$D/g2" | sha256sum > "$D/gs"
	cmp "$D/zs" "$D/gs"
	[ "$(cut -d' ' -f1 "$D/zs")" = "$SUM" ]
	cmp "$D/z1" "$D/in"
	cmp "$D/z2" "$D/g2"
}

@test "pipe outputs via process substitution (sha256sum, gzip -1)" {
	cat "$D/in" | "$ZCTEE" >(sha256sum > "$D/ps") >(gzip -1 > "$D/p.gz") > "$D/pout"
	# the substituted processes may still be finishing
	local i
	for i in $(seq 50); do
		[ -s "$D/ps" ] && gzip -t "$D/p.gz" 2>/dev/null && break
		sleep 0.1
	done
	[ "$(cut -d' ' -f1 "$D/ps")" = "$SUM" ]
	[ "$(gzip -dc "$D/p.gz" | sha256sum | cut -d' ' -f1)" = "$SUM" ]
	cmp "$D/pout" "$D/in"
}

@test "mixed outputs: file, pipe, stdout pipe, the same file twice" {
	cat "$D/in" | "$ZCTEE" "$D/m1" >(sha256sum > "$D/ms") "$D/m1b" | sha256sum > "$D/mstd"
	[ "$(cut -d' ' -f1 "$D/mstd")" = "$SUM" ]
	cmp "$D/m1" "$D/in"
	cmp "$D/m1b" "$D/in"
	local i
	for i in $(seq 50); do [ -s "$D/ms" ] && break; sleep 0.1; done
	[ "$(cut -d' ' -f1 "$D/ms")" = "$SUM" ]
}

@test "-a appends, also with stdout an O_APPEND file (splice refuses: copy path)" {
	printf 'head\n' > "$D/az"; printf 'head\n' > "$D/ag"
	printf 'out\n' > "$D/azo"; printf 'out\n' > "$D/ago"
	cat "$D/in" | "$ZCTEE" -a "$D/az" >> "$D/azo"
	cat "$D/in" | tee --append "$D/ag" >> "$D/ago"
	cmp "$D/az" "$D/ag"
	cmp "$D/azo" "$D/ago"
	[ "$(stat -c %s "$D/az")" -eq $((6000011 + 5)) ]
}

@test "empty input: empty outputs, status 0, like GNU tee" {
	run bash -c '"$ZCTEE" "$D/e1" < /dev/null | wc -c'
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
	[ -f "$D/e1" ] && [ ! -s "$D/e1" ]
	: | "$ZCTEE" "$D/e2" > "$D/e2o"
	[ -f "$D/e2" ] && [ ! -s "$D/e2" ] && [ ! -s "$D/e2o" ]
}

@test "stdin a regular file, stdout a pipe" {
	"$ZCTEE" "$D/r1" < "$D/in" | sha256sum > "$D/rs"
	[ "$(cut -d' ' -f1 "$D/rs")" = "$SUM" ]
	cmp "$D/r1" "$D/in"
}

@test "stdout the same pipe twice (/dev/stdout): every byte twice, as GNU tee" {
	head -c 3000000 /dev/zero | "$ZCTEE" /dev/stdout | wc -c > "$D/tw"
	[ "$(cat "$D/tw")" -eq 6000000 ]
	head -c 3000000 /dev/zero | "$ZCTEE" /dev/stdout | tr -d '\0' | wc -c > "$D/tw0"
	[ "$(cat "$D/tw0")" -eq 0 ]
}

@test "nonexistent directory: message, the other outputs complete, status 1 (as GNU tee)" {
	local zs=0 gs=0
	"$ZCTEE" "$D/nodir/x" "$D/n1" < "$D/in" > "$D/no" 2> "$D/nze" || zs=$?
	tee "$D/nodir/x" "$D/n2" < "$D/in" > /dev/null 2> "$D/nge" || gs=$?
	[ "$zs" -eq 1 ] && [ "$gs" -eq 1 ]
	sed 's/^zctee:/tee:/' "$D/nze" | diff - "$D/nge"
	grep -q 'No such file or directory' "$D/nze"
	cmp "$D/n1" "$D/in"
	cmp "$D/no" "$D/in"
	# exit modes stop at the failed open
	run "$ZCTEE" --output-error=exit "$D/nodir/x" "$D/n3" < "$D/in"
	[ "$status" -eq 1 ]
	[ ! -e "$D/n3" ]
}

# reader_exits MODE...: both tees with the reader gone after 1000 bytes and
# a file output; statuses, stderr and the file compared.
reader_exits() {
	set +e
	cat "$D/in" | "$ZCTEE" "$@" "$D/ez" 2> "$D/eze" | head -c 1000 > /dev/null
	local zs=${PIPESTATUS[1]}
	cat "$D/in" | tee "$@" "$D/eg" 2> "$D/ege" | head -c 1000 > /dev/null
	local gs=${PIPESTATUS[1]}
	set -e
	echo "zctee $zs, tee $gs"
	[ "$zs" -eq "$gs" ]
	sed 's/^zctee:/tee:/' "$D/eze" | diff - "$D/ege"
	cmp "$D/ez" "$D/eg"
	echo "$zs"
}

@test "reader exits early, default: killed by SIGPIPE like GNU tee" {
	run reader_exits
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" -eq 141 ]
}

@test "reader exits early, -p: silent, the file gets everything, status 0" {
	run reader_exits -p
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" -eq 0 ]
	cmp "$D/ez" "$D/in"
}

@test "reader exits early, --output-error=warn: Broken pipe message, status 1" {
	run reader_exits --output-error=warn
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" -eq 1 ]
	grep -q 'standard output: Broken pipe' "$D/eze"
	cmp "$D/ez" "$D/in"
}

@test "reader exits early, --output-error=exit and exit-nopipe" {
	run reader_exits --output-error=exit
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" -eq 1 ]
	run reader_exits --output-error=exit-nopipe
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" -eq 0 ]
}

@test "non-blocking stdout pipe with a slow reader: waits (EAGAIN), nothing lost" {
	python3 -c '
import fcntl, os, sys
fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)
os.execv(sys.argv[1], sys.argv[1:])' "$ZCTEE" >(sha256sum > "$D/nbs") < "$D/in" \
		| (sleep 0.5; sha256sum) > "$D/nbo"
	[ "$(cut -d' ' -f1 "$D/nbo")" = "$SUM" ]
	local i
	for i in $(seq 50); do [ -s "$D/nbs" ] && break; sleep 0.1; done
	[ "$(cut -d' ' -f1 "$D/nbs")" = "$SUM" ]
}

@test "pipe in, pipe and file out: data moves by splice and tee, never read or write (strace)" {
	command -v strace >/dev/null || skip "strace not installed"
	cat "$D/in" | timeout 60 strace -o "$D/trace" -e trace=read,write,splice,tee \
		"$ZCTEE" "$D/sf" | sha256sum > "$D/so"
	[ "$(cut -d' ' -f1 "$D/so")" = "$SUM" ]
	grep -q '^tee(' "$D/trace"
	grep -q '^splice(0,' "$D/trace"
	# no data through user space: no read of stdin, no write of stdout or
	# the output pipe (the loader's reads of libraries are on other fds)
	! grep -E '^(read\(0,|write\([1-9][0-9]*,)' "$D/trace"
	# every byte went in by splice from stdin
	local in
	in=$(grep -E '^splice\(0,' "$D/trace" | awk '{ n += $NF } END { print n }')
	[ "$in" -eq 6000011 ]
}

@test "--help, --version, bad mode" {
	run "$ZCTEE" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--output-error"* ]]
	run "$ZCTEE" --version
	[ "$status" -eq 0 ]
	run "$ZCTEE" --output-error=bogus
	[ "$status" -eq 1 ]
	[[ "$output" == *"invalid argument 'bogus'"* ]]
}
