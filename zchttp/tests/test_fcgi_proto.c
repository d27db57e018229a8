/* test_fcgi_proto.c - FastCGI records, fixed bodies, name-value pairs and
 * the CGI response head parser.
 *
 * Every CGI head in this file goes through head_n(), which also feeds the
 * same bytes one at a time (on a buffer that moves between calls) and at
 * random split points, and asserts that the results are identical to the
 * all-at-once parse: each case is also an incremental-parsing case. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "fcgi_proto.h"

#include "expect_each.h"

/* ------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure repeats */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void hdr(uint8_t b[8], uint8_t version, uint8_t type, uint16_t id,
		uint16_t clen, uint8_t pad)
{
	b[0] = version;
	b[1] = type;
	b[2] = id >> 8;
	b[3] = id & 0xff;
	b[4] = clen >> 8;
	b[5] = clen & 0xff;
	b[6] = pad;
	b[7] = 0;
}

static int decode(uint8_t version, uint8_t type, uint16_t id, uint16_t clen,
		  uint8_t pad, int any)
{
	uint8_t b[8];
	struct fcgi_header h = { 0xaa, 0xaa, 0xaaaa, 0xaaaa, 0xaa };
	int r;

	hdr(b, version, type, id, clen, pad);
	r = any ? fcgi_header_decode_any(b, &h) : fcgi_header_decode(b, &h);
	if (r == 0) {
		assert_int_equal(h.version, version);
		assert_int_equal(h.type, type);
		assert_int_equal(h.request_id, id);
		assert_int_equal(h.content_length, clen);
		assert_int_equal(h.padding_length, pad);
	} else {
		/* untouched on error */
		assert_int_equal(h.version, 0xaa);
		assert_int_equal(h.request_id, 0xaaaa);
	}
	return r;
}

/* Both decoders agree (for types 1..11). */
static int decode2(uint8_t version, uint8_t type, uint16_t id, uint16_t clen,
		   uint8_t pad)
{
	int a = decode(version, type, id, clen, pad, 0);

	assert_int_equal(decode(version, type, id, clen, pad, 1), a);
	return a;
}

/* -------------------------------------------------------------- headers */

static void test_header_valid(void **state)
{
	(void)state;
	assert_int_equal(decode2(1, FCGI_BEGIN_REQUEST, 1, 8, 0), 0);
	assert_int_equal(decode2(1, FCGI_ABORT_REQUEST, 65535, 0, 0), 0);
	assert_int_equal(decode2(1, FCGI_END_REQUEST, 7, 8, 0), 0);
	assert_int_equal(decode2(1, FCGI_PARAMS, 1, 0, 0), 0);
	assert_int_equal(decode2(1, FCGI_PARAMS, 1, 65535, 255), 0);
	assert_int_equal(decode2(1, FCGI_STDIN, 2, 1, 7), 0);
	assert_int_equal(decode2(1, FCGI_STDOUT, 0x1234, 0x5678, 9), 0);
	assert_int_equal(decode2(1, FCGI_STDERR, 1, 100, 4), 0);
	assert_int_equal(decode2(1, FCGI_DATA, 1, 0, 0), 0);
	assert_int_equal(decode2(1, FCGI_GET_VALUES, 0, 30, 2), 0);
	assert_int_equal(decode2(1, FCGI_GET_VALUES_RESULT, 0, 0, 0), 0);
	assert_int_equal(decode2(1, FCGI_UNKNOWN_TYPE, 0, 8, 0), 0);
	/* padding is free, even with empty content */
	assert_int_equal(decode2(1, FCGI_STDOUT, 1, 0, 255), 0);
	assert_int_equal(decode2(1, FCGI_BEGIN_REQUEST, 1, 8, 8), 0);
}

static void test_header_invalid(void **state)
{
	unsigned t;

	(void)state;
	/* version */
	assert_int_equal(decode2(0, FCGI_STDOUT, 1, 0, 0), -EPROTO);
	assert_int_equal(decode2(2, FCGI_STDOUT, 1, 0, 0), -EPROTO);
	assert_int_equal(decode2(0xff, FCGI_STDOUT, 1, 0, 0), -EPROTO);
	/* type 0 for both decoders */
	assert_int_equal(decode2(1, 0, 1, 0, 0), -EPROTO);
	assert_int_equal(decode2(1, 0, 0, 0, 0), -EPROTO);
	/* types above 11: a client refuses, an application keeps them as
	 * management records */
	for (t = 12; t <= 255; t++) {
		assert_int_equal(decode(1, t, 0, 8, 0, 0), -EPROTO);
		assert_int_equal(decode(1, t, 0, 8, 0, 1), 0);
		assert_int_equal(decode(1, t, 0, 0, 3, 1), 0);
		assert_int_equal(decode(1, t, 1, 8, 0, 1), -EPROTO);
	}
	/* request ids */
	for (t = FCGI_BEGIN_REQUEST; t <= FCGI_DATA; t++)
		assert_int_equal(decode2(1, t, 0,
					 t == FCGI_ABORT_REQUEST ? 0 : 8, 0),
				 -EPROTO);
	for (t = FCGI_GET_VALUES; t <= FCGI_UNKNOWN_TYPE; t++) {
		assert_int_equal(decode2(1, t, 1, 8, 0), -EPROTO);
		assert_int_equal(decode2(1, t, 65535, 8, 0), -EPROTO);
	}
	/* fixed lengths */
	assert_int_equal(decode2(1, FCGI_BEGIN_REQUEST, 1, 7, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_BEGIN_REQUEST, 1, 9, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_BEGIN_REQUEST, 1, 0, 8), -EPROTO);
	assert_int_equal(decode2(1, FCGI_END_REQUEST, 1, 0, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_END_REQUEST, 1, 65535, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_UNKNOWN_TYPE, 0, 16, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_ABORT_REQUEST, 1, 1, 0), -EPROTO);
	assert_int_equal(decode2(1, FCGI_ABORT_REQUEST, 1, 0, 1), 0);
}

