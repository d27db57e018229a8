#!/bin/sh
# Guest: zchttpd hands the TLS record layer to the kernel (kernel TLS).
#
# The host kernel has no tls ULP; this one has (CONFIG_TLS).  zchttpd serves
# HTTPS with SSL_OP_ENABLE_KTLS: after each handshake OpenSSL installs the
# keys into the socket and file bodies go out by sendfile, encrypted by the
# kernel.  Checked over TLS 1.3 (TLS_AES_256_GCM_SHA384) and TLS 1.2
# (ECDHE-ECDSA-AES256-GCM-SHA384): every body byte-exact; the status
# endpoint says "kernel", counts every connection as kernel_send, none as
# user_send, and the bodies above 64 KiB as sent by reference (sendfile);
# /proc/net/tls_stat counts one software TX context per connection.  Then
# --tls-ktls off: the same bodies, encrypted in user space (nothing by
# reference), and the status endpoint and tls_stat say so.
. /zchttpd/common.sh
T=/tmp/ktls
HTTP=8080
HTTPS=8443
CONNS=3		# connections per protocol version, 10 files each
rm -rf $T
mkfiles $T/root

# info FILE: its last lines as INFO lines (why a fetch failed).
info() { tail -5 "$1" | sed "s|^|INFO ${1##*/}: |"; }

# tls_stat NAME: a counter of /proc/net/tls_stat.
tls_stat() { awk -v n="$1" '$1 == n { print $2 }' /proc/net/tls_stat; }

start() { # extra zchttpd options...
	$ZH/bin/zchttpd --root $T/root --listen 127.0.0.1:$HTTP --workers 1 \
		--tls-listen 127.0.0.1:$HTTPS --tls-cert $ZH/ec.crt \
		--tls-key $ZH/ec.key --error-log $T/error.log "$@" \
		</dev/null >$T/out.log 2>&1 &
	pid=$!
	wait_up $HTTP || { cat $T/error.log; return 1; }
}

