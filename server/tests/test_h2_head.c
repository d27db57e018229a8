/* test_h2_head.c - h2_head_fields: an HTTP/1.1 response head as HTTP/2
 * fields -- names lower-cased (eight bytes at a time, checked here against
 * a byte-by-byte reference at every length and colon position), values
 * untouched, connection fields left out, malformed heads refused; and the
 * lines a head shares with the one before taken from the memo, exactly as
 * if parsed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "h2_int.h"

#define MAX 32

struct parsed {
	char text[2048];
	nghttp2_nv nv[MAX];
	int n, status;
	size_t head_len;
};

static int parse(struct parsed *p, const char *head)
{
	size_t len = strlen(head);

	assert_true(len < sizeof(p->text));
	memcpy(p->text, head, len);
	p->head_len = 0;
	p->n = h2_head_fields(p->text, len, p->nv, MAX, &p->status,
			      &p->head_len);
	return p->n;
}

static void expect_nv(const nghttp2_nv *nv, const char *name,
		      const char *value)
{
	if (nv->namelen != strlen(name) || memcmp(nv->name, name, nv->namelen))
		fail_msg("name '%.*s', want '%s'", (int)nv->namelen,
			 (const char *)nv->name, name);
	if (nv->valuelen != strlen(value) ||
	    memcmp(nv->value, value, nv->valuelen))
		fail_msg("value '%.*s', want '%s'", (int)nv->valuelen,
			 (const char *)nv->value, value);
}

/* p's fields are want's pairs (name, value), up to a NULL name, in order
 * and all of them. */
static void expect_fields(const struct parsed *p, const char *const want[][2])
{
	int i;

	for (i = 0; want[i][0]; i++) {
		assert_true(i < p->n);
		expect_nv(&p->nv[i], want[i][0], want[i][1]);
	}
	assert_int_equal(p->n, i);
}

static void test_static_head(void **state)
{
	static const char head[] =
		"HTTP/1.1 200 OK\r\n"
		"Date: Thu, 26 Nov 2026 19:00:00 GMT\r\n"
		"Server: zchttpd\r\n"
		"Content-Type: text/HTML\r\n"
		"Content-Length: 1024\r\n"
		"ETag: \"AbC\"\r\n"
		"Accept-Ranges: bytes\r\n"
		"Connection: keep-alive\r\n"
		"\r\n"
		"BODY";
	static const char *const want[][2] = {
		{ ":status", "200" },
		{ "date", "Thu, 26 Nov 2026 19:00:00 GMT" },
		{ "server", "zchttpd" },
		{ "content-type", "text/HTML" },
		{ "content-length", "1024" },
		{ "etag", "\"AbC\"" },
		{ "accept-ranges", "bytes" },
		{ NULL, NULL },
	};
	struct parsed p;

	(void)state;
	assert_int_equal(parse(&p, head), 7);
	assert_int_equal(p.status, 200);
	assert_int_equal(p.head_len, sizeof(head) - 1 - 4);
	expect_fields(&p, want);
}

static void test_connection_fields_dropped(void **state)
{
	struct parsed p;

	(void)state;
	assert_int_equal(parse(&p, "HTTP/1.1 404 Not Found\n"
				   "Keep-Alive: timeout=5\n"
				   "Transfer-Encoding: chunked\n"
				   "Proxy-Connection: close\n"
				   "Upgrade: h2c\n"
				   "Connection: close\n"
				   "Connectiom: kept\n"
				   "X-A:  spaced \t\n"
				   "\n"), 3);
	assert_int_equal(p.status, 404);
	expect_nv(&p.nv[1], "connectiom", "kept");
	expect_nv(&p.nv[2], "x-a", "spaced");
}

static void test_malformed(void **state)
{
	struct parsed p;

	(void)state;
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\nNo-Colon\r\n\r\n"), -1);
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\n: empty\r\n\r\n"), -1);
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\nA: b\r\n"), -1);
	assert_int_equal(parse(&p, "HTTP/1.1 600 No\r\n\r\n"), -1);
	assert_int_equal(parse(&p, "HTTP/2 200 OK\r\n\r\n"), -1);
	/* A colon only in the next line does not count. */
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\nLongNameNoColon\r\n"
				   "X: y\r\n\r\n"), -1);
}

/* Every name length 1..40, every byte value in it, the colon right after
 * it: lower-cased exactly as a byte-by-byte loop would, the value never
 * touched. */
static void test_names_every_length(void **state)
{
	(void)state;
	for (size_t len = 1; len <= 40; len++) {
		for (unsigned start = 1; start < 256; start += 7) {
			char head[256], want[64];
			struct parsed p;
			size_t k = 0;

			k += (size_t)sprintf(head, "HTTP/1.1 200 OK\r\n");
			for (size_t i = 0; i < len; i++) {
				unsigned char c = (unsigned char)(start + 13 * i);

				/* No line ends, colons or NULs in a name
				 * (h2_head_fields takes what a handler
				 * wrote; the bytes are only lower-cased). */
				if (c == '\n' || c == '\r' || c == ':' ||
				    c == 0)
					c = 'Q';
				head[k++] = (char)c;
				want[i] = (char)(c >= 'A' && c <= 'Z' ?
						 c + 32 : c);
			}
			k += (size_t)sprintf(head + k, ": VaLuE\r\n\r\n");
			head[k] = 0;
			assert_int_equal(parse(&p, head), 2);
			assert_int_equal(p.nv[1].namelen, len);
			assert_memory_equal(p.nv[1].name, want, len);
			assert_int_equal(p.nv[1].valuelen, 5);
			assert_memory_equal(p.nv[1].value, "VaLuE", 5);
		}
	}
}

