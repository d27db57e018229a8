/*
 * cache.c - the unified cache (cache.h): a chained hash index of entries
 * in the shared zone (cache_zone.h), read without a lock, whose byte
 * budget libgds enforces with Greedy-Dual-Size under the zone's lock;
 * pins, batched hits, inserts and evictions; the zone's life.  The other
 * files of the cache: cache_int.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cache_int.h"

/* What an entry costs beyond its body: the slot, names, descriptor. */
#define ENTRY_OVERHEAD 512
/* How often the descriptors of dead entries are looked for. */
#define SWEEP_MS 1000
#define SWEEP_SLOTS 4096		/* ... in slots per look */
/* The longest a hit waits to reach the policy when no batch fills. */
#define HIT_DELAY_MS 20

const struct cache_coding_info cache_codings[CACHE_NCODINGS] = {
	[CACHE_IDENTITY] = { "identity", "", "" },
	[CACHE_BR] = { "br", ".br", "\x1f" "br" },
	[CACHE_GZIP] = { "gzip", ".gz", "\x1f" "gzip" },
};

/* ------------------------------------------------------------ the index */

/* The READY entry of (h, site, key), reading without the lock: a chain
 * walk with acquire loads, each candidate compared inside its seqlock.
 * *gen gets its generation.  *unsure: something was changing under us
 * (the answer "none" may be wrong; the lock settles it). */
static struct cache_entry *find(const struct cache_zone *z, uint64_t h,
				unsigned site, const char *key, size_t klen,
				uint32_t *gen, bool *unsure)
{
	uint32_t i = atomic_load_explicit(&z->buckets[h & (z->nbuckets - 1)],
					  memory_order_acquire);

	/* A chain is a handful of entries (twice as many buckets as
	 * slots); a reader that wanders into a slot reused meanwhile
	 * follows its new chain: bounded, and found out by the checks. */
	for (unsigned hops = 0; i && i <= z->cfg.max_entries && hops < 256;
	     hops++) {
		struct cache_entry *e = &z->slots[i - 1];
		uint32_t seq = atomic_load_explicit(&e->seq,
						    memory_order_acquire);
		uint32_t g = e->gen;
		bool match = !(seq & 1) && e->hash == h && e->site == site &&
			     atomic_load_explicit(&e->state,
						  memory_order_relaxed) ==
				     CE_READY &&
			     memcmp(e->inline_names, key, klen + 1) == 0;

		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) != seq) {
			*unsure = true;
		} else if (match) {
			*gen = g;
			return e;
		}
		i = atomic_load_explicit(&e->hnext, memory_order_acquire);
	}
	return NULL;
}

