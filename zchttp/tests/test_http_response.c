/* test_http_response.c - the response-head parser of a reverse proxy:
 * status lines, field syntax, framing ambiguities, limits, 1xx and 101,
 * the body a response has, Connection options and hop-by-hop fields.
 *
 * Every parse in this file goes through parse_n(), which also feeds the
 * same bytes one at a time (on a buffer that moves between calls) and in
 * two pieces cut at every point, and asserts that each gives exactly the
 * all-at-once result: each case below is also an incremental-parsing
 * case. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http_parser.h"
#include "http_response.h"

#define SLOTS 64

static struct http_header slots[SLOTS];
static struct http_response resp;
static struct http_limits lim;

static void reset_limits(void)
{
	struct http_limits d = HTTP_LIMITS_DEFAULT;

	d.max_headers = SLOTS;
	lim = d;
}

static int setup(void **state)
{
	(void)state;
	reset_limits();
	return 0;
}

#define OFF(x, base) ((x).p ? (x).p - (base) : -1)

/* a parsed from buffer ba, b from bb (another copy, or the same). */
static void assert_same(ssize_t ra, const struct http_response *a,
			const char *ba, ssize_t rb,
			const struct http_response *b, const char *bb)
{
	size_t i;

	assert_int_equal(rb, ra);
	if (ra == HTTP_PARSE_ERROR) {
		assert_int_equal(b->error, a->error);
		assert_string_equal(b->why, a->why);
	}
	if (ra <= 0)
		return;
	assert_int_equal(b->error, HTTP_OK);
	assert_int_equal(b->status, a->status);
	assert_int_equal(b->minor, a->minor);
	assert_int_equal(b->flags, a->flags);
	assert_int_equal(b->content_length, a->content_length);
	assert_int_equal(b->num_headers, a->num_headers);
	assert_int_equal(OFF(b->reason, bb), OFF(a->reason, ba));
	assert_int_equal(b->reason.len, a->reason.len);
	for (i = 0; i < a->num_headers; i++) {
		assert_int_equal(OFF(b->headers[i].name, bb),
				 OFF(a->headers[i].name, ba));
		assert_int_equal(b->headers[i].name.len, a->headers[i].name.len);
		assert_int_equal(OFF(b->headers[i].value, bb),
				 OFF(a->headers[i].value, ba));
		assert_int_equal(b->headers[i].value.len, a->headers[i].value.len);
	}
}

static void start(struct http_parser *p, struct http_response *r,
		  struct http_header *h)
{
	memset(r, 0, sizeof(*r));
	r->headers = h;
	http_parser_init(p);
}

/* Parse all at once into `resp`; check that byte-by-byte (moving buffer)
 * feeding and two pieces cut at every point agree. */
static ssize_t parse_n(const char *s, size_t n)
{
	static struct http_header h2[SLOTS];
	struct http_response r2;
	struct http_parser p;
	ssize_t all, got = HTTP_PARSE_INCOMPLETE;
	char *a = malloc(n + 1), *b = malloc(n + 1), *last = a;
	size_t i;

	start(&p, &resp, slots);
	all = http_parse_response(&p, s, n, &lim, &resp);
	if (all > 0)
		assert_non_null(resp.reason.p);

	/* byte by byte; the bytes alternate between two buffers */
	assert_non_null(a);
	assert_non_null(b);
	memcpy(a, s, n);
	memcpy(b, s, n);
	start(&p, &r2, h2);
	for (i = 1; i <= n && got == HTTP_PARSE_INCOMPLETE; i++) {
		last = i % 2 ? a : b;
		got = http_parse_response(&p, last, i, &lim, &r2);
	}
	if (n == 0)
		got = http_parse_response(&p, a, 0, &lim, &r2);
	assert_same(all, &resp, s, got, &r2, last);

	/* two pieces, cut at every point */
	for (i = 0; i <= n; i++) {
		start(&p, &r2, h2);
		got = http_parse_response(&p, s, i, &lim, &r2);
		if (got == HTTP_PARSE_INCOMPLETE)
			got = http_parse_response(&p, s, n, &lim, &r2);
		assert_same(all, &resp, s, got, &r2, s);
	}

	free(a);
	free(b);
	return all;
}

static ssize_t parse(const char *s)
{
	return parse_n(s, strlen(s));
}

static void expect_ok(const char *s)
{
	ssize_t r = parse(s);

	if (r != (ssize_t)strlen(s))
		fail_msg("expected success for %s: got %zd (%d %s)", s, r,
			 resp.error, resp.why ? resp.why : "");
}

