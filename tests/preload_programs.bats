#!/usr/bin/env bats
# libzc-preload.so and zcrun with REAL programs (docs/preload.md): cat, dd, tee,
# sort, sha256sum, gzip/gunzip, tar, python3, cp, split, head, tail, sed,
# awk, uniq, alone and in pipelines, on random inputs of many sizes, with
# stdin from a file, a pipe, a UNIX socket or a TCP socket and stdout to a
# file, a pipe or a socket.  Every case runs without the preload, with
# LD_PRELOAD and through zcrun, and must give the same stdout (sha256), the
# same stderr, the same exit status and the same files.  The statistics file
# (ZC_STATS_FILE) then shows that the conversion meant for the case really
# fired (pipe, mapwrite, stdio): a case that passes because nothing was
# converted proves nothing.  forward only observes by design (forward.c):
# its calls must be seen and accounted for.  The zcrun runs also switch on
# the opt-in cases (--enable=mapwrite).  ZC_DISABLE switches each
# conversion off in turn: same bytes, and that conversion's converted count
# must be 0.  Edge cases with real programs: EAGAIN, EINTR, EPIPE/SIGPIPE,
# threads on one pipe, a file truncated under mmap+write, a program's own
# SIGSEGV handler, exec following.  No timings.
#
# The preload comes from $ZC_PRELOAD_SO or build/preload/; zcrun from
# $ZC_ZCRUN or beside the preload.  tests/preload_programs/ has the
# plumbing helper (run_io.py), small real-program helpers, the Apache check
# (apache_check.py) and the Python test-suite comparison (python_suite.py);
# the stats file is read by bench/zcbench_lib/preload_stats.py.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup_file() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	export ROOT
	export PRELOAD="${ZC_PRELOAD_SO:-$ROOT/build/preload/libzc-preload.so}"
	export ZCRUN="${ZC_ZCRUN:-$(dirname "$PRELOAD")/zcrun}"
	export PY3=/usr/bin/python3   # Debian's: dynamically linked, glibc stdio
	export RUN_IO="$ROOT/tests/preload_programs/run_io.py"
	export STATS="$ROOT/bench/zcbench_lib/preload_stats.py"
	export DATA="$BATS_FILE_TMPDIR/data"
	mkdir -p "$DATA"
	# Random bytes, and random text lines (base64, ragged lengths, with
	# repeats so that sort and uniq have work), at the sizes that matter:
	# empty, one byte, a page and its neighbours, 1 MiB + an odd amount,
	# 20 MiB.
	local n
	for n in 0 1 4095 4096 4097 1048579 20971520; do
		head -c "$n" /dev/urandom > "$DATA/b$n"
		head -c "$(((n * 3 + 3) / 4))" /dev/urandom | base64 -w 0 | fold -w 61 |
			awk '{ print substr($0, 1, 1 + NR * 7 % 61) } NR % 5 == 0 { print "dup", NR % 7 }' |
			head -c "$n" > "$DATA/t$n"
	done
	export SIZES="0 1 4095 4096 4097 1048579 20971520"
	# The cases the preload converts only on request (docs/preload.md):
	# the zcrun runs switch them on, so both settings are compared.
	export OPTIN=mapwrite
	# mapwrite's cost guard takes the plain call where this machine's copy
	# measured cheaper; the cases here check that the conversion fires and
	# keeps every byte, so it is off (tests/preload_io.bats runs the guard).
	export ZC_MAPWRITE_GUARD=0
}

