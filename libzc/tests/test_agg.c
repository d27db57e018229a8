/* test_agg.c - every aggregate operation, checked byte for byte against a
 * plain reference string, plus the reference counts slices hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/internal.h"

static zc_pool *pool;

static int setup(void **state)
{
	(void)state;
	return zc_pool_create(1 << 20, &pool);
}

static int teardown(void **state)
{
	struct zc_pool_stats st;

	(void)state;
	/* Every test releases everything it made: nothing stays in use. */
	zc_pool_stats(pool, &st);
	zc_pool_release(pool);
	return st.bytes_in_use == 0 ? 0 : -1;
}

/* Assert the aggregate holds exactly `want`. */
static void expect(zc_agg *a, const char *want)
{
	size_t n = strlen(want);
	char got[256];

	assert_int_equal(zc_agg_len(a), n);
	assert_int_equal(zc_agg_copyout(a, 0, got, sizeof(got)), n);
	assert_memory_equal(got, want, n);
	/* The slices' lengths add up to the total. */
	size_t sum = 0;
	struct zc_slice s;
	for (size_t i = 0; i < zc_agg_nslices(a); i++) {
		assert_int_equal(zc_agg_slice(a, i, &s), 0);
		assert_true(s.len > 0);
		sum += s.len;
	}
	assert_int_equal(sum, n);
}

static zc_buf *mkbuf(const char *s)
{
	zc_buf *b;

	assert_int_equal(zc_buf_from_bytes(pool, s, strlen(s), &b), 0);
	return b;
}

static void test_append_prepend(void **state)
{
	zc_buf *hello = mkbuf("hello"), *world = mkbuf(" world");
	zc_agg *a;

	(void)state;
	assert_int_equal(zc_agg_create(&a), 0);
	expect(a, "");
	assert_int_equal(zc_agg_append_buf(a, world, 0, 6), 0);
	assert_int_equal(zc_agg_prepend_buf(a, hello, 0, 5), 0);
	expect(a, "hello world");
	assert_int_equal(zc_agg_append_buf(a, hello, 1, 3), 0);
	expect(a, "hello worldell");
	/* Adjacent parts of one buffer merge into one slice. */
	assert_int_equal(zc_agg_append_buf(a, hello, 4, 1), 0);
	assert_int_equal(zc_agg_nslices(a), 3);
	expect(a, "hello worldello");
	assert_int_equal(zc_agg_append_buf(a, hello, 0, 0), 0);	/* no-op */
	assert_int_equal(zc_agg_nslices(a), 3);
	/* Out of range. */
	assert_int_equal(zc_agg_append_buf(a, hello, 3, 3), -ERANGE);
	assert_int_equal(zc_agg_append_buf(a, hello, 6, 0), -ERANGE);
	assert_int_equal(zc_agg_append_buf(a, hello, 1, SIZE_MAX), -ERANGE);
	expect(a, "hello worldello");
	/* The aggregate holds its own references. */
	zc_buf_release(hello);
	zc_buf_release(world);
	expect(a, "hello worldello");
	zc_agg_release(a);
}

static void test_unpublished_refused(void **state)
{
	zc_agg *a;
	zc_buf *b;

	(void)state;
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_buf_alloc(pool, 10, &b), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, 0), -EPERM);
	zc_buf_release(b);
	zc_agg_release(a);
}

static void test_many_slices_grow(void **state)
{
	char ref[256] = "", piece[2] = "x";
	zc_buf *b = mkbuf("abcdefghijklmnopqrstuvwxyz");
	zc_agg *a;

	(void)state;
	assert_int_equal(zc_agg_create(&a), 0);
	/* Alternate front and back insertions of non-adjacent bytes so no
	 * two slices merge: forces growth and recentring. */
	for (int i = 0; i < 100; i++) {
		size_t off = (size_t)(i * 7) % 26;
		piece[0] = (char)('a' + off);
		if (i % 2) {
			assert_int_equal(zc_agg_append_buf(a, b, off, 1), 0);
			strcat(ref, piece);
		} else {
			assert_int_equal(zc_agg_prepend_buf(a, b, off, 1), 0);
			memmove(ref + 1, ref, strlen(ref) + 1);
			ref[0] = piece[0];
		}
	}
	expect(a, ref);
	zc_buf_release(b);
	zc_agg_release(a);
}

