/*
 * cache.c - the unified cache (cache.h): a chained hash index of entries
 * in the shared zone (cache_zone.h), read without a lock, whose byte
 * budget libgds enforces with Greedy-Dual-Size under the zone's lock; and
 * each worker's own side of it: pins, descriptors, batched hits.
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

#include "cache.h"
#include "cache_zone.h"
#include "mime.h"
#include "page_drop.h"

/* What an entry costs beyond its body: the slot, names, descriptor. */
#define ENTRY_OVERHEAD 512
/* Page drops a worker can owe after one stretch under the lock. */
#define PENDING_DROPS 16
/* How often the descriptors of dead entries are looked for. */
#define SWEEP_MS 1000
#define SWEEP_SLOTS 4096		/* ... in slots per look */

const struct cache_coding_info cache_codings[CACHE_NCODINGS] = {
	[CACHE_IDENTITY] = { "identity", "", "" },
	[CACHE_BR] = { "br", ".br", "\x1f" "br" },
	[CACHE_GZIP] = { "gzip", ".gz", "\x1f" "gzip" },
};

/* A worker's own of a slot: what cannot be shared between processes. */
struct cache_local {
	uint32_t gen;			/* of the entry these belong to */
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
	uint32_t sweep;			/* the clock hand over local */
	uint64_t next_sweep_ms;
	zc_file *arena_file;		/* the zone's memfd, for sendfile */
	bool snapshots;			/* bodies are per-worker snapshots */
	zc_pool *snap_pool;		/* ... falling back to this pool */
	struct { uint32_t slot, gen; } hits[CACHE_HIT_BATCH];
	unsigned nhits;
	struct cache_stats st;		/* counters; gauges filled on read */
	uint64_t now_ms;
	struct page_drop_queue drops;	/* --page-cache policy (page_drop.h) */
	struct pending_drop pending[PENDING_DROPS];
	unsigned npending;
};

static size_t page_size(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static uint64_t hash_key(unsigned site, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	h ^= site;	/* the site first, as if it were a leading byte */
	h *= 0x100000001b3ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static bool is_shared(const struct cache_entry *e)
{
	return atomic_load_explicit(&e->state, memory_order_relaxed) !=
	       CE_PRIVATE;
}

static uint32_t slot_of(const struct cache *c, const struct cache_entry *e)
{
	return zone_slot_of(c->z, e);
}

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
static void kill_entry(struct cache *c, struct cache_entry *e)
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
	struct cache_entry *e = (struct cache_entry *)g;

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
		kill_entry(c, e);
	}
}

/* zone_freed: remember the page drop an entry the policy let go owes
 * (--page-cache policy); done after the lock by drop_pending. */
static void on_freed(struct zone_freed *f, const struct cache_entry *e)
{
	struct cache *c = (struct cache *)f;
	struct pending_drop *p;

	if (!e->drop_pages || c->npending == PENDING_DROPS)
		return;
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

static void lock(struct cache *c)
{
	if (zone_lock(c->z))
		c->st.rebuilds++;
}

static void unlock(struct cache *c)
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
		lock(c);
		zone_reclaim(c->z, &c->freed);
		unlock(c);
	}
}

/* ------------------------------------------------------ the worker's own */

static struct cache_local *local_of(struct cache *c, struct cache_entry *e)
{
	struct cache_local *l = &c->local[slot_of(c, e)];

	return l->gen == e->gen ? l : NULL;
}

/* Forget what we held of a slot's previous entry. */
static void local_clear(struct cache *c, struct cache_local *l)
{
	if (l->file) {
		zc_file_release(l->file);
		l->file = NULL;
		c->nfiles--;
	}
	zc_buf_release(l->snap);
	l->snap = NULL;
}

/* Our side of slots whose entry is gone, over `budget` slots of a clock;
 * with `keep` < UINT32_MAX, also live ones until we hold at most `keep`
 * descriptors; `all`: everything. */
static void sweep(struct cache *c, uint32_t budget, uint32_t keep, bool all)
{
	uint32_t n = c->z->cfg.max_entries;

	for (uint32_t k = 0; k < n && k < budget; k++) {
		uint32_t s = c->sweep++ % n;
		struct cache_local *l = &c->local[s];
		struct cache_entry *e = &c->z->slots[s];

		if (keep != UINT32_MAX && c->nfiles <= keep && !all)
			break;
		if ((!l->file && !l->snap) || l->loading)
			continue;
		if (all || c->nfiles > keep || l->gen != e->gen ||
		    atomic_load_explicit(&e->state, memory_order_relaxed) !=
			    CE_READY)
			local_clear(c, l);
	}
}

