/* test_http_chunked.c - the chunked body decoder: sizes, extensions,
 * trailers, line ends, limits, pipelining, and segment independence.
 *
 * Every body in this file goes through dec(), which decodes it as one
 * segment and again cut at every split point (one cut, then two cuts
 * around it, then byte by byte), each segment in a buffer of its exact
 * size so that ASan sees any read outside it, and asserts that the data,
 * the bytes consumed and the result are identical. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http_chunked.h"

#include "expect_each.h"

static struct http_chunked_limits lim;

static int setup(void **state)
{
	(void)state;
	lim.max_body = 1 << 20;
	lim.max_ext = 256;
	lim.max_trailer = 1024;
	return 0;
}

struct outcome {
	ssize_t err;		/* 0, or the error */
	bool done;
	size_t consumed;	/* bytes of the input consumed */
	size_t calls;
	char *data;		/* the body data, concatenated */
	size_t data_len;
};

static void outcome_free(struct outcome *o)
{
	free(o->data);
	memset(o, 0, sizeof(*o));
}

/* Decode one segment (a copy of exactly len bytes) to its end, the end of
 * the body or an error.  The contract of each call is checked here. */
static void feed(struct http_chunked *d, const char *src, size_t len,
		 struct outcome *o)
{
	char *seg = malloc(len ? len : 1);
	size_t pos = 0;

	assert_non_null(seg);
	memcpy(seg, src, len);
	while (!o->err && !o->done && pos < len) {
		size_t off = 77, dlen = 77;
		ssize_t n = http_chunked_step(d, seg + pos, len - pos, &off,
					      &dlen);

		o->calls++;
		if (n < 0) {
			assert_true(n == -EPROTO || n == -E2BIG);
			assert_int_equal(dlen, 0);
			o->err = n;
			/* errors are final */
			n = http_chunked_step(d, seg + pos, len - pos, &off,
					      &dlen);
			assert_int_equal(n, o->err);
			assert_int_equal(dlen, 0);
			break;
		}
		assert_true((size_t)n <= len - pos);
		assert_true(off + dlen <= (size_t)n);
		o->done = http_chunked_done(d);
		if (n == 0)
			assert_true(o->done);	/* no progress only at the end */
		if (dlen) {
			o->data = realloc(o->data, o->data_len + dlen);
			assert_non_null(o->data);
			memcpy(o->data + o->data_len, seg + pos + off, dlen);
			o->data_len += dlen;
		}
		pos += n;
		o->consumed += n;
	}
	if (o->done) {
		/* finished: nothing more is taken */
		size_t off, dlen;

		assert_int_equal(http_chunked_step(d, seg + pos, len - pos,
						   &off, &dlen), 0);
		assert_int_equal(dlen, 0);
	}
	free(seg);
}

/* Decode s[0..n) cut at the sorted positions cuts[0..ncuts). */
static void decode_cuts(const char *s, size_t n, const size_t *cuts,
			size_t ncuts, struct outcome *o)
{
	struct http_chunked d;
	size_t i, prev = 0;

	memset(o, 0, sizeof(*o));
	http_chunked_init(&d, &lim);
	for (i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		feed(&d, s + prev, end - prev, o);
		prev = end;
	}
	assert_int_equal(o->done, http_chunked_done(&d));
}

static void assert_same(const struct outcome *a, const struct outcome *b)
{
	assert_int_equal(a->err, b->err);
	assert_int_equal(a->done, b->done);
	if (a->err)
		return;
	assert_int_equal(a->consumed, b->consumed);
	assert_int_equal(a->data_len, b->data_len);
	if (a->data_len)
		assert_memory_equal(a->data, b->data, a->data_len);
}

static struct outcome res;

/* Decode all at once into `res`; every way of cutting agrees. */
static void dec_n(const char *s, size_t n)
{
	struct outcome o;
	size_t cuts[3], i, j;

	outcome_free(&res);
	decode_cuts(s, n, NULL, 0, &res);
	if (!res.err && !res.done)
		assert_int_equal(res.consumed, n);	/* all of it taken */
	for (i = 0; i <= n; i++) {
		cuts[0] = i;
		decode_cuts(s, n, cuts, 1, &o);
		assert_same(&res, &o);
		outcome_free(&o);
		if (n > 40)
			continue;
		for (j = i; j <= n; j++) {
			cuts[1] = j;
			decode_cuts(s, n, cuts, 2, &o);
			assert_same(&res, &o);
			outcome_free(&o);
		}
	}
	/* byte by byte */
	{
		struct http_chunked d;

		memset(&o, 0, sizeof(o));
		http_chunked_init(&d, &lim);
		for (i = 0; i < n; i++)
			feed(&d, s + i, 1, &o);
		assert_same(&res, &o);
		outcome_free(&o);
	}
}

