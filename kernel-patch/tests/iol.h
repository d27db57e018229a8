/*
 * iol.h - guest-side helpers for the IO-Lite calls (iol_read, iol_write),
 * numbers read from /sys/kernel/zc/syscalls like the CS calls (cs.h).
 */
#ifndef ZC_GUEST_IOL_H
#define ZC_GUEST_IOL_H

#include "cs.h"
/* struct iol_slice, IOL_*: the kernel's uapi header, installed with cs.h */
#include <linux/iolite.h>

static long NR_iol_read = -1, NR_iol_write = -1;

/* The CS numbers and the IO-Lite ones; 0 when all exist. */
static inline int iol_init(void)
{
	if (cs_init())
		return -1;
	NR_iol_read = nr_of("iol_read");
	NR_iol_write = nr_of("iol_write");
	return NR_iol_read > 0 && NR_iol_write > 0 ? 0 : -1;
}

static inline long iol_read(int fd, struct iol_slice *s, unsigned int max,
			    unsigned int flags)
{
	return syscall(NR_iol_read, fd, s, max, flags);
}

static inline long iol_write(int fd, const struct iol_slice *s, unsigned int n,
			     unsigned int flags)
{
	return syscall(NR_iol_write, fd, s, n, flags);
}

/* iol_read of at most want bytes into at most max slices. */
static inline long iol_read_n(int fd, struct iol_slice *s, unsigned int max,
			      unsigned long long want)
{
	s[0].len = want;
	return iol_read(fd, s, max, 0);
}

/* IO-Lite's own counters. */
static inline long long iref(void)
{
	return sysfs_ll("/sys/kernel/zc/iol_bytes_by_reference");
}

static inline long long icpy(void)
{
	return sysfs_ll("/sys/kernel/zc/iol_bytes_copied");
}

/* Free the buffers of n slices. */
static inline void iol_free(const struct iol_slice *s, long n)
{
	for (long i = 0; i < n; i++) {
		int id = (int)s[i].buf;

		cs_free(1, &id);
	}
}

#endif