static void test_header_encode(void **state)
{
	const uint8_t want[8] = { 1, 6, 0x12, 0x34, 0xff, 0xfe, 0x80, 0 };
	struct fcgi_header h;
	uint8_t b[8];
	unsigned t, i;

	(void)state;
	memset(b, 0xee, sizeof(b));
	fcgi_header_encode(b, FCGI_STDOUT, 0x1234, 0xfffe, 0x80);
	assert_memory_equal(b, want, 8);

	/* round trips */
	for (i = 0; i < 2000; i++) {
		uint16_t id = rnd(), clen = rnd();
		uint8_t pad = rnd();

		t = 1 + rnd() % 11;
		if (t >= FCGI_GET_VALUES)
			id = 0;
		else if (id == 0)
			id = 1;
		if (t == FCGI_BEGIN_REQUEST || t == FCGI_END_REQUEST ||
		    t == FCGI_UNKNOWN_TYPE)
			clen = 8;
		if (t == FCGI_ABORT_REQUEST)
			clen = 0;
		fcgi_header_encode(b, t, id, clen, pad);
		assert_int_equal(fcgi_header_decode(b, &h), 0);
		assert_int_equal(h.version, 1);
		assert_int_equal(h.type, t);
		assert_int_equal(h.request_id, id);
		assert_int_equal(h.content_length, clen);
		assert_int_equal(h.padding_length, pad);
		assert_int_equal(b[7], 0);
		assert_int_equal(fcgi_record_len(&h), 8 + (size_t)clen + pad);
	}
	h.content_length = 65535;
	h.padding_length = 255;
	assert_int_equal(fcgi_record_len(&h), 8 + 65535 + 255);
}

/* ------------------------------------------------------- fixed bodies */

static void test_begin(void **state)
{
	/* the spec's responder request, keep-conn, id 1 */
	const uint8_t want[16] = { 1, 1, 0, 1, 0, 8, 0, 0,
				   0, 1, 1, 0, 0, 0, 0, 0 };
	struct fcgi_header h;
	struct fcgi_begin b = { 0, 0 };
	uint8_t rec[16], body[9] = { 0 };

	(void)state;
	memset(rec, 0xee, sizeof(rec));
	fcgi_begin_encode(rec, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
	assert_memory_equal(rec, want, 16);
	assert_int_equal(fcgi_header_decode(rec, &h), 0);
	assert_int_equal(h.type, FCGI_BEGIN_REQUEST);
	assert_int_equal(fcgi_begin_decode(rec + 8, h.content_length, &b), 0);
	assert_int_equal(b.role, FCGI_RESPONDER);
	assert_int_equal(b.flags, FCGI_KEEP_CONN);

	fcgi_begin_encode(rec, 0xbeef, 0x1234, 0xa5);
	assert_int_equal(fcgi_header_decode(rec, &h), 0);
	assert_int_equal(h.request_id, 0xbeef);
	assert_int_equal(fcgi_begin_decode(rec + 8, 8, &b), 0);
	assert_int_equal(b.role, 0x1234);	/* unknown roles are kept */
	assert_int_equal(b.flags, 0xa5);

	/* reserved bytes are not checked; the length is */
	memset(body, 0xff, sizeof(body));
	assert_int_equal(fcgi_begin_decode(body, 8, &b), 0);
	assert_int_equal(b.role, 0xffff);
	b.role = 7;
	assert_int_equal(fcgi_begin_decode(body, 7, &b), -EPROTO);
	assert_int_equal(fcgi_begin_decode(body, 9, &b), -EPROTO);
	assert_int_equal(fcgi_begin_decode(body, 0, &b), -EPROTO);
	assert_int_equal(b.role, 7);
}

static void test_end(void **state)
{
	const uint8_t want[16] = { 1, 3, 0, 2, 0, 8, 0, 0,
				   0xde, 0xad, 0xbe, 0xef, 2, 0, 0, 0 };
	struct fcgi_header h;
	struct fcgi_end e;
	uint8_t rec[16];
	unsigned ps;

	(void)state;
	memset(rec, 0xee, sizeof(rec));
	fcgi_end_encode(rec, 2, 0xdeadbeef, FCGI_OVERLOADED);
	assert_memory_equal(rec, want, 16);
	assert_int_equal(fcgi_header_decode(rec, &h), 0);
	assert_int_equal(h.type, FCGI_END_REQUEST);
	assert_int_equal(fcgi_end_decode(rec + 8, 8, &e), 0);
	assert_int_equal(e.app_status, 0xdeadbeef);
	assert_int_equal(e.protocol_status, FCGI_OVERLOADED);

	for (ps = 0; ps <= 255; ps++) {
		fcgi_end_encode(rec, 1, ps * 0x01010101u, ps);
		if (ps <= FCGI_UNKNOWN_ROLE) {
			assert_int_equal(fcgi_end_decode(rec + 8, 8, &e), 0);
			assert_int_equal(e.protocol_status, ps);
			assert_int_equal(e.app_status, ps * 0x01010101u);
		} else {
			assert_int_equal(fcgi_end_decode(rec + 8, 8, &e),
					 -EPROTO);
		}
	}
	fcgi_end_encode(rec, 1, 0, FCGI_REQUEST_COMPLETE);
	assert_int_equal(fcgi_end_decode(rec + 8, 7, &e), -EPROTO);
	assert_int_equal(fcgi_end_decode(rec + 8, 0, &e), -EPROTO);
}

static void test_unknown_type(void **state)
{
	const uint8_t want[16] = { 1, 11, 0, 0, 0, 8, 0, 0,
				   42, 0, 0, 0, 0, 0, 0, 0 };
	struct fcgi_header h;
	uint8_t rec[16];

	(void)state;
	memset(rec, 0xee, sizeof(rec));
	fcgi_unknown_type_encode(rec, 42);
	assert_memory_equal(rec, want, 16);
	assert_int_equal(fcgi_header_decode(rec, &h), 0);
	assert_int_equal(h.type, FCGI_UNKNOWN_TYPE);
	assert_int_equal(h.request_id, 0);
	assert_int_equal(h.content_length, 8);
}

/* ---------------------------------------------------- name-value pairs */

static void test_nv_len(void **state)
{
	(void)state;
	assert_int_equal(fcgi_nv_len(1, 0), 3);
	assert_int_equal(fcgi_nv_len(127, 127), 2 + 254);
	assert_int_equal(fcgi_nv_len(128, 127), 5 + 255);
	assert_int_equal(fcgi_nv_len(127, 128), 5 + 255);
	assert_int_equal(fcgi_nv_len(128, 128), 8 + 256);
	assert_int_equal(fcgi_nv_len(FCGI_NV_MAX_LEN, FCGI_NV_MAX_LEN),
			 8 + 2 * (size_t)FCGI_NV_MAX_LEN);
	assert_true(fcgi_nv_len(SIZE_MAX, 1) == SIZE_MAX);
	assert_true(fcgi_nv_len(1, SIZE_MAX - 3) == SIZE_MAX);
}

static void test_nv_forms(void **state)
{
	static char name[200], value[300];
	uint8_t out[600];
	struct fcgi_nv nv;
	size_t off = 0, woff;

	(void)state;
	memset(name, 'n', sizeof(name));
	memset(value, 'v', sizeof(value));

	/* 127: one byte */
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, name, 127,
					value, 127), 0);
	assert_int_equal(off, 2 + 254);
	assert_int_equal(out[0], 127);
	assert_int_equal(out[1], 127);
	assert_int_equal(out[2], 'n');
	assert_int_equal(out[2 + 127], 'v');

	/* 128: four bytes, top bit set */
	off = 0;
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, name, 128,
					value, 300), 0);
	assert_int_equal(off, 8 + 428);
	assert_int_equal(out[0], 0x80);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 0);
	assert_int_equal(out[3], 128);
	assert_int_equal(out[4], 0x80);
	assert_int_equal(out[5], 0);
	assert_int_equal(out[6], 0x01);
	assert_int_equal(out[7], 0x2c);
	woff = 0;
	assert_int_equal(fcgi_nv_next(out, off, &woff, &nv), 1);
	assert_int_equal(woff, off);
	assert_int_equal(nv.name_len, 128);
	assert_int_equal(nv.value_len, 300);
	assert_ptr_equal(nv.name, (char *)out + 8);
	assert_ptr_equal(nv.value, (char *)out + 8 + 128);
	assert_int_equal(fcgi_nv_next(out, off, &woff, &nv), 0);

	/* mixed: short name, long value and the other way round */
	off = 0;
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, name, 5,
					value, 128), 0);
	assert_int_equal(off, 5 + 5 + 128);
	assert_int_equal(out[0], 5);
	assert_int_equal(out[1], 0x80);
	assert_int_equal(out[4], 128);

	/* a 4-byte length below 128 decodes (not minimal, but valid) */
	{
		const uint8_t b[] = { 0x80, 0, 0, 2, 0x80, 0, 0, 1, 'a', 'b',
				      'c' };

		woff = 0;
		assert_int_equal(fcgi_nv_next(b, sizeof(b), &woff, &nv), 1);
		assert_int_equal(nv.name_len, 2);
		assert_int_equal(nv.value_len, 1);
		assert_memory_equal(nv.name, "ab", 2);
		assert_memory_equal(nv.value, "c", 1);
		assert_int_equal(woff, sizeof(b));
	}
	/* the top bit is the form marker, not part of the length: a length
	 * of 0xffffffff is 2^31-1, which runs past this block */
	{
		const uint8_t b[] = { 0xff, 0xff, 0xff, 0xff, 0, 'x' };

		woff = 0;
		assert_int_equal(fcgi_nv_next(b, sizeof(b), &woff, &nv),
				 -EPROTO);
		assert_int_equal(woff, 0);
	}
}

