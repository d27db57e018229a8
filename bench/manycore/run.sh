#!/bin/bash
# run.sh - zcbench static's many-core matrix, self-contained: zchttpd, the
# floor, nginx and h2o at several worker counts, each pinned to cores
# 0..W-1 (the first W this process may use), wrk pinned to the cores
# above, server CPU per request.
#
# It is carried in the bundle that bench/manycore/pack.py builds
# (build/manycore/zcmanycore.tar.gz): bin/ holds zchttpd, zcfloor, nginx,
# h2o, wrk and taskset; lib/ every shared library they load, the dynamic
# loader among them.  Every program is started through the bundle's own
# loader (lib/ld-linux-*.so.* --library-path lib/ PROGRAM), so whatever
# libraries the target has, old or none, play no part.  conf/ holds the
# servers' configurations as zcbench writes them (servers.py), with
# @PORT@, @ROOT@, @WORKERS@ and @PREFIX@ for this script to fill in.
# Needs: bash and coreutils; root for the cgroup CPU accounting (without
# it, and without cgroups, /proc); no network, no Python.
#
#   ./run.sh                      the issue's matrix: workers 1 4 8, 1k and
#                                 100k keep-alive, 3 s per point, 2 runs
#   WORKERS="1" SIZES="1k" RUNS=1 DURATION=1 ./run.sh    a small one
#
# Settings (environment): WORKERS ("1 4 8"), SIZES ("1k 100k"), SERVERS
# ("zchttpd nginx h2o floor"; zchttpd-copy and zchttpd-sendfile are
# zchttpd sending hot bodies up to 128 KiB by copy or by sendfile),
# RUNS (2), DURATION (3, s), WARMUP (1, s), SERVER_CPU (a CPU quota
# per server core, e.g. 0.5, as zcbench's --server-cpu: so that wrk on the
# other half of the machine can keep 8 workers busy; default none: each
# server may use all of its W cores),
# CONNECTIONS (256), CLIENT_CPUS (default: every core above the largest
# worker count), THREADS (default: one per client core, at most 8), OUT
# (default: ./results-DATE).
#
# For every run (interleaved), worker count and server (the order rotated
# per run), the server is started afresh with W workers, every file is
# fetched once and checked byte-exact, then per size: WARMUP s of wrk, and
# DURATION s of
#
#     wrk -tTHREADS -cCONNECTIONS -dDURATIONs http://127.0.0.1:PORT/file-SIZE.bin
#
# with the server's CPU time read around it: its cgroup's (v2 cpu.stat
# usage_usec, v1 cpuacct.usage; the server joins a group of its own
# before it starts, so all its processes and threads count) or, without
# cgroups, the utime+stime of its process group's processes in /proc.
# wrk's own CPU time comes from bash's `times`.  A point where wrk used
# more than 80 % of its cores is client-bound (as in zcbench): it is left
# out of the medians (a point whose every run was is marked *).  Output:
# the tables on stdout and OUT/results.md, every point in OUT/results.tsv.
set -u
set -m          # every background job (a server) gets a process group of its own

HERE=$(cd "$(dirname "$0")" && pwd)
LIB=$HERE/lib
LOADER=$(echo "$LIB"/ld-linux*.so.*)
WORKERS=${WORKERS:-"1 4 8"}
SIZES=${SIZES:-"1k 100k"}
SERVERS=${SERVERS:-"zchttpd nginx h2o floor"}
RUNS=${RUNS:-2}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
CONNECTIONS=${CONNECTIONS:-256}
SERVER_CPU=${SERVER_CPU:-}

OUT=${OUT:-$PWD/results-$(date +%Y%m%d-%H%M%S)}
PORT=${PORT:-20080}
CLIENT_BOUND_PCT=80

die() { echo "run.sh: $*" >&2; exit 1; }

