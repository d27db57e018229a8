#!/usr/bin/env bash
# stage-zchttpd.sh ROOT - put zchttpd and its guest tests into the initramfs.
#
# zchttpd is the glibc build (HTTPS needs OpenSSL, which musl lacks here),
# from the lane's own meson tree out/meson (stage-libzc.sh configures it;
# this builds only server/zchttpd there).  Also staged:
#   /zchttpd/bin/tlsget     tests/zchttpd/tlsget.c, the client (OpenSSL)
#   /zchttpd/bin/vethpair   tests/zchttpd/vethpair.c: two network
#                           namespaces joined by veth, tx checksums off
#   /zchttpd/ec.{crt,key}   a self-signed ECDSA P-256 certificate, made here:
#                           TLS 1.3 and ECDHE-ECDSA-AES256-GCM-SHA384 on 1.2
#   /zchttpd/files          the file set's names and sizes; the guest writes
#                           the random bodies itself (a random body does not
#                           compress, and would only grow the initramfs)
#   /zchttpd/tests/*.sh     the guest tests (tests/zchttpd/{ktls,csum,criu}.sh),
#                           which init runs; /zchttpd/common.sh their helpers
#   criu                    /usr/sbin/criu, when ZC_STAGE_CRIU=1 (the lane
#                           runs criu.sh then; without it criu.sh is left out
#                           too)
# with their shared libraries and the loader (copy-libs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/copy-libs.sh
root=$1
build=out/meson
[ -f "$build/build.ninja" ] || { echo "stage-zchttpd: run stage-libzc.sh first"; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
nice -n 10 ninja -C "$build" server/zchttpd >"$log" 2>&1 || { tail -40 "$log"; exit 1; }
gcc -O2 -Wall -Wextra -Werror -std=gnu11 -o "$build/tlsget" \
	tests/zchttpd/tlsget.c -lssl -lcrypto
gcc -O2 -Wall -Wextra -Werror -std=gnu11 -o "$build/vethpair" \
	tests/zchttpd/vethpair.c

dest=$root/zchttpd
mkdir -p "$dest/bin" "$dest/tests" "$root/usr/sbin"
strip -g -o "$dest/bin/zchttpd" "$build/server/zchttpd"
strip -g -o "$dest/bin/tlsget" "$build/tlsget"
strip -g -o "$dest/bin/vethpair" "$build/vethpair"
bins=("$build/server/zchttpd" "$build/tlsget" "$build/vethpair")

# A fresh key each time: nothing outside the guest trusts it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout "$dest/ec.key" -out "$dest/ec.crt" -days 2 -subj /CN=guest \
	2>/dev/null

# 30 files, 2.3 KB to 293 KB: 14 at most --cache-small-max (64 KiB, served
# from pool memory), 16 above (served by sendfile from the page cache).
for i in $(seq 1 30); do
	echo "f$i.bin $(( (i * i * 337 + i * 1000) % 300000 + 1000 ))"
done > "$dest/files"

install -m 644 tests/zchttpd/common.sh "$dest/common.sh"
install -m 755 tests/zchttpd/ktls.sh "$dest/tests/ktls.sh"
install -m 755 tests/zchttpd/csum.sh "$dest/tests/csum.sh"
criu=
if [ "${ZC_STAGE_CRIU:-0}" = 1 ]; then
	# A lane that runs criu.sh fails here without criu: never a silent skip.
	criu=$(command -v criu || echo /usr/sbin/criu)
	[ -x "$criu" ] || { echo "stage-zchttpd: criu not installed (ci/deps.sh)"; exit 1; }
	cp "$criu" "$root/usr/sbin/criu"
	install -m 755 tests/zchttpd/criu.sh "$dest/tests/criu.sh"
	bins+=("$criu")
fi
copy_libs "$root" "${bins[@]}"
echo "stage-zchttpd: zchttpd, tlsget, $(wc -l < "$dest/files") files${criu:+, criu}"
