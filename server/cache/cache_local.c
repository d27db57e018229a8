/*
 * cache_local.c - a worker's own side of the shared entries: its
 * descriptors of their files (bounded, swept when their entries die) and
 * its snapshots.
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

void cache_local_hold(struct cache *c, uint32_t s)
{
	struct cache_local *l = &c->local[s];

	if (l->held)
		return;
	l->held = true;
	l->held_at = c->nheld;
	c->held[c->nheld++] = s;
}

/* Forget what we held of a slot's previous entry. */
void cache_local_clear(struct cache *c, struct cache_local *l)
{
	if (l->file) {
		zc_file_release(l->file);
		l->file = NULL;
		c->nfiles--;
	}
	zc_buf_release(l->snap);
	l->snap = NULL;
	if (l->held) {		/* the last of the list takes its place */
		uint32_t last = c->held[--c->nheld];

		c->held[l->held_at] = last;
		c->local[last].held_at = l->held_at;
		l->held = false;
	}
}

/* Our side of slots whose entry is gone, over `budget` of the slots we
 * hold something of, round a clock; with `keep` < UINT32_MAX, also live
 * ones until we hold at most `keep` descriptors; `all`: everything. */
void cache_sweep(struct cache *c, uint32_t budget, uint32_t keep, bool all)
{
	uint32_t steps = c->nheld;	/* each held slot looked at once */

	for (uint32_t k = 0; k < budget && k < steps && c->nheld; k++) {
		uint32_t i = c->sweep % c->nheld, s = c->held[i];
		struct cache_local *l = &c->local[s];
		struct cache_entry *e = &c->z->slots[s];

		if (keep != UINT32_MAX && c->nfiles <= keep && !all)
			break;
		if (!l->loading &&
		    (all || c->nfiles > keep || l->gen != e->gen ||
		     atomic_load_explicit(&e->state, memory_order_relaxed) !=
			     CE_READY)) {
			cache_local_clear(c, l);	/* i holds another now */
			continue;
		}
		c->sweep = i + 1;
	}
}

void cache_set_file(struct cache *c, struct cache_entry *e, zc_file *f)
{
	uint32_t s = slot_of(c, e);
	struct cache_local *l = &c->local[s];

	if (l->gen != e->gen || l->file) {
		cache_local_clear(c, l);
		l->gen = e->gen;
	}
	/* Room first (an eighth goes, round the clock): swept after it is
	 * set, the descriptor the caller is about to send from could be the
	 * one that goes. */
	if (c->nfiles + 1 > c->max_files)
		cache_sweep(c, UINT32_MAX, c->max_files - c->max_files / 8, false);
	l->file = f;
	c->nfiles++;
	cache_local_hold(c, s);
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
	if (!cache_describes(e, st)) {
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
	cache_set_file(c, e, f);
	return 0;
}
