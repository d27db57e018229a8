/* /sys/kernel/zc: ABI version, syscall numbers, counters. */
#include "cs.h"

int main(void)
{
	static const char *const calls[] = {
		"cs_alloc", "cs_free", "cs_map", "cs_unmap",
	};
	long nr[4];
	int ok = 1, distinct = 1;

	CHECK("sysfs-abi-version", sysfs_ll("/sys/kernel/zc/abi_version") == 1,
	      "abi_version %lld", sysfs_ll("/sys/kernel/zc/abi_version"));
	for (int i = 0; i < 4; i++) {
		nr[i] = nr_of(calls[i]);
		if (nr[i] <= 450)
			ok = 0;
		for (int j = 0; j < i; j++)
			if (nr[i] == nr[j])
				distinct = 0;
		info("%s = %ld", calls[i], nr[i]);
	}
	CHECK("sysfs-syscall-numbers", ok && distinct,
	      "numbers missing, not after 450, or repeated");
	CHECK("sysfs-counters",
	      sysfs_ll("/sys/kernel/zc/bytes_by_reference") >= 0 &&
	      sysfs_ll("/sys/kernel/zc/bytes_copied") >= 0 &&
	      sysfs_ll("/sys/kernel/zc/containers") >= 0 &&
	      sysfs_ll("/sys/kernel/zc/container_pages") >= 0,
	      "a counter is unreadable");
	/* The numbers work: cs_free of nothing succeeds. */
	CHECK("sysfs-numbers-callable", cs_init() == 0 && cs_free(0, NULL) == 0,
	      "cs_free(0, NULL): %s", strerror(errno));
	return test_failed;
}
