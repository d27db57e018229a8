/*
 * cache.h - zchttpd's unified cache: path -> open file, its validators,
 * the prebuilt part of its response head, and for small files the body as
 * a snapshot (zc_buf_snapshot: a pool buffer, or on the patched kernel a
 * sealed memfd that the kernel sends by reference, checksums cached).
 * One cache per worker (no locks); Greedy-Dual-Size
 * (libgds) decides what stays within the byte budget.
 *
 * Freshness: an entry is trusted for `ttl_ms` after it was last checked;
 * after that the next request stats the path again (device, inode, size,
 * mtime) and a changed, replaced or deleted file is reloaded or dropped.
 * So a change is never served stale for longer than ttl_ms.
 *
 * Pinning: an entry whose buffer or file is part of a response still being
 * sent is pinned (cache_pin); pinned entries are never chosen for eviction,
 * and an entry dropped from the cache while pinned lives on until the last
 * response using it is done (cache_unpin frees it then).
 */
#ifndef ZC_CACHE_H
#define ZC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gds.h"
#include "http_parser.h"
#include "zc.h"

struct stat;

/* Room for the prebuilt headers: the longest MIME type in mime.c plus
 * fixed-size validators and a 20-digit length fit with margin. */
#define CACHE_HEAD_MAX 320

/* Content codings of precompressed files ("x.css.br" next to "x.css"). */
enum cache_coding { CACHE_IDENTITY = 0, CACHE_BR = 1, CACHE_GZIP = 2 };
#define CACHE_NCODINGS 3
struct cache_coding_info {
	const char *name;		/* Content-Encoding */
	const char *suffix;		/* of the file */
	const char *key;		/* appended to the identity's key; \x1f
					 * never survives normalization */
};
extern const struct cache_coding_info cache_codings[CACHE_NCODINGS];

struct cache_entry {
	struct gds_entry g;		/* first: libgds hands this back */
	struct cache_entry *hnext;	/* hash chain */
	uint64_t hash;
	unsigned refs;			/* 1 while in the table + pins */
	bool in_table;
	/* The key is (site, key): two sites' "/index.html" are two
	 * entries (virtual hosts, vhost.h). */
	unsigned site;
	char *key;			/* request path, normalized ("dir/") */
	int dirfd;			/* the site's root, for revalidation
					 * (the worker's; not ours to close) */
	char *fs_path;			/* file below it ("dir/index.html") */
	zc_file *file;
	struct zc_file_version v;
	zc_buf *body;			/* whole content of a small file, or NULL */
	uint64_t checked_ms;
	char etag[48];
	char lastmod[HTTP_DATE_LEN + 1];
	const char *mime;
	/* The entity headers of a full 200 response, prebuilt when the entry
	 * is made: Content-Type, Content-Length, Last-Modified, ETag,
	 * Accept-Ranges, each ending in CRLF.  head_len 0: did not fit. */
	char head[CACHE_HEAD_MAX];
	uint16_t head_len;
	uint8_t coding;			/* enum cache_coding of the body */
	uint8_t variants;		/* identity: 1 << coding for each
					 * precompressed file next to it */
	uint64_t variants_checked_ms;	/* when they were last looked for */
	bool drop_pages;		/* the policy let it go: drop its
					 * page-cache pages when freed */
};

struct cache_config {
	uint64_t budget;		/* bytes (bodies + per-entry overhead) */
	uint32_t max_entries;		/* bounds open descriptors too */
	uint64_t small_max;		/* bodies up to this are held in memory */
	unsigned ttl_ms;
	const struct gds_policy *policy;	/* gds.h's table; NULL: gdsf */
	bool owns_pages;		/* --page-cache policy (cache.c) */
};

struct cache_stats {
	uint64_t hits, misses, revalidations, stale, evictions, not_admitted;
	uint64_t dropped;		/* files whose pages it let go
					 * (--page-cache policy) */
	uint64_t bytes, entries;
	uint64_t pinned_entries;	/* pins held by responses in flight */
};

struct cache;

int cache_create(const struct cache_config *cfg, struct cache **out);
void cache_destroy(struct cache *c);

/* The entry for `key` of site `site`, or NULL (not cached, or found
 * changed and dropped).  `now_ms` drives revalidation.  The caller gets a
 * reference: cache_put() it when done. */
struct cache_entry *cache_lookup(struct cache *c, unsigned site,
				 const char *key, uint64_t now_ms);

void cache_put(struct cache *c, struct cache_entry *e);

/*
 * A new entry in two halves, for helper threads.  cache_prepare does the
 * blocking part and is safe on any thread (it touches only the cache's
 * pool, which locks): it takes an open regular file and the fstat its
 * opener just made -- the entry owns the descriptor from then on, and the
 * file is not stat'ed again -- and reads a small body into a pool buffer.
 * `dirfd` is the site's root, which `fs_path` is relative to (the entry is
 * revalidated by fstatat(dirfd, fs_path)).
 * `coding` is the body's content coding (a precompressed variant: its type
 * comes from the name without the suffix, its ETag is its own), and
 * `variants` the precompressed files found next to an identity file.
 * NULL only when out of memory (fd is then still the caller's).
 * cache_admit, on the loop thread, puts the prepared entry into the cache
 * if the budget allows; otherwise it stays a private entry that lives as
 * long as its references.
 */
struct cache_entry *cache_prepare(struct cache *c, unsigned site,
				  const char *key, int dirfd,
				  const char *fs_path, int fd,
				  const struct stat *st, uint64_t now_ms,
				  enum cache_coding coding, unsigned variants);
struct cache_entry *cache_admit(struct cache *c, struct cache_entry *e);
/* A response in flight uses e: keep it (and out of eviction) until
 * cache_unpin. */
void cache_pin(struct cache *c, struct cache_entry *e);
void cache_unpin(struct cache *c, struct cache_entry *e);

/* Housekeeping the loop runs before it sleeps (page_drop.h's retries):
 * milliseconds until it is needed again, -1 if not. */
int cache_maintain(struct cache *c, uint64_t now_ms);
void cache_stats(const struct cache *c, struct cache_stats *st);

#endif