/* objcache.c: aggregates and buffer headers are kept per thread and
 * handed out again; a recycled one must be as good as a new one, and a
 * thread that exits with objects in its cache must not disturb anyone. */
static void *churn(void *arg)
{
	zc_buf *b = arg;

	for (int i = 0; i < 100; i++) {
		zc_agg *a;

		if (zc_agg_create(&a) || zc_agg_append_buf(a, b, 0, 3))
			return (void *)1;
		zc_agg_release(a);
	}
	return NULL;	/* exits with aggregates in its cache */
}

static void test_recycled_objects(void **state)
{
	zc_buf *b = mkbuf("abcdefghijklmnopqrstuvwxyz");
	zc_agg *a, *again;
	pthread_t t;
	void *res;

	(void)state;
	assert_int_equal(zc_agg_create(&a), 0);
	for (int i = 0; i < 12; i++)	/* past the inline slices */
		assert_int_equal(zc_agg_append_buf(a, b, (size_t)(i * 2), 1), 0);
	assert_int_equal(zc_agg_nslices(a), 12);
	zc_agg_release(a);
	assert_int_equal(zc_agg_create(&again), 0);
	assert_int_equal(zc_agg_len(again), 0);
	assert_int_equal(zc_agg_nslices(again), 0);
	assert_int_equal(zc_agg_append_buf(again, b, 0, 3), 0);
	expect(again, "abc");
	zc_agg_release(again);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_create(&t, NULL, churn, b), 0);
		assert_int_equal(pthread_join(t, &res), 0);
		assert_null(res);
	}
	/* A cached header is handed out again, or (ASan) none is kept. */
	void *obj = malloc(sizeof(zc_buf));

	assert_non_null(obj);
	if (zc_obj_put(ZC_OBJ_BUF, obj))
		assert_ptr_equal(zc_obj_get(ZC_OBJ_BUF), obj);
	free(obj);
	zc_buf_release(b);
}

static void test_concat_dup(void **state)
{
	zc_buf *x = mkbuf("0123456789");
	zc_agg *a, *b, *d;

	(void)state;
	zc_agg_create(&a);
	zc_agg_create(&b);
	zc_agg_append_buf(a, x, 0, 3);
	zc_agg_append_buf(b, x, 5, 5);
	assert_int_equal(zc_agg_concat(a, b), 0);
	expect(a, "01256789");
	expect(b, "56789");
	assert_int_equal(zc_agg_concat(a, a), 0);	/* self-concat doubles */
	expect(a, "0125678901256789");
	assert_int_equal(zc_agg_dup(a, &d), 0);
	zc_agg_release(a);
	expect(d, "0125678901256789");
	assert_int_equal(zc_agg_concat(NULL, b), -EINVAL);
	assert_int_equal(zc_agg_dup(NULL, &a), -EINVAL);
	zc_agg_release(b);
	zc_agg_release(d);
	zc_buf_release(x);
}

static void test_split(void **state)
{
	zc_buf *x = mkbuf("abcdef"), *y = mkbuf("ghij");
	zc_agg *a, *t;

	(void)state;
	for (size_t at = 0; at <= 10; at++) {
		const char *all = "abcdefghij";
		char head[16];

		zc_agg_create(&a);
		zc_agg_append_buf(a, x, 0, 6);
		zc_agg_append_buf(a, y, 0, 4);
		assert_int_equal(zc_agg_split(a, at, &t), 0);
		snprintf(head, sizeof(head), "%.*s", (int)at, all);
		expect(a, head);
		expect(t, all + at);
		/* split_front: the same cut, the other part moves out */
		assert_int_equal(zc_agg_concat(a, t), 0);
		zc_agg_release(t);
		assert_int_equal(zc_agg_split_front(a, at, &t), 0);
		expect(t, head);
		expect(a, all + at);
		zc_agg_release(a);
		zc_agg_release(t);
	}
	zc_agg_create(&a);
	zc_agg_append_buf(a, x, 0, 6);
	assert_int_equal(zc_agg_split(a, 7, &t), -ERANGE);
	assert_null(t);
	assert_int_equal(zc_agg_split(a, 1, NULL), -EINVAL);
	assert_int_equal(zc_agg_split_front(a, 7, &t), -ERANGE);
	assert_null(t);
	assert_int_equal(zc_agg_split_front(a, 1, NULL), -EINVAL);
	expect(a, "abcdef");
	zc_agg_release(a);
	zc_buf_release(x);
	zc_buf_release(y);
}

