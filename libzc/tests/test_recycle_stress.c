/*
 * test_recycle_stress.c - memory lent to the kernel is never reused while
 * the kernel still reads it.
 *
 * Two kinds of evidence:
 *
 * 1. Controls (deterministic, one process).  Lend a buffer to a pipe or a
 *    socket, release it, allocate the same memory again and overwrite it,
 *    then read what the kernel delivers.  With the KREF mark (what iol_write
 *    sets) the receiver gets the old bytes.  With the mark cleared by hand
 *    (what a careless implementation would do) the receiver gets the *new*
 *    bytes: that proves the transfer really was by reference on this
 *    kernel, so the stress test below is not passing by luck.
 *
 * 2. Stress.  For each pair -- pool buffer -> TCP (sendfile), -> pipe
 *    (vmsplice), -> UNIX socket (sendfile); file extents mixed with
 *    buffers -> TCP / pipe; and readers that splice onward into a second
 *    pipe before reading (pages stay referenced after the first pipe is
 *    drained) -- a sender allocates from a 1 MiB pool, fills, writes and
 *    releases immediately, while a forked reader alternates slow and fast
 *    reads and checks every byte against the same deterministic schedule.
 *    The sender also counts releases that happened while the bytes just
 *    written were provably still unread (the reader publishes its progress
 *    in a shared page): recycling under pressure really happened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/internal.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

#define POOL_SIZE MiB			/* small: memory is reused constantly */
#define FILE_LEN (8 * MiB)
#define FILE_SEED 0xf11eull
#define BLOCK_MAX (256 * KiB)

static size_t stress_bytes(void)
{
	const char *e = getenv("ZC_STRESS_MB");

	return (e && atoi(e) > 0 ? (size_t)atoi(e) : 64) * MiB;
}

/* ------------------------------------------------------------- controls */

enum lend { LEND_PIPE, LEND_PIPE_ONWARD, LEND_TCP, LEND_UNIX };

/*
 * Lend a 64 KiB buffer of pattern A, recycle its memory (with or without
 * the KREF mark), fill the same memory with pattern B, and return what the
 * receiver then reads: 'A', 'B' or '?'.
 */
static char lend_and_recycle(enum lend how, int keep_mark)
{
	const size_t len = 64 * KiB;
	struct zc_pool_stats st0, st1;
	unsigned char *got = malloc(len);
	zc_buf *b, *b2;
	zc_agg *a;
	zc_pool *pool;
	uint64_t off;
	int wfd = -1, rfd = -1, p2[2] = { -1, -1 }, src;
	size_t n = 0;
	char res;

	assert_non_null(got);
	assert_int_equal(zc_pool_create(POOL_SIZE, &pool), 0);
	if (how == LEND_TCP)
		assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	else if (how == LEND_UNIX)
		assert_int_equal(tu_pair(TU_UNIX, &wfd, &rfd), 0);
	else
		assert_int_equal(tu_pair(TU_PIPE, &wfd, &rfd), 0);

	assert_int_equal(zc_buf_alloc(pool, len, &b), 0);
	off = b->off;
	tu_fill(zc_buf_wptr(b), len, 0xA, 0);
	assert_int_equal(zc_buf_publish(b, len), 0);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, len), 0);
	assert_int_equal(iol_write(wfd, a), (ssize_t)len);
	zc_agg_release(a);
	assert_true(atomic_load(&b->flags) & ZC_BUF_KREF);

	src = rfd;
	if (how == LEND_PIPE_ONWARD) {
		/* The reader moves the pages on: the first pipe is empty
		 * (FIONREAD says 0) but the pages are still referenced. */
		assert_int_equal(pipe2(p2, 0), 0);
		assert_int_equal(splice(rfd, NULL, p2[1], NULL, len, 0),
				 (ssize_t)len);
		int queued = -1;

		assert_int_equal(ioctl(rfd, FIONREAD, &queued), 0);
		assert_int_equal(queued, 0);
		src = p2[0];
	}

	if (!keep_mark)
		atomic_fetch_and(&b->flags, ~(unsigned)ZC_BUF_KREF);
	zc_pool_stats(pool, &st0);
	zc_buf_release(b);
	zc_pool_stats(pool, &st1);
	assert_int_equal(st1.detaches - st0.detaches, keep_mark ? 1 : 0);

	/* The same memory again (the per-size cache is LIFO). */
	assert_int_equal(zc_buf_alloc(pool, len, &b2), 0);
	assert_int_equal(b2->off, off);
	tu_fill(zc_buf_wptr(b2), len, 0xB, 0);
	assert_int_equal(zc_buf_publish(b2, len), 0);

	close(wfd);
	while (n < len) {
		ssize_t k = read(src, got + n, len - n);

		assert_true(k > 0);
		n += (size_t)k;
	}
	res = tu_check(got, len, 0xA, 0) < 0 ? 'A' :
	      tu_check(got, len, 0xB, 0) < 0 ? 'B' : '?';
	zc_buf_release(b2);
	close(rfd);
	if (p2[0] >= 0) {
		close(p2[0]);
		close(p2[1]);
	}
	free(got);
	zc_pool_release(pool);
	return res;
}

