#!/usr/bin/env bash
# ci/test.sh - run every test suite and total them.
#
# Suites:
#   meson       cmocka unit tests in build/       (normal build)
#   meson-asan  the same tests in build-asan/     (ASan + UBSan)
#   musl        build-static/: static musl zchttpd (ci/static.sh), its
#               meson tests (fuzz corpus replays; no musl cmocka)
#   bats        tests/*.bats                      (command line, cross component)
#   bats-asan, bats-uring, bats-uring-asan
#               the server's bats files again: ASan+UBSan build, io_uring
#               loop, both
#   pytest      Python tests under bench/ and tests/
#   kernel      kernel-patch/: the patched 6.1 kernel booted under qemu
#               (make -C kernel-patch test); one test per guest test line.
#               ZC_SKIP_KERNEL=1 skips it -- for local iteration only, CI
#               never sets it.
#
# Counting: meson counts every cmocka case (TAP subtests, read from meson's
# test logs in <builddir>/meson-logs); bats one per test case (TAP); pytest
# one per test (JUnit XML).  A skipped meson test counts as failed: we have
# no legitimate skips there.  A build that fails counts as one failed test
# of its suite.
#
# The last line is always `N passed, N failed` (", N skipped" follows when
# bats or pytest skipped something), and the exit status is non-zero when
# anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

total_pass=0
total_fail=0
total_skip=0
summaries=()
# What failed, named, with the last lines of a failed program's output:
# printed again just above the summary, so the tail of a CI log says which
# test failed and how, not only how many.
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT

record() { # suite pass fail [skip]
	local skip=${4:-0}
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	total_skip=$((total_skip + skip))
	summaries+=("$(printf '%-11s %4d passed, %4d failed' "$1" "$2" "$3")$([ "$skip" -gt 0 ] && echo ", $skip skipped")")
}

banner() { printf '\n==== %s ====\n' "$*"; }

run_meson_suite() { # suite-name flavour builddir
	local suite=$1 flavour=$2 dir=$3 logs=$3/meson-logs rc
	banner "$suite: build ($dir)"
	if ! ci/build.sh "$flavour"; then
		echo "$suite: BUILD FAILED"
		record "$suite" 0 1
		return
	fi
	banner "$suite: meson test ($dir)"
	# Counted from meson's logs of this run, never an older one's.
	rm -f "$logs/testlog.json" "$logs/testlog.junit.xml"
	meson test -C "$dir" --print-errorlogs
	rc=$?
	# meson writes one JSON object per test program to testlog.json: its
	# result (OK, FAIL, SKIP, TIMEOUT, ERROR, EXPECTEDFAIL, ...).  meson
	# 1.0 does not put TAP cases there; testlog.junit.xml has them, one
	# testsuite "<project>.<test name>" per TAP program with its cases
	# (cmocka speaks TAP).  A program that is OK or EXPECTEDFAIL counts its
	# passed cases (itself when it has none); any other counts its passed
	# cases as passed and the rest it ran as failed, at least one.  No log
	# (meson test did not run) is one failed test.
	local counts pass failed
	counts=$(python3 - "$logs/testlog.json" "$logs/testlog.junit.xml" "$suite" 3>&1 >>"$failures" <<'PY'
import json, os, sys, xml.etree.ElementTree as ET
jlog, junit, suite = sys.argv[1:4]
counts = os.fdopen(3, "w")
cases = {}
try:
    for su in ET.parse(junit).getroot().iter("testsuite"):
        cases[su.get("name", "")] = [
            ("skip" if c.find("skipped") is not None else
             "fail" if c.find("failure") is not None or c.find("error") is not None else
             "ok", c.get("name", "")) for c in su.findall("testcase")]
except (OSError, ET.ParseError):
    pass
try:
    tests = [json.loads(l) for l in open(jlog) if l.strip()]
except (OSError, ValueError):
    print(f"{suite}: no meson test log")
    print(0, 1, file=counts)
    sys.exit()
p = f = 0
for t in tests:
    c = next((v for k, v in cases.items() if k.endswith("." + t["name"])), [])
    res = [r for r, _ in c]
    passed = res.count("ok")
    ran = len(res) - res.count("skip")
    if t["result"] in ("OK", "EXPECTEDFAIL"):
        p += passed if c else 1
        continue
    p += passed
    f += max(ran - passed, 1)
    # Named on stdout (appended to the failures list): the program, how it
    # ended, its cases that did not pass, the last lines it printed.
    print(f"{suite}: {t['name']} {t['result']} after {t.get('duration', 0):.0f} s, "
          f"{passed} of its cases passed")
    for r, n in c:
        if r != "ok":
            print(f"  {r}: {n}")
    for line in (t.get("stdout") or "").splitlines()[-15:]:
        print(f"  | {line[:200]}")
print(p, f, file=counts)
PY
	) || counts="0 1"
	set -- $counts
	pass=$1
	failed=$2
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		echo "$suite: meson test exited $rc without a failed test in its log"
		failed=1
	fi
	record "$suite" "$pass" "$failed"
}

