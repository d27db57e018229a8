/*
 * backend.c - which backend moves the data, and what it moved.
 *
 * The portable backend uses only stock Linux (memfd, sendfile, splice,
 * vmsplice, copy_file_range).  The kernel backend -- the patched kernel's
 * Container Shipping calls -- is selected here, once per process, when the
 * running kernel publishes a compatible ABI under /sys/kernel/zc:
 * abi_version 1 and the number of every call in syscalls/.  The numbers are
 * read from there and never compiled in: 451 is cachestat upstream since
 * 6.5, so a guessed number would call something else on a newer kernel.
 *
 * The IO-Lite calls (iol_read, iol_write) are optional: a kernel that has
 * them gets kernel buffers (iol_kernel.c), one without them is still a
 * Container Shipping kernel.
 *
 * ZC_BACKEND=portable in the environment forces the portable backend (to
 * compare the two, or to rule the kernel out while debugging);
 * ZC_IOLITE=off keeps the kernel backend but not its IO-Lite calls.
 *
 * cs.c turns the answer into the Container Shipping table it calls
 * through; this file calls no backend, so the backends may use it (the
 * call numbers, the counters below).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ZC_SYSFS "/sys/kernel/zc"
#define ZC_ABI_SUPPORTED 1

static pthread_once_t kabi_once = PTHREAD_ONCE_INIT;
static struct zc_kabi kabi;		/* all -1: no kernel backend */

/* One integer from a sysfs file; -1 if it cannot be read. */
static long sysfs_long(const char *path)
{
	char buf[32];
	ssize_t n;
	long v;
	char *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	v = strtol(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || v < 0)
		return -1;
	return v;
}

static void kabi_probe(void)
{
	static const char *const names[ZC_KNR] = {
		[ZC_KNR_ALLOC] = "cs_alloc", [ZC_KNR_FREE] = "cs_free",
		[ZC_KNR_MAP] = "cs_map", [ZC_KNR_UNMAP] = "cs_unmap",
		[ZC_KNR_READ] = "cs_read", [ZC_KNR_WRITE] = "cs_write",
	};
	const char *force = getenv("ZC_BACKEND");
	struct zc_kabi k;
	char path[96];

	for (int i = 0; i < ZC_KNR; i++)
		kabi.nr[i] = -1;
	kabi.iol_read = kabi.iol_write = -1;
	if (force && strcmp(force, "portable") == 0)
		return;
	if (sysfs_long(ZC_SYSFS "/abi_version") != ZC_ABI_SUPPORTED)
		return;
	for (int i = 0; i < ZC_KNR; i++) {
		snprintf(path, sizeof(path), ZC_SYSFS "/syscalls/%s", names[i]);
		k.nr[i] = sysfs_long(path);
		if (k.nr[i] <= 0)
			return;	/* a call missing: not a kernel we can use */
	}
	k.iol_read = k.iol_write = -1;
	force = getenv("ZC_IOLITE");
	if (!force || strcmp(force, "off") != 0) {
		k.iol_read = sysfs_long(ZC_SYSFS "/syscalls/iol_read");
		k.iol_write = sysfs_long(ZC_SYSFS "/syscalls/iol_write");
		if (k.iol_read <= 0 || k.iol_write <= 0)
			k.iol_read = k.iol_write = -1;
	}
	kabi = k;
}

const struct zc_kabi *zc_kabi(void)
{
	pthread_once(&kabi_once, kabi_probe);
	return kabi.nr[0] > 0 ? &kabi : NULL;
}

const char *zc_backend_name(void)
{
	return zc_kabi() ? "kernel" : "portable";
}

static atomic_uint_fast64_t stat_ref, stat_copy, stat_calls;

void zc_stat_ref(uint64_t bytes)
{
	atomic_fetch_add_explicit(&stat_ref, bytes, memory_order_relaxed);
}

void zc_stat_copy(uint64_t bytes)
{
	atomic_fetch_add_explicit(&stat_copy, bytes, memory_order_relaxed);
}

void zc_stat_call(void)
{
	atomic_fetch_add_explicit(&stat_calls, 1, memory_order_relaxed);
}

void zc_io_stats(struct zc_io_stats *st)
{
	if (!st)
		return;
	st->bytes_by_reference = atomic_load_explicit(&stat_ref,
						      memory_order_relaxed);
	st->bytes_copied = atomic_load_explicit(&stat_copy,
						memory_order_relaxed);
	st->calls = atomic_load_explicit(&stat_calls, memory_order_relaxed);
}
