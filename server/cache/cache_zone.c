/*
 * cache_zone.c - the unified cache's shared memory (cache_zone.h): its
 * layout, its lock, slots and arena pages, and how it stays sound when a
 * worker is killed at any instruction.
 *
 * Two ways a worker can die, two repairs:
 *
 *  - Outside the lock (nearly always: the lock is held for microseconds).
 *    Everything shared is consistent; what the dead worker leaves is its
 *    pin row (entries it was sending stay pinned forever) and bodies it
 *    was copying in (CB_LOADING, arena pages reserved).  The master, which
 *    reaps it, clears both (cache_zone_worker_gone) before it starts the
 *    successor that will use the same row.
 *
 *  - Inside the lock.  The robust mutex hands the next holder EOWNERDEAD.
 *    The dead holder may have been half-way through a list, the heap or
 *    the bitmap, so none of those is trusted: zone_rebuild starts the zone
 *    afresh from what each slot says of itself and the pin rows.  An entry
 *    a live worker pins becomes dead (out of the index, its body kept until
 *    the pin goes); everything else is freed.  A slot whose sequence count
 *    is odd was being changed by the dead holder: its body fields are not
 *    trusted either (nobody can be reading a body that was being
 *    reserved).  The cache then refills from the files, which are the
 *    truth: a rebuild costs misses, never a wrong byte.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cache_zone.h"

#define ZONE_ALIGN 64

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static size_t page_size(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* ------------------------------------------------------------ the lock */

static void rebuild(struct cache_zone *z);

bool zone_lock(struct cache_zone *z)
{
	int r = pthread_mutex_lock(&z->lock);

	if (r != EOWNERDEAD)
		return false;
	rebuild(z);
	pthread_mutex_consistent(&z->lock);
	return true;
}

void zone_unlock(struct cache_zone *z)
{
	pthread_mutex_unlock(&z->lock);
}

/* ----------------------------------------------------------- the arena */

static bool page_used(const struct cache_zone *z, uint64_t p)
{
	return z->bitmap[p / 64] >> (p % 64) & 1;
}

static void mark(struct cache_zone *z, uint64_t first, uint64_t n, bool used)
{
	for (uint64_t p = first; p < first + n; p++) {
		if (used)
			z->bitmap[p / 64] |= 1ull << (p % 64);
		else
			z->bitmap[p / 64] &= ~(1ull << (p % 64));
	}
}

/* The first run of n free pages at or after `from` and before `end`, or
 * UINT64_MAX.  Whole used words are skipped 64 pages at a time. */
static uint64_t find_run(const struct cache_zone *z, uint64_t from,
			 uint64_t end, uint64_t n)
{
	uint64_t p = from, run = 0;

	while (p < end) {
		if (p % 64 == 0 && z->bitmap[p / 64] == ~0ull) {
			p += 64;
			run = 0;
			continue;
		}
		if (page_used(z, p)) {
			run = 0;
		} else if (++run == n) {
			return p + 1 - n;
		}
		p++;
	}
	return UINT64_MAX;
}

int zone_arena_alloc(struct cache_zone *z, uint32_t pages, uint64_t *off)
{
	uint64_t p;

	if (!pages || pages > z->arena_pages - z->arena_used)
		return -ENOSPC;
	p = find_run(z, z->arena_hint, z->arena_pages, pages);
	if (p == UINT64_MAX)
		p = find_run(z, 0, z->arena_pages, pages);
	if (p == UINT64_MAX)
		return -ENOSPC;
	mark(z, p, pages, true);
	z->arena_used += pages;
	z->arena_hint = p + pages;
	*off = p * page_size();
	return 0;
}

/* Pages a socket may still hold (sendfile from the memfd took them by
 * reference) leave the memfd: whoever holds them keeps the old bytes, the
 * next body there faults in fresh ones (libzc's pools do the same). */
static void punch(struct cache_zone *z, uint64_t off, uint64_t len)
{
	fallocate(z->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)((size_t)(z->arena - z->base) + off), (off_t)len);
}

