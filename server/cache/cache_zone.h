/*
 * cache_zone.h - the shared memory under the unified cache (cache.h), and
 * what keeps it sound when a worker dies: internal to cache.c and
 * cache_zone.c.
 *
 * One memfd, mapped MAP_SHARED by the master before it forks a
 * generation of workers, so it sits at the same address in all of them
 * and pointers into it (entries, libgds's heap) mean the same everywhere:
 *
 *   struct cache_zone     this header: configuration, the lock, the policy
 *   slots[max_entries]    struct cache_entry
 *   buckets[nbuckets]     hash index heads: slot + 1, 0 for none
 *   heap                  libgds's index heap (gds_init_in)
 *   pins[nworkers][max_entries]   one row per worker: its pin count of
 *                         each slot, written only by that worker
 *   hit_rings[nworkers]   each worker's hits not yet told to the policy
 *   bitmap                one bit per arena page, set = allocated
 *   arena                 the bodies, page-aligned runs of pages
 *
 * Everything but the pin rows and the lock-free reads is changed only
 * under `lock`, a process-shared robust mutex.
 */
#ifndef ZC_CACHE_ZONE_H
#define ZC_CACHE_ZONE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "gds.h"

/* A worker's hits on their way to the policy: written by that worker
 * alone (entries, then head with a release store); read and emptied by
 * whichever worker holds the zone's lock (tail), so an eviction decided
 * by any worker sees the hits every worker has recorded.  A hit names its
 * entry by (slot, generation): one whose entry is gone is skipped. */
#define HIT_RING 256
struct hit_ring {
	_Atomic uint32_t head;		/* the worker's */
	char pad1[60];
	_Atomic uint32_t tail;		/* the lock holder's */
	char pad2[60];
	struct { uint32_t slot, gen; } e[HIT_RING];
};

struct cache_zone {
	struct cache_config cfg;
	int memfd;			/* the same number in every worker */
	unsigned char *base;		/* the mapping, same everywhere */
	size_t map_size;
	uint32_t nbuckets;		/* power of two */
	uint32_t pin_stride;		/* uint32s per pin row */
	uint64_t arena_pages;
	struct cache_entry *slots;
	_Atomic uint32_t *buckets;
	_Atomic uint32_t *pins;
	struct hit_ring *hit_rings;	/* one per worker */
	uint64_t *bitmap;
	unsigned char *arena;
	pthread_mutex_t lock;		/* robust, process-shared */
	/* Under the lock: */
	struct gds gds;
	uint32_t free_slots;		/* list through lnext: slot + 1 */
	uint32_t fresh;			/* slots from here on never used: not
					 * touched, so not yet in memory */
	uint32_t limbo;			/* dead slots still pinned */
	uint32_t victims;		/* evicted by libgds, not yet dead
					 * (cache.c's on_evict) */
	uint64_t arena_hint;		/* next-fit start page */
	uint64_t arena_used;		/* pages allocated */
	_Atomic uint64_t bytes, entries;	/* gauges, read without it */
	_Atomic uint64_t rebuilds;	/* times the lock's holder died */
};

static inline uint32_t zone_slot_of(const struct cache_zone *z,
				    const struct cache_entry *e)
{
	return (uint32_t)(e - z->slots);
}

/* Worker w's pin count of slot s. */
static inline _Atomic uint32_t *zone_pin(const struct cache_zone *z,
					 unsigned w, uint32_t s)
{
	return &z->pins[(size_t)w * z->pin_stride + s];
}

/* Take the lock.  If its last holder died holding it, the zone is rebuilt
 * first (everything no live worker pins is dropped); returns true then,
 * so the caller can count it. */
bool zone_lock(struct cache_zone *z);
void zone_unlock(struct cache_zone *z);

/* Told about each entry as it is freed, before its slot is reused: the
 * worker that frees one whose pages the policy let go drops them
 * (cache.c); NULL where nobody does (the master). */
struct zone_freed {
	void (*fn)(struct zone_freed *f, const struct cache_entry *e);
};

/* Under the lock.  A free slot (state CE_FREE, gen bumped), or NULL. */
struct cache_entry *zone_slot_get(struct cache_zone *z);
/* e (CE_DEAD now) left the index and the budget: free it now if no worker
 * pins it, else keep it in limbo until the last pin goes (zone_reclaim). */
void zone_retire(struct cache_zone *z, struct cache_entry *e,
		 struct zone_freed *f);
/* Free the slots in limbo that nobody pins any more. */
void zone_reclaim(struct cache_zone *z, struct zone_freed *f);

/* Under the lock: reserve `pages` arena pages (0 and *off set), or
 * -ENOSPC; give them back (punched out of the memfd first if they went
 * to a socket by reference). */
int zone_arena_alloc(struct cache_zone *z, uint32_t pages, uint64_t *off);
void zone_arena_free(struct cache_zone *z, uint64_t off, uint32_t pages,
		     bool punch);

/* Master: the memory, the lock and the free slots of a new zone (the
 * policy is cache.c's to set up). */
int zone_map(const struct cache_config *cfg, struct cache_zone **out);

/* cache_audit's work (it takes the lock). */
void zone_audit(struct cache_zone *z, struct cache_audit *a);

/* Is slot s pinned by any worker?  (After a full fence by the caller.) */
bool zone_pinned(const struct cache_zone *z, uint32_t s);

#endif
