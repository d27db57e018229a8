/* test_fcgi_batch.c - FastCGI records framed onto libzc aggregates
 * (fcgi_batch.h): the record stream both ends send, byte for byte, and
 * where its bytes live (copied once, borrowed, or the content's own). */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fcgi_batch.h"

/* The whole aggregate as bytes (malloc'd). */
static uint8_t *bytes_of(const zc_agg *a)
{
	size_t n = zc_agg_len(a);
	uint8_t *p = malloc(n + 1);

	assert_non_null(p);
	assert_int_equal(zc_agg_copyout(a, 0, p, n), (ssize_t)n);
	return p;
}

/* Walk a record stream: each record's type, id and content, checked
 * against the expected content bytes in order; returns records seen. */
static size_t check_records(const uint8_t *p, size_t n, uint8_t type,
			    uint16_t id, const uint8_t *content,
			    size_t content_len, bool ends)
{
	size_t off = 0, got = 0, recs = 0;

	while (off < n) {
		struct fcgi_header h;

		assert_true(n - off >= FCGI_HEADER_LEN);
		assert_int_equal(fcgi_header_decode(p + off, &h), 0);
		assert_int_equal(h.type, type);
		assert_int_equal(h.request_id, id);
		assert_int_equal(h.padding_length, 0);
		off += FCGI_HEADER_LEN;
		assert_true(h.content_length <= FCGI_MAX_CONTENT);
		assert_memory_equal(p + off, content + got, h.content_length);
		off += h.content_length;
		got += h.content_length;
		recs++;
		if (!h.content_length) {
			assert_true(ends);
			assert_int_equal(off, n);	/* the end is last */
		}
	}
	assert_int_equal(got, content_len);
	return recs;
}

static uint8_t *pattern(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + i / 251);
	return p;
}

/* Bytes: cut at 65535, each piece its header, the end record last; in
 * copy mode all of it in one buffer, one slice. */
static void test_bytes_copy(void **state)
{
	const size_t sizes[] = { 1, 65534, 65535, 65536, 200000 };

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint8_t *src = pattern(n), *got;
		struct fcgi_batch b;
		zc_agg *out;

		assert_int_equal(zc_agg_create(&out), 0);
		fcgi_batch_init(&b);
		fcgi_batch_bytes(&b, FCGI_STDOUT, 3, src, n);
		fcgi_batch_bytes(&b, FCGI_STDOUT, 3, NULL, 0);
		assert_int_equal(fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL,
						  out), 0);
		fcgi_batch_free(&b);
		memset(src, 0, n);	/* copied: the source is free */
		free(src);
		src = pattern(n);
		assert_int_equal(zc_agg_nslices(out), 1);
		got = bytes_of(out);
		assert_int_equal(check_records(got, zc_agg_len(out),
					       FCGI_STDOUT, 3, src, n, true),
				 (n + FCGI_MAX_CONTENT - 1) / FCGI_MAX_CONTENT + 1);
		free(got);
		free(src);
		zc_agg_release(out);
	}
}

/* Borrow mode: headers in the batch, bytes where the caller has them. */
static void test_bytes_borrow(void **state)
{
	uint8_t src[100] = "the caller's bytes";
	struct fcgi_batch b;
	struct zc_slice s;
	zc_agg *out;
	uint8_t *got;

	(void)state;
	assert_int_equal(zc_agg_create(&out), 0);
	fcgi_batch_init(&b);
	fcgi_batch_bytes(&b, FCGI_STDERR, 9, src, sizeof(src));
	assert_int_equal(fcgi_batch_build(&b, FCGI_BATCH_BORROW, NULL, out),
			 0);
	assert_int_equal(zc_agg_nslices(out), 2);
	assert_int_equal(zc_agg_slice(out, 1, &s), 0);
	assert_int_equal(s.kind, ZC_SLICE_MEM);
	assert_ptr_equal(s.mem, src);
	got = bytes_of(out);
	check_records(got, zc_agg_len(out), FCGI_STDERR, 9, src, sizeof(src),
		      false);
	free(got);
	zc_agg_release(out);
	fcgi_batch_free(&b);
}

/* An aggregate's content is cut by pointer work: every content slice is
 * the original buffer's, none copied. */
static void test_agg_by_reference(void **state)
{
	const size_t n = 3 * 65535 + 10;
	uint8_t *src = pattern(n), *got;
	struct fcgi_batch b;
	zc_agg *content, *out;
	zc_buf *buf;
	size_t from_buf = 0;

	(void)state;
	assert_int_equal(zc_buf_from_bytes(NULL, src, n, &buf), 0);
	assert_int_equal(zc_agg_create(&content), 0);
	assert_int_equal(zc_agg_append_buf(content, buf, 0, n), 0);
	assert_int_equal(zc_agg_create(&out), 0);
	fcgi_batch_init(&b);
	fcgi_batch_agg(&b, FCGI_STDIN, 1, content);	/* taken over */
	fcgi_batch_bytes(&b, FCGI_STDIN, 1, NULL, 0);
	assert_int_equal(fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL, out), 0);
	fcgi_batch_free(&b);
	for (size_t i = 0; i < zc_agg_nslices(out); i++) {
		struct zc_slice s;

		assert_int_equal(zc_agg_slice(out, i, &s), 0);
		if (s.buf == buf)
			from_buf += s.len;
	}
	assert_int_equal(from_buf, n);
	got = bytes_of(out);
	assert_int_equal(check_records(got, zc_agg_len(out), FCGI_STDIN, 1,
				       src, n, true), 5);
	free(got);
	free(src);
	zc_agg_release(out);
	zc_buf_release(buf);
}

/* An empty aggregate is the end record alone; a batch of nothing builds
 * nothing. */
static void test_empty(void **state)
{
	struct fcgi_batch b;
	zc_agg *content, *out;
	uint8_t *got;

	(void)state;
	assert_int_equal(zc_agg_create(&out), 0);
	fcgi_batch_init(&b);
	assert_int_equal(fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL, out), 0);
	assert_int_equal(zc_agg_len(out), 0);
	assert_int_equal(zc_agg_create(&content), 0);
	fcgi_batch_agg(&b, FCGI_STDOUT, 2, content);
	assert_int_equal(fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL, out), 0);
	fcgi_batch_free(&b);
	assert_int_equal(zc_agg_len(out), FCGI_HEADER_LEN);
	got = bytes_of(out);
	assert_int_equal(check_records(got, FCGI_HEADER_LEN, FCGI_STDOUT, 2,
				       NULL, 0, true), 1);
	free(got);
	zc_agg_release(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_copy),
		cmocka_unit_test(test_bytes_borrow),
		cmocka_unit_test(test_agg_by_reference),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