# fetch VERSION CIPHER DIR: the file set over CONNS connections of that TLS
# version and cipher; 0 if every body came back whole and on that cipher.
fetch() {
	mkdir -p "$3"
	set -- "$1" "$2" "$3" $(paths)
	v=$1 c=$2 d=$3
	shift 3
	per=$(( ($# + CONNS - 1) / CONNS ))
	for k in $(seq 1 $CONNS); do
		n=$per
		list=
		while [ $n -gt 0 ] && [ $# -gt 0 ]; do
			list="$list $1"
			shift
			n=$((n - 1))
		done
		$TLSGET "-$v" -c "$c" 127.0.0.1 $HTTPS "$d" $list > $T/get.out 2>&1 ||
			{ info $T/get.out; info $T/error.log; return 1; }
		want="TLS TLSv1.$v $c"
		grep -qx "$want" $T/get.out ||
			{ echo "INFO ktls: negotiated $(grep ^TLS $T/get.out), wanted $want"; return 1; }
	done
}

if ! [ -r /proc/net/tls_stat ]; then
	bad "ktls-ulp: no /proc/net/tls_stat (CONFIG_TLS)"
	exit 1
fi
check ktls-ulp "tls missing from tcp_available_ulp" \
	grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp

# kTLS on (the default).
tx0=$(tls_stat TlsTxSw)
rx0=$(tls_stat TlsRxSw)
if start; then
	fetch 3 TLS_AES_256_GCM_SHA384 $T/got13 && same $T/root $T/got13
	r13=$?
	fetch 2 ECDHE-ECDSA-AES256-GCM-SHA384 $T/got12 && same $T/root $T/got12
	r12=$?
	check ktls-tls13-bodies "TLS 1.3 (TLS_AES_256_GCM_SHA384) fetch or body mismatch" [ $r13 -eq 0 ]
	check ktls-tls12-bodies "TLS 1.2 (ECDHE-ECDSA-AES256-GCM-SHA384) fetch or body mismatch" [ $r12 -eq 0 ]
	s=$(status $HTTP)
	conns=$((2 * CONNS))
	layer=$(echo "$s" | grep -o '"records":"[^"]*"')
	ks=$(field "$s" kernel_send)
	us=$(field "$s" user_send)
	hs=$(field "$s" handshakes)
	tx=$(( $(tls_stat TlsTxSw) - tx0 ))
	rx=$(( $(tls_stat TlsRxSw) - rx0 ))
	echo "INFO ktls: status $layer handshakes $hs kernel_send $ks user_send $us; tls_stat TlsTxSw +$tx TlsRxSw +$rx"
	echo "INFO ktls: $(echo "$s" | grep -o '"bytes_sent":[0-9]*'), $(echo "$s" | grep -o '"zero_copy":{[^}]*}')"
	# Bodies above --cache-small-max (64 KiB) go by sendfile from the page
	# cache, encrypted by the kernel: by reference, both passes.
	big=$(awk '$2 > 65536 { s += $2 } END { print s }' $ZH/files)
	ref=$(field "$s" bytes_by_reference)
	check ktls-sendfile "bytes_by_reference $ref, wanted at least $((2 * big))" \
		[ "$ref" -ge $((2 * big)) ]
	check ktls-status-layer "status says $layer" [ "$layer" = '"records":"kernel"' ]
	check ktls-status-counts "kernel_send $ks user_send $us handshakes $hs, wanted $conns 0 $conns" \
		[ "$ks:$us:$hs" = "$conns:0:$conns" ]
	# The client encrypts in user space: every TX context is the server's.
	check ktls-tls-stat-tx "TlsTxSw +$tx, wanted +$conns" [ "$tx" -eq $conns ]
	# OpenSSL 3.0 receives through the kernel on TLS 1.2 only, and only when
	# nothing is buffered past the handshake, so at most one per 1.2 one.
	check ktls-tls-stat-rx "TlsRxSw +$rx, wanted 0..$CONNS" [ "$rx" -ge 0 -a "$rx" -le $CONNS ]
	check ktls-stop "zchttpd did not stop on SIGTERM" stop $pid
else
	bad "ktls-start: zchttpd did not answer"
fi

# kTLS off: user-space records, and the status endpoint says so.
tx0=$(tls_stat TlsTxSw)
if start --tls-ktls off; then
	fetch 3 TLS_AES_256_GCM_SHA384 $T/off13 && same $T/root $T/off13
	check ktls-off-bodies "TLS 1.3 with --tls-ktls off: fetch or body mismatch" [ $? -eq 0 ]
	s=$(status $HTTP)
	layer=$(echo "$s" | grep -o '"records":"[^"]*"')
	ks=$(field "$s" kernel_send)
	us=$(field "$s" user_send)
	tx=$(( $(tls_stat TlsTxSw) - tx0 ))
	echo "INFO ktls-off: status $layer kernel_send $ks user_send $us; tls_stat TlsTxSw +$tx"
	echo "INFO ktls-off: $(echo "$s" | grep -o '"bytes_sent":[0-9]*'), $(echo "$s" | grep -o '"zero_copy":{[^}]*}')"
	# User-space records: every body byte is copied to be encrypted.
	check ktls-off-copied "bytes_by_reference $(field "$s" bytes_by_reference), wanted 0" \
		[ "$(field "$s" bytes_by_reference)" = 0 ]
	check ktls-off-status "status $layer kernel_send $ks user_send $us, wanted user (--tls-ktls off), 0, $CONNS" \
		[ "$layer:$ks:$us" = '"records":"user (--tls-ktls off)"'":0:$CONNS" ]
	check ktls-off-tls-stat "TlsTxSw +$tx, wanted +0" [ "$tx" -eq 0 ]
	check ktls-off-stop "zchttpd did not stop on SIGTERM" stop $pid
else
	bad "ktls-off-start: zchttpd did not answer"
fi
[ "$fail" -eq 0 ]
