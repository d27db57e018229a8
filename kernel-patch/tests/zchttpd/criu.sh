#!/bin/sh
# Guest: checkpoint and restore zchttpd with a warm cache (docs/deploy.md).
#
# Debian's criu 3.17 cannot work on the 6.18 host kernel; on 6.1 it does.
# zchttpd (one worker, epoll, HTTP and HTTPS) serves the file set twice
# (cold, then warm); a client keeps one keep-alive connection idle; criu
# dumps the tree (--tcp-established, locking that connection with nftables:
# the guest has no iptables) and kills it; a client that retries on
# "connection refused" starts; criu restores the tree.  Checked: `criu
# check` says "Looks good."; after the dump no process and no listener;
# after the restore the same PID, every body byte-exact for the retrying
# client, the idle connection's next request answered on that connection,
# HTTPS (with kernel TLS) on new connections, an idle kernel-TLS connection
# (criu restores it without the tls ULP) closed rather than answered in the
# clear, and the cache hit ratio of the
# first requests after the restore equal to the warm ratio before the dump,
# not the cold one: the cache survived.  INFO lines give the dump and
# restore times and the ratios (docs/deploy.md quotes them).
. /zchttpd/common.sh
T=/tmp/criu
PORT=8081
TPORT=8444
IMG=$T/img
CRIU=/usr/sbin/criu
rm -rf $T
mkdir -p $IMG $T/cold $T/warm $T/after
mkfiles $T/root

# What criu expects of a system: /run (its lock and kerndat cache), devpts
# for /dev/ptmx (check_tty), a cgroup hierarchy to read the task's cgroup.
mkdir -p /run /var /dev/pts /sys/fs/cgroup
[ -e /var/run ] || ln -s /run /var/run
mountpoint -q /dev/pts || mount -t devpts -o ptmxmode=666 devpts /dev/pts
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup

# log FILE: criu's errors and warnings from FILE, as INFO lines.
log() { grep -E 'Error|Warn|Unable|fail' "$1" | tail -15 | sed 's/^/INFO criu-log: /'; }

$CRIU check -v4 -o $T/check.log > $T/check.out 2>&1
if grep -q '^Looks good\.' $T/check.out; then
	ok criu-check
else
	bad "criu-check: $(grep -v '^$' $T/check.out | tail -1)"
	log $T/check.log
	exit 1
fi

# ratio HITS MISSES: hits per request, in percent (one decimal).
ratio() { awk -v h="$1" -v m="$2" 'BEGIN { if (h + m) printf "%.1f", 100 * h / (h + m); else print "none" }'; }

# zchttpd detached from this shell (its own session, stdio to files), as
# criu wants a tree it can take whole.  ZC_IOLITE=off: on this kernel the
# cache's small bodies would otherwise be kernel IO-Lite buffers, mappings
# of kernel containers that criu cannot dump ("Unknown shit 600
# (anon_inode:[cs_container])"); docs/deploy.md says so too.
ZC_IOLITE=off setsid $ZH/bin/zchttpd --root $T/root \
	--listen 127.0.0.1:$PORT --workers 1 --event epoll \
	--tls-listen 127.0.0.1:$TPORT --tls-cert $ZH/ec.crt --tls-key $ZH/ec.key \
	--cache-ttl 3600000 --error-log $T/error.log \
	</dev/null >$T/out.log 2>&1 &
pid=$!
if ! wait_up $PORT; then
	bad "criu-start: zchttpd did not answer"
	cat $T/error.log
	exit 1
fi

# Cold pass (every file a miss), warm pass (every file a hit).
$TLSGET -n 127.0.0.1 $PORT $T/cold $(paths) > $T/get.out 2>&1
check criu-cold-bodies "cold pass: $(tail -1 $T/get.out)" same $T/root $T/cold
s=$(status $PORT)
h0=$(field "$s" hits) m0=$(field "$s" misses)
$TLSGET -n 127.0.0.1 $PORT $T/warm $(paths) > $T/get.out 2>&1
check criu-warm-bodies "warm pass: $(tail -1 $T/get.out)" same $T/root $T/warm
s=$(status $PORT)
h1=$(field "$s" hits) m1=$(field "$s" misses)
cold=$(ratio "$h0" "$m0")
warm=$(ratio $((h1 - h0)) $((m1 - m0)))

