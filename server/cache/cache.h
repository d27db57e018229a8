/*
 * cache.h - zchttpd's unified cache: one cache for all the workers of a
 * server (IO-Lite: one copy of each piece of data, one replacement policy).
 *
 * What it holds, per (site, request path): the file's validators, the
 * prebuilt part of its response head, and for small files the body in
 * memory.  Greedy-Dual-Size (libgds) keeps the whole within one byte
 * budget, `--cache-size`, with one inflation clock for every worker.
 *
 * Where it lives.  The master creates the zone (cache_zone.h: one memfd
 * mapped shared by every worker of a generation, at the same address in
 * all of them, since they are forked after it is mapped) and each worker
 * attaches to it (cache_attach).  Index, policy state, entries and the
 * bodies are there; a worker keeps only what cannot be shared: its open
 * descriptors of the entries' files, its pins, the hits it has not yet
 * told the policy about.
 *
 * Reading without a lock.  A lookup walks the index with acquire loads
 * and checks the entry's sequence count around what it compared (a
 * seqlock); it then pins the entry in the worker's own pin row (a counter
 * per entry slot, written only by that worker), makes the pin visible
 * (a full fence) and checks the entry again.  Whoever removes an entry
 * marks it dead, fences, and frees it only when no worker's row pins it:
 * the hazard-pointer handshake, so a hit writes no cache line another
 * worker writes.  A hit goes into the worker's own ring in the zone
 * (cache_zone.h); the policy takes every worker's rings under the zone's
 * lock -- before any insert decides on evictions, when a ring fills, and
 * 20 ms after a worker's oldest hit.
 *
 * Writing under the lock.  Inserts, evictions, body loads and the policy
 * take a process-shared robust mutex.  A worker killed while it holds it
 * leaves the next holder EOWNERDEAD: that holder rebuilds the zone from
 * the entries themselves (cache_zone.c: everything not pinned by a live
 * worker is dropped) instead of trusting half-made lists.  A worker killed
 * otherwise is cleaned up by the master (cache_zone_worker_gone): its pins
 * go, bodies it was loading are given back.
 *
 * Bodies.  A file up to --cache-small-max is copied into the zone's arena
 * the second time it is asked for (the policy admitted it on the first,
 * but a one-hit object is never copied: its first request goes out by
 * sendfile), and sent from there: by copy (sendmsg with the head) up to
 * --cache-copy-max, by sendfile from the arena's memfd above it.  Larger
 * files are sent by sendfile from the page cache.  On the patched kernel
 * with IO-Lite (libzc's kernel buffers) a body is instead a snapshot per
 * worker (zc_buf_snapshot: a sealed memfd the kernel sends by reference
 * and whose checksums it caches), since a kernel buffer is mapped per
 * process.
 *
 * Freshness: an entry is trusted for `ttl_ms` after it was last checked;
 * after that the next request stats the path again (device, inode, size,
 * mtime, ctime) and a changed, replaced or deleted file is dropped.  So a
 * change is never served stale for longer than ttl_ms.
 *
 * Pins: an entry whose body is part of a response still being sent is
 * pinned by its worker; a pinned entry may leave the index and the
 * budget (evicted, stale), but its slot and body stay until the last pin
 * is gone.  An entry the policy would not admit is served from a private
 * entry that lives as long as the request's references.
 */
#ifndef ZC_CACHE_H
#define ZC_CACHE_H

#include <stdatomic.h>
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
/* Key and file name of a shared entry, with their NULs; a longer pair is
 * served from a private entry (uncached). */
#define CACHE_NAMES_MAX 384
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

/* What an entry is (cache_entry.state). */
enum cache_entry_state {
	CE_FREE = 0,			/* a free slot */
	CE_READY,			/* in the index and the budget */
	CE_DEAD,			/* out of both; waits for its pins */
	CE_PRIVATE,			/* not shared: malloc'ed, uncached */
};

/* Where its body is (cache_entry.body_state). */
enum cache_body_state {
	CB_NONE = 0,			/* in the file only */
	CB_LOADING,			/* a worker is copying it in */
	CB_READY,			/* in the arena: body_off, body_len */
};