# run_mode MODE KIN KOUT INPUT CMD: run `bash -c CMD` under MODE with its
# stdin and stdout of the given kinds (run_io.py), in a fresh directory.
# MODE: plain; ld (LD_PRELOAD, the preload's defaults); zcrun (through
# zcrun, with the opt-in cases switched on too: --enable=$OPTIN); off-CONV
# (LD_PRELOAD, ZC_ENABLE=$OPTIN and ZC_DISABLE=CONV).  Leaves
# $BATS_TEST_TMPDIR/MODE/{out,err,rc,files} and the statistics in
# $BATS_TEST_TMPDIR/MODE.stats.
run_mode() {
	local mode=$1 kin=$2 kout=$3 input=$4 cmd=$5
	local d="$BATS_TEST_TMPDIR/$mode" s="$BATS_TEST_TMPDIR/$mode.stats" pre rc
	local clean=(env -u LD_PRELOAD -u ZC_DISABLE -u ZC_ENABLE -u ZC_STATS -u ZC_STATS_FILE -u ZC_NOFOLLOW)
	rm -rf "$d" "$s"
	mkdir -p "$d/cwd"
	case $mode in
	plain) pre=("${clean[@]}") ;;
	ld) pre=("${clean[@]}" LD_PRELOAD="$PRELOAD" ZC_STATS_FILE="$s") ;;
	zcrun) pre=("${clean[@]}" "$ZCRUN" --stats-file="$s" --enable="$OPTIN" --) ;;
	off-*) pre=("${clean[@]}" LD_PRELOAD="$PRELOAD" ZC_ENABLE="$OPTIN" ZC_DISABLE="${mode#off-}" \
		ZC_STATS_FILE="$s") ;;
	esac
	rc=$("$PY3" "$RUN_IO" --in "$kin" --input "$input" --out "$kout" \
		--stdout "$d/out" --stderr "$d/err" --cwd "$d/cwd" -- \
		"${pre[@]}" bash -c "$cmd") || {
		echo "# harness failed ($mode, $kin -> $kout): $cmd"
		return 1
	}
	echo "$rc" > "$d/rc"
	(cd "$d/cwd" && find . -type f -print0 | sort -z | xargs -0r sha256sum) > "$d/files"
}

# differ A B WHAT: print why runs A and B differ; false when they do.
differ() {
	local a="$BATS_TEST_TMPDIR/$1" b="$BATS_TEST_TMPDIR/$2" ok=0
	if ! cmp -s "$a/rc" "$b/rc"; then
		echo "# exit status differs: $1 $(cat "$a/rc"), $2 $(cat "$b/rc")"
		ok=1
	fi
	if ! cmp -s "$a/out" "$b/out"; then
		echo "# stdout differs: $1 $(wc -c < "$a/out") bytes $(sha256sum < "$a/out" | cut -c1-16)," \
			"$2 $(wc -c < "$b/out") bytes $(sha256sum < "$b/out" | cut -c1-16)"
		cmp "$a/out" "$b/out" | sed 's/^/# /'
		ok=1
	fi
	if ! cmp -s "$a/err" "$b/err"; then
		echo "# stderr differs:"
		diff "$a/err" "$b/err" | head -10 | sed 's/^/# /'
		ok=1
	fi
	if ! cmp -s "$a/files" "$b/files"; then
		echo "# files written differ:"
		diff "$a/files" "$b/files" | head -10 | sed 's/^/# /'
		ok=1
	fi
	[ "$ok" = 0 ] || echo "#   in: $3"
	return "$ok"
}

# same KIN KOUT INPUT CMD: without the preload, with LD_PRELOAD, via zcrun;
# all three alike.  The ld and zcrun statistics stay for fired/count.
same() {
	local m
	run_mode plain "$@" || return 1
	for m in ld zcrun; do
		run_mode "$m" "$@" || return 1
		differ plain "$m" "$*" || return 1
	done
}

# same_off KIN KOUT INPUT CMD: each conversion switched off in turn (and
# all at once): same results as without the preload, and the switched-off
# conversion converted nothing.
same_off() {
	local c n
	run_mode plain "$@" || return 1
	for c in pipe mapwrite forward stdio pipe,mapwrite,forward,stdio; do
		run_mode "off-$c" "$@" || return 1
		differ plain "off-$c" "$* (ZC_DISABLE=$c)" || return 1
		for n in ${c//,/ }; do
			[ "$(count "off-$c" "$n" converted)" = 0 ] || {
				echo "# ZC_DISABLE=$c but $n converted $(count "off-$c" "$n" converted) calls: $*"
				return 1
			}
		done
	done
}

# count MODE CONV FIELD [--exe NAME]: summed statistic of MODE's last run.
count() {
	local mode=$1
	shift
	"$PY3" "$STATS" "$BATS_TEST_TMPDIR/$mode.stats" "$@"
}

# fired CONV [MODES] [--exe NAME]: CONV converted at least one call in the
# last `same`, in each of MODES (default "ld zcrun"; "zcrun" alone for the
# cases that are converted only with ZC_ENABLE).
fired() {
	local conv=$1 modes="ld zcrun" m n
	shift
	case ${1:-} in ld | zcrun | "ld zcrun") modes=$1; shift ;; esac
	for m in $modes; do
		n=$(count "$m" "$conv" converted "$@") || return 1
		if [ "$n" -le 0 ]; then
			echo "# $conv converted nothing ($m run, $BATS_TEST_TMPDIR/$m.stats):"
			count "$m" --table "$@" | sed 's/^/#   /'
			return 1
		fi
	done
}

