#!/bin/sh
# Guest: libzc's own cmocka tests (glibc builds, in /libzc/tests) on the
# kernel backend.  One PASS/FAIL line per cmocka case, from their TAP
# output; a program that reports fewer cases than its plan (a crash, a
# hang) or exits non-zero without a failed case is one more failure.
export ZC_TEST_TMPDIR=/tmp/zc-test CMOCKA_MESSAGE_OUTPUT=TAP
# test_recycle_stress moves 64 MiB per stress case by default, minutes under
# TCG; the guest moves 16 MiB: the same paths and checks, less volume (16 is
# the least for which its "memory really was recycled" check holds with
# file slices in the stream).
export ZC_STRESS_MB=${ZC_STRESS_MB:-16}
per_test=${ZC_LIBZC_TIMEOUT:-300}
mkdir -p "$ZC_TEST_TMPDIR"

# Cases that cannot mean the same here.  Each must fail with exactly the
# message given (a different failure is a FAIL, a pass a PASS); it is then
# reported, with the reason, and counted neither way.  For a difference of
# the stock kernel (not of the backend), the same case must also fail on the
# portable backend in this guest: "portable" in the third field.
# None today: libzc's io_write.c works around Linux 6.1's AF_UNIX
# ->sendpage() (no backpressure), which made test_eagain and
# test_eintr_unix fail here on both backends.
known=''

# The backend libzc picks on this kernel, and the override.
b=$(/libzc/bin/zc-backend 2>&1)
if [ "$b" = kernel ]; then
	echo "PASS libzc-backend-kernel"
else
	echo "FAIL libzc-backend-kernel: zc_backend_name() says '$b'"
fi
b=$(ZC_BACKEND=portable /libzc/bin/zc-backend 2>&1)
if [ "$b" = portable ]; then
	echo "PASS libzc-backend-portable-override"
else
	echo "FAIL libzc-backend-portable-override: zc_backend_name() says '$b'"
fi

# tap_lines PROGRAM TAPFILE: PASS/FAIL/INFO lines for one program's cases.
tap_lines() {
	echo "$known" | awk -v prog="$1" -v tap="$2" -F'|' '
	{ msg[$1] = $2; why[$1] = $4 }
	END {
		while ((getline line < tap) > 0) {
			if (line ~ /^(not )?ok [0-9]+ - /) {
				flush()
				c = line; sub(/^(not )?ok [0-9]+ - /, "", c)
				key = prog "/" c
				failed = line ~ /^not ok/
				detail = ""
				continue
			}
			if (line ~ /^#/ && key != "")
				detail = detail "\n" line
		}
		flush()
	}
	function flush() {
		if (key == "")
			return
		if (!failed)
			print "PASS libzc/" key
		else if ((key in msg) && index(detail, msg[key]))
			print "INFO libzc/" key ": not counted (fails as expected): " why[key]
		else {
			print "FAIL libzc/" key
			n = split(detail, d, "\n")
			for (i = 2; i <= n && i <= 5; i++)
				print "INFO   " d[i]
		}
		key = ""
	}'
}

for t in /libzc/tests/*; do
	name=${t##*/}
	start=$(date +%s)
	timeout "$per_test" "$t" > /tmp/tap 2>&1
	rc=$?
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' /tmp/tap | head -1)
	tap_lines "$name" /tmp/tap
	n=$(grep -cE '^(not )?ok [0-9]+' /tmp/tap)
	if [ -z "$plan" ] || [ "$n" -ne "$plan" ]; then
		echo "FAIL libzc/$name: $n of ${plan:-?} cases reported (exit $rc)"
		tail -5 /tmp/tap | sed 's/^/INFO   /'
	elif [ "$rc" -ne 0 ] && ! grep -q '^not ok' /tmp/tap; then
		echo "FAIL libzc/$name: exit status $rc"
	fi
	echo "INFO libzc/$name: $n cases, $(( $(date +%s) - start ))s"
done

# Differences of the stock kernel must show on the portable backend too.
for prog in $(echo "$known" | awk -F'|' '$3 == "portable" { split($1, p, "/"); print p[1] }' | sort -u); do
	ZC_BACKEND=portable timeout "$per_test" "/libzc/tests/$prog" > /tmp/tap 2>&1
	echo "$known" | awk -F'|' -v prog="$prog" '$3 == "portable" && index($1, prog "/") == 1 { print $1 "|" $2 }' |
	while IFS='|' read -r key msg; do
		c=${key#*/}
		if grep -A4 "^not ok [0-9]* - $c\$" /tmp/tap | grep -qF "$msg"; then
			echo "PASS libzc/$key-fails-on-portable-too"
		else
			echo "FAIL libzc/$key-fails-on-portable-too: on the portable backend it does not fail that way, so the kernel backend is to blame"
		fi
	done
done
