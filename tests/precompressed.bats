#!/usr/bin/env bats
# Precompressed content (zchttpd --precompressed on) and the tool that
# makes it (server/zchttpd-precompress): negotiation, headers, validators,
# ranges, files that come and go, and path safety.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

PRECOMPRESS="$BATS_TEST_DIRNAME/../server/zchttpd-precompress"

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"
	mkdir -p "$ROOT"
	python3 -c 'import sys
sys.stdout.write("".join(".c%d { color: #%06x; margin: %dpx }\n" % (i, i * 7919 % 0xffffff, i % 50) for i in range(800)))' > "$ROOT/style.css"
	head -c 5000 /dev/urandom > "$ROOT/photo.jpg"
	echo '<h1>index</h1>' > "$ROOT/index.html"
	echo 'secret' > "$BATS_TEST_TMPDIR/outside.txt"
	gzip -9 -c "$BATS_TEST_TMPDIR/outside.txt" > "$BATS_TEST_TMPDIR/outside.gz"
}

teardown() {
	stop_server
	check_sanitizers
}

# headers of GET PATH with Accept-Encoding AE ("" = no header), CR dropped
heads() { # PATH AE [more curl args]
	local p=$1 ae=$2
	shift 2
	if [ -n "$ae" ]; then
		curl -s -D - -o "$BATS_TEST_TMPDIR/body" -H "Accept-Encoding: $ae" "$@" "$URL$p" | tr -d '\r'
	else
		curl -s -D - -o "$BATS_TEST_TMPDIR/body" "$@" "$URL$p" | tr -d '\r'
	fi
}

@test "zchttpd-precompress writes smaller .gz and .br next to text files, with their mtime, once" {
	run "$PRECOMPRESS" "$ROOT"
	[ "$status" -eq 0 ]
	[ -f "$ROOT/style.css.gz" ] && [ -f "$ROOT/style.css.br" ]
	[ ! -e "$ROOT/photo.jpg.gz" ]                 # not a text type
	[ ! -e "$ROOT/index.html.gz" ]                # under 256 bytes
	[ "$(gzip -dc "$ROOT/style.css.gz" | sha256sum)" = "$(sha256sum < "$ROOT/style.css")" ]
	[ "$(brotli -dc "$ROOT/style.css.br" | sha256sum)" = "$(sha256sum < "$ROOT/style.css")" ]
	[ "$(stat -c %s "$ROOT/style.css.br")" -lt "$(stat -c %s "$ROOT/style.css")" ]
	[ "$(stat -c %Y "$ROOT/style.css.gz")" = "$(stat -c %Y "$ROOT/style.css")" ]
	run "$PRECOMPRESS" "$ROOT"                    # up to date: nothing
	[ "$status" -eq 0 ]; [ -z "$output" ]
	echo '.new { color: red }' >> "$ROOT/style.css"
	touch -d '+2 seconds' "$ROOT/style.css"
	run "$PRECOMPRESS" -n "$ROOT"
	[[ "$output" == *"would write $ROOT/style.css.gz"* ]]
	[ "$(gzip -dc "$ROOT/style.css.gz" | sha256sum)" != "$(sha256sum < "$ROOT/style.css")" ]
	run "$PRECOMPRESS" "$ROOT"
	[ "$(gzip -dc "$ROOT/style.css.gz" | sha256sum)" = "$(sha256sum < "$ROOT/style.css")" ]
	[ "$(brotli -dc "$ROOT/style.css.br" | sha256sum)" = "$(sha256sum < "$ROOT/style.css")" ]
	run "$PRECOMPRESS" /nonexistent
	[ "$status" -eq 1 ]
}