# every_size KIN KOUT CMD: `same` on the random binary input of every size.
every_size() {
	local n
	for n in $SIZES; do
		same "$1" "$2" "$DATA/b$n" "$3" || return 1
	done
}

every_text() {
	local n
	for n in $SIZES; do
		same "$1" "$2" "$DATA/t$n" "$3" || return 1
	done
}

@test "the preload and zcrun are built" {
	[ -f "$PRELOAD" ] || { echo "# no preload at $PRELOAD (build it, or set ZC_PRELOAD_SO)"; false; }
	[ -x "$ZCRUN" ] || { echo "# no zcrun at $ZCRUN (set ZC_ZCRUN)"; false; }
}

@test "cat from a file, a pipe, a UNIX socket and a TCP socket, every size" {
	local io
	for io in file:pipe file:file file:tcp pipe:pipe pipe:file unix:unix unix:pipe tcp:tcp tcp:file; do
		every_size "${io%:*}" "${io#*:}" 'cat' || return 1
	done
}

@test "socat relaying between files, pipes and sockets, every size" {
	every_size unix tcp 'socat -u STDIN STDOUT' || return 1
	every_size file pipe 'socat -b 131072 -u STDIN STDOUT' || return 1
	every_size tcp file 'socat -u STDIN STDOUT,ignoreeof' || return 1
	# A bidirectional relay through a child on a socketpair.
	# -t 30: after stdin's EOF, wait for cat's output to end (not 0.5 s).
	every_size pipe pipe 'socat -t 30 - EXEC:cat'
}

@test "dd bs=128k, bs=4k, bs=1000 count, iflag=fullblock: every size and kind" {
	local io
	for io in file:pipe file:file pipe:pipe unix:tcp; do
		every_size "${io%:*}" "${io#*:}" 'dd bs=128k status=none' || return 1
		every_size "${io%:*}" "${io#*:}" 'dd bs=4k iflag=fullblock status=none' || return 1
	done
	# From a file every read is full: dd's own record counts must match too.
	every_size file pipe 'dd bs=1000 count=1500 status=noxfer'
	every_size file file 'dd bs=128k skip=1 status=noxfer; dd if=/dev/zero bs=1 count=0 status=noxfer'
}

@test "tee, sha256sum, cp, head, tail, split: pipelines over every size" {
	every_size file pipe 'tee copy1 copy2 | sha256sum - copy1' || return 1
	every_size pipe pipe 'cat | tee copy | cat | sha256sum' || return 1
	every_size tcp pipe 'cat > in && cp in copy && sha256sum copy && head -c 5000 in | tail -c 4097 | od -An -tx1 | tail -3' || return 1
	every_size file pipe 'split -b 65537 - part. && cat part.* | sha256sum && ls' || return 1
	every_size unix file 'head -c 1048576 | tail -c +4097'
}

@test "gzip/gunzip alone and in pipelines, every size" {
	every_size file pipe 'gzip -1 | gunzip | sha256sum' || return 1
	every_size pipe file 'gzip -c -6 > z.gz && gunzip -t z.gz && gunzip -c z.gz' || return 1
	every_size tcp tcp 'gzip -1 -c | cat | gzip -d'
}

@test "tar: archive, list and extract through pipes" {
	same null pipe /dev/null "tar cf - -C '$DATA' . | tar tvf -" || return 1
	same null pipe /dev/null "tar cf - -C '$DATA' . | gzip -1 | gunzip | tar xf - && sha256sum b* t*" || return 1
	same null file /dev/null "tar cf a.tar -C '$DATA' b1048579 t4097 b0 && tar xf a.tar -O | sha256sum"
}