static void dec(const char *s)
{
	dec_n(s, strlen(s));
}

/* A complete body: all of s is consumed, the data is `want`. */
static void expect_body(const char *s, const char *want)
{
	dec(s);
	if (res.err || !res.done || res.consumed != strlen(s))
		fail_msg("'%s': err %zd done %d consumed %zu", s, res.err,
			 res.done, res.consumed);
	assert_int_equal(res.data_len, strlen(want));
	if (res.data_len)
		assert_memory_equal(res.data, want, res.data_len);
}

static void expect_error(const char *s, ssize_t err)
{
	dec(s);
	if (res.err != err)
		fail_msg("'%s': want %zd, got %zd (done %d)", s, err, res.err,
			 res.done);
}

#define EXPECT_ERRORS(err, ...) EXPECT_EACH(expect_error, (err), __VA_ARGS__)

static void expect_incomplete(const char *s)
{
	dec(s);
	if (res.err || res.done)
		fail_msg("'%s': err %zd done %d", s, res.err, res.done);
}

/* With *limit = value, `fits` is an incomplete body and `over`, one byte
 * more, is refused at that byte. */
static void limit_edge(size_t *limit, size_t value, const char *fits,
		       const char *over)
{
	*limit = value;
	expect_incomplete(fits);
	expect_error(over, -E2BIG);
}

/* ---------------------------------------------------------------- tests */

static void test_basic(void **state)
{
	(void)state;
	expect_body("5\r\nhello\r\n0\r\n\r\n", "hello");
	expect_body("0\r\n\r\n", "");
	expect_body("000\r\n\r\n", "");
	expect_body("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world");
	expect_body("1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n", "abc");
	/* data bytes are anything, line ends and NUL included */
	dec_n("4\r\n\r\n\0\n\r\n0\r\n\r\n", 14);
	assert_true(res.done && !res.err);
	assert_int_equal(res.data_len, 4);
	assert_memory_equal(res.data, "\r\n\0\n", 4);
	assert_int_equal(res.consumed, 14);
}

static void test_sizes(void **state)
{
	char body[300], want[300];
	int n;

	(void)state;
	memset(want, 'x', sizeof(want));
	/* hex, either case, leading zeros */
	n = snprintf(body, sizeof(body), "a\r\n%.10s\r\nA\r\n%.10s\r\n0\r\n\r\n",
		     want, want);
	want[20] = 0;
	expect_body(body, want);
	memset(want, 'x', sizeof(want));
	n = snprintf(body, sizeof(body), "1F\r\n%.31s\r\n0\r\n\r\n", want);
	want[31] = 0;
	expect_body(body, want);
	memset(want, 'y', sizeof(want));
	n = snprintf(body, sizeof(body), "00ff\r\n%.255s\r\n0\r\n\r\n", want);
	want[255] = 0;
	expect_body(body, want);
	assert_true(n > 0);
	expect_body("0000000000000001\r\nz\r\n0\r\n\r\n", "z");	/* 16 */

	expect_incomplete("");
	EXPECT_ERRORS(-EPROTO,
		"\r\n",
		"\n",
		"-5\r\nhello\r\n0\r\n\r\n",
		"+5\r\nhello\r\n0\r\n\r\n",
		" 5\r\nhello\r\n0\r\n\r\n",
		"\t5\r\n",
		"0x5\r\nhello\r\n0\r\n\r\n",
		"5x\r\nhello\r\n0\r\n\r\n",
		"g\r\n",
		";a\r\n",
		"5,5\r\n",
		/* whitespace after the size only before an extension */
		"5 \r\nhello\r\n0\r\n\r\n",
		"5\t\r\n",
		"5 6\r\n");
	/* 17 digits are refused, even as leading zeros */
	lim.max_body = UINT64_MAX;
	expect_incomplete("FFFFFFFFFFFFFFFF\r\n");
	EXPECT_ERRORS(-EPROTO,
		"FFFFFFFFFFFFFFFF0\r\n",
		"10000000000000000\r\n",
		"00000000000000001\r\nz\r\n0\r\n\r\n",
		"00000000000000000\r\n\r\n");
	expect_incomplete("FFFFFFFFFFFFFFFF");
	expect_error("FFFFFFFFFFFFFFFFF", -EPROTO);
}

