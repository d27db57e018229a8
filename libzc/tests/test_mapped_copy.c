/*
 * test_mapped_copy.c - a sink that copies the extents of mapped files
 * (zc_file_map, zc_sink_copy_mapped_files), as HTTP/2's small DATA frames
 * use it: every frame header and payload of a body in one sendmsg, the
 * receiver getting exactly the bytes in order; partial writes and EAGAIN
 * resume in the right place; an unmapped file is still lent; a file that
 * shrinks fails with -ESTALE (by the version check, or by the kernel's
 * EFAULT when the caller trusts its extents) and never raises SIGBUS.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define FRAME (16 * KiB)

/* HTTP/2-like: before each FRAME of [0, len) of f a 9-byte header made of
 * the frame's index.  Returns the total; hdrs must hold 9 per frame. */
static size_t frames_of(zc_agg *a, zc_file *f, size_t len,
			unsigned char *hdrs)
{
	size_t total = 0, i = 0;

	for (size_t off = 0; off < len; off += FRAME, i++) {
		size_t n = len - off < FRAME ? len - off : FRAME;

		memset(hdrs + 9 * i, (int)(0xa0 + i % 32), 9);
		assert_int_equal(zc_agg_append_mem(a, hdrs + 9 * i, 9), 0);
		assert_int_equal(zc_agg_append_file(a, f, off, n), 0);
		total += 9 + n;
	}
	return total;
}

/* got holds what frames_of sent: check the headers and the pattern. */
static void check_frames(const unsigned char *got, size_t len, uint64_t seed)
{
	size_t i = 0, at = 0;

	for (size_t off = 0; off < len; off += FRAME, i++) {
		size_t n = len - off < FRAME ? len - off : FRAME;

		for (int k = 0; k < 9; k++)
			assert_int_equal(got[at + (size_t)k], 0xa0 + i % 32);
		assert_int_equal(tu_check(got + at + 9, n, seed, off), -1);
		at += 9 + n;
	}
}