static void control(enum lend how, const char *name)
{
	char with = lend_and_recycle(how, 1);
	char without = lend_and_recycle(how, 0);

	print_message("control %-12s with KREF: %c, without: %c%s\n", name,
		      with, without,
		      without == 'B' ? " (by reference: the mark matters)" :
				       " (the kernel copied)");
	/* The mark always protects the data... */
	assert_int_equal(with, 'A');
	/* ...and on kernels that lend pages by reference (5.x/6.x all do
	 * for these paths) leaving it out is visibly wrong.  Otherwise the
	 * control proves nothing and the stress test proves little. */
	assert_int_equal(without, 'B');
}

static void test_control_vmsplice(void **state)
{
	(void)state;
	control(LEND_PIPE, "vmsplice");
}

static void test_control_vmsplice_onward(void **state)
{
	(void)state;
	control(LEND_PIPE_ONWARD, "vmsplice+splice");
}

static void test_control_sendfile_tcp(void **state)
{
	(void)state;
	control(LEND_TCP, "sendfile/tcp");
}

static void test_control_sendfile_unix(void **state)
{
	(void)state;
	control(LEND_UNIX, "sendfile/unix");
}

/* --------------------------------------------------------------- stress */

/*
 * How far the reader has got, shared with the sender (an anonymous shared
 * page).  Asking the kernel instead (FIONREAD) would deadlock with the
 * onward reader: a splice from a socket sleeps holding the pipe's lock,
 * which FIONREAD on that pipe needs.
 */
static _Atomic uint64_t *consumed;

/* The schedule both sides derive from the same seed. */
enum { BLK_BUF, BLK_FILE };

struct block {
	int kind;
	size_t len;
	uint64_t seed;		/* BLK_BUF: pattern of this block */
	uint64_t foff;		/* BLK_FILE: offset in the file */
};

struct plan {
	uint64_t k;
	int with_files;
};

static void plan_next(struct plan *p, struct block *b)
{
	uint64_t r = tu_mix(0x5eed0000ull + p->k);

	memset(b, 0, sizeof(*b));
	b->seed = 0x10000ull + p->k++;
	if (p->with_files && r % 3 == 0) {
		b->kind = BLK_FILE;
		b->len = 1 + (size_t)(r >> 8) % BLOCK_MAX;
		b->foff = (r >> 32) % (FILE_LEN - b->len);
	} else if (r % 8 == 1) {
		b->kind = BLK_BUF;		/* a header: copied */
		b->len = 1 + (size_t)(r >> 8) % (16 * KiB);
	} else {
		b->kind = BLK_BUF;		/* lent to the kernel */
		b->len = 16 * KiB + (size_t)(r >> 8) % (BLOCK_MAX - 16 * KiB);
	}
}

/* Produces the expected stream, block after block. */
struct expect {
	struct plan plan;
	struct block cur;
	size_t pos;		/* in cur */
};

static void expect_fill(struct expect *e, unsigned char *dst, size_t len)
{
	while (len) {
		size_t n;

		if (e->pos == e->cur.len) {
			plan_next(&e->plan, &e->cur);
			e->pos = 0;
		}
		n = e->cur.len - e->pos < len ? e->cur.len - e->pos : len;
		if (e->cur.kind == BLK_BUF)
			tu_fill(dst, n, e->cur.seed, e->pos);
		else
			tu_fill(dst, n, FILE_SEED, e->cur.foff + e->pos);
		e->pos += n;
		dst += n;
		len -= n;
	}
}

enum reader_mode {
	RD_DIRECT,	/* read(2) from the socket or pipe */
	RD_ONWARD,	/* splice into a second pipe, read from that later */
};

struct result {
	uint64_t total, wrong, first_wrong;
};

struct stress {
	enum tu_kind kind;
	int with_files;
	enum reader_mode mode;
	int nonblock;		/* sender uses a non-blocking descriptor */
};

static void check_chunk(struct expect *e, const unsigned char *data,
			size_t n, struct result *res, unsigned char *tmp)
{
	expect_fill(e, tmp, n);
	if (memcmp(tmp, data, n)) {
		for (size_t i = 0; i < n; i++) {
			if (tmp[i] == data[i])
				continue;
			if (!res->wrong)
				res->first_wrong = res->total + i;
			res->wrong++;
		}
	}
	res->total += n;
}

/* Alternate phases: slow (small reads with pauses, so the sender's queue
 * fills and its released memory is reused at once) and fast. */
