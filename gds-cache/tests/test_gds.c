/* test_gds.c - libgds against eviction sequences computed by hand.
 *
 * Sizes are powers of two wherever a tie matters, so every H below is exact
 * in binary floating point and "equal H" really is equal.  Each test's
 * comment carries the hand computation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gds.h"

/* cmocka 1.1 has no assert_double_equal. */
#define assert_double_equal(a, b, eps) do {				\
		double a_ = (a), b_ = (b);				\
		if (!(fabs(a_ - b_) <= (eps)))				\
			fail_msg("%s = %.17g, want %.17g", #a, a_, b_);	\
	} while (0)

/* Objects embed their entry, as zchttpd's cache objects will. */
struct obj {
	char name;
	struct gds_entry e;
};

struct log {
	char seq[64];
	int n;
};

static void record(struct gds_entry *e, void *arg)
{
	struct log *log = arg;
	struct obj *o = (struct obj *)((char *)e - offsetof(struct obj, e));

	assert_false(gds_cached(e));	/* detached before the callback */
	assert_true(log->n < 63);
	log->seq[log->n++] = o->name;
	log->seq[log->n] = '\0';
}

static struct obj objs[26];
static struct log evicted;

static struct obj *O(char name)
{
	return &objs[name - 'A'];
}

static void setup_cache(struct gds *c, uint64_t budget, enum gds_cost cost,
			bool freq)
{
	struct gds_config cfg = {
		.budget = budget, .max_entries = 26, .cost = cost,
		.freq = freq, .evict = record, .evict_arg = &evicted,
	};

	memset(&evicted, 0, sizeof(evicted));
	for (int i = 0; i < 26; i++) {
		objs[i].name = (char)('A' + i);
		gds_entry_init(&objs[i].e);
	}
	assert_int_equal(gds_init(c, &cfg), 0);
}

static int ins(struct gds *c, char name, uint64_t size)
{
	return gds_insert(c, &O(name)->e, size, 0, 0);
}

#define H(name) (O(name)->e.h)

/*
 * GDS(1), budget 10.
 *   A(2) H=.5   B(4) H=.25                        bytes 6
 *   C(5): 11 > 10, evict B (.25), L=.25; C = .25+.2 = .45
 *   hit A: H = .25 + .5 = .75
 *   D(4): 11 > 10, evict C (.45), L=.45; D = .45 + .25 = .70
 *   E(3): 9 fits; E = .45 + 1/3
 *   F(5): 14 > 10, evict D (.70), L=.70 -> 10 fits; F = .90
 * Evictions: B C D.  Kept: A E F.
 */
static void test_gds1_sequence(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 10, GDS_COST_ONE, false);
	assert_int_equal(ins(&c, 'A', 2), GDS_OK);
	assert_int_equal(ins(&c, 'B', 4), GDS_OK);
	assert_double_equal(H('A'), 0.5, 1e-12);
	assert_double_equal(H('B'), 0.25, 1e-12);
	assert_int_equal(ins(&c, 'C', 5), GDS_OK);
	assert_string_equal(evicted.seq, "B");
	assert_double_equal(gds_inflation(&c), 0.25, 1e-12);
	assert_double_equal(H('C'), 0.45, 1e-12);
	gds_hit(&c, &O('A')->e);
	assert_double_equal(H('A'), 0.75, 1e-12);
	assert_int_equal(ins(&c, 'D', 4), GDS_OK);
	assert_string_equal(evicted.seq, "BC");
	assert_double_equal(H('D'), 0.70, 1e-12);
	assert_int_equal(ins(&c, 'E', 3), GDS_OK);
	assert_double_equal(H('E'), 0.45 + 1.0 / 3, 1e-12);
	assert_int_equal(ins(&c, 'F', 5), GDS_OK);
	assert_string_equal(evicted.seq, "BCD");
	assert_double_equal(gds_inflation(&c), 0.70, 1e-12);
	assert_double_equal(H('F'), 0.90, 1e-12);
	assert_true(gds_cached(&O('A')->e) && gds_cached(&O('E')->e) &&
		    gds_cached(&O('F')->e));
	assert_int_equal(gds_stats(&c)->bytes, 10);
	assert_int_equal(gds_stats(&c)->entries, 3);
	assert_int_equal(gds_stats(&c)->evictions, 3);
	assert_int_equal(gds_stats(&c)->bytes_evicted, 4 + 5 + 4);
	assert_int_equal(gds_stats(&c)->hits, 1);
	assert_int_equal(gds_stats(&c)->bytes_hit, 2);
	gds_destroy(&c);
}

