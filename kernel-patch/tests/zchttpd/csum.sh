#!/bin/sh
# Guest: zchttpd end to end on the patched kernel (IO-Lite, checksum caching).
#
# zchttpd runs in one network namespace and the client in another, joined
# by a veth pair with tx checksumming off at both ends (vethpair), so the
# server's kernel sums every byte it sends in software.  Every body of the
# file set is at most --cache-small-max, so from its second request on
# the cache holds each as a snapshot (zc_buf_snapshot): on this kernel a
# sealed memfd, sent by the kernel's iol_write by page reference, whose
# 64-byte block sums the checksum cache keeps.  (A first request goes out
# by sendfile from the page cache: the cache copies a body only when it is
# asked for again.)  Passes over the set, every body compared byte for
# byte with the file: cold (first requests), second (the snapshots are
# made and sent), then warm twice.  Checked: iol_bytes_by_reference grows
# by at least the body bytes of each pass from the second on; on the warm
# passes csum_bytes_cached grows by most of them; a file rewritten (same
# size) is served with its new bytes on the next passes (a fresh
# snapshot, summed afresh), never the old ones; RetransSegs, InCsumErrors
# and InErrs stay +0 in both namespaces (a stale sum would be a dropped
# segment and a retransmit).  Control: with ZC_IOLITE=off the same server
# keeps its bodies in the shared cache's memory and sends them by copy or
# by sendfile: bodies exact, iol_bytes_by_reference and csum_bytes_cached
# +0.  INFO lines give the counters and the pass times (TCG: indicative
# only).
. /zchttpd/common.sh
T=/tmp/csum
SRV=/run/netns/zsrv
CLI=/run/netns/zcli
A=10.78.0.1
B=10.78.0.2
PORT=8082
TTL=200		# --cache-ttl, ms: a rewritten file is seen after this
rm -rf $T
mkdir -p $T/up $T/st /run/netns
mkfiles $T/root
: > $SRV
: > $CLI

zc() { cat /sys/kernel/zc/$1; }
in_cli() { nsenter --net=$CLI "$@"; }

# errs NS: RetransSegs InCsumErrors InErrs of TCP in that namespace.
errs() {
	nsenter --net=$1 cat /proc/net/snmp | awk '
	$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) n[$i] = i; h = 1; next }
	$1 == "Tcp:" { print $n["RetransSegs"], $n["InCsumErrors"], $n["InErrs"] }'
}

# Body bytes of the file set.
total=$(awk '{ s += $2 } END { print s }' $ZH/files)

start() { # [env assignments for zchttpd]
	# nsenter itself, not a shell function: $! must be zchttpd (nsenter
	# execs it), not a subshell, which SIGTERM would leave behind.
	nsenter --net=$SRV env "$@" $ZH/bin/zchttpd --root $T/root --listen $A:$PORT \
		--workers 1 --cache-small-max 1m --cache-ttl $TTL \
		--error-log $T/error.log </dev/null >$T/out.log 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 300 ]; do
		in_cli $TLSGET -n $A $PORT $T/up /.zc/status >$T/up.out 2>&1 &&
			return 0
		sleep 0.1
		i=$((i + 1))
	done
	for f in $T/error.log $T/out.log $T/up.out; do
		[ -e $f ] && tail -5 $f | sed "s|^|INFO ${f##*/}: |"
	done
	return 1
}

# pass NAME: the whole set over one connection from the client's
# namespace into $T/NAME, compared with the files; sets ms, dref, dcached,
# dcomputed (counter deltas).
pass() {
	r0=$(zc iol_bytes_by_reference) c0=$(zc csum_bytes_cached)
	p0=$(zc csum_bytes_computed) s0=$(zc csum_shrunk)
	mkdir -p $T/$1
	t0=$(now_ms)
	in_cli $TLSGET -n $A $PORT $T/$1 $(paths) > $T/get.out 2>&1 &&
		same $T/root $T/$1
	rc=$?
	ms=$(( $(now_ms) - t0 ))
	dref=$(( $(zc iol_bytes_by_reference) - r0 ))
	dcached=$(( $(zc csum_bytes_cached) - c0 ))
	dcomputed=$(( $(zc csum_bytes_computed) - p0 ))
	echo "INFO csum-$1: $total body bytes in $ms ms; iol_bytes_by_reference +$dref, csum_bytes_cached +$dcached, csum_bytes_computed +$dcomputed, csum_shrunk +$(( $(zc csum_shrunk) - s0 ))"
	[ $rc -eq 0 ] || tail -3 $T/get.out | sed 's/^/INFO get: /'
	return $rc
}

