/*
 * cache_entry.c - what an entry says of its file: names, validators, type,
 * the prebuilt head; whether a stat still matches it; entries private to
 * one worker (uncached).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cache_int.h"
#include "mime.h"
#include "page_drop.h"
#include "respond.h"


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

/* The headers every full response for this entry repeats, formatted once
 * here instead of once per response, by respond.h's field builder (an
 * entry is described on every miss: 12,222 times in a 50,000-request
 * trace replay, where snprintf made that a quarter of the worker's own
 * instructions). */
static void prebuild_head(struct cache_entry *e)
{
	struct resp_head h;

	resp_head_over(&h, e->head, sizeof(e->head));
	resp_add(&h, "Content-Type", e->mime);
	resp_add_num(&h, "Content-Length", 14, (uint64_t)e->v.size);
	resp_add(&h, "Last-Modified", e->lastmod);
	resp_add(&h, "ETag", e->etag);
	resp_add_raw(&h, "Accept-Ranges: bytes\r\n", 22);
	if (e->coding)
		resp_add(&h, "Content-Encoding",
			 cache_codings[e->coding].name);
	e->head_len = h.overflow ? 0 : (uint16_t)h.len;
}

/* v in lower-case hex at p: past its last digit (16 at most). */
static char *put_hex(char *p, uint64_t v)
{
	char digits[16];
	size_t i = sizeof(digits);

	do
		digits[--i] = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	memcpy(p, digits + i, sizeof(digits) - i);
	return p + sizeof(digits) - i;
}

/* The entity tag: mtime (ns) and size in hex, and a variant's coding, so
 * that a variant's tag never equals the identity's.  The two numbers
 * take 37 bytes at most with their quote and dash; the coding's name is
 * cut to what is left (no coding's is near it). */
static void make_etag(struct cache_entry *e, enum cache_coding coding)
{
	char *p = e->etag;

	*p++ = '"';
	p = put_hex(p, (uint64_t)e->v.mtime_ns);
	*p++ = '-';
	p = put_hex(p, (uint64_t)e->v.size);
	if (coding) {
		const char *name = cache_codings[coding].name;
		size_t room = sizeof(e->etag) - (size_t)(p - e->etag) - 3;
		size_t n = strnlen(name, room);

		*p++ = '-';
		memcpy(p, name, n);
		p += n;
	}
	*p++ = '"';
	*p = '\0';
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