/*
 * L inflation ages an untouched object out, and ties go to the older touch.
 * GDS(1), budget 5.
 *   A(1) H=1.    B(4) H=.25                         bytes 5
 *   C(4): evict B, L=.25, C=.5
 *   D(4): evict C, L=.5,  D=.75
 *   E(4): evict D, L=.75, E=1.0      (E now ties with A at 1.0)
 *   F(4): 9 > 5: min H is 1.0 twice; A was touched first -> A, L=1.0;
 *         8 > 5: evict E, L=1.0; F = 1.25
 * Evictions: B C D A E.
 */
static void test_gds1_inflation_and_tie(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 5, GDS_COST_ONE, false);
	assert_int_equal(ins(&c, 'A', 1), GDS_OK);
	assert_int_equal(ins(&c, 'B', 4), GDS_OK);
	assert_int_equal(ins(&c, 'C', 4), GDS_OK);
	assert_int_equal(ins(&c, 'D', 4), GDS_OK);
	assert_int_equal(ins(&c, 'E', 4), GDS_OK);
	assert_string_equal(evicted.seq, "BCD");
	assert_true(H('A') == 1.0 && H('E') == 1.0);	/* an exact tie */
	assert_ptr_equal(gds_peek_victim(&c), &O('A')->e);
	assert_int_equal(ins(&c, 'F', 4), GDS_OK);
	assert_string_equal(evicted.seq, "BCDAE");
	assert_true(gds_inflation(&c) == 1.0);
	assert_true(H('F') == 1.25);
	gds_destroy(&c);
}

/*
 * A hit refreshes the tie-break.  GDS(1), budget 8.
 *   A(4) .25, B(4) .25: A older, so A is the victim.
 *   hit A: H = 0 + .25 = .25 again, but a newer touch: B is the victim.
 *   C(4): evict B.
 */
static void test_tie_refreshed_by_hit(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 8, GDS_COST_ONE, false);
	ins(&c, 'A', 4);
	ins(&c, 'B', 4);
	assert_ptr_equal(gds_peek_victim(&c), &O('A')->e);
	gds_hit(&c, &O('A')->e);
	assert_true(H('A') == H('B'));
	assert_ptr_equal(gds_peek_victim(&c), &O('B')->e);
	ins(&c, 'C', 4);
	assert_string_equal(evicted.seq, "B");
	gds_destroy(&c);
}

/*
 * GDS(packets): cost = 2 + size/536, budget 2000.
 *   A(536)  cost 3       H = 3/536    = .005597
 *   B(1072) cost 4       H = 4/1072   = .003731
 *   C(100)  cost 2.1866  H = 2.1866/100 = .021866           bytes 1708
 *   D(536): 2244 > 2000, evict B, L = 4/1072; D = L + 3/536  = .009328
 *   E(1000): 2172 > 2000, min of A .005597, C .021866, D .009328 -> A,
 *            L = 3/536; E = L + (2 + 1000/536)/1000
 * Evictions: B A.
 */
static void test_gdsp_sequence(void **state)
{
	struct gds c;
	double cost_e = 2.0 + 1000.0 / 536.0;

	(void)state;
	setup_cache(&c, 2000, GDS_COST_PACKETS, false);
	ins(&c, 'A', 536);
	ins(&c, 'B', 1072);
	ins(&c, 'C', 100);
	assert_double_equal(O('A')->e.cost, 3.0, 1e-12);
	assert_double_equal(O('B')->e.cost, 4.0, 1e-12);
	assert_double_equal(H('C'), (2.0 + 100.0 / 536.0) / 100.0, 1e-12);
	assert_int_equal(ins(&c, 'D', 536), GDS_OK);
	assert_string_equal(evicted.seq, "B");
	assert_double_equal(gds_inflation(&c), 4.0 / 1072.0, 1e-12);
	assert_double_equal(H('D'), 4.0 / 1072.0 + 3.0 / 536.0, 1e-12);
	assert_int_equal(ins(&c, 'E', 1000), GDS_OK);
	assert_string_equal(evicted.seq, "BA");
	assert_double_equal(gds_inflation(&c), 3.0 / 536.0, 1e-12);
	assert_double_equal(H('E'), 3.0 / 536.0 + cost_e / 1000.0, 1e-12);
	assert_int_equal(gds_stats(&c)->bytes, 100 + 536 + 1000);
	gds_destroy(&c);
}

