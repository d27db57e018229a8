/*
 * process.c - what libzc knows about the process it runs in: the page size
 * and the fork generation.
 *
 * The page size is the kernel's, read once: pools hand out page-aligned
 * runs of whole pages, so the pages vmsplice and sendfile lend the kernel
 * belong to one buffer alone, and detaching that buffer with
 * FALLOC_FL_PUNCH_HOLE drops exactly its pages, never part of a
 * neighbour's; the patched kernel's containers are whole pages too.
 * Linux always knows it (the kernel passes AT_PAGESZ to every program), so
 * sysconf cannot fail here.
 *
 * The fork generation counts the forks between the process that first
 * loaded libzc and this one: one counter, bumped by one pthread_atfork
 * child handler.  Objects remember the generation they were made or last
 * used in; a later generation means they were inherited across fork --
 * pools then are read-only (pool.c), channel ends are the other process's
 * (channel.c).  A module whose locks may have been held by another thread
 * at fork time registers a child hook to reinitialise them.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "internal.h"

#define MAX_CHILD_HOOKS 4

static atomic_size_t page_size;
static atomic_uint fork_gen;
static _Atomic(zc_fork_hook) child_hooks[MAX_CHILD_HOOKS];
static atomic_uint n_child_hooks;

size_t zc_page_size(void)
{
	size_t ps = atomic_load_explicit(&page_size, memory_order_relaxed);

	if (ZC_UNLIKELY(!ps)) {
		/* Threads racing here all store the same value. */
		ps = (size_t)sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&page_size, ps, memory_order_relaxed);
	}
	return ps;
}

unsigned zc_fork_gen(void)
{
	return atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

static void on_fork_child(void)
{
	unsigned n = atomic_load(&n_child_hooks);

	atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed);
	for (unsigned i = 0; i < n && i < MAX_CHILD_HOOKS; i++) {
		zc_fork_hook fn = atomic_load(&child_hooks[i]);

		if (fn)		/* NULL: registered while we forked */
			fn();
	}
}

void zc_fork_child_hook(zc_fork_hook fn)
{
	unsigned i = atomic_fetch_add(&n_child_hooks, 1);

	if (i < MAX_CHILD_HOOKS)
		atomic_store(&child_hooks[i], fn);
}

__attribute__((constructor)) static void process_init(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}