/* A name of 2^31-1 bytes: the largest length decodes and the pair ends
 * exactly at the block's end.  The block is address space only (the
 * decoder never reads the name or the value). */
static void test_nv_max_length(void **state)
{
	const size_t big = FCGI_NV_MAX_LEN;
	size_t len = 5 + big, maplen = len + 4096, off = 0;
	struct fcgi_nv nv;
	uint8_t *m;

	(void)state;
	m = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		skip();
	m[0] = 0xff;
	m[1] = 0xff;
	m[2] = 0xff;
	m[3] = 0xff;
	m[4] = 0;
	assert_int_equal(fcgi_nv_next(m, len, &off, &nv), 1);
	assert_int_equal(nv.name_len, big);
	assert_int_equal(nv.value_len, 0);
	assert_ptr_equal(nv.name, (char *)m + 5);
	assert_ptr_equal(nv.value, (char *)m + len);
	assert_int_equal(off, len);
	assert_int_equal(fcgi_nv_next(m, len, &off, &nv), 0);
	/* one byte short */
	off = 0;
	assert_int_equal(fcgi_nv_next(m, len - 1, &off, &nv), -EPROTO);
	/* the same length as a value */
	m[0] = 1;
	m[1] = 0xff;
	m[2] = 0xff;
	m[3] = 0xff;
	m[4] = 0xff;
	off = 0;
	len = 6 + big;
	assert_int_equal(fcgi_nv_next(m, len, &off, &nv), 1);
	assert_int_equal(nv.name_len, 1);
	assert_int_equal(nv.value_len, big);
	assert_int_equal(off, len);
	off = 0;
	assert_int_equal(fcgi_nv_next(m, len - 1, &off, &nv), -EPROTO);
	munmap(m, maplen);
}

/* Truncated pairs and lengths past the block.  Each block is copied into
 * a buffer of exactly its size, so ASan sees a read past it. */
static int nv_one(const uint8_t *b, size_t n, struct fcgi_nv *nv)
{
	uint8_t *copy = malloc(n ? n : 1);
	size_t off = 0;
	int r;

	assert_non_null(copy);
	memcpy(copy, b, n);
	r = fcgi_nv_next(copy, n, &off, nv);
	if (r <= 0)
		assert_int_equal(off, 0);
	else
		assert_true(off <= n);
	free(copy);
	return r;
}

#define NV(...) \
	nv_one((const uint8_t[]){ __VA_ARGS__ }, \
	       sizeof((const uint8_t[]){ __VA_ARGS__ }), &nv)