/*
 * GDSF: H = L + freq * cost / size, cost 1, budget 8.
 *   A(4), B(4): .25 each.  hit A twice: freq 3, H = .75.  hit B: freq 2, .5
 *   C(4): evict B (.5), L = .5; C = .5 + 1 * .25 = .75   (ties with A)
 *   D(4): A and C at .75, A touched earlier -> evict A, L = .75; D = 1.0
 *   hit C: freq 2, H = .75 + 2 * .25 = 1.25
 *   E(4): evict D (1.0), L = 1.0
 *   B again (4): evict E? E = 1.25 vs C 1.25: C touched earlier -> C.
 *   B comes back with freq 1 (frequency is forgotten on eviction).
 * Evictions: B A D C.
 */
static void test_gdsf_sequence(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 8, GDS_COST_ONE, true);
	ins(&c, 'A', 4);
	ins(&c, 'B', 4);
	gds_hit(&c, &O('A')->e);
	gds_hit(&c, &O('A')->e);
	gds_hit(&c, &O('B')->e);
	assert_int_equal(O('A')->e.freq, 3);
	assert_true(H('A') == 0.75 && H('B') == 0.5);
	ins(&c, 'C', 4);
	assert_string_equal(evicted.seq, "B");
	assert_true(H('C') == 0.75);
	ins(&c, 'D', 4);
	assert_string_equal(evicted.seq, "BA");
	assert_true(H('D') == 1.0);
	gds_hit(&c, &O('C')->e);
	assert_true(H('C') == 1.25);
	ins(&c, 'E', 4);
	assert_string_equal(evicted.seq, "BAD");
	assert_true(H('E') == 1.25);
	ins(&c, 'B', 4);
	assert_string_equal(evicted.seq, "BADC");
	assert_int_equal(O('B')->e.freq, 1);
	assert_true(H('B') == 1.25 + 0.25);
	gds_destroy(&c);
}

/*
 * Caller-supplied cost (e.g. miss latency), budget 8.
 *   A(4) cost 8: H = 2.  B(4) cost 2: H = .5.
 *   C(4) cost 4: evict B (.5); L = .5; C = .5 + 1 = 1.5.
 *   D(4) cost 0: evict C (1.5 < 2); L = 1.5; D = 1.5 + 0 = 1.5.
 */
static void test_caller_cost(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 8, GDS_COST_CALLER, false);
	assert_int_equal(gds_insert(&c, &O('A')->e, 4, 8.0, 0), GDS_OK);
	assert_int_equal(gds_insert(&c, &O('B')->e, 4, 2.0, 0), GDS_OK);
	assert_int_equal(gds_insert(&c, &O('C')->e, 4, 4.0, 0), GDS_OK);
	assert_string_equal(evicted.seq, "B");
	assert_true(H('C') == 1.5);
	assert_int_equal(gds_insert(&c, &O('D')->e, 4, 0.0, 0), GDS_OK);
	assert_string_equal(evicted.seq, "BC");
	assert_true(H('D') == 1.5);
	assert_int_equal(gds_insert(&c, &O('E')->e, 4, NAN, 0), -EINVAL);
	assert_int_equal(gds_insert(&c, &O('E')->e, 4, -1.0, 0), -EINVAL);
	assert_int_equal(gds_insert(&c, &O('E')->e, 4, INFINITY, 0), -EINVAL);
	gds_destroy(&c);
}

/*
 * Pinning, GDS(1), budget 8.
 *   A(4) .25, B(4) .25; pin A.  A is the least valuable but pinned.
 *   C(4): evict B (not A); L = .25; C = .5
 *   D(8): pinned 4 + 8 > 8: -ENOSPC, nothing evicted.
 *   D(4): evict C; L = .5; D = .75.  pin D.  Everything is pinned.
 *   E(4): -ENOSPC.  With GDS_FORCE: in, GDS_OVER_BUDGET, 12 bytes.
 *         E = .5 + .25 = .75 (ties with D; D touched earlier)
 *   unpin D: over budget, heap {D .75, E .75} -> evict D (older); fits.
 *   unpin A: A keeps its old H .25 (a pin protects, it does not refresh).
 *   F(4): evict A.  L stays .75: L never decreases, even when an entry
 *         that was pinned comes back below it.
 * Evictions: B C D A.
 */
