#!/usr/bin/env bats
# gdssim from the command line: usage errors (exit 2, a clear message with
# the line number for trace errors, nothing skipped) and small end-to-end
# runs, including the trace tools of bench/trace feeding it.
#
# Runs against the normal build in build/ (ci/test.sh builds it first).

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

setup() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	SIM="$ROOT/build/gds-cache/gdssim"
	PY="$ROOT/.venv/bin/python"
	TMP="$(mktemp -d)"
	[ -x "$SIM" ]
	# A small valid trace: objects 1..4, sizes chosen so the policies differ.
	cat > "$TMP/t.txt" <<'T'
# zctrace 1
# generator: hand-written
0 1 100
1 2 5000
2 1 100
3 3 100 GET 200 /three
4 4 4000
5 1 100
6 3 100
7 2 5000
8 1 100
T
}

teardown() {
	rm -rf "$TMP"
}

@test "--help prints usage and exits 0" {
	run "$SIM" --help
	[ "$status" -eq 0 ]
	[[ "$output" == usage:* ]]
	[[ "$output" == *"--cache-size"* ]]
}

@test "no arguments: --trace is required (exit 2)" {
	run "$SIM"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--trace FILE is required"* ]]
}

@test "unknown option (exit 2)" {
	run "$SIM" --trace "$TMP/t.txt" --bogus
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown option --bogus"* ]]
}

@test "unknown policy is named, with the known ones (exit 2)" {
	run "$SIM" --trace "$TMP/t.txt" --policy gds1,arc
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown policy 'arc'"* ]]
	[[ "$output" == *"gds1 gdsp gdsf gdsf-all lru sieve s3fifo"* ]]
}

@test "bad cache sizes (exit 2)" {
	for s in 0 0% -5% 10X abc 5%% 1,,2 ''; do
		run "$SIM" --trace "$TMP/t.txt" --cache-size "$s"
		echo "size '$s': $output"
		[ "$status" -eq 2 ]
		[[ "$output" == gdssim:* ]]
	done
}

@test "nonexistent trace file (exit 2)" {
	run "$SIM" --trace "$TMP/nope.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"nope.txt: cannot open: No such file or directory"* ]]
}

@test "malformed line: error names file and line (exit 2)" {
	printf '0 1 100\n1 2 5000\n2 oops 100\n3 1 100\n' > "$TMP/bad.txt"
	run "$SIM" --trace "$TMP/bad.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.txt:3: object_id is not a decimal integer"* ]]
}

@test "zero size: error with the line number (exit 2)" {
	printf '# zctrace 1\n0 1 100\n1 2 0\n' > "$TMP/zero.txt"
	run "$SIM" --trace "$TMP/zero.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"zero.txt:3: size_bytes is 0"* ]]
}

@test "time going backwards and wrong field counts are errors" {
	printf '5 1 100\n4 1 100\n' > "$TMP/back.txt"
	run "$SIM" --trace "$TMP/back.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"back.txt:2: time_ms 4 goes backwards"* ]]
	printf '5 1 100 GET\n' > "$TMP/four.txt"
	run "$SIM" --trace "$TMP/four.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"four.txt:1: wrong number of fields"* ]]
}

@test "a trace without requests is an error" {
	printf '# zctrace 1\n# nothing here\n' > "$TMP/empty.txt"
	run "$SIM" --trace "$TMP/empty.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"has no requests"* ]]
}

@test "end to end: table with ceiling, hand-checked LRU numbers" {
	# unique bytes 9200; 300 bytes of cache (3.3%) hold only the 100-byte
	# objects: LRU hits 1 (t=2), 1 (t=5), 3 (t=6), 1 (t=8) = 4 of 9.
	run "$SIM" --trace "$TMP/t.txt" --policy lru,gds1 --cache-size 300
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"9 requests, 4 objects"* ]]
	# ceiling: repeats of 1 (x3), 3, 2 = 5 of 9
	[[ "$output" == *"infinite cache (ceiling): hit ratio 0.5556"* ]]
	[[ "$(grep '^LRU' <<<"$output")" == *" 0.4444 "* ]]
	[[ "$(grep '^GDS(1)' <<<"$output")" == *" 0.4444 "* ]]
}

@test "end to end: --json is valid JSON with one result per policy and size" {
	run "$SIM" --trace "$TMP/t.txt" --policy all --cache-size 1%,50%,64K --json
	[ "$status" -eq 0 ]
	echo "$output" > "$TMP/r.json"
	run "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["requests"] == 9 and d["objects"] == 4 and d["unique_bytes"] == 9200
assert d["metadata"] == {"generator": "hand-written"}
assert len(d["results"]) == 21
big = [r for r in d["results"] if r["cache_size"] == "64K"]
assert all(r["hit_ratio"] == d["ceiling"]["hit_ratio"] for r in big), big
assert {r["policy"] for r in d["results"]} == {"gds1","gdsp","gdsf","gdsf-all","lru","sieve","s3fifo"}
print("ok")' "$TMP/r.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "end to end: generator -> gdssim --plot writes a PNG; GDS(1) beats LRU" {
	[ -x "$PY" ] || skip "no .venv (run ci/deps.sh)"
	"$PY" "$ROOT/bench/trace/gen_trace.py" --requests 30000 --objects 3000 \
		--seed 11 --with-request --out "$TMP/g.txt"
	run "$SIM" --trace "$TMP/g.txt" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"30000 requests"* ]]
	run "$SIM" --trace "$TMP/g.txt" --policy gds1,lru --cache-size 2%,10% \
		--json --plot "$TMP/fig.png"
	[ "$status" -eq 0 ]
	[ "$(head -c 4 "$TMP/fig.png" | tail -c 3)" = "PNG" ]
	echo "$output" > "$TMP/r.json"
	run "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
by = {(r["policy"], r["cache_size"]): r["hit_ratio"] for r in d["results"]}
for s in ("2%", "10%"):
    assert by[("gds1", s)] > by[("lru", s)], by
print("ok")' "$TMP/r.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "end to end: clf2trace output replays through gdssim" {
	[ -x "$PY" ] || skip "no .venv (run ci/deps.sh)"
	cat > "$TMP/access.log" <<'L'
127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
127.0.0.1 - - [10/Oct/2000:13:55:37 -0700] "GET /b.html HTTP/1.1" 200 1043 "-" "curl"
127.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "GET /a.gif HTTP/1.1" 304 -
127.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "GET /a.gif HTTP/1.1" 200 2326
L
	run "$PY" "$ROOT/bench/trace/clf2trace.py" --out "$TMP/c.txt" "$TMP/access.log"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 requests written"*"1 without a body"* ]]
	run "$SIM" --trace "$TMP/c.txt" --policy lru --cache-size 100%
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 requests, 2 objects"* ]]
}

@test "--plot failure is reported (exit 1), not ignored" {
	run env GDSSIM_PLOT_SCRIPT="$TMP/missing.py" "$SIM" --trace "$TMP/t.txt" \
		--policy lru --cache-size 50% --plot "$TMP/x.png"
	[ "$status" -eq 1 ]
	[[ "$output" == *"plot helper"*"missing.py"* ]]
}