static void expect_error_n(const char *s, size_t n, int code, const char *why)
{
	ssize_t r = parse_n(s, n);

	if (r != HTTP_PARSE_ERROR || (int)resp.error != code)
		fail_msg("expected %d for %.*s: got %zd (%d %s)", code, (int)n,
			 s, r, resp.error, resp.why ? resp.why : "");
	assert_non_null(resp.why);
	if (why)
		assert_string_equal(resp.why, why);
}

static void expect_error(const char *s, int code, const char *why)
{
	expect_error_n(s, strlen(s), code, why);
}

static void expect_bad(const char *s, const char *why)
{
	expect_error(s, HTTP_E_BAD_REQUEST, why);
}

/* A list of heads that are all 400 for one reason. */
static void expect_bad_each(const char *why, const char *const *v)
{
	for (; *v; v++)
		expect_bad(*v, why);
}

#define EXPECT_BAD_EACH(why, ...) \
	expect_bad_each((why), (const char *const[]){ __VA_ARGS__, NULL })

#define assert_str(s, want) \
	do { \
		assert_non_null((s).p); \
		assert_int_equal((s).len, strlen(want)); \
		assert_memory_equal((s).p, (want), (s).len); \
	} while (0)

/* Heads built for the limits, one at a time. */
static char big[(SLOTS + 1) * 1024];

/* "HTTP/1.1 200 OK", count fields "X-nnn: " and value_len bytes, end. */
static const char *make_fields(size_t count, size_t value_len)
{
	char *p = big;
	size_t i;

	p += sprintf(p, "HTTP/1.1 200 OK\r\n");
	for (i = 0; i < count; i++) {
		p += sprintf(p, "X-%03zu: ", i);
		memset(p, 'v', value_len);
		p += value_len;
		p += sprintf(p, "\r\n");
	}
	sprintf(p, "\r\n");
	return big;
}

/* ------------------------------------------------------------- basics */

static void test_simple(void **state)
{
	const char *r = "HTTP/1.1 200 OK\r\n"
			"Content-Type: text/plain\r\n"
			"Content-Length: 5\r\n"
			"\r\n"
			"hello";

	(void)state;
	assert_int_equal(parse(r), strlen(r) - 5);
	assert_int_equal(resp.minor, 1);
	assert_int_equal(resp.status, 200);
	assert_str(resp.reason, "OK");
	assert_int_equal(resp.num_headers, 2);
	assert_str(resp.headers[0].name, "Content-Type");
	assert_str(resp.headers[0].value, "text/plain");
	assert_int_equal(resp.flags, HTTP_F_CONTENT_LENGTH | HTTP_F_KEEP_ALIVE);
	assert_int_equal(resp.content_length, 5);
	assert_int_equal(resp.error, HTTP_OK);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_LENGTH);
	assert_int_equal(http_response_body(&resp, HTTP_M_HEAD), HTTP_BODY_NONE);
}

static void test_incomplete(void **state)
{
	(void)state;
	assert_int_equal(parse(""), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("HTTP/1.1"), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("HTTP/1.1 200 OK\r"), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nA: b\r\n"),
			 HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nA: b\r\n\r"),
			 HTTP_PARSE_INCOMPLETE);
}

/* ------------------------------------------------------------ status line */

