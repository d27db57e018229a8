/*
 * cache.c - the unified cache (see cache.h): a chained hash table of
 * entries whose byte budget libgds enforces with Greedy-Dual-Size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "mime.h"
#include "page_drop.h"

/* What an entry costs beyond its body: the struct, names, descriptor. */
#define ENTRY_OVERHEAD 512

struct cache {
	struct cache_config cfg;
	struct gds gds;
	zc_pool *pool;			/* small bodies */
	struct cache_entry **buckets;
	size_t nbuckets;		/* power of two */
	struct cache_stats st;
	uint64_t now_ms;		/* of the last lookup or maintenance */
	struct page_drop_queue drops;	/* --page-cache policy (page_drop.h) */
};

const struct cache_coding_info cache_codings[CACHE_NCODINGS] = {
	[CACHE_IDENTITY] = { "identity", "", "" },
	[CACHE_BR] = { "br", ".br", "\x1f" "br" },
	[CACHE_GZIP] = { "gzip", ".gz", "\x1f" "gzip" },
};

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

/*
 * With `owns_pages` (--page-cache policy) the cache, not Linux's page cache
 * replacement, decides which file data stays in memory (IO-Lite's unified
 * cache): a large file is charged its size, since serving it keeps its
 * pages in the page cache, and the pages of a file the policy lets go --
 * evicted, refused admission, or replaced by a newer version -- are dropped
 * once its last response is sent (here, at the last reference; again
 * later for pages a client was still reading, page_drop.h).  A small
 * body lives in its snapshot only (a pool buffer or a sealed memfd): its
 * page-cache copy is dropped as soon as it has been read (cache_prepare).  Pages still being sent are not dropped
 * (the kernel skips pages in use), so no response loses a byte; the bytes
 * are read again from the file if needed.  Entries freed because the
 * worker stops keep their pages: a reload's new workers find them warm.
 */
static void entry_free(struct cache *c, struct cache_entry *e)
{
	if (c && e->drop_pages && e->file) {
		page_drop(&c->drops, e->file, c->now_ms);
		c->st.dropped++;
	}
	zc_file_release(e->file);
	zc_buf_release(e->body);
	free(e->key);
	free(e->fs_path);
	free(e);
}

static void entry_put(struct cache *c, struct cache_entry *e)
{
	if (--e->refs == 0)
		entry_free(c, e);
}

/* Take e out of the hash table (it may live on while pinned). */
static void unlink_entry(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->in_table = false;
	c->st.entries--;
	c->st.bytes -= e->g.size;
}

/* libgds chose e as the least valuable unpinned entry. */
static void on_evict(struct gds_entry *g, void *arg)
{
	struct cache *c = arg;
	struct cache_entry *e = (struct cache_entry *)g;

	c->st.evictions++;
	e->drop_pages = c->cfg.owns_pages;
	unlink_entry(c, e);
	entry_put(c, e);
}

static void drop(struct cache *c, struct cache_entry *e)
{
	/* In use: leave the budget now, free after the last unpin (the
	 * responses' references keep it alive). */
	while (e->g.pins) {
		gds_unpin(&c->gds, &e->g);
		c->st.pinned_entries--;
	}
	gds_remove(&c->gds, &e->g);
	e->drop_pages = c->cfg.owns_pages;
	unlink_entry(c, e);
	entry_put(c, e);
}

int cache_create(const struct cache_config *cfg, struct cache **out)
{
	struct gds_config g = {
		.budget = cfg->budget,
		.max_entries = cfg->max_entries,
		.evict = on_evict,
	};
	struct cache *c;
	int err;

	*out = NULL;
	if (!cfg->budget || !cfg->max_entries)
		return -EINVAL;
	gds_policy_apply(cfg->policy ? cfg->policy : gds_policy_find("gdsf"), &g);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	c->nbuckets = 64;
	while (c->nbuckets < 2ull * cfg->max_entries)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	g.evict_arg = c;
	err = c->buckets ? gds_init(&c->gds, &g) : -ENOMEM;
	/* The pool only reserves address space; bodies use what they touch. */
	if (!err)
		err = zc_pool_create(cfg->budget, &c->pool);
	if (err) {
		free(c->buckets);
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

void cache_destroy(struct cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cache_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->drop_pages = false;	/* a reload's workers want
						 * them warm */
			entry_free(c, e);	/* pinned ones too: the
						 * process ends */
		}
	}
	page_drop_clear(&c->drops);
	gds_destroy(&c->gds);
	zc_pool_release(c->pool);
	free(c->buckets);
	free(c);
}