void zone_arena_free(struct cache_zone *z, uint64_t off, uint32_t pages,
		     bool punch_it)
{
	uint64_t p = off / page_size();

	if (!pages || p + pages > z->arena_pages)
		return;
	if (punch_it)
		punch(z, off, (uint64_t)pages * page_size());
	mark(z, p, pages, false);
	z->arena_used -= pages;
}

/* ----------------------------------------------------------- the slots */

bool zone_pinned(const struct cache_zone *z, uint32_t s)
{
	for (unsigned w = 0; w < z->cfg.nworkers; w++)
		if (atomic_load_explicit(zone_pin(z, w, s),
					 memory_order_relaxed))
			return true;
	return false;
}

struct cache_entry *zone_slot_get(struct cache_zone *z)
{
	struct cache_entry *e;

	if (z->free_slots) {
		e = &z->slots[z->free_slots - 1];
		z->free_slots = e->lnext;
	} else if (z->fresh < z->cfg.max_entries) {
		e = &z->slots[z->fresh++];
		e->key = e->fs_path = e->inline_names;
	} else {
		return NULL;
	}
	e->lnext = 0;
	e->gen++;
	return e;
}

/* The seqlock's writer side: readers that compared anything of e while
 * this runs see an odd count, or a different one afterwards. */
