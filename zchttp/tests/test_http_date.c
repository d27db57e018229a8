/* test_http_date.c - HTTP-date: the three forms, calendar validity, the
 * RFC 850 century rule, formatting, and a cross-check against gmtime_r. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "http_parser.h"

/* 2025-01-01T00:00:00Z: a fixed "now" for the RFC 850 century rule */
#define NOW 1735689600

static int64_t parse_ok(const char *s)
{
	int64_t t = 0;

	if (http_date_parse_at(s, strlen(s), NOW, &t) != 0)
		fail_msg("'%s' did not parse", s);
	return t;
}

static void parse_bad(const char *s)
{
	int64_t t = 42;

	if (http_date_parse_at(s, strlen(s), NOW, &t) == 0)
		fail_msg("'%s' parsed as %lld", s, (long long)t);
	assert_int_equal(t, 42);	/* untouched */
}

static void test_three_forms(void **state)
{
	int64_t t;

	(void)state;
	/* RFC 9110 5.6.7's own example, in all three forms */
	assert_int_equal(parse_ok("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
	assert_int_equal(parse_ok("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
	assert_int_equal(parse_ok("Sun Nov  6 08:49:37 1994"), 784111777);
	assert_int_equal(parse_ok("Sun Nov 06 08:49:37 1994"), 784111777);
	assert_int_equal(parse_ok("Wed Nov 16 08:49:37 1994"), 784111777 + 10 * 86400);
	/* the clock-using entry point agrees for unambiguous forms */
	assert_int_equal(http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", 29, &t), 0);
	assert_int_equal(t, 784111777);
}

static void test_epoch_edges(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
	assert_int_equal(parse_ok("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
	assert_int_equal(parse_ok("Tue, 19 Jan 2038 03:14:08 GMT"), 2147483648LL);
	assert_int_equal(parse_ok("Fri, 31 Dec 9999 23:59:59 GMT"), 253402300799LL);
	assert_int_equal(parse_ok("Sat, 01 Jan 0000 00:00:00 GMT"), -62167219200LL);
	/* leap second: counted as the next second */
	assert_int_equal(parse_ok("Sat, 31 Dec 2016 23:59:60 GMT"),
			 parse_ok("Sun, 01 Jan 2017 00:00:00 GMT"));
}

static void test_calendar(void **state)
{
	(void)state;
	parse_ok("Tue, 29 Feb 2000 00:00:00 GMT");
	parse_ok("Thu, 29 Feb 2024 00:00:00 GMT");
	parse_bad("Thu, 29 Feb 1900 00:00:00 GMT");
	parse_bad("Wed, 29 Feb 2023 00:00:00 GMT");
	parse_bad("Wed, 30 Feb 2000 00:00:00 GMT");
	parse_bad("Wed, 31 Apr 2024 00:00:00 GMT");
	parse_bad("Wed, 00 Apr 2024 00:00:00 GMT");
	parse_bad("Wed, 32 Jan 2024 00:00:00 GMT");
	parse_bad("Wed, 10 Jan 2024 24:00:00 GMT");
	parse_bad("Wed, 10 Jan 2024 23:60:00 GMT");
	parse_bad("Wed, 10 Jan 2024 23:59:61 GMT");
}

static void test_strict_grammar(void **state)
{
	(void)state;
	parse_bad("");
	parse_bad("Sun, 06 Nov 1994 08:49:37 gmt");
	parse_bad("Sun, 06 Nov 1994 08:49:37 UTC");
	parse_bad("Sun, 06 Nov 1994 08:49:37 GMT ");
	parse_bad(" Sun, 06 Nov 1994 08:49:37 GMT");
	parse_bad("Sun, 06 Nov 1994 08:49:37");
	parse_bad("Sun, 6 Nov 1994 08:49:37 GMT");
	parse_bad("Sun, 06 nov 1994 08:49:37 GMT");
	parse_bad("Sun, 06 Nov 94 08:49:37 GMT");
	parse_bad("Sun, 06 Nov 1994 8:49:37 GMT");
	parse_bad("Sun, 06 Nov 1994 08.49.37 GMT");
	parse_bad("Foo, 06 Nov 1994 08:49:37 GMT");
	parse_bad("Sun, 06 Xyz 1994 08:49:37 GMT");
	parse_bad("Sun, 06 Nov 19x4 08:49:37 GMT");
	parse_bad("Sun, 06 Nov -994 08:49:37 GMT");
	parse_bad("Sunday, 06-Nov-1994 08:49:37 GMT");
	parse_bad("Sun, 06-Nov-94 08:49:37 GMT");
	parse_bad("Sonday, 06-Nov-94 08:49:37 GMT");
	parse_bad("Sunday, 06 Nov 94 08:49:37 GMT");
	parse_bad("Sun Nov  6 08:49:37 1994 ");
	parse_bad("Sun Nov 6 08:49:37 1994");
	parse_bad("Sun Nov  6 08:49:37 94");
	parse_bad("Sun Nov   6 08:49:37 1994");
	parse_bad("1994-11-06T08:49:37Z");
	parse_bad("784111777");
}

static void test_rfc850_century(void **state)
{
	(void)state;
	/* now is 2025: up to 50 years ahead stays in this century */
	assert_int_equal(parse_ok("Monday, 01-Jan-25 00:00:00 GMT"),
			 parse_ok("Wed, 01 Jan 2025 00:00:00 GMT"));
	assert_int_equal(parse_ok("Tuesday, 01-Jan-75 00:00:00 GMT"),
			 parse_ok("Tue, 01 Jan 2075 00:00:00 GMT"));
	assert_int_equal(parse_ok("Thursday, 01-Jan-76 00:00:00 GMT"),
			 parse_ok("Thu, 01 Jan 1976 00:00:00 GMT"));
	assert_int_equal(parse_ok("Thursday, 01-Jan-70 00:00:00 GMT"),
			 parse_ok("Thu, 01 Jan 2070 00:00:00 GMT"));
	assert_int_equal(parse_ok("Friday, 31-Dec-99 23:59:59 GMT"),
			 parse_ok("Fri, 31 Dec 1999 23:59:59 GMT"));
}

static void test_format(void **state)
{
	char buf[HTTP_DATE_LEN + 1];

	(void)state;
	assert_int_equal(http_date_format(0, buf), HTTP_DATE_LEN);
	assert_string_equal(buf, "Thu, 01 Jan 1970 00:00:00 GMT");
	http_date_format(784111777, buf);
	assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
	http_date_format(-1, buf);
	assert_string_equal(buf, "Wed, 31 Dec 1969 23:59:59 GMT");
	http_date_format(951782400, buf);
	assert_string_equal(buf, "Tue, 29 Feb 2000 00:00:00 GMT");
	http_date_format(253402300799LL, buf);
	assert_string_equal(buf, "Fri, 31 Dec 9999 23:59:59 GMT");
	http_date_format(-62167219200LL, buf);
	assert_string_equal(buf, "Sat, 01 Jan 0000 00:00:00 GMT");
	assert_int_equal(http_date_format(253402300800LL, buf), 0);
	assert_int_equal(http_date_format(-62167219201LL, buf), 0);
	assert_int_equal(http_date_format(INT64_MAX, buf), 0);
	assert_int_equal(http_date_format(INT64_MIN, buf), 0);
}

/* Our calendar against the C library's, over 1900..2200, plus the round
 * trip format -> parse. */
static void test_against_gmtime(void **state)
{
	static const char *const wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu",
					  "Fri", "Sat" };
	static const char *const mo[] = { "Jan", "Feb", "Mar", "Apr", "May",
					  "Jun", "Jul", "Aug", "Sep", "Oct",
					  "Nov", "Dec" };
	char buf[HTTP_DATE_LEN + 1], want[64];
	int64_t t, back;
	struct tm tm;
	time_t tt;

	(void)state;
	for (t = -2208988800LL; t < 7258118400LL; t += 86400 * 7 + 3607) {
		tt = (time_t)t;
		assert_non_null(gmtime_r(&tt, &tm));
		snprintf(want, sizeof(want), "%s, %02d %s %04d %02d:%02d:%02d GMT",
			 wd[tm.tm_wday], tm.tm_mday, mo[tm.tm_mon],
			 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
		assert_int_equal(http_date_format(t, buf), HTTP_DATE_LEN);
		assert_string_equal(buf, want);
		assert_int_equal(http_date_parse_at(buf, HTTP_DATE_LEN, NOW, &back), 0);
		assert_int_equal(back, t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_forms),
		cmocka_unit_test(test_epoch_edges),
		cmocka_unit_test(test_calendar),
		cmocka_unit_test(test_strict_grammar),
		cmocka_unit_test(test_rfc850_century),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_against_gmtime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
