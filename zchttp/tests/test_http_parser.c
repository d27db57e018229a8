/* test_http_parser.c - the request-head parser: syntax, semantics, limits,
 * smuggling defenses, pipelining and incremental feeding.
 *
 * Every parse in this file goes through parse_n(), which also feeds the
 * same bytes one at a time (on a buffer that moves between calls) and in
 * two halves, and asserts that the results are identical to the
 * all-at-once parse: each case below is also an incremental-parsing case. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http_lex.h"
#include "http_parser.h"

#define SLOTS 256

static struct http_header slots[SLOTS];
static struct http_request req;
static struct http_limits lim;
static const char *cur;	/* the buffer req points into */

static void reset_limits(void)
{
	struct http_limits d = HTTP_LIMITS_DEFAULT;

	lim = d;
}

static int setup(void **state)
{
	(void)state;
	reset_limits();
	return 0;
}

static ssize_t parse_once(const char *s, size_t n, struct http_request *r,
			  struct http_header *h)
{
	struct http_parser p;

	memset(r, 0, sizeof(*r));
	r->headers = h;
	http_parser_init(&p);
	return http_parse_request(&p, s, n, &lim, r);
}

#define OFF(x, base) ((x).p ? (x).p - (base) : -1)

static void assert_same(const struct http_request *a, const char *ba,
			const struct http_request *b, const char *bb)
{
	size_t i;

	assert_int_equal(a->method, b->method);
	assert_int_equal(a->minor, b->minor);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->num_headers, b->num_headers);
	assert_int_equal(OFF(a->target, ba), OFF(b->target, bb));
	assert_int_equal(OFF(a->path, ba), OFF(b->path, bb));
	assert_int_equal(OFF(a->host, ba), OFF(b->host, bb));
	assert_int_equal(OFF(a->range, ba), OFF(b->range, bb));
	for (i = 0; i < a->num_headers; i++) {
		assert_int_equal(OFF(a->headers[i].name, ba),
				 OFF(b->headers[i].name, bb));
		assert_int_equal(a->headers[i].value.len, b->headers[i].value.len);
	}
}

/* Parse all at once into `req`; check that byte-by-byte (moving buffer)
 * and two-halves feeding agree. */
static ssize_t parse_n(const char *s, size_t n)
{
	static struct http_header h2[SLOTS];
	struct http_request r2;
	struct http_parser p;
	ssize_t all, got = HTTP_PARSE_INCOMPLETE;
	char *a = malloc(n + 1), *b = malloc(n + 1), *last = a;
	size_t i;

	all = parse_once(s, n, &req, slots);
	cur = s;

	/* byte by byte; the bytes alternate between two buffers */
	assert_non_null(a);
	assert_non_null(b);
	memcpy(a, s, n);
	memcpy(b, s, n);
	memset(&r2, 0, sizeof(r2));
	r2.headers = h2;
	http_parser_init(&p);
	for (i = 1; i <= n && got == HTTP_PARSE_INCOMPLETE; i++) {
		last = i % 2 ? a : b;
		got = http_parse_request(&p, last, i, &lim, &r2);
	}
	assert_int_equal(got, all);
	if (all == HTTP_PARSE_ERROR)
		assert_int_equal(r2.error, req.error);
	else if (all > 0)
		assert_same(&req, s, &r2, last);

	/* two halves */
	memset(&r2, 0, sizeof(r2));
	r2.headers = h2;
	http_parser_init(&p);
	got = http_parse_request(&p, s, n / 2, &lim, &r2);
	if (got == HTTP_PARSE_INCOMPLETE)
		got = http_parse_request(&p, s, n, &lim, &r2);
	assert_int_equal(got, all);
	if (all == HTTP_PARSE_ERROR)
		assert_int_equal(r2.error, req.error);
	else if (all > 0)
		assert_same(&req, s, &r2, s);

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
			 req.error, req.why ? req.why : "");
}

static void expect_error_n(const char *s, size_t n, int code)
{
	ssize_t r = parse_n(s, n);

	if (r != HTTP_PARSE_ERROR || (int)req.error != code)
		fail_msg("expected %d for %.*s: got %zd (%d %s)", code, (int)n,
			 s, r, req.error, req.why ? req.why : "");
	assert_non_null(req.why);
}