static bool still_same(const struct cache *c, const struct cache_entry *e)
{
	struct stat st;

	(void)c;
	if (fstatat(e->dirfd, e->fs_path, &st, 0) < 0)
		return false;
	return (uint64_t)st.st_dev == e->v.dev &&
	       (uint64_t)st.st_ino == e->v.ino &&
	       (int64_t)st.st_size == e->v.size &&
	       (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec ==
		       e->v.mtime_ns &&
	       (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec ==
		       e->v.ctime_ns;
}

/* Is e the entry of (site, key), whose hash is h? */
static bool is_key(const struct cache_entry *e, uint64_t h, unsigned site,
		   const char *key)
{
	return e->hash == h && e->site == site && !strcmp(e->key, key);
}

struct cache_entry *cache_lookup(struct cache *c, unsigned site,
				 const char *key, uint64_t now_ms)
{
	uint64_t h = hash_key(site, key);
	struct cache_entry *e = c->buckets[h & (c->nbuckets - 1)];

	c->now_ms = now_ms;
	while (e && !is_key(e, h, site, key))
		e = e->hnext;
	if (!e) {
		c->st.misses++;
		return NULL;
	}
	if (now_ms - e->checked_ms >= c->cfg.ttl_ms) {
		c->st.revalidations++;
		if (!still_same(c, e)) {
			c->st.stale++;
			c->st.misses++;
			drop(c, e);
			return NULL;
		}
		e->checked_ms = now_ms;
	}
	c->st.hits++;
	gds_hit(&c->gds, &e->g);
	e->refs++;	/* the caller's */
	return e;
}

/*
 * A small file's body, copied whole (libzc's snapshot: a pool buffer, or on
 * the patched kernel a sealed memfd whose pages the kernel sends by
 * reference and whose checksums it caches).  NULL if it shrank meanwhile.
 * A file rewritten while we read it may leave a mix here: its mtime
 * changed, so the revalidation after ttl_ms drops the entry -- the same
 * window in which a large file is sent as it is now.  No second fstat per
 * miss to shorten it.
 */
static zc_buf *read_body(struct cache *c, zc_file *f, size_t size)
{
	zc_buf *b;

	return zc_buf_snapshot(c->pool, zc_file_fd(f), 0, size, &b) ? NULL : b;
}


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

static struct cache_entry *entry_new(unsigned site, const char *key,
				     int dirfd, const char *fs_path,
				     int fd, const struct stat *st,
				     uint64_t now_ms, enum cache_coding coding)
{
	size_t type_len = strlen(fs_path) - strlen(cache_codings[coding].suffix);

	struct cache_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	gds_entry_init(&e->g);
	e->refs = 1;	/* the caller's */
	e->site = site;
	e->key = strdup(key);
	e->dirfd = dirfd;
	e->fs_path = strdup(fs_path);
	if (!e->key || !e->fs_path || zc_file_adopt(fd, st, &e->file)) {
		entry_free(NULL, e);	/* nothing to drop yet */
		return NULL;
	}
	zc_file_version(e->file, &e->v);
	/* A variant's own tag: never equal to the identity's. */
	snprintf(e->etag, sizeof(e->etag), "\"%llx-%llx%s%s\"",
		 (unsigned long long)e->v.mtime_ns,
		 (unsigned long long)e->v.size, coding ? "-" : "",
		 coding ? cache_codings[coding].name : "");
	http_date_format(e->v.mtime_ns / 1000000000, e->lastmod);
	e->coding = (uint8_t)coding;
	e->mime = mime_type(fs_path, type_len);
	prebuild_head(e);
	e->checked_ms = now_ms;
	e->hash = hash_key(site, key);
	return e;
}

struct cache_entry *cache_prepare(struct cache *c, unsigned site,
				  const char *key, int dirfd,
				  const char *fs_path, int fd,
				  const struct stat *st, uint64_t now_ms,
				  enum cache_coding coding, unsigned variants)
{
	struct cache_entry *e = entry_new(site, key, dirfd, fs_path, fd, st,
					  now_ms, coding);

	if (e) {
		e->variants = (uint8_t)variants;
		e->variants_checked_ms = now_ms;
	}

	if (e && e->v.size > 0 && (uint64_t)e->v.size <= c->cfg.small_max) {
		e->body = read_body(c, e->file, (size_t)e->v.size);
		if (e->body && c->cfg.owns_pages)	/* one copy: the snapshot */
			posix_fadvise(zc_file_fd(e->file), 0, 0,
				      POSIX_FADV_DONTNEED);
	}
	return e;
}

struct cache_entry *cache_admit(struct cache *c, struct cache_entry *e)
{
	struct cache_entry *old;
	uint64_t charge;

	/* A stale twin goes first. */
	old = c->buckets[e->hash & (c->nbuckets - 1)];
	while (old && !is_key(old, e->hash, e->site, e->key))
		old = old->hnext;
	if (old)
		drop(c, old);

	charge = ENTRY_OVERHEAD +
		 (e->body ? zc_buf_capacity(e->body)
			  : c->cfg.owns_pages ? (uint64_t)e->v.size : 0);
	if (gds_insert(&c->gds, &e->g, charge, (double)charge, 0) < 0) {
		/* Refused (competing admission, or pinned entries fill the
		 * budget): serve it uncached, and do not keep its pages. */
		c->st.not_admitted++;
		e->drop_pages = c->cfg.owns_pages;
		return e;
	}
	e->refs++;	/* the table's */
	e->in_table = true;
	if (c->drops.n)		/* its pages are wanted again */
		page_drop_cancel(&c->drops, e->v.dev, e->v.ino);
	e->hnext = c->buckets[e->hash & (c->nbuckets - 1)];
	c->buckets[e->hash & (c->nbuckets - 1)] = e;
	c->st.entries++;
	c->st.bytes += charge;
	return e;
}

void cache_put(struct cache *c, struct cache_entry *e)
{
	if (e)
		entry_put(c, e);
}

void cache_pin(struct cache *c, struct cache_entry *e)
{
	e->refs++;
	if (e->in_table) {
		gds_pin(&c->gds, &e->g);
		c->st.pinned_entries++;
	}
}

void cache_unpin(struct cache *c, struct cache_entry *e)
{
	if (e->in_table && e->g.pins) {
		gds_unpin(&c->gds, &e->g);
		c->st.pinned_entries--;
	}
	entry_put(c, e);
}

int cache_maintain(struct cache *c, uint64_t now_ms)
{
	c->now_ms = now_ms;
	return c->drops.n ? page_drop_run(&c->drops, now_ms) : -1;
}

void cache_stats(const struct cache *c, struct cache_stats *st)
{
	*st = c->st;
}
