/* test_http_accept.c - Accept-Encoding: q-values, "*", aliases, case,
 * parameters, and elements that are not well formed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "http_accept.h"

static struct http_codings parse(const char *s)
{
	struct http_codings c;

	memset(&c, 0xff, sizeof(c));	/* every field must be written */
	http_accept_encoding(s, strlen(s), &c);
	return c;
}

#define EXPECT(s, b, g) do { \
	struct http_codings c_ = parse(s); \
	assert_int_equal(c_.br, (b)); \
	assert_int_equal(c_.gzip, (g)); \
} while (0)

static void test_common_values(void **state)
{
	(void)state;
	EXPECT("", 0, 0);
	EXPECT("gzip, deflate, br", 1000, 1000);	/* curl --compressed */
	EXPECT("gzip, deflate, br, zstd", 1000, 1000);	/* browsers */
	EXPECT("gzip", 0, 1000);
	EXPECT("identity", 0, 0);
	EXPECT("br;q=0.8, gzip;q=0.9", 800, 900);
	EXPECT("BR, X-GZIP", 1000, 1000);
	EXPECT("x-gzip;q=0.5", 0, 500);
}

static void test_q_values(void **state)
{
	(void)state;
	EXPECT("br;q=0, gzip", 0, 1000);		/* q=0: refused */
	EXPECT("br;q=1.000", 1000, 0);
	EXPECT("br;q=0.001", 1, 0);
	EXPECT("br;q=0.5;foo=bar", 500, 0);
	EXPECT("br; Q=0.25", 250, 0);
	EXPECT("br;q=1.5, gzip", 0, 1000);	/* bad q: element ignored */
	EXPECT("br;q=0.1234, gzip", 0, 1000);
	EXPECT("br;q=1.001, gzip", 0, 1000);
	EXPECT("br;q=, gzip", 0, 1000);
	EXPECT("br;q=.5, gzip", 0, 1000);
	EXPECT("br;level=\"a,b;q=1\";q=0.3", 0, 0);	/* comma splits the
							 * quoted string: both
							 * halves are broken */
	EXPECT("br;level=\"x\";q=0.3", 300, 0);
}

static void test_star(void **state)
{
	(void)state;
	EXPECT("*", 1000, 1000);
	EXPECT("*;q=0.1, gzip", 100, 1000);
	EXPECT("*;q=0, gzip", 0, 1000);
	EXPECT("br;q=0, *", 0, 1000);	/* named wins over * */
}

static void test_malformed(void **state)
{
	(void)state;
	EXPECT(",,, ,gzip,,", 0, 1000);
	EXPECT("gz ip, br", 1000, 0);
	EXPECT("gzip;, br", 1000, 0);
	EXPECT("@@@, br", 1000, 0);
	EXPECT("gzip;q=0.5 x", 0, 0);
	/* Only the bytes given are read: "gzip" cut to "gz". */
	{
		struct http_codings c;

		http_accept_encoding("gzip", 2, &c);
		assert_int_equal(c.gzip, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common_values),
		cmocka_unit_test(test_q_values),
		cmocka_unit_test(test_star),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