static void test_pinning(void **state)
{
	struct gds c;
	const struct gds_stats *st = gds_stats(&c);

	(void)state;
	setup_cache(&c, 8, GDS_COST_ONE, false);
	ins(&c, 'A', 4);
	ins(&c, 'B', 4);
	assert_int_equal(gds_pin(&c, &O('A')->e), GDS_OK);
	assert_int_equal(st->pinned_bytes, 4);
	assert_int_equal(st->pinned_entries, 1);
	assert_int_equal(ins(&c, 'C', 4), GDS_OK);
	assert_string_equal(evicted.seq, "B");

	assert_int_equal(ins(&c, 'D', 8), -ENOSPC);
	assert_string_equal(evicted.seq, "B");	/* nothing lost for nothing */
	assert_true(gds_cached(&O('C')->e));
	assert_int_equal(st->not_admitted, 1);

	assert_int_equal(ins(&c, 'D', 4), GDS_OK);
	assert_string_equal(evicted.seq, "BC");
	assert_true(H('D') == 0.75);
	assert_int_equal(gds_pin(&c, &O('D')->e), GDS_OK);
	assert_null(gds_peek_victim(&c));
	assert_int_equal(gds_evict_one(&c), -ENOENT);

	assert_int_equal(ins(&c, 'E', 4), -ENOSPC);
	assert_int_equal(gds_insert(&c, &O('E')->e, 4, 0, GDS_FORCE), GDS_OVER_BUDGET);
	assert_int_equal(st->bytes, 12);
	assert_int_equal(gds_over_budget(&c), 4);
	assert_int_equal(st->over_budget, 1);
	assert_true(H('E') == 0.75);

	assert_int_equal(gds_unpin(&c, &O('D')->e), GDS_OK);
	assert_string_equal(evicted.seq, "BCD");
	assert_int_equal(gds_over_budget(&c), 0);
	assert_int_equal(gds_unpin(&c, &O('A')->e), GDS_OK);
	assert_true(H('A') == 0.25);
	assert_int_equal(st->pinned_entries, 0);
	assert_int_equal(ins(&c, 'F', 4), GDS_OK);
	assert_string_equal(evicted.seq, "BCDA");
	assert_true(gds_inflation(&c) == 0.75);
	assert_true(H('F') == 1.0);
	gds_destroy(&c);
}

/* Pins nest; unpin reports a cache still over budget; hits on a pinned
 * entry refresh it in place. */
static void test_pin_nesting_and_over_budget(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 8, GDS_COST_ONE, false);
	ins(&c, 'A', 4);
	assert_int_equal(gds_pin(&c, &O('A')->e), GDS_OK);
	assert_int_equal(gds_pin(&c, &O('A')->e), GDS_OK);
	assert_int_equal(O('A')->e.pins, 2);
	assert_int_equal(gds_unpin(&c, &O('A')->e), GDS_OK);
	assert_int_equal(O('A')->e.idx, GDS_IDX_PINNED);
	assert_int_equal(gds_stats(&c)->pinned_bytes, 4);
	gds_hit(&c, &O('A')->e);	/* pinned hit: counted, refreshed */
	assert_int_equal(gds_stats(&c)->hits, 1);
	assert_int_equal(O('A')->e.freq, 2);

	/* B pinned and forced over budget together with A. */
	assert_int_equal(gds_insert(&c, &O('B')->e, 8, 0, GDS_PIN | GDS_FORCE),
			 GDS_OVER_BUDGET);
	assert_int_equal(gds_stats(&c)->bytes, 12);
	/* Last pin of A goes, A is evictable: evicted to get back in budget
	 * -- but B alone is 8: fits after A leaves. */
	assert_int_equal(gds_unpin(&c, &O('A')->e), GDS_OK);
	assert_string_equal(evicted.seq, "A");
	/* Shrinking the budget below the pinned B is reported. */
	assert_int_equal(gds_set_budget(&c, 4), GDS_OVER_BUDGET);
	assert_int_equal(gds_over_budget(&c), 4);
	assert_int_equal(gds_unpin(&c, &O('B')->e), GDS_OK);
	assert_string_equal(evicted.seq, "AB");
	assert_int_equal(gds_stats(&c)->bytes, 0);
	assert_int_equal(gds_unpin(&c, &O('B')->e), -EINVAL);
	gds_destroy(&c);
}