struct cache_entry {
	/* What a lookup reads of every entry it walks past, together in
	 * the first cache line; the key it compares is inline_names. */
	/* Shared slots: the seqlock count, odd while the entry is being
	 * filled or its body fields change; lock-free readers check it. */
	_Atomic uint32_t seq;
	_Atomic uint32_t state;		/* enum cache_entry_state */
	uint32_t gen;			/* bumped at each fill of the slot:
					 * (slot, gen) names this entry */
	_Atomic uint32_t hnext;		/* hash chain: slot + 1, 0 ends it */
	uint64_t hash;
	/* The key is (site, key): two sites' "/index.html" are two
	 * entries (virtual hosts, vhost.h). */
	unsigned site;
	uint32_t lnext;			/* free or limbo list: slot + 1 */
	struct gds_entry g;		/* the policy's (cache.c's on_evict
					 * finds the entry from it) */
	char inline_names[CACHE_NAMES_MAX];	/* shared slots' key and
						 * file name, NUL after each */
	const char *key;		/* request path, normalized ("dir/") */
	const char *fs_path;		/* file below the site's root
					 * ("dir/index.html") */
	int dirfd;			/* the site's root (the same number in
					 * every worker of a generation) */
	struct zc_file_version v;
	_Atomic uint64_t checked_ms;
	char etag[48];
	char lastmod[HTTP_DATE_LEN + 1];
	const char *mime;		/* mime.c's static strings: the same
					 * address in every worker */
	/* The entity headers of a full 200 response, prebuilt when the entry
	 * is made: Content-Type, Content-Length, Last-Modified, ETag,
	 * Accept-Ranges, each ending in CRLF.  head_len 0: did not fit. */
	char head[CACHE_HEAD_MAX];
	uint16_t head_len;
	uint8_t coding;			/* enum cache_coding of the body */
	_Atomic uint8_t variants;	/* identity: 1 << coding for each
					 * precompressed file next to it */
	_Atomic uint64_t variants_checked_ms;	/* when last looked for */
	/* The body in the arena (shared slots, portable backend). */
	_Atomic uint32_t body_state;	/* enum cache_body_state */
	int32_t body_loader;		/* worker copying it in (CB_LOADING) */
	uint64_t body_off;		/* byte offset in the arena */
	uint32_t body_pages;		/* pages reserved (0: none) */
	bool wants_body;		/* admitted with its body charged */
	bool drop_pages;		/* the policy let it go: drop its
					 * page-cache pages when freed */
	_Atomic bool kref;		/* its arena pages went to a socket by
					 * reference: punch them before reuse */
	/* Private entries only. */
	unsigned refs;
	zc_file *file;
	char *names;			/* key and fs_path */
};

struct cache_config {
	uint64_t budget;		/* bytes (bodies + per-entry overhead),
					 * of the whole server */
	uint32_t max_entries;		/* bounds descriptors too */
	uint64_t small_max;		/* bodies up to this are held in memory */
	uint64_t copy_max;		/* held bodies up to this leave by copy */
	unsigned ttl_ms;
	const struct gds_policy *policy;	/* gds.h's table; NULL: gdsf */
	bool owns_pages;		/* --page-cache policy (cache.c) */
	unsigned nworkers;		/* pin rows in the zone */
};

/* Counters a worker keeps of what it did (the status endpoint sums them);
 * bytes and entries are the zone's, pinned_entries the worker's own. */
struct cache_stats {
	uint64_t hits, misses, revalidations, stale, evictions, not_admitted;
	uint64_t dropped;		/* files whose pages it let go
					 * (--page-cache policy) */
	uint64_t bodies_loaded;		/* bodies copied into memory */
	uint64_t rebuilds;		/* zone rebuilt after a worker died
					 * holding its lock */
	uint64_t bytes, entries;
	uint64_t pinned_entries;	/* pins held by responses in flight */
	uint64_t arena_bytes;		/* arena memory reserved for bodies */
};

struct cache_zone;
struct cache;

/* Master, before it forks the workers that share it. */
int cache_zone_create(const struct cache_config *cfg, struct cache_zone **out);
/* Master: it no longer needs its mapping (the generation's workers keep
 * theirs until they exit). */
void cache_zone_unmap(struct cache_zone *z);
/* Master, after reaping worker `worker` of the zone's generation and
 * before starting its successor: its pins and its half-done loads go. */
void cache_zone_worker_gone(struct cache_zone *z, unsigned worker);

/* Worker `worker` (< cfg.nworkers), after fork: its handle on the zone. */
int cache_attach(struct cache_zone *z, unsigned worker, struct cache **out);
void cache_detach(struct cache *c);

/* The entry for `key` of site `site`, or NULL (not cached, or found
 * changed and dropped).  `now_ms` drives revalidation.  The caller gets a
 * reference (a pin): cache_put() it when done. */
struct cache_entry *cache_lookup(struct cache *c, unsigned site,
				 const char *key, uint64_t now_ms);
void cache_put(struct cache *c, struct cache_entry *e);