static void link_entry(struct cache_zone *z, struct cache_entry *e)
{
	_Atomic uint32_t *b = &z->buckets[e->hash & (z->nbuckets - 1)];

	atomic_store_explicit(&e->hnext,
			      atomic_load_explicit(b, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(b, zone_slot_of(z, e) + 1, memory_order_release);
}

/* Take e out of its chain (its own hnext stays: a reader standing on it
 * goes on down the chain). */
static void unlink_entry(struct cache_zone *z, struct cache_entry *e)
{
	_Atomic uint32_t *pp = &z->buckets[e->hash & (z->nbuckets - 1)];
	uint32_t me = zone_slot_of(z, e) + 1, i;

	while ((i = atomic_load_explicit(pp, memory_order_relaxed)) &&
	       i != me)
		pp = &z->slots[i - 1].hnext;
	if (i)
		atomic_store_explicit(pp, atomic_load_explicit(
					      &e->hnext, memory_order_relaxed),
				      memory_order_release);
}

/* ----------------------------------------------------- leaving the cache */

/* Out of the index and (the caller did that) the policy: dead, freed
 * once nobody pins it.  Under the lock. */
void cache_kill_entry(struct cache *c, struct cache_entry *e)
{
	struct cache_zone *z = c->z;

	unlink_entry(z, e);
	atomic_fetch_sub_explicit(&z->bytes, e->g.size, memory_order_relaxed);
	atomic_fetch_sub_explicit(&z->entries, 1, memory_order_relaxed);
	e->drop_pages = z->cfg.owns_pages;
	atomic_store_explicit(&e->state, CE_DEAD, memory_order_relaxed);
	zone_retire(z, e, &c->freed);
}

/*
 * libgds chose a victim.  It cannot say for which worker (the callback
 * argument is the zone, shared by all): the victims wait on a list until
 * the worker whose insert made them leaves libgds, which kills them.
 */
static void on_evict(struct gds_entry *g, void *arg)
{
	struct cache_zone *z = arg;
	struct cache_entry *e = (struct cache_entry *)
		((char *)g - offsetof(struct cache_entry, g));

	e->lnext = z->victims;
	z->victims = zone_slot_of(z, e) + 1;
}

static void kill_victims(struct cache *c)
{
	struct cache_zone *z = c->z;

	while (z->victims) {
		struct cache_entry *e = &z->slots[z->victims - 1];

		z->victims = e->lnext;
		e->lnext = 0;
		c->st.evictions++;
		cache_kill_entry(c, e);
	}
}

/* zone_freed: remember the page drop an entry the policy let go owes
 * (--page-cache policy); done after the lock by drop_pending. */
static void on_freed(struct zone_freed *f, const struct cache_entry *e)
{
	struct cache *c = (struct cache *)f;
	struct pending_drop *p;

	if (!e->drop_pages)
		return;
	if (c->npending == c->pending_cap) {
		unsigned cap = c->pending_cap ? 2 * c->pending_cap : 16;

		p = realloc(c->pending, cap * sizeof(*p));
		if (!p)
			return;		/* out of memory: Linux's way, then */
		c->pending = p;
		c->pending_cap = cap;
	}
	p = &c->pending[c->npending++];
	p->dirfd = e->dirfd;
	p->dev = e->v.dev;
	p->ino = e->v.ino;
	snprintf(p->path, sizeof(p->path), "%s", e->fs_path);
	c->st.dropped++;
}

static void drop_pending(struct cache *c)
{
	for (unsigned i = 0; i < c->npending; i++) {
		struct pending_drop *p = &c->pending[i];
		int fd = openat(p->dirfd, p->path,
				O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
		struct stat st;
		zc_file *f;

		if (fd < 0)
			continue;
		/* Only the file the entry was: a replacement is not ours. */
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != p->dev ||
		    (uint64_t)st.st_ino != p->ino ||
		    zc_file_adopt(fd, &st, &f)) {
			close(fd);
			continue;
		}
		page_drop(&c->drops, f, c->now_ms);
		zc_file_release(f);
	}
	c->npending = 0;
}

void cache_lock(struct cache *c)
{
	if (zone_lock(c->z))
		c->st.rebuilds++;
}

void cache_unlock(struct cache *c)
{
	zone_unlock(c->z);
	if (c->npending)
		drop_pending(c);
}

/* ----------------------------------------------------------------- pins */

/* Pin e in our row and make it visible before anything of e is used; false
 * (unpinned again) if e is no longer the READY entry of generation gen. */
static bool pin_checked(struct cache *c, struct cache_entry *e, uint32_t gen)
{
	_Atomic uint32_t *p = &c->pins[slot_of(c, e)];
	uint32_t n = atomic_load_explicit(p, memory_order_relaxed);

	atomic_store_explicit(p, n + 1, memory_order_relaxed);
	if (!n)
		c->st.pinned_entries++;
	/* Against zone_retire's store of CE_DEAD and its fence: one of us
	 * sees the other (cache.h). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&e->state, memory_order_acquire) == CE_READY &&
	    e->gen == gen)
		return true;
	atomic_store_explicit(p, n, memory_order_relaxed);
	if (!n)
		c->st.pinned_entries--;
	return false;
}

static void unpin_shared(struct cache *c, struct cache_entry *e)
{
	_Atomic uint32_t *p = &c->pins[slot_of(c, e)];
	uint32_t n = atomic_load_explicit(p, memory_order_relaxed);

	if (!n)
		return;		/* a rebuild or a bug: never below zero */
	atomic_store_explicit(p, n - 1, memory_order_release);
	if (n > 1)
		return;
	c->st.pinned_entries--;
	atomic_thread_fence(memory_order_seq_cst);
	/* The last pin of an entry that left the cache: it may be ours to
	 * free (zone_retire saw our pin and put it in limbo). */
	if (atomic_load_explicit(&e->state, memory_order_relaxed) != CE_READY) {
		cache_lock(c);
		zone_reclaim(c->z, &c->freed);
		cache_unlock(c);
	}
}











/* ----------------------------------------------------------------- hits */

/* Tell the policy about the hits every worker has recorded (under the
 * lock). */
static void apply_hits(struct cache *c)
{
	struct cache_zone *z = c->z;

	for (unsigned w = 0; w < z->cfg.nworkers; w++) {
		struct hit_ring *r = &z->hit_rings[w];
		uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
		uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);

		if (h - t > HIT_RING)	/* a dead worker's nonsense */
			t = h - HIT_RING;
		for (; t != h; t++) {
			uint32_t s = r->e[t % HIT_RING].slot;
			struct cache_entry *e;

			if (s >= z->cfg.max_entries)
				continue;
			e = &z->slots[s];
			if (atomic_load_explicit(&e->state,
						 memory_order_relaxed) ==
				    CE_READY &&
			    e->gen == r->e[t % HIT_RING].gen &&
			    gds_cached(&e->g))
				gds_hit(&z->gds, &e->g);
		}
		atomic_store_explicit(&r->tail, h, memory_order_release);
	}
}

/* Hits of ours the policy has not seen yet. */
static uint32_t hits_owed(const struct cache *c)
{
	return atomic_load_explicit(&c->hits->head, memory_order_relaxed) -
	       atomic_load_explicit(&c->hits->tail, memory_order_acquire);
}

static void flush_hits(struct cache *c)
{
	if (!hits_owed(c))
		return;
	cache_lock(c);
	apply_hits(c);
	cache_unlock(c);
}

/* A hit goes into our ring (our own cache lines: no lock, nothing another
 * worker writes); a full ring is told to the policy first. */
static void record_hit(struct cache *c, struct cache_entry *e)
{
	struct hit_ring *r = c->hits;
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t owed = hits_owed(c);

	if (owed >= HIT_RING) {
		flush_hits(c);
		owed = 0;
	}
	if (!owed)
		c->first_hit_ms = c->now_ms;
	r->e[h % HIT_RING].slot = slot_of(c, e);
	r->e[h % HIT_RING].gen = e->gen;
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* ------------------------------------------------------- the public calls */

int cache_zone_create(const struct cache_config *cfg, struct cache_zone **out)
{
	struct cache_config cc = *cfg;
	struct gds_config g = { 0 };
	struct cache_zone *z;
	int err;

	if (!cc.policy)
		cc.policy = gds_policy_find("gdsf");
	err = zone_map(&cc, &z);
	if (err)
		return err;
	g.budget = cc.budget;
	g.max_entries = cc.max_entries;
	g.evict = on_evict;
	g.evict_arg = z;
	gds_policy_apply(cc.policy, &g);
	err = gds_init_in(&z->gds, &g, z->gds.heap);
	if (err) {
		cache_zone_unmap(z);
		return err;
	}
	*out = z;
	return 0;
}


int cache_attach(struct cache_zone *z, unsigned worker, struct cache **out)
{
	struct cache *c;
	struct rlimit rl;
	int err;

	*out = NULL;
	if (worker >= z->cfg.nworkers)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->freed.fn = on_freed;
	c->z = z;
	c->worker = worker;
	c->pins = zone_pin(z, worker, 0);
	c->hits = &z->hit_rings[worker];
	c->local = calloc(z->cfg.max_entries, sizeof(*c->local));
	c->held = calloc(z->cfg.max_entries, sizeof(*c->held));
	err = c->local && c->held ? zc_file_from_fd(z->memfd, &c->arena_file) : -ENOMEM;
	if (!err)	/* bodies change only where no response looks */
		zc_file_trust(c->arena_file);
	if (!err && z->cfg.small_max) {
		err = zc_pool_create(z->cfg.budget, &c->snap_pool);
		if (!err)
			c->snapshots = cache_kernel_snapshots(c->snap_pool);
	}
	if (err) {
		cache_detach(c);
		return err;
	}
	/* Every descriptor we keep is one a connection cannot have. */
	c->max_files = z->cfg.max_entries;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < c->max_files)
		c->max_files = (uint32_t)(rl.rlim_cur / 2);
	if (c->max_files < 16)
		c->max_files = 16;
	*out = c;
	return 0;
}

void cache_detach(struct cache *c)
{
	if (!c)
		return;
	if (c->local) {
		flush_hits(c);			/* the hits it owes */
		cache_sweep(c, UINT32_MAX, 0, true);
	}
	/* Entries freed because the worker stops keep their pages: a
	 * reload's workers want them warm. */
	page_drop_clear(&c->drops);
	free(c->pending);
	zc_file_release(c->arena_file);
	zc_pool_release(c->snap_pool);
	free(c->local);
	free(c->held);
	free(c);
}


struct cache_entry *cache_lookup(struct cache *c, unsigned site,
				 const char *key, uint64_t now_ms)
{
	struct cache_zone *z = c->z;
	size_t klen = strlen(key);
	uint64_t h = cache_hash_key(site, key);
	struct cache_entry *e = NULL;
	bool unsure = false;
	uint32_t gen;

	c->now_ms = now_ms;
	if (klen < CACHE_NAMES_MAX) {
		e = find(z, h, site, key, klen, &gen, &unsure);
		if (e && !pin_checked(c, e, gen)) {
			e = NULL;
			unsure = true;
		}
		if (!e && unsure) {	/* the lock settles it */
			cache_lock(c);
			e = find(z, h, site, key, klen, &gen, &unsure);
			if (e && !pin_checked(c, e, gen))
				e = NULL;
			cache_unlock(c);
		}
	}
	if (!e) {
		c->st.misses++;
		return NULL;
	}
	if (now_ms - atomic_load_explicit(&e->checked_ms,
					  memory_order_relaxed) >=
	    z->cfg.ttl_ms) {
		c->st.revalidations++;
		if (!cache_still_same(e)) {
			c->st.stale++;
			c->st.misses++;
			cache_drop(c, e);
			unpin_shared(c, e);
			return NULL;
		}
		atomic_store_explicit(&e->checked_ms, now_ms,
				      memory_order_relaxed);
	}
	c->st.hits++;
	record_hit(c, e);
	return e;
}

void cache_put(struct cache *c, struct cache_entry *e)
{
	if (!e)
		return;
	if (is_shared(e))
		unpin_shared(c, e);
	else
		cache_private_put(c, e);
}

void cache_pin(struct cache *c, struct cache_entry *e)
{
	if (!is_shared(e)) {
		e->refs++;
		return;
	}
	/* The caller holds a pin already: no handshake needed. */
	_Atomic uint32_t *p = &c->pins[slot_of(c, e)];

	atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

void cache_unpin(struct cache *c, struct cache_entry *e)
{
	cache_put(c, e);
}

void cache_drop(struct cache *c, struct cache_entry *e)
{
	if (!is_shared(e))
		return;
	cache_lock(c);
	if (atomic_load_explicit(&e->state, memory_order_relaxed) == CE_READY) {
		gds_remove(&c->z->gds, &e->g);
		cache_kill_entry(c, e);
	}
	cache_unlock(c);
}


struct cache_entry *cache_insert(struct cache *c, unsigned site,
				 const char *key, int dirfd,
				 const char *fs_path, int fd,
				 const struct stat *st, uint64_t now_ms,
				 enum cache_coding coding, unsigned variants)
{
	struct cache_zone *z = c->z;
	size_t klen = strlen(key), plen = strlen(fs_path);
	struct cache_entry *e, *old;
	bool unsure = false, admitted = false;
	uint64_t h = cache_hash_key(site, key), charge;
	uint32_t gen;
	zc_file *f;

	c->now_ms = now_ms;
	if (klen + plen + 2 >= CACHE_NAMES_MAX)
		return cache_private_entry(site, key, dirfd, fs_path, fd, st, now_ms,
				     coding, variants);
	if (zc_file_adopt(fd, st, &f))
		return NULL;
	cache_lock(c);
	apply_hits(c);		/* the policy decides on everything we saw */
	old = find(z, h, site, key, klen, &gen, &unsure);
	if (old && cache_describes(old, st) && pin_checked(c, old, gen)) {
		/* Another worker made it meanwhile: ours is its file. */
		cache_unlock(c);
		if (!cache_file(c, old))
			cache_set_file(c, old, f);
		else
			zc_file_release(f);
		return old;
	}
	if (old) {			/* a stale twin goes first */
		gds_remove(&z->gds, &old->g);
		cache_kill_entry(c, old);
	}
	e = zone_slot_get(z);
	while (!e && gds_evict_one(&z->gds) == GDS_OK) {
		kill_victims(c);	/* limbo ones free no slot */
		e = zone_slot_get(z);
	}
	if (e) {
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		memcpy(e->inline_names, key, klen + 1);
		memcpy(e->inline_names + klen + 1, fs_path, plen + 1);
		e->key = e->inline_names;
		e->fs_path = e->inline_names + klen + 1;
		cache_describe(e, site, dirfd, st, now_ms, coding, variants);
		gds_entry_init(&e->g);
		atomic_store_explicit(&e->body_state, CB_NONE,
				      memory_order_relaxed);
		e->body_pages = 0;
		e->wants_body = st->st_size > 0 &&
				(uint64_t)st->st_size <= z->cfg.small_max;
		e->drop_pages = false;
		atomic_store_explicit(&e->kref, false, memory_order_relaxed);
		charge = ENTRY_OVERHEAD +
			 (e->wants_body ? (uint64_t)((st->st_size + page_size() - 1) &
						     ~(page_size() - 1))
					: z->cfg.owns_pages ? (uint64_t)st->st_size
							    : 0);
		admitted = gds_insert(&z->gds, &e->g, charge, (double)charge,
				      0) >= 0;
		kill_victims(c);
		if (admitted) {
			atomic_store_explicit(&e->state, CE_READY,
					      memory_order_relaxed);
			link_entry(z, e);
			atomic_fetch_add_explicit(&z->bytes, charge,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&z->entries, 1,
						  memory_order_relaxed);
		}
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
		if (admitted) {
			gen = e->gen;
			pin_checked(c, e, gen);	/* cannot fail: we hold the lock */
		} else {
			atomic_store_explicit(&e->state, CE_DEAD,
					      memory_order_relaxed);
			zone_retire(z, e, NULL);
		}
	}
	cache_unlock(c);
	if (!admitted) {
		/* Refused (a newcomer worth less than what it would displace,
		 * or no slot): served uncached, its pages not kept. */
		int dfd = dup(zc_file_fd(f));

		c->st.not_admitted++;
		zc_file_release(f);
		if (dfd < 0)
			return NULL;
		e = cache_private_entry(site, key, dirfd, fs_path, dfd, st, now_ms,
				  coding, variants);
		if (!e) {
			close(dfd);
			return NULL;
		}
		e->drop_pages = z->cfg.owns_pages;
		return e;
	}
	cache_set_file(c, e, f);
	if (c->drops.n)		/* its pages are wanted again */
		page_drop_cancel(&c->drops, e->v.dev, e->v.ino);
	return e;
}









/* ----------------------------------------------------------- maintenance */

int cache_maintain(struct cache *c, uint64_t now_ms)
{
	int next = -1;

	c->now_ms = now_ms;
	/* Our hits wait for an insert (any worker's), a full ring, or
	 * HIT_DELAY_MS: one request at a time does not take the lock per
	 * request. */
	if (hits_owed(c) && now_ms - c->first_hit_ms >= HIT_DELAY_MS)
		flush_hits(c);
	if (hits_owed(c))
		next = HIT_DELAY_MS;
	if (c->z->limbo) {	/* a racy peek: the lock decides */
		cache_lock(c);
		zone_reclaim(c->z, &c->freed);
		cache_unlock(c);
	}
	if (now_ms >= c->next_sweep_ms) {
		cache_sweep(c, SWEEP_SLOTS, UINT32_MAX, false);	/* dead ones' */
		c->next_sweep_ms = now_ms + SWEEP_MS;
	}
	if (c->drops.n) {
		int d = page_drop_run(&c->drops, now_ms);

		if (d >= 0 && (next < 0 || d < next))
			next = d;
	}
	return next;
}

void cache_audit(struct cache *c, struct cache_audit *a)
{
	/* Hits owed are no disagreement, but flush them: what the audit
	 * reports is then the policy's whole view. */
	flush_hits(c);
	zone_audit(c->z, a);
}

void cache_stats(const struct cache *c, struct cache_stats *st)
{
	*st = c->st;
	st->bytes = atomic_load_explicit(&c->z->bytes, memory_order_relaxed);
	st->entries = atomic_load_explicit(&c->z->entries,
					   memory_order_relaxed);
	st->arena_bytes = c->z->arena_used * page_size();
}