@test "sort, uniq, sed, awk, cut on text of every size" {
	every_text file pipe 'sort | uniq -c | sort -k1,1nr -k2 | head -50' || return 1
	every_text pipe pipe "sed 's/[aeiou]/_/g; 3d' | awk '{ n += length } END { print n, NR }'" || return 1
	every_text file pipe 'cat > f && sort -u f && sed -n "\$p" f && cut -c1-5 f | uniq -d' || return 1
	every_text unix unix "awk 'NR % 3' | cut -c2- | sort -r"
}

@test "python3: copy stdin to stdout, line reader, mmap + write, socketpair" {
	every_size pipe pipe "$PY3 -c 'import sys, shutil; shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)'" || return 1
	every_text file pipe "$PY3 -c 'import sys
n = 0
for line in sys.stdin: n += len(line)
print(n)'" || return 1
	every_size tcp pipe "cat > in && $PY3 '$BATS_TEST_DIRNAME/preload_programs/mmap_write.py' in" || return 1
	every_size file pipe "$PY3 '$BATS_TEST_DIRNAME/preload_programs/socketpair_echo.py'"
}

@test "errors: SIGPIPE, EPIPE, missing files, corrupt input, full disk, closed stdout" {
	# A reader that stops early: the writer dies of SIGPIPE (141).
	same file pipe "$DATA/b20971520" 'set -o pipefail; cat | head -c 100000 | sha256sum; echo "${PIPESTATUS[*]}"' || return 1
	same file pipe "$DATA/b20971520" 'set -o pipefail; dd bs=128k status=none | head -c 1 | wc -c; echo "${PIPESTATUS[*]}"' || return 1
	# SIGPIPE ignored: write fails with EPIPE instead, and cat says so.
	same file pipe "$DATA/b20971520" 'trap "" PIPE; cat | (exec 0<&-; exit 0); cat /dev/null; true' || return 1
	same file pipe "$DATA/b20971520" 'trap "" PIPE; { cat; echo "cat $?" >&2; } | head -c 10 >/dev/null' || return 1
	same null pipe /dev/null "cat '$DATA/b4097' '$DATA/missing' '$DATA/b1'; echo \$?" || return 1
	same null pipe /dev/null "sha256sum '$DATA/missing' '$DATA/b1'; gzip -dc '$DATA/b4097'; echo \$?" || return 1
	same null pipe /dev/null "tar cf - -C '$DATA' missing b1 | tar tf -; echo \$?" || return 1
	# ENOSPC: /dev/full.
	same file pipe "$DATA/b1048579" 'cat > /dev/full; echo $?; dd bs=128k of=/dev/full status=none < /dev/zero count=3; echo $?' || return 1
	# stdout closed: EBADF.
	same file pipe "$DATA/b4097" 'cat >&-; echo $?; sort >&- '"'$DATA/t4097'"'; echo $?'
}

@test "edge cases: O_NONBLOCK stdout (EAGAIN), SIGALRM every ms (EINTR), 4 threads writing one pipe" {
	local h="$BATS_TEST_DIRNAME/preload_programs/edge_io.py"
	# A slow reader makes the non-blocking writer meet EAGAIN.
	same file pipe "$DATA/b20971520" "$PY3 '$h' nonblock | (sleep 0.2; cat)" || return 1
	same pipe pipe "$DATA/b1048579" "$PY3 '$h' nonblock | (sleep 0.1; cat)" || return 1
	same unix tcp "$DATA/b1048579" "$PY3 '$h' nonblock" || return 1
	same file pipe "$DATA/b20971520" "$PY3 '$h' eintr" || return 1
	same tcp pipe "$DATA/b1048579" "$PY3 '$h' eintr | cat" || return 1
	# Writes of one page to a pipe are atomic: no record may be torn.
	same null pipe /dev/null "$PY3 '$h' threads-write '$DATA/b20971520' | $PY3 '$h' threads-verify '$DATA/b20971520'"
}

@test "a file truncated under mmap + write: the same short write and EFAULT, no SIGBUS" {
	local n
	for n in 0 1 4096 1000000; do
		same null pipe /dev/null "cp '$DATA/b20971520' f && $PY3 '$BATS_TEST_DIRNAME/preload_programs/mmap_write.py' --truncate $n f; echo \$?" || return 1
	done
	[ "$(tail -c 2 "$BATS_TEST_TMPDIR/ld/out")" = 1 ]    # it reported EFAULT, it was not killed
}

