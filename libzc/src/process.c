/*
 * process.c - what libzc knows about the process it runs in: the fork
 * generation.
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

#include "internal.h"

#define MAX_CHILD_HOOKS 4

static atomic_uint fork_gen;
static _Atomic(zc_fork_hook) child_hooks[MAX_CHILD_HOOKS];
static atomic_uint n_child_hooks;

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
