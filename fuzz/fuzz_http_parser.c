/*
 * fuzz_http_parser.c - libFuzzer target: the request parser, and what the
 * server does with a parsed request (URI, Range, HTTP-date,
 * Accept-Encoding).
 *
 * Besides "no crash, no sanitizer report", it asserts the parser's
 * contract:
 *   - the return value is ERROR, INCOMPLETE or 0 < n <= size;
 *   - an error is one of the five status codes and has a reason;
 *   - every pointer in a parsed request lies inside the head it returned;
 *   - feeding the input in pieces (two split points, then the rest; and
 *     byte by byte for short inputs) gives exactly the all-at-once result;
 *   - the buffer may move between calls (we parse a second copy);
 *   - the normalized path is relative, without "."/".." or empty segments;
 *   - a satisfiable range lies inside the file;
 *   - a parsed HTTP-date formats and parses back to the same second.
 * Small limits, so the 414/431 paths are reached at fuzzing sizes.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_accept.h"
#include "http_parser.h"
#include "uri.h"

#include "fuzz_check.h"
#include "fuzz_http.h"

#define MAX_FIELDS 8
static const struct http_limits lim = { 256, MAX_FIELDS, 1024 };

struct result {
	ssize_t ret;
	struct http_request req;
	struct http_header slots[MAX_FIELDS];
};

static void check_result(const struct result *r, const char *buf, size_t size)
{
	const struct http_request *q = &r->req;
	size_t n;

	CHECK(r->ret == HTTP_PARSE_ERROR || r->ret == HTTP_PARSE_INCOMPLETE ||
	      (r->ret > 0 && (size_t)r->ret <= size));
	if (r->ret == HTTP_PARSE_ERROR) {
		CHECK(q->error == 400 || q->error == 414 || q->error == 431 ||
		      q->error == 501 || q->error == 505);
		CHECK(q->why != NULL);
		return;
	}
	if (r->ret < 0)
		return;
	n = (size_t)r->ret;
	CHECK(q->error == HTTP_OK);
	CHECK(buf[n - 1] == '\n');
	CHECK(q->minor == 0 || q->minor == 1);
	CHECK(q->num_headers <= lim.max_headers);
	CHECK(q->method_str.len >= 1 && q->method_str.len <= 16);
	check_str(q->method_str, buf, n);
	check_str(q->target, buf, n);
	check_str(q->path, buf, n);
	check_str(q->authority, buf, n);
	check_str(q->host, buf, n);
	check_str(q->if_none_match, buf, n);
	check_str(q->if_modified_since, buf, n);
	check_str(q->range, buf, n);
	check_str(q->expect, buf, n);
	CHECK(q->target.len > 0);
	if (q->minor == 1)
		CHECK(q->host.p != NULL);
	CHECK(!((q->flags & HTTP_F_CHUNKED) && (q->flags & HTTP_F_CONTENT_LENGTH)));
	check_fields(q->headers, q->num_headers, buf, n);
}

/* a parsed from buffer ba, b from bb (possibly another copy). */
static void check_same(const struct result *a, const char *ba,
		       const struct result *b, const char *bb)
{
	const struct http_request *x = &a->req, *y = &b->req;

	CHECK(a->ret == b->ret);
	if (a->ret == HTTP_PARSE_ERROR)
		CHECK(x->error == y->error);
	if (a->ret <= 0)
		return;
	CHECK(x->method == y->method && x->form == y->form &&
	      x->minor == y->minor && x->flags == y->flags &&
	      x->num_headers == y->num_headers);
	CHECK(!(x->flags & HTTP_F_CONTENT_LENGTH) ||
	      x->content_length == y->content_length);
	CHECK(same_str(x->method_str, ba, y->method_str, bb));
	CHECK(same_str(x->target, ba, y->target, bb));
	CHECK(same_str(x->path, ba, y->path, bb));
	CHECK(same_str(x->authority, ba, y->authority, bb));
	CHECK(same_str(x->host, ba, y->host, bb));
	CHECK(same_str(x->range, ba, y->range, bb));
	CHECK(same_str(x->if_none_match, ba, y->if_none_match, bb));
	CHECK(same_str(x->if_modified_since, ba, y->if_modified_since, bb));
	CHECK(same_str(x->expect, ba, y->expect, bb));
	check_same_fields(x->headers, ba, y->headers, bb, x->num_headers);
}

/* fuzz_parse_fn: one call into a struct result. */
static ssize_t parse(void *res, struct http_parser *p, const char *buf,
		     size_t len)
{
	struct result *r = res;

	return r->ret = http_parse_request(p, buf, len, &lim, &r->req);
}

/* A fresh result of buf[0..size) fed through the given prefix lengths. */
static void parse_pieces(struct result *r, const char *buf, size_t size,
			 const size_t *cuts, size_t ncuts)
{
	struct http_parser p;

	memset(r, 0, sizeof(*r));
	r->req.headers = r->slots;
	fuzz_pieces(parse, r, &p, buf, size, cuts, ncuts);
}