static void test_status_line(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200\r\n\r\n");
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.reason.len, 0);	/* and not NULL (parse_n) */
	expect_ok("HTTP/1.1 200 \r\n\r\n");
	assert_int_equal(resp.reason.len, 0);
	expect_ok("HTTP/1.1 404 Not  Found \r\n\r\n");
	assert_int_equal(resp.status, 404);
	assert_str(resp.reason, "Not  Found ");	/* as sent */
	expect_ok("HTTP/1.1 500 \tx\xc3\xa9\xff ~!\r\n\r\n");
	assert_str(resp.reason, "\tx\xc3\xa9\xff ~!");
	expect_ok("HTTP/1.0 200 OK\r\n\r\n");
	assert_int_equal(resp.minor, 0);
	expect_ok("HTTP/1.1 100 Continue\r\n\r\n");
	assert_int_equal(resp.status, 100);
	expect_ok("HTTP/1.1 599 x\r\n\r\n");
	assert_int_equal(resp.status, 599);
	expect_ok("HTTP/1.1 299 x\r\n\r\n");
	assert_int_equal(resp.status, 299);

	/* other versions */
	expect_error("HTTP/2.0 200 OK\r\n\r\n", HTTP_E_VERSION, NULL);
	expect_error("HTTP/1.2 200 OK\r\n\r\n", HTTP_E_VERSION, NULL);
	expect_error("HTTP/0.9 200 OK\r\n\r\n", HTTP_E_VERSION, NULL);
	expect_error("HTTP/3.1 200\r\n\r\n", HTTP_E_VERSION, NULL);

	EXPECT_BAD_EACH("bad status line",
		"HTTP/2 200 OK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"HTTP/1.1\r\n\r\n",
		"HTTP/1.1 \r\n\r\n",
		"HTTP/1.1 20\r\n\r\n",
		"HTTP/1.1\t200 OK\r\n\r\n",
		"HTTP/1.10 200 OK\r\n\r\n",
		"HTTP/a.b 200 OK\r\n\r\n",
		" HTTP/1.1 200 OK\r\n\r\n",
		"HTTPS/1.1 200 OK\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"<html>hello</html>\r\n\r\n");	/* HTTP/0.9: a body only */
	EXPECT_BAD_EACH("bad status code",
		"HTTP/1.1 099 x\r\n\r\n",
		"HTTP/1.1 000\r\n\r\n",
		"HTTP/1.1 600 x\r\n\r\n",
		"HTTP/1.1 999\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 20x OK\r\n\r\n",
		"HTTP/1.1 -20 OK\r\n\r\n",
		"HTTP/1.1 +20 OK\r\n\r\n",
		"HTTP/1.1  200 OK\r\n\r\n",
		"HTTP/1.1 200\tOK\r\n\r\n",
		"HTTP/1.1 200OK\r\n\r\n",
		"HTTP/1.1 2 00 OK\r\n\r\n");
	EXPECT_BAD_EACH("control character in reason phrase",
		"HTTP/1.1 200 O\x01K\r\n\r\n",
		"HTTP/1.1 200 OK\x7f\r\n\r\n",
		"HTTP/1.1 200 \x1b[31mOK\r\n\r\n",
		"HTTP/1.1 200 \x0bOK\r\n\r\n");
	expect_error_n("HTTP/1.1 200 O\0K\r\n\r\n", 19, HTTP_E_BAD_REQUEST,
		       "control character in reason phrase");
	expect_bad("HTTP/1.1 200 O\rK\r\n\r\n", "bare CR");
	expect_bad("HTTP/1.1 200 OK\r\r\n\r\n", "bare CR");
	/* no empty lines before a response */
	expect_bad("\r\nHTTP/1.1 200 OK\r\n\r\n",
		   "empty line before status line");
	expect_bad("\nHTTP/1.1 200 OK\r\n\r\n",
		   "empty line before status line");
}

static void test_line_endings(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200 OK\nA: b\n\n");
	assert_str(resp.headers[0].value, "b");
	expect_ok("HTTP/1.1 200 OK\r\nA: b\n\r\n");
	expect_ok("HTTP/1.1 200 OK\nA: b\r\n\n");
	expect_ok("HTTP/1.1 200\n\n");
	EXPECT_BAD_EACH(NULL,
		"HTTP/1.1 200 OK\rA: b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\rC: d\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\r\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\r\n\r\r\n",
		"HTTP/1.1 200 OK\r\n\r\r\n",
		"HTTP/1.1 200\r\r\n\r\n");
}

static void test_field_syntax(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200 OK\r\nX-A:   v  w \t\r\nX-B:\r\n"
		  "X-C:\tq\r\nSet-Cookie: a=caf\xc3\xa9\r\n\r\n");
	assert_int_equal(resp.num_headers, 4);
	assert_str(resp.headers[0].value, "v  w");
	assert_int_equal(resp.headers[1].value.len, 0);
	assert_str(resp.headers[2].value, "q");
	assert_str(resp.headers[3].value, "a=caf\xc3\xa9");

	expect_bad("HTTP/1.1 200 OK\r\nA: b\r\n  c\r\n\r\n",
		   "obs-fold (line folding)");
	expect_bad("HTTP/1.1 200 OK\r\nA: b\r\n\tc\r\n\r\n",
		   "obs-fold (line folding)");
	expect_bad("HTTP/1.1 200 OK\r\n A: b\r\n\r\n",
		   "obs-fold (line folding)");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n",
		   "whitespace before colon");
	expect_bad("HTTP/1.1 200 OK\r\nA\t: b\r\n\r\n",
		   "whitespace before colon");
	expect_bad("HTTP/1.1 200 OK\r\nA-b\r\n\r\n",
		   "field without colon");
	expect_bad("HTTP/1.1 200 OK\r\n: b\r\n\r\n", "bad field name");
	expect_bad("HTTP/1.1 200 OK\r\nA(B): c\r\n\r\n",
		   "bad field name");
	EXPECT_BAD_EACH("control character in field value",
		"HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: \x1b[31m\r\n\r\n");
	expect_error_n("HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n", 27,
		       HTTP_E_BAD_REQUEST, "control character in field value");
	expect_error_n("HTTP/1.1 200 OK\r\nA\0: b\r\n\r\n", 26,
		       HTTP_E_BAD_REQUEST, NULL);
}

