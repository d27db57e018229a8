#!/bin/sh
# Guest (zc.mode=bench; make -C kernel-patch bench): the IPC experiment
# (/libzc/ipc, as make ipc runs it), checksum caching over veth (zcb_csum)
# and forwarding to a socket (zcb_fwd).  $1 is the accelerator qemu used:
# under kvm the sizes measure; under tcg they only show that every case
# runs and delivers its bytes -- TCG's figures mean nothing.
accel=${1:-tcg}
if [ "$accel" = kvm ]; then
	export ZC_IPC_BYTES=256M ZC_IPC_RUNS=5 ZC_IPC_BLOCKS="64K 1M"
	mb=1024 runs=5 csum_kb=1024 fwd_kb=1024 chunk_kb=256 bound=900
else
	echo "INFO bench: TCG emulation: a smoke test with small sizes; the figures mean nothing"
	export ZC_IPC_BYTES=32M ZC_IPC_RUNS=1 ZC_IPC_BLOCKS=128K
	mb=4 runs=1 csum_kb=256 fwd_kb=256 chunk_kb=64 bound=600
fi
echo "INFO bench: accel $accel, $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"

# run NAME CMD...: bounded; a non-zero exit is a failure of its own.
run() {
	name=$1
	shift
	timeout "$bound" "$@"
	rc=$?
	[ "$rc" -eq 0 ] || echo "FAIL bench-$name: exit status $rc"
}

run ipc /libzc/ipc
# Two namespaces joined by veth with tx checksumming off (zchttpd's test's
# tool): the sender's kernel sums every byte it sends.
mkdir -p /run/netns
touch /run/netns/zb-tx /run/netns/zb-rx
if /zchttpd/bin/vethpair /run/netns/zb-tx /run/netns/zb-rx 10.79.0.1 10.79.0.2; then
	run csum /bench/zcb_csum --tx-ns /run/netns/zb-tx --rx-ns /run/netns/zb-rx \
		--addr 10.79.0.2 --mb "$mb" --file-kb "$csum_kb" --runs "$runs"
else
	echo "FAIL bench-csum: vethpair"
fi
run fwd /bench/zcb_fwd --mb "$mb" --file-kb "$fwd_kb" --chunk-kb "$chunk_kb" \
	--runs "$runs"
exit 0
