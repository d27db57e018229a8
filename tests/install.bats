#!/usr/bin/env bats
# `meson install`: the programs, libzc's headers (a program on them builds
# against the installed library), the manual pages (rendered without a
# warning, and naming every option --help lists) and the systemd unit
# (verified by systemd-analyze where systemd is installed).

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup() {
	DEST="$BATS_TEST_TMPDIR/dest"
	meson install -C "$BATS_TEST_DIRNAME/../build" --destdir "$DEST" --no-rebuild >/dev/null
	PREFIX=$(meson introspect --buildoptions "$BATS_TEST_DIRNAME/../build" |
		python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
	ROOTP="$DEST$PREFIX"
}

@test "meson install puts zchttpd, zcrun, zchttpd-precompress, their manual pages and the unit in place" {
	for f in bin/zchttpd bin/zcrun bin/zchttpd-precompress; do [ -x "$ROOTP/$f" ]; done
	for f in share/man/man8/zchttpd.8 share/man/man1/zcrun.1 share/man/man1/zchttpd-precompress.1 \
		 lib/systemd/system/zchttpd.service; do
		[ -s "$ROOTP/$f" ]
	done
	"$ROOTP/bin/zchttpd" --version
}

@test "the manual pages render without warnings and zchttpd(8) documents every option of --help" {
	for m in man8/zchttpd.8 man1/zcrun.1 man1/zchttpd-precompress.1; do
		run bash -c "MANWIDTH=80 man --warnings -l '$ROOTP/share/man/$m' 2>&1 >/dev/null"
		[ -z "$output" ]
	done
	page=$(MANWIDTH=200 man -l "$ROOTP/share/man/man8/zchttpd.8" 2>/dev/null)
	for opt in $("$ROOTP/bin/zchttpd" --help | grep -oE '^  (-t, )?--[a-z-]+' | grep -oE -- '--[a-z-]+'); do
		[[ "$page" == *"$opt"* ]] || { echo "zchttpd.8 lacks $opt"; false; }
	done
	page=$(MANWIDTH=200 man -l "$ROOTP/share/man/man1/zcrun.1" 2>/dev/null)
	for opt in $("$BATS_TEST_DIRNAME/../build/preload/zcrun" --help 2>&1 | grep -oE -- '--[a-z-]+' | sort -u); do
		[[ "$page" == *"$opt"* ]] || { echo "zcrun.1 lacks $opt"; false; }
	done
}

@test "the systemd unit runs the installed zchttpd with the installed config, checks it first, reloads with SIGHUP" {
	unit="$ROOTP/lib/systemd/system/zchttpd.service"
	grep -qx "ExecStart=$PREFIX/bin/zchttpd --config $PREFIX/etc/zchttpd.conf" "$unit"
	grep -qx "ExecStartPre=$PREFIX/bin/zchttpd -t --config $PREFIX/etc/zchttpd.conf" "$unit"
	grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit"
	grep -qx 'KillSignal=SIGTERM' "$unit"
	if command -v systemd-analyze >/dev/null; then
		# Pointed at the files just installed, so the commands exist.
		sed "s|$PREFIX/bin|$ROOTP/bin|g" "$unit" > "$BATS_TEST_TMPDIR/zchttpd.service"
		run systemd-analyze verify --man=no "$BATS_TEST_TMPDIR/zchttpd.service"
		echo "$output"
		[ "$status" -eq 0 ]
	fi
}

@test "libzc's headers are installed and a program on all three builds against the installed library" {
	for h in zc.h zc_channel.h zc_cs.h; do [ -s "$ROOTP/include/$h" ]; done
	libdir=$(ls -d "$ROOTP"/lib*/ "$ROOTP"/lib/*/ 2>/dev/null |
		while read -r d; do [ -e "$d/libzc.so" ] && echo "$d"; done | head -1)
	[ -n "$libdir" ]
	cat > "$BATS_TEST_TMPDIR/uses.c" <<'C'
#include <zc.h>
#include <zc_channel.h>
#include <zc_cs.h>

int main(void)
{
	zc_channel *a, *b;
	zc_agg *m, *got;
	int cid = cs_alloc(4096, 0, 0);

	if (cid < 0 || cs_free(1, &cid) || zc_channel_pair(&a, &b) ||
	    zc_agg_create(&m) || zc_agg_append_bytes(m, 0, "hi", 2) ||
	    zc_channel_send(a, m) || zc_channel_recv(b, &got) ||
	    zc_agg_len(got) != 2)
		return 1;
	zc_agg_release(m);
	zc_agg_release(got);
	zc_channel_close(a);
	zc_channel_close(b);
	return 0;
}
C
	cc -Wall -Werror -I"$ROOTP/include" -o "$BATS_TEST_TMPDIR/uses" \
		"$BATS_TEST_TMPDIR/uses.c" -L"$libdir" -lzc -lpthread
	LD_LIBRARY_PATH="$libdir" "$BATS_TEST_TMPDIR/uses"
}