static void expect_error(const char *s, int code)
{
	expect_error_n(s, strlen(s), code);
}

static int str_is(struct http_str s, const char *want)
{
	return s.p && s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

#define assert_str(s, want) \
	do { \
		if (!str_is((s), (want))) \
			fail_msg("%s is '%.*s', want '%s'", #s, (int)(s).len, \
				 (s).p ? (s).p : "(null)", (want)); \
	} while (0)

/* ------------------------------------------------------------- basics */

static void test_simple_get(void **state)
{
	const char *r = "GET /index.html?x=1 HTTP/1.1\r\n"
			"Host: example.com\r\n"
			"User-Agent: curl/8.0\r\n"
			"Accept: */*\r\n"
			"\r\n";

	(void)state;
	assert_int_equal(parse(r), strlen(r));
	assert_int_equal(req.method, HTTP_M_GET);
	assert_str(req.method_str, "GET");
	assert_int_equal(req.form, HTTP_T_ORIGIN);
	assert_str(req.target, "/index.html?x=1");
	assert_str(req.path, "/index.html?x=1");
	assert_null(req.authority.p);
	assert_int_equal(req.minor, 1);
	assert_int_equal(req.num_headers, 3);
	assert_str(req.headers[1].name, "User-Agent");
	assert_str(req.headers[1].value, "curl/8.0");
	assert_str(req.host, "example.com");
	assert_int_equal(req.flags, HTTP_F_KEEP_ALIVE);
	assert_int_equal(req.error, HTTP_OK);
	assert_null(req.range.p);
	assert_non_null(http_find_header(&req, "accept"));
	assert_non_null(http_find_header(&req, "USER-agent"));
	assert_null(http_find_header(&req, "Accept-Encoding"));
	assert_string_equal(http_method_name(req.method), "GET");
}

static void test_incomplete(void **state)
{
	(void)state;
	assert_int_equal(parse(""), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("GET"), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("GET / HTTP/1.1\r"), HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"),
			 HTTP_PARSE_INCOMPLETE);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n\r"),
			 HTTP_PARSE_INCOMPLETE);
}