/* gds_access: hit and miss accounting, stale sizes, GDS_PIN on a hit. */
static void test_access(void **state)
{
	struct gds c;
	const struct gds_stats *st = gds_stats(&c);

	(void)state;
	setup_cache(&c, 16, GDS_COST_ONE, false);
	assert_int_equal(gds_access(&c, &O('A')->e, 4, 0, 0), GDS_OK);
	assert_int_equal(gds_access(&c, &O('A')->e, 4, 0, 0), GDS_HIT);
	assert_int_equal(gds_access(&c, &O('A')->e, 8, 0, 0), GDS_OK);	/* changed */
	assert_int_equal(O('A')->e.size, 8);
	assert_int_equal(gds_access(&c, &O('B')->e, 32, 0, 0), -ENOSPC);
	assert_int_equal(st->hits, 1);
	assert_int_equal(st->misses, 3);
	assert_int_equal(st->bytes_hit, 4);
	assert_int_equal(st->bytes_missed, 4 + 8 + 32);
	assert_int_equal(st->bytes, 8);
	assert_int_equal(st->entries, 1);
	assert_int_equal(st->evictions, 0);	/* a stale copy is not an eviction */
	assert_int_equal(gds_access(&c, &O('A')->e, 8, 0, GDS_PIN), GDS_HIT);
	assert_int_equal(O('A')->e.pins, 1);
	assert_int_equal(gds_access(&c, &O('A')->e, 4, 0, 0), -EBUSY);
	assert_int_equal(st->misses, 3);
	assert_int_equal(gds_unpin(&c, &O('A')->e), GDS_OK);
	gds_destroy(&c);
}

/* max_entries is a hard budget too. */
static void test_max_entries(void **state)
{
	struct gds c;
	struct gds_config cfg = {
		.budget = 1000, .max_entries = 2, .cost = GDS_COST_ONE,
		.evict = record, .evict_arg = &evicted,
	};

	(void)state;
	setup_cache(&c, 1000, GDS_COST_ONE, false);
	gds_destroy(&c);
	assert_int_equal(gds_init(&c, &cfg), 0);
	ins(&c, 'A', 2);	/* .5 */
	ins(&c, 'B', 4);	/* .25 */
	ins(&c, 'C', 8);	/* evict B */
	assert_string_equal(evicted.seq, "B");
	gds_pin(&c, &O('A')->e);
	gds_pin(&c, &O('C')->e);
	assert_int_equal(ins(&c, 'D', 1), -ENOSPC);
	assert_int_equal(gds_insert(&c, &O('D')->e, 1, 0, GDS_FORCE), -ENOSPC);
	gds_destroy(&c);
}

static void test_remove_and_bad_args(void **state)
{
	struct gds c;
	struct gds_config cfg = { .budget = 0, .max_entries = 4 };

	(void)state;
	assert_int_equal(gds_init(&c, &cfg), -EINVAL);
	cfg.budget = 8;
	cfg.max_entries = 0;
	assert_int_equal(gds_init(&c, &cfg), -EINVAL);
	cfg.max_entries = 4;
	cfg.cost = (enum gds_cost)7;
	assert_int_equal(gds_init(&c, &cfg), -EINVAL);
	assert_int_equal(gds_init(NULL, &cfg), -EINVAL);

	setup_cache(&c, 8, GDS_COST_ONE, false);
	assert_int_equal(ins(&c, 'A', 0), -EINVAL);
	assert_int_equal(ins(&c, 'A', 9), -ENOSPC);
	assert_int_equal(ins(&c, 'A', 2), GDS_OK);
	assert_int_equal(ins(&c, 'A', 2), -EINVAL);	/* already cached */
	assert_int_equal(gds_insert(&c, &O('B')->e, 2, 0, 0x80), -EINVAL);
	assert_int_equal(gds_remove(&c, &O('B')->e), -EINVAL);
	assert_int_equal(gds_pin(&c, &O('B')->e), -EINVAL);
	assert_int_equal(gds_unpin(&c, &O('A')->e), -EINVAL);	/* not pinned */
	assert_int_equal(gds_set_budget(&c, 0), -EINVAL);
	ins(&c, 'B', 2);
	gds_pin(&c, &O('B')->e);
	assert_int_equal(gds_remove(&c, &O('A')->e), GDS_OK);
	assert_int_equal(gds_remove(&c, &O('B')->e), GDS_OK);	/* pinned: ok */
	assert_int_equal(gds_stats(&c)->bytes, 0);
	assert_int_equal(gds_stats(&c)->pinned_bytes, 0);
	assert_int_equal(gds_stats(&c)->evictions, 0);
	assert_string_equal(evicted.seq, "");
	gds_hit(&c, &O('A')->e);	/* not cached: ignored */
	assert_int_equal(gds_stats(&c)->hits, 0);
	gds_destroy(&c);
	gds_destroy(NULL);
}