static void test_nv_truncated(void **state)
{
	struct fcgi_nv nv;
	size_t off;
	uint8_t b[4] = { 1, 0, 'a', 0 };

	(void)state;
	assert_int_equal(nv_one(b, 0, &nv), 0);	/* empty block */
	assert_int_equal(NV(1, 0, 'a'), 1);
	assert_int_equal(NV(1, 1, 'a', 'b'), 1);
	assert_int_equal(NV(1), -EPROTO);		/* no value length */
	assert_int_equal(NV(1, 0), -EPROTO);		/* no name */
	assert_int_equal(NV(2, 0, 'a'), -EPROTO);	/* name past block */
	assert_int_equal(NV(1, 2, 'a', 'b'), -EPROTO);	/* value past block */
	assert_int_equal(NV(0, 0), -EPROTO);		/* empty name */
	assert_int_equal(NV(0, 1, 'x'), -EPROTO);
	assert_int_equal(NV(0x80), -EPROTO);		/* 4-byte name length */
	assert_int_equal(NV(0x80, 0), -EPROTO);
	assert_int_equal(NV(0x80, 0, 0), -EPROTO);
	assert_int_equal(NV(0x80, 0, 0, 1), -EPROTO);	/* no value length */
	assert_int_equal(NV(0x80, 0, 0, 1, 0x80), -EPROTO);
	assert_int_equal(NV(0x80, 0, 0, 1, 0x80, 0, 0), -EPROTO);
	assert_int_equal(NV(0x80, 0, 0, 1, 0x80, 0, 0, 0), -EPROTO);
	assert_int_equal(NV(0x80, 0, 0, 1, 0x80, 0, 0, 0, 'a'), 1);
	assert_int_equal(NV(1, 0x80, 0, 0, 1, 'a'), -EPROTO);
	assert_int_equal(NV(1, 0x80, 0, 0, 1, 'a', 'b'), 1);
	assert_int_equal(NV(1, 0x80, 0, 1, 0, 'a', 'b'), -EPROTO);
	assert_int_equal(NV(0x81, 0, 0, 0, 0, 'a'), -EPROTO);

	/* *off at or past the end */
	off = 3;
	assert_int_equal(fcgi_nv_next(b, 3, &off, &nv), 0);
	off = 4;
	assert_int_equal(fcgi_nv_next(b, 3, &off, &nv), -EPROTO);
	assert_int_equal(off, 4);

	/* a good pair, then a truncated one: the first is returned, then
	 * the error, and *off stays at the bad pair */
	{
		const uint8_t s[] = { 1, 1, 'a', 'b', 3, 0, 'x' };

		off = 0;
		assert_int_equal(fcgi_nv_next(s, sizeof(s), &off, &nv), 1);
		assert_int_equal(off, 4);
		assert_int_equal(fcgi_nv_next(s, sizeof(s), &off, &nv),
				 -EPROTO);
		assert_int_equal(off, 4);
	}
}

static void test_nv_encode_errors(void **state)
{
	uint8_t out[64];
	size_t off;
	unsigned i;

	(void)state;
	/* exactly the room needed, and one byte less */
	for (i = 0; i < 10; i++) {
		size_t need = fcgi_nv_len(3, i);

		memset(out, 0xee, sizeof(out));
		off = 7;
		assert_int_equal(fcgi_nv_encode(out, 7 + need - 1, &off, "abc",
						3, "0123456789", i), -ENOSPC);
		assert_int_equal(off, 7);
		for (size_t k = 0; k < sizeof(out); k++)
			assert_int_equal(out[k], 0xee);	/* nothing written */
		assert_int_equal(fcgi_nv_encode(out, 7 + need, &off, "abc", 3,
						"0123456789", i), 0);
		assert_int_equal(off, 7 + need);
		assert_int_equal(out[7 + need], 0xee);
	}
	off = 10;
	assert_int_equal(fcgi_nv_encode(out, 5, &off, "a", 1, "", 0), -ENOSPC);
	assert_int_equal(off, 10);
	off = 0;
	assert_int_equal(fcgi_nv_encode(out, 0, &off, "a", 1, "", 0), -ENOSPC);
	/* empty value with no pointer at all */
	assert_int_equal(fcgi_nv_encode(out, 3, &off, "a", 1, NULL, 0), 0);
	assert_int_equal(off, 3);
	/* empty name */
	off = 0;
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, "", 0, "x", 1),
			 -EINVAL);
	assert_int_equal(off, 0);
	/* lengths over 2^31-1: -E2BIG, before any room check */
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, "a",
					(size_t)FCGI_NV_MAX_LEN + 1, "", 0),
			 -E2BIG);
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, "a", 1, "",
					(size_t)FCGI_NV_MAX_LEN + 1),
			 -E2BIG);
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, "a",
					SIZE_MAX, "", 0), -E2BIG);
	/* 2^31-1 itself is a valid length: only the room is missing */
	assert_int_equal(fcgi_nv_encode(out, sizeof(out), &off, "a", 1, "",
					FCGI_NV_MAX_LEN), -ENOSPC);
	assert_int_equal(off, 0);
}

/* Encode random pairs into one block, walk it back. */
static void test_nv_round_trip(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 126, 127, 128, 129, 255,
					256, 1000, 70000 };
	enum { NPAIRS = 40 };
	size_t nl[NPAIRS], vl[NPAIRS], noff[NPAIRS], voff[NPAIRS];
	size_t cap = 0, off, i, round;
	char *src;
	uint8_t *block;
	struct fcgi_nv nv;

	(void)state;
	src = malloc(80000);
	assert_non_null(src);
	for (i = 0; i < 80000; i++)
		src[i] = (char)rnd();
	for (round = 0; round < 50; round++) {
		cap = 0;
		for (i = 0; i < NPAIRS; i++) {
			nl[i] = sizes[rnd() % 11];
			vl[i] = sizes[rnd() % 11];
			if (nl[i] == 0)
				nl[i] = 1 + rnd() % 3;
			noff[i] = rnd() % (80000 - nl[i]);
			voff[i] = rnd() % (80000 - vl[i]);
			cap += fcgi_nv_len(nl[i], vl[i]);
		}
		block = malloc(cap);
		assert_non_null(block);
		off = 0;
		for (i = 0; i < NPAIRS; i++)
			assert_int_equal(fcgi_nv_encode(block, cap, &off,
							 src + noff[i], nl[i],
							 src + voff[i], vl[i]),
					 0);
		assert_int_equal(off, cap);
		/* full: no room for one more */
		assert_int_equal(fcgi_nv_encode(block, cap, &off, "x", 1, "", 0),
				 -ENOSPC);
		off = 0;
		for (i = 0; i < NPAIRS; i++) {
			assert_int_equal(fcgi_nv_next(block, cap, &off, &nv), 1);
			assert_int_equal(nv.name_len, nl[i]);
			assert_int_equal(nv.value_len, vl[i]);
			assert_memory_equal(nv.name, src + noff[i], nl[i]);
			if (vl[i])
				assert_memory_equal(nv.value, src + voff[i],
						    vl[i]);
		}
		assert_int_equal(fcgi_nv_next(block, cap, &off, &nv), 0);
		/* every proper prefix that cuts a pair is an error at it */
		{
			size_t cut = 1 + rnd() % (cap - 1), o = 0;
			int r;

			while ((r = fcgi_nv_next(block, cut, &o, &nv)) == 1)
				;
			assert_true(r == 0 || r == -EPROTO);
			assert_true(o <= cut);
			if (r == 0)
				assert_int_equal(o, cut);
		}
		free(block);
	}
	free(src);
}