@test "a program's own SIGSEGV handler (Python's faulthandler) still reports the crash" {
	local crash="import ctypes, os; d = os.read(0, 1 << 20); os.write(1, d); ctypes.string_at(0)"
	# The first half copies stdin to stdout (what forward converts), then
	# the program crashes: faulthandler must print its report and the
	# process must die of SIGSEGV (139) exactly as without the preload.
	same file pipe "$DATA/b1048579" "$PY3 -X faulthandler -c '$crash' 2>&1 | sed -E 's/0x[0-9a-f]+/ADDR/g'; echo \${PIPESTATUS[0]}" || return 1
	[ "$(tail -1 "$BATS_TEST_TMPDIR/zcrun/out")" = 139 ]
	grep -q 'Fatal Python error: Segmentation fault' "$BATS_TEST_TMPDIR/zcrun/out"
}

@test "fires: pipe (cat | sha256sum, dd | dd) grows pipes" {
	same file pipe "$DATA/b20971520" 'cat | sha256sum' || return 1
	fired pipe || return 1
	same file pipe "$DATA/b20971520" 'dd bs=128k status=none | dd bs=128k status=none of=/dev/null; echo done' || return 1
	fired pipe
}

# forward: the preload observes read-then-write of the same buffer and, by
# design (preload/forward.c, docs/preload.md), passes every such call
# through.  What is asserted: the calls were seen, and each seen call is
# accounted for (converted or passed with a reason).
seen_all_accounted() { # CONV MODE [--exe NAME]
	local conv=$1 mode=$2 seen conv_n passed
	shift 2
	seen=$(count "$mode" "$conv" seen "$@")
	conv_n=$(count "$mode" "$conv" converted "$@")
	passed=$(count "$mode" "$conv" passed "$@")
	if [ "$seen" -le 0 ] || [ "$((conv_n + passed))" -ne "$seen" ]; then
		echo "# $conv ($mode): seen $seen, converted $conv_n, passed $passed"
		count "$mode" --table "$@" | sed 's/^/#   /'
		return 1
	fi
}

@test "forward: cat and dd from a file into a pipe, socket to socket, are seen and accounted for" {
	local m
	same file pipe "$DATA/b20971520" 'cat' || return 1
	for m in ld zcrun; do seen_all_accounted forward $m --exe cat || return 1; done
	same file pipe "$DATA/b20971520" 'dd bs=128k status=none' || return 1
	for m in ld zcrun; do seen_all_accounted forward $m --exe dd || return 1; done
	same unix tcp "$DATA/b20971520" 'cat' || return 1
	for m in ld zcrun; do seen_all_accounted forward $m --exe cat || return 1; done
}

@test "fires: mapwrite (python3 mmap + write: a sealed memfd by default, a file with ZC_ENABLE)" {
	local mw="$BATS_TEST_DIRNAME/preload_programs/mmap_write.py"
	# A sealed memfd cannot change: converted with the defaults.
	same null pipe /dev/null "$PY3 '$mw' --memfd '$DATA/b20971520'" || return 1
	fired mapwrite || return 1
	[ "$(count ld mapwrite bytes_zero_copy)" -ge 20000000 ]
	# A regular file may change after write() returned: only on request.
	same null pipe /dev/null "$PY3 '$mw' '$DATA/b20971520'" || return 1
	fired mapwrite zcrun || return 1
	[ "$(count zcrun mapwrite bytes_zero_copy)" -ge 20000000 ]
	same null tcp /dev/null "$PY3 '$mw' '$DATA/b1048579'" || return 1
	fired mapwrite zcrun
}

@test "fires: stdio (sed, sort, uniq, sha256sum reading files)" {
	local prog
	for prog in "sed -n '\$p'" "sort" "uniq -c" "sha256sum" "cut -c1-3"; do
		same null pipe /dev/null "$prog '$DATA/t1048579'" || return 1
		fired stdio --exe "${prog%% *}" || return 1
	done
}

