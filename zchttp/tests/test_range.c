/* test_range.c - single byte-range parsing: the three forms, clamping,
 * unsatisfiable ranges, several ranges, syntax errors, 64-bit edges. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "http_parser.h"

static void range(const char *v, uint64_t size, enum http_range_result want,
		  uint64_t want_start, uint64_t want_len)
{
	uint64_t start = 12345, len = 67890;
	enum http_range_result r = http_range_parse(v, strlen(v), size, &start,
						    &len);

	if (r != want)
		fail_msg("'%s' size %llu: got %d, want %d", v,
			 (unsigned long long)size, r, want);
	if (r == HTTP_RANGE_OK &&
	    (start != want_start || len != want_len))
		fail_msg("'%s' size %llu: got %llu+%llu, want %llu+%llu", v,
			 (unsigned long long)size, (unsigned long long)start,
			 (unsigned long long)len,
			 (unsigned long long)want_start,
			 (unsigned long long)want_len);
}

#define OK(v, size, s, l)	range(v, size, HTTP_RANGE_OK, s, l)
#define IGNORE(v, size)		range(v, size, HTTP_RANGE_IGNORE, 0, 0)
#define UNSAT(v, size)		range(v, size, HTTP_RANGE_UNSATISFIABLE, 0, 0)

static void test_forms(void **state)
{
	(void)state;
	OK("bytes=0-9", 100, 0, 10);
	OK("bytes=0-0", 100, 0, 1);
	OK("bytes=99-99", 100, 99, 1);
	OK("bytes=10-", 100, 10, 90);
	OK("bytes=99-", 100, 99, 1);
	OK("bytes=-10", 100, 90, 10);
	OK("bytes=-1", 100, 99, 1);
	OK("Bytes=1-2", 100, 1, 2);
	OK("BYTES=1-2", 100, 1, 2);
	OK("bytes= 1 - 2 ", 100, 1, 2);
	OK("bytes=\t-5", 100, 95, 5);
}

static void test_clamp(void **state)
{
	(void)state;
	OK("bytes=0-999", 100, 0, 100);
	OK("bytes=50-100", 100, 50, 50);
	OK("bytes=-100", 100, 0, 100);
	OK("bytes=-1000", 100, 0, 100);
}

static void test_unsatisfiable(void **state)
{
	(void)state;
	UNSAT("bytes=100-", 100);
	UNSAT("bytes=100-200", 100);
	UNSAT("bytes=5-3", 100);
	UNSAT("bytes=-0", 100);
	UNSAT("bytes=500-600,700-800", 100);
	UNSAT("bytes=1-", 1);
	UNSAT("bytes=5-", 0);
}

static void test_empty_file(void **state)
{
	(void)state;
	/* nginx sends an empty file whole (200) */
	IGNORE("bytes=0-", 0);
	IGNORE("bytes=0-10", 0);
	IGNORE("bytes=-5", 0);
	IGNORE("bytes=-0", 0);
}

static void test_unit(void **state)
{
	(void)state;
	IGNORE("items=0-1", 100);
	IGNORE("bytes 0-1", 100);
	IGNORE("bytesx=0-1", 100);
	IGNORE("byte=0-1", 100);
	IGNORE("", 100);
	IGNORE("bytes", 100);
	IGNORE("bytes\x1d""0-1", 100);
}

static void test_several(void **state)
{
	(void)state;
	IGNORE("bytes=0-1,5-6", 100);
	IGNORE("bytes=0-1, -5", 100);
	IGNORE("bytes=0-0,0-0", 100);
	/* only one satisfiable: serve that one (nginx, max_ranges 1) */
	OK("bytes=0-1,500-600", 100, 0, 2);
	OK("bytes=500-600, 3-4", 100, 3, 2);
}

static void test_syntax(void **state)
{
	(void)state;
	UNSAT("bytes=", 100);
	UNSAT("bytes=a-b", 100);
	UNSAT("bytes=1", 100);
	UNSAT("bytes=-", 100);
	UNSAT("bytes=--1", 100);
	UNSAT("bytes=1-2-3", 100);
	UNSAT("bytes=0-1,", 100);
	UNSAT("bytes=,0-1", 100);
	UNSAT("bytes=+1-2", 100);
	UNSAT("bytes=0x1-2", 100);
	UNSAT("bytes=1-2;x", 100);
	UNSAT("bytes=0-1,x", 100);
}

static void test_64bit(void **state)
{
	const uint64_t max = UINT64_MAX;

	(void)state;
	/* first-pos past any file */
	UNSAT("bytes=99999999999999999999-", 100);
	UNSAT("bytes=18446744073709551615-", 100);
	/* last-pos and suffix too large: to the end (RFC 9110 14.1.1) */
	OK("bytes=0-99999999999999999999", 100, 0, 100);
	OK("bytes=0-18446744073709551615", 100, 0, 100);
	OK("bytes=-99999999999999999999", 100, 0, 100);
	/* the largest file there could be */
	OK("bytes=18446744073709551614-", max, max - 1, 1);
	OK("bytes=0-", max, 0, max);
	OK("bytes=-1", max, max - 1, 1);
	OK("bytes=0-18446744073709551615", max, 0, max);
	UNSAT("bytes=18446744073709551615-", max);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_clamp),
		cmocka_unit_test(test_unsatisfiable),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_unit),
		cmocka_unit_test(test_several),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_64bit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