static void test_methods(void **state)
{
	static const struct {
		const char *name;
		enum http_method m;
	} t[] = {
		{ "GET", HTTP_M_GET }, { "HEAD", HTTP_M_HEAD },
		{ "POST", HTTP_M_POST }, { "PUT", HTTP_M_PUT },
		{ "DELETE", HTTP_M_DELETE }, { "TRACE", HTTP_M_TRACE },
		{ "PATCH", HTTP_M_PATCH }, { "get", HTTP_M_OTHER },
		{ "PROPFIND", HTTP_M_OTHER }, { "GETX", HTTP_M_OTHER },
		{ "ABCDEFGHIJKLMNOP", HTTP_M_OTHER },	/* 16: the limit */
		{ "M-SEARCH", HTTP_M_OTHER },
		/* same lengths as known methods, one byte off */
		{ "GEt", HTTP_M_OTHER }, { "PUTS", HTTP_M_OTHER },
		{ "HEAP", HTTP_M_OTHER }, { "POSt", HTTP_M_OTHER },
		{ "TRACK", HTTP_M_OTHER }, { "PATCh", HTTP_M_OTHER },
		{ "DELETe", HTTP_M_OTHER }, { "OPTIONs", HTTP_M_OTHER },
		{ "CONNECt", HTTP_M_OTHER }, { "G", HTTP_M_OTHER },
	};
	char buf[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(buf, sizeof(buf), "%s / HTTP/1.1\r\nHost: a\r\n\r\n",
			 t[i].name);
		expect_ok(buf);
		assert_int_equal(req.method, t[i].m);
		assert_str(req.method_str, t[i].name);
	}
	expect_ok("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(req.method, HTTP_M_OPTIONS);
	expect_ok("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
	assert_int_equal(req.method, HTTP_M_CONNECT);
	assert_string_equal(http_method_name(HTTP_M_OTHER), "OTHER");

	expect_error("ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\nHost: a\r\n\r\n", 501);
	expect_error("GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("G\x01T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

static void test_versions(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.0\r\n\r\n");
	assert_int_equal(req.minor, 0);
	assert_null(req.host.p);
	assert_int_equal(req.flags & HTTP_F_KEEP_ALIVE, 0);

	expect_error("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
	expect_error("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505);
	expect_error("GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505);
	expect_error("GET / HTTP/3.0\r\n\r\n", 505);
	expect_error("GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400);
	expect_error("GET / http/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
	expect_error("GET / HTTP/a.b\r\nHost: a\r\n\r\n", 400);
	expect_error("GET / HTTPS/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /\r\n\r\n", 400);	/* HTTP/0.9 style */
	expect_error("GET\r\n\r\n", 400);
}

static void test_request_line_spacing(void **state)
{
	(void)state;
	expect_error("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /\tHTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

static void test_targets(void **state)
{
	(void)state;
	expect_ok("GET http://Example.com:8080/a/b?c HTTP/1.1\r\n"
		  "Host: other.example\r\n\r\n");
	assert_int_equal(req.form, HTTP_T_ABSOLUTE);
	assert_str(req.authority, "Example.com:8080");
	assert_str(req.path, "/a/b?c");
	assert_str(req.host, "Example.com:8080");	/* Host is ignored */

	expect_ok("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(req.form, HTTP_T_ABSOLUTE);
	assert_str(req.authority, "h");
	assert_int_equal(req.path.len, 0);		/* means "/" */

	expect_ok("GET http://h?q=1 HTTP/1.0\r\n\r\n");
	assert_str(req.path, "?q=1");
	assert_str(req.host, "h");

	expect_ok("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(req.form, HTTP_T_ASTERISK);
	assert_null(req.path.p);
	expect_ok("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n");
	assert_int_equal(req.form, HTTP_T_AUTHORITY);
	assert_str(req.authority, "h:443");

	/* raw UTF-8 is common in the wild */
	expect_ok("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n");

	expect_error("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET ftp://h/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET http:// HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET http:///a HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET http://user:pw@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	expect_error("GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("CONNECT h HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error("CONNECT h:x HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_error_n("GET /a\0b HTTP/1.1\r\nHost: a\r\n\r\n", 30, 400);
}

static void test_line_endings(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.1\nHost: a\n\n");
	assert_str(req.host, "a");
	expect_ok("GET / HTTP/1.1\r\nHost: a\n\r\n");
	expect_ok("GET / HTTP/1.1\nHost: a\r\n\n");
	expect_error("GET / HTTP/1.1\rHost: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", 400);
}

static void test_leading_empty_lines(void **state)
{
	const char *ok = "\r\n\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";

	(void)state;
	assert_int_equal(parse(ok), strlen(ok));	/* consumed too */
	assert_str(req.method_str, "GET");
	expect_error("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	assert_int_equal(parse("\r\n\r\n"), HTTP_PARSE_INCOMPLETE);
}

static void test_field_syntax(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nX-A:   v  w \t\r\nX-B:\r\n"
		  "X-C:\tq\r\nX-D: caf\xc3\xa9\r\n\r\n");
	assert_int_equal(req.num_headers, 5);
	assert_str(req.headers[1].value, "v  w");
	assert_int_equal(req.headers[2].value.len, 0);
	assert_str(req.headers[3].value, "q");
	assert_str(req.headers[4].value, "caf\xc3\xa9");

	expect_error("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n  c\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x01\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x7f\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nX-A: \x1b[31m\r\n\r\n", 400);
	expect_error_n("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n\r\n", 37, 400);
	expect_error_n("GET / HTTP/1.1\r\nHost: a\r\nX\0: b\r\n\r\n", 34, 400);
}

static void test_host(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.1\r\nhOsT: [::1]:8080\r\n\r\n");
	assert_str(req.host, "[::1]:8080");
	expect_ok("GET / HTTP/1.0\r\nHost: a\r\n\r\n");
	assert_str(req.host, "a");

	expect_error("GET / HTTP/1.1\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nX: y\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost:\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n", 400);
	/* absolute-form still needs a Host line in HTTP/1.1 */
	expect_error("GET http://a/ HTTP/1.1\r\n\r\n", 400);
}

static void test_connection(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
	assert_int_equal(req.flags, HTTP_F_CONN_CLOSE);
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: CLOSE\r\n\r\n");
	assert_int_equal(req.flags, HTTP_F_CONN_CLOSE);
	expect_ok("GET / HTTP/1.0\r\n\r\n");
	assert_int_equal(req.flags, 0);
	expect_ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
	assert_int_equal(req.flags, HTTP_F_CONN_KEEP_ALIVE | HTTP_F_KEEP_ALIVE);
	expect_ok("GET / HTTP/1.0\r\nConnection: TE, keep-alive ,Upgrade\r\n\r\n");
	assert_true(req.flags & HTTP_F_KEEP_ALIVE);
	expect_ok("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n");
	assert_false(req.flags & HTTP_F_KEEP_ALIVE);
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n"
		  "Connection: ,, close\r\n\r\n");
	assert_int_equal(req.flags, HTTP_F_CONN_CLOSE);
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n");
	assert_int_equal(req.flags, HTTP_F_KEEP_ALIVE);
}

static void test_content_length(void **state)
{
	(void)state;
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 42\r\n\r\n");
	assert_true(req.flags & HTTP_F_CONTENT_LENGTH);
	assert_int_equal(req.content_length, 42);
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:  0 \r\n\r\n");
	assert_int_equal(req.content_length, 0);
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\n"
		  "Content-Length: 9223372036854775807\r\n\r\n");
	assert_int_equal(req.content_length, INT64_MAX);
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
		  "content-length: 5\r\n\r\n");
	assert_int_equal(req.content_length, 5);

	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1e3\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\n"
		     "Content-Length: 9223372036854775808\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\n"
		     "Content-Length: 99999999999999999999999\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
		     "Content-Length: 6\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
		     "Content-Length: 05\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n", 400);
}

static void test_transfer_encoding(void **state)
{
	(void)state;
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_true(req.flags & HTTP_F_CHUNKED);
	assert_false(req.flags & HTTP_F_CONTENT_LENGTH);
	expect_ok("POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: Chunked \r\n\r\n");
	assert_true(req.flags & HTTP_F_CHUNKED);

	/* CL + TE, both orders */
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		     "Content-Length: 5\r\n\r\n", 400);
	/* final coding not chunked */
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n", 400);
	/* a coding we would have to undo */
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400);
	/* repeated lines, HTTP/1.0, whitespace before colon */
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n", 400);
	expect_error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400);
	expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		     " , gzip\r\n\r\n", 400);
}

static void test_conditional_fields(void **state)
{
	(void)state;
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"abc\", W/\"d\"\r\n"
		  "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
		  "Range: bytes=0-99\r\nExpect: 100-Continue\r\n\r\n");
	assert_str(req.if_none_match, "\"abc\", W/\"d\"");
	assert_str(req.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT");
	assert_str(req.range, "bytes=0-99");
	assert_str(req.expect, "100-Continue");
	assert_true(req.flags & HTTP_F_EXPECT_CONTINUE);

	expect_ok("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	assert_false(req.flags & HTTP_F_EXPECT_CONTINUE);
	assert_str(req.expect, "100-continue");

	/* a repeat drops the field: ignoring it is always correct */
	expect_ok("GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n"
		  "Range: bytes=2-3\r\nIf-None-Match: \"a\"\r\nIf-None-Match: \"b\"\r\n"
		  "If-Modified-Since: x\r\nIf-Modified-Since: y\r\n"
		  "Range: bytes=4-5\r\n\r\n");
	assert_null(req.range.p);
	assert_null(req.if_none_match.p);
	assert_null(req.if_modified_since.p);
}

static void test_pipelined(void **state)
{
	const char *buf = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
			  "HEAD /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
			  "GET /3 HTTP/1.0\n\n"
			  "GET /4 HTT";
	size_t off = 0, len = strlen(buf);
	ssize_t r;

	(void)state;
	r = parse_n(buf + off, len - off);
	assert_int_equal(r, 28);
	assert_str(req.path, "/1");
	off += r;
	r = parse_n(buf + off, len - off);
	assert_int_equal(req.method, HTTP_M_HEAD);
	assert_str(req.path, "/2");
	assert_int_equal(req.flags, HTTP_F_CONN_CLOSE);
	off += r;
	r = parse_n(buf + off, len - off);
	assert_int_equal(r, 17);
	assert_str(req.path, "/3");
	off += r;
	assert_int_equal(parse_n(buf + off, len - off), HTTP_PARSE_INCOMPLETE);
}

/* Feeding in pieces with one parser state, including a buffer that is
 * compacted (moved) between calls, gives the same fields. */
static void test_incremental_moving_buffer(void **state)
{
	const char *r = "GET /a HTTP/1.1\r\nHost: h\r\nRange: bytes=1-2\r\n\r\n";
	size_t n = strlen(r), cut;
	struct http_parser p;
	char *a, *b;

	(void)state;
	for (cut = 0; cut <= n; cut++) {
		a = malloc(n);
		b = malloc(n);
		memcpy(a, r, n);
		memset(&req, 0, sizeof(req));
		req.headers = slots;
		http_parser_init(&p);
		assert_int_equal(http_parse_request(&p, a, cut, &lim, &req),
				 cut == n ? (ssize_t)n : HTTP_PARSE_INCOMPLETE);
		memcpy(b, a, n);
		free(a);
		assert_int_equal(http_parse_request(&p, b, n, &lim, &req), n);
		assert_str(req.path, "/a");
		assert_str(req.host, "h");
		assert_str(req.range, "bytes=1-2");
		free(b);
	}
	/* a shorter buffer than last time starts over */
	memset(&req, 0, sizeof(req));
	req.headers = slots;
	http_parser_init(&p);
	assert_int_equal(http_parse_request(&p, "XXXXXXXXXX", 10, &lim, &req),
			 HTTP_PARSE_INCOMPLETE);
	assert_int_equal(http_parse_request(&p, r, 5, &lim, &req),
			 HTTP_PARSE_INCOMPLETE);
	assert_int_equal(http_parse_request(&p, r, n, &lim, &req), n);
}

/* ---------------------------------------------------------------- limits */

static char *make_request_line(size_t len)
{
	/* "GET /xxx HTTP/1.1" of exactly len bytes, then a Host and end */
	char *s = malloc(len + 32);
	size_t path = len - strlen("GET  HTTP/1.1");

	if (!s)
		abort();

	memcpy(s, "GET /", 5);
	memset(s + 5, 'x', path - 1);
	strcpy(s + 4 + path, " HTTP/1.1\r\nHost: a\r\n\r\n");
	return s;
}

static void test_limit_request_line(void **state)
{
	char *s;

	(void)state;
	lim.max_request_line = 100;
	s = make_request_line(100);
	expect_ok(s);
	free(s);
	s = make_request_line(101);
	expect_error(s, 414);
	/* detected before the line ends: 101 bytes with no LF yet */
	expect_error_n(s, 101, 414);
	/* ... but not at 100 bytes plus the CR of a CRLF */
	assert_int_equal(parse_n(s, 100), HTTP_PARSE_INCOMPLETE);
	free(s);
	s = make_request_line(100);
	assert_int_equal(parse_n(s, 101), HTTP_PARSE_INCOMPLETE);	/* + CR */
	free(s);
	reset_limits();
}

static char *make_fields(size_t count, size_t value_len)
{
	char *s = malloc(64 + count * (value_len + 16)), *p = s;
	size_t i;

	if (!s)
		abort();
	p += sprintf(p, "GET / HTTP/1.1\r\n");
	for (i = 0; i < count; i++) {
		p += sprintf(p, "X-%03zu: ", i);
		memset(p, 'v', value_len);
		p += value_len;
		p += sprintf(p, "\r\n");
	}
	sprintf(p, "Host: a\r\n\r\n");
	return s;
}

static void test_limit_header_count(void **state)
{
	char *s;

	(void)state;
	lim.max_headers = 10;
	s = make_fields(9, 3);		/* + Host = 10 */
	expect_ok(s);
	assert_int_equal(req.num_headers, 10);
	free(s);
	s = make_fields(10, 3);		/* 11 */
	expect_error(s, 431);
	free(s);
	/* the whole slot array */
	lim.max_headers = SLOTS;
	s = make_fields(SLOTS - 1, 1);
	expect_ok(s);
	assert_int_equal(req.num_headers, SLOTS);
	free(s);
	reset_limits();
}

static void test_limit_head_bytes(void **state)
{
	const char *base = "GET / HTTP/1.1\r\nHost: a\r\n";
	char s[512];
	size_t rl = strlen("GET / HTTP/1.1\r\n"), n;

	(void)state;
	/* header section = "Host: a\r\nX: vvv\r\n\r\n": size it exactly */
	lim.max_head_bytes = 100;
	snprintf(s, sizeof(s), "%sX: ", base);
	n = strlen(s);
	memset(s + n, 'v', 100 - (n - rl) - 4);
	strcpy(s + n + 100 - (n - rl) - 4, "\r\n\r\n");
	assert_int_equal(strlen(s) - rl, 100);
	expect_ok(s);

	/* one more byte */
	snprintf(s, sizeof(s), "%sX: ", base);
	memset(s + n, 'v', 100 - (n - rl) - 3);
	strcpy(s + n + 100 - (n - rl) - 3, "\r\n\r\n");
	assert_int_equal(strlen(s) - rl, 101);
	expect_error(s, 431);
	/* and detected early: 100 bytes of fields, no end yet */
	expect_error_n(s, rl + 100, 431);
	assert_int_equal(parse_n(s, rl + 99), HTTP_PARSE_INCOMPLETE);

	/* bare LF endings count one byte each */
	lim.max_head_bytes = 9;
	expect_ok("GET / HTTP/1.1\nHost: a\n\n");	/* 9 */
	expect_error("GET / HTTP/1.1\nHost: ab\n\n", 431);
	reset_limits();
}

/* A limit is reported only if the lines before it were valid: the error
 * is the same however the bytes were split (parse_n checks that). */
static void test_error_order(void **state)
{
	(void)state;
	lim.max_headers = 2;
	expect_error("GET / HTTP/9.9\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 505);
	expect_error("GET / HTTP/1.1\r\nA : 1\r\nB: 2\r\nC: 3\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC : 3\r\n\r\n", 431);
	lim.max_headers = 100;
	lim.max_head_bytes = 20;
	expect_error("GET / HTTP/1.1\r\nA\x01: 1\r\nB: 22222222222222222222\r\n\r\n", 400);
	expect_error("GET / HTTP/1.1\r\nA: 1\r\nB: 22222222222222222222\r\n\r\n", 431);
	/* semantics only after all syntax */
	reset_limits();
	expect_error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nX\x01: y\r\n\r\n", 400);
	assert_string_equal(req.why, "bad field name");
}

/* The word-at-a-time scan against the byte-at-a-time definition of its
 * classes: every byte value at every position of a word, then random
 * strings (a fixed seed) of every length up to 40 made of the bytes at
 * the classes' edges. */
static int text_byte(unsigned char c, bool ws)
{
	return http_is_vchar(c) || (ws && http_is_ows((char)c));
}

static void test_word_scan(void **state)
{
	static const unsigned char fill[] = { 'A', 0x80, ' ', '\t', 0xff };
	static const unsigned char edge[] = {
		'a', ' ', '\t', '!', '~', 0x7f, 0x00, 0x1f, 0x20, 0x21, 0x80,
		0xff, '\r', '\n',
	};
	unsigned char w[8], str[40];
	unsigned seed = 12345;
	size_t len, i, k, f;
	int b, ws;

	(void)state;
	for (ws = 0; ws <= 1; ws++)
		for (f = 0; f < sizeof(fill); f++)
			for (k = 0; k < 8; k++)
				for (b = 0; b < 256; b++) {
					uint64_t x, m;

					memset(w, fill[f], sizeof(w));
					w[k] = (unsigned char)b;
					memcpy(&x, w, sizeof(x));
					m = http_flag_below_or_del(x, ws ? 0x20 : 0x21);
					for (i = 0; i < 8; i++) {
						unsigned char c = w[i];
						int flagged = c < (ws ? 0x20 : 0x21) ||
							      c == 0x7f;
						uint64_t bit;

						memset(w, 0, sizeof(w));
						w[i] = 0x80;
						memcpy(&bit, w, sizeof(bit));
						memset(w, fill[f], sizeof(w));
						w[k] = (unsigned char)b;
						assert_int_equal(!!(m & bit), flagged);
					}
				}
	for (i = 0; i < 20000; i++) {
		const char *want;

		seed = seed * 1103515245u + 12345u;
		len = (seed >> 8) % (sizeof(str) + 1);
		for (k = 0; k < len; k++) {
			seed = seed * 1103515245u + 12345u;
			/* mostly clean, so scans run long */
			str[k] = (seed >> 16) % 8 ? 'a' + (seed >> 20) % 26 :
						    edge[(seed >> 20) % sizeof(edge)];
		}
		for (ws = 0; ws <= 1; ws++) {
			const char *p = (const char *)str, *e = p + len;

			for (k = 0; k < len && text_byte(str[k], ws); k++)
				;
			want = p + k;
			assert_ptr_equal(http_skip_text(p, e, ws), want);
		}
	}
}

/* The scans against their byte-at-a-time definitions, exhaustively: a
 * range of every length up to 24 (three words, so every way a range ends
 * in a full word, an overlapping last word or the short path), starting
 * at every alignment, with every byte value at every position in a clean
 * range (the rest is the class's own, so the scan must stop exactly
 * there).  Then the table scan (tchar) the same way. */
static void test_scan_exhaustive(void **state)
{
	static const unsigned char clean[] = { 'a', 0x80, 0xff, '~', '!' };
	char buf[8 + 24 + 8];
	size_t align, len, k, f;
	int b, ws;

	(void)state;
	for (align = 0; align < 8; align++)
		for (len = 0; len <= 24; len++)
			for (f = 0; f < sizeof(clean); f++)
				for (k = 0; k <= len; k++)
					for (b = 0; b < 256; b++) {
						const char *p = buf + align, *e = p + len;
						const char *want;

						/* bytes outside [p, e) are bad: a
						 * scan that reads past e and uses it
						 * would stop there */
						memset(buf, 0x00, sizeof(buf));
						memset(buf + align, clean[f], len);
						if (k < len)
							buf[align + k] = (char)b;
						for (ws = 0; ws <= 1; ws++) {
							want = k < len && !text_byte((unsigned char)b, ws) ?
							       p + k : e;
							assert_ptr_equal(http_skip_text(p, e, ws), want);
						}
						want = k < len && !http_tchar[b] ? p + k : e;
						memset(buf + align, 'a', len);
						if (k < len)
							buf[align + k] = (char)b;
						assert_ptr_equal(http_skip_in(http_tchar, p, e), want);
						if (k == len)
							break;	/* no byte to vary */
					}
}

/* In buf: `before`, len bytes of `fill` with c at k, `after`; its length. */
static size_t with_byte_at(char *buf, const char *before, char fill,
			   size_t len, size_t k, unsigned char c,
			   const char *after)
{
	size_t n = strlen(before);

	memcpy(buf, before, n);
	memset(buf + n, fill, len);
	buf[n + k] = (char)c;
	n += len;
	memcpy(buf + n, after, strlen(after));
	return n + strlen(after);
}

/* The scans go several bytes per step (http_lex.h): every character class
 * is checked at every position of names, targets and values of every
 * length around the step sizes, so that no byte escapes a word or a
 * tail. */
static void test_scan_positions(void **state)
{
	static const unsigned char bad_value[] = {
		0x00, 0x01, 0x08, 0x0b, 0x0c, 0x0d, 0x1f, 0x7f,
	};
	static const unsigned char good_value[] = {
		'\t', ' ', '!', '~', ':', '"', 0x80, 0xc3, 0xff,
	};
	static const unsigned char bad_target[] = {
		0x00, 0x01, '\t', 0x0d, 0x1f, 0x7f,
	};
	static const unsigned char bad_name[] = {
		'"', '(', ')', ',', '/', ';', '<', '=', '>', '?', '@', '[',
		'\\', ']', '{', '}', 0x01, 0x7f, 0x80, 0xff,
	};
	const char *tchars = "!#$%&'*+-.^_`|~09AZaz";
	const char *head = "GET / HTTP/1.1\r\nHost: a\r\n";
	char buf[256];
	size_t len, k, i, n;

	(void)state;
	for (len = 1; len <= 27; len++) {
		for (k = 0; k < len; k++) {
			/* field values: a CTL or DEL anywhere is 400 */
			for (i = 0; i < sizeof(bad_value); i++) {
				n = with_byte_at(buf, "GET / HTTP/1.1\r\nHost: a\r\nX: ",
						 'v', len, k, bad_value[i], "\r\n\r\n");
				expect_error_n(buf, n, 400);
				assert_string_equal(req.why, bad_value[i] == '\r' ?
						    "bare CR" :
						    "control character in field value");
			}
			/* ... HTAB, SP (inside), VCHAR and obs-text are not */
			for (i = 0; i < sizeof(good_value); i++) {
				n = with_byte_at(buf, "GET / HTTP/1.1\r\nHost: a\r\nX: [",
						 'v', len, k, good_value[i], "]\r\n\r\n");
				assert_int_equal(parse_n(buf, n), n);
				assert_int_equal(req.headers[1].value.len, len + 2);
			}
			/* request-targets: CTLs, HTAB and DEL are 400 */
			for (i = 0; i < sizeof(bad_target); i++) {
				n = with_byte_at(buf, "GET /", 't', len, k, bad_target[i],
						 " HTTP/1.1\r\nHost: a\r\n\r\n");
				expect_error_n(buf, n, 400);
				assert_string_equal(req.why,
						    "bad character in request-target");
			}
			/* field names: separators, CTLs, DEL, obs-text are 400 */
			for (i = 0; i < sizeof(bad_name); i++) {
				n = with_byte_at(buf, head, 'N', len, k, bad_name[i],
						 ": v\r\n\r\n");
				expect_error_n(buf, n, 400);
			}
			/* ... every kind of tchar is not */
			n = with_byte_at(buf, head, 'N', len, k,
					 (unsigned char)tchars[(len + k) % strlen(tchars)],
					 ": v\r\n\r\n");
			assert_int_equal(parse_n(buf, n), n);
			assert_int_equal(req.headers[1].name.len, len);
			/* Host values: anything outside host characters is 400 */
			n = with_byte_at(buf, "GET / HTTP/1.1\r\nHost: ", 'h', len, k,
					 '/', "\r\n\r\n");
			expect_error_n(buf, n, 400);
			assert_string_equal(req.why, "bad Host");
		}
		/* a clean target of this length, with a query */
		n = with_byte_at(buf, "GET /", 't', len, len - 1, '?',
				 " HTTP/1.1\r\nHost: a\r\n\r\n");
		assert_int_equal(parse_n(buf, n), n);
		assert_int_equal(req.target.len, 1 + len);
	}
}

/* Slowloris: a large head dripped in one byte per call is linear.  With a
 * quadratic rescan this case does ~10^9 steps and trips the timeout. */
static void test_drip_is_linear(void **state)
{
	struct http_parser p;
	char *s;
	size_t n, i;
	ssize_t r = HTTP_PARSE_INCOMPLETE;

	(void)state;
	lim.max_headers = SLOTS;
	lim.max_head_bytes = 1 << 20;
	s = make_fields(SLOTS - 1, 200);
	n = strlen(s);
	assert_true(n > 50000);
	memset(&req, 0, sizeof(req));
	req.headers = slots;
	http_parser_init(&p);
	for (i = 1; i <= n && r == HTTP_PARSE_INCOMPLETE; i++)
		r = http_parse_request(&p, s, i, &lim, &req);
	assert_int_equal(r, n);
	assert_int_equal(req.num_headers, SLOTS);
	free(s);
	reset_limits();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_simple_get, setup),
		cmocka_unit_test_setup(test_incomplete, setup),
		cmocka_unit_test_setup(test_methods, setup),
		cmocka_unit_test_setup(test_versions, setup),
		cmocka_unit_test_setup(test_request_line_spacing, setup),
		cmocka_unit_test_setup(test_targets, setup),
		cmocka_unit_test_setup(test_line_endings, setup),
		cmocka_unit_test_setup(test_leading_empty_lines, setup),
		cmocka_unit_test_setup(test_field_syntax, setup),
		cmocka_unit_test_setup(test_host, setup),
		cmocka_unit_test_setup(test_connection, setup),
		cmocka_unit_test_setup(test_content_length, setup),
		cmocka_unit_test_setup(test_transfer_encoding, setup),
		cmocka_unit_test_setup(test_conditional_fields, setup),
		cmocka_unit_test_setup(test_pipelined, setup),
		cmocka_unit_test_setup(test_incremental_moving_buffer, setup),
		cmocka_unit_test_setup(test_limit_request_line, setup),
		cmocka_unit_test_setup(test_limit_header_count, setup),
		cmocka_unit_test_setup(test_limit_head_bytes, setup),
		cmocka_unit_test_setup(test_error_order, setup),
		cmocka_unit_test_setup(test_word_scan, setup),
		cmocka_unit_test_setup(test_scan_exhaustive, setup),
		cmocka_unit_test_setup(test_scan_positions, setup),
		cmocka_unit_test_setup(test_drip_is_linear, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
