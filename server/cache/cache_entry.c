/*
 * cache_entry.c - what an entry says of its file: names, validators, type,
 * the prebuilt head; whether a stat still matches it; entries private to
 * one worker (uncached).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cache_int.h"
#include "http_lex.h"
#include "mime.h"
#include "page_drop.h"


/* Is (dev, ino, size, times) of st what e says? */
bool cache_describes(const struct cache_entry *e, const struct stat *st)
{
	struct zc_file_version v;

	zc_file_version_of(st, &v);
	return zc_file_version_same(&v, &e->v);
}

bool cache_still_same(const struct cache_entry *e)
{
	struct zc_file_version v;
	struct stat st;

	if (fstatat(e->dirfd, e->fs_path, &st, 0) < 0)
		return false;
	zc_file_version_of(&st, &v);
	return zc_file_version_same(&v, &e->v);
}

/* Text appended to a fixed buffer; `full` once something did not fit.
 * An entry is described on every miss (12,222 times in a 50,000-request
 * trace replay): snprintf made that 4,700 instructions, a quarter of the
 * worker's own. */
struct text {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (n > t->cap - t->len) {
		t->full = true;
		return;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
}

#define PUT_LIT(t, lit) put((t), (lit), sizeof(lit) - 1)

static void put_str(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static void put_hex(struct text *t, uint64_t v)
{
	char buf[16];
	size_t i = sizeof(buf);

	do
		buf[--i] = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	put(t, buf + i, sizeof(buf) - i);
}

static void put_dec(struct text *t, uint64_t v)
{
	char buf[HTTP_DEC_MAX], *d = http_dec(buf, v);

	put(t, d, (size_t)(buf + sizeof(buf) - d));
}

/* The headers every full response for this entry repeats, formatted once
 * here instead of once per response. */
static void prebuild_head(struct cache_entry *e)
{
	struct text t = { e->head, 0, sizeof(e->head), false };

	PUT_LIT(&t, "Content-Type: ");
	put_str(&t, e->mime);
	PUT_LIT(&t, "\r\nContent-Length: ");
	put_dec(&t, (uint64_t)e->v.size);
	PUT_LIT(&t, "\r\nLast-Modified: ");
	put_str(&t, e->lastmod);
	PUT_LIT(&t, "\r\nETag: ");
	put_str(&t, e->etag);
	PUT_LIT(&t, "\r\nAccept-Ranges: bytes\r\n");
	if (e->coding) {
		PUT_LIT(&t, "Content-Encoding: ");
		put_str(&t, cache_codings[e->coding].name);
		PUT_LIT(&t, "\r\n");
	}
	e->head_len = t.full ? 0 : (uint16_t)t.len;
}

/* The entity tag: mtime (ns) and size in hex, and a variant's coding, so
 * that a variant's tag never equals the identity's. */
static void make_etag(struct cache_entry *e, enum cache_coding coding)
{
	struct text t = { e->etag, 0, sizeof(e->etag) - 1, false };

	PUT_LIT(&t, "\"");
	put_hex(&t, (uint64_t)e->v.mtime_ns);
	PUT_LIT(&t, "-");
	put_hex(&t, (uint64_t)e->v.size);
	if (coding) {
		PUT_LIT(&t, "-");
		put_str(&t, cache_codings[coding].name);
	}
	PUT_LIT(&t, "\"");
	e->etag[t.full ? 0 : t.len] = '\0';	/* never: 48 hold the longest */
}

/* Everything of an entry but its place: names (already in e->key and
 * e->fs_path), validators, type, prebuilt head. */
void cache_describe(struct cache_entry *e, unsigned site, int dirfd,
		     const struct stat *st, uint64_t now_ms,
		     enum cache_coding coding, unsigned variants)
{
	size_t type_len = strlen(e->fs_path) -
			  strlen(cache_codings[coding].suffix);

	e->site = site;
	e->dirfd = dirfd;
	zc_file_version_of(st, &e->v);
	make_etag(e, coding);
	http_date_format(e->v.mtime_ns / 1000000000, e->lastmod);
	e->coding = (uint8_t)coding;
	e->mime = mime_type(e->fs_path, type_len);
	prebuild_head(e);
	atomic_store_explicit(&e->checked_ms, now_ms, memory_order_relaxed);
	atomic_store_explicit(&e->variants, (uint8_t)variants,
			      memory_order_relaxed);
	atomic_store_explicit(&e->variants_checked_ms, now_ms,
			      memory_order_relaxed);
	e->hash = cache_hash_key(site, e->key);
}

/* An entry of this worker alone (the policy did not admit it, or its
 * names do not fit a slot): it owns fd. */
struct cache_entry *cache_private_entry(unsigned site, const char *key,
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
	cache_describe(e, site, dirfd, st, now_ms, coding, variants);
	return e;
}

void cache_private_put(struct cache *c, struct cache_entry *e)
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
