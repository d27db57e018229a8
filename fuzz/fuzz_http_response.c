/*
 * fuzz_http_response.c - libFuzzer target: the upstream response-head
 * parser of the reverse proxy (http_response.h), the body kind it leads
 * to, Connection options and hop-by-hop fields.
 *
 * The input is a stream from an upstream: up to four heads are parsed one
 * after the other (a 1xx, then the final response, then whatever follows
 * the head), each checked against the parser's contract:
 *   - the return value is ERROR, INCOMPLETE or 0 < n <= size;
 *   - an error is 400, 431 or 505 and has a reason;
 *   - every pointer in a parsed head lies inside the head, the reason
 *     never NULL;
 *   - feeding the input in pieces (two split points, then the rest; byte
 *     by byte on a buffer that moves after every call) gives exactly the
 *     all-at-once result, and a shorter buffer after a parse starts over;
 *   - the framing flags agree with each other (never chunked and a
 *     length, no Transfer-Encoding in HTTP/1.0, none in a 1xx or 204),
 *     with the fields (Content-Length's value, Upgrade, the keep-alive
 *     decision) and with http_response_body for every method;
 *   - every element of every Connection field is listed
 *     (http_connection_lists), in any case;
 *   - http_hop_by_hop agrees with its list, compared here by strncasecmp.
 * Small limits, so the oversized-head paths are reached at fuzzing sizes.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_parser.h"
#include "http_response.h"

#include "fuzz_check.h"
#include "fuzz_http.h"

#define MAX_FIELDS 8
static const struct http_limits lim = { 64, MAX_FIELDS, 512 };

struct result {
	ssize_t ret;
	struct http_response resp;
	struct http_header slots[MAX_FIELDS];
};

static const unsigned known_flags = HTTP_F_CONTENT_LENGTH | HTTP_F_CHUNKED |
	HTTP_F_CONN_CLOSE | HTTP_F_CONN_KEEP_ALIVE | HTTP_F_KEEP_ALIVE |
	HTTP_RF_UPGRADE | HTTP_RF_TE_CLOSE | HTTP_RF_TE_OTHER;

static int named(const struct http_header *h, const char *name)
{
	return h->name.len == strlen(name) &&
	       !strncasecmp(h->name.p, name, h->name.len);
}

/* The hop-by-hop list of http_response.h, the slow way. */
static int hop_oracle(const char *s, size_t n)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "te",
		"transfer-encoding", "upgrade", "proxy-authenticate",
		"proxy-authorization", "trailer",
	};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (n == strlen(hop[i]) && !strncasecmp(s, hop[i], n))
			return 1;
	return 0;
}

static int ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Every element of every Connection field is listed, as sent and in
 * upper case. */
static void check_connection(const struct http_response *q)
{
	char up[512];

	for (size_t i = 0; i < q->num_headers; i++) {
		const struct http_str v = q->headers[i].value;
		size_t s = 0, e, k;

		if (!named(&q->headers[i], "connection"))
			continue;
		while (s <= v.len) {
			for (e = s; e < v.len && v.p[e] != ','; e++)
				;
			size_t a = s, b = e;

			while (a < b && ows(v.p[a]))
				a++;
			while (b > a && ows(v.p[b - 1]))
				b--;
			if (b > a) {
				CHECK(http_connection_lists(q->headers,
							    q->num_headers,
							    v.p + a, b - a));
				if (b - a <= sizeof(up)) {
					for (k = a; k < b; k++)
						up[k - a] = (char)(v.p[k] >= 'a' &&
							v.p[k] <= 'z' ? v.p[k] - 32 : v.p[k]);
					CHECK(http_connection_lists(q->headers,
								    q->num_headers,
								    up, b - a));
				}
			}
			s = e + 1;
		}
	}
	CHECK(!http_connection_lists(q->headers, q->num_headers, "", 0));
}

