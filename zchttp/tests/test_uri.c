/* test_uri.c - request-target path normalization: decoding, dot-segments,
 * traversal attempts, control bytes, trailing slash, length limit. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "uri.h"

static char out[256];
static struct uri_path up;

static void ok_n(const char *in, size_t n, const char *want, bool slash)
{
	enum uri_error e = uri_normalize_path(in, n, out, sizeof(out), &up);

	if (e != URI_OK)
		fail_msg("'%.*s': error %d (%s), want '%s'", (int)n, in, e,
			 up.why, want);
	if (strcmp(out, want) != 0 || up.len != strlen(want))
		fail_msg("'%.*s' -> '%s', want '%s'", (int)n, in, out, want);
	if (up.trailing_slash != slash)
		fail_msg("'%.*s': trailing_slash %d, want %d", (int)n, in,
			 up.trailing_slash, slash);
}

static void ok(const char *in, const char *want, bool slash)
{
	ok_n(in, strlen(in), want, slash);
}

static void bad_n(const char *in, size_t n, enum uri_error want)
{
	enum uri_error e = uri_normalize_path(in, n, out, sizeof(out), &up);

	if (e != want)
		fail_msg("'%.*s': got %d ('%s'), want %d", (int)n, in, e, out,
			 want);
	assert_non_null(up.why);
	assert_string_equal(out, "");
}

static void bad(const char *in, enum uri_error want)
{
	bad_n(in, strlen(in), want);
}

static void test_basics(void **state)
{
	(void)state;
	ok("/", "", true);
	ok("", "", true);			/* absolute-form without path */
	ok("/index.html", "index.html", false);
	ok("/a/b/c.txt", "a/b/c.txt", false);
	ok("/dir/", "dir", true);
	ok("/a//b///c", "a/b/c", false);
	ok("//", "", true);
	ok("/a/b//", "a/b", true);
	ok("/~user/x+y", "~user/x+y", false);	/* '+' is not a space */
	ok("/caf\xc3\xa9", "caf\xc3\xa9", false);
}

static void test_query_fragment(void **state)
{
	(void)state;
	ok("/a?x=1&y=/../..", "a", false);
	assert_int_equal(up.query_len, strlen("x=1&y=/../.."));
	assert_memory_equal(up.query, "x=1&y=/../..", up.query_len);
	ok("/a#frag?no", "a", false);
	assert_null(up.query);
	ok("/a/?q#f", "a", true);
	assert_int_equal(up.query_len, 1);
	assert_memory_equal(up.query, "q", 1);
	ok("?q", "", true);
	assert_memory_equal(up.query, "q", 1);
	ok("/a?", "a", false);
	assert_non_null(up.query);
	assert_int_equal(up.query_len, 0);
	ok("/%3F", "?", false);			/* decoded '?' is a name */
	assert_null(up.query);
}

static void test_percent(void **state)
{
	(void)state;
	ok("/a%20b", "a b", false);
	ok("/%41%62%63", "Abc", false);
	ok("/%e2%82%ac", "\xe2\x82\xac", false);
	ok("/%25", "%", false);
	ok("/%5C", "\\", false);
	bad("/%", URI_E_BAD);
	bad("/%4", URI_E_BAD);
	bad("/a%4/b", URI_E_BAD);
	bad("/%zz", URI_E_BAD);
	bad("/%g0", URI_E_BAD);
	bad("/% 1", URI_E_BAD);
}

static void test_dot_segments(void **state)
{
	(void)state;
	ok("/a/./b", "a/b", false);
	ok("/a/b/..", "a", true);
	ok("/a/b/../", "a", true);
	ok("/a/.", "a", true);
	ok("/./", "", true);
	ok("/.", "", true);
	ok("/a/..", "", true);
	ok("/a/../b", "b", false);
	ok("/a/b/../../c", "c", false);
	ok("/a/./../b/./c/..", "b", true);
	ok("/...", "...", false);		/* a name, not a dot-segment */
	ok("/..a/a..", "..a/a..", false);
	ok("/.hidden", ".hidden", false);	/* policy is the server's */
	ok("/a/%2e", "a", true);
	ok("/a/%2E%2e/b", "b", false);
}