/* The callback may free the object that embeds the entry. */
static void free_obj(struct gds_entry *e, void *arg)
{
	(*(int *)arg)++;
	free((char *)e - offsetof(struct obj, e));
}

static void test_callback_frees(void **state)
{
	struct gds c;
	int freed = 0;
	struct gds_config cfg = {
		.budget = 100, .max_entries = 1000, .cost = GDS_COST_PACKETS,
		.evict = free_obj, .evict_arg = &freed,
	};

	(void)state;
	assert_int_equal(gds_init(&c, &cfg), 0);
	for (int i = 0; i < 500; i++) {
		struct obj *o = malloc(sizeof(*o));

		assert_non_null(o);
		gds_entry_init(&o->e);
		assert_int_equal(gds_insert(&c, &o->e, 1 + (uint64_t)(i * 7) % 30, 0, 0),
				 GDS_OK);
	}
	while (gds_evict_one(&c) == GDS_OK)
		;
	assert_int_equal(freed, 500);
	assert_int_equal(gds_stats(&c)->entries, 0);
	gds_destroy(&c);
}

/* A GDSF cache whose newcomers compete (gds.h, Admission). */
static void setup_competing(struct gds *c, uint64_t budget, uint32_t max)
{
	struct gds_config cfg = {
		.budget = budget, .max_entries = max, .cost = GDS_COST_ONE,
		.freq = true, .compete = true,
		.evict = record, .evict_arg = &evicted,
	};

	memset(&evicted, 0, sizeof(evicted));
	for (int i = 0; i < 26; i++) {
		objs[i].name = (char)('A' + i);
		gds_entry_init(&objs[i].e);
	}
	assert_int_equal(gds_init(c, &cfg), 0);
}

/*
 * Budget 128, H in 128ths.
 *   A 32, B 32            H 4, 4; L 0; 64 bytes
 *   C 128: H 1 (L before evictions is 0), pushed: 192 bytes; the root is
 *          C itself -> not admitted, nothing evicted, L = 1
 *   D 64:  H 1 + 2 = 3; 128 bytes, fits
 *   E 64:  H 3, ties D, newer -> D leaves (L 3), E is in
 *   F 64:  H 3 + 2 = 5 -> E (3) leaves, F is in
 *   G 128: H 3 + 1 = 4 -> A (4, older) and B (4) leave, then G is the root:
 *          not admitted, L 4.  A and B are lost all the same (libCacheSim
 *          does the same), F stays.
 * Without compete C would have been admitted, evicting A and B.
 */
static void test_compete_sequence(void **state)
{
	struct gds c;

	(void)state;
	setup_competing(&c, 128, 26);
	assert_int_equal(ins(&c, 'A', 32), GDS_OK);
	assert_int_equal(ins(&c, 'B', 32), GDS_OK);
	assert_int_equal(ins(&c, 'C', 128), -ENOSPC);
	assert_false(gds_cached(&O('C')->e));
	assert_string_equal(evicted.seq, "");
	assert_double_equal(gds_inflation(&c), 1.0 / 128, 0);
	assert_int_equal(gds_stats(&c)->not_admitted, 1);
	assert_int_equal(gds_stats(&c)->bytes, 64);
	assert_int_equal(ins(&c, 'D', 64), GDS_OK);
	assert_double_equal(H('D'), 3.0 / 128, 0);
	assert_int_equal(ins(&c, 'E', 64), GDS_OK);
	assert_string_equal(evicted.seq, "D");
	assert_int_equal(ins(&c, 'F', 64), GDS_OK);
	assert_string_equal(evicted.seq, "DE");
	assert_double_equal(H('F'), 5.0 / 128, 0);
	assert_int_equal(ins(&c, 'G', 128), -ENOSPC);
	assert_string_equal(evicted.seq, "DEAB");
	assert_double_equal(gds_inflation(&c), 4.0 / 128, 0);
	assert_true(gds_cached(&O('F')->e));
	assert_false(gds_cached(&O('G')->e));
	assert_int_equal(gds_stats(&c)->not_admitted, 2);
	assert_int_equal(gds_stats(&c)->evictions, 4);
	assert_int_equal(gds_stats(&c)->entries, 1);
	assert_int_equal(gds_stats(&c)->bytes, 64);
	/* gds_access counts the miss, and a lost newcomer can come back */
	assert_int_equal(gds_access(&c, &O('G')->e, 64, 0, 0), GDS_OK);
	assert_int_equal(gds_stats(&c)->misses, 1);
	gds_destroy(&c);
}