/* The framing flags against each other, the fields and the body kind. */
static void check_framing(const struct http_response *q)
{
	static const enum http_method methods[] = {
		HTTP_M_GET, HTTP_M_HEAD, HTTP_M_POST, HTTP_M_CONNECT,
		HTTP_M_OTHER,
	};
	unsigned f = q->flags;
	int st = q->status, upgrade = 0, ka;
	size_t i;

	CHECK((f & ~known_flags) == 0);
	CHECK(!((f & HTTP_F_CHUNKED) && (f & HTTP_F_CONTENT_LENGTH)));
	CHECK(!((f & HTTP_RF_TE_CLOSE) &&
		(f & (HTTP_F_CHUNKED | HTTP_F_CONTENT_LENGTH))));
	if (f & HTTP_RF_TE_CLOSE)
		CHECK(f & HTTP_RF_TE_OTHER);
	if (f & HTTP_RF_TE_OTHER)
		CHECK(f & (HTTP_F_CHUNKED | HTTP_RF_TE_CLOSE));
	if (q->minor == 0)
		CHECK(!(f & (HTTP_F_CHUNKED | HTTP_RF_TE_CLOSE)));
	if (st < 200 || st == 204) {
		CHECK(!(f & (HTTP_F_CHUNKED | HTTP_RF_TE_CLOSE)));
		CHECK(q->content_length == 0);
	}
	if (!(f & HTTP_F_CONTENT_LENGTH))
		CHECK(q->content_length == 0);
	ka = !(f & HTTP_F_CONN_CLOSE) &&
	     (q->minor == 1 || (f & HTTP_F_CONN_KEEP_ALIVE));
	CHECK(!!(f & HTTP_F_KEEP_ALIVE) == ka);

	for (i = 0; i < q->num_headers; i++) {
		const struct http_header *h = &q->headers[i];

		upgrade |= named(h, "upgrade");
		if (named(h, "content-length")) {
			uint64_t v = 0;

			CHECK(h->value.len > 0);
			for (size_t k = 0; k < h->value.len; k++) {
				CHECK(h->value.p[k] >= '0' && h->value.p[k] <= '9');
				v = v * 10 + (uint64_t)(h->value.p[k] - '0');
			}
			CHECK(v == q->content_length);
			CHECK(f & HTTP_F_CONTENT_LENGTH);
		}
		CHECK(http_hop_by_hop(h->name.p, h->name.len) ==
		      hop_oracle(h->name.p, h->name.len));
	}
	CHECK(!!(f & HTTP_RF_UPGRADE) == upgrade);

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		enum http_body_kind k = http_response_body(q, methods[i]), want;

		if (methods[i] == HTTP_M_HEAD || st < 200 || st == 204 ||
		    st == 304 || (methods[i] == HTTP_M_CONNECT && st < 300))
			want = HTTP_BODY_NONE;
		else if (f & HTTP_F_CHUNKED)
			want = HTTP_BODY_CHUNKED;
		else if (f & HTTP_F_CONTENT_LENGTH)
			want = HTTP_BODY_LENGTH;
		else
			want = HTTP_BODY_CLOSE;
		CHECK(k == want);
	}
}

static void check_result(const struct result *r, const char *buf, size_t size)
{
	const struct http_response *q = &r->resp;
	size_t i, n;

	CHECK(r->ret == HTTP_PARSE_ERROR || r->ret == HTTP_PARSE_INCOMPLETE ||
	      (r->ret > 0 && (size_t)r->ret <= size));
	if (r->ret == HTTP_PARSE_ERROR) {
		CHECK(q->error == HTTP_E_BAD_REQUEST ||
		      q->error == HTTP_E_HEADERS_TOO_LARGE ||
		      q->error == HTTP_E_VERSION);
		CHECK(q->why != NULL);
		return;
	}
	if (r->ret < 0)
		return;
	n = (size_t)r->ret;
	CHECK(q->error == HTTP_OK);
	CHECK(n >= 14 && !memcmp(buf, "HTTP/1.", 7));
	CHECK(buf[n - 1] == '\n');
	CHECK(q->minor == 0 || q->minor == 1);
	CHECK(buf[7] == '0' + q->minor);
	CHECK(q->status >= 100 && q->status <= 599);
	CHECK(q->num_headers <= lim.max_headers);
	CHECK(q->reason.p != NULL);
	check_str(q->reason, buf, n);
	CHECK(q->reason.p >= buf + 12 && q->reason.p <= buf + 13);
	for (i = 0; i < q->reason.len; i++) {
		unsigned char c = (unsigned char)q->reason.p[i];

		CHECK(c == '\t' || (c >= ' ' && c != 0x7f));
	}
	check_fields(q->headers, q->num_headers, buf, n);
	check_framing(q);
	check_connection(q);
}