static void test_extensions(void **state)
{
	(void)state;
	expect_body("5;name=value\r\nhello\r\n0\r\n\r\n", "hello");
	expect_body("5;a\r\nhello\r\n0;b=c\r\n\r\n", "hello");
	expect_body("5 ; a = b ;c\r\nhello\r\n0\r\n\r\n", "hello");
	expect_body("5\t;a=\"quoted; \\\"string\\\"\"\r\nhello\r\n0\r\n\r\n",
		    "hello");
	expect_body("5;\x80\xff\r\nhello\r\n0\r\n\r\n", "hello");
	expect_body("5;a\nhello\n0;b\n\n", "hello");
	/* control bytes, bare CR */
	expect_error("5;a\x01\r\nhello\r\n0\r\n\r\n", -EPROTO);
	expect_error("5;a\x7f\r\n", -EPROTO);
	expect_error("5;a\rb\r\nhello\r\n0\r\n\r\n", -EPROTO);
	dec_n("5;a\0\r\n", 7);
	assert_int_equal(res.err, -EPROTO);
	/* max_ext: every byte between size and line end, all chunks */
	lim.max_ext = 9;	/* ";a=b" 4 + " ;c" 3 + ";d" 2 */
	expect_body("1;a=b\r\nx\r\n1 ;c\r\ny\r\n0;d\r\n\r\n", "xy");
	lim.max_ext = 8;
	expect_error("1;a=b\r\nx\r\n1 ;c\r\ny\r\n0;d\r\n\r\n", -E2BIG);
	lim.max_ext = 0;
	expect_body("1\r\nx\r\n0\r\n\r\n", "x");
	expect_error("1;\r\nx\r\n0\r\n\r\n", -E2BIG);
	expect_error("1 ;\r\nx\r\n0\r\n\r\n", -E2BIG);
	/* a long extension is refused as it arrives, not at its line end */
	limit_edge(&lim.max_ext, 3, "1;ab", "1;abc");
}

static void test_line_ends(void **state)
{
	(void)state;
	/* bare LF anywhere a line ends */
	expect_body("5\nhello\n0\n\n", "hello");
	expect_body("5\r\nhello\n0\nX: y\n\r\n", "hello");
	expect_body("5\nhello\r\n0\r\nX: y\r\n\n", "hello");
	/* bare CR nowhere */
	EXPECT_ERRORS(-EPROTO,
		"5\rhello\r\n0\r\n\r\n",
		"5\r\nhello\r0\r\n\r\n",
		"5\r\nhello\r\n0\r\r\n",
		"5\r\nhello\r\n0\r\n\r\r\n",
		"5\r\nhello\r\n0\r\n\rX",
		"5\r\nhello\r\n0\r\nX: y\r\r\n\r\n",
		"5\r\nhello\r\n0\r\nX: y\rz\r\n\r\n",
		"5\r\r\nhello\r\n",
		/* the data must be followed by its line end */
		"5\r\nhelloX\r\n0\r\n\r\n",
		"5\r\nhello0\r\n\r\n",
		"5\r\nhello\r\r\n0\r\n\r\n",
		"3\r\nhello\r\n0\r\n\r\n");
	/* incomplete at every framing position */
	expect_incomplete("5");
	expect_incomplete("5\r");
	expect_incomplete("5\r\n");
	expect_incomplete("5\r\nhel");
	expect_incomplete("5\r\nhello");
	expect_incomplete("5\r\nhello\r");
	expect_incomplete("5\r\nhello\r\n");
	expect_incomplete("5\r\nhello\r\n0");
	expect_incomplete("5\r\nhello\r\n0\r\n");
	expect_incomplete("5\r\nhello\r\n0\r\n\r");
	expect_incomplete("5\r\nhello\r\n0\r\nX: y\r\n");
	assert_int_equal(res.data_len, 5);
}