/* split_front (every cut point: test_split): records taken one by one off
 * a long aggregate, and each buffer's references balance (a slice cut in
 * two holds one in each part). */
static void test_split_front(void **state)
{
	zc_buf *x = mkbuf("abcdef"), *y = mkbuf("ghij");
	zc_agg *a, *f;

	(void)state;
	/* 40 slices, taken off three bytes at a time. */
	zc_agg_create(&a);
	for (int i = 0; i < 20; i++) {
		zc_agg_append_buf(a, x, (size_t)(i % 6), 1);
		zc_agg_append_buf(a, y, (size_t)(i % 4), 1);
	}
	for (int i = 0; i < 40; i += 3) {
		char want[4] = { 0 }, got[4] = { 0 };
		size_t n = 40 - i < 3 ? (size_t)(40 - i) : 3;

		for (size_t k = 0; k < n; k++) {
			size_t j = (size_t)i + k;

			want[k] = j % 2 ? "ghij"[(j / 2) % 4] : "abcdef"[(j / 2) % 6];
		}
		assert_int_equal(zc_agg_split_front(a, n, &f), 0);
		assert_int_equal(zc_agg_copyout(f, 0, got, n), (ssize_t)n);
		assert_string_equal(got, want);
		assert_int_equal(zc_agg_len(a), 40 - i - n);
		zc_agg_release(f);
	}
	assert_int_equal(zc_agg_nslices(a), 0);
	zc_agg_release(a);
	assert_int_equal(atomic_load(&x->refs), 1);
	assert_int_equal(atomic_load(&y->refs), 1);
	zc_buf_release(x);
	zc_buf_release(y);
}

static void test_truncate_trim(void **state)
{
	zc_buf *x = mkbuf("abcdef"), *y = mkbuf("ghij");
	zc_agg *a;

	(void)state;
	zc_agg_create(&a);
	zc_agg_append_buf(a, x, 0, 6);
	zc_agg_append_buf(a, y, 0, 4);
	assert_int_equal(zc_agg_truncate(a, 11), -ERANGE);
	assert_int_equal(zc_agg_truncate(a, 8), 0);
	expect(a, "abcdefgh");
	assert_int_equal(zc_agg_trim_front(a, 9), -ERANGE);
	assert_int_equal(zc_agg_trim_front(a, 2), 0);
	expect(a, "cdefgh");
	assert_int_equal(zc_agg_trim_front(a, 4), 0);	/* exactly a slice */
	expect(a, "gh");
	assert_int_equal(zc_agg_nslices(a), 1);
	assert_int_equal(zc_agg_truncate(a, 6 - 6), 0);
	expect(a, "");
	assert_int_equal(zc_agg_nslices(a), 0);
	/* Usable again after emptying. */
	assert_int_equal(zc_agg_prepend_buf(a, y, 1, 2), 0);
	expect(a, "hi");
	zc_agg_release(a);
	zc_buf_release(x);
	zc_buf_release(y);
}

static void test_slice_iter(void **state)
{
	zc_buf *x = mkbuf("abcdef");
	struct zc_slice s;
	zc_agg *a;

	(void)state;
	zc_agg_create(&a);
	zc_agg_append_buf(a, x, 2, 3);
	assert_int_equal(zc_agg_slice(a, 0, &s), 0);
	assert_int_equal(s.kind, ZC_SLICE_BUF);
	assert_ptr_equal(s.buf, x);
	assert_int_equal(s.off, 2);
	assert_int_equal(s.len, 3);
	assert_int_equal(zc_agg_slice(a, 1, &s), -ERANGE);
	assert_int_equal(zc_agg_slice(NULL, 0, &s), -EINVAL);
	zc_agg_release(a);
	zc_buf_release(x);
}

