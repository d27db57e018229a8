/* test_respond.c - the start of a response head: status line, Server and
 * Date, from the lines kept from the last head (same status, same second)
 * or formatted anew, and with a reason phrase of the caller's. */
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
#include "respond.h"

/* h holds exactly "HTTP/1.1 <code> <reason>", Server and Date of now. */
static void assert_start(const struct resp_head *h, const char *status_line)
{
	char want[256], date[HTTP_DATE_LEN + 1];
	time_t before = time(NULL);
	int n;

	/* the second may turn between the head and this check */
	for (time_t t = before - 1; t <= before; t++) {
		http_date_format((int64_t)t, date);
		n = snprintf(want, sizeof(want),
			     "%s\r\nServer: zchttpd\r\nDate: %s\r\n",
			     status_line, date);
		if (h->len == (size_t)n && memcmp(h->buf, want, h->len) == 0)
			return;
	}
	fail_msg("head '%.*s', want '%s'", (int)h->len, h->buf, want);
}

static void test_start_lines(void **state)
{
	struct resp_head h = { 0 };

	(void)state;
	resp_begin(&h, 200);
	assert_false(h.overflow);
	assert_start(&h, "HTTP/1.1 200 OK");
	resp_begin(&h, 200);		/* the kept lines */
	assert_start(&h, "HTTP/1.1 200 OK");
	resp_begin(&h, 404);		/* another status: formatted anew */
	assert_start(&h, "HTTP/1.1 404 Not Found");
	resp_begin_reason(&h, 404, "Gone Fishing", 12);	/* the caller's */
	assert_start(&h, "HTTP/1.1 404 Gone Fishing");
	resp_begin(&h, 404);		/* not the caller's reason */
	assert_start(&h, "HTTP/1.1 404 Not Found");
	resp_begin(&h, 431);		/* the longest reason phrase */
	assert_start(&h, "HTTP/1.1 431 Request Header Fields Too Large");
	resp_begin(&h, 299);
	assert_start(&h, "HTTP/1.1 299 Unknown");
}

/* A head begins at the start of its buffer, however much the last one
 * used; a buffer too small for the start lines overflows (500), kept lines
 * or not. */
static void test_room(void **state)
{
	char small[40];
	struct resp_head h = { 0 };

	(void)state;
	resp_begin(&h, 200);
	resp_add(&h, "X", "y");
	resp_begin(&h, 200);
	assert_start(&h, "HTTP/1.1 200 OK");

	for (int i = 0; i < 2; i++) {
		h.buf = small;
		h.cap = sizeof(small);
		resp_begin(&h, 200);
		assert_true(h.overflow);
		resp_begin_reason(&h, 200, "Fine", 4);
		assert_true(h.overflow);
	}
	h.buf = NULL;			/* its local room again */
	resp_begin(&h, 200);
	assert_false(h.overflow);
	assert_ptr_equal(h.buf, h.local);
	assert_start(&h, "HTTP/1.1 200 OK");
}

/* A number field: the same bytes as printf's %llu, 0 and 2^64-1 too. */
static void test_add_num(void **state)
{
	const uint64_t v[] = { 0, 7, 10, 102400, UINT64_MAX };

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct resp_head a = { 0 }, b = { 0 };

		resp_begin(&a, 200);
		resp_begin(&b, 200);
		resp_add_num(&a, "Content-Length", 14, v[i]);
		resp_addf(&b, "Content-Length", "%llu",
			  (unsigned long long)v[i]);
		assert_false(a.overflow);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.buf, b.buf, a.len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_lines),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_add_num),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
