/* test_gds_property.c - libgds against a brute-force reference.
 *
 * Random operation sequences (access, insert with and without GDS_FORCE,
 * pin, unpin, remove, budget changes, explicit evictions) run through libgds
 * and through a model that keeps no index at all: it finds the victim by a
 * linear scan for the minimum (H, seq) over the unpinned entries.  After
 * every operation both must agree on the return code, the eviction sequence,
 * L, every entry's H, and the statistics.  Sizes come from a small set of
 * powers of two and small integers so that ties are common.
 *
 * The PRNG is seeded per run; a failure prints the run's seed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gds.h"

#define NOBJ 48
#define RUNS 300
#define OPS 3000

static uint64_t rng_state;

static uint64_t rnd(void)	/* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* ------------------------------------------------------------ reference */

struct ref_obj {
	bool cached;
	uint32_t pins;
	double h, cost;
	uint64_t size, seq;
	uint32_t freq;
};

struct ref {
	struct ref_obj o[NOBJ];
	uint64_t budget, bytes, pinned_bytes, entries, max_entries;
	double L;
	uint64_t seq;
	enum gds_cost cost;
	bool freq;
	struct gds_stats st;
	int evicted[4 * NOBJ * 8];
	int nevicted;
};

static void ref_touch(struct ref *r, struct ref_obj *o)
{
	double f = r->freq ? (double)o->freq : 1.0;

	o->h = r->L + f * o->cost / (double)o->size;	/* as in gds.c */
	o->seq = ++r->seq;
}

static int ref_victim(const struct ref *r)
{
	int best = -1;

	for (int i = 0; i < NOBJ; i++) {
		const struct ref_obj *o = &r->o[i];

		if (!o->cached || o->pins)
			continue;
		if (best < 0 || o->h < r->o[best].h ||
		    (o->h == r->o[best].h && o->seq < r->o[best].seq))
			best = i;
	}
	return best;
}

static bool ref_evict(struct ref *r)
{
	int v = ref_victim(r);

	if (v < 0)
		return false;
	if (r->o[v].h > r->L)
		r->L = r->o[v].h;
	r->o[v].cached = false;
	r->bytes -= r->o[v].size;
	r->entries--;
	r->st.evictions++;
	r->st.bytes_evicted += r->o[v].size;
	r->evicted[r->nevicted++] = v;
	return true;
}

static int ref_over(struct ref *r)
{
	if (r->bytes <= r->budget)
		return GDS_OK;
	r->st.over_budget++;
	return GDS_OVER_BUDGET;
}

static int ref_insert(struct ref *r, int i, uint64_t size, double cost,
		      unsigned flags)
{
	struct ref_obj *o = &r->o[i];
	bool any_unpinned = ref_victim(r) >= 0;

	if (size > r->budget ||
	    (!(flags & GDS_FORCE) && r->pinned_bytes + size > r->budget) ||
	    (r->entries == r->max_entries && !any_unpinned)) {
		r->st.not_admitted++;
		return -ENOSPC;
	}
	while (r->bytes + size > r->budget && ref_evict(r))
		;
	if (r->entries == r->max_entries)
		ref_evict(r);
	o->cached = true;
	o->size = size;
	o->cost = gds_cost_of(r->cost, size, cost);
	o->freq = 1;
	o->pins = (flags & GDS_PIN) ? 1 : 0;
	ref_touch(r, o);
	r->bytes += size;
	r->entries++;
	if (o->pins)
		r->pinned_bytes += size;
	return ref_over(r);
}

static void ref_remove(struct ref *r, int i)
{
	struct ref_obj *o = &r->o[i];

	if (o->pins)
		r->pinned_bytes -= o->size;
	o->pins = 0;
	o->cached = false;
	r->bytes -= o->size;
	r->entries--;
}

static int ref_access(struct ref *r, int i, uint64_t size, double cost,
		      unsigned flags)
{
	struct ref_obj *o = &r->o[i];

	if (o->cached && o->size == size) {
		r->st.hits++;
		r->st.bytes_hit += size;
		o->freq++;
		ref_touch(r, o);
		if (flags & GDS_PIN) {
			if (o->pins++ == 0)
				r->pinned_bytes += o->size;
		}
		return GDS_HIT;
	}
	if (o->cached && o->pins)
		return -EBUSY;
	if (o->cached)
		ref_remove(r, i);
	r->st.misses++;
	r->st.bytes_missed += size;
	return ref_insert(r, i, size, cost, flags);
}

