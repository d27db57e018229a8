#!/usr/bin/env bash
# Build the guest tests, pack an initramfs, boot the cached kernel under
# qemu and exit with the guest's result.
#
# qemu runs under KVM (-accel kvm -cpu host -smp N) where /dev/kvm opens
# read-write and is hardware KVM, else emulated (-accel tcg, one CPU); it
# says which and why.  ZC_GUEST_ACCEL=tcg|kvm forces one, ZC_GUEST_CPUS
# sets N (default: the host's CPUs, at most 4), ZC_GUEST_CPU the -cpu
# model (default host).  ZC_GUEST_DEBUG=1 boots without `quiet` and with
# earlyprintk on the serial port, for a kernel that stops before its
# console comes up.
#
# The guest runs tests/*.c (static musl programs), libzc's own cmocka
# tests (glibc, staged by stage-libzc.sh) and zchttpd's kTLS and CRIU tests
# (glibc, staged by stage-zchttpd.sh).  ZC_GUEST_MODE=ipc runs the IPC
# experiment instead and leaves its lines in out/ipc.txt; ZC_GUEST_MODE=bench
# runs the benchmarks (bench/) and leaves out/bench.txt and out/bench.json,
# printing their tables.  ZC_GUEST_ONLY=GLOB
# runs only the tests whose names match (t5_socket, libzc, zchttpd-csum):
# for working on one test, never for the lane's verdict.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${ZC_KERNEL_CACHE:-$HOME/.cache/zcstack/kernel}
FLAVOUR=${ZC_KERNEL_FLAVOUR:-}
MODE=${ZC_GUEST_MODE:-test}
OUT=out
suffix=${FLAVOUR:+.$FLAVOUR}
kernel=$CACHE/bzImage$suffix
uapi=$CACHE/include$suffix
# A KASAN kernel under TCG is several times slower and needs shadow memory.
if [ "$FLAVOUR" = kasan ]; then
	TIMEOUT=${ZC_GUEST_TIMEOUT:-2400}
	MEM=1G
elif [ "$MODE" = ipc ] || [ "$MODE" = bench ]; then
	TIMEOUT=${ZC_GUEST_TIMEOUT:-1800}
	MEM=1G
else
	TIMEOUT=${ZC_GUEST_TIMEOUT:-420}
	MEM=512M
fi
[ -f "$kernel" ] || { echo "guest: no kernel at $kernel (make kernel)"; exit 1; }
for h in cs.h iolite.h; do
	[ -f "$uapi/linux/$h" ] || { echo "guest: no uapi header linux/$h in $uapi (make kernel)"; exit 1; }
done

# The accelerator.  KVM needs /dev/kvm open read-write (what qemu does) and
# a KVM that runs an unmodified kernel: kvm_intel or kvm_amd, hardware
# virtualization.  A /dev/kvm of kvm_pvm (PVM, KVM without hardware
# virtualization, e.g. inside a Firecracker VM) runs only PVM guest
# kernels: there qemu -cpu host aborts on MSR 0x10a, and without that MSR
# this kernel stops in its decompressor -- so it counts as no KVM.
# kvm_why_not prints why KVM is not used, or nothing when it can be.
kvm_why_not() {
	if [ ! -c /dev/kvm ]; then
		echo "no /dev/kvm"
	elif ! ( exec 9<>/dev/kvm ) 2>/dev/null; then
		echo "/dev/kvm does not open read-write"
	elif [ ! -d /sys/module/kvm_intel ] && [ ! -d /sys/module/kvm_amd ]; then
		echo "/dev/kvm is not hardware KVM ($(ls /sys/module | grep -m1 '^kvm_' || echo 'no kvm_intel/kvm_amd'))"
	fi
}
why=$(kvm_why_not)
ACCEL=${ZC_GUEST_ACCEL:-}
if [ -z "$ACCEL" ]; then
	if [ -z "$why" ]; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
tcg)
	# Exactly the emulation the lane has always run: one CPU.
	accel_args=(-accel tcg)
	echo "guest: accelerator tcg (emulation${why:+: $why}; timings mean nothing)" ;;
