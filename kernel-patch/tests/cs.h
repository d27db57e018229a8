/*
 * cs.h - guest-side helpers for the zcstack kernel tests: the Container
 * Shipping calls through syscall(2), with their numbers read from
 * /sys/kernel/zc/syscalls (never hard-coded), and PASS/FAIL reporting.
 */
#ifndef ZC_GUEST_CS_H
#define ZC_GUEST_CS_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* CS_MAPALL, CS_MAPNOW, struct cs_args: the kernel's uapi header, as
 * installed next to the bzImage by scripts/build-kernel.sh. */
#include <linux/cs.h>

typedef struct cs_args cs_args;

/* memfd sealing, for headers that lack it. */
#ifndef F_ADD_SEALS
#define F_ADD_SEALS	1033
#endif
#ifndef F_SEAL_SHRINK
#define F_SEAL_SHRINK	0x0002
#define F_SEAL_GROW	0x0004
#define F_SEAL_WRITE	0x0008
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 2U
#endif

static int test_failed;

static inline void report(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s", ok ? "PASS" : "FAIL", name);
	if (!ok && fmt) {
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
	if (!ok)
		test_failed = 1;
}

static inline void info(const char *fmt, ...)
{
	va_list ap;

	printf("INFO ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Read one integer from a sysfs file; -1 if it cannot. */
static inline long long sysfs_ll(const char *path)
{
	char buf[64];
	long long v = -1;
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%lld", &v) != 1)
		return -1;
	return v;
}

/* Write s to a sysfs (or procfs) file; 0, or -1 if it was refused. */
static inline int sysfs_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* Pseudo-random bytes, the same for the same seed, different for others. */
static inline void fill_seeded(unsigned char *p, size_t n, unsigned seed)
{
	unsigned x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

/* The kernel's counters of bytes moved by reference and by copy. */
static inline long long ref(void)
{
	return sysfs_ll("/sys/kernel/zc/bytes_by_reference");
}

static inline long long cpy(void)
{
	return sysfs_ll("/sys/kernel/zc/bytes_copied");
}

static inline long nr_of(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/zc/syscalls/%s", name);
	return (long)sysfs_ll(path);
}

static long NR_cs_alloc = -1, NR_cs_free = -1, NR_cs_map = -1,
	    NR_cs_unmap = -1, NR_cs_read = -1, NR_cs_write = -1;

/* Look the numbers up; returns 0 when the four core calls exist. */
static inline int cs_init(void)
{
	NR_cs_alloc = nr_of("cs_alloc");
	NR_cs_free = nr_of("cs_free");
	NR_cs_map = nr_of("cs_map");
	NR_cs_unmap = nr_of("cs_unmap");
	NR_cs_read = nr_of("cs_read");
	NR_cs_write = nr_of("cs_write");
	return NR_cs_alloc > 0 && NR_cs_free > 0 && NR_cs_map > 0 &&
	       NR_cs_unmap > 0 ? 0 : -1;
}

/* The calls return -1 and set errno, like any system call. */
static inline int cs_alloc(int size, void **addr, int options)
{
	return (int)syscall(NR_cs_alloc, size, addr, options);
}

static inline int cs_free(int count, const int *cids)
{
	return (int)syscall(NR_cs_free, count, cids);
}

static inline int cs_map(int count, const int *cids, void **addrs, int options)
{
	return (int)syscall(NR_cs_map, count, cids, addrs, options);
}

static inline int cs_unmap(int count, const int *cids)
{
	return (int)syscall(NR_cs_unmap, count, cids);
}

static inline int cs_read(int fd, int size, int maxcon, cs_args *args, int options)
{
	return (int)syscall(NR_cs_read, fd, size, maxcon, args, options);
}

static inline long cs_write(int fd, int count, const int *cids, const int *offs,
		     const int *lens, int options)
{
	return syscall(NR_cs_write, fd, count, cids, offs, lens, options);
}

/* MemFree in KiB from /proc/meminfo. */
static inline long memfree_kb(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

#define CHECK(name, cond, ...) report(!!(cond), name, __VA_ARGS__)

#endif