/* --------------------------------------------------------------- framing */

static void test_content_length(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n");
	assert_int_equal(resp.content_length, 42);
	expect_ok("HTTP/1.1 200 OK\r\ncontent-length:  0 \r\n\r\n");
	assert_true(resp.flags & HTTP_F_CONTENT_LENGTH);
	assert_int_equal(resp.content_length, 0);
	expect_ok("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n");
	assert_int_equal(resp.content_length, INT64_MAX);
	/* the same value again is one length (RFC 9110 8.6) */
	expect_ok("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCONTENT-LENGTH: 5\r\n\r\n");
	assert_int_equal(resp.content_length, 5);

	EXPECT_BAD_EACH("bad Content-Length",
		"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5,6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"HTTP/1.1 304 x\r\nContent-Length: x\r\n\r\n");
	EXPECT_BAD_EACH("conflicting Content-Length",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 05\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nX: y\r\n"
		"Content-Length: 1\r\n\r\n");
}

static void test_transfer_encoding(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CHUNKED | HTTP_F_KEEP_ALIVE);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_CHUNKED);
	expect_ok("HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CHUNKED | HTTP_F_KEEP_ALIVE);
	/* empty list elements are nothing (RFC 9110 5.6.1) */
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: , chunked ,\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CHUNKED | HTTP_F_KEEP_ALIVE);
	/* chunked last, a coding under it: chunked, still coded */
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CHUNKED | HTTP_RF_TE_OTHER |
				     HTTP_F_KEEP_ALIVE);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_CHUNKED);
	/* no chunked: the body ends with the connection (RFC 9112 6.3 4) */
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_RF_TE_CLOSE | HTTP_RF_TE_OTHER |
				     HTTP_F_KEEP_ALIVE);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_CLOSE);
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n");
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_CLOSE);
	expect_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: x-chunked\r\n\r\n");
	assert_true(resp.flags & HTTP_RF_TE_CLOSE);

	/* CL + TE, both orders */
	EXPECT_BAD_EACH("Content-Length with Transfer-Encoding",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		"Content-Length: 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
		"Content-Length: 0\r\n\r\n",
		"HTTP/1.1 304 x\r\nTransfer-Encoding: chunked\r\n"
		"Content-Length: 5\r\n\r\n");
	/* chunked anywhere but last, or twice: a double chunking */
	EXPECT_BAD_EACH("chunked before another coding",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked, br\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n");
	EXPECT_BAD_EACH("chunked applied twice",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,,CHUNKED\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip, chunked\r\n\r\n");
	EXPECT_BAD_EACH("more than one Transfer-Encoding",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		"Transfer-Encoding: chunked\r\n\r\n");
	EXPECT_BAD_EACH("Transfer-Encoding in HTTP/1.0",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding:\r\n\r\n");
	EXPECT_BAD_EACH("empty Transfer-Encoding",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,, ,\r\n\r\n");
	EXPECT_BAD_EACH("bad transfer coding",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;q=1, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: \"chunked\"\r\n\r\n");
}

/* A 1xx or 204 has no body (RFC 9110 15.2, 15.3.5) and must not announce
 * one: the bytes of the announced body would be the next response. */
static void test_bodyless_framing(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_NONE);
	expect_ok("HTTP/1.1 100 Continue\r\nContent-Length: 00\r\n\r\n");
	/* 304: the length of the representation a 200 would have */
	expect_ok("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n");
	assert_int_equal(resp.content_length, 5);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_NONE);
	expect_ok("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_NONE);

	EXPECT_BAD_EACH("framing in a 1xx or 204 response",
		"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 100 Continue\r\nContent-Length: 1\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nTransfer-Encoding: gzip\r\n\r\n");
}

static void test_body_kind(void **state)
{
	static const struct {
		const char *head;
		enum http_method m;
		enum http_body_kind kind;
	} t[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", HTTP_M_GET, HTTP_BODY_LENGTH },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", HTTP_M_POST, HTTP_BODY_LENGTH },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", HTTP_M_HEAD, HTTP_BODY_NONE },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_M_HEAD, HTTP_BODY_NONE },
		{ "HTTP/1.1 200 OK\r\n\r\n", HTTP_M_HEAD, HTTP_BODY_NONE },
		{ "HTTP/1.1 200 OK\r\n\r\n", HTTP_M_GET, HTTP_BODY_CLOSE },
		{ "HTTP/1.0 200 OK\r\n\r\n", HTTP_M_GET, HTTP_BODY_CLOSE },
		{ "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", HTTP_M_GET, HTTP_BODY_LENGTH },
		{ "HTTP/1.1 404 x\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_M_DELETE, HTTP_BODY_CHUNKED },
		{ "HTTP/1.1 100 Continue\r\n\r\n", HTTP_M_POST, HTTP_BODY_NONE },
		{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", HTTP_M_GET, HTTP_BODY_NONE },
		{ "HTTP/1.1 199 x\r\n\r\n", HTTP_M_GET, HTTP_BODY_NONE },
		{ "HTTP/1.1 204 x\r\n\r\n", HTTP_M_GET, HTTP_BODY_NONE },
		{ "HTTP/1.1 205 x\r\n\r\n", HTTP_M_GET, HTTP_BODY_CLOSE },
		{ "HTTP/1.1 304 x\r\n\r\n", HTTP_M_GET, HTTP_BODY_NONE },
		{ "HTTP/1.1 500 x\r\n\r\n", HTTP_M_HEAD, HTTP_BODY_NONE },
		/* CONNECT: a 2xx is a tunnel, its framing fields ignored */
		{ "HTTP/1.1 200 OK\r\n\r\n", HTTP_M_CONNECT, HTTP_BODY_NONE },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", HTTP_M_CONNECT, HTTP_BODY_NONE },
		{ "HTTP/1.1 299 x\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_M_CONNECT, HTTP_BODY_NONE },
		{ "HTTP/1.1 407 x\r\nContent-Length: 9\r\n\r\n", HTTP_M_CONNECT, HTTP_BODY_LENGTH },
		{ "HTTP/1.1 502 x\r\n\r\n", HTTP_M_CONNECT, HTTP_BODY_CLOSE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		expect_ok(t[i].head);
		if (http_response_body(&resp, t[i].m) != t[i].kind)
			fail_msg("%s to %s: body %d, want %d", t[i].head,
				 http_method_name(t[i].m),
				 http_response_body(&resp, t[i].m), t[i].kind);
	}
}

/* ----------------------------------------------------- Connection, Upgrade */

static void test_connection(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	assert_true(resp.flags & HTTP_F_KEEP_ALIVE);
	expect_ok("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CONN_CLOSE);
	expect_ok("HTTP/1.1 200 OK\r\nConnection: X, CLOSE\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CONN_CLOSE);
	expect_ok("HTTP/1.0 200 OK\r\n\r\n");
	assert_int_equal(resp.flags, 0);
	expect_ok("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
		  "Keep-Alive: timeout=5\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CONN_KEEP_ALIVE | HTTP_F_KEEP_ALIVE);
	expect_ok("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n"
		  "Connection: close\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_CONN_KEEP_ALIVE | HTTP_F_CONN_CLOSE);
	expect_ok("HTTP/1.1 200 OK\r\nConnection: closed\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_KEEP_ALIVE);
}

static void test_upgrade(void **state)
{
	(void)state;
	expect_ok("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		  "Connection: Upgrade\r\n"
		  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
	assert_int_equal(resp.status, 101);
	assert_int_equal(resp.flags, HTTP_RF_UPGRADE | HTTP_F_KEEP_ALIVE);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_NONE);
	assert_true(http_connection_lists(resp.headers, resp.num_headers,
					  "upgrade", 7));
	/* a 101 without Upgrade is returned too: the caller decides */
	expect_ok("HTTP/1.1 101 Switching Protocols\r\n\r\n");
	assert_int_equal(resp.flags, HTTP_F_KEEP_ALIVE);
	expect_ok("HTTP/1.1 426 Upgrade Required\r\nUPGRADE: h2c\r\n"
		  "Content-Length: 0\r\n\r\n");
	assert_true(resp.flags & HTTP_RF_UPGRADE);
}

/* 1xx heads come one by one before the final one, in one buffer. */
static void test_interim_then_final(void **state)
{
	const char *buf = "HTTP/1.1 100 Continue\r\n\r\n"
			  "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
			  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
	size_t off = 0, len = strlen(buf);
	ssize_t r;

	(void)state;
	r = parse_n(buf, len);
	assert_int_equal(r, 25);
	assert_int_equal(resp.status, 100);
	off += r;
	r = parse_n(buf + off, len - off);
	assert_int_equal(resp.status, 103);
	assert_str(resp.headers[0].name, "Link");
	off += r;
	r = parse_n(buf + off, len - off);
	assert_int_equal(resp.status, 200);
	assert_int_equal(http_response_body(&resp, HTTP_M_GET), HTTP_BODY_LENGTH);
	off += r;
	assert_int_equal(len - off, 2);
}

static struct http_header hdr(const char *name, const char *value)
{
	return (struct http_header){ { name, strlen(name) },
				     { value, strlen(value) } };
}

static void test_connection_lists(void **state)
{
	const struct http_header hs[] = {
		hdr("Connection", "close"),
		hdr("X-Foo", "bar"),
		hdr("connection", " X-Foo ,\tKeep-Alive,, te"),
		hdr("CONNECTION", ""),
		hdr("Connections", "x-not"),
		hdr("Connection", "x-last"),
	};
	size_t n = sizeof(hs) / sizeof(hs[0]);

	(void)state;
	assert_true(http_connection_lists(hs, n, "close", 5));
	assert_true(http_connection_lists(hs, n, "x-foo", 5));
	assert_true(http_connection_lists(hs, n, "X-FOO", 5));
	assert_true(http_connection_lists(hs, n, "keep-alive", 10));
	assert_true(http_connection_lists(hs, n, "TE", 2));
	assert_true(http_connection_lists(hs, n, "x-last", 6));
	assert_false(http_connection_lists(hs, n, "x-not", 5));
	assert_false(http_connection_lists(hs, n, "x-fo", 4));
	assert_false(http_connection_lists(hs, n, "x-foo-", 6));
	assert_false(http_connection_lists(hs, n, "bar", 3));
	assert_false(http_connection_lists(hs, n, "", 0));	/* ",," */
	assert_false(http_connection_lists(hs, 1, "x-foo", 5));
	assert_false(http_connection_lists(hs, 0, "close", 5));
	/* a name as a field of the head: not NUL-terminated */
	assert_true(http_connection_lists(hs, n, "x-foo: bar", 5));

	/* and on a parsed head */
	expect_ok("HTTP/1.1 200 OK\r\nConnection: x-a, x-b\r\nX-A: 1\r\n"
		  "Connection: x-c\r\n\r\n");
	assert_true(http_connection_lists(resp.headers, resp.num_headers,
					  resp.headers[1].name.p,
					  resp.headers[1].name.len));
	assert_true(http_connection_lists(resp.headers, resp.num_headers,
					  "X-C", 3));
	assert_false(http_connection_lists(resp.headers, resp.num_headers,
					   "x-d", 3));
}

static void test_hop_by_hop(void **state)
{
	static const char *const hop[] = {
		"Connection", "Keep-Alive", "Proxy-Connection", "TE",
		"Transfer-Encoding", "Upgrade", "Proxy-Authenticate",
		"Proxy-Authorization", "Trailer", "connection", "KEEP-ALIVE",
		"te", "tRaNsFeR-eNcOdInG", "PROXY-AUTHORIZATION", "trailer",
	};
	static const char *const end[] = {
		"Content-Length", "Content-Type", "Set-Cookie", "Trailers",
		"T", "TEE", "Upgrade-Insecure-Requests", "Keep-Alives",
		"Connectio", "Proxy-Authenticat", "Transfer-Encodin", "Via",
		"Proxy", "Authorization", "X-Connection", "",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (!http_hop_by_hop(hop[i], strlen(hop[i])))
			fail_msg("%s is hop-by-hop", hop[i]);
	for (i = 0; i < sizeof(end) / sizeof(end[0]); i++)
		if (http_hop_by_hop(end[i], strlen(end[i])))
			fail_msg("%s is end-to-end", end[i]);
	/* the length decides, not a NUL */
	assert_true(http_hop_by_hop("TE: trailers", 2));
	assert_false(http_hop_by_hop("TE", 1));
}

/* ----------------------------------------------------------- incremental */

/* One parser state over a buffer that is copied (moved) between calls,
 * cut at every point; a shorter buffer than last time starts over. */
static void test_incremental_moving_buffer(void **state)
{
	const char *r = "HTTP/1.1 206 Partial\r\nContent-Range: bytes 1-2/3\r\n"
			"Content-Length: 2\r\n\r\n";
	size_t n = strlen(r), cut;
	struct http_parser p;
	char *a, *b;

	(void)state;
	for (cut = 0; cut <= n; cut++) {
		a = malloc(n);
		b = malloc(n);
		assert_non_null(a);
		assert_non_null(b);
		memcpy(a, r, n);
		start(&p, &resp, slots);
		assert_int_equal(http_parse_response(&p, a, cut, &lim, &resp),
				 cut == n ? (ssize_t)n : HTTP_PARSE_INCOMPLETE);
		memcpy(b, a, n);
		free(a);
		assert_int_equal(http_parse_response(&p, b, n, &lim, &resp), n);
		assert_int_equal(resp.status, 206);
		assert_str(resp.reason, "Partial");
		assert_str(resp.headers[0].value, "bytes 1-2/3");
		assert_int_equal(resp.content_length, 2);
		/* complete: asked again, the same head */
		assert_int_equal(http_parse_response(&p, b, n, &lim, &resp), n);
		assert_str(resp.reason, "Partial");
		free(b);
	}
	start(&p, &resp, slots);
	assert_int_equal(http_parse_response(&p, "XXXXXXXXXXXXXXXX", 16, &lim,
					     &resp), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(http_parse_response(&p, r, 5, &lim, &resp),
			 HTTP_PARSE_INCOMPLETE);
	assert_int_equal(http_parse_response(&p, r, n, &lim, &resp), n);
	assert_int_equal(resp.status, 206);
}

/* Slowloris upstream: a large head dripped in one byte per call is
 * linear (with a quadratic rescan this trips the timeout). */
static void test_drip_is_linear(void **state)
{
	const char *s = make_fields(SLOTS, 1000);
	struct http_parser p;
	ssize_t r = HTTP_PARSE_INCOMPLETE;
	size_t n = strlen(s), i;

	(void)state;
	assert_true(n > 64000);
	lim.max_head_bytes = 1 << 20;
	start(&p, &resp, slots);
	for (i = 1; i <= n && r == HTTP_PARSE_INCOMPLETE; i++)
		r = http_parse_response(&p, s, i, &lim, &resp);
	assert_int_equal(r, n);
	assert_int_equal(resp.num_headers, SLOTS);
	reset_limits();
}

/* ---------------------------------------------------------------- limits */

/* "HTTP/1.1 200 rrr" of exactly len bytes (len >= 13), then end. */
static const char *make_status_line(size_t len)
{
	memcpy(big, "HTTP/1.1 200 ", 13);
	memset(big + 13, 'r', len - 13);
	strcpy(big + len, "\r\n\r\n");
	return big;
}

static void test_limit_status_line(void **state)
{
	const char *s;

	(void)state;
	lim.max_request_line = 40;
	s = make_status_line(40);
	expect_ok(s);
	assert_int_equal(resp.reason.len, 27);
	/* ... with its CR: not over until the next byte is no LF */
	assert_int_equal(parse_n(s, 41), HTTP_PARSE_INCOMPLETE);
	s = make_status_line(41);
	expect_error(s, HTTP_E_HEADERS_TOO_LARGE, "status line too long");
	/* found before the line ends: 41 bytes, no LF yet */
	expect_error_n(s, 41, HTTP_E_HEADERS_TOO_LARGE, "status line too long");
	assert_int_equal(parse_n(s, 40), HTTP_PARSE_INCOMPLETE);
	/* bare LF: the same line length */
	lim.max_request_line = 12;
	expect_ok("HTTP/1.1 200\n\n");
	expect_error("HTTP/1.1 200 \n\n", HTTP_E_HEADERS_TOO_LARGE,
		     "status line too long");
	reset_limits();
}

static void test_limit_header_count(void **state)
{
	(void)state;
	lim.max_headers = 10;
	expect_ok(make_fields(10, 1));
	assert_int_equal(resp.num_headers, 10);
	expect_error(make_fields(11, 1), HTTP_E_HEADERS_TOO_LARGE,
		     "too many header fields");
	/* the whole slot array */
	lim.max_headers = SLOTS;
	expect_ok(make_fields(SLOTS, 1));
	assert_int_equal(resp.num_headers, SLOTS);
	expect_error(make_fields(SLOTS + 1, 1), HTTP_E_HEADERS_TOO_LARGE,
		     "too many header fields");
	reset_limits();
}

static void test_limit_head_bytes(void **state)
{
	const char *sl = "HTTP/1.1 200 OK\r\n";
	char s[256];
	size_t rl = strlen(sl), v;

	(void)state;
	/* the field section "X: vvv\r\n\r\n" of exactly 100 bytes */
	lim.max_head_bytes = 100;
	v = 100 - strlen("X: \r\n\r\n");
	snprintf(s, sizeof(s), "%sX: %0*d\r\n\r\n", sl, (int)v, 0);
	assert_int_equal(strlen(s) - rl, 100);
	expect_ok(s);
	/* one more byte */
	snprintf(s, sizeof(s), "%sX: %0*d\r\n\r\n", sl, (int)v + 1, 0);
	assert_int_equal(strlen(s) - rl, 101);
	expect_error(s, HTTP_E_HEADERS_TOO_LARGE, "header section too large");
	/* and found early: 100 bytes of fields, no end yet */
	expect_error_n(s, rl + 100, HTTP_E_HEADERS_TOO_LARGE,
		       "header section too large");
	assert_int_equal(parse_n(s, rl + 99), HTTP_PARSE_INCOMPLETE);

	/* bare LF endings count one byte each */
	lim.max_head_bytes = 7;
	expect_ok("HTTP/1.1 200 OK\nA: bc\n\n");	/* 7 */
	expect_error("HTTP/1.1 200 OK\nA: bcd\n\n", HTTP_E_HEADERS_TOO_LARGE,
		     "header section too large");
	reset_limits();
}

/* Errors come out in one order however the bytes are split (parse_n
 * checks that): line by line, a line's limits before its syntax, all
 * syntax before any semantics. */
static void test_error_order(void **state)
{
	(void)state;
	lim.max_headers = 2;
	expect_error("HTTP/9.9 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
		     HTTP_E_VERSION, NULL);
	expect_bad("HTTP/1.1 200 OK\r\nA : 1\r\nB: 2\r\nC: 3\r\n\r\n",
		   "whitespace before colon");
	expect_error("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC : 3\r\n\r\n",
		     HTTP_E_HEADERS_TOO_LARGE, NULL);
	reset_limits();
	lim.max_head_bytes = 20;
	expect_bad("HTTP/1.1 200 OK\r\nA\x01: 1\r\nB: 22222222222222222222\r\n\r\n",
		   "bad field name");
	expect_error("HTTP/1.1 200 OK\r\nA: 1\r\nB: 22222222222222222222\r\n\r\n",
		     HTTP_E_HEADERS_TOO_LARGE, NULL);
	reset_limits();
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n"
		   "X\x01: y\r\n\r\n", "bad field name");
	expect_bad("HTTP/1.1 600 OK\r\nX\x01: y\r\n\r\n",
		   "bad status code");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_simple, setup),
		cmocka_unit_test_setup(test_incomplete, setup),
		cmocka_unit_test_setup(test_status_line, setup),
		cmocka_unit_test_setup(test_line_endings, setup),
		cmocka_unit_test_setup(test_field_syntax, setup),
		cmocka_unit_test_setup(test_content_length, setup),
		cmocka_unit_test_setup(test_transfer_encoding, setup),
		cmocka_unit_test_setup(test_bodyless_framing, setup),
		cmocka_unit_test_setup(test_body_kind, setup),
		cmocka_unit_test_setup(test_connection, setup),
		cmocka_unit_test_setup(test_upgrade, setup),
		cmocka_unit_test_setup(test_interim_then_final, setup),
		cmocka_unit_test_setup(test_connection_lists, setup),
		cmocka_unit_test_setup(test_hop_by_hop, setup),
		cmocka_unit_test_setup(test_incremental_moving_buffer, setup),
		cmocka_unit_test_setup(test_drip_is_linear, setup),
		cmocka_unit_test_setup(test_limit_status_line, setup),
		cmocka_unit_test_setup(test_limit_header_count, setup),
		cmocka_unit_test_setup(test_limit_head_bytes, setup),
		cmocka_unit_test_setup(test_error_order, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