static void test_traversal(void **state)
{
	(void)state;
	bad("/..", URI_E_BAD);
	bad("/../", URI_E_BAD);
	bad("/../etc/passwd", URI_E_BAD);
	bad("/%2e%2e/etc/passwd", URI_E_BAD);
	bad("/%2E%2E/etc/passwd", URI_E_BAD);
	bad("/%2e./etc/passwd", URI_E_BAD);
	bad("/.%2e/etc/passwd", URI_E_BAD);
	bad("/a/../../b", URI_E_BAD);
	bad("/a/./../../b", URI_E_BAD);
	bad("/a/b/../../../etc", URI_E_BAD);
	bad("//../etc", URI_E_BAD);
	bad("/..%2f..%2fetc/passwd", URI_E_BAD);	/* encoded slash */
	bad("/..%2Fetc", URI_E_BAD);
	bad("/a%2fb", URI_E_BAD);
	/* double encoding decodes once: a literal name, harmless */
	ok("/%252e%252e/etc/passwd", "%2e%2e/etc/passwd", false);
	ok("/%252e%252e%252f", "%2e%2e%2f", false);
	/* an absolute path is made relative */
	ok("//etc/passwd", "etc/passwd", false);
	bad("/%2fetc", URI_E_BAD);
}

static void test_backslash(void **state)
{
	(void)state;
	/* On Linux '\' is an ordinary byte in a name, not a separator. */
	ok("/a\\..\\b", "a\\..\\b", false);
	ok("/..\\", "..\\", false);
	ok("/%5c..%5c", "\\..\\", false);
}

static void test_control_bytes(void **state)
{
	(void)state;
	bad("/a%00", URI_E_BAD);
	bad("/a%00.html", URI_E_BAD);
	bad("/..%00/", URI_E_BAD);
	bad_n("/a\0b", 4, URI_E_BAD);
	bad("/a%0a", URI_E_BAD);
	bad("/a%0D%0Ab", URI_E_BAD);
	bad("/a%1f", URI_E_BAD);
	bad("/a%7f", URI_E_BAD);
	bad("/a\x01", URI_E_BAD);
	bad("/a\x7f", URI_E_BAD);
	bad("/a\tb", URI_E_BAD);
	ok("/a%80", "a\x80", false);
	ok("/a%20", "a ", false);
}

static void test_not_a_path(void **state)
{
	(void)state;
	bad("a/b", URI_E_BAD);
	bad("*", URI_E_BAD);
	bad("http://h/a", URI_E_BAD);
	bad(".", URI_E_BAD);
}

static void test_length_limit(void **state)
{
	char big[400];
	struct uri_path u;
	char small[8];

	(void)state;
	/* "abcdefg" + NUL fits 8 exactly; one more byte does not */
	assert_int_equal(uri_normalize_path("/abcdefg", 8, small, 8, &u), URI_OK);
	assert_string_equal(small, "abcdefg");
	assert_int_equal(uri_normalize_path("/abcdefgh", 9, small, 8, &u),
			 URI_E_TOO_LONG);
	assert_int_equal(uri_normalize_path("/abc/defg", 9, small, 8, &u),
			 URI_E_TOO_LONG);
	assert_int_equal(uri_normalize_path("/abc/def", 8, small, 8, &u), URI_OK);
	/* decoding shrinks: "%41" is one byte */
	assert_int_equal(uri_normalize_path("/%41%41%41%41%41%41%41", 22,
					    small, 8, &u), URI_OK);
	assert_string_equal(small, "AAAAAAA");
	assert_int_equal(uri_normalize_path("/", 1, small, 1, &u), URI_OK);
	assert_int_equal(uri_normalize_path("/", 1, small, 0, &u), URI_E_TOO_LONG);
	assert_int_equal(uri_normalize_path("/a", 2, small, 1, &u), URI_E_TOO_LONG);

	memset(big, 'x', sizeof(big));
	big[0] = '/';
	bad_n(big, sizeof(big), URI_E_TOO_LONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basics),
		cmocka_unit_test(test_query_fragment),
		cmocka_unit_test(test_percent),
		cmocka_unit_test(test_dot_segments),
		cmocka_unit_test(test_traversal),
		cmocka_unit_test(test_backslash),
		cmocka_unit_test(test_control_bytes),
		cmocka_unit_test(test_not_a_path),
		cmocka_unit_test(test_length_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
