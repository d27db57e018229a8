/*
 * test_sink_source.c - destinations and origins probed once: a sink that
 * copies a buffer's first trip (zc_sink_copy_first_trip) and a source
 * (zc_source_init, iol_read_source).
 *
 * A first trip goes by copy and leaves the buffer unmarked, so its pool
 * reuses the memory in place (no detach) and nothing the receiver got
 * changes when it is overwritten; a second trip lends it; slices of one
 * buffer in one call make the same trip; partial writes and EAGAIN resume
 * with every byte right; a peer's buffers and file extents are lent as
 * before.  Every byte is checked at the receiver.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/internal.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)

static bool buf_flag(const zc_buf *b, unsigned flag)
{
	return atomic_load(&((zc_buf *)b)->flags) & flag;
}

/* A published buffer of len pattern bytes (seed), one reference. */
static zc_buf *pattern_buf(size_t len, uint64_t seed)
{
	zc_buf *b;

	assert_int_equal(zc_buf_alloc(NULL, len, &b), 0);
	tu_fill(zc_buf_wptr(b), len, seed, 0);
	assert_int_equal(zc_buf_publish(b, len), 0);
	return b;
}

/* Read exactly len bytes from fd (blocking). */
static void read_exact(int fd, unsigned char *dst, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, dst + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* Send [off, off + len) of b through the sink (blocking: whole); the
 * receiver must get exactly those bytes of the pattern. */
static void trip(const zc_sink *sink, int rfd, zc_buf *b, size_t off,
		 size_t len, uint64_t seed)
{
	unsigned char *got = malloc(len);
	zc_agg *a;

	assert_non_null(got);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, off, len), 0);
	assert_int_equal(iol_write_sink(sink, a), (ssize_t)len);
	zc_agg_release(a);
	read_exact(rfd, got, len);
	assert_int_equal(tu_check(got, len, seed, off), -1);
	free(got);
}

/* First trip copied, second lent, on a TCP and a UNIX stream socket. */
static void test_first_copied_then_lent(void **state)
{
	static const enum tu_kind kinds[] = { TU_TCP, TU_UNIX };
	const size_t len = 100 * KiB;

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		struct zc_io_stats s0, s1, s2;
		int wfd = -1, rfd = -1;
		zc_sink sink;
		zc_buf *b = pattern_buf(len, 7 + k);

		assert_int_equal(tu_pair(kinds[k], &wfd, &rfd), 0);
		assert_int_equal(zc_sink_init(&sink, wfd), 0);
		zc_sink_copy_first_trip(&sink, 1);

		zc_io_stats(&s0);
		trip(&sink, rfd, b, 0, len, 7 + k);
		zc_io_stats(&s1);
		assert_true(s1.bytes_copied - s0.bytes_copied >= len);
		assert_int_equal(s1.bytes_by_reference, s0.bytes_by_reference);
		assert_false(buf_flag(b, ZC_BUF_KREF));

		trip(&sink, rfd, b, 0, len, 7 + k);
		zc_io_stats(&s2);
		assert_true(s2.bytes_by_reference - s1.bytes_by_reference >=
			    len);
		assert_true(buf_flag(b, ZC_BUF_KREF));
		zc_buf_release(b);
		close(wfd);
		close(rfd);
	}
}

/* Without the option a large buffer is lent on its first trip. */
static void test_default_lends(void **state)
{
	const size_t len = 64 * KiB;
	int wfd = -1, rfd = -1;
	zc_sink sink;
	zc_buf *b = pattern_buf(len, 21);

	(void)state;
	assert_int_equal(tu_pair(TU_UNIX, &wfd, &rfd), 0);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	trip(&sink, rfd, b, 0, len, 21);
	assert_true(buf_flag(b, ZC_BUF_KREF));
	zc_buf_release(b);
	close(wfd);
	close(rfd);
}

/* FastCGI records cut from one read: two slices of one buffer with a gap
 * (a record header) between them, in one call, both go by copy. */