# run_bats_suite NAME FLAVOUR FILES...: bats over FILES with that build.
run_bats_suite() {
	local suite=$1 flavour=$2
	shift 2
	local files=("$@")
	if [ ${#files[@]} -eq 0 ]; then
		banner "$suite: no test files"
		return
	fi
	banner "$suite: build ($flavour)"
	if ! ci/build.sh "$flavour" >/dev/null; then
		echo "$suite: BUILD FAILED"
		record "$suite" 0 1
		return
	fi
	banner "$suite: ${files[*]}"
	local log rc pass fail skip
	log=$(mktemp)
	bats --tap "${files[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	skip=$(grep -cE '^ok [0-9]+ .*# ?skip' "$log")
	pass=$(grep -cE '^ok [0-9]+' "$log")
	pass=$((pass - skip))
	fail=$(grep -cE '^not ok [0-9]+' "$log")
	grep -E '^not ok [0-9]+' "$log" | sed "s/^/$suite: /" >>"$failures"
	rm -f "$log"
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		echo "$suite: exited $rc without a failed test"
		fail=1
	fi
	record "$suite" "$pass" "$fail" "$skip"
}

run_pytest_suite() {
	local dirs=() d
	for d in bench tests; do [ -d "$d" ] && dirs+=("$d"); done
	if [ ! -x .venv/bin/python ]; then
		banner "pytest: no .venv (run ci/deps.sh)"
		record pytest 0 1
		return
	fi
	banner "pytest: ${dirs[*]}"
	local xml rc counts
	xml=$(mktemp --suffix=.xml)
	.venv/bin/python -m pytest -q -p no:cacheprovider --junitxml="$xml" "${dirs[@]}"
	rc=$?
	if [ "$rc" -eq 5 ]; then
		echo "pytest: no tests collected"
		rm -f "$xml"
		return
	fi
	# passed failed skipped from the JUnit XML (errors count as failed).
	counts=$(.venv/bin/python - "$xml" "$failures" <<'PY' 2>/dev/null
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = s = 0
with open(sys.argv[2], "a") as named:
    for su in suites:
        t += int(su.get("tests", 0))
        f += int(su.get("failures", 0)) + int(su.get("errors", 0))
        s += int(su.get("skipped", 0))
        for c in su.iter("testcase"):
            bad = c.find("failure")
            if bad is None:
                bad = c.find("error")
            if bad is not None:
                msg = (bad.get("message") or "").splitlines()[:1]
                print(f"pytest: {c.get('classname')}::{c.get('name')}",
                      *[m[:200] for m in msg], file=named)
print(t - f - s, f, s)
PY
	) || counts="0 0 0"
	rm -f "$xml"
	set -- $counts
	local pass=$1 fail=$2 skip=$3
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		echo "pytest: exited $rc without a failed test"
		fail=1
	fi
	record pytest "$pass" "$fail" "$skip"
}

run_kernel_suite() {
	if [ "${ZC_SKIP_KERNEL:-0}" = 1 ]; then
		banner "kernel: skipped (ZC_SKIP_KERNEL=1, local iteration only)"
		return
	fi
	banner "kernel: make -C kernel-patch test"
	local log rc result pass fail
	log=$(mktemp)
	make -C kernel-patch test </dev/null 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	# The guest prints "GUEST-RESULT: N passed, M failed" last: one per
	# PASS/FAIL line (the test programs' cases plus the dmesg check).
	# No line -- build failure, hang, panic -- is one failed test.
	result=$(grep -E '^GUEST-RESULT: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	grep -E '^FAIL ' "$log" | sed 's/^/kernel: /' >>"$failures"
	rm -f "$log"
	if [ -z "$result" ]; then
		echo "kernel: no GUEST-RESULT line (make exited $rc)"
		record kernel 0 1
		return
	fi
	pass=$(echo "$result" | awk '{print $2}')
	fail=$(echo "$result" | awk '{print $4}')
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		echo "kernel: make exited $rc without a failed guest test"
		fail=1
	fi
	record kernel "$pass" "$fail"
}

run_meson_suite meson normal build
run_meson_suite meson-asan asan build-asan
# The static musl build of the container image (ci/static.sh).
run_meson_suite musl static build-static
# No bats test may hang the run.
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-180}
shopt -s nullglob
run_bats_suite bats normal tests/*.bats
shopt -u nullglob
# The server's files once more, built with ASan+UBSan: their teardown fails a test
# on any sanitizer report from a server process.
# Leak checking stays with the unit tests: LeakSanitizer's exit-time scan
# of a process that keeps signals blocked (the master) can hang.
ZCHTTPD=$PWD/build-asan/server/zchttpd ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	run_bats_suite bats-asan asan tests/zchttpd.bats tests/precompressed.bats tests/tls.bats tests/fastcgi.bats tests/fastcgi_apps.bats tests/vhost.bats tests/cache_shared.bats tests/h2.bats tests/proxy.bats
# And both again on the io_uring loop (--event io_uring): every server those
# files start runs on it (tests/helpers/server.bash).
ZCHTTPD_EVENT=io_uring \
	run_bats_suite bats-uring normal tests/zchttpd.bats tests/precompressed.bats tests/tls.bats tests/fastcgi.bats tests/fastcgi_apps.bats tests/vhost.bats tests/cache_shared.bats tests/h2.bats tests/proxy.bats
ZCHTTPD=$PWD/build-asan/server/zchttpd ZCHTTPD_EVENT=io_uring \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	run_bats_suite bats-uring-asan asan tests/zchttpd.bats tests/precompressed.bats tests/tls.bats tests/fastcgi.bats tests/fastcgi_apps.bats tests/vhost.bats tests/cache_shared.bats tests/h2.bats tests/proxy.bats
# zctee once more with ASan+UBSan.
ZCTEE=$PWD/build-asan/preload/zctee ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	run_bats_suite bats-zctee-asan asan tests/zctee.bats
run_pytest_suite
run_kernel_suite

if [ -s "$failures" ]; then
	banner "failed"
	head -n 120 "$failures"
fi
banner "summary"
for s in "${summaries[@]}"; do echo "$s"; done
if [ "$total_skip" -gt 0 ]; then
	echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else
	echo "$total_pass passed, $total_fail failed"
fi
[ "$total_fail" -eq 0 ]