static void test_map(void **state)
{
	zc_buf *x = mkbuf("abcdef"), *y = mkbuf("ghij");
	const void *d, *d2;
	size_t len;
	zc_agg *a;

	(void)state;
	zc_agg_create(&a);
	assert_int_equal(zc_agg_map(a, pool, &d, &len), 0);
	assert_non_null(d);
	assert_int_equal(len, 0);
	/* One slice: the buffer itself, no copy. */
	zc_agg_append_buf(a, x, 1, 4);
	assert_int_equal(zc_agg_map(a, pool, &d, &len), 0);
	assert_ptr_equal(d, (const char *)zc_buf_data(x) + 1);
	assert_int_equal(len, 4);
	/* Several slices: gathered once, then the view is reused. */
	zc_agg_append_buf(a, y, 0, 4);
	assert_int_equal(zc_agg_map(a, pool, &d, &len), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(d, "bcdeghij", 8);
	assert_int_equal(zc_agg_nslices(a), 1);
	assert_int_equal(zc_agg_map(a, pool, &d2, NULL), 0);
	assert_ptr_equal(d, d2);
	assert_int_equal(zc_agg_map(NULL, pool, &d, &len), -EINVAL);
	zc_agg_release(a);
	zc_buf_release(x);
	zc_buf_release(y);
}

static void test_append_bytes_and_copyout(void **state)
{
	char big[10000], out[10000];
	zc_agg *a;

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	zc_agg_create(&a);
	assert_int_equal(zc_agg_append_bytes(a, pool, big, sizeof(big)), 0);
	assert_int_equal(zc_agg_append_bytes(a, pool, NULL, 5), -EINVAL);
	assert_int_equal(zc_agg_copyout(a, 9000, out, 5000), 1000);
	assert_memory_equal(out, big + 9000, 1000);
	assert_int_equal(zc_agg_copyout(a, 20000, out, 10), 0);
	assert_int_equal(zc_agg_copyout(a, 0, NULL, 10), -EINVAL);
	zc_agg_release(a);
	zc_agg_release(NULL);
}

/* Borrowed memory: no reference, merged with its neighbour when
 * contiguous, cut and copied like any slice, never taken over. */
static void test_borrowed(void **state)
{
	char mem[64] = "head:0123456789abcdefghij";
	char out[64];
	struct zc_slice sl;
	zc_agg *a, *t, *d;
	zc_buf *b;

	(void)state;
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_mem(a, mem, 5), 0);
	assert_int_equal(zc_agg_append_mem(a, mem + 5, 10), 0);	/* merges */
	assert_int_equal(zc_agg_nslices(a), 1);
	assert_int_equal(zc_buf_from_bytes(NULL, "BODY", 4, &b), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, 4), 0);
	assert_int_equal(zc_agg_append_mem(a, mem + 15, 5), 0);
	assert_int_equal(zc_agg_nslices(a), 3);
	assert_int_equal(zc_agg_len(a), 24);
	assert_int_equal(zc_agg_slice(a, 0, &sl), 0);
	assert_int_equal(sl.kind, ZC_SLICE_MEM);
	assert_ptr_equal(sl.mem, mem);
	assert_int_equal(sl.len, 15);
	assert_int_equal(zc_agg_copyout(a, 0, out, 24), 24);
	assert_memory_equal(out, "head:0123456789BODYabcde", 24);
	/* Cut inside borrowed slices, duplicate, trim. */
	assert_int_equal(zc_agg_split(a, 7, &t), 0);
	assert_int_equal(zc_agg_copyout(t, 0, out, 17), 17);
	assert_memory_equal(out, "23456789BODYabcde", 17);
	assert_int_equal(zc_agg_dup(t, &d), 0);
	assert_int_equal(zc_agg_trim_front(d, 3), 0);
	assert_int_equal(zc_agg_copyout(d, 0, out, 14), 14);
	assert_memory_equal(out, "56789BODYabcde", 14);
	/* Mapping gathers into a buffer of the aggregate's own. */
	const void *p;
	size_t len;

	assert_int_equal(zc_agg_map(t, NULL, &p, &len), 0);
	assert_int_equal(len, 17);
	memset(mem, 'X', sizeof(mem));	/* the owner reuses its memory */
	assert_memory_equal(p, "23456789BODYabcde", 17);
	assert_int_equal(zc_agg_copyout(a, 0, out, 7), 7);
	assert_memory_equal(out, "XXXXXXX", 7);		/* a still borrows */
	assert_int_equal(zc_agg_append_mem(NULL, mem, 1), -EINVAL);
	assert_int_equal(zc_agg_append_mem(a, NULL, 1), -EINVAL);
	assert_int_equal(zc_agg_append_mem(a, NULL, 0), 0);
	zc_agg_release(a);
	zc_agg_release(t);
	zc_agg_release(d);
	zc_buf_release(b);
}