static void test_trailers(void **state)
{
	(void)state;
	expect_body("5\r\nhello\r\n0\r\nExpires: never\r\nX-Sum: 42\r\n\r\n",
		    "hello");
	expect_body("0\r\nX:\r\n\r\n", "");
	expect_body("0\r\nX: \t a b \t\r\n\r\n", "");
	expect_body("0\r\nX: \x80\xff\r\n\r\n", "");
	EXPECT_ERRORS(-EPROTO,
		"0\r\nX: y\r\n z\r\n\r\n", /* obs-fold */
		"0\r\nX: y\r\n\tz\r\n\r\n",
		"0\r\n X: y\r\n\r\n",
		"0\r\nX\r\n\r\n", /* no colon */
		"0\r\nX y\r\n\r\n",
		"0\r\nX : y\r\n\r\n",
		"0\r\n: y\r\n\r\n",
		"0\r\nX@: y\r\n\r\n",
		"0\r\nX: y\x01\r\n\r\n",
		"0\r\nX: y\x7f\r\n\r\n");
	dec_n("0\r\nX: \0\r\n\r\n", 11);
	assert_int_equal(res.err, -EPROTO);
	/* max_trailer: the field lines with their line ends */
	lim.max_trailer = 14;	/* "A: 1\r\n" 6 + "BB: 22\r\n" 8 */
	expect_body("0\r\nA: 1\r\nBB: 22\r\n\r\n", "");
	expect_body("0\nA: 1\nBB: 22\n\n", "");
	lim.max_trailer = 13;
	expect_error("0\r\nA: 1\r\nBB: 22\r\n\r\n", -E2BIG);
	expect_body("0\nA: 1\nBB: 22\n\n", "");	/* bare LF: 12 */
	lim.max_trailer = 0;
	expect_body("0\r\n\r\n", "");
	expect_error("0\r\nX: y\r\n\r\n", -E2BIG);
	/* found as the bytes arrive */
	limit_edge(&lim.max_trailer, 4, "0\r\nX: y", "0\r\nX: yy");
}

static void test_max_body(void **state)
{
	(void)state;
	lim.max_body = 11;
	expect_body("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world");
	lim.max_body = 10;
	/* refused at the size of the chunk that passes, before its data */
	expect_error("5\r\nhello\r\n6\r\n", -E2BIG);
	expect_error("5\r\nhello\r\n6", -E2BIG);
	expect_error("5\r\nhello\r\n06", -E2BIG);
	expect_incomplete("5\r\nhello\r\n5");
	lim.max_body = 0;
	expect_body("0\r\n\r\n", "");
	expect_error("1", -E2BIG);
	expect_incomplete("0000");
	/* a size too large for the limit is E2BIG long before 17 digits */
	lim.max_body = 1 << 20;
	expect_error("FFFFFF", -E2BIG);
	expect_incomplete("FFFFF");
}

/* Bytes after the body (the next request) are never consumed. */
static void test_pipelined(void **state)
{
	static const char *const bodies[] = {
		"5\r\nhello\r\n0\r\n\r\n",
		"5\nhello\n0\n\n",
		"0\r\nX: y\r\n\r\n",
		"3;e=1\r\nabc\r\n0\r\nT: 1\r\n\r\n",
	};
	static const char *const next[] = {
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"\r\n",
		"\n",
		"0\r\n\r\n",
		"X",
	};
	char buf[256];
	size_t i, j;

	(void)state;
	for (i = 0; i < 4; i++)
		for (j = 0; j < 5; j++) {
			size_t bl = strlen(bodies[i]);
			int n = snprintf(buf, sizeof(buf), "%s%s", bodies[i],
					 next[j]);

			dec_n(buf, (size_t)n);
			assert_true(res.done);
			assert_int_equal(res.err, 0);
			assert_int_equal(res.consumed, bl);
		}
}

/* One call, one span: a segment with two chunks takes two calls; the
 * framing after the first span is consumed with it. */
static void test_one_span_per_call(void **state)
{
	const char *s = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nNEXT";
	struct http_chunked d;
	size_t off, len, pos = 0, n = strlen(s);
	ssize_t r;

	(void)state;
	http_chunked_init(&d, &lim);
	r = http_chunked_step(&d, s, n, &off, &len);
	assert_int_equal(r, 11);	/* up to "de" */
	assert_int_equal(off, 3);
	assert_int_equal(len, 3);
	assert_false(http_chunked_done(&d));
	pos += r;
	r = http_chunked_step(&d, s + pos, n - pos, &off, &len);
	assert_int_equal(r, 2 + 2 + 5);	/* "de\r\n0\r\n\r\n" */
	assert_int_equal(off, 0);
	assert_int_equal(len, 2);
	assert_memory_equal(s + pos + off, "de", 2);
	assert_true(http_chunked_done(&d));
	pos += r;
	assert_string_equal(s + pos, "NEXT");
	r = http_chunked_step(&d, s + pos, n - pos, &off, &len);
	assert_int_equal(r, 0);
	assert_int_equal(len, 0);
	/* len 0 */
	http_chunked_init(&d, &lim);
	assert_int_equal(http_chunked_step(&d, s, 0, &off, &len), 0);
	assert_int_equal(len, 0);
	assert_false(http_chunked_done(&d));
}