if ! $ZH/bin/vethpair $SRV $CLI $A $B; then
	bad "csum-net: vethpair"
	exit 1
fi
ok csum-net
srv0=$(errs $SRV) cli0=$(errs $CLI) inv0=$(zc csum_invalidations)
# Start from free memory (the tests before this one leave the page cache
# full); csum_shrunk in the INFO lines says whether the checksum cache's
# shrinker ran during a pass.
sync
echo 3 > /proc/sys/vm/drop_caches

if start; then
	check csum-cold "cold pass: fetch or body mismatch" pass cold
	check csum-second "second pass: fetch or body mismatch" pass second
	check csum-second-by-reference "iol_bytes_by_reference +$dref, wanted >= $total" \
		[ "$dref" -ge "$total" ]
	for k in 1 2; do
		check csum-warm$k "warm pass $k: fetch or body mismatch" pass warm$k
		check csum-warm$k-by-reference "iol_bytes_by_reference +$dref, wanted >= $total" \
			[ "$dref" -ge "$total" ]
		# Most body bytes: the sums of segment edges and of the
		# response heads (copied bytes) are computed.  How many
		# edges fall inside a 64-byte block depends on how the
		# segments are cut, which the tests that ran before move:
		# 95 % cached when this test runs alone, 85 % after the
		# criu test (csum_shrunk +0: not the shrinker), 73 % in one
		# full lane of about ten.  A broken cache gives about 0.
		check csum-warm$k-cached "csum_bytes_cached +$dcached, wanted >= 1/2 of $total" \
			[ $((dcached * 2)) -ge $total ]
	done
	s=$(in_cli $TLSGET -n $A $PORT $T/st /.zc/status >/dev/null 2>&1 && cat $T/st/status)
	echo "INFO csum-status: $(echo "$s" | grep -o '"hits":[0-9]*' | head -1), $(echo "$s" | grep -o '"zero_copy":{[^}]*}')"

	# Two files rewritten in place, same size, other bytes: the next
	# passes must carry the new bytes (new snapshots, new pages, new sums).
	mkdir -p $T/new
	for line in 1 10; do
		set -- $(sed -n ${line}p $ZH/files)
		head -c "$2" /dev/urandom > $T/new/$1
		cat $T/new/$1 > $T/root/$1
	done
	sleep 0.5	# > TTL: the cache looks at the files again
	for k in 1 2; do
		check csum-changed$k "pass $k after the rewrite: fetch or body mismatch" pass changed$k
		for f in $T/new/*; do
			check csum-changed$k-${f##*/} "pass $k after the rewrite: ${f##*/} is not the new bytes" \
				cmp -s $f $T/changed$k/${f##*/}
		done
	done
	echo "INFO csum-invalidations: +$(( $(zc csum_invalidations) - inv0 ))"
	check csum-stop "zchttpd did not stop on SIGTERM" stop $pid
	check csum-stopped "something still listens on $A:$PORT" \
		sh -c "! nsenter --net=$SRV netstat -ltn | grep -q $A:$PORT"
else
	bad "csum-start: zchttpd did not answer"
fi

# Control: no IO-Lite calls, pool snapshots by sendfile: nothing by the
# kernel's iol_write, no cached sums.
if start ZC_IOLITE=off; then
	check csum-control-cold "control cold pass: fetch or body mismatch" pass control-cold
	check csum-control-warm "control warm pass: fetch or body mismatch" pass control-warm
	check csum-control-none "iol_bytes_by_reference +$dref, csum_bytes_cached +$dcached, wanted +0 +0" \
		[ "$dref:$dcached" = 0:0 ]
	check csum-control-stop "zchttpd did not stop on SIGTERM" stop $pid
else
	bad "csum-control-start: zchttpd did not answer"
fi

srv1=$(errs $SRV) cli1=$(errs $CLI)
echo "INFO csum-snmp: server RetransSegs InCsumErrors InErrs $srv0 -> $srv1, client $cli0 -> $cli1"
check csum-snmp-server "server TCP errors $srv0 -> $srv1" [ "$srv0" = "$srv1" ]
check csum-snmp-client "client TCP errors $cli0 -> $cli1" [ "$cli0" = "$cli1" ]
[ "$fail" -eq 0 ]