/* ------------------------------------------------------------ CGI heads */

#define MAXF 64

struct head_result {
	ssize_t ret;
	struct cgi_head h;
	struct cgi_field f[MAXF];
};

static struct head_result res;
static size_t max_bytes = 8192;
static size_t max_fields = 16;

static void result_init(struct head_result *r)
{
	memset(r, 0, sizeof(*r));
	r->h.fields = r->f;
	r->h.max_fields = max_fields;
}

#define POFF(p, base) ((p) ? (p) - (base) : -1)

static void assert_same(const struct head_result *a, const char *ba,
			const struct head_result *b, const char *bb)
{
	size_t i;

	assert_int_equal(a->ret, b->ret);
	if (a->ret < 0)
		return;
	assert_int_equal(a->h.nfields, b->h.nfields);
	assert_int_equal(a->h.status, b->h.status);
	assert_int_equal(POFF(a->h.reason, ba), POFF(b->h.reason, bb));
	assert_int_equal(a->h.reason_len, b->h.reason_len);
	assert_int_equal(POFF(a->h.location, ba), POFF(b->h.location, bb));
	assert_int_equal(a->h.location_len, b->h.location_len);
	assert_int_equal(POFF(a->h.content_type, ba),
			 POFF(b->h.content_type, bb));
	assert_int_equal(a->h.content_type_len, b->h.content_type_len);
	assert_int_equal(a->h.has_content_length, b->h.has_content_length);
	assert_int_equal(a->h.content_length, b->h.content_length);
	for (i = 0; i < a->h.nfields; i++) {
		assert_int_equal(POFF(a->f[i].name, ba), POFF(b->f[i].name, bb));
		assert_int_equal(a->f[i].name_len, b->f[i].name_len);
		assert_int_equal(POFF(a->f[i].value, ba),
				 POFF(b->f[i].value, bb));
		assert_int_equal(a->f[i].value_len, b->f[i].value_len);
	}
}