kvm)
	# Forced KVM needs only the device (to try PVM, say).
	( exec 9<>/dev/kvm ) 2>/dev/null ||
		{ echo "guest: ZC_GUEST_ACCEL=kvm but /dev/kvm does not open read-write"; exit 1; }
	cpus=${ZC_GUEST_CPUS:-$(nproc)}
	[ -n "${ZC_GUEST_CPUS:-}" ] || [ "$cpus" -le 4 ] || cpus=4
	accel_args=(-accel kvm -cpu "${ZC_GUEST_CPU:-host}" -smp "$cpus")
	# The benchmarks' sizes need more than the emulated runs.
	[ "$MODE" != bench ] || MEM=2G
	echo "guest: accelerator kvm (-cpu ${ZC_GUEST_CPU:-host}, $cpus vCPUs${why:+; forced: $why})" ;;
*) echo "guest: ZC_GUEST_ACCEL must be tcg or kvm, not '$ACCEL'"; exit 1 ;;
esac
console="quiet"
if [ "${ZC_GUEST_DEBUG:-0}" = 1 ]; then
	# Everything from the decompressor on, before the console driver
	# (config.fragment has EARLY_PRINTK and X86_VERBOSE_BOOTUP for it).
	console="earlyprintk=serial,ttyS0,115200 ignore_loglevel zc.debug=1"
fi

BUSYBOX=$(command -v busybox || true)
if [ -z "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked'; then
	BUSYBOX=/bin/busybox
fi
[ -x "$BUSYBOX" ] || { echo "guest: busybox-static not installed"; exit 1; }
command -v musl-gcc >/dev/null || { echo "guest: musl-gcc not installed"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "guest: qemu-system-x86 not installed"; exit 1; }

rm -rf "$OUT/root"
mkdir -p "$OUT/root"/{bin,sbin,proc,sys,dev,tmp,tests,etc,run}
root=$OUT/root

# Guest programs: tests/*.c, one binary each; tests/zc-exit.c is the
# isa-debug-exit helper, not a test.
CFLAGS=(-static -O2 -Wall -Wextra -Werror -std=gnu11 -Itests -I"$uapi")
for src in tests/*.c; do
	name=$(basename "$src" .c)
	dest=$root/tests/$name
	[ "$name" = zc-exit ] && dest=$root/bin/zc-exit
	musl-gcc "${CFLAGS[@]}" -o "$dest" "$src"
done
# The benchmarks (bench/*.c, bench/run.sh as /bench/run): built in every
# mode, so that the lane keeps them compiling; run only in bench mode.
mkdir -p "$root/bench"
for src in bench/*.c; do
	musl-gcc "${CFLAGS[@]}" -Ibench -o "$root/bench/$(basename "$src" .c)" "$src"
done
install -m 755 bench/run.sh "$root/bench/run"
bash scripts/stage-libzc.sh "$root"
# zchttpd's kTLS and CRIU tests; criu itself only where the tests run.
stage_criu=0
[ "$MODE" = test ] && stage_criu=1
ZC_STAGE_CRIU=$stage_criu bash scripts/stage-zchttpd.sh "$root"
cp "$BUSYBOX" "$root/bin/busybox"
cp tests/init.sh "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT/initramfs.cpio.gz"

log=$OUT/guest.log
echo "guest: booting $(readlink -f "$kernel") (timeout ${TIMEOUT}s)"
set +e
# slab_nomerge: the container caches keep their own /proc/slabinfo lines.
timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 "${accel_args[@]}" -m "$MEM" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$kernel" -initrd "$OUT/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 $console slab_nomerge zc.flavour=${FLAVOUR:-normal} zc.mode=$MODE zc.accel=$ACCEL${ZC_GUEST_ONLY:+ zc.only=$ZC_GUEST_ONLY}" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	</dev/null 2>&1 | tr -d '\r' | tee "$log"
rc=${PIPESTATUS[0]}
set -e

result=$(grep -E '^GUEST-RESULT: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || true)
if [ -z "$result" ]; then
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "guest: TIMEOUT after ${TIMEOUT}s (no GUEST-RESULT line)"
	else
		echo "guest: no GUEST-RESULT line (qemu exit $rc: panic or crash)"
	fi
	exit 1
fi
[ "$MODE" != ipc ] || grep '^IPC' "$log" > "$OUT/ipc.txt" || true
if [ "$MODE" = bench ]; then
	grep -E '^(IPC|BENCH|INFO bench)' "$log" > "$OUT/bench.txt" || true
	python3 scripts/bench-report.py --accel "$ACCEL" --json "$OUT/bench.json" \
		"$OUT/bench.txt" || { echo "guest: no bench tables"; exit 1; }
fi
pass=$(echo "$result" | awk '{print $2}')
fail=$(echo "$result" | awk '{print $4}')
echo "guest: $pass passed, $fail failed (qemu exit $rc)"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