static void set_file(struct cache *c, struct cache_entry *e, zc_file *f)
{
	struct cache_local *l = &c->local[slot_of(c, e)];

	if (l->gen != e->gen || l->file) {
		local_clear(c, l);
		l->gen = e->gen;
	}
	l->file = f;
	c->nfiles++;
	if (c->nfiles > c->max_files)	/* an eighth goes, round the clock */
		sweep(c, UINT32_MAX, c->max_files - c->max_files / 8, false);
}

/* ------------------------------------------------------------- entries */

/* The headers every full response for this entry repeats, formatted once
 * here instead of once per response. */
static void prebuild_head(struct cache_entry *e)
{
	int n = snprintf(e->head, sizeof(e->head),
			 "Content-Type: %s\r\nContent-Length: %llu\r\n"
			 "Last-Modified: %s\r\nETag: %s\r\n"
			 "Accept-Ranges: bytes\r\n%s%s%s",
			 e->mime, (unsigned long long)e->v.size, e->lastmod,
			 e->etag, e->coding ? "Content-Encoding: " : "",
			 e->coding ? cache_codings[e->coding].name : "",
			 e->coding ? "\r\n" : "");

	e->head_len = n > 0 && (size_t)n < sizeof(e->head) ? (uint16_t)n : 0;
}

static void version_of(const struct stat *st, struct zc_file_version *v)
{
	v->dev = (uint64_t)st->st_dev;
	v->ino = (uint64_t)st->st_ino;
	v->size = (int64_t)st->st_size;
	v->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
		      st->st_mtim.tv_nsec;
	v->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 +
		      st->st_ctim.tv_nsec;
}