static void write_begin(struct cache_entry *e)
{
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void write_end(struct cache_entry *e)
{
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
}

/* Give the slot and its body back.  The entry is out of the index and the
 * budget and nobody pins it. */
static void slot_free(struct cache_zone *z, struct cache_entry *e,
		      struct zone_freed *f)
{
	if (f && f->fn)
		f->fn(f, e);
	if (e->body_pages)
		zone_arena_free(z, e->body_off, e->body_pages,
				atomic_load_explicit(&e->kref,
						     memory_order_relaxed));
	write_begin(e);
	atomic_store_explicit(&e->state, CE_FREE, memory_order_relaxed);
	atomic_store_explicit(&e->body_state, CB_NONE, memory_order_relaxed);
	e->body_pages = 0;
	e->wants_body = false;
	e->drop_pages = false;
	atomic_store_explicit(&e->kref, false, memory_order_relaxed);
	write_end(e);
	e->lnext = z->free_slots;
	z->free_slots = zone_slot_of(z, e) + 1;
}

void zone_retire(struct cache_zone *z, struct cache_entry *e,
		 struct zone_freed *f)
{
	uint32_t s = zone_slot_of(z, e);

	/* The caller stored CE_DEAD; a pin made before that store is seen
	 * here, one made after it sees CE_DEAD and backs off (cache.c). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!zone_pinned(z, s)) {
		slot_free(z, e, f);
		return;
	}
	e->lnext = z->limbo;
	z->limbo = s + 1;
}

void zone_reclaim(struct cache_zone *z, struct zone_freed *f)
{
	uint32_t *pp = &z->limbo;

	atomic_thread_fence(memory_order_seq_cst);
	while (*pp) {
		struct cache_entry *e = &z->slots[*pp - 1];

		if (zone_pinned(z, *pp - 1)) {
			pp = &e->lnext;
			continue;
		}
		*pp = e->lnext;
		slot_free(z, e, f);
	}
}

/* ------------------------------------------------------------- repairs */

static void reset_policy(struct cache_zone *z)
{
	struct gds_entry **heap = z->gds.heap;
	struct gds_config g = {
		.budget = z->cfg.budget,
		.max_entries = z->cfg.max_entries,
		.evict = z->gds.evict,
		.evict_arg = z->gds.evict_arg,
	};

	gds_policy_apply(z->cfg.policy, &g);
	gds_init_in(&z->gds, &g, heap);
}

static void rebuild(struct cache_zone *z)
{
	size_t ps = page_size();

	memset(z->buckets, 0, (size_t)z->nbuckets * sizeof(*z->buckets));
	memset(z->bitmap, 0, align_up(z->arena_pages, 64) / 8);
	reset_policy(z);
	z->free_slots = z->limbo = z->victims = 0;
	z->fresh = z->cfg.max_entries;	/* all on the free list below */
	z->arena_used = 0;
	z->arena_hint = 0;
	atomic_store(&z->bytes, 0);
	atomic_store(&z->entries, 0);
	for (uint32_t s = z->cfg.max_entries; s-- > 0;) {
		struct cache_entry *e = &z->slots[s];
		uint32_t st = atomic_load(&e->state);
		uint32_t seq = atomic_load(&e->seq);
		bool pinned = (st == CE_READY || st == CE_DEAD) &&
			      zone_pinned(z, s);

		gds_entry_init(&e->g);
		atomic_store(&e->hnext, 0);
		if (seq & 1) {			/* the dead holder's */
			e->body_pages = 0;
			atomic_store(&e->body_state, CB_NONE);
			atomic_store(&e->seq, seq + 1);
		}
		if (e->body_pages && (e->body_off % ps ||
				      e->body_off / ps + e->body_pages >
					      z->arena_pages))
			e->body_pages = 0;	/* nonsense: not ours */
		if (pinned) {
			atomic_store(&e->state, CE_DEAD);
			if (e->body_pages) {
				mark(z, e->body_off / ps, e->body_pages, true);
				z->arena_used += e->body_pages;
			}
			e->lnext = z->limbo;
			z->limbo = s + 1;
			continue;
		}
		atomic_store(&e->state, CE_FREE);
		atomic_store(&e->body_state, CB_NONE);
		e->body_pages = 0;
		e->wants_body = false;
		e->drop_pages = false;
		atomic_store(&e->kref, false);
		e->key = e->fs_path = e->inline_names;
		e->lnext = z->free_slots;
		z->free_slots = s + 1;
	}
	/* Which free pages went to a socket is not known any more: punch
	 * every free run. */
	for (uint64_t p = 0; p < z->arena_pages;) {
		uint64_t q = p;

		while (q < z->arena_pages && !page_used(z, q))
			q++;
		if (q > p)
			punch(z, p * ps, (q - p) * ps);
		p = q + 1;
	}
	atomic_fetch_add(&z->rebuilds, 1);
}

void cache_zone_worker_gone(struct cache_zone *z, unsigned worker)
{
	if (!z || worker >= z->cfg.nworkers)
		return;
	zone_lock(z);
	for (uint32_t s = 0; s < z->cfg.max_entries; s++) {
		struct cache_entry *e = &z->slots[s];

		atomic_store_explicit(zone_pin(z, worker, s), 0,
				      memory_order_relaxed);
		if (atomic_load(&e->body_state) == CB_LOADING &&
		    e->body_loader == (int32_t)worker) {
			write_begin(e);
			atomic_store(&e->body_state, CB_NONE);
			zone_arena_free(z, e->body_off, e->body_pages, false);
			e->body_pages = 0;
			write_end(e);
		}
	}
	zone_reclaim(z, NULL);
	zone_unlock(z);
}

/* ---------------------------------------------------------------- audit */

static uint64_t list_len(const struct cache_zone *z, uint32_t head,
			 uint32_t state)
{
	uint64_t n = 0;

	while (head && head <= z->cfg.max_entries && n <= z->cfg.max_entries) {
		if (atomic_load(&z->slots[head - 1].state) != state)
			return UINT64_MAX;
		n++;
		head = z->slots[head - 1].lnext;
	}
	return n;
}

void zone_audit(struct cache_zone *z, struct cache_audit *a)
{
	uint64_t used = 0, linked = 0;

	zone_lock(z);
	*a = (struct cache_audit){ .ok = true };
	for (uint32_t s = 0; s < z->cfg.max_entries; s++) {
		struct cache_entry *e = &z->slots[s];

		switch (atomic_load(&e->state)) {
		case CE_READY:
			a->ready++;
			a->body_pages += e->body_pages;
			if (!gds_cached(&e->g))
				a->why = "a ready entry outside the policy";
			break;
		case CE_DEAD:
			a->dead++;
			a->body_pages += e->body_pages;
			break;
		default:
			a->free++;
			if (e->body_pages)
				a->why = "a free slot holding pages";
		}
	}
	for (uint32_t b = 0; b < z->nbuckets; b++)
		for (uint32_t i = atomic_load(&z->buckets[b]); i;
		     i = atomic_load(&z->slots[i - 1].hnext)) {
			if (atomic_load(&z->slots[i - 1].state) != CE_READY ||
			    ++linked > a->ready) {
				a->why = "the index names a slot that is not ready";
				break;
			}
		}
	for (uint64_t p = 0; p < z->arena_pages; p++)
		used += page_used(z, p);
	a->arena_pages = used;
	a->limbo = list_len(z, z->limbo, CE_DEAD);
	if (!a->why && linked != a->ready)
		a->why = "a ready entry missing from the index";
	if (!a->why && a->limbo != a->dead)
		a->why = "dead entries outside limbo";
	if (!a->why && list_len(z, z->free_slots, CE_FREE) +
			       (z->cfg.max_entries - z->fresh) != a->free)
		a->why = "free slots outside the free list";
	if (!a->why && (used != z->arena_used || used != a->body_pages))
		a->why = "arena pages held by no entry";
	if (!a->why && z->gds.st.entries != a->ready)
		a->why = "the policy counts other entries";
	a->ok = !a->why;
	zone_unlock(z);
}

/* ------------------------------------------------------------ creation */

int zone_map(const struct cache_config *cfg, struct cache_zone **out)
{
	size_t ps = page_size();
	uint64_t arena_bytes = 0;
	size_t off_slots, off_buckets, off_heap, off_pins, off_rings, off_bitmap;
	size_t off_arena, total;
	uint32_t nbuckets = 64, stride;
	pthread_mutexattr_t ma;
	struct cache_zone *z;
	unsigned char *base;
	int fd;

	*out = NULL;
	if (!cfg->budget || !cfg->max_entries || !cfg->nworkers ||
	    cfg->max_entries >= GDS_IDX_PINNED)
		return -EINVAL;
	while (nbuckets < 2ull * cfg->max_entries)
		nbuckets *= 2;
	/* Bodies are charged to the budget, so it bounds the arena; what
	 * waits in limbo for its pins needs some room beyond it. */
	if (cfg->small_max)
		arena_bytes = align_up(cfg->budget + cfg->budget / 4 + 64 * ps,
				       ps);
	stride = (uint32_t)(align_up((size_t)cfg->max_entries * 4, ZONE_ALIGN) / 4);
	off_slots = align_up(sizeof(*z), ZONE_ALIGN);
	off_buckets = align_up(off_slots + (size_t)cfg->max_entries *
				   sizeof(struct cache_entry), ZONE_ALIGN);
	off_heap = align_up(off_buckets + (size_t)nbuckets * 4, ZONE_ALIGN);
	off_pins = align_up(off_heap + gds_heap_bytes(cfg->max_entries), ZONE_ALIGN);
	off_rings = align_up(off_pins + (size_t)cfg->nworkers * stride * 4,
			     ZONE_ALIGN);
	off_bitmap = align_up(off_rings + (size_t)cfg->nworkers *
					  sizeof(struct hit_ring), ZONE_ALIGN);
	off_arena = align_up(off_bitmap + align_up(arena_bytes / ps, 64) / 8, ps);
	total = off_arena + arena_bytes;

	fd = memfd_create("zchttpd-cache", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)total) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (base == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	z = (struct cache_zone *)base;
	z->cfg = *cfg;
	z->memfd = fd;
	z->base = base;
	z->map_size = total;
	z->nbuckets = nbuckets;
	z->pin_stride = stride;
	z->arena_pages = arena_bytes / ps;
	z->slots = (struct cache_entry *)(base + off_slots);
	z->buckets = (_Atomic uint32_t *)(base + off_buckets);
	z->gds.heap = (struct gds_entry **)(base + off_heap);
	z->pins = (_Atomic uint32_t *)(base + off_pins);
	z->hit_rings = (struct hit_ring *)(base + off_rings);
	z->bitmap = (uint64_t *)(base + off_bitmap);
	z->arena = base + off_arena;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&z->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	/* The file is all zeroes: every slot CE_FREE (fresh: taken in order
	 * and touched only then), every page free. */
	*out = z;
	return 0;
}

void cache_zone_unmap(struct cache_zone *z)
{
	int fd;

	if (!z)
		return;
	fd = z->memfd;
	munmap(z->base, z->map_size);
	close(fd);
}
