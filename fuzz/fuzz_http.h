/*
 * fuzz_http.h - what the targets of the two HTTP/1.x head parsers
 * (fuzz_http_parser.c: requests, fuzz_http_response.c: responses) check
 * alike: that the pointers of a parsed head lie inside it, that its field
 * lines are clean, that two parses gave the same answer, and the feeding
 * of a head in pieces and byte by byte through the parser's one
 * incremental contract (http_parser.h).
 */
#ifndef ZC_FUZZ_HTTP_H
#define ZC_FUZZ_HTTP_H

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "http_parser.h"

#include "fuzz_check.h"

/* s is absent (NULL, empty) or lies inside base[0..n). */
static inline void check_str(struct http_str s, const char *base, size_t n)
{
	if (!s.p) {
		CHECK(s.len == 0);
		return;
	}
	CHECK(s.p >= base && s.p <= base + n);
	CHECK(s.len <= (size_t)(base + n - s.p));
}

/* The fields of a head base[0..n): inside it, a name, no NUL, CR or LF
 * in a value. */
static inline void check_fields(const struct http_header *hs, size_t count,
				const char *base, size_t n)
{
	for (size_t i = 0; i < count; i++) {
		check_str(hs[i].name, base, n);
		check_str(hs[i].value, base, n);
		CHECK(hs[i].name.len > 0);
		CHECK(!memchr(hs[i].value.p, '\0', hs[i].value.len));
		CHECK(!memchr(hs[i].value.p, '\r', hs[i].value.len));
		CHECK(!memchr(hs[i].value.p, '\n', hs[i].value.len));
	}
}

#define OFF(s, base) ((s).p ? (s).p - (base) : -1)

/* a in buffer ba and b in bb are the same bytes of their buffers. */
static inline int same_str(struct http_str a, const char *ba,
			   struct http_str b, const char *bb)
{
	return a.len == b.len && OFF(a, ba) == OFF(b, bb);
}

/* The same fields, a's in ba, b's in bb. */
static inline void check_same_fields(const struct http_header *a,
				     const char *ba,
				     const struct http_header *b,
				     const char *bb, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		CHECK(same_str(a[i].name, ba, b[i].name, bb));
		CHECK(same_str(a[i].value, ba, b[i].value, bb));
	}
}

/* One call of a head parser into the target's result `res` (which keeps
 * the return value too). */
typedef ssize_t fuzz_parse_fn(void *res, struct http_parser *p,
			      const char *buf, size_t len);

/* Feed buf[0..size) to a fresh parser growing through the prefix lengths
 * cuts[0..ncuts), then whole; the first answer that is not "incomplete". */
static inline ssize_t fuzz_pieces(fuzz_parse_fn *parse, void *res,
				  struct http_parser *p, const char *buf,
				  size_t size, const size_t *cuts, size_t ncuts)
{
	ssize_t r;

	http_parser_init(p);
	for (size_t i = 0; i < ncuts; i++) {
		r = parse(res, p, buf, cuts[i]);
		if (r != HTTP_PARSE_INCOMPLETE)
			return r;
	}
	return parse(res, p, buf, size);
}

/* Two copies of the input for fuzz_drip; fuzz_drip_end frees them. */
struct fuzz_drip {
	char *a, *b;
	const char *last;	/* the copy the last call parsed */
};

/* Byte by byte, from 0 bytes on, on two copies of buf that take turns:
 * the bytes stay, the address changes after every call.  The answer; the
 * result points into d->last. */
static inline ssize_t fuzz_drip(struct fuzz_drip *d, fuzz_parse_fn *parse,
				void *res, const char *buf, size_t size)
{
	struct http_parser p;
	ssize_t r;

	d->a = malloc(size + 1);
	d->b = malloc(size + 1);
	CHECK(d->a && d->b);
	memcpy(d->a, buf, size);
	memcpy(d->b, buf, size);
	http_parser_init(&p);
	d->last = d->b;
	r = parse(res, &p, d->b, 0);
	for (size_t i = 1; i <= size && r == HTTP_PARSE_INCOMPLETE; i++) {
		d->last = i % 2 ? d->a : d->b;
		r = parse(res, &p, d->last, i);
	}
	return r;
}

static inline void fuzz_drip_end(struct fuzz_drip *d)
{
	free(d->a);
	free(d->b);
}

#endif
