/*
 * objcache.c - per-thread caches of the two small structures every transfer
 * makes and drops: aggregates (zc_agg) and buffer headers (zc_buf).
 *
 * Why: a one-block cs_write/cs_read over a channel creates an aggregate on
 * each side, a foreign buffer header on the receiver and (when the pool's
 * per-size cache is empty) a buffer header on the sender, and frees them
 * all again.  callgrind, 64-byte blocks (zcbench-ipc --block 64 --cases c):
 * malloc/calloc/free were 27-29% of each side's instructions per block.  A
 * thread takes from and gives back to its own small stack of objects: no
 * lock, no atomic.
 *
 * An object is handed back zeroed by the caller's create path (as calloc
 * did).  A thread's cache is freed when the thread exits (a pthread key
 * destructor) so short-lived threads leak nothing.  Under AddressSanitizer
 * the caches are off: every object is malloc'ed and freed, so a use after
 * release is still reported as one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define OBJCACHE_DEPTH 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OBJCACHE_DEPTH 0
#endif
#endif
#ifndef OBJCACHE_DEPTH
#define OBJCACHE_DEPTH 16
#endif

struct objcache {
	void *v[ZC_OBJ_KINDS][OBJCACHE_DEPTH ? OBJCACHE_DEPTH : 1];
	unsigned n[ZC_OBJ_KINDS];
	bool keyed;		/* the key's destructor will free us */
};

static __thread struct objcache cache;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_ok;

static void cache_free(void *arg)
{
	struct objcache *c = arg;

	for (unsigned k = 0; k < ZC_OBJ_KINDS; k++)
		while (c->n[k])
			free(c->v[k][--c->n[k]]);
	c->keyed = false;
}

static void key_init(void)
{
	key_ok = pthread_key_create(&key, cache_free) == 0;
}

void *zc_obj_get(enum zc_obj_kind kind)
{
	if (OBJCACHE_DEPTH && cache.n[kind])
		return cache.v[kind][--cache.n[kind]];
	return NULL;
}

bool zc_obj_put(enum zc_obj_kind kind, void *obj)
{
	if (!OBJCACHE_DEPTH || cache.n[kind] >= OBJCACHE_DEPTH)
		return false;
	if (ZC_UNLIKELY(!cache.keyed)) {
		/* First object this thread keeps: arrange for it to be freed
		 * when the thread exits. */
		pthread_once(&key_once, key_init);
		if (!key_ok || pthread_setspecific(key, &cache) != 0)
			return false;
		cache.keyed = true;
	}
	cache.v[kind][cache.n[kind]++] = obj;
	return true;
}