@test "precompressed: each client gets the coding it prefers, with Vary, its own ETag and the file's type" {
	"$PRECOMPRESS" "$ROOT" >/dev/null
	start_server --precompressed on
	run heads /style.css 'gzip, deflate, br'
	[[ "$output" == *"Content-Encoding: br"* ]]
	[[ "$output" == *"Vary: Accept-Encoding"* ]]
	[[ "$output" == *"Content-Type: text/css"* ]]
	[[ "$output" == *"Content-Length: $(stat -c %s "$ROOT/style.css.br")"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css.br"
	etag_br=$(printf '%s\n' "$output" | sed -n 's/^ETag: //p')
	run heads /style.css 'gzip'
	[[ "$output" == *"Content-Encoding: gzip"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css.gz"
	etag_gz=$(printf '%s\n' "$output" | sed -n 's/^ETag: //p')
	run heads /style.css 'br;q=0.5, gzip'
	[[ "$output" == *"Content-Encoding: gzip"* ]]
	run heads /style.css 'br;q=0, gzip;q=0'
	[[ "$output" != *"Content-Encoding"* ]]
	[[ "$output" == *"Vary: Accept-Encoding"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css"
	run heads /style.css ''
	[[ "$output" != *"Content-Encoding"* ]]
	[[ "$output" == *"Vary: Accept-Encoding"* ]]
	etag_id=$(printf '%s\n' "$output" | sed -n 's/^ETag: //p')
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css"
	[ -n "$etag_id" ] && [ "$etag_id" != "$etag_br" ] && [ "$etag_id" != "$etag_gz" ] && [ "$etag_br" != "$etag_gz" ]
	# A file with no variants does not vary.
	run heads /photo.jpg 'br, gzip'
	[[ "$output" != *"Vary"* ]] && [[ "$output" != *"Content-Encoding"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/photo.jpg"
	# curl decoding what it asked for gets the file.
	[ "$(curl -s --compressed "$URL/style.css" | sha256sum)" = "$(sha256sum < "$ROOT/style.css")" ]
}

@test "precompressed: 304 by the variant's ETag, HEAD, and ranges of the encoded bytes" {
	"$PRECOMPRESS" "$ROOT" >/dev/null
	start_server --precompressed on
	etag_br=$(heads /style.css br | sed -n 's/^ETag: //p')
	run heads /style.css br -H "If-None-Match: $etag_br"
	[[ "$output" == "HTTP/1.1 304"* ]]
	[[ "$output" == *"Vary: Accept-Encoding"* ]]
	run heads /style.css gzip -H "If-None-Match: $etag_br"   # not the gzip one's tag
	[[ "$output" == "HTTP/1.1 200"* ]]
	run heads /style.css br -I
	[[ "$output" == *"Content-Encoding: br"* ]]
	[[ "$output" == *"Content-Length: $(stat -c %s "$ROOT/style.css.br")"* ]]
	run heads /style.css gzip -r 10-29
	[[ "$output" == "HTTP/1.1 206"* ]]
	[[ "$output" == *"Content-Encoding: gzip"* ]]
	[[ "$output" == *"Content-Range: bytes 10-29/$(stat -c %s "$ROOT/style.css.gz")"* ]]
	cmp "$BATS_TEST_TMPDIR/body" <(tail -c +11 "$ROOT/style.css.gz" | head -c 20)
}

@test "precompressed: variants that appear, disappear or lead outside the root" {
	start_server --precompressed on --cache-ttl 200 --workers 1
	run heads /style.css br
	[[ "$output" != *"Content-Encoding"* ]] && [[ "$output" != *"Vary"* ]]
	"$PRECOMPRESS" "$ROOT" >/dev/null
	sleep 0.4	# past the TTL: looked for again
	run heads /style.css br
	[[ "$output" == *"Content-Encoding: br"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css.br"
	rm "$ROOT/style.css.br"
	sleep 0.4
	run heads /style.css 'br, gzip'
	[[ "$output" == *"Content-Encoding: gzip"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css.gz"
	rm "$ROOT/style.css.gz"
	sleep 0.4
	run heads /style.css 'br, gzip'
	[[ "$output" == "HTTP/1.1 200"* ]] && [[ "$output" != *"Content-Encoding"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css"
	# A variant that is a symlink out of the root is never followed.
	cp "$BATS_TEST_TMPDIR/outside.txt" "$ROOT/notes.txt"
	ln -s "$BATS_TEST_TMPDIR/outside.gz" "$ROOT/notes.txt.gz"
	run heads /notes.txt gzip
	[[ "$output" == "HTTP/1.1 200"* ]] && [[ "$output" != *"Content-Encoding"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/body")" = secret ]   # the file itself, not the link's target
	[[ "$(cat "$BATS_TEST_TMPDIR/server.err")" != *"ERROR"* ]]
}

@test "precompressed off (the default): identity only, no Vary" {
	"$PRECOMPRESS" "$ROOT" >/dev/null
	start_server
	run heads /style.css 'br, gzip'
	[[ "$output" != *"Content-Encoding"* ]] && [[ "$output" != *"Vary"* ]]
	cmp "$BATS_TEST_TMPDIR/body" "$ROOT/style.css"
	run "$ZCHTTPD" --root "$ROOT" --precompressed maybe
	[ "$status" -eq 2 ]
}