# SERVER_CPU as a percentage of one core, in bash alone ("0.5" -> 50).
cpu_pct() {
	local i=${1%%.*} f=
	[[ $1 == *.* ]] && f=${1#*.}
	f=${f}00
	[[ $1 =~ ^[0-9]*\.?[0-9]*$ && -n $1 ]] || die "SERVER_CPU=$1: not a number"
	echo $(( 10#${i:-0} * 100 + 10#${f:0:2} ))
}
CPU_PCT=100
if [ -n "$SERVER_CPU" ]; then CPU_PCT=$(cpu_pct "$SERVER_CPU") || exit 1; fi

# A bundled program through the bundled loader.
bundled() {
	local prog=$1
	shift
	"$LOADER" --library-path "$LIB" "$HERE/bin/$prog" "$@"
}

case "${1:-}" in
-h|--help)
	while IFS= read -r line; do
		[[ $line == "#!"* ]] && continue
		[[ $line == "#"* ]] || break
		line=${line#\#}
		echo "${line# }"
	done < "$0"
	exit 0 ;;
"") ;;
*) die "no arguments (settings come from the environment; --help)" ;;
esac
[ -x "$LOADER" ] || die "no loader in $LIB (run it from the unpacked bundle)"

# -- cores ----------------------------------------------------------------------
# The CPUs this process may use (a container's cpuset need not start at 0):
# the servers get the first W of them, wrk by default all above the largest W.
expand() {		# "0-3,8" -> "0 1 2 3 8"
	local part out=() i
	for part in ${1//,/ }; do
		if [[ $part == *-* ]]; then
			for (( i = ${part%-*}; i <= ${part#*-}; i++ )); do out+=("$i"); done
		else
			out+=("$part")
		fi
	done
	echo "${out[@]}"
}
line=$("$LOADER" --library-path "$LIB" "$HERE/bin/taskset" -pc $$) || die "taskset -p failed"
read -r -a CPUS <<< "$(expand "${line##*: }")"
NCPU=${#CPUS[@]}
MAXW=0
for w in $WORKERS; do
	[[ $w =~ ^[1-9][0-9]*$ ]] || die "WORKERS: not a count: $w"
	(( w > MAXW )) && MAXW=$w
done
(( MAXW < NCPU )) || die "the largest worker count ($MAXW) leaves no core for wrk on $NCPU cores"
server_cpus() {		# the first $1 CPUs, as a taskset list
	local IFS=,
	echo "${CPUS[*]:0:$1}"
}
if [ -z "${CLIENT_CPUS:-}" ]; then
	CLIENT_CPUS=$(IFS=,; echo "${CPUS[*]:$MAXW}")
fi
read -r -a _client <<< "$(expand "$CLIENT_CPUS")"
NCLIENT=${#_client[@]}
THREADS=${THREADS:-$(( NCLIENT < 8 ? NCLIENT : 8 ))}
(( THREADS <= CONNECTIONS )) || THREADS=$CONNECTIONS

# -- sizes and the document root ----------------------------------------------------
size_bytes() {
	local s=${1,,}
	case "$s" in
	*k) echo $(( ${s%k} * 1024 )) ;;
	*m) echo $(( ${s%m} * 1024 * 1024 )) ;;
	*) [[ $s =~ ^[0-9]+$ ]] || die "SIZES: not a size: $1"; echo "$s" ;;
	esac
}

mkdir -p "$OUT" || die "cannot make $OUT"
WORK=$(mktemp -d /tmp/zcmanycore.XXXXXX) || die "mktemp"
ROOT=$WORK/docroot
mkdir -p "$ROOT"
chmod 755 "$WORK" "$ROOT"
for s in $SIZES; do
	head -c "$(size_bytes "$s")" /dev/urandom > "$ROOT/file-$s.bin" || die "cannot write $ROOT"
done
echo "<h1>zcmanycore</h1>" > "$ROOT/index.html"
chmod 644 "$ROOT"/*

# -- CPU accounting -----------------------------------------------------------------
CG_KIND=proc
CG_BASE=
if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
	CG_KIND=v2
	CG_BASE=/sys/fs/cgroup
elif [ -d /sys/fs/cgroup/cpuacct ] && [ -w /sys/fs/cgroup/cpuacct ]; then
	CG_KIND=v1
	CG_BASE=/sys/fs/cgroup/cpuacct
fi

# SERVER_CPU x workers of CPU per 100 ms period for the server: v2 its
# group's cpu.max; v1 a group of its own in the cpu hierarchy (QUOTA_CG,
# the same as the accounting one where cpu and cpuacct are mounted
# together), which the server joins too.
QUOTA_CG=
set_quota() {	# accounting-cgroup workers
	local period=100000 quota=$(( CPU_PCT * $2 * 1000 ))
	case $CG_KIND in
	v2)
		QUOTA_CG=$1
		grep -qw cpu "$CG_BASE/cgroup.subtree_control" ||
			echo +cpu > "$CG_BASE/cgroup.subtree_control" ||
			die "cannot enable the cpu controller for SERVER_CPU"
		echo "$quota $period" > "$1/cpu.max" || die "cannot set $1/cpu.max" ;;
	v1)
		QUOTA_CG=$1
		if [ ! -e "$1/cpu.cfs_quota_us" ]; then
			QUOTA_CG=/sys/fs/cgroup/cpu/${1##*/}
			mkdir "$QUOTA_CG" || die "SERVER_CPU: cannot make $QUOTA_CG"
		fi
		echo $period > "$QUOTA_CG/cpu.cfs_period_us"
		echo "$quota" > "$QUOTA_CG/cpu.cfs_quota_us" ||
			die "cannot set $QUOTA_CG/cpu.cfs_quota_us" ;;
	esac
}

[ -n "$SERVER_CPU" ] && [ "$CG_KIND" = proc ] &&
	die "SERVER_CPU needs a writable cgroup file system (root)"

# The server's CPU time so far, in microseconds.
server_cpu_us() {
	local grp=$1 cg=$2 line total=0 f
	case $CG_KIND in
	v2)
		while read -r line; do
			[[ $line == usage_usec* ]] && { echo "${line#usage_usec }"; return; }
		done < "$cg/cpu.stat"
		echo 0 ;;
	v1)
		read -r line < "$cg/cpuacct.usage"
		echo $(( line / 1000 )) ;;
	proc)
		# utime + stime (fields 14, 15) of every process of the group
		# (field 5); clock ticks of 10 ms, the Linux default (USER_HZ).
		for f in /proc/[0-9]*/stat; do
			read -r line < "$f" 2>/dev/null || continue
			line=${line##*) }
			set -- $line
			[ "$3" = "$grp" ] && total=$(( total + ${12} + ${13} ))
		done
		echo $(( total * 10000 )) ;;
	esac
}

# CHILD_US: wrk's (every waited-for child's) CPU time so far, in
# microseconds.  Not printed for a $(...) to catch: there, as in a pipe,
# `times` would run in a subshell, whose children are not this shell's.
children_cpu_us() {
	local t u s
	times > "$WORK/times"
	t=$(tail -n 1 "$WORK/times")
	u=${t%% *}
	s=${t##* }
	CHILD_US=$(( $(mmss_us "$u") + $(mmss_us "$s") ))
}

mmss_us() {		# "1m2.345s" -> microseconds
	local v=${1%s} m sec
	m=${v%%m*}
	sec=${v#*m}
	echo $(( m * 60000000 + 10#${sec%.*} * 1000000 + 10#${sec#*.} * 1000 ))
}

# -- servers ------------------------------------------------------------------------
SRV_PID=
SRV_CG=

fill() {		# the config template $1 with this start's values
	local t
	t=$(<"$1")
	t=${t//@PORT@/$2}
	t=${t//@ROOT@/$ROOT}
	t=${t//@WORKERS@/$3}
	t=${t//@PREFIX@/$4}
	if [ "$(id -u 2>/dev/null || echo 0)" != 0 ]; then	# as root only
		t=${t//user root;/}
		t=${t//user: root/}
	fi
	printf '%s\n' "$t"
}

start_server() {	# name workers port
	local name=$1 w=$2 port=$3 dir=$WORK/$1-$2-$3 argv=() line
	mkdir -p "$dir"
	case $name in
	zchttpd|zchttpd-*|floor)	# zchttpd-*: with options (pack.py)
		[ -f "$HERE/conf/$name.args" ] || die "unknown server $name"
		while read -r line; do argv+=("${line//@PORT@/$port}"); done < "$HERE/conf/$name.args"
		argv=("${argv[@]//@ROOT@/$ROOT}")
		argv=("${argv[@]//@WORKERS@/$w}")
		argv=("$(if [ "$name" = floor ]; then echo zcfloor; else echo zchttpd; fi)" "${argv[@]}") ;;
	nginx)
		fill "$HERE/conf/nginx.conf.in" "$port" "$w" "$dir" > "$dir/nginx.conf"
		argv=(nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log") ;;
	h2o)
		fill "$HERE/conf/h2o.yaml.in" "$port" "$w" "$dir" > "$dir/h2o.yaml"
		argv=(h2o -c "$dir/h2o.yaml") ;;
	*) die "unknown server $name" ;;
	esac
	SRV_CG=
	if [ "$CG_KIND" != proc ]; then
		SRV_CG=$CG_BASE/zcmanycore-$$-$name-$w
		mkdir "$SRV_CG" || die "cannot make cgroup $SRV_CG"
		[ -n "$SERVER_CPU" ] && set_quota "$SRV_CG" "$w"
	fi
	(
		[ -n "$SRV_CG" ] && echo "$BASHPID" > "$SRV_CG/cgroup.procs"
		[ -n "$QUOTA_CG" ] && [ "$QUOTA_CG" != "$SRV_CG" ] &&
			echo "$BASHPID" > "$QUOTA_CG/cgroup.procs"
		exec "$LOADER" --library-path "$LIB" "$HERE/bin/taskset" -c "$(server_cpus "$w")" \
			"$LOADER" --library-path "$LIB" "$HERE/bin/${argv[0]}" "${argv[@]:1}"
	) > "$dir/stderr.log" 2>&1 < /dev/null &
	SRV_PID=$!
	local i
	for (( i = 0; i < 300; i++ )); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "$SRV_PID" 2>/dev/null || { cat "$dir/stderr.log" >&2; die "$name exited at start"; }
		sleep 0.1
	done
	die "$name did not listen on $port in 30 s"
}

stop_server() {
	[ -n "$SRV_PID" ] || return 0
	kill -TERM -- "-$SRV_PID" 2>/dev/null
	local i
	for (( i = 0; i < 100; i++ )); do
		kill -0 -- "-$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$SRV_PID" 2>/dev/null
	{ wait "$SRV_PID"; } 2>/dev/null	# the braces also take the job's "Terminated" notice
	if [ -n "$SRV_CG" ]; then
		for (( i = 0; i < 50; i++ )); do rmdir "$SRV_CG" 2>/dev/null && break; sleep 0.1; done
		[ -n "$QUOTA_CG" ] && [ "$QUOTA_CG" != "$SRV_CG" ] && rmdir "$QUOTA_CG" 2>/dev/null
		QUOTA_CG=
	fi
	SRV_PID=
	SRV_CG=
}

cleanup() {
	stop_server
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# GET path once over a fresh connection; the body must be the file's bytes.
check_body() {		# port size
	local port=$1 s=$2 want got
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET /file-%s.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$s" >&3
	cat <&3 > "$WORK/got"
	exec 3<&-
	want=$(sha256sum < "$ROOT/file-$s.bin")
	got=$(tail -c "$(size_bytes "$s")" "$WORK/got" | sha256sum)
	[ "$want" = "$got" ] && [[ $(head -c 12 "$WORK/got") == "HTTP/1.1 200" ]]
}

# -- one point ------------------------------------------------------------------------
# Prints: requests/s, requests, server CPU us per request x10, server CPU
# used (cores x100), wrk CPU used (cores x100), client-bound (0/1), errors.
measure() {		# port size seconds
	local port=$1 s=$2 secs=$3 w0 w1 c0 c1 t0 t1 rps=0 req=0 err=0 line
	c0=$(server_cpu_us "$SRV_PID" "$SRV_CG")
	children_cpu_us
	w0=$CHILD_US
	t0=$(date +%s%N)
	"$LOADER" --library-path "$LIB" "$HERE/bin/taskset" -c "$CLIENT_CPUS" \
		"$LOADER" --library-path "$LIB" "$HERE/bin/wrk" "-t$THREADS" "-c$CONNECTIONS" "-d${secs}s" \
		"http://127.0.0.1:$port/file-$s.bin" > "$WORK/wrk.out" 2>&1
	t1=$(date +%s%N)
	children_cpu_us
	w1=$CHILD_US
	c1=$(server_cpu_us "$SRV_PID" "$SRV_CG")
	while read -r line; do
		case $line in
		*" requests in "*) req=${line%% *} ;;
		Requests/sec:*) rps=${line##* }; rps=${rps%.*} ;;
		"Socket errors:"*)
			line=${line//[^0-9 ]/}
			for n in $line; do err=$((err + n)); done ;;
		"Non-2xx or 3xx responses:"*) err=$((err + ${line##* })) ;;
		esac
	done < "$WORK/wrk.out"
	local wall=$(( (t1 - t0) / 1000 ))
	(( req > 0 && wall > 0 )) || { cat "$WORK/wrk.out" >&2; die "wrk measured nothing"; }
	local wrk_pct=$(( (w1 - w0) * 100 / wall ))
	echo "$rps $req $(( (c1 - c0) * 10 / req )) $(( (c1 - c0) * 100 / wall )) $wrk_pct" \
		"$(( wrk_pct > CLIENT_BOUND_PCT * THREADS ? 1 : 0 ))" "$err"
}

# -- the matrix ------------------------------------------------------------------------
echo "zcmanycore: $NCPU cores; workers $WORKERS; sizes $SIZES; servers $SERVERS; $RUNS run(s) of" \
     "${DURATION} s (+${WARMUP} s warm-up); wrk -t$THREADS -c$CONNECTIONS on CPUs $CLIENT_CPUS;" \
     "CPU time from $CG_KIND; ${SERVER_CPU:+a quota of $SERVER_CPU CPU per server core; }results in $OUT" >&2
{
	echo "# zcmanycore $(date -u +%Y-%m-%dT%H:%M:%SZ) on $NCPU cores, kernel $(uname -r)"
	echo "# wrk -t$THREADS -c$CONNECTIONS on CPUs $CLIENT_CPUS, ${DURATION} s per point; CPU time from $CG_KIND"
	printf '%s\t' run workers size server rps requests cpu_us_per_req_x10 server_cores_used_x100 \
		wrk_cores_used_x100 client_bound errors
	echo
} > "$OUT/results.tsv"
cat "$HERE/VERSIONS" > "$OUT/versions.txt" 2>/dev/null

read -r -a SRV_LIST <<< "$SERVERS"
NSRV=${#SRV_LIST[@]}
total=$(( RUNS * $(wc -w <<< "$WORKERS") * NSRV * $(wc -w <<< "$SIZES") ))
point=0
for (( run = 1; run <= RUNS; run++ )); do
	for w in $WORKERS; do
		for (( j = 0; j < NSRV; j++ )); do
			name=${SRV_LIST[$(( (j + run - 1) % NSRV ))]}
			PORT=$((PORT + 1))
			start_server "$name" "$w" "$PORT"
			for s in $SIZES; do
				check_body "$PORT" "$s" || die "$name served /file-$s.bin wrong"
			done
			for s in $SIZES; do
				point=$((point + 1))
				printf '[%d/%d] run %d workers %d %s %s ... ' "$point" "$total" "$run" "$w" "$s" "$name" >&2
				(( WARMUP > 0 )) && measure "$PORT" "$s" "$WARMUP" > /dev/null
				read -r rps req cpu used wrk cb err <<< "$(measure "$PORT" "$s" "$DURATION")"
				[ -n "${err:-}" ] || die "$name: the point was not measured"
				printf '%s\t' "$run" "$w" "$s" "$name" "$rps" "$req" "$cpu" "$used" "$wrk" "$cb" "$err" \
					>> "$OUT/results.tsv"
				echo >> "$OUT/results.tsv"
				echo "$rps req/s, $((cpu / 10)).$((cpu % 10)) us/req, server $((used / 100)).$(printf %02d $((used % 100))) cores," \
				     "wrk $((wrk / 100)).$(printf %02d $((wrk % 100))) cores$( ((cb)) && echo ' (client-bound)')$( ((err)) && echo " ($err errors)")" >&2
			done
			stop_server
		done
	done
done

# -- tables ------------------------------------------------------------------------------
# median of the numbers on stdin (the mean of the middle two for an even count)
median() {
	local xs n
	mapfile -t xs < <(sort -n)
	n=${#xs[@]}
	(( n == 0 )) && { echo -; return; }
	if (( n % 2 )); then echo "${xs[n / 2]}"; else echo $(( (xs[n / 2 - 1] + xs[n / 2]) / 2 )); fi
}

# the points measured: results.tsv without its comments and heading
points() {
	local line
	while IFS= read -r line; do
		[[ $line == "#"* || $line == run$'\t'* ]] || echo "$line"
	done < "$OUT/results.tsv"
}

# column $1 (1-based) of the counted rows of (workers, size, server); a
# trailing * when every run was client-bound (then all runs count)
med() {
	local col=$1 w=$2 s=$3 name=$4 f all=() counted=()
	while IFS=$'\t' read -r -a f; do
		[ "${f[1]}" = "$w" ] && [ "${f[2]}" = "$s" ] && [ "${f[3]}" = "$name" ] || continue
		all+=("${f[col - 1]}")
		[ "${f[9]}" = 0 ] && counted+=("${f[col - 1]}")
	done < <(points)
	if (( ${#counted[@]} )); then printf '%s\n' "${counted[@]}" | median
	elif (( ${#all[@]} )); then echo "$(printf '%s\n' "${all[@]}" | median)*"
	else echo -; fi
}

dec() {			# x10 or x100 integer (maybe with a trailing *) -> decimal
	local v=${1%\*} star=${1#"${1%\*}"} scale=$2
	[ "$v" = - ] && { echo -; return; }
	if (( scale == 10 )); then echo "$((v / 10)).$((v % 10))$star"
	else echo "$((v / 100)).$(printf %02d $((v % 100)))$star"; fi
}

ratio() {		# a/b as x.xx
	local a=${1%\*} b=${2%\*}
	[[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] && (( b > 0 )) || { echo -; return; }
	dec $(( a * 100 / b )) 100
}

{
	echo "## zcmanycore on $NCPU cores ($(uname -r))"
	echo
	echo "Servers pinned to the first W of CPUs ${CPUS[*]}, \`wrk -t$THREADS -c$CONNECTIONS\` pinned to CPUs $CLIENT_CPUS," \
	     "${DURATION} s per point, medians of $RUNS interleaved run(s); server CPU per request from $CG_KIND" \
	     "(* every run of that point was client-bound: wrk above ${CLIENT_BOUND_PCT} % of its cores)."
	echo
	echo "Server CPU per request (us):"
	echo
	head="| workers |"
	sep="|---|"
	for s in $SIZES; do head+=" $s keep-alive: ${SERVERS// / \/ } |"; sep+="---|"; done
	echo "$head"
	echo "$sep"
	for w in $WORKERS; do
		line="| $w |"
		for s in $SIZES; do
			cells=()
			for name in $SERVERS; do cells+=("$(dec "$(med 7 "$w" "$s" "$name")" 10)"); done
			joined=$(IFS=/; echo "${cells[*]}")
			line+=" ${joined//\// / } us |"
		done
		echo "$line"
	done
	echo
	echo "Requests/s (median), ratio to the floor, server and wrk CPU used (cores):"
	echo
	echo "| workers | size | server | req/s | vs floor | CPU us/req | server cores used | wrk cores used |"
	echo "|---|---|---|---|---|---|---|---|"
	for w in $WORKERS; do
		for s in $SIZES; do
			fl=$(med 5 "$w" "$s" floor)
			for name in $SERVERS; do
				r=$(med 5 "$w" "$s" "$name")
				echo "| $w | $s | $name | $r | $( [ "$name" = floor ] && echo - || ratio "$r" "$fl") |" \
				     "$(dec "$(med 7 "$w" "$s" "$name")" 10) | $(dec "$(med 8 "$w" "$s" "$name")" 100) |" \
				     "$(dec "$(med 9 "$w" "$s" "$name")" 100) |"
			done
		done
	done
	cb=0
	idle=0
	while IFS=$'\t' read -r -a f; do
		(( cb += f[9] ))
		(( f[9] == 0 && f[7] < 90 * f[1] * CPU_PCT / 100 )) && (( idle += 1 ))
	done < <(points)
	echo
	echo "Client-bound points: $cb of $total (left out of the medians)." \
	     "Points where neither side was the limit -- the server used under 90 % of its budget" \
	     "and wrk under ${CLIENT_BOUND_PCT} % of its own (other work on the machine, or too few" \
	     "connections): $idle of $total."
} | tee "$OUT/results.md"
