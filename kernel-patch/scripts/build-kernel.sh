#!/usr/bin/env bash
# Build (or find in the cache) the patched kernel; print its path last.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD

SRC_TAR=/usr/src/linux-source-6.1.tar.xz
CACHE=${ZC_KERNEL_CACHE:-$HOME/.cache/zcstack/kernel}
JOBS=${ZC_KERNEL_JOBS:-2}
export ARCH=x86_64

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
key=$( { echo "linux-source-6.1 $version"; echo "lane 1";
	 for p in "${patches[@]}"; do echo "== $p"; cat "$p"; done;
	 echo "== config.fragment"; cat config.fragment; } |
       sha256sum | cut -c1-16)
image=$CACHE/bzImage-$key

mkdir -p "$CACHE"
if [ -f "$image" ]; then
	echo "kernel: cached $image"
	ln -sf "$image" "$CACHE/bzImage"
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
make -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "$here/config.fragment" >/dev/null
make -s olddefconfig >/dev/null
# Every fragment option must have survived olddefconfig.
missing=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		if ! grep -qx "$line" .config; then
			echo "kernel: config option not set: $line"
			missing=1
		fi ;;
	esac
done < "$here/config.fragment"
[ "$missing" -eq 0 ] || exit 1
log=$work/build.log
if ! nice -n 10 make -j"$JOBS" bzImage >"$log" 2>&1; then
	tail -60 "$log"
	echo "kernel: BUILD FAILED"
	exit 1
fi
grep -E 'warning:' "$log" | head -20 || true
cp arch/x86/boot/bzImage "$image.tmp"
mv "$image.tmp" "$image"
ln -sf "$image" "$CACHE/bzImage"
cd "$here"
# Keep the cache small: the three newest images.
ls -1t "$CACHE"/bzImage-???????????????? 2>/dev/null | tail -n +4 | xargs -r rm -f
echo "kernel: built $image in $(( $(date +%s) - start ))s"
