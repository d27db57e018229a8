/* test_h2_mem.c - the allocator nghttp2 uses (h2_mem.c): blocks of every
 * size keep their bytes through realloc, calloc zeroes a reused block,
 * blocks given back are reused (up to a bound) and never overlap live
 * ones.  Not built under AddressSanitizer, where there is no such
 * allocator (nghttp2 uses malloc). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "h2_int.h"

static nghttp2_mem *mem_of(void)
{
	nghttp2_mem *m = h2_mem();

	assert_non_null(m);
	return m;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static void check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			fail_msg("byte %zu of %zu changed", i, n);
}

/* Grow one block through every size up to past the largest class: its
 * bytes stay, and it is usable to its new size. */
static void test_realloc_keeps_bytes(void **state)
{
	nghttp2_mem *m = mem_of();
	unsigned char *p = m->malloc(1, m->mem_user_data);
	size_t n = 1;

	(void)state;
	assert_non_null(p);
	fill(p, n, 3);
	while (n < 20000) {
		size_t next = n * 3 / 2 + 1;

		p = m->realloc(p, next, m->mem_user_data);
		assert_non_null(p);
		check(p, n, 3);
		fill(p, next, 3);
		n = next;
	}
	m->free(p, m->mem_user_data);
	m->free(NULL, m->mem_user_data);
}

/* A block given back is dirty; calloc gives it back zeroed. */
static void test_calloc_zeroes_reused(void **state)
{
	nghttp2_mem *m = mem_of();

	(void)state;
	for (size_t size = 1; size <= 5000; size = size * 2 + 3) {
		unsigned char *p = m->malloc(size, m->mem_user_data);

		assert_non_null(p);
		memset(p, 0xa5, size);
		m->free(p, m->mem_user_data);
		p = m->calloc(1, size, m->mem_user_data);
		assert_non_null(p);
		for (size_t i = 0; i < size; i++)
			assert_int_equal(p[i], 0);
		m->free(p, m->mem_user_data);
	}
	assert_null(m->calloc(SIZE_MAX / 2, 4, m->mem_user_data));
}

/* Many live blocks of mixed sizes, freed and taken again in rounds: none
 * overlaps another (each keeps its own pattern to the end). */
static void test_live_blocks_distinct(void **state)
{
	enum { N = 300 };
	nghttp2_mem *m = mem_of();
	unsigned char *p[N];
	size_t size[N];

	(void)state;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++) {
			size[i] = (size_t)(i * 37 % 3000) + 1;
			p[i] = m->malloc(size[i], m->mem_user_data);
			assert_non_null(p[i]);
			fill(p[i], size[i], (unsigned)(i + round));
		}
		for (int i = 0; i < N; i++)
			check(p[i], size[i], (unsigned)(i + round));
		for (int i = 0; i < N; i += 2)
			m->free(p[i], m->mem_user_data);
		for (int i = 1; i < N; i += 2)
			m->free(p[i], m->mem_user_data);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_realloc_keeps_bytes),
		cmocka_unit_test(test_calloc_zeroes_reused),
		cmocka_unit_test(test_live_blocks_distinct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