static int ref_unpin(struct ref *r, int i)
{
	struct ref_obj *o = &r->o[i];

	if (!o->cached || o->pins == 0)
		return -EINVAL;
	if (--o->pins == 0) {
		r->pinned_bytes -= o->size;
		while (r->bytes > r->budget && ref_evict(r))
			;
	}
	return ref_over(r);
}

/* --------------------------------------------------------------- driver */

struct sut {
	struct gds c;
	struct gds_entry e[NOBJ];
	int evicted[4 * NOBJ * 8];
	int nevicted;
};

static void on_evict(struct gds_entry *e, void *arg)
{
	struct sut *s = arg;

	s->evicted[s->nevicted++] = (int)(e - s->e);
}

static const uint64_t sizes[] = { 1, 2, 4, 8, 16, 32, 3, 5, 12, 100, 536, 1072 };
static const double costs[] = { 0.0, 1.0, 2.0, 0.5, 7.25 };

static void compare(struct sut *s, struct ref *r, uint64_t seed, int op)
{
	const struct gds_stats *a = gds_stats(&s->c);
	char where[96];

	snprintf(where, sizeof(where), "seed %llu op %d",
		 (unsigned long long)seed, op);
	if (s->nevicted != r->nevicted ||
	    memcmp(s->evicted, r->evicted, sizeof(int) * (size_t)r->nevicted) != 0)
		fail_msg("%s: eviction sequences differ (%d vs %d evictions, first %d vs %d)",
			 where, s->nevicted, r->nevicted,
			 s->nevicted ? s->evicted[0] : -1, r->nevicted ? r->evicted[0] : -1);
	s->nevicted = r->nevicted = 0;
	if (gds_inflation(&s->c) != r->L)
		fail_msg("%s: L %.17g vs reference %.17g", where,
			 gds_inflation(&s->c), r->L);
	for (int i = 0; i < NOBJ; i++) {
		if (gds_cached(&s->e[i]) != r->o[i].cached)
			fail_msg("%s: object %d cached %d vs %d", where, i,
				 gds_cached(&s->e[i]), r->o[i].cached);
		if (r->o[i].cached &&
		    (s->e[i].h != r->o[i].h || s->e[i].pins != r->o[i].pins ||
		     s->e[i].seq != r->o[i].seq))
			fail_msg("%s: object %d state differs", where, i);
	}
	if (a->hits != r->st.hits || a->misses != r->st.misses ||
	    a->bytes_hit != r->st.bytes_hit || a->bytes_missed != r->st.bytes_missed ||
	    a->evictions != r->st.evictions || a->bytes_evicted != r->st.bytes_evicted ||
	    a->not_admitted != r->st.not_admitted || a->over_budget != r->st.over_budget ||
	    a->bytes != r->bytes || a->entries != r->entries ||
	    a->pinned_bytes != r->pinned_bytes)
		fail_msg("%s: statistics differ", where);
}