static bool same_version(const struct zc_file_version *a,
			 const struct zc_file_version *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Everything of an entry but its place: names (already in e->key and
 * e->fs_path), validators, type, prebuilt head. */
static void describe(struct cache_entry *e, unsigned site, int dirfd,
		     const struct stat *st, uint64_t now_ms,
		     enum cache_coding coding, unsigned variants)
{
	size_t type_len = strlen(e->fs_path) -
			  strlen(cache_codings[coding].suffix);

	e->site = site;
	e->dirfd = dirfd;
	version_of(st, &e->v);
	/* A variant's own tag: never equal to the identity's. */
	snprintf(e->etag, sizeof(e->etag), "\"%llx-%llx%s%s\"",
		 (unsigned long long)e->v.mtime_ns,
		 (unsigned long long)e->v.size, coding ? "-" : "",
		 coding ? cache_codings[coding].name : "");
	http_date_format(e->v.mtime_ns / 1000000000, e->lastmod);
	e->coding = (uint8_t)coding;
	e->mime = mime_type(e->fs_path, type_len);
	prebuild_head(e);
	atomic_store_explicit(&e->checked_ms, now_ms, memory_order_relaxed);
	atomic_store_explicit(&e->variants, (uint8_t)variants,
			      memory_order_relaxed);
	atomic_store_explicit(&e->variants_checked_ms, now_ms,
			      memory_order_relaxed);
	e->hash = hash_key(site, e->key);
}

/* An entry of this worker alone (the policy did not admit it, or its
 * names do not fit a slot): it owns fd. */
static struct cache_entry *private_entry(unsigned site, const char *key,
					 int dirfd, const char *fs_path,
					 int fd, const struct stat *st,
					 uint64_t now_ms,
					 enum cache_coding coding,
					 unsigned variants)
{
	struct cache_entry *e = calloc(1, sizeof(*e));
	size_t klen = strlen(key), plen = strlen(fs_path);

	if (!e)
		return NULL;
	e->names = malloc(klen + plen + 2);
	if (!e->names || zc_file_adopt(fd, st, &e->file)) {
		free(e->names);
		free(e);
		return NULL;
	}
	memcpy(e->names, key, klen + 1);
	memcpy(e->names + klen + 1, fs_path, plen + 1);
	e->key = e->names;
	e->fs_path = e->names + klen + 1;
	gds_entry_init(&e->g);
	atomic_init(&e->state, CE_PRIVATE);
	e->refs = 1;
	describe(e, site, dirfd, st, now_ms, coding, variants);
	return e;
}

static void private_put(struct cache *c, struct cache_entry *e)
{
	if (--e->refs)
		return;
	if (e->drop_pages) {
		page_drop(&c->drops, e->file, c->now_ms);
		c->st.dropped++;
	}
	zc_file_release(e->file);
	free(e->names);
	free(e);
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

/* Does this libzc make kernel IO-Lite snapshots (the patched kernel)?  One
 * tiny snapshot says: a kernel buffer has no pool. */
static bool kernel_snapshots(zc_pool *pool)
{
	int fd = memfd_create("zchttpd-probe", MFD_CLOEXEC);
	bool yes = false;
	zc_buf *b;

	if (fd < 0)
		return false;
	if (write(fd, "x", 1) == 1 && zc_buf_snapshot(pool, fd, 0, 1, &b) == 0) {
		yes = zc_buf_pool(b) == NULL;
		zc_buf_release(b);
	}
	close(fd);
	return yes;
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
	c->local = calloc(z->cfg.max_entries, sizeof(*c->local));
	err = c->local ? zc_file_from_fd(z->memfd, &c->arena_file) : -ENOMEM;
	if (!err)	/* bodies change only where no response looks */
		zc_file_trust(c->arena_file);
	if (!err && z->cfg.small_max) {
		err = zc_pool_create(z->cfg.budget, &c->snap_pool);
		if (!err)
			c->snapshots = kernel_snapshots(c->snap_pool);
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
		cache_maintain(c, c->now_ms);	/* the hits it owes */
		sweep(c, UINT32_MAX, 0, true);
	}
	/* Entries freed because the worker stops keep their pages: a
	 * reload's workers want them warm. */
	page_drop_clear(&c->drops);
	zc_file_release(c->arena_file);
	zc_pool_destroy(c->snap_pool);
	free(c->local);
	free(c);
}

static bool still_same(const struct cache_entry *e)
{
	struct zc_file_version v;
	struct stat st;

	if (fstatat(e->dirfd, e->fs_path, &st, 0) < 0)
		return false;
	version_of(&st, &v);
	return same_version(&v, &e->v);
}

/* Tell the policy about the hits gathered so far, under the lock once. */
static void flush_hits(struct cache *c)
{
	struct cache_zone *z = c->z;

	if (!c->nhits)
		return;
	lock(c);
	for (unsigned i = 0; i < c->nhits; i++) {
		struct cache_entry *e = &z->slots[c->hits[i].slot];

		if (atomic_load_explicit(&e->state, memory_order_relaxed) ==
			    CE_READY && e->gen == c->hits[i].gen &&
		    gds_cached(&e->g))
			gds_hit(&z->gds, &e->g);
	}
	c->nhits = 0;
	unlock(c);
}

static void record_hit(struct cache *c, struct cache_entry *e)
{
	c->hits[c->nhits].slot = slot_of(c, e);
	c->hits[c->nhits].gen = e->gen;
	if (++c->nhits == CACHE_HIT_BATCH)
		flush_hits(c);
}

struct cache_entry *cache_lookup(struct cache *c, unsigned site,
				 const char *key, uint64_t now_ms)
{
	struct cache_zone *z = c->z;
	size_t klen = strlen(key);
	uint64_t h = hash_key(site, key);
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
			lock(c);
			e = find(z, h, site, key, klen, &gen, &unsure);
			if (e && !pin_checked(c, e, gen))
				e = NULL;
			unlock(c);
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
		if (!still_same(e)) {
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
		private_put(c, e);
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
	lock(c);
	if (atomic_load_explicit(&e->state, memory_order_relaxed) == CE_READY) {
		gds_remove(&c->z->gds, &e->g);
		kill_entry(c, e);
	}
	unlock(c);
}

/* Is (dev, ino, size, times) of st what e says? */
static bool describes(const struct cache_entry *e, const struct stat *st)
{
	struct zc_file_version v;

	version_of(st, &v);
	return same_version(&v, &e->v);
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
	uint64_t h = hash_key(site, key), charge;
	uint32_t gen;
	zc_file *f;

	c->now_ms = now_ms;
	if (klen + plen + 2 >= CACHE_NAMES_MAX)
		return private_entry(site, key, dirfd, fs_path, fd, st, now_ms,
				     coding, variants);
	if (zc_file_adopt(fd, st, &f))
		return NULL;
	lock(c);
	old = find(z, h, site, key, klen, &gen, &unsure);
	if (old && describes(old, st) && pin_checked(c, old, gen)) {
		/* Another worker made it meanwhile: ours is its file. */
		unlock(c);
		if (!cache_file(c, old))
			set_file(c, old, f);
		else
			zc_file_release(f);
		return old;
	}
	if (old) {			/* a stale twin goes first */
		gds_remove(&z->gds, &old->g);
		kill_entry(c, old);
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
		describe(e, site, dirfd, st, now_ms, coding, variants);
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
	unlock(c);
	if (!admitted) {
		/* Refused (a newcomer worth less than what it would displace,
		 * or no slot): served uncached, its pages not kept. */
		int dfd = dup(zc_file_fd(f));

		c->st.not_admitted++;
		zc_file_release(f);
		if (dfd < 0)
			return NULL;
		e = private_entry(site, key, dirfd, fs_path, dfd, st, now_ms,
				  coding, variants);
		if (!e) {
			close(dfd);
			return NULL;
		}
		e->drop_pages = z->cfg.owns_pages;
		return e;
	}
	set_file(c, e, f);
	if (c->drops.n)		/* its pages are wanted again */
		page_drop_cancel(&c->drops, e->v.dev, e->v.ino);
	return e;
}

zc_file *cache_file(struct cache *c, struct cache_entry *e)
{
	struct cache_local *l;

	if (!is_shared(e))
		return e->file;
	l = local_of(c, e);
	return l ? l->file : NULL;
}

int cache_adopt_fd(struct cache *c, struct cache_entry *e, int fd,
		   const struct stat *st)
{
	zc_file *f;
	int err;

	if (!is_shared(e) || cache_file(c, e)) {
		close(fd);
		return 0;
	}
	if (!describes(e, st)) {
		close(fd);
		c->st.stale++;
		cache_drop(c, e);
		return -ESTALE;
	}
	err = zc_file_adopt(fd, st, &f);
	if (err) {
		close(fd);
		return err;
	}
	set_file(c, e, f);
	return 0;
}

/* ---------------------------------------------------------------- bodies */

int cache_append_body(struct cache *c, struct cache_entry *e, zc_agg *out,
		      uint64_t off, uint64_t len)
{
	struct cache_zone *z = c->z;
	struct cache_local *l;
	zc_file *f;

	if (!is_shared(e))
		return zc_agg_append_file(out, e->file, off, len);
	if (atomic_load_explicit(&e->body_state, memory_order_acquire) ==
	    CB_READY) {
		/* Small: copied into the socket with the head, one sendmsg.
		 * Larger: sendfile from the arena's memfd, whose pages are
		 * then punched before the place is reused. */
		if ((uint64_t)e->v.size <= z->cfg.copy_max)
			return zc_agg_append_mem(out, z->arena + e->body_off + off,
						 len);
		if (!atomic_load_explicit(&e->kref, memory_order_relaxed))
			atomic_store_explicit(&e->kref, true,
					      memory_order_relaxed);
		return zc_agg_append_file(out, c->arena_file,
					  (uint64_t)(z->arena - z->base) +
						  e->body_off + off, len);
	}
	l = local_of(c, e);
	if (l && l->snap)
		return zc_agg_append_buf(out, l->snap, off, len);
	f = l ? l->file : NULL;
	if (!f)
		return -EAGAIN;
	return zc_agg_append_file(out, f, off, len);
}

bool cache_body_in_memory(struct cache *c, struct cache_entry *e)
{
	struct cache_local *l;

	if (!is_shared(e))
		return false;
	if (atomic_load_explicit(&e->body_state, memory_order_acquire) ==
	    CB_READY)
		return true;
	l = local_of(c, e);
	return l && l->snap;
}

bool cache_load_begin(struct cache *c, struct cache_entry *e)
{
	struct cache_zone *z = c->z;
	uint32_t pages;
	uint64_t off;
	bool ok = false;

	if (!is_shared(e) || !e->wants_body || !cache_file(c, e))
		return false;
	if (c->snapshots) {
		struct cache_local *l = local_of(c, e);

		if (!l || l->snap || l->loading)
			return false;
		l->loading = true;
		return true;
	}
	if (atomic_load_explicit(&e->body_state, memory_order_relaxed) !=
	    CB_NONE)
		return false;
	pages = (uint32_t)(((size_t)e->v.size + page_size() - 1) / page_size());
	lock(c);
	if (atomic_load_explicit(&e->state, memory_order_relaxed) == CE_READY &&
	    atomic_load_explicit(&e->body_state, memory_order_relaxed) ==
		    CB_NONE &&
	    zone_arena_alloc(z, pages, &off) == 0) {
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		e->body_off = off;
		e->body_pages = pages;
		e->body_loader = (int32_t)c->worker;
		atomic_store_explicit(&e->body_state, CB_LOADING,
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
		ok = true;
	}
	unlock(c);
	return ok;
}

/* Read exactly len bytes at 0 into dst: 0, -EAGAIN (nowait and not all in
 * the page cache), -ESTALE (the file is shorter now), -errno. */
static int read_all(int fd, unsigned char *dst, size_t len, bool nowait)
{
	size_t done = 0;

	while (done < len) {
		struct iovec iov = { dst + done, len - done };
		ssize_t n = preadv2(fd, &iov, 1, (off_t)done,
				    nowait ? RWF_NOWAIT : 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EOPNOTSUPP && nowait ? -EAGAIN : -errno;
		if (n == 0)
			return -ESTALE;
		done += (size_t)n;
	}
	return 0;
}

int cache_load_fill(struct cache *c, struct cache_entry *e, bool nowait)
{
	struct cache_zone *z = c->z;
	struct cache_local *l = &c->local[slot_of(c, e)];
	zc_file *f = l->file;

	if (!f)
		return -EBADF;
	if (c->snapshots) {
		/* zc_buf_snapshot blocks on the page cache's misses. */
		if (nowait)
			return -EAGAIN;
		return zc_buf_snapshot(c->snap_pool, zc_file_fd(f), 0,
				       (size_t)e->v.size, &l->snap_new);
	}
	return read_all(zc_file_fd(f), z->arena + e->body_off,
			(size_t)e->v.size, nowait);
}

void cache_load_end(struct cache *c, struct cache_entry *e, int err)
{
	struct cache_zone *z = c->z;

	if (c->snapshots) {
		struct cache_local *l = &c->local[slot_of(c, e)];

		l->loading = false;
		if (!err && l->snap_new) {
			l->snap = l->snap_new;
			c->st.bodies_loaded++;
		}
		l->snap_new = NULL;
		return;
	}
	lock(c);
	if (atomic_load_explicit(&e->body_state, memory_order_relaxed) ==
		    CB_LOADING &&
	    e->body_loader == (int32_t)c->worker) {
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		if (err) {
			zone_arena_free(z, e->body_off, e->body_pages, false);
			e->body_pages = 0;
			atomic_store_explicit(&e->body_state, CB_NONE,
					      memory_order_relaxed);
		} else {
			/* Release: whoever sees READY sees the bytes. */
			atomic_store_explicit(&e->body_state, CB_READY,
					      memory_order_release);
			c->st.bodies_loaded++;
		}
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
	}
	unlock(c);
	/* --page-cache policy: the arena holds it now, once. */
	if (!err && z->cfg.owns_pages && cache_file(c, e))
		posix_fadvise(zc_file_fd(cache_file(c, e)), 0, 0,
			      POSIX_FADV_DONTNEED);
}

/* ----------------------------------------------------------- maintenance */

int cache_maintain(struct cache *c, uint64_t now_ms)
{
	int next = -1;

	c->now_ms = now_ms;
	flush_hits(c);
	if (c->z->limbo) {	/* a racy peek: the lock decides */
		lock(c);
		zone_reclaim(c->z, &c->freed);
		unlock(c);
	}
	if (now_ms >= c->next_sweep_ms) {
		sweep(c, SWEEP_SLOTS, UINT32_MAX, false);	/* dead ones' */
		c->next_sweep_ms = now_ms + SWEEP_MS;
	}
	if (c->drops.n)
		next = page_drop_run(&c->drops, now_ms);
	return next;
}

void cache_audit(struct cache *c, struct cache_audit *a)
{
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
