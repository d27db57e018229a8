/* gds.c - Greedy-Dual-Size over an indexed binary min-heap.
 *
 * The heap holds the unpinned cached entries, ordered by (H, seq).  Each
 * entry remembers its slot (e->idx), which is what makes hit and remove
 * O(log n) instead of a search: a hit raises H, so the entry only ever
 * sifts down; a remove swaps the last entry into the hole and sifts it the
 * way it has to go.
 *
 * Pinned entries are not in the heap at all.  That keeps eviction O(log n)
 * however many entries are pinned (a heap that skipped pinned entries
 * would have to search), and it means the victim is simply the root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gds.h"

/* gds1, gdsp and lru admit every miss (Cao and Irani's GreedyDual-Size);
 * gdsf is GDSF as libCacheSim runs it, the newcomer competing (gds.h,
 * Admission; docs/gds-cache.md has the comparison), and zchttpd's default;
 * gdsf-all is the same GDSF admitting every miss, as gdssim ran it before. */
const struct gds_policy gds_policies[] = {
	{ "gds1", "GDS(1)", GDS_COST_ONE, false, false },
	{ "gdsp", "GDS(packets)", GDS_COST_PACKETS, false, false },
	{ "gdsf", "GDSF", GDS_COST_ONE, true, true },
	{ "gdsf-all", "GDSF-all", GDS_COST_ONE, true, false },
	{ "lru", "LRU", GDS_COST_SIZE, false, false },
};
const unsigned gds_npolicies = sizeof(gds_policies) / sizeof(gds_policies[0]);

const struct gds_policy *gds_policy_find(const char *name)
{
	for (unsigned i = 0; name && i < gds_npolicies; i++)
		if (strcmp(name, gds_policies[i].name) == 0)
			return &gds_policies[i];
	return NULL;
}

char *gds_policy_names(char *buf, size_t len, const char *sep)
{
	size_t k = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (unsigned i = 0; i < gds_npolicies && k < len; i++) {
		int n = snprintf(buf + k, len - k, "%s%s", i ? sep : "",
				 gds_policies[i].name);

		if (n < 0)
			break;
		k += (size_t)n;
	}
	return buf;
}

/* Eviction order: lower H first, then the older touch. */
static inline bool before(const struct gds_entry *a, const struct gds_entry *b)
{
	return a->h < b->h || (a->h == b->h && a->seq < b->seq);
}

static inline void place(struct gds *c, struct gds_entry *e, uint32_t i)
{
	c->heap[i] = e;
	e->idx = i;
}

static void sift_up(struct gds *c, uint32_t i)
{
	struct gds_entry *e = c->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!before(e, c->heap[parent]))
			break;
		place(c, c->heap[parent], i);
		i = parent;
	}
	place(c, e, i);
}

static void sift_down(struct gds *c, uint32_t i)
{
	struct gds_entry *e = c->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= c->n)
			break;
		m = l;
		if (l + 1 < c->n && before(c->heap[l + 1], c->heap[l]))
			m = l + 1;
		if (!before(c->heap[m], e))
			break;
		place(c, c->heap[m], i);
		i = m;
	}
	place(c, e, i);
}

static void heap_push(struct gds *c, struct gds_entry *e)
{
	c->heap[c->n] = e;
	e->idx = c->n++;
	sift_up(c, e->idx);
}

static void heap_delete(struct gds *c, struct gds_entry *e)
{
	uint32_t i = e->idx;
	struct gds_entry *last = c->heap[--c->n];

	if (last != e) {
		place(c, last, i);
		if (i > 0 && before(last, c->heap[(i - 1) / 2]))
			sift_up(c, i);
		else
			sift_down(c, i);
	}
}

double gds_cost_of(enum gds_cost kind, uint64_t size, double caller_cost)
{
	switch (kind) {
	case GDS_COST_ONE:
		return 1.0;
	case GDS_COST_PACKETS:
		return 2.0 + (double)size / 536.0;
	case GDS_COST_SIZE:
		return (double)size;
	case GDS_COST_CALLER:
	default:
		return caller_cost;
	}
}

/* H = L + freq * cost / size, with a fresh touch sequence number.  The
 * expression is written once so tests can reproduce it bit for bit. */