static void test_slices_of_one_buffer_one_trip(void **state)
{
	const size_t a_len = 65535, gap = 8, b_len = 36865;
	unsigned char *got = malloc(a_len + b_len);
	struct zc_io_stats s0, s1;
	int wfd = -1, rfd = -1;
	zc_sink sink;
	zc_buf *b = pattern_buf(a_len + gap + b_len, 33);
	zc_agg *a;

	(void)state;
	assert_non_null(got);
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_first_trip(&sink, 1);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, a_len), 0);
	assert_int_equal(zc_agg_append_buf(a, b, a_len + gap, b_len), 0);
	zc_io_stats(&s0);
	assert_int_equal(iol_write_sink(&sink, a), (ssize_t)(a_len + b_len));
	zc_io_stats(&s1);
	assert_int_equal(s1.bytes_by_reference, s0.bytes_by_reference);
	assert_false(buf_flag(b, ZC_BUF_KREF));
	read_exact(rfd, got, a_len + b_len);
	assert_int_equal(tu_check(got, a_len, 33, 0), -1);
	assert_int_equal(tu_check(got + a_len, b_len, 33, a_len + gap), -1);
	zc_agg_release(a);
	zc_buf_release(b);
	free(got);
	close(wfd);
	close(rfd);
}

/*
 * Copied buffers are reused in place: after the first trip the buffer is
 * released and the next allocation of its size gets the same memory back
 * without a detach; writing new bytes there changes nothing the receiver
 * already has (it was copied), even though the receiver reads only now.
 */
static void test_copied_memory_reused_safely(void **state)
{
	const size_t len = 48 * KiB;
	unsigned char *got = malloc(len);
	struct zc_pool_stats p0, p1;
	int wfd = -1, rfd = -1;
	zc_sink sink;
	zc_buf *b = pattern_buf(len, 44), *again;
	const void *where = zc_buf_data(b);
	zc_agg *a;

	(void)state;
	assert_non_null(got);
	assert_int_equal(tu_pair(TU_UNIX, &wfd, &rfd), 0);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_first_trip(&sink, 1);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, len), 0);
	zc_buf_release(b);		/* the aggregate holds the last ref */
	zc_pool_stats(zc_default_pool(), &p0);
	assert_int_equal(iol_write_sink(&sink, a), (ssize_t)len);
	zc_agg_release(a);		/* recycled: copied, so not detached */
	zc_pool_stats(zc_default_pool(), &p1);
	assert_int_equal(p1.detaches, p0.detaches);

	assert_int_equal(zc_buf_alloc(NULL, len, &again), 0);
	assert_ptr_equal(zc_buf_wptr(again), where);	/* the same pages */
	tu_fill(zc_buf_wptr(again), len, 45, 0);	/* other bytes */
	read_exact(rfd, got, len);
	assert_int_equal(tu_check(got, len, 44, 0), -1);
	zc_buf_release(again);
	free(got);
	close(wfd);
	close(rfd);
}

/* A non-blocking socket that fills: the copied first trip resumes after
 * EAGAIN (its rest may be lent: the bytes are right either way).  The
 * receiver reads only when the writer is told to wait. */
static void test_partial_and_eagain(void **state)
{
	const size_t len = 4096 * KiB;
	unsigned char *got = malloc(len);
	size_t recvd = 0;
	int wfd = -1, rfd = -1, small = 16 * 1024, eagains = 0;
	zc_sink sink;
	zc_buf *b = pattern_buf(len, 55);
	zc_agg *a;

	(void)state;
	assert_non_null(got);
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	assert_int_equal(setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	tu_set_nonblock(wfd, 1);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_first_trip(&sink, 1);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, len), 0);
	while (zc_agg_len(a) > 0) {
		ssize_t n = iol_write_sink(&sink, a);

		if (n != -EAGAIN) {
			assert_true(n > 0);
			continue;
		}
		eagains++;
		/* Room comes back when the receiver reads or an ACK
		 * (maybe delayed) frees the send queue: wait for either. */
		struct pollfd p[2] = { { .fd = wfd, .events = POLLOUT },
				       { .fd = rfd, .events = POLLIN } };
		assert_true(poll(p, 2, 5000) > 0);
		n = recv(rfd, got + recvd, len - recvd, MSG_DONTWAIT);
		if (n > 0)
			recvd += (size_t)n;
	}
	read_exact(rfd, got + recvd, len - recvd);
	assert_true(eagains > 0);
	assert_int_equal(tu_check(got, len, 55, 0), -1);
	zc_agg_release(a);
	zc_buf_release(b);
	free(got);
	close(wfd);
	close(rfd);
}

