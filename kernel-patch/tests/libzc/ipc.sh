#!/bin/sh
# Guest (zc.mode=ipc): the Container Shipping IPC experiment on both
# backends and both transports.  For each pair: one zcbench-ipc run of
# cases (b)-(e) interleaved (the ratios against (b)), then each cs case once
# more alone, with the kernel's counters of bytes moved by reference and by
# copy read around it, for each block (message) size in ZC_IPC_BLOCKS.
# TCG timings are only indicative.
bytes=${ZC_IPC_BYTES:-256M}
runs=${ZC_IPC_RUNS:-5}
blocks=${ZC_IPC_BLOCKS:-128K}
zc=/sys/kernel/zc

counters() {
	echo "$(cat $zc/bytes_by_reference) $(cat $zc/bytes_copied)"
}

# backend transport cases runs
bench() {
	if [ "$1" = portable ]; then
		export ZC_BACKEND=portable
	else
		unset ZC_BACKEND
	fi
	/libzc/bin/zcbench-ipc --bytes "$bytes" --runs "$4" --cases "$3" \
		--transport "$2" --block "$block" --json > /tmp/ipc.json 2> /tmp/ipc.err
	rc=$?
	unset ZC_BACKEND
	[ "$rc" -eq 0 ] || sed 's/^/INFO   /' /tmp/ipc.err
	return $rc
}

echo "INFO ipc: $bytes per case and run, $runs runs, blocks $blocks, $(nproc) CPU(s)"
for block in $blocks; do
for backend in portable kernel; do
	for transport in channel pipe; do
		bench $backend $transport b,c,d,e "$runs"
		rc=$?
		echo "IPC-RATIOS backend=$backend transport=$transport rc=$rc" \
		     "$(cat /tmp/ipc.json)"
		if [ "$rc" -eq 0 ]; then
			echo "PASS ipc-$backend-$transport-$block"
		else
			echo "FAIL ipc-$backend-$transport-$block: zcbench-ipc exit $rc"
		fi
		for c in c d e; do
			set -- $(counters)
			bench $backend $transport $c 1
			rc=$?
			set -- "$@" $(counters)
			echo "IPC-COUNTERS backend=$backend transport=$transport" \
			     "block=$block case=$c rc=$rc by_reference=$(( $3 - $1 ))" \
			     "copied=$(( $4 - $2 ))"
		done
	done
done
done
