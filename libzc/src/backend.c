/*
 * backend.c - which backend moves the data, and what it moved.
 *
 * The portable backend uses only stock Linux (memfd, sendfile, splice,
 * vmsplice, copy_file_range).  The kernel backend -- the patched kernel's
 * Container Shipping and IO-Lite calls -- is selected here when the running
 * kernel publishes a compatible ABI under /sys/kernel/zc; it does not exist
 * yet, so the portable backend is always chosen.
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "internal.h"

const char *zc_backend_name(void)
{
	return "portable";
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
