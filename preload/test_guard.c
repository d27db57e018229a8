/*
 * test_guard.c - the cost guard (guard.c): its rules on given costs (the
 * warm-up's alternation, the cheaper way per byte with ties to the
 * conversion, probes once warm, the median of the last epochs, costs that
 * change),
 * and the process's guard on calls whose costs the test sets: with the
 * conversion made 3 ms dearer per call (ZC_MAPWRITE_GUARD_TEST), the
 * epochs after the warm-up take the copy but for the probes.  No clock
 * is read for a verdict but the process's own CPU time, which the test
 * makes differ by far more than any noise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "guard.h"

/* costs with n epochs of each way at ref and copy ns per byte */
static struct zcp_guard_costs costs(uint32_t n, double ref, double copy)
{
	struct zcp_guard_costs c = { { { 0 } }, { 0 } };

	for (uint32_t i = 0; i < n; i++) {
		zcp_guard_add(&c, ZCP_WAY_REF, (uint64_t)(ref * 100000), 100000);
		zcp_guard_add(&c, ZCP_WAY_COPY, (uint64_t)(copy * 100000), 100000);
	}
	return c;
}

static void warm_up_alternates_conversion_first(void **state)
{
	struct zcp_guard_costs c = costs(ZCP_GUARD_WARM - 1, 1.0, 5.0);
	bool probe;

	(void)state;
	for (uint32_t k = 1; k <= 6; k++) {
		probe = false;
		assert_int_equal(zcp_guard_epoch_way(&c, k, &probe), (k & 1) ? ZCP_WAY_REF : ZCP_WAY_COPY);
		assert_true(probe);
	}
}

static void cheaper_per_byte_with_ties_to_the_conversion(void **state)
{
	struct zcp_guard_costs c;

	(void)state;
	c = costs(ZCP_GUARD_WARM, 1.0, 1.5);
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_REF);
	c = costs(ZCP_GUARD_WARM, 1.5, 1.0);
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_COPY);
	c = costs(ZCP_GUARD_WARM, 1.01, 1.0); /* within ZCP_GUARD_TIE */
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_REF);
	c = costs(ZCP_GUARD_WARM, 1.05, 1.0);
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_COPY);
	/* per byte, not per epoch: more bytes for the same time is cheaper */
	c = (struct zcp_guard_costs){ { { 0 } }, { 0 } };
	zcp_guard_add(&c, ZCP_WAY_REF, 1000, 2000);
	zcp_guard_add(&c, ZCP_WAY_COPY, 600, 1000);
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_REF);
	/* nothing measured: the conversion */
	c = (struct zcp_guard_costs){ { { 0 } }, { 0 } };
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_REF);
}

/* Once warm: the cheaper way, and one epoch in PROBE the other. */
static void warm_takes_the_cheaper_way_and_probes(void **state)
{
	struct zcp_guard_costs c = costs(ZCP_GUARD_WARM, 2.0, 1.0);
	unsigned ref = 0, n = ZCP_GUARD_PROBE * 10;

	(void)state;
	for (uint32_t k = 1; k <= n; k++) {
		bool probe = false;

		if (zcp_guard_epoch_way(&c, k, &probe) == ZCP_WAY_REF) {
			ref++;
			assert_true(k % ZCP_GUARD_PROBE == 0 && probe);
		} else {
			assert_false(probe);
		}
	}
	assert_int_equal(ref, n / ZCP_GUARD_PROBE);
}

