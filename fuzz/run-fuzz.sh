#!/usr/bin/env bash
# fuzz/run-fuzz.sh [SECONDS] [TARGET...] - fuzz the protocol library
# zchttp and the socket layer's input assembly with libFuzzer, and fold what is new into the corpus.
#
#   SECONDS   per target, default 60 (targets run one after the other)
#   TARGET    http_parser (request heads), http_response (upstream
#             response heads: the reverse proxy), uri (path normalizer),
#             fcgi (FastCGI records, name-value pairs, CGI response
#             heads), chunked (chunked bodies), host (Host values: virtual
#             hosts), sock_in (the socket layer's input assembly: split
#             reads, ring receives, TLS records); default: all seven
#
# Builds build-fuzz/fuzz_<target> with clang -fsanitize=fuzzer,address,
# undefined (Debian: clang + libclang-rt-14-dev, which ci/deps.sh installs),
# fuzzes each target for SECONDS into a scratch directory seeded from
# fuzz/corpus/<target>/, then rebuilds the corpus as the minimal
# set of inputs (old and new) that keeps all coverage (-merge=1), so the
# committed corpus stays small.  Crashes land in build-fuzz/artifacts/;
# the script exits non-zero when there is one.  The corpus is replayed by
# `meson test` (fuzz-regress-*) in every build.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
	targets=(http_parser http_response uri fcgi chunked host sock_in)

out=build-fuzz
mkdir -p "$out/artifacts"
CC=${CC:-clang}
if ! "$CC" --version 2>/dev/null | grep -q clang; then
	echo "run-fuzz.sh: needs clang (CC=$CC)" >&2
	exit 2
fi
cflags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer -Izchttp -Iserver/net)
lib=(zchttp/http_parser.c zchttp/http_response.c zchttp/http_range.c
	zchttp/http_date.c zchttp/uri.c zchttp/fcgi_proto.c
	zchttp/http_chunked.c zchttp/http_accept.c zchttp/http_host.c
	server/net/sock_in.c)

status=0
for t in "${targets[@]}"; do
	src=fuzz/fuzz_$t.c
	corpus=fuzz/corpus/$t
	[ -f "$src" ] || { echo "no such target: $t" >&2; exit 2; }
	echo "== $t: build"
	"$CC" "${cflags[@]}" "$src" "${lib[@]}" -o "$out/fuzz_$t"

	work=$out/work-$t
	rm -rf "$work"
	mkdir -p "$work" "$corpus"
	dict=()
	[ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")

	echo "== $t: fuzz ${secs}s"
	set +e
	"$out/fuzz_$t" "${dict[@]}" -max_total_time="$secs" -max_len=4096 \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$t-" "$work" "$corpus" \
		> "$out/fuzz-$t.log" 2>&1
	rc=$?
	set -e
	grep -E '^(#[0-9]+ +(INITED|DONE)|stat::(number_of_executed|average_exec|new_units)|==[0-9]+==ERROR|SUMMARY|.*invariant failed)' \
		"$out/fuzz-$t.log" || true
	if [ "$rc" -ne 0 ]; then
		echo "== $t: FAILED (exit $rc), see $out/fuzz-$t.log and $out/artifacts/"
		status=1
		continue
	fi

	# Keep the committed corpus small (< 300 files, < 1 MB): merge on
	# edge coverage alone (-use_counters=0), inputs up to 1 KiB.
	echo "== $t: merge into $corpus"
	rm -rf "$work.min"
	mkdir -p "$work.min"
	"$out/fuzz_$t" -merge=1 -use_counters=0 -max_len=1024 \
		"$work.min" "$corpus" "$work" > "$out/merge-$t.log" 2>&1
	grep -E '^MERGE-OUTER: [0-9]+ new files' "$out/merge-$t.log" || true
	rm -rf "$corpus"
	mkdir -p "$corpus"
	cp "$work.min"/* "$corpus"/ 2>/dev/null || true
	echo "== $t: corpus $(ls "$corpus" | wc -l) files, $(cat "$corpus"/* | wc -c) bytes"
done
exit $status