static void touch(struct gds *c, struct gds_entry *e)
{
	double f = c->freq ? (double)e->freq : 1.0;

	e->h = c->L + f * e->cost / (double)e->size;
	e->seq = ++c->seq;
}

static int init(struct gds *c, const struct gds_config *cfg)
{
	if (!c || !cfg || cfg->budget == 0 || cfg->max_entries == 0 ||
	    cfg->max_entries >= GDS_IDX_PINNED ||
	    (unsigned)cfg->cost > GDS_COST_SIZE)
		return -EINVAL;
	*c = (struct gds){
		.max_entries = cfg->max_entries,
		.budget = cfg->budget,
		.cost = cfg->cost,
		.freq = cfg->freq,
		.compete = cfg->compete,
		.evict = cfg->evict,
		.evict_arg = cfg->evict_arg,
	};
	return 0;
}

/* One slot more than max_entries: a competing newcomer is pushed before
 * the eviction that makes its slot. */
size_t gds_heap_bytes(uint32_t max_entries)
{
	return ((size_t)max_entries + 1) * sizeof(struct gds_entry *);
}

int gds_init(struct gds *c, const struct gds_config *cfg)
{
	int err = init(c, cfg);

	if (err)
		return err;
	c->heap = calloc(1, gds_heap_bytes(cfg->max_entries));
	c->heap_owned = true;
	return c->heap ? 0 : -ENOMEM;
}

int gds_init_in(struct gds *c, const struct gds_config *cfg, void *heap)
{
	int err = heap ? init(c, cfg) : -EINVAL;

	if (err)
		return err;
	c->heap = heap;
	return 0;
}

void gds_destroy(struct gds *c)
{
	if (!c)
		return;
	if (c->heap_owned)
		free(c->heap);
	c->heap = NULL;
	c->n = 0;
}

/* Take the root out: L rises to its H.  The callback runs last, when the
 * cache no longer refers to the entry.
 *
 * "Rises": normally every H >= L, so the root's H is never below L.  A
 * pinned entry is the exception -- it keeps the H of its last touch while L
 * moves on, and may come back from its pin below L.  Evicting it must not
 * pull L down (everything inserted later would be undervalued, and H would
 * no longer grow monotonically on a hit), hence the max. */
static void evict_root(struct gds *c)
{
	struct gds_entry *v = c->heap[0];

	if (v->h > c->L)
		c->L = v->h;
	heap_delete(c, v);
	v->idx = GDS_IDX_NONE;
	c->st.bytes -= v->size;
	c->st.entries--;
	c->st.evictions++;
	c->st.bytes_evicted += v->size;
	if (c->evict)
		c->evict(v, c->evict_arg);
}

/* Evict until `extra` more bytes fit; true if they do. */
static bool make_room(struct gds *c, uint64_t extra)
{
	while (c->st.bytes + extra > c->budget && c->n > 0)
		evict_root(c);
	return c->st.bytes + extra <= c->budget;
}

static int over_budget_result(struct gds *c)
{
	if (c->st.bytes <= c->budget)
		return GDS_OK;
	c->st.over_budget++;
	return GDS_OVER_BUDGET;
}

/* gds.h, Admission: H with the L of before, into the heap, then evict
 * until the cache fits -- the newcomer too if it is the minimum.  It loses
 * every tie, having the newest seq.  A lost newcomer is no eviction: the
 * caller still owns it, so no callback either. */
static int insert_competing(struct gds *c, struct gds_entry *e)
{
	touch(c, e);
	c->st.bytes += e->size;
	c->st.entries++;
	heap_push(c, e);
	while ((c->st.bytes > c->budget || c->st.entries > c->max_entries) &&
	       c->n > 0) {
		if (c->heap[0] != e) {
			evict_root(c);
			continue;
		}
		if (e->h > c->L)
			c->L = e->h;
		heap_delete(c, e);
		e->idx = GDS_IDX_NONE;
		c->st.bytes -= e->size;
		c->st.entries--;
		c->st.not_admitted++;
		return -ENOSPC;
	}
	return over_budget_result(c);
}

