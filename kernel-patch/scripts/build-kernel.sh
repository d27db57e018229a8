#!/usr/bin/env bash
# Build (or find in the cache) the patched kernel and its uapi header.
#
# ZC_KERNEL_FLAVOUR=kasan adds config.kasan (KASAN and the VM/lock
# debugging options) to the configuration; that kernel is cached under its
# own key and linked as bzImage.kasan instead of bzImage.  Either way the
# installed uapi headers linux/cs.h and linux/iolite.h are kept next to the
# image (include-<key>, linked as include or include.kasan) for the guest
# tests.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
source scripts/kconfig.sh

SRC_TAR=/usr/src/linux-source-6.1.tar.xz
CACHE=${ZC_KERNEL_CACHE:-$HOME/.cache/zcstack/kernel}
JOBS=${ZC_KERNEL_JOBS:-2}
FLAVOUR=${ZC_KERNEL_FLAVOUR:-}
export ARCH=x86_64

fragments=(config.fragment)
suffix=
case $FLAVOUR in
"") ;;
kasan) fragments+=(config.kasan); suffix=.kasan ;;
*) echo "kernel: unknown flavour '$FLAVOUR'"; exit 1 ;;
esac

if [ ! -f "$SRC_TAR" ]; then
	echo "kernel: $SRC_TAR missing; installing linux-source-6.1"
	SUDO=()
	[ "$(id -u)" -eq 0 ] || SUDO=(sudo -n)
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" apt-get update -qq </dev/null
	"${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
		linux-source-6.1 </dev/null >/dev/null
fi

version=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null ||
	  stat -c %s-%Y "$SRC_TAR")
shopt -s nullglob
patches=(patches/*.patch)
shopt -u nullglob
key=$( { echo "linux-source-6.1 $version"; echo "lane 4"; cat scripts/kconfig.sh;
	 for p in "${patches[@]}"; do echo "== $p"; cat "$p"; done;
	 for f in "${fragments[@]}"; do echo "== $f"; cat "$f"; done; } |
       sha256sum | cut -c1-16)
image=$CACHE/bzImage-$key
headers=$CACHE/include-$key

mkdir -p "$CACHE"
if [ -f "$image" ] && [ -f "$headers/linux/cs.h" ] &&
   [ -f "$headers/linux/iolite.h" ]; then
	echo "kernel: cached $image"
	ln -sfn "$image" "$CACHE/bzImage$suffix"
	ln -sfn "$headers" "$CACHE/include$suffix"
	exit 0
fi

echo "kernel: building $key (linux-source-6.1 $version, ${#patches[@]} patches)"
start=$(date +%s)
work=$CACHE/build-$key
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$SRC_TAR"
tree=$work/linux-source-6.1
[ -d "$tree" ] || { echo "kernel: unexpected tarball layout"; exit 1; }
cd "$tree"
for p in "${patches[@]}"; do
	echo "kernel: applying $(basename "$p")"
	patch -p1 --quiet --forward --batch < "$here/$p"
done
# tinyconfig + the fragments + olddefconfig (scripts/kconfig.sh, shared
# with check-series.sh); every fragment option must have survived.
zc_kconfig "$tree" "${fragments[@]/#/$here/}"
zc_kconfig_check "$tree" "${fragments[@]/#/$here/}"
log=$work/build.log
if ! nice -n 10 make -j"$JOBS" bzImage >"$log" 2>&1; then
	tail -60 "$log"
	echo "kernel: BUILD FAILED"
	exit 1
fi
grep -E 'warning:' "$log" | head -20 || true
# The uapi headers, processed as headers_install does it: linux/cs.h and
# linux/iolite.h with what they include (linux/types.h, asm/...), which
# musl-gcc does not have.
make -s headers >/dev/null
rm -rf "$headers"
mkdir -p "$headers"
cp -r usr/include/linux usr/include/asm usr/include/asm-generic "$headers/"
find "$headers" -name '.*' -type f -delete
cp arch/x86/boot/bzImage "$image.tmp"
mv "$image.tmp" "$image"
ln -sfn "$image" "$CACHE/bzImage$suffix"
ln -sfn "$headers" "$CACHE/include$suffix"
cd "$here"
# Keep the cache small: the four newest images (normal and KASAN builds
# share it), and the headers of the images kept.
ls -1t "$CACHE"/bzImage-???????????????? 2>/dev/null | tail -n +5 | xargs -r rm -f
shopt -s nullglob
for h in "$CACHE"/include-????????????????; do
	[ -e "$CACHE/bzImage-${h##*/include-}" ] || rm -rf "$h"
done
echo "kernel: built $image in $(( $(date +%s) - start ))s"