/*
 * A miss: an entry for the open regular file `fd` with the fstat its
 * opener just made (the cache owns the descriptor from then on, and the
 * file is not stat'ed again).  `dirfd` is the site's root, which
 * `fs_path` is relative to (the entry is revalidated by
 * fstatat(dirfd, fs_path)).  `coding` is the body's content coding (a
 * precompressed variant: its type comes from the name without the
 * suffix, its ETag is its own), and `variants` the precompressed files
 * found next to an identity file.  The policy admits it into the shared
 * cache, or it is a private entry that lives as long as its references.
 * Returns a reference, or NULL when out of memory (fd is then still the
 * caller's).  An entry of another worker for the same file, made
 * meanwhile, is returned instead.
 */
struct cache_entry *cache_insert(struct cache *c, unsigned site,
				 const char *key, int dirfd,
				 const char *fs_path, int fd,
				 const struct stat *st, uint64_t now_ms,
				 enum cache_coding coding, unsigned variants);
/* Drop e from the cache (it changed under us); the caller's reference
 * stays valid. */
void cache_drop(struct cache *c, struct cache_entry *e);

/* A response in flight uses e: keep it until cache_unpin. */
void cache_pin(struct cache *c, struct cache_entry *e);
void cache_unpin(struct cache *c, struct cache_entry *e);

/*
 * Sending a body.  cache_append_body appends [off, off+len) of e's body
 * to `out` the cheapest way it can (memory by copy, the arena by
 * sendfile, the file by sendfile).  -EAGAIN: the body is not in memory
 * and this worker has no descriptor of e's file yet: open it (in line or
 * on a helper thread) and adopt it (cache_adopt_fd), then call again.
 *
 * `how`: 0, or CACHE_FRAMED when the body leaves cut into frames
 * (HTTP/2's DATA, 16 KiB each as clients ask), each behind a header of its
 * own.  A body in memory then goes as memory at any size: the frames and
 * their headers are gathered into one sendmsg, where the arena by
 * sendfile would cost a sendfile and a sendmsg per frame -- 2.5 times the
 * CPU of the copy for a 100 KB body (docs/bench-static.md, HTTP/2).  With
 * CACHE_MAPPED too (the socket copies from mappings: h2c), a file is also
 * mapped, once per worker (zc_file_map).
 */
#define CACHE_FRAMED 1u
#define CACHE_MAPPED 2u
int cache_append_body(struct cache *c, struct cache_entry *e, zc_agg *out,
		      uint64_t off, uint64_t len, unsigned how);
/* Is e's body in memory for this worker (no descriptor needed)? */
bool cache_body_in_memory(struct cache *c, struct cache_entry *e);
/* The worker's open file of e, or NULL. */
zc_file *cache_file(struct cache *c, struct cache_entry *e);
/* Adopt fd (and its fstat) as this worker's descriptor of e; fd is the
 * cache's either way.  0, or -ESTALE when it is not the file e describes
 * any more (then e has been dropped), or -errno. */
int cache_adopt_fd(struct cache *c, struct cache_entry *e, int fd,
		   const struct stat *st);

/*
 * Bringing a body into memory.  cache_load_begin says whether e's body
 * should be copied in now (admitted with it, small enough, not there,
 * nobody else copying it) and reserves its place: true means the caller
 * calls cache_load_fill (on any thread; `nowait`: only from the page
 * cache, -EAGAIN otherwise) and then cache_load_end on the loop.
 */
bool cache_load_begin(struct cache *c, struct cache_entry *e);
int cache_load_fill(struct cache *c, struct cache_entry *e, bool nowait);
void cache_load_end(struct cache *c, struct cache_entry *e, int err);

/* What the zone holds, counted from its slots and checked against its
 * lists, index, policy and page bitmap (tests; the status endpoint's
 * ?audit): `ok` when every count agrees -- after a worker was killed, no
 * index corrupted and no arena page held by no entry. */
struct cache_audit {
	bool ok;
	const char *why;		/* the first disagreement, or NULL */
	uint64_t ready, dead, free;	/* slots by state */
	uint64_t limbo;			/* on the limbo list */
	uint64_t body_pages;		/* held by entries (ready or dead) */
	uint64_t arena_pages;		/* allocated in the bitmap */
};
void cache_audit(struct cache *c, struct cache_audit *a);

/* Housekeeping the loop runs before it sleeps (the batched hits,
 * page_drop.h's retries, descriptors of dead entries): milliseconds
 * until it is needed again, -1 if not. */
int cache_maintain(struct cache *c, uint64_t now_ms);
void cache_stats(const struct cache *c, struct cache_stats *st);

#endif