/* A large chunk arriving in many segments: each segment is one span of
 * data where it lies. */
static void test_large_chunk(void **state)
{
	enum { SIZE = 100000, SEG = 997 };
	char *body = malloc(SIZE + 64), *p;
	struct http_chunked d;
	size_t n, pos = 0, got = 0, off, len;

	(void)state;
	assert_non_null(body);
	p = body + sprintf(body, "%x\r\n", SIZE);
	for (n = 0; n < SIZE; n++)
		p[n] = (char)(n * 7);
	n = (p - body) + SIZE;
	n += sprintf(body + n, "\r\n0\r\n\r\n");
	http_chunked_init(&d, &lim);
	while (pos < n) {
		size_t seg = n - pos < SEG ? n - pos : SEG;
		size_t used = 0;

		while (used < seg && !http_chunked_done(&d)) {
			ssize_t r = http_chunked_step(&d, body + pos + used,
						      seg - used, &off, &len);

			assert_true(r > 0);
			if (len) {
				assert_memory_equal(body + pos + used + off,
						    p + got, len);
				got += len;
			}
			used += r;
		}
		pos += used;
	}
	assert_true(http_chunked_done(&d));
	assert_int_equal(got, SIZE);
	assert_int_equal(d.body, SIZE);
	free(body);
	/* and the whole property over a medium body */
	{
		char s[400];
		int k = sprintf(s, "%x;x=y\r\n", 300);

		memset(s + k, 'q', 300);
		k += 300;
		k += sprintf(s + k, "\r\n0\r\n\r\n");
		dec_n(s, (size_t)k);
		assert_true(res.done);
		assert_int_equal(res.data_len, 300);
	}
}

static uint64_t rnd(void)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;	/* xorshift64 */

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* Random bodies, valid and damaged: every cut agrees. */
static void test_random_bodies(void **state)
{
	static const char *const junk[] = { "\r", "\n", " ", ";", "x", "0",
					    ":", "\t", "\x01", "F" };
	char s[200];
	unsigned iter, done = 0, eproto = 0, e2big = 0, incomplete = 0;

	(void)state;
	for (iter = 0; iter < 400; iter++) {
		size_t n = 0, k, chunks;

		chunks = rnd() % 4;
		for (k = 0; k < chunks; k++) {
			size_t sz = 1 + rnd() % 20;

			n += sprintf(s + n, "%zx%s%s", sz,
				     rnd() % 4 ? "" : ";e=v",
				     rnd() % 2 ? "\r\n" : "\n");
			memset(s + n, 'a' + (char)k, sz);
			n += sz;
			n += sprintf(s + n, "%s", rnd() % 2 ? "\r\n" : "\n");
		}
		n += sprintf(s + n, "0\r\n%s\r\nNEXT",
			     rnd() % 3 ? "" : "T: v\r\n");
		if (rnd() % 2) {
			const char *j = junk[rnd() % 10];

			s[rnd() % n] = j[0];
		}
		if (rnd() % 4 == 0)
			n = rnd() % (n + 1);	/* truncated */
		lim.max_body = rnd() % 3 ? 1 << 20 : rnd() % 40;
		lim.max_ext = rnd() % 3 ? 256 : rnd() % 6;
		lim.max_trailer = rnd() % 3 ? 1024 : rnd() % 8;
		dec_n(s, n);
		if (res.err == -EPROTO)
			eproto++;
		else if (res.err == -E2BIG)
			e2big++;
		else if (res.done)
			done++;
		else
			incomplete++;
	}
	print_message("done %u, EPROTO %u, E2BIG %u, incomplete %u\n", done,
		      eproto, e2big, incomplete);
	assert_true(done > 50 && eproto > 50 && e2big > 20 && incomplete > 20);
	outcome_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_basic, setup),
		cmocka_unit_test_setup(test_sizes, setup),
		cmocka_unit_test_setup(test_extensions, setup),
		cmocka_unit_test_setup(test_line_ends, setup),
		cmocka_unit_test_setup(test_trailers, setup),
		cmocka_unit_test_setup(test_max_body, setup),
		cmocka_unit_test_setup(test_pipelined, setup),
		cmocka_unit_test_setup(test_one_span_per_call, setup),
		cmocka_unit_test_setup(test_large_chunk, setup),
		cmocka_unit_test_setup(test_random_bodies, setup),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	outcome_free(&res);
	return r;
}