static void test_file_slices(void **state)
{
	char path[] = "/tmp/zc-agg-XXXXXX", out[32];
	int fd = mkstemp(path);
	zc_file *f;
	zc_buf *h = mkbuf("HDR:");
	zc_agg *a, *t;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "file contents here", 18), 18);
	assert_int_equal(zc_file_open(path, &f), 0);
	zc_agg_create(&a);
	assert_int_equal(zc_agg_append_file(a, f, 5, 8), 0);
	assert_int_equal(zc_agg_prepend_buf(a, h, 0, 4), 0);
	assert_int_equal(zc_agg_append_file(a, f, 13, 5), 0);	/* merges */
	assert_int_equal(zc_agg_nslices(a), 2);
	expect(a, "HDR:contents here");
	assert_int_equal(zc_agg_append_file(a, f, 10, 9), -ERANGE);
	assert_int_equal(zc_agg_prepend_file(a, f, 0, 5), 0);
	expect(a, "file HDR:contents here");
	assert_int_equal(zc_agg_split(a, 12, &t), 0);
	expect(t, "tents here");
	zc_file_release(f);	/* slices keep the file open */
	const void *d;
	assert_int_equal(zc_agg_map(t, pool, &d, NULL), 0);
	assert_memory_equal(d, "tents here", 10);
	/* A file that shrank under an extent: an error, never SIGBUS. */
	assert_int_equal(ftruncate(fd, 6), 0);
	assert_int_equal(zc_agg_copyout(a, 0, out, sizeof(out)), -ESTALE);
	zc_agg_release(a);
	zc_agg_release(t);
	zc_buf_release(h);
	close(fd);
	unlink(path);
}

/* A body cut into frames, a header before each: the file's extents come
 * in one preadv, each to its place; a file that ends early is -ESTALE. */
static void test_copyout_frames_one_read(void **state)
{
	enum { FRAME = 1000, FRAMES = 7 };
	char path[] = "/tmp/zc-agg-XXXXXX";
	unsigned char body[FRAME * FRAMES], want[(9 + FRAME) * FRAMES],
		got[sizeof(want)], hdr[FRAMES][9];
	struct zc_io_stats s0, s1;
	int fd = mkstemp(path);
	zc_file *f;
	zc_agg *a;

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 7 + i / 251);
	assert_int_equal(write(fd, body, sizeof(body)), (ssize_t)sizeof(body));
	assert_int_equal(zc_file_open(path, &f), 0);
	zc_agg_create(&a);
	for (int k = 0; k < FRAMES; k++) {
		memset(hdr[k], 'A' + k, 9);
		assert_int_equal(zc_agg_append_mem(a, hdr[k], 9), 0);
		assert_int_equal(zc_agg_append_file(a, f, (uint64_t)k * FRAME,
						    FRAME), 0);
		memcpy(want + k * (9 + FRAME), hdr[k], 9);
		memcpy(want + k * (9 + FRAME) + 9, body + k * FRAME, FRAME);
	}
	zc_io_stats(&s0);
	assert_int_equal(zc_agg_copyout(a, 0, got, sizeof(got)),
			 (ssize_t)sizeof(got));
	zc_io_stats(&s1);
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(s1.calls - s0.calls, 1);
	/* From the middle of a frame, partway into the last. */
	assert_int_equal(zc_agg_copyout(a, 500, got, 4 * (9 + FRAME)),
			 4 * (9 + FRAME));
	assert_memory_equal(got, want + 500, 4 * (9 + FRAME));
	/* The file now ends in the fourth frame. */
	assert_int_equal(ftruncate(fd, 3 * FRAME + 10), 0);
	assert_int_equal(zc_agg_copyout(a, 0, got, sizeof(got)), -ESTALE);
	/* Trusted, no check: the read itself comes up short. */
	zc_file_trust(f);
	assert_int_equal(zc_agg_copyout(a, 0, got, sizeof(got)), -ESTALE);
	zc_agg_release(a);
	zc_file_release(f);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_prepend),
		cmocka_unit_test(test_unpublished_refused),
		cmocka_unit_test(test_many_slices_grow),
		cmocka_unit_test(test_recycled_objects),
		cmocka_unit_test(test_concat_dup),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_front),
		cmocka_unit_test(test_truncate_trim),
		cmocka_unit_test(test_slice_iter),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_append_bytes_and_copyout),
		cmocka_unit_test(test_file_slices),
		cmocka_unit_test(test_copyout_frames_one_read),
		cmocka_unit_test(test_borrowed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
