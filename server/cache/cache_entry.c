/*
 * cache_entry.c - what an entry says of its file: names, validators, type,
 * the prebuilt head; whether a stat still matches it; entries private to
 * one worker (uncached).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cache_int.h"
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
