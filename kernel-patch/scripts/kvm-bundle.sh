#!/usr/bin/env bash
# kvm-bundle.sh [DIR] - a folder that runs the lane's benchmarks on another
# machine: one with /dev/kvm (hardware KVM) and nothing installed for us.
#
# It carries qemu-system-x86_64 with every shared library ldd lists and
# the dynamic loader (run through that loader, so the other machine's
# libraries never mix in), the firmware qemu needs for a -kernel boot
# (SeaBIOS and qemu's option ROMs, -L points at them), the cached kernel,
# the initramfs the last `make -C kernel-patch bench` (or test) packed,
# qemu's TCG module (for `run.sh tcg`) and bench-report.py.  On the other machine, as root:
#
#   DIR/run.sh            KVM, -cpu host, up to 4 vCPUs, 2 GiB: measures
#   DIR/run.sh tcg        emulation: the smoke test (figures mean nothing)
#
# run.sh prints the guest's console, then the three tables (python3 if the
# machine has one; the raw result lines otherwise) and leaves console.log,
# bench.txt and bench.json beside itself.  Default DIR: out/kvm-bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/copy-libs.sh

CACHE=${ZC_KERNEL_CACHE:-$HOME/.cache/zcstack/kernel}
dest=${1:-out/kvm-bundle}
kernel=$(readlink -f "$CACHE/bzImage" 2>/dev/null || true)
initrd=out/initramfs.cpio.gz
qemu=$(command -v qemu-system-x86_64 || true)

[ -n "$kernel" ] && [ -f "$kernel" ] ||
	{ echo "kvm-bundle: no kernel in $CACHE: make -C kernel-patch kernel"; exit 1; }
[ -f "$initrd" ] ||
	{ echo "kvm-bundle: no $initrd: make -C kernel-patch bench first"; exit 1; }
[ -n "$qemu" ] || { echo "kvm-bundle: qemu-system-x86 not installed"; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/firmware"
cp -L "$qemu" "$dest/bin/qemu-system-x86_64"
copy_libs "$dest/root" "$qemu"
# A -kernel boot of the pc machine reads SeaBIOS, the Linux boot option
# ROM and the VAPIC ROM; -nodefaults -vga none leaves no NIC or VGA ROM
# to look for.
for fw in /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
	/usr/share/qemu/linuxboot.bin /usr/share/qemu/kvmvapic.bin; do
	cp -L "$fw" "$dest/firmware/"
done
# TCG's operations are a loadable module in Debian's qemu (KVM is built
# in): carried for `run.sh tcg`, found through QEMU_MODULE_DIR.
mkdir -p "$dest/qemu-modules"
cp /usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so "$dest/qemu-modules/"
copy_libs "$dest/root" "$dest/qemu-modules/accel-tcg-x86_64.so"
cp "$kernel" "$dest/bzImage"
cp "$initrd" "$dest/initramfs.cpio.gz"
cp scripts/bench-report.py "$dest/"
loader=$(cd "$dest/root" && find . -name 'ld-linux*.so*' | head -1)
[ -n "$loader" ] || { echo "kvm-bundle: no dynamic loader among qemu's libraries"; exit 1; }
libdirs=$(cd "$dest/root" && find . -name '*.so*' -printf '%h\n' | sort -u |
	sed "s|^\.|\$here/root|" | paste -sd: -)

cat > "$dest/run.sh" <<EOF
#!/bin/sh
# run.sh [kvm|tcg]: the zcstack kernel with its benchmarks (kvm-bundle.sh).
here=\$(cd "\$(dirname "\$0")" && pwd)
accel=\${1:-kvm}
case \$accel in
kvm)
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "run.sh: /dev/kvm is not usable here"; exit 1; }
	grep -qE '^flags.* (vmx|svm)( |\$)' /proc/cpuinfo ||
		echo "run.sh: no vmx/svm in /proc/cpuinfo: this KVM may not run our kernel"
	cpus=\$(nproc); [ "\$cpus" -le 4 ] || cpus=4
	set -- -accel kvm -cpu host -smp "\$cpus" -m 2G ;;
tcg)	set -- -accel tcg -m 1G ;;
*)	echo "usage: run.sh [kvm|tcg]"; exit 2 ;;
esac
export QEMU_MODULE_DIR="\$here/qemu-modules"
echo "run.sh: accelerator \$accel on \$(uname -r), \$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"\$here/root/$loader" --library-path "$libdirs" "\$here/bin/qemu-system-x86_64" "\$@" \\
	-L "\$here/firmware" -nodefaults -vga none -nographic -serial stdio \\
	-no-reboot -monitor none \\
	-kernel "\$here/bzImage" -initrd "\$here/initramfs.cpio.gz" \\
	-append "console=ttyS0 panic=-1 quiet slab_nomerge zc.flavour=normal zc.mode=bench zc.accel=\$accel" \\
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 </dev/null 2>&1 |
	tr -d '\r' | tee "\$here/console.log"
grep -E '^(IPC|BENCH|INFO bench)' "\$here/console.log" > "\$here/bench.txt" || true
grep -E '^GUEST-RESULT' "\$here/console.log" || { echo "run.sh: the guest gave no result"; exit 1; }
if command -v python3 >/dev/null; then
	python3 "\$here/bench-report.py" --accel "\$accel" --json "\$here/bench.json" "\$here/bench.txt"
else
	echo "run.sh: no python3 here: the result lines are in \$here/bench.txt"
fi
EOF
chmod +x "$dest/run.sh"
echo "kvm-bundle: $dest ($(du -sh "$dest" | cut -f1)): kernel $(basename "$kernel"), qemu $("$qemu" --version | head -1)"