/* Feed s[0..n) at the prefix lengths cuts[], then all of it. */
static void head_pieces(struct head_result *r, const char *s, size_t n,
			const size_t *cuts, size_t ncuts)
{
	struct cgi_head_parser p;
	size_t i;

	result_init(r);
	cgi_head_parser_init(&p);
	for (i = 0; i < ncuts; i++) {
		r->ret = cgi_head_parse(&p, s, cuts[i], max_bytes, &r->h);
		if (r->ret != CGI_HEAD_INCOMPLETE)
			return;
	}
	r->ret = cgi_head_parse(&p, s, n, max_bytes, &r->h);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* All at once into `res`; byte by byte on a moving buffer, and at many
 * random split points, must agree.  Every pointer lies in the head. */
static ssize_t head_n(const char *s, size_t n)
{
	static struct head_result r2;
	struct cgi_head_parser p;
	char *a = malloc(n + 1), *b = malloc(n + 1), *last = a;
	size_t i, k, cuts[8];

	head_pieces(&res, s, n, NULL, 0);
	assert_true(res.ret == CGI_HEAD_INCOMPLETE || res.ret == -EPROTO ||
		    res.ret == -E2BIG || (res.ret > 0 && (size_t)res.ret <= n));
	if (res.ret > 0) {
		assert_true((size_t)res.ret <= max_bytes);
		assert_int_equal(s[res.ret - 1], '\n');
		assert_true(res.h.nfields <= max_fields);
		for (i = 0; i < res.h.nfields; i++) {
			assert_true(res.f[i].name >= s &&
				    res.f[i].name + res.f[i].name_len <=
					    s + res.ret);
			assert_true(res.f[i].value >= s &&
				    res.f[i].value + res.f[i].value_len <=
					    s + res.ret);
		}
	}

	/* byte by byte; the bytes alternate between two buffers */
	assert_non_null(a);
	assert_non_null(b);
	memcpy(a, s, n);
	memcpy(b, s, n);
	result_init(&r2);
	r2.ret = CGI_HEAD_INCOMPLETE;
	cgi_head_parser_init(&p);
	for (i = 0; i <= n && r2.ret == CGI_HEAD_INCOMPLETE; i++) {
		last = i % 2 ? a : b;
		r2.ret = cgi_head_parse(&p, last, i, max_bytes, &r2.h);
	}
	assert_same(&res, s, &r2, last);
	free(a);
	free(b);

	/* random cuts, sorted, duplicates allowed */
	for (k = 0; k < 20; k++) {
		size_t nc = 1 + rnd() % 8;

		for (i = 0; i < nc; i++)
			cuts[i] = rnd() % (n + 1);
		qsort(cuts, nc, sizeof(cuts[0]), cmp_size);
		head_pieces(&r2, s, n, cuts, nc);
		assert_same(&res, s, &r2, s);
	}
	return res.ret;
}

static ssize_t head(const char *s)
{
	return head_n(s, strlen(s));
}

static void expect_head(const char *s, size_t head_len)
{
	ssize_t r = head(s);

	if (r != (ssize_t)head_len)
		fail_msg("expected %zu for '%s': got %zd", head_len, s, r);
}

static void expect_error(const char *s, ssize_t err)
{
	ssize_t r = head(s);

	if (r != err)
		fail_msg("expected %zd for '%s': got %zd", err, s, r);
}

#define EXPECT_ERRORS(err, ...) EXPECT_EACH(expect_error, (err), __VA_ARGS__)

/* The whole string is the head. */
static void expect_all(const char *s)
{
	expect_head(s, strlen(s));
}

static int str_is(const char *p, size_t n, const char *want)
{
	return p && n == strlen(want) && memcmp(p, want, n) == 0;
}

#define assert_str(p, n, want) \
	do { \
		if (!str_is((p), (n), (want))) \
			fail_msg("%s is '%.*s', want '%s'", #p, (int)(n), \
				 (p) ? (p) : "(null)", (want)); \
	} while (0)

static int head_setup(void **state)
{
	(void)state;
	max_bytes = 8192;
	max_fields = 16;
	return 0;
}

static void test_head_basic(void **state)
{
	const char *s = "Status: 404 Not Found\r\n"
			"Content-Type: text/html; charset=utf-8\r\n"
			"X-Powered-By: PHP/8.2\r\n"
			"Set-Cookie: a=b\r\n"
			"Set-Cookie: c=d\r\n"
			"\r\n"
			"<html>";

	(void)state;
	expect_head(s, strlen(s) - 6);
	assert_int_equal(res.h.status, 404);
	assert_str(res.h.reason, res.h.reason_len, "Not Found");
	assert_str(res.h.content_type, res.h.content_type_len,
		   "text/html; charset=utf-8");
	assert_null(res.h.location);
	assert_false(res.h.has_content_length);
	assert_int_equal(res.h.nfields, 3);
	assert_str(res.f[0].name, res.f[0].name_len, "X-Powered-By");
	assert_str(res.f[0].value, res.f[0].value_len, "PHP/8.2");
	assert_str(res.f[1].name, res.f[1].name_len, "Set-Cookie");
	assert_str(res.f[1].value, res.f[1].value_len, "a=b");
	assert_str(res.f[2].value, res.f[2].value_len, "c=d");
	assert_ptr_equal(res.h.fields, res.f);
	assert_int_equal(res.h.max_fields, 16);
}

static void test_head_line_ends(void **state)
{
	const char *lf = "Content-Type: text/plain\nX: y\n\nbody";
	const char *mixed = "Content-Type: text/plain\r\nX: y\n\r\nbody";

	(void)state;
	expect_head(lf, strlen(lf) - 4);
	assert_str(res.h.content_type, res.h.content_type_len, "text/plain");
	assert_str(res.f[0].value, res.f[0].value_len, "y");
	assert_int_equal(res.h.status, 0);
	assert_null(res.h.reason);
	expect_head(mixed, strlen(mixed) - 4);
	expect_all("Location: /x\n\n");
	expect_all("Location: /x\r\n\n");
	expect_all("Location: /x\n\r\n");
	/* incomplete */
	expect_error("", CGI_HEAD_INCOMPLETE);
	expect_error("Content-Type: a", CGI_HEAD_INCOMPLETE);
	expect_error("Content-Type: a\r", CGI_HEAD_INCOMPLETE);
	expect_error("Content-Type: a\r\n", CGI_HEAD_INCOMPLETE);
	expect_error("Content-Type: a\r\n\r", CGI_HEAD_INCOMPLETE);
	/* bare CR */
	EXPECT_ERRORS(-EPROTO,
		"Content-Type: a\rb\r\n\r\n",
		"Content-Type: a\r\r\n\r\n",
		"Content-Type: a\r\n\r\r\n",
		"Content-Type: a\r\n\rX: y\r\n\r\n",
		"\rContent-Type: a\r\n\r\n",
		/* no field at all */
		"\r\n",
		"\n",
		"\r\nContent-Type: a\r\n\r\n");
}

static void test_head_status(void **state)
{
	(void)state;
	expect_all("Status: 200\r\n\r\n");
	assert_int_equal(res.h.status, 200);
	assert_non_null(res.h.reason);
	assert_int_equal(res.h.reason_len, 0);
	expect_all("Status: 200 \r\n\r\n");
	assert_int_equal(res.h.reason_len, 0);
	expect_all("Status:302 Found\n\n");
	assert_int_equal(res.h.status, 302);
	assert_str(res.h.reason, res.h.reason_len, "Found");
	expect_all("Status: \t 503  Service   Unavailable \t\r\n\r\n");
	assert_int_equal(res.h.status, 503);
	assert_str(res.h.reason, res.h.reason_len, "Service   Unavailable");
	expect_all("Status: 100\n\n");
	assert_int_equal(res.h.status, 100);
	expect_all("Status: 999 Whatever\n\n");
	assert_int_equal(res.h.status, 999);
	expect_all("Status: 200\tOK\n\n");
	assert_str(res.h.reason, res.h.reason_len, "OK");
	expect_all("STATUS: 201 Created\nstatus-x: 1\n\n");
	assert_int_equal(res.h.status, 201);
	assert_int_equal(res.h.nfields, 1);	/* Status-X is another field */
	expect_all("Status: 418 I'm a teapot \xc3\xa9\n\n");

	EXPECT_ERRORS(-EPROTO,
		"Status:\n\n",
		"Status: \n\n",
		"Status: 20\n\n",
		"Status: 2000\n\n",
		"Status: 099\n\n",
		"Status: 000\n\n",
		"Status: abc\n\n",
		"Status: 2a0 OK\n\n",
		"Status: 200OK\n\n",
		"Status: 200,OK\n\n",
		"Status: -200\n\n",
		"Status: +200\n\n",
		"Status: OK 200\n\n",
		"Status: 200 OK\x01\n\n",
		"Status : 200\n\n",
		"HTTP/1.1 200 OK\n\n");
}

static void test_head_fields(void **state)
{
	(void)state;
	expect_all("Location: http://example.com/a?b\r\n\r\n");
	assert_str(res.h.location, res.h.location_len,
		   "http://example.com/a?b");
	assert_int_equal(res.h.status, 0);
	assert_int_equal(res.h.nfields, 0);
	expect_all("location:/local \r\nCONTENT-TYPE:\ttext/x\t\r\n\r\n");
	assert_str(res.h.location, res.h.location_len, "/local");
	assert_str(res.h.content_type, res.h.content_type_len, "text/x");
	expect_all("Content-Length: 123\r\nContent-Type: a/b\r\n\r\n");
	assert_true(res.h.has_content_length);
	assert_int_equal(res.h.content_length, 123);
	expect_all("Content-Length: 0\n\n");
	assert_true(res.h.has_content_length);
	assert_int_equal(res.h.content_length, 0);
	expect_all("Content-Length: 9223372036854775807\n\n");
	assert_int_equal(res.h.content_length, INT64_MAX);

	/* OWS trimmed, inner whitespace kept, empty values of other
	 * fields kept */
	expect_all("X-A:  a \t b \t \r\nX-B:\r\nX-C: \t\r\n\r\n");
	assert_int_equal(res.h.nfields, 3);
	assert_str(res.f[0].value, res.f[0].value_len, "a \t b");
	assert_int_equal(res.f[1].value_len, 0);
	assert_int_equal(res.f[2].value_len, 0);
	assert_non_null(res.f[1].value);
	/* obs-text is a valid value */
	expect_all("X: \x80\xff\n\n");

	/* Content-Length */
	EXPECT_ERRORS(-EPROTO,
		"Content-Length:\n\n",
		"Content-Length: 12a\n\n",
		"Content-Length: -1\n\n",
		"Content-Length: +1\n\n",
		"Content-Length: 1 2\n\n",
		"Content-Length: 1,1\n\n",
		"Content-Length: 0x10\n\n",
		"Content-Length: 9223372036854775808\n\n",
		"Content-Length: 99999999999999999999999\n\n",
		/* empty Location / Content-Type */
		"Location:\n\n",
		"Location: \t \n\n",
		"Content-Type: \n\n");
}

static void test_head_syntax(void **state)
{
	(void)state;
	assert_int_equal(head_n("X: a\0b\n\n", 8), -EPROTO);
	assert_int_equal(head_n("X\0: ab\n\n", 8), -EPROTO);
	EXPECT_ERRORS(-EPROTO,
		"X: a\x01\n\n",
		"X: a\x1f\n\n",
		"X: a\x7f\n\n",
		"X: a\x0b\n\n",
		"X: a\n  folded\n\n", /* obs-fold */
		"X: a\n\tfolded\n\n",
		" X: a\n\n",
		"X a\n\n", /* no colon */
		"X\n\n",
		"X : a\n\n", /* space before colon */
		"X\t: a\n\n",
		": a\n\n", /* empty name */
		"X@Y: a\n\n", /* not a token */
		"X/Y: a\n\n",
		"\xc3\xa9: a\n\n");
	expect_all("X!#$%&'*+-.^_`|~09az: a\n\n");
	/* an error in a line is found as soon as the line is complete */
	expect_error("X : a\n", -EPROTO);
	expect_error("Content-Type: a\nX : a\nY: b", -EPROTO);
	expect_error("Status: 1\n", -EPROTO);
}

static void test_head_duplicates(void **state)
{
	(void)state;
	EXPECT_ERRORS(-EPROTO,
		"Status: 200\nStatus: 200\n\n",
		"Status: 200\nstatus: 404\n\n",
		"Location: /a\nLocation: /a\n\n",
		"Location: /a\nLOCATION: /b\n\n",
		"Content-Type: a\nContent-Type: a\n\n",
		"Content-Type: a\nX: 1\ncontent-type: b\n\n",
		"Content-Length: 5\nContent-Length: 6\n\n",
		"Content-Length: 5\nContent-Length: 05\n\n");
	expect_all("Content-Length: 5\nContent-Length: 5\n\n");
	assert_int_equal(res.h.content_length, 5);
	expect_all("Content-Length: 5\nContent-Length:   5 \n\n");
	expect_error("Content-Length: 5\nContent-Length: 5\n"
		     "Content-Length: 7\n\n", -EPROTO);
	/* other fields repeat freely */
	expect_all("X: 1\nX: 1\nx: 2\n\n");
	assert_int_equal(res.h.nfields, 3);
	/* a repeat found only when the head completes still beats
	 * max_fields */
	max_fields = 1;
	expect_error("X: 1\nY: 2\nStatus: 200\nStatus: 201\n\n", -EPROTO);
	expect_error("X: 1\nY: 2\nStatus: 200\n\n", -E2BIG);
}

static void test_head_max_fields(void **state)
{
	(void)state;
	max_fields = 2;
	expect_all("A: 1\nB: 2\n\n");
	assert_int_equal(res.h.nfields, 2);
	expect_error("A: 1\nB: 2\nC: 3\n\n", -E2BIG);
	/* the four interpreted fields do not count */
	expect_all("Status: 200\nA: 1\nLocation: /x\nContent-Type: t\n"
		    "Content-Length: 1\nB: 2\n\n");
	assert_int_equal(res.h.nfields, 2);
	assert_str(res.f[1].name, res.f[1].name_len, "B");
	max_fields = 0;
	expect_all("Status: 200\nContent-Type: t\n\n");
	assert_int_equal(res.h.nfields, 0);
	expect_error("Status: 200\nX: y\n\n", -E2BIG);
	/* syntax anywhere beats max_fields */
	expect_error("X: y\nZ\x01: y\n\n", -EPROTO);
}

static void test_head_max_bytes(void **state)
{
	const char *s = "Content-Type: a\r\n\r\n";	/* 19 */

	(void)state;
	max_bytes = 19;
	expect_head(s, 19);
	assert_int_equal(head_n("Content-Type: a\r\n\r\nmore body", 28), 19);
	max_bytes = 18;
	expect_error(s, -E2BIG);
	/* incomplete: as soon as it is sure to pass */
	expect_error("Content-Type: a\r\n\r", -E2BIG);
	expect_error("Content-Type: a\r\n", CGI_HEAD_INCOMPLETE);
	max_bytes = 17;
	expect_error("Content-Type: a\r\n", -E2BIG);
	expect_error("Content-Type: a\r", CGI_HEAD_INCOMPLETE);
	max_bytes = 10;
	expect_error("Content-Ty", -E2BIG);
	expect_error("Content-T", CGI_HEAD_INCOMPLETE);
	max_bytes = 0;
	expect_error("", -E2BIG);
	expect_error("\n", -E2BIG);
	max_bytes = 1;
	expect_error("\n", -EPROTO);
	/* bare LF counts one byte */
	max_bytes = 6;
	expect_all("X: y\n\n");
	expect_error("X: yz\n\n", -E2BIG);
	/* error order: the lines before the limit are checked first */
	max_bytes = 20;
	expect_error("X\x01: 1\nY: 222222222222222222\n\n", -EPROTO);
	expect_error("X: 1\nY\x01: 222222222222222222\n\n", -E2BIG);
	expect_error("X: 1\nY: 222222222222222222", -E2BIG);
	expect_error("X : 1\nY: 222222222222222222", -EPROTO);
	/* the empty line too must fit */
	max_bytes = 10;
	expect_error("X: 123456\n\n", -E2BIG);
}

static void test_head_incremental(void **state)
{
	const char *s = "Status: 301 Moved\r\nLocation: /new\r\nX: 1\r\n\r\nbody";
	struct cgi_head_parser p;
	struct head_result r, r2;
	char *copy;
	size_t n = strlen(s);

	(void)state;
	result_init(&r);
	cgi_head_parser_init(&p);
	assert_int_equal(cgi_head_parse(&p, s, 10, max_bytes, &r.h),
			 CGI_HEAD_INCOMPLETE);
	assert_int_equal(cgi_head_parse(&p, s, 30, max_bytes, &r.h),
			 CGI_HEAD_INCOMPLETE);
	assert_int_equal(cgi_head_parse(&p, s, n, max_bytes, &r.h), n - 4);
	/* complete: the same answer again, also with more bytes, also on a
	 * buffer that moved */
	assert_int_equal(cgi_head_parse(&p, s, n, max_bytes, &r.h), n - 4);
	copy = strdup(s);
	assert_non_null(copy);
	result_init(&r2);
	assert_int_equal(cgi_head_parse(&p, copy, n, max_bytes, &r2.h), n - 4);
	assert_ptr_equal(r2.h.location, copy + (strstr(s, "/new") - s));
	r2.ret = n - 4;
	assert_int_equal(head_n(s, n), n - 4);
	assert_same(&r2, copy, &res, s);
	/* a shorter buffer starts over */
	assert_int_equal(cgi_head_parse(&p, s, 5, max_bytes, &r.h),
			 CGI_HEAD_INCOMPLETE);
	assert_int_equal(cgi_head_parse(&p, s, n, max_bytes, &r.h), n - 4);
	free(copy);
}

/* A head of random fragments, valid and not: every split agrees. */
static void test_head_random_splits(void **state)
{
	static const char *const frags[] = {
		"Status: ", "200", "404 Not Found", " ", "\t", "OK",
		"Location: ", "/x", "http://h/", "Content-Type: ",
		"text/html", "Content-Length: ", "12", "0", "X-A: ",
		"Set-Cookie: a=b", "\r\n", "\n", "\r\n", "\n", "\r", ":",
		"a", "Z", "\x01", "\x7f", "\x80", "body", "\r\n\r\n", "\n\n",
		"STATUS:301", "content-length:12", "", "-", "@",
	};
	static const char *const lines[] = {
		"Status: 200", "Status: 404 Not Found", "Location: /x",
		"Location: http://h/p?q", "Content-Type: text/html",
		"Content-Length: 42", "X-A: b", "Set-Cookie: a=b; path=/",
		"X-Empty:", "x-tab:\tv\t", "Cache-Control: no-cache",
	};
	const size_t nfrags = sizeof(frags) / sizeof(frags[0]);
	const size_t nlines = sizeof(lines) / sizeof(lines[0]);
	char buf[512];
	unsigned iter, done = 0, eproto = 0, e2big = 0, incomplete = 0;

	(void)state;
	rng_state = 0x2545f4914f6cdd1dull;	/* independent of test order */
	for (iter = 0; iter < 3000; iter++) {
		size_t n = 0, k, parts = 1 + rnd() % 16;

		if (iter % 2) {
			/* valid lines, then maybe one byte changed */
			for (k = 0; k < parts / 2; k++)
				n += sprintf(buf + n, "%s%s",
					     lines[rnd() % nlines],
					     rnd() % 2 ? "\r\n" : "\n");
			n += sprintf(buf + n, "%sbody", rnd() % 2 ? "\r\n" : "\n");
			if (rnd() % 3 == 0)
				buf[rnd() % n] = "\r\n :\t\x01a"[rnd() % 7];
		}
		for (k = 0; k < parts && !(iter % 2); k++) {
			const char *f = frags[rnd() % nfrags];
			size_t l = strlen(f);

			if (n + l >= sizeof(buf))
				break;
			memcpy(buf + n, f, l);
			n += l;
		}
		/* sometimes a NUL inside */
		if (n && rnd() % 10 == 0)
			buf[rnd() % n] = '\0';
		max_bytes = rnd() % 3 ? 8192 : rnd() % 120;
		max_fields = rnd() % 4;
		switch (head_n(buf, n)) {
		case -EPROTO:
			eproto++;
			break;
		case -E2BIG:
			e2big++;
			break;
		case CGI_HEAD_INCOMPLETE:
			incomplete++;
			break;
		default:
			done++;
		}
	}
	/* the generator reaches every outcome */
	print_message("complete %u, EPROTO %u, E2BIG %u, incomplete %u\n",
		      done, eproto, e2big, incomplete);
	assert_true(done > 200 && eproto > 200 && e2big > 100 &&
		    incomplete > 100);
}

/* Slowloris: a large head dripped one byte per call is linear.  With a
 * quadratic rescan this does ~10^11 steps and trips the test timeout. */
static void test_head_drip_is_linear(void **state)
{
	struct cgi_head_parser p;
	struct head_result r;
	size_t n = 0, i, lines = 2000;
	ssize_t ret = CGI_HEAD_INCOMPLETE;
	char *s = malloc(lines * 210 + 3);

	(void)state;
	assert_non_null(s);
	for (i = 0; i < lines; i++) {
		n += sprintf(s + n, "X-%zu: ", i);
		memset(s + n, 'v', 200);
		n += 200;
		s[n++] = '\n';
	}
	s[n++] = '\n';
	max_fields = MAXF;
	result_init(&r);
	r.h.max_fields = MAXF;
	cgi_head_parser_init(&p);
	for (i = 1; i <= n && ret == CGI_HEAD_INCOMPLETE; i++)
		ret = cgi_head_parse(&p, s, i, SIZE_MAX, &r.h);
	assert_int_equal(ret, -E2BIG);	/* more fields than slots */
	assert_int_equal(i, n + 1);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_valid),
		cmocka_unit_test(test_header_invalid),
		cmocka_unit_test(test_header_encode),
		cmocka_unit_test(test_begin),
		cmocka_unit_test(test_end),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_nv_len),
		cmocka_unit_test(test_nv_forms),
		cmocka_unit_test(test_nv_max_length),
		cmocka_unit_test(test_nv_truncated),
		cmocka_unit_test(test_nv_encode_errors),
		cmocka_unit_test(test_nv_round_trip),
		cmocka_unit_test_setup(test_head_basic, head_setup),
		cmocka_unit_test_setup(test_head_line_ends, head_setup),
		cmocka_unit_test_setup(test_head_status, head_setup),
		cmocka_unit_test_setup(test_head_fields, head_setup),
		cmocka_unit_test_setup(test_head_syntax, head_setup),
		cmocka_unit_test_setup(test_head_duplicates, head_setup),
		cmocka_unit_test_setup(test_head_max_fields, head_setup),
		cmocka_unit_test_setup(test_head_max_bytes, head_setup),
		cmocka_unit_test_setup(test_head_incremental, head_setup),
		cmocka_unit_test_setup(test_head_random_splits, head_setup),
		cmocka_unit_test_setup(test_head_drip_is_linear, head_setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