static void median_of_the_last_epochs(void **state)
{
	struct zcp_guard_costs c = { { { 0 } }, { 0 } };

	(void)state;
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 0);
	zcp_guard_add(&c, ZCP_WAY_COPY, 300, 100);
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 3.0);
	zcp_guard_add(&c, ZCP_WAY_COPY, 500, 100);
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 4.0); /* two: their mean */
	zcp_guard_add(&c, ZCP_WAY_COPY, 500, 0);             /* no bytes: nothing */
	assert_int_equal(c.n[ZCP_WAY_COPY], 2);
	zcp_guard_add(&c, ZCP_WAY_COPY, 90000, 100);         /* an outlier */
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 5.0);
	zcp_guard_add(&c, ZCP_WAY_COPY, 400, 100);
	zcp_guard_add(&c, ZCP_WAY_COPY, 350, 100);
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 4.0); /* 3 3.5 4 5 900 */
	for (int i = 0; i < ZCP_GUARD_KEEP; i++)
		zcp_guard_add(&c, ZCP_WAY_COPY, 100, 100);
	assert_true(zcp_guard_cost(&c, ZCP_WAY_COPY) == 1.0); /* only the last 5 count */
	assert_int_equal(c.n[ZCP_WAY_REF], 0);
}

/*
 * The rules over time: the conversion costs 3 ns/B until epoch 300, then
 * 0.5 ns/B; the copy 1 ns/B throughout.  Before the change the copy is
 * taken but for probes; after it, once 3 probes (a majority of the last
 * 5) have moved the conversion's median below the copy's, the conversion.
 */
static void follows_costs_that_change(void **state)
{
	struct zcp_guard_costs c = { { { 0 } }, { 0 } };
	unsigned ref_before = 0, copy_settled = 0;

	(void)state;
	for (uint32_t k = 1; k <= 800; k++) {
		bool probe = false;
		enum zcp_way w = zcp_guard_epoch_way(&c, k, &probe);
		double per_byte = w == ZCP_WAY_COPY ? 1.0 : (k <= 300 ? 3.0 : 0.5);

		zcp_guard_add(&c, w, (uint64_t)(per_byte * 65536), 65536);
		if (k > 2 * ZCP_GUARD_WARM && k <= 300 && w == ZCP_WAY_REF)
			ref_before++;
		if (k > 300 + 4 * ZCP_GUARD_PROBE && w == ZCP_WAY_COPY)
			copy_settled++;
	}
	assert_true(ref_before <= 300 / ZCP_GUARD_PROBE + 1);
	assert_true(copy_settled <= 400 / ZCP_GUARD_PROBE + 1); /* only probes */
	assert_true(copy_settled >= 1);
	assert_int_equal(zcp_guard_cheaper(&c), ZCP_WAY_REF);
}

static void spin_cpu_ns(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec) < ns);
}

/*
 * The process's guard, calls of 64 KiB that each cost 0.3 ms of CPU, the
 * conversion's 3 ms more: 2 epochs of each way, alternating, then the copy
 * but for one epoch in PROBE.
 */
static void the_process_guard_leaves_a_dearer_conversion(void **state)
{
	unsigned ref = 0, copy = 0, calls = (2 * ZCP_GUARD_WARM + 40) * ZCP_GUARD_EPOCH_CALLS;

	(void)state;
	setenv("ZC_MAPWRITE_GUARD_TEST", "ref:3000000", 1);
	for (unsigned i = 0; i < calls; i++) {
		struct zcp_guard_pick p;

		zcp_guard_pick(&p);
		assert_true(p.active);
		if (p.way == ZCP_WAY_REF)
			ref++;
		else
			copy++;
		spin_cpu_ns(300000);
		zcp_guard_done(&p, 65536);
	}
	/* the warm-up's 2 epochs, and at most 2 probe epochs in 40 */
	assert_true(ref >= ZCP_GUARD_WARM * ZCP_GUARD_EPOCH_CALLS);
	assert_true(ref <= (ZCP_GUARD_WARM + 2) * ZCP_GUARD_EPOCH_CALLS);
	assert_true(copy >= calls - (ZCP_GUARD_WARM + 2) * ZCP_GUARD_EPOCH_CALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(warm_up_alternates_conversion_first),
		cmocka_unit_test(cheaper_per_byte_with_ties_to_the_conversion),
		cmocka_unit_test(warm_takes_the_cheaper_way_and_probes),
		cmocka_unit_test(median_of_the_last_epochs),
		cmocka_unit_test(follows_costs_that_change),
		cmocka_unit_test(the_process_guard_leaves_a_dearer_conversion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
