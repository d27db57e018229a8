#!/bin/busybox sh
# Guest /init: run every /tests/* program, then libzc's own tests
# (/libzc/run) and zchttpd's (/zchttpd/tests/*.sh), print their PASS/FAIL
# lines, check the kernel log, print GUEST-RESULT and leave qemu through
# isa-debug-exit.  With zc.mode=ipc on
# the kernel command line it runs the IPC experiment (/libzc/ipc) instead,
# with zc.mode=bench the benchmarks (/bench/run).  zc.accel= says whether
# qemu emulates or runs under KVM; zc.debug=1 leaves the kernel's console
# log level alone.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
ifconfig lo 127.0.0.1 up 2>/dev/null

flavour=normal
mode=test
accel=tcg
debug=0
for arg in $(cat /proc/cmdline); do
	case $arg in
	zc.flavour=*) flavour=${arg#zc.flavour=} ;;
	zc.mode=*) mode=${arg#zc.mode=} ;;
	zc.only=*) only=${arg#zc.only=} ;;
	zc.accel=*) accel=${arg#zc.accel=} ;;
	zc.debug=*) debug=${arg#zc.debug=} ;;
	esac
done
[ "$debug" = 1 ] || echo 1 > /proc/sys/kernel/printk 2>/dev/null

# ZC_GUEST_ONLY (run-guest.sh) narrows a run to the tests whose name
# matches that glob (t5_socket, libzc, zchttpd-csum, zchttpd-*): for
# working on one test; the lane itself always runs them all.
wanted() { case $1 in ${only:-*}) return 0 ;; esac; return 1; }
# A KASAN kernel under TCG is several times slower.
per_test=120
[ "$flavour" = kasan ] && per_test=900
export ZC_LIBZC_TIMEOUT=$((per_test * 5 / 2))
echo "INFO guest: $(uname -r), flavour $flavour, mode $mode, accel $accel, $(nproc) CPU(s)"

pass=0
fail=0

# count NAME RC: add one program's PASS/FAIL lines (in /tmp/out) to the
# totals; a program that exits non-zero without a FAIL line, or reports
# nothing, counts as one failure.
count() {
	grep -E '^(PASS|FAIL|INFO) ' /tmp/out
	p=$(grep -c '^PASS ' /tmp/out)
	f=$(grep -c '^FAIL ' /tmp/out)
	if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $1: exit status $2"
		tail -5 /tmp/out
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $1: no result"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
}

if [ "$mode" = ipc ]; then
	/libzc/ipc > /tmp/out 2>&1
	grep '^IPC' /tmp/out
	count ipc 0
elif [ "$mode" = bench ]; then
	/bench/run "$accel" > /tmp/out 2>&1
	rc=$?
	grep -E '^(IPC|BENCH)' /tmp/out
	count bench $rc
else
	for t in /tests/*; do
		name=${t##*/}
		wanted "$name" || continue
		start=$(date +%s)
		timeout "$per_test" "$t" > /tmp/out 2>&1
		count "$name" $?
		echo "INFO $name: $p passed, $f failed, $(( $(date +%s) - start ))s"
	done
	if [ -x /libzc/run ] && wanted libzc; then
		start=$(date +%s)
		/libzc/run > /tmp/out 2>&1
		count libzc $?
		echo "INFO libzc: $p passed, $f failed, $(( $(date +%s) - start ))s"
	fi
	# zchttpd in the guest: kernel TLS, checkpoint/restore (tests/zchttpd).
	for t in /zchttpd/tests/*.sh; do
		[ -e "$t" ] || continue
		name=zchttpd-$(basename "$t" .sh)
		wanted "$name" || continue
		start=$(date +%s)
		timeout $((per_test * 2)) "$t" > /tmp/out 2>&1
		count "$name" $?
		echo "INFO $name: $p passed, $f failed, $(( $(date +%s) - start ))s"
	done
fi

# On the KASAN flavour the checkers must really be on: KASAN, lockdep.
if [ "$flavour" = kasan ]; then
	for what in 'KernelAddressSanitizer initialized' \
		    'Lock dependency validator'; do
		if dmesg | grep -q "$what"; then
			echo "PASS kasan-flavour: $what"
			pass=$((pass + 1))
		else
			echo "FAIL kasan-flavour: no '$what' in dmesg"
			fail=$((fail + 1))
		fi
	done
fi

if dmesg | grep -qE 'BUG|Oops|WARNING:|general protection|Call Trace'; then
	echo "FAIL kernel-log: BUG/Oops/WARNING in dmesg"
	dmesg | tail -60
	fail=$((fail + 1))
else
	echo "PASS kernel-log: no BUG/Oops/WARNING in dmesg"
	pass=$((pass + 1))
fi

echo "GUEST-RESULT: $pass passed, $fail failed"
sync
if [ "$fail" -eq 0 ]; then zc-exit 0; else zc-exit 1; fi
# zc-exit returned: isa-debug-exit missing; -no-reboot turns this into exit.
reboot -f
sleep 5