/* A pinned or forced newcomer does not compete: C is admitted the classic
 * way, evicting A and B, and L is raised before its H is computed. */
static void test_compete_pin_force(void **state)
{
	struct gds c;

	(void)state;
	setup_competing(&c, 128, 26);
	ins(&c, 'A', 32);
	ins(&c, 'B', 32);
	assert_int_equal(gds_insert(&c, &O('C')->e, 128, 0, GDS_PIN), GDS_OK);
	assert_string_equal(evicted.seq, "AB");
	assert_double_equal(H('C'), 4.0 / 128 + 1.0 / 128, 0);
	assert_int_equal(gds_unpin(&c, &O('C')->e), GDS_OK);
	gds_destroy(&c);

	setup_competing(&c, 128, 26);
	ins(&c, 'A', 32);
	ins(&c, 'B', 32);
	assert_int_equal(gds_insert(&c, &O('C')->e, 128, 0, GDS_FORCE), GDS_OK);
	assert_string_equal(evicted.seq, "AB");
	gds_destroy(&c);
}

/* The entry budget competes too: with 2 slots, C (H 1/16) loses to A and
 * B (1/8); D (H 1/16 + 1/4) wins, A (older) leaves. */
static void test_compete_max_entries(void **state)
{
	struct gds c;

	(void)state;
	setup_competing(&c, 1024, 2);
	ins(&c, 'A', 8);
	ins(&c, 'B', 8);
	assert_int_equal(ins(&c, 'C', 16), -ENOSPC);
	assert_string_equal(evicted.seq, "");
	assert_int_equal(ins(&c, 'D', 4), GDS_OK);
	assert_string_equal(evicted.seq, "A");
	assert_int_equal(gds_stats(&c)->entries, 2);
	gds_destroy(&c);
}

/*
 * A competing newcomer that is refused leaves less room in the budget than
 * its own size: it leaves only when it is the least valuable entry and the
 * cache is still over budget with it.  zchttpd relies on this in
 * --page-cache policy: a refused file's pages could be kept only over
 * budget, so they are dropped at once (docs/ARCHITECTURE.md).  Random
 * inserts and hits over the 26 objects, sizes 1..96 under a budget of 128,
 * no pins.
 */
static void test_compete_refusal_leaves_no_room(void **state)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	unsigned refused = 0;
	struct gds c;

	(void)state;
	setup_competing(&c, 128, 26);
	for (int op = 0; op < 20000; op++) {
		struct obj *o;
		uint64_t size;
		int r;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		o = &objs[x % 26];
		if (gds_cached(&o->e)) {
			gds_hit(&c, &o->e);
			continue;
		}
		size = 1 + (x >> 8) % 96;
		memset(&evicted, 0, sizeof(evicted));	/* this insert's */
		r = gds_insert(&c, &o->e, size, 0, 0);
		assert_true(r == GDS_OK || r == -ENOSPC);
		assert_true(gds_stats(&c)->bytes <= 128);
		if (r == -ENOSPC) {
			refused++;
			assert_true(128 - gds_stats(&c)->bytes < size);
		}
	}
	assert_true(refused > 100);	/* the property was exercised */
	gds_destroy(&c);
}

/* cost = size makes every H L + 1: the eviction order is the order of last
 * touch whatever the sizes, i.e. LRU. */
