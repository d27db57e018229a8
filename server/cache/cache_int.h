/*
 * cache_int.h - what the unified cache's files share (cache.h is the
 * interface, cache_zone.h the shared memory):
 *
 *   cache.c        the index (lock-free reads), pins, hits, inserts,
 *                  evictions, the zone's life, maintenance
 *   cache_entry.c  what an entry says of its file; private entries
 *   cache_body.c   where a body is and how it leaves; loading bodies
 *   cache_local.c  a worker's descriptors and snapshots of the entries
 *   cache_zone.c   the shared memory, its lock, slots, arena and repairs
 */
#ifndef ZC_CACHE_INT_H
#define ZC_CACHE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "cache_zone.h"
#include "page_drop.h"

/* A worker's own of a slot: what cannot be shared between processes. */
struct cache_local {
	uint32_t gen;			/* of the entry these belong to */
	uint32_t held_at;		/* its place in cache.held */
	bool held;			/* on that list: file or snap set */
	bool loading;			/* a snapshot is being made */
	zc_file *file;			/* our descriptor of its file */
	zc_buf *snap;			/* its body as our snapshot (kernel
					 * IO-Lite buffers: per process) */
	zc_buf *snap_new;		/* cache_load_fill's, until load_end */
};

/* A file whose pages the policy let go, freed under the lock: dropped
 * after it, by path (this worker may never have opened it). */
struct pending_drop {
	int dirfd;
	uint64_t dev, ino;
	char path[CACHE_NAMES_MAX];
};

struct cache {
	struct zone_freed freed;	/* first: zone_freed hands it back */
	struct cache_zone *z;
	unsigned worker;
	_Atomic uint32_t *pins;		/* our row */
	struct cache_local *local;	/* [max_entries] */
	uint32_t nfiles, max_files;	/* descriptors held in local */
	uint32_t *held;			/* slots whose local has something */
	uint32_t nheld;
	uint32_t sweep;			/* the clock hand over held */
	uint64_t next_sweep_ms;
	zc_file *arena_file;		/* the zone's memfd, for sendfile */
	bool snapshots;			/* bodies are per-worker snapshots */
	zc_pool *snap_pool;		/* ... falling back to this pool */
	struct hit_ring *hits;		/* ours, in the zone */
	uint64_t first_hit_ms;		/* of the oldest hit not told */
	struct cache_stats st;		/* counters; gauges filled on read */
	uint64_t now_ms;
	struct page_drop_queue drops;	/* --page-cache policy (page_drop.h) */
	/* Drops owed after this stretch under the lock: one insert may
	 * evict many entries, and each one's pages must go (a drop not
	 * made leaves pages in memory outside the budget), so the list
	 * grows as needed, up to an entry per slot. */
	struct pending_drop *pending;
	unsigned npending, pending_cap;
};

static inline size_t page_size(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}


static inline bool is_shared(const struct cache_entry *e)
{
	return atomic_load_explicit(&e->state, memory_order_relaxed) !=
	       CE_PRIVATE;
}

static inline uint32_t slot_of(const struct cache *c, const struct cache_entry *e)
{
	return zone_slot_of(c->z, e);
}

static inline struct cache_local *local_of(struct cache *c, struct cache_entry *e)
{
	struct cache_local *l = &c->local[slot_of(c, e)];

	return l->gen == e->gen ? l : NULL;
}

/* FNV-1a of the key, the site first as if it were a leading byte. */
static inline uint64_t cache_hash_key(unsigned site, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h ^= site;
	h *= 0x100000001b3ull;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* cache.c */
void cache_lock(struct cache *c);	/* and a rebuild counted, if any */
void cache_unlock(struct cache *c);	/* and the page drops owed */
/* e leaves the index and the budget (its policy entry already out). */
void cache_kill_entry(struct cache *c, struct cache_entry *e);

/* cache_entry.c */
/* Is (dev, ino, size, times) of st what e says? */
bool cache_describes(const struct cache_entry *e, const struct stat *st);
/* Does a fresh stat of e's path still match it? */
bool cache_still_same(const struct cache_entry *e);
/* Fill everything of e but its place from st (e->key, e->fs_path set). */
void cache_describe(struct cache_entry *e, unsigned site, int dirfd,
		    const struct stat *st, uint64_t now_ms,
		    enum cache_coding coding, unsigned variants);
struct cache_entry *cache_private_entry(unsigned site, const char *key,
					int dirfd, const char *fs_path,
					int fd, const struct stat *st,
					uint64_t now_ms,
					enum cache_coding coding,
					unsigned variants);
void cache_private_put(struct cache *c, struct cache_entry *e);

/* cache_body.c */
bool cache_kernel_snapshots(zc_pool *pool);

/* cache_local.c */
void cache_local_clear(struct cache *c, struct cache_local *l);
/* l (of slot s) has a file or a snapshot now: sweeps will look at it. */
void cache_local_hold(struct cache *c, uint32_t s);
void cache_sweep(struct cache *c, uint32_t budget, uint32_t keep, bool all);
void cache_set_file(struct cache *c, struct cache_entry *e, zc_file *f);

#endif