/* File extents are lent through such a sink as through any other. */
static void test_file_extents_still_lent(void **state)
{
	const size_t len = 64 * KiB;
	unsigned char *got = malloc(len);
	struct zc_io_stats s0, s1;
	int fd = tu_pattern_file(len, 66, NULL, 0), wfd = -1, rfd = -1;
	zc_sink sink;
	zc_agg *a = NULL;

	(void)state;
	assert_non_null(got);
	assert_true(fd >= 0);
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_first_trip(&sink, 1);
	assert_int_equal(iol_read(fd, &a, len), (ssize_t)len);
	zc_io_stats(&s0);
	assert_int_equal(iol_write_sink(&sink, a), (ssize_t)len);
	zc_io_stats(&s1);
	assert_true(s1.bytes_by_reference - s0.bytes_by_reference >= len);
	read_exact(rfd, got, len);
	assert_int_equal(tu_check(got, len, 66, 0), -1);
	zc_agg_release(a);
	free(got);
	close(fd);
	close(wfd);
	close(rfd);
}

/* iol_read_source gives what iol_read gives, from a socket, a pipe and a
 * file, with EAGAIN and EOF as iol_read reports them. */
static void test_source(void **state)
{
	static const enum tu_kind kinds[] = { TU_TCP, TU_PIPE, TU_UNIX };
	unsigned char data[3000], got[3000];
	zc_source src;

	(void)state;
	tu_fill(data, sizeof(data), 77, 0);
	for (size_t k = 0; k < 3; k++) {
		int wfd = -1, rfd = -1;
		zc_agg *a = NULL;

		assert_int_equal(tu_pair(kinds[k], &wfd, &rfd), 0);
		tu_set_nonblock(rfd, 1);
		assert_int_equal(zc_source_init(&src, rfd), 0);
		assert_int_equal(iol_read_source(&src, &a, 4096), -EAGAIN);
		assert_null(a);
		assert_int_equal(write(wfd, data, sizeof(data)),
				 (ssize_t)sizeof(data));
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		assert_int_equal(poll(&p, 1, 5000), 1);
		size_t have = 0;
		while (have < sizeof(data)) {
			ssize_t n = iol_read_source(&src, &a, 4096);

			if (n == -EAGAIN)
				continue;
			assert_true(n > 0);
			have += (size_t)n;
		}
		assert_int_equal(zc_agg_copyout(a, 0, got, sizeof(got)),
				 (ssize_t)sizeof(got));
		assert_memory_equal(got, data, sizeof(data));
		close(wfd);
		assert_int_equal(iol_read_source(&src, &a, 4096), 0);	/* EOF */
		zc_agg_release(a);
		close(rfd);
	}

	int fd = tu_pattern_file(5000, 88, NULL, 0);
	zc_agg *f = NULL;

	assert_true(fd >= 0);
	assert_int_equal(zc_source_init(&src, fd), 0);
	assert_int_equal(iol_read_source(&src, &f, 5000), 5000);
	assert_int_equal(zc_agg_copyout(f, 0, got, 3000), 3000);
	assert_int_equal(tu_check(got, 3000, 88, 0), -1);
	zc_agg_release(f);
	close(fd);

	assert_int_equal(zc_source_init(&src, -1), -EBADF);
	assert_int_equal(zc_source_init(NULL, 0), -EINVAL);
	assert_int_equal(iol_read_source(NULL, &f, 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_copied_then_lent),
		cmocka_unit_test(test_default_lends),
		cmocka_unit_test(test_slices_of_one_buffer_one_trip),
		cmocka_unit_test(test_copied_memory_reused_safely),
		cmocka_unit_test(test_partial_and_eagain),
		cmocka_unit_test(test_file_extents_still_lent),
		cmocka_unit_test(test_source),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