static size_t reader_chunk(uint64_t total, int *slow)
{
	*slow = (total / (3 * MiB)) % 2 == 0;
	return *slow ? 4 * KiB + (size_t)(total % 7) * 1000 : BLOCK_MAX;
}

static void reader_direct(int fd, struct expect *e, struct result *res)
{
	unsigned char *buf = malloc(BLOCK_MAX), *tmp = malloc(BLOCK_MAX);
	int slow;

	for (;;) {
		size_t want = reader_chunk(res->total, &slow);
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		check_chunk(e, buf, (size_t)n, res, tmp);
		atomic_store(consumed, res->total);
		if (slow)
			usleep(200);
	}
	free(buf);
	free(tmp);
}

/* Splice everything into p2 first and read it only when half a megabyte
 * has piled up: the pages outlive their stay in the first pipe/socket. */
static void reader_onward(int fd, int p2[2], struct expect *e,
			  struct result *res)
{
	unsigned char *buf = malloc(BLOCK_MAX), *tmp = malloc(BLOCK_MAX);
	size_t queued = 0;
	int eof = 0;

	while (!eof || queued) {
		if (!eof && queued < 512 * KiB) {
			ssize_t n = splice(fd, NULL, p2[1], NULL,
					   MiB - queued, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				eof = 1;
			else
				queued += (size_t)n;
			continue;
		}
		while (queued) {
			size_t want = queued < BLOCK_MAX ? queued : BLOCK_MAX;
			ssize_t n = read(p2[0], buf, want);

			if (n <= 0)
				break;
			check_chunk(e, buf, (size_t)n, res, tmp);
			atomic_store(consumed, res->total);
			queued -= (size_t)n;
		}
		usleep(500);
	}
	free(buf);
	free(tmp);
}

static void reader_process(int fd, int p2[2], const struct stress *cfg,
			   int result_fd)
{
	struct expect e = { .plan = { 0, cfg->with_files } };
	struct result res = { 0, 0, 0 };

	if (cfg->mode == RD_ONWARD)
		reader_onward(fd, p2, &e, &res);
	else
		reader_direct(fd, &e, &res);
	if (write(result_fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(2);
	_exit(0);
}

static void write_all(int fd, zc_agg *agg, int nonblock)
{
	while (zc_agg_len(agg)) {
		ssize_t n = iol_write(fd, agg);

		if (n > 0)
			continue;
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN && nonblock) {
			struct pollfd p = { fd, POLLOUT, 0 };

			poll(&p, 1, 1000);
			continue;
		}
		fail_msg("iol_write: %s", strerror((int)-n));
	}
}

/* One aggregate of 1-3 blocks, written and released at once.  *lent is
 * the length of the last block if it was a buffer lent to the kernel. */
static size_t send_round(zc_pool *pool, zc_file *file, struct plan *p,
			 int fd, int nonblock, size_t *pool_bytes, size_t *lent)
{
	int nblocks = 1 + (int)(tu_mix(p->k ^ 0xabc) % 3);
	size_t bytes = 0;
	zc_agg *agg;

	assert_int_equal(zc_agg_create(&agg), 0);
	for (int i = 0; i < nblocks; i++) {
		struct block b;
		zc_buf *buf;

		plan_next(p, &b);
		if (b.kind == BLK_FILE) {
			assert_int_equal(zc_agg_append_file(agg, file, b.foff,
							    b.len), 0);
		} else {
			assert_int_equal(zc_buf_alloc(pool, b.len, &buf), 0);
			tu_fill(zc_buf_wptr(buf), b.len, b.seed, 0);
			assert_int_equal(zc_buf_publish(buf, b.len), 0);
			assert_int_equal(zc_agg_append_buf(agg, buf, 0,
							   b.len), 0);
			/* The aggregate holds the only reference: each buffer
			 * goes back to the pool the moment it is written. */
			zc_buf_release(buf);
			*pool_bytes += b.len;
		}
		bytes += b.len;
		*lent = b.kind == BLK_BUF && b.len >= 16 * KiB ? b.len : 0;
	}
	write_all(fd, agg, nonblock);
	zc_agg_release(agg);
	return bytes;
}

static void run_stress(const struct stress *cfg, const char *name)
{
	struct zc_pool_stats st;
	struct result res;
	struct plan plan = { 0, cfg->with_files };
	struct timespec t0, t1;
	zc_file *file = NULL;
	zc_pool *pool;
	size_t sent = 0, rounds = 0, unread_releases = 0, pool_bytes = 0;
	size_t lent;
	int wfd = -1, rfd = -1, p2[2] = { -1, -1 }, rp[2], status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(zc_pool_create(POOL_SIZE, &pool), 0);
	if (cfg->with_files) {
		int fd = tu_pattern_file(FILE_LEN, FILE_SEED, NULL, 0);

		assert_true(fd >= 0);
		assert_int_equal(zc_file_from_fd(fd, &file), 0);
		close(fd);
	}
	atomic_store(consumed, 0);
	assert_int_equal(tu_pair(cfg->kind, &wfd, &rfd), 0);
	/* A big pipe holds up to the whole pool's worth of old pages. */
	if (cfg->kind == TU_PIPE && cfg->nonblock)
		assert_true(fcntl(wfd, F_SETPIPE_SZ, (int)MiB) >= 0);
	if (cfg->mode == RD_ONWARD) {
		assert_int_equal(pipe2(p2, O_CLOEXEC), 0);
		assert_true(fcntl(p2[1], F_SETPIPE_SZ, (int)MiB) >= 0);
	}
	assert_int_equal(pipe2(rp, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(wfd);
		close(rp[0]);
		reader_process(rfd, p2, cfg, rp[1]);
	}
	close(rp[1]);
	close(rfd);
	if (p2[0] >= 0) {
		close(p2[0]);
		close(p2[1]);
	}
	if (cfg->nonblock)
		tu_set_nonblock(wfd, 1);

	while (sent < stress_bytes()) {
		size_t n = send_round(pool, file, &plan, wfd, cfg->nonblock,
				      &pool_bytes, &lent);

		sent += n;
		/* Everything of this round is released by now.  If the last
		 * buffer's bytes are all still unread, its memory went back
		 * to the pool while the kernel held every one of its pages. */
		if (lent && sent - atomic_load(consumed) >= lent)
			unread_releases++;
		rounds++;
	}
	close(wfd);
	assert_int_equal(read(rp[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(rp[0]);

	zc_pool_stats(pool, &st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("stress %-22s %zu MiB in %.2f s, %zu rounds, allocs %llu "
		      "reuses %llu detaches %llu, released-while-unread %zu, "
		      "wrong bytes %llu\n", name, sent >> 20,
		      (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		      rounds, (unsigned long long)st.allocs,
		      (unsigned long long)st.reuses,
		      (unsigned long long)st.detaches, unread_releases,
		      (unsigned long long)res.wrong);
	if (res.wrong)
		print_message("first wrong byte at stream offset %llu\n",
			      (unsigned long long)res.first_wrong);
	assert_int_equal(res.total, sent);
	assert_int_equal(res.wrong, 0);
	/* The pool was far too small to hold the stream: memory really was
	 * recycled, detached after every by-reference transfer. */
	assert_true(pool_bytes > 8 * POOL_SIZE);
	assert_true(st.reuses > 0);
	assert_true(st.detaches > 0);
	assert_true(unread_releases > 0);
	assert_int_equal(st.bytes_in_use, 0);
	zc_file_release(file);
	zc_pool_release(pool);
}

#define STRESS(fn, k, files, mode, nb)					\
	static void fn(void **state)					\
	{								\
		static const struct stress cfg = { k, files, mode, nb };\
		(void)state;						\
		run_stress(&cfg, #fn + 5);				\
	}

STRESS(test_buf_tcp, TU_TCP, 0, RD_DIRECT, 0)
STRESS(test_buf_tcp_nonblock, TU_TCP, 0, RD_DIRECT, 1)
STRESS(test_buf_pipe, TU_PIPE, 0, RD_DIRECT, 0)
STRESS(test_buf_pipe_nonblock, TU_PIPE, 0, RD_DIRECT, 1)
STRESS(test_buf_unix, TU_UNIX, 0, RD_DIRECT, 0)
STRESS(test_file_tcp, TU_TCP, 1, RD_DIRECT, 0)
STRESS(test_file_pipe, TU_PIPE, 1, RD_DIRECT, 0)
STRESS(test_buf_pipe_onward, TU_PIPE, 0, RD_ONWARD, 0)
STRESS(test_buf_tcp_onward, TU_TCP, 0, RD_ONWARD, 0)
STRESS(test_buf_unix_onward, TU_UNIX, 0, RD_ONWARD, 1)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_vmsplice),
		cmocka_unit_test(test_control_vmsplice_onward),
		cmocka_unit_test(test_control_sendfile_tcp),
		cmocka_unit_test(test_control_sendfile_unix),
		cmocka_unit_test(test_buf_tcp),
		cmocka_unit_test(test_buf_tcp_nonblock),
		cmocka_unit_test(test_buf_pipe),
		cmocka_unit_test(test_buf_pipe_nonblock),
		cmocka_unit_test(test_buf_unix),
		cmocka_unit_test(test_file_tcp),
		cmocka_unit_test(test_file_pipe),
		cmocka_unit_test(test_buf_pipe_onward),
		cmocka_unit_test(test_buf_tcp_onward),
		cmocka_unit_test(test_buf_unix_onward),
	};

	consumed = mmap(NULL, sizeof(*consumed), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (consumed == MAP_FAILED)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