static void check_uri(const struct http_request *q)
{
	char out[512];
	struct uri_path up;
	enum uri_error e;
	size_t i;

	if (q->form != HTTP_T_ORIGIN && q->form != HTTP_T_ABSOLUTE)
		return;
	e = uri_normalize_path(q->path.p ? q->path.p : "", q->path.len, out,
			       sizeof(out), &up);
	CHECK(e == URI_OK || e == URI_E_BAD || e == URI_E_TOO_LONG);
	if (e != URI_OK)
		return;
	CHECK(strlen(out) == up.len);
	CHECK(up.len == 0 || (out[0] != '/' && out[up.len - 1] != '/'));
	CHECK(!strstr(out, "//"));
	for (i = 0; i < up.len; i++)
		CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f);
	CHECK(strcmp(out, ".") != 0 && strcmp(out, "..") != 0);
	CHECK(strncmp(out, "../", 3) != 0 && strncmp(out, "./", 2) != 0);
	CHECK(!strstr(out, "/../") && !strstr(out, "/./"));
	CHECK(up.len < 2 || strcmp(out + up.len - 2, "/.") != 0);
	CHECK(up.len < 3 || strcmp(out + up.len - 3, "/..") != 0);
}

static void check_range(const char *v, size_t n, uint64_t size)
{
	uint64_t start = 0, len = 0;
	enum http_range_result r = http_range_parse(v, n, size, &start, &len);

	CHECK(r == HTTP_RANGE_IGNORE || r == HTTP_RANGE_OK ||
	      r == HTTP_RANGE_UNSATISFIABLE);
	if (r == HTTP_RANGE_OK)
		CHECK(len > 0 && start < size && len <= size - start);
}

/* q-values within 0..1000, the same from a copy of exactly n bytes (so
 * nothing past n was read: ASan sees the copy's end). */
static void check_accept(const char *v, size_t n)
{
	struct http_codings a, b;
	char *copy = malloc(n ? n : 1);

	CHECK(copy);
	memcpy(copy, v, n);
	http_accept_encoding(v, n, &a);
	http_accept_encoding(copy, n, &b);
	free(copy);
	CHECK(a.br <= 1000 && a.gzip <= 1000);
	CHECK(a.br == b.br && a.gzip == b.gzip);
}

static void check_date(const char *v, size_t n)
{
	/* A fixed "now" (2025-01-01): results must not depend on the clock. */
	const int64_t now = 1735689600;
	char buf[HTTP_DATE_LEN + 1];
	int64_t t, t2;

	if (http_date_parse_at(v, n, now, &t) != 0)
		return;
	CHECK(http_date_format(t, buf) == HTTP_DATE_LEN);
	CHECK(strlen(buf) == HTTP_DATE_LEN);
	CHECK(http_date_parse_at(buf, HTTP_DATE_LEN, now, &t2) == 0 && t2 == t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result all, piece, moved;
	const char *buf = (const char *)data;
	char *copy;
	size_t cuts[2], i;

	parse_pieces(&all, buf, size, NULL, 0);
	check_result(&all, buf, size);

	/* Two split points chosen by the input itself, then the rest. */
	cuts[0] = size ? data[0] % (size + 1) : 0;
	cuts[1] = size ? cuts[0] + (size - cuts[0]) / 2 : 0;
	parse_pieces(&piece, buf, size, cuts, 2);
	check_same(&all, buf, &piece, buf);

	/* Byte by byte, on a copy that moves after every call. */
	if (size <= 2048) {
		struct fuzz_drip d;

		memset(&moved, 0, sizeof(moved));
		moved.req.headers = moved.slots;
		fuzz_drip(&d, parse, &moved, buf, size);
		check_same(&all, buf, &moved, d.last);
		fuzz_drip_end(&d);
	}

	if (all.ret > 0) {
		const struct http_request *q = &all.req;

		check_uri(q);
		if (q->range.p) {
			check_range(q->range.p, q->range.len, 0);
			check_range(q->range.p, q->range.len, 1000);
			check_range(q->range.p, q->range.len, UINT64_MAX);
		}
		if (q->if_modified_since.p)
			check_date(q->if_modified_since.p, q->if_modified_since.len);
		for (i = 0; i < q->num_headers; i++)
			if (q->headers[i].name.len == 15 &&
			    !strncasecmp(q->headers[i].name.p, "accept-encoding", 15))
				check_accept(q->headers[i].value.p,
					     q->headers[i].value.len);
	}

	/* The raw input as a Range and an HTTP-date value too: a short cut
	 * for the fuzzer to these parsers. */
	copy = malloc(size ? size : 1);
	CHECK(copy);
	memcpy(copy, data, size);
	check_range(copy, size, size * 7);
	check_accept(copy, size);
	check_date(copy, size);
	free(copy);
	return 0;
}