int gds_insert(struct gds *c, struct gds_entry *e, uint64_t size,
	       double cost, unsigned flags)
{
	uint64_t pinned;

	if (!c || !e || gds_cached(e) || size == 0 ||
	    (flags & ~(GDS_PIN | GDS_FORCE)))
		return -EINVAL;
	if (c->cost == GDS_COST_CALLER && !(isfinite(cost) && cost >= 0))
		return -EINVAL;

	/* Decide before evicting anything: evictions that cannot make room
	 * would only lose useful entries. */
	pinned = c->st.pinned_bytes;
	if (size > c->budget ||
	    (!(flags & GDS_FORCE) && pinned + size > c->budget) ||
	    (c->st.entries == c->max_entries && c->n == 0)) {
		c->st.not_admitted++;
		return -ENOSPC;
	}
	e->size = size;
	e->cost = gds_cost_of(c->cost, size, cost);
	e->freq = 1;
	e->pins = 0;
	if (c->compete && !(flags & (GDS_PIN | GDS_FORCE)))
		return insert_competing(c, e);
	make_room(c, size);
	if (c->st.entries == c->max_entries)
		evict_root(c);	/* c->n > 0 was checked above */

	touch(c, e);
	c->st.bytes += size;
	c->st.entries++;
	if (flags & GDS_PIN) {
		e->idx = GDS_IDX_PINNED;
		e->pins = 1;
		c->st.pinned_bytes += size;
		c->st.pinned_entries++;
	} else {
		heap_push(c, e);
	}
	return over_budget_result(c);
}

void gds_hit(struct gds *c, struct gds_entry *e)
{
	if (!c || !e || !gds_cached(e))
		return;
	c->st.hits++;
	c->st.bytes_hit += e->size;
	if (e->freq < UINT32_MAX)
		e->freq++;
	touch(c, e);	/* (H, seq) only grows, L and freq never fall */
	if (e->idx != GDS_IDX_PINNED)
		sift_down(c, e->idx);
}

int gds_pin(struct gds *c, struct gds_entry *e)
{
	if (!c || !e || !gds_cached(e) || e->pins == UINT32_MAX)
		return -EINVAL;
	if (e->pins++ == 0) {
		heap_delete(c, e);
		e->idx = GDS_IDX_PINNED;
		c->st.pinned_bytes += e->size;
		c->st.pinned_entries++;
	}
	return GDS_OK;
}

int gds_unpin(struct gds *c, struct gds_entry *e)
{
	if (!c || !e || e->idx != GDS_IDX_PINNED || e->pins == 0)
		return -EINVAL;
	if (--e->pins == 0) {
		c->st.pinned_bytes -= e->size;
		c->st.pinned_entries--;
		heap_push(c, e);
		make_room(c, 0);
	}
	return over_budget_result(c);
}

int gds_access(struct gds *c, struct gds_entry *e, uint64_t size,
	       double cost, unsigned flags)
{
	int r;

	if (!c || !e || size == 0 || (flags & ~(GDS_PIN | GDS_FORCE)))
		return -EINVAL;
	if (gds_cached(e) && e->size == size) {
		gds_hit(c, e);
		if (flags & GDS_PIN) {
			r = gds_pin(c, e);
			if (r < 0)
				return r;
		}
		return GDS_HIT;
	}
	if (e->idx == GDS_IDX_PINNED)
		return -EBUSY;	/* stale, but an in-flight response holds it */
	if (gds_cached(e))
		gds_remove(c, e);	/* stale: the object changed size */
	c->st.misses++;
	c->st.bytes_missed += size;
	return gds_insert(c, e, size, cost, flags);
}

int gds_remove(struct gds *c, struct gds_entry *e)
{
	if (!c || !e || !gds_cached(e))
		return -EINVAL;
	if (e->idx == GDS_IDX_PINNED) {
		c->st.pinned_bytes -= e->size;
		c->st.pinned_entries--;
		e->pins = 0;
	} else {
		heap_delete(c, e);
	}
	e->idx = GDS_IDX_NONE;
	c->st.bytes -= e->size;
	c->st.entries--;
	return GDS_OK;
}

int gds_set_budget(struct gds *c, uint64_t budget)
{
	if (!c || budget == 0)
		return -EINVAL;
	c->budget = budget;
	make_room(c, 0);
	return over_budget_result(c);
}

int gds_evict_one(struct gds *c)
{
	if (!c || c->n == 0)
		return -ENOENT;
	evict_root(c);
	return GDS_OK;
}