/* nv[0..n) all point into p's own text (not the memo's, nor an earlier
 * head's). */
static void expect_in_text(const struct parsed *p)
{
	for (int i = 1; i < p->n; i++) {
		const char *name = (const char *)p->nv[i].name;
		const char *value = (const char *)p->nv[i].value;

		assert_true(name >= p->text && name < p->text + p->head_len);
		assert_true(value >= p->text &&
			    value <= p->text + p->head_len);
	}
}

static const char head_a[] =
	"HTTP/1.1 200 OK\r\n"
	"Server: zchttpd\r\n"
	"Date: Thu, 26 Nov 2026 19:00:00 GMT\r\n"
	"Content-Type: text/html\r\n"
	"Content-Length: 1024\r\n"
	"ETag: \"1a-2b\"\r\n"
	"Connection: keep-alive\r\n"
	"\r\n";

/* The same head again, a head that differs in one value, in its status,
 * and with a body after it: each as a first parse would make it. */
static void test_memo_same_and_shared_lines(void **state)
{
	struct parsed p, q;

	(void)state;
	assert_int_equal(parse(&p, head_a), 6);
	assert_int_equal(parse(&q, head_a), 6);	/* all from the memo */
	assert_int_equal(q.status, 200);
	assert_int_equal(q.head_len, sizeof(head_a) - 1);
	expect_in_text(&q);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(q.nv[i].namelen, p.nv[i].namelen);
		assert_memory_equal(q.nv[i].name, p.nv[i].name,
				    p.nv[i].namelen);
		assert_int_equal(q.nv[i].valuelen, p.nv[i].valuelen);
		assert_memory_equal(q.nv[i].value, p.nv[i].value,
				    p.nv[i].valuelen);
	}
	/* The lines before Content-Length from the memo, the rest parsed
	 * (a longer value: the common bytes end inside the line). */
	static const char head_b[] =
		"HTTP/1.1 200 OK\r\n"
		"Server: zchttpd\r\n"
		"Date: Thu, 26 Nov 2026 19:00:00 GMT\r\n"
		"Content-Type: text/html\r\n"
		"Content-Length: 10240\r\n"
		"ETag: \"1a-2b\"\r\n"
		"X-More: One\r\n"
		"Connection: keep-alive\r\n"
		"\r\nBODY";

	static const char *const want_b[][2] = {
		{ ":status", "200" },
		{ "server", "zchttpd" },
		{ "date", "Thu, 26 Nov 2026 19:00:00 GMT" },
		{ "content-type", "text/html" },
		{ "content-length", "10240" },
		{ "etag", "\"1a-2b\"" },
		{ "x-more", "One" },
		{ NULL, NULL },
	};

	assert_int_equal(parse(&q, head_b), 7);
	expect_in_text(&q);
	expect_fields(&q, want_b);
	assert_int_equal(q.head_len, sizeof(head_b) - 1 - 4);
	/* A status that differs in its last digit: nothing shared. */
	assert_int_equal(parse(&q, "HTTP/1.1 201 Created\r\n"
				   "Server: zchttpd\r\n\r\n"), 2);
	assert_int_equal(q.status, 201);
	expect_nv(&q.nv[0], ":status", "201");
	expect_nv(&q.nv[1], "server", "zchttpd");
	/* The memo is that head now: a body after the same head. */
	assert_int_equal(parse(&q, "HTTP/1.1 201 Created\r\n"
				   "Server: zchttpd\r\n\r\nServer: x\r\n"),
			 2);
	assert_int_equal(q.head_len, strlen("HTTP/1.1 201 Created\r\n"
					    "Server: zchttpd\r\n\r\n"));
	expect_nv(&q.nv[1], "server", "zchttpd");
}

/* Heads that start as the memo's and then go wrong are refused as a first
 * parse would refuse them. */
static void test_memo_then_malformed(void **state)
{
	struct parsed p;

	(void)state;
	assert_int_equal(parse(&p, head_a), 6);
	/* The memo's lines, then no empty line. */
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\n"
				   "Server: zchttpd\r\n"), -1);
	assert_int_equal(parse(&p, head_a), 6);
	assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\n"
				   "Server: zchttpd\r\n"
				   "No-Colon\r\n\r\n"), -1);
	/* After a refused head the memo still parses right. */
	assert_int_equal(parse(&p, head_a), 6);
	expect_nv(&p.nv[5], "etag", "\"1a-2b\"");
	expect_in_text(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_head),
		cmocka_unit_test(test_connection_fields_dropped),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_names_every_length),
		cmocka_unit_test(test_memo_same_and_shared_lines),
		cmocka_unit_test(test_memo_then_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