# An idle keep-alive connection across the cycle: one response before the
# dump, the next request on the same connection after the restore.
first=$(head -1 $ZH/files | cut -d' ' -f1)
last=$(tail -1 $ZH/files | cut -d' ' -f1)
mkdir -p $T/ka
$TLSGET -n -W $T/go 127.0.0.1 $PORT $T/ka /$first /$last > $T/ka.out 2>&1 &
ka=$!
# The same over HTTPS with kernel TLS, which criu cannot carry (it restores
# the socket without the tls ULP): zchttpd must close it rather than answer
# in the clear.
mkdir -p $T/kat
$TLSGET -3 -W $T/go 127.0.0.1 $TPORT $T/kat /$first /$last > $T/kat.out 2>&1 &
kat=$!
i=0
while ! { grep -q "^GOT /$first" $T/ka.out && grep -q "^GOT /$first" $T/kat.out; } &&
	[ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
s=$(status $PORT)
h1=$(field "$s" hits) m1=$(field "$s" misses)
echo "INFO criu: libzc backend $(echo "$s" | grep -o '"backend":"[^"]*"')"
echo "INFO criu: hit ratio cold pass $cold% ($h0 hits, $m0 misses), warm pass $warm%"
# The status requests' connections are closed by now; give the server a
# moment to close its ends, so the keep-alive ones are the only ones dumped.
sleep 1

t0=$(now_ms)
$CRIU dump -t $pid --tcp-established --network-lock nftables --file-locks \
	-D $IMG -o dump.log -v4 \
	> $T/dump.out 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -ne 0 ]; then
	bad "criu-dump: exit $rc"
	log $IMG/dump.log
	kill -9 $pid 2>/dev/null
	exit 1
fi
ok criu-dump
# criu killed the tree; reap the master (this shell's child) so its PID is
# free for the restore.
wait $pid 2>/dev/null
echo "INFO criu: dump $((t1 - t0)) ms, images $(du -sk $IMG | cut -f1) KiB"
check criu-dump-gone "process $pid still there after the dump" \
	sh -c ". $ZH/common.sh; ! alive $pid"
check criu-dump-refused "port $PORT still answers after the dump" \
	sh -c "! $TLSGET -n 127.0.0.1 $PORT $T /.zc/status >/dev/null 2>&1"

# The client starts while nothing listens and retries on refusal: its
# requests are the first the restored server serves.
$TLSGET -n -r 60 127.0.0.1 $PORT $T/after $(paths) > $T/after.out 2>&1 &
client=$!
sleep 0.5
t0=$(now_ms)
$CRIU restore -d --tcp-established --network-lock nftables -D $IMG \
	-o restore.log -v4 > $T/restore.out 2>&1
rc=$?
t1=$(now_ms)
if [ $rc -ne 0 ]; then
	bad "criu-restore: exit $rc"
	log $IMG/restore.log
	kill $client 2>/dev/null
	exit 1
fi
ok criu-restore
echo "INFO criu: restore $((t1 - t0)) ms (criu restore -d, TCG)"
check criu-restore-pid "process $pid not back" alive $pid
wait $client
check criu-client "the retrying client: $(tail -1 $T/after.out)" [ $? -eq 0 ]
check criu-after-bodies "a body differs after the restore" same $T/root $T/after
touch $T/go
wait $ka
check criu-keepalive "the idle connection: $(tail -1 $T/ka.out)" [ $? -eq 0 ]
check criu-keepalive-body "/$last differs" cmp -s $T/root/$last $T/ka/$last
wait $kat
rc=$?
check criu-ktls-conn-closed "the kernel-TLS connection: exit $rc, $(grep tlsget $T/kat.out | tr '\n' ' ')" \
	[ $rc -ne 0 -a -z "$(grep "GOT /$last" $T/kat.out)" ]
# Closed (an EOF, or a reset: the request is left unread), not a record
# that fails to decrypt, as a response in the clear would.
check criu-ktls-conn-not-clear "the kernel-TLS connection got something else than a close: $(grep tlsget $T/kat.out | tr '\n' ' ')" \
	grep -qE "TLS read: (unexpected eof while reading|Connection reset by peer)" $T/kat.out
s=$(status $PORT)
h2=$(field "$s" hits) m2=$(field "$s" misses)
after=$(ratio $((h2 - h1)) $((m2 - m1)))
echo "INFO criu: hit ratio of the first $((h2 - h1 + m2 - m1)) requests after the restore $after% (warm before the dump $warm%, cold $cold%)"
check criu-cache-warm "after the restore $after%, warm $warm%, cold $cold%" \
	[ "$after" = "$warm" -a "$after" != "$cold" ]
# HTTPS after the restore: the OpenSSL contexts (certificate, key) came
# back with the memory, and new connections still get kernel TLS.
mkdir -p $T/tls
ks=$(field "$s" kernel_send)
$TLSGET -3 127.0.0.1 $TPORT $T/tls $(paths) > $T/tls.out 2>&1
check criu-after-tls "HTTPS after the restore: $(tail -1 $T/tls.out)" same $T/root $T/tls
s=$(status $PORT)
check criu-after-ktls "kernel_send $ks -> $(field "$s" kernel_send), wanted one more" \
	[ "$(field "$s" kernel_send)" = $((ks + 1)) ]
check criu-stop "restored zchttpd did not stop on SIGTERM" stop $pid
[ "$fail" -eq 0 ]