static void read_exact(int fd, unsigned char *dst, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, dst + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* A 100 KB body as seven frames: one sendmsg, counted as copied. */
static void test_frames_in_one_call(void **state)
{
	const size_t len = 100 * 1000;
	unsigned char hdrs[9 * 8], *got = malloc(len + sizeof(hdrs));
	struct zc_io_stats s0, s1;
	int fd = tu_pattern_file(len, 71, NULL, 0), wfd = -1, rfd = -1;
	int big = 4 << 20;
	zc_file *f;
	zc_sink sink;
	zc_agg *a;
	size_t total;

	(void)state;
	assert_true(fd >= 0 && got);
	assert_int_equal(zc_file_from_fd(fd, &f), 0);
	assert_int_equal(zc_file_map(f), 0);
	assert_int_equal(zc_file_map(f), 0);	/* once is enough */
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_mapped_files(&sink, 1);
	zc_sink_trust_extents(&sink, 1);
	assert_int_equal(zc_agg_create(&a), 0);
	total = frames_of(a, f, len, hdrs);
	zc_io_stats(&s0);
	assert_int_equal(iol_write_sink(&sink, a), (ssize_t)total);
	zc_io_stats(&s1);
	assert_int_equal(s1.calls - s0.calls, 1);
	assert_int_equal(s1.bytes_copied - s0.bytes_copied, total);
	assert_int_equal(s1.bytes_by_reference, s0.bytes_by_reference);
	read_exact(rfd, got, total);
	check_frames(got, len, 71);
	zc_agg_release(a);
	zc_file_release(f);
	free(got);
	close(fd);
	close(wfd);
	close(rfd);
}

/* Without a mapping, or without the option, the extents are lent. */
static void test_unmapped_or_not_asked_lent(void **state)
{
	const size_t len = 64 * KiB;
	unsigned char hdrs[9 * 4], *got = malloc(len + sizeof(hdrs));
	int fd = tu_pattern_file(len, 72, NULL, 0);

	(void)state;
	assert_true(fd >= 0 && got);
	for (int round = 0; round < 2; round++) {
		struct zc_io_stats s0, s1;
		int wfd = -1, rfd = -1;
		zc_file *f;
		zc_sink sink;
		zc_agg *a;
		size_t total;

		assert_int_equal(zc_file_from_fd(fd, &f), 0);
		assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
		assert_int_equal(zc_sink_init(&sink, wfd), 0);
		if (round == 0)			/* asked, not mapped */
			zc_sink_copy_mapped_files(&sink, 1);
		else				/* mapped, not asked */
			assert_int_equal(zc_file_map(f), 0);
		assert_int_equal(zc_agg_create(&a), 0);
		total = frames_of(a, f, len, hdrs);
		zc_io_stats(&s0);
		assert_int_equal(iol_write_sink(&sink, a), (ssize_t)total);
		zc_io_stats(&s1);
		assert_true(s1.bytes_by_reference - s0.bytes_by_reference >= len);
		read_exact(rfd, got, total);
		check_frames(got, len, 72);
		zc_agg_release(a);
		zc_file_release(f);
		close(wfd);
		close(rfd);
	}
	free(got);
	close(fd);
}

/* 4 MB in frames through a small non-blocking socket: many short counts
 * and EAGAINs, every byte in its place. */
static void test_partial_and_eagain(void **state)
{
	const size_t len = 4096 * KiB + 123;
	size_t nframes = (len + FRAME - 1) / FRAME, total, recvd = 0;
	unsigned char *hdrs = malloc(9 * nframes), *got;
	int fd = tu_pattern_file(len, 73, NULL, 0), wfd = -1, rfd = -1;
	int small = 16 * 1024, eagains = 0;
	zc_file *f;
	zc_sink sink;
	zc_agg *a;

	(void)state;
	got = malloc(len + 9 * nframes);
	assert_true(fd >= 0 && hdrs && got);
	assert_int_equal(zc_file_from_fd(fd, &f), 0);
	assert_int_equal(zc_file_map(f), 0);
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	assert_int_equal(setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	tu_set_nonblock(wfd, 1);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_copy_mapped_files(&sink, 1);	/* checked: not trusted */
	assert_int_equal(zc_agg_create(&a), 0);
	total = frames_of(a, f, len, hdrs);
	while (zc_agg_len(a) > 0) {
		ssize_t n = iol_write_sink(&sink, a);
		struct pollfd p[2] = { { .fd = wfd, .events = POLLOUT },
				       { .fd = rfd, .events = POLLIN } };

		if (n != -EAGAIN) {
			assert_true(n > 0);
			continue;
		}
		eagains++;
		assert_true(poll(p, 2, 5000) > 0);
		n = recv(rfd, got + recvd, total - recvd, MSG_DONTWAIT);
		if (n > 0)
			recvd += (size_t)n;
	}
	read_exact(rfd, got + recvd, total - recvd);
	assert_true(eagains > 0);
	check_frames(got, len, 73);
	zc_agg_release(a);
	zc_file_release(f);
	free(hdrs);
	free(got);
	close(fd);
	close(wfd);
	close(rfd);
}

/* A file that shrank: -ESTALE from the version check, and from the copy
 * itself when the extents are trusted (EFAULT in the kernel, no SIGBUS:
 * a SIGBUS would end this test program). */
static void test_shrunk_file(void **state)
{
	const size_t len = 256 * KiB;
	unsigned char hdrs[9 * 16];
	int fd = tu_pattern_file(len, 74, NULL, 0);

	(void)state;
	assert_true(fd >= 0);
	for (int trusted = 0; trusted < 2; trusted++) {
		int wfd = -1, rfd = -1, big = 4 << 20;
		zc_file *f;
		zc_sink sink;
		zc_agg *a;
		ssize_t n;

		assert_int_equal(ftruncate(fd, (off_t)len), 0);
		assert_int_equal(zc_file_from_fd(fd, &f), 0);
		assert_int_equal(zc_file_map(f), 0);
		assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
		setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		assert_int_equal(zc_sink_init(&sink, wfd), 0);
		zc_sink_copy_mapped_files(&sink, 1);
		zc_sink_trust_extents(&sink, trusted);
		assert_int_equal(zc_agg_create(&a), 0);
		/* Only the frames past the new end, so the first call fails
		 * rather than sending the part that is still there. */
		for (size_t off = 64 * KiB; off < len; off += FRAME) {
			assert_int_equal(zc_agg_append_mem(a, hdrs, 9), 0);
			assert_int_equal(zc_agg_append_file(a, f, off, FRAME), 0);
		}
		assert_int_equal(ftruncate(fd, 4096), 0);
		/* The header before the first payload may go first (the
		 * check or the fault stops at the payload): that progress,
		 * then the error, and nothing of the file. */
		n = iol_write_sink(&sink, a);
		if (n == 9)
			n = iol_write_sink(&sink, a);
		assert_int_equal(n, -ESTALE);
		zc_agg_release(a);
		zc_file_release(f);
		close(wfd);
		close(rfd);
	}
	close(fd);
}

static void test_map_edges(void **state)
{
	int fd = tu_pattern_file(0, 75, NULL, 0);
	zc_file *f;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(zc_file_from_fd(fd, &f), 0);
	assert_int_equal(zc_file_map(f), -EINVAL);	/* empty */
	assert_int_equal(zc_file_map(NULL), -EINVAL);
	zc_file_release(f);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_in_one_call),
		cmocka_unit_test(test_unmapped_or_not_asked_lent),
		cmocka_unit_test(test_partial_and_eagain),
		cmocka_unit_test(test_shrunk_file),
		cmocka_unit_test(test_map_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