static void test_cost_size_is_lru(void **state)
{
	struct gds c;

	(void)state;
	setup_cache(&c, 100, GDS_COST_SIZE, false);
	ins(&c, 'A', 10);
	ins(&c, 'B', 50);
	ins(&c, 'C', 1);
	gds_hit(&c, &O('A')->e);	/* order now B C A */
	ins(&c, 'D', 39);		/* 100: fits */
	ins(&c, 'E', 30);		/* needs 30: B goes */
	assert_string_equal(evicted.seq, "B");
	ins(&c, 'F', 25);		/* 80 + 25: C (1) and A (10) go */
	assert_string_equal(evicted.seq, "BCA");
	gds_destroy(&c);
}

/* The one table of names gdssim and zchttpd share. */
static void test_policy_table(void **state)
{
	const struct gds_policy *p;
	struct gds_config cfg = { 0 };
	char buf[128];

	(void)state;
	p = gds_policy_find("gdsf");
	assert_non_null(p);
	gds_policy_apply(p, &cfg);
	assert_int_equal(cfg.cost, GDS_COST_ONE);
	assert_true(cfg.freq);
	assert_true(cfg.compete);
	p = gds_policy_find("gdsf-all");
	assert_non_null(p);
	assert_true(p->freq);
	assert_false(p->compete);
	p = gds_policy_find("lru");
	assert_non_null(p);
	assert_int_equal(p->cost, GDS_COST_SIZE);
	p = gds_policy_find("gdsp");
	assert_non_null(p);
	assert_int_equal(p->cost, GDS_COST_PACKETS);
	p = gds_policy_find("gds1");
	assert_non_null(p);
	assert_false(p->freq || p->compete);
	assert_null(gds_policy_find("GDSF"));
	assert_null(gds_policy_find(""));
	assert_null(gds_policy_find(NULL));
	assert_string_equal(gds_policy_names(buf, sizeof(buf), "|"),
			    "gds1|gdsp|gdsf|gdsf-all|lru");
	assert_string_equal(gds_policy_names(buf, 8, ", "), "gds1, g");
}

/* gds_init_in: the heap lives in the caller's memory (zchttpd's shared
 * mapping); the same sequence as test_gds1_sequence, and gds_destroy does
 * not free what it did not allocate (ASan would say so). */
static void test_heap_in_caller_memory(void **state)
{
	struct gds_config cfg = { .budget = 10, .max_entries = 26,
				  .cost = GDS_COST_ONE, .evict = record,
				  .evict_arg = &evicted };
	struct gds_entry *heap[27];
	struct gds c;

	(void)state;
	assert_int_equal(gds_heap_bytes(26), sizeof(heap));
	assert_int_equal(gds_init_in(&c, &cfg, NULL), -EINVAL);
	memset(&evicted, 0, sizeof(evicted));
	for (int i = 0; i < 26; i++)
		gds_entry_init(&objs[i].e);
	assert_int_equal(gds_init_in(&c, &cfg, heap), 0);
	assert_int_equal(ins(&c, 'A', 2), GDS_OK);
	assert_int_equal(ins(&c, 'B', 4), GDS_OK);
	assert_int_equal(ins(&c, 'C', 5), GDS_OK);
	assert_string_equal(evicted.seq, "B");
	/* The root of the caller's heap is the next victim: C (H .45). */
	assert_ptr_equal(heap[0], &O('C')->e);
	assert_ptr_equal(gds_peek_victim(&c), &O('C')->e);
	gds_destroy(&c);
	assert_ptr_equal(c.heap, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gds1_sequence),
		cmocka_unit_test(test_gds1_inflation_and_tie),
		cmocka_unit_test(test_tie_refreshed_by_hit),
		cmocka_unit_test(test_gdsp_sequence),
		cmocka_unit_test(test_gdsf_sequence),
		cmocka_unit_test(test_caller_cost),
		cmocka_unit_test(test_pinning),
		cmocka_unit_test(test_pin_nesting_and_over_budget),
		cmocka_unit_test(test_access),
		cmocka_unit_test(test_max_entries),
		cmocka_unit_test(test_remove_and_bad_args),
		cmocka_unit_test(test_callback_frees),
		cmocka_unit_test(test_compete_sequence),
		cmocka_unit_test(test_compete_pin_force),
		cmocka_unit_test(test_compete_max_entries),
		cmocka_unit_test(test_compete_refusal_leaves_no_room),
		cmocka_unit_test(test_cost_size_is_lru),
		cmocka_unit_test(test_policy_table),
		cmocka_unit_test(test_heap_in_caller_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