@test "ZC_DISABLE: each conversion off in turn, same bytes, that one converts nothing" {
	same_off file pipe "$DATA/b20971520" 'cat | tee copy | dd bs=128k status=none | sha256sum' || return 1
	same_off tcp unix "$DATA/b1048579" 'cat' || return 1
	same_off null pipe /dev/null "$PY3 '$BATS_TEST_DIRNAME/preload_programs/mmap_write.py' '$DATA/b1048579' | sha256sum" || return 1
	same_off null pipe /dev/null "sort '$DATA/t1048579' | uniq -c | sed -n '\$p'" || return 1
	same_off pipe file "$DATA/b4097" 'gzip -1 | gunzip'
}

@test "exec following: children are preloaded; --no-follow and ZC_NOFOLLOW stop it" {
	local s="$BATS_TEST_TMPDIR/s"
	rm -f "$s"
	"$ZCRUN" --stats-file="$s" -- bash -c "cat '$DATA/b4097' | cat > /dev/null"
	[ "$("$PY3" "$STATS" "$s" processes --exe cat)" -eq 2 ]
	rm -f "$s"
	"$ZCRUN" --no-follow --stats-file="$s" -- bash -c "cat '$DATA/b4097' | cat > /dev/null"
	[ "$("$PY3" "$STATS" "$s" processes --exe cat)" -eq 0 ]
	[ "$("$PY3" "$STATS" "$s" processes --exe bash)" -ge 1 ]
	rm -f "$s"
	ZC_NOFOLLOW=1 LD_PRELOAD="$PRELOAD" ZC_STATS_FILE="$s" bash -c "cat '$DATA/b4097' | cat > /dev/null"
	[ "$("$PY3" "$STATS" "$s" processes --exe cat)" -eq 0 ]
	# The child's environment no longer names the preload.
	run "$ZCRUN" --no-follow -- bash -c 'env | grep -c "^LD_PRELOAD=.*libzc-preload" || true'
	[ "${lines[-1]}" = 0 ]
}

@test "zcrun: usage, warnings for setuid and static binaries, ZC_STATS table" {
	run "$ZCRUN" --bogus -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *sage* ]]
	# Statically linked: a warning, and the program still runs.
	run "$ZCRUN" -- /bin/busybox echo static-ok
	[ "$status" -eq 0 ]
	[[ "$output" == *static-ok* ]]
	[ "${#lines[@]}" -ge 2 ]
	# setuid: the loader ignores LD_PRELOAD; warned, still runs.
	run "$ZCRUN" -- /usr/bin/passwd --help
	[ "$status" -eq 0 ]
	[[ "$output" == *setuid* || "$output" == *set-user* || "$output" == *setgid* ]]
	# --stats prints a table on stderr naming every conversion.
	run bash -c "'$ZCRUN' --stats -- cat '$DATA/b1048579' 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[[ "$output" == *pipe* && "$output" == *mapwrite* && "$output" == *forward* && "$output" == *stdio* ]]
}

@test "the stats file: one well-formed record per process, appended" {
	local s="$BATS_TEST_TMPDIR/s"
	rm -f "$s"
	LD_PRELOAD="$PRELOAD" ZC_STATS_FILE="$s" bash -c "cat '$DATA/b4097' | sort | uniq -c > /dev/null"
	LD_PRELOAD="$PRELOAD" ZC_STATS_FILE="$s" /bin/true
	# bash (and the subshells it may fork), cat, sort, uniq, true: at
	# least 5 records, every one parses (preload_stats.py checks the shape).
	[ "$("$PY3" "$STATS" "$s" processes)" -ge 5 ]
	for p in cat sort uniq true; do
		[ "$("$PY3" "$STATS" "$s" processes --exe "$p")" -eq 1 ]
	done
}

@test "Apache httpd (EnableMMAP On, EnableSendfile Off) under zcrun serves files byte for byte, mapwrite fires" {
	"$PY3" "$BATS_TEST_DIRNAME/preload_programs/apache_check.py" "$DATA"
}

@test "a real project's suite: Python's own tests (fast subset) pass and fail alike under the preload" {
	"$PY3" "$BATS_TEST_DIRNAME/preload_programs/python_suite.py" --fast --preload "$PRELOAD" \
		--out "$BATS_TEST_TMPDIR/pysuite" || return 1
	"$PY3" "$BATS_TEST_DIRNAME/preload_programs/python_suite.py" --fast --preload "$PRELOAD" \
		--enable "$OPTIN" --out "$BATS_TEST_TMPDIR/pysuite-optin"
}