static void one_run(uint64_t seed)
{
	static struct sut s;
	static struct ref r;
	struct gds_config cfg;
	int ret_s, ret_r;

	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	memset(&s, 0, sizeof(s));
	memset(&r, 0, sizeof(r));
	cfg = (struct gds_config){
		.budget = 16 + below(400),
		.max_entries = below(4) == 0 ? 4 + below(12) : NOBJ,
		.cost = (enum gds_cost)below(3),
		.freq = below(2),
		.evict = on_evict,
		.evict_arg = &s,
	};
	assert_int_equal(gds_init(&s.c, &cfg), 0);
	for (int i = 0; i < NOBJ; i++)
		gds_entry_init(&s.e[i]);
	r.budget = cfg.budget;
	r.max_entries = cfg.max_entries;
	r.cost = cfg.cost;
	r.freq = cfg.freq;

	for (int op = 0; op < OPS; op++) {
		int i = (int)below(NOBJ);
		unsigned k = below(100);
		/* Sizes: mostly stable per object, sometimes changed. */
		uint64_t size = below(10) ? sizes[i % 12] : sizes[below(12)];
		double cost = costs[below(5)];

		if (k < 60) {
			unsigned flags = below(8) == 0 ? GDS_PIN : 0;

			if (below(20) == 0)
				flags |= GDS_FORCE;
			ret_s = gds_access(&s.c, &s.e[i], size, cost, flags);
			ret_r = ref_access(&r, i, size, cost, flags);
		} else if (k < 68) {
			ret_s = gds_cached(&s.e[i]) ? -EINVAL
				: gds_insert(&s.c, &s.e[i], size, cost, GDS_FORCE);
			ret_r = r.o[i].cached ? -EINVAL
				: ref_insert(&r, i, size, cost, GDS_FORCE);
		} else if (k < 78) {
			ret_s = gds_pin(&s.c, &s.e[i]);
			ret_r = -EINVAL;
			if (r.o[i].cached) {
				if (r.o[i].pins++ == 0)
					r.pinned_bytes += r.o[i].size;
				ret_r = GDS_OK;
			}
		} else if (k < 92) {
			ret_s = gds_unpin(&s.c, &s.e[i]);
			ret_r = ref_unpin(&r, i);
		} else if (k < 96) {
			ret_s = gds_remove(&s.c, &s.e[i]);
			ret_r = -EINVAL;
			if (r.o[i].cached) {
				ref_remove(&r, i);
				ret_r = GDS_OK;
			}
		} else if (k < 98) {
			uint64_t b = 8 + below(500);

			ret_s = gds_set_budget(&s.c, b);
			r.budget = b;
			while (r.bytes > r.budget && ref_evict(&r))
				;
			ret_r = ref_over(&r);
		} else {
			ret_s = gds_evict_one(&s.c);
			ret_r = ref_evict(&r) ? GDS_OK : -ENOENT;
		}
		if (ret_s != ret_r)
			fail_msg("seed %llu op %d (kind %u, object %d): libgds returned %d, reference %d",
				 (unsigned long long)seed, op, k, i, ret_s, ret_r);
		compare(&s, &r, seed, op);
	}
	gds_destroy(&s.c);
}

static void test_random_traces_match_reference(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= RUNS; seed++)
		one_run(seed);
}

/* A long plain replay (no pins) with many objects: the heap at depth. */
static void test_long_replay(void **state)
{
	enum { N = 2000, STEPS = 60000 };
	static struct gds_entry e[N];
	static struct ref_obj o[N];
	static uint64_t size_of[N];
	struct gds c;
	struct gds_config cfg = { .budget = 50000, .max_entries = N,
				  .cost = GDS_COST_PACKETS, .freq = true };
	double L = 0;
	uint64_t seq = 0;

	(void)state;
	rng_state = 12345;
	assert_int_equal(gds_init(&c, &cfg), 0);
	for (int i = 0; i < N; i++) {
		gds_entry_init(&e[i]);
		o[i] = (struct ref_obj){ 0 };
		size_of[i] = 1 + below(2000);
	}
	for (int step = 0; step < STEPS; step++) {
		/* skewed: low ids are popular */
		int i = (int)(below(N) * (uint64_t)below(N) / N);
		uint64_t s = size_of[i];
		int r = gds_access(&c, &e[i], s, 0, 0);

		/* reference: evict by scan while needed, mirror the access */
		if (o[i].cached) {
			assert_int_equal(r, GDS_HIT);
			o[i].freq++;
		} else {
			assert_int_equal(r, GDS_OK);
			uint64_t bytes = 0;

			for (int j = 0; j < N; j++)
				bytes += o[j].cached ? o[j].size : 0;
			while (bytes + s > cfg.budget) {
				int v = -1;

				for (int j = 0; j < N; j++)
					if (o[j].cached && (v < 0 || o[j].h < o[v].h ||
					    (o[j].h == o[v].h && o[j].seq < o[v].seq)))
						v = j;
				o[v].cached = false;
				bytes -= o[v].size;
				L = o[v].h;
				assert_false(gds_cached(&e[v]));
			}
			o[i] = (struct ref_obj){ .cached = true, .size = s,
						 .cost = 2.0 + (double)s / 536.0,
						 .freq = 1 };
		}
		o[i].h = L + (double)o[i].freq * o[i].cost / (double)s;
		o[i].seq = ++seq;
		assert_true(e[i].h == o[i].h);
	}
	for (int j = 0; j < N; j++)
		assert_int_equal(gds_cached(&e[j]), o[j].cached);
	gds_destroy(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_traces_match_reference),
		cmocka_unit_test(test_long_replay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
