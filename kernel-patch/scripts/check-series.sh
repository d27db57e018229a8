#!/usr/bin/env bash
# check-series.sh - every prefix of the patch series builds and boots.
#
# A series is reviewed and bisected one patch at a time, so each patch must
# leave a kernel that builds without new warnings and boots.  This applies
# patches/*.patch one by one to Debian's linux-source-6.1 in a scratch tree
# (git, so `git am` checks each applies as mailed), runs checkpatch on it,
# builds the lane's configuration incrementally after each, and boots each
# kernel under qemu with a one-line init that prints what /sys/kernel/zc
# shows and reboots (qemu runs with -no-reboot, so it exits).  Not part of
# `make test` (about 15 minutes on two cores); run it after changing the
# series:  make -C kernel-patch series
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
source scripts/kconfig.sh

SRC_TAR=/usr/src/linux-source-6.1.tar.xz
CACHE=${ZC_KERNEL_CACHE:-$HOME/.cache/zcstack/kernel}
JOBS=${ZC_KERNEL_JOBS:-2}
work=$CACHE/series
export ARCH=x86_64
# The scratch tree's commits (base, then each patch by git am).
export GIT_AUTHOR_NAME=series GIT_AUTHOR_EMAIL=series@zcstack
export GIT_COMMITTER_NAME=series GIT_COMMITTER_EMAIL=series@zcstack

[ -f "$SRC_TAR" ] || { echo "series: no $SRC_TAR (make -C kernel-patch kernel installs it)"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "series: qemu missing"; exit 1; }
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" | grep -q 'statically linked' ||
	{ echo "series: busybox-static missing"; exit 1; }

rm -rf "$work"
mkdir -p "$work"
tar -C "$work" -xf "$SRC_TAR"
tree=$work/linux-source-6.1
build=$work/build
cd "$tree"
# Debian's .gitignore ignores everything at the top level.
: > .gitignore
git init -q
git add -A >/dev/null
git commit -q -m base

# The boot check: print the ABI directory (empty before patch 2) and leave.
root=$work/root
mkdir -p "$root"/{bin,proc,sys}
cp "$BUSYBOX" "$root/bin/busybox"
cat > "$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
echo "SERIES-BOOT $(/bin/busybox uname -r) zc: $(/bin/busybox ls /sys/kernel/zc/syscalls 2>/dev/null | /bin/busybox tr '\n' ' ')"
/bin/busybox reboot -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.gz"

mkdir -p "$build"
# The lane's configuration (scripts/kconfig.sh, as build-kernel.sh).
zc_kconfig "$build" "$here/config.fragment"

n=0
fail=0
for p in "$here"/patches/*.patch; do
	n=$((n + 1))
	name=$(basename "$p")
	if ! git am -q "$p"; then
		echo "FAIL $name: does not apply"
		exit 1
	fi
	warn=$(scripts/checkpatch.pl --no-tree -q --terse "$p" |
	       grep -v 'does MAINTAINERS need updating' | grep -cE 'ERROR|WARNING' || true)
	# A patch may add the option the fragment asks for: configure again.
	zc_kconfig_merge "$build" "$here/config.fragment"
	start=$(date +%s)
	if ! nice -n 10 make -s O="$build" -j"$JOBS" bzImage \
	     >"$work/build-$n.log" 2>&1; then
		tail -30 "$work/build-$n.log"
		echo "FAIL $name: build"
		fail=$((fail + 1))
		continue
	fi
	warnings=$(grep -c 'warning:' "$work/build-$n.log" || true)
	boot=$(timeout 120 qemu-system-x86_64 -accel tcg -m 256M -nographic \
		-no-reboot -monitor none -serial stdio \
		-kernel "$build/arch/x86/boot/bzImage" \
		-initrd "$work/initramfs.gz" \
		-append "console=ttyS0 panic=-1 quiet" </dev/null 2>&1 |
		tr -d '\r' | grep -ao 'SERIES-BOOT.*' || true)
	if [ -z "$boot" ] || [ "$warnings" -ne 0 ] || [ "$warn" -ne 0 ]; then
		echo "FAIL $name: boot '${boot:-none}', $warnings compiler warnings, $warn checkpatch"
		fail=$((fail + 1))
	else
		echo "PASS $name: built in $(( $(date +%s) - start ))s; $boot"
	fi
done
echo "series: $n patches, $fail failed"
[ "$fail" -eq 0 ]