/* a parsed from buffer ba, b from bb (possibly another copy). */
static void check_same(const struct result *a, const char *ba,
		       const struct result *b, const char *bb)
{
	const struct http_response *x = &a->resp, *y = &b->resp;

	CHECK(a->ret == b->ret);
	if (a->ret == HTTP_PARSE_ERROR)
		CHECK(x->error == y->error && !strcmp(x->why, y->why));
	if (a->ret <= 0)
		return;
	CHECK(x->status == y->status && x->minor == y->minor &&
	      x->flags == y->flags && x->num_headers == y->num_headers &&
	      x->content_length == y->content_length);
	CHECK(same_str(x->reason, ba, y->reason, bb));
	check_same_fields(x->headers, ba, y->headers, bb, x->num_headers);
}

/* fuzz_parse_fn: one call into a struct result. */
static ssize_t parse(void *res, struct http_parser *p, const char *buf,
		     size_t len)
{
	struct result *r = res;

	return r->ret = http_parse_response(p, buf, len, &lim, &r->resp);
}

static void clear(struct result *r)
{
	memset(r, 0, sizeof(*r));
	r->resp.headers = r->slots;
}

/* A fresh result of buf[0..size) fed through the given prefix lengths,
 * with the parser p. */
static void parse_pieces(struct result *r, struct http_parser *p,
			 const char *buf, size_t size, const size_t *cuts,
			 size_t ncuts)
{
	clear(r);
	fuzz_pieces(parse, r, p, buf, size, cuts, ncuts);
}

/* One head at buf[0..size), every way: its length, or <= 0. */
static ssize_t check_head(const char *buf, size_t size, unsigned char seed)
{
	static struct result all, piece, moved, again;
	struct http_parser p, q;
	size_t cuts[2];

	parse_pieces(&all, &p, buf, size, NULL, 0);
	check_result(&all, buf, size);

	/* Two split points chosen by the input, then the rest. */
	cuts[0] = size ? seed % (size + 1) : 0;
	cuts[1] = cuts[0] + (size - cuts[0]) / 2;
	parse_pieces(&piece, &q, buf, size, cuts, 2);
	check_same(&all, buf, &piece, buf);

	/* A shorter buffer than the last call's starts over (after a head
	 * or while incomplete; after an error the parser is done). */
	if (all.ret != HTTP_PARSE_ERROR && cuts[0] < size) {
		struct result fresh;

		again = all;
		again.resp.headers = again.slots;
		parse(&again, &p, buf, cuts[0]);
		parse_pieces(&fresh, &q, buf, cuts[0], NULL, 0);
		check_same(&fresh, buf, &again, buf);
	}

	/* Byte by byte, on a copy that moves after every call. */
	if (size <= 2048) {
		struct fuzz_drip d;

		clear(&moved);
		fuzz_drip(&d, parse, &moved, buf, size);
		check_same(&all, buf, &moved, d.last);
		fuzz_drip_end(&d);
	}
	return all.ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	unsigned char seed = size ? data[size - 1] : 0;
	size_t off = 0;
	char *copy;

	/* A stream of heads: 1xx, then the final one, then what follows. */
	for (int k = 0; k < 4 && off < size; k++) {
		ssize_t n = check_head(buf + off, size - off, seed);

		if (n <= 0)
			break;
		off += (size_t)n;
	}

	/* The raw input as a field name: a short cut to http_hop_by_hop
	 * (on an exact copy, so ASan sees a read past its end). */
	copy = malloc(size ? size : 1);
	CHECK(copy);
	memcpy(copy, data, size);
	CHECK(http_hop_by_hop(copy, size) == hop_oracle(copy, size));
	free(copy);
	return 0;
}
