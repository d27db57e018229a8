#!/bin/busybox sh
# Guest /init: run every /tests/* program, print its PASS/FAIL lines, check
# the kernel log, print GUEST-RESULT and leave qemu through isa-debug-exit.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
ifconfig lo 127.0.0.1 up 2>/dev/null
echo 1 > /proc/sys/kernel/printk 2>/dev/null

pass=0
fail=0
for t in /tests/*; do
	name=${t##*/}
	start=$(date +%s)
	timeout 120 "$t" > /tmp/out 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|INFO) ' /tmp/out
	p=$(grep -c '^PASS ' /tmp/out)
	f=$(grep -c '^FAIL ' /tmp/out)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exit status $rc"
		tail -5 /tmp/out
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: no result"
		f=1
	fi
	echo "INFO $name: $p passed, $f failed, $(( $(date +%s) - start ))s"
	pass=$((pass + p))
	fail=$((fail + f))
done

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
