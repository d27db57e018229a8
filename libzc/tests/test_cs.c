/*
 * test_cs.c - Container Shipping: every call, move semantics, cs_read from
 * pipes, files, sockets and channels with every byte checked, CS_MAPALL /
 * CS_MAPNOW, a message larger than maxcon or size, bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc_channel.h"
#include "zc_cs.h"
#include "../src/internal.h"
#include "../src/channel.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)

struct rd {
	int cids[64], offs[64], lens[64], sizes[64];
	void *addrs[64];
	cs_args args;
};

static cs_args *rd_args(struct rd *r)
{
	r->args = (cs_args){ r->cids, r->offs, r->lens, r->sizes, r->addrs };
	return &r->args;
}

/* A new container holding bytes [pos, pos + len) of stream seed. */
static int pattern_con(size_t len, uint64_t seed, uint64_t pos)
{
	void *addr;
	int cid = cs_alloc((int)len, &addr, CS_MAPNOW);

	assert_true(cid >= 0);
	assert_non_null(addr);
	tu_fill(addr, len, seed, pos);
	return cid;
}

static size_t pool_in_use(void)
{
	struct zc_pool_stats st;

	zc_pool_stats(zc_default_pool(), &st);
	return st.bytes_in_use;
}

/* Read containers until `len` bytes of stream seed (from pos) arrived;
 * check every byte and free them.  Returns the number of containers. */
static int read_check(int fd, size_t len, uint64_t seed, uint64_t pos,
		      int maxcon, int options)
{
	struct rd r;
	int total = 0;

	while (len) {
		int n = cs_read(fd, (int)len, maxcon, rd_args(&r), options);

		assert_true(n > 0);
		assert_true(n <= maxcon);
		if (!(options & CS_MAPALL)) {
			for (int i = 0; i < n; i++)
				assert_null(r.addrs[i]);
			assert_int_equal(cs_map(n, r.cids, r.addrs, 0), 0);
		}
		for (int i = 0; i < n; i++) {
			assert_true(r.offs[i] + r.lens[i] <= r.sizes[i]);
			assert_int_equal(tu_check((char *)r.addrs[i] + r.offs[i],
						  (size_t)r.lens[i], seed, pos), -1);
			pos += (uint64_t)r.lens[i];
			len -= (size_t)r.lens[i];
		}
		assert_int_equal(cs_free(n, r.cids), 0);
		total += n;
	}
	return total;
}

/* ------------------------------------------------------ across fork */

/* Runs first, before this process has a default pool: a forked child
 * must not share its parent's allocator. */
static void test_fork_channel(void **state)
{
	zc_channel *ch;
	int sv[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_channel *mine;
		int rc = 0;

		close(sv[0]);
		if (zc_channel_open(sv[1], &mine))
			_exit(2);
		for (int i = 0; i < 100 && !rc; i++) {
			int cid = pattern_con(64 * KiB, 7, (uint64_t)i * 64 * KiB);

			if (cs_write(zc_channel_fd(mine), 1, &cid, NULL, NULL,
				     0) != (ssize_t)(64 * KiB))
				rc = 3;
		}
		/* Every container comes back once the parent frees it. */
		for (int k = 0; k < 100 && pool_in_use(); k++)
			zc_channel_reclaim(50);
		if (!rc && pool_in_use())
			rc = 4;
		zc_channel_close(mine);
		_exit(rc);
	}
	close(sv[1]);
	assert_int_equal(zc_channel_open(sv[0], &ch), 0);
	assert_int_equal(read_check(zc_channel_fd(ch), 100 * 64 * KiB, 7, 0, 3,
				    CS_MAPALL), 100);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	{
		struct rd r;

		/* The peer is gone: end of stream. */
		assert_int_equal(cs_read(zc_channel_fd(ch), 100, 1, rd_args(&r), 0), 0);
	}
	zc_channel_close(ch);
}

/* ---------------------------------------------------- the basic calls */

static void test_alloc_map_free(void **state)
{
	void *addr, *again;
	int cid, cid2;

	(void)state;
	cid = cs_alloc(10000, &addr, CS_MAPNOW);
	assert_true(cid >= 0);
	memset(addr, 0x5a, 10000);	/* writable */
	assert_int_equal(cs_map(1, &cid, &again, 0), 0);
	assert_ptr_equal(again, addr);
	assert_int_equal(cs_unmap(1, &cid), 0);
	assert_int_equal(cs_free(1, &cid), 0);
	/* Freed ids are dead, and reused like file descriptors. */
	assert_int_equal(cs_map(1, &cid, &again, 0), -EBADF);
	assert_int_equal(cs_unmap(1, &cid), -EBADF);
	assert_int_equal(cs_free(1, &cid), -EBADF);
	cid2 = cs_alloc(1, &addr, 0);
	assert_int_equal(cid2, cid);
	assert_null(addr);	/* not mapped until asked */
	assert_int_equal(cs_map(1, &cid2, &addr, 0), 0);
	assert_non_null(addr);
	assert_int_equal(cs_free(1, &cid2), 0);
	assert_int_equal(pool_in_use(), 0);
}

/* An id listed twice in cs_free is refused and nothing is freed. */
static void test_free_duplicates(void **state)
{
	int c[3];

	(void)state;
	c[0] = cs_alloc(100, NULL, 0);
	c[1] = cs_alloc(100, NULL, 0);
	c[2] = c[0];
	assert_int_equal(cs_free(3, c), -EINVAL);
	assert_int_equal(cs_free(2, c), 0);
	/* An unknown id anywhere: nothing freed either. */
	c[0] = cs_alloc(100, NULL, 0);
	c[1] = 9999;
	assert_int_equal(cs_free(2, c), -EBADF);
	assert_int_equal(cs_free(1, c), 0);
	assert_int_equal(pool_in_use(), 0);
}

/* ------------------------------------------------------------ writing */

/* Move semantics: after cs_write the ids are gone; the bytes arrive. */
static void test_write_pipe_move(void **state)
{
	int p[2], c[3], offs[3] = { 0, 100, 0 }, lens[3];
	size_t total;
	ssize_t n;
	void *addr;

	(void)state;
	assert_int_equal(pipe(p), 0);
	/* Three containers holding consecutive parts of stream 3; the
	 * second starts 100 bytes in. */
	c[0] = pattern_con(4000, 3, 0);
	c[1] = cs_alloc(5100, &addr, CS_MAPNOW);
	tu_fill((char *)addr + 100, 5000, 3, 4000);
	c[2] = pattern_con(3000, 3, 9000);
	lens[0] = 4000;
	lens[1] = 5000;
	lens[2] = 3000;
	total = 12000;
	n = cs_write(p[1], 3, c, offs, lens, 0);
	assert_int_equal(n, (ssize_t)total);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cs_map(1, &c[i], &addr, 0), -EBADF);
		assert_int_equal(cs_free(1, &c[i]), -EBADF);
	}
	close(p[1]);
	read_check(p[0], total, 3, 0, 64, 0);
	{
		struct rd r;

		assert_int_equal(cs_read(p[0], 100, 4, rd_args(&r), 0), 0);
	}
	close(p[0]);
}

/* offs/lens NULL: the whole data of each container. */
static void test_write_whole(void **state)
{
	int p[2], c[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	c[0] = pattern_con(1000, 4, 0);
	c[1] = pattern_con(2000, 4, 1000);
	assert_int_equal(cs_write(p[1], 2, c, NULL, NULL, 0), 3000);
	close(p[1]);
	read_check(p[0], 3000, 4, 0, 8, CS_MAPALL);
	close(p[0]);
}

/* A failed write gives nothing away: the ids stay valid (and what was
 * published stays readable, no longer writable). */
static void test_write_error_keeps(void **state)
{
	int p[2], cid, off = 0, len = 100;
	void *addr;

	(void)state;
	cid = pattern_con(4096, 5, 0);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(cs_write(p[1], 1, &cid, NULL, NULL, 0), -EPIPE);
	assert_int_equal(cs_map(1, &cid, &addr, 0), 0);
	assert_int_equal(tu_check(addr, 4096, 5, 0), -1);
	close(p[1]);
	/* Ranges outside the container. */
	assert_int_equal(pipe(p), 0);
	off = 4000;
	assert_int_equal(cs_write(p[1], 1, &cid, &off, &len, 0), -EINVAL);
	off = -1;
	assert_int_equal(cs_write(p[1], 1, &cid, &off, &len, 0), -EINVAL);
	off = 0;
	len = -5;
	assert_int_equal(cs_write(p[1], 1, &cid, &off, &len, 0), -EINVAL);
	/* A closed descriptor. */
	close(p[1]);
	assert_int_equal(cs_write(p[1], 1, &cid, NULL, NULL, 0), -EBADF);
	assert_int_equal(cs_map(1, &cid, &addr, 0), 0);
	assert_int_equal(cs_free(1, &cid), 0);
	close(p[0]);
	assert_int_equal(pool_in_use(), 0);
}

/* cs_write to a regular file. */
static void test_write_file(void **state)
{
	char buf[6000];
	int fd, cid;

	(void)state;
	fd = tu_pattern_file(0, 0, NULL, 0);
	assert_true(fd >= 0);
	cid = pattern_con(6000, 6, 0);
	assert_int_equal(cs_write(fd, 1, &cid, NULL, NULL, 0), 6000);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 6000);
	assert_int_equal(tu_check(buf, 6000, 6, 0), -1);
	close(fd);
}

/* ------------------------------------------------------------ reading */

/* A file: extents are read into new containers (a copy), in order. */
static void test_read_file(void **state)
{
	size_t len = 300 * KiB + 123;
	int fd = tu_pattern_file(len, 8, NULL, 0);
	struct rd r;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(read_check(fd, len, 8, 0, 4, CS_MAPALL) > 0, 1);
	assert_int_equal(cs_read(fd, 100, 4, rd_args(&r), 0), 0);
	/* From the middle, without mapping. */
	assert_int_equal(lseek(fd, 1000, SEEK_SET), 1000);
	read_check(fd, len - 1000, 8, 1000, 1, 0);
	close(fd);
	assert_int_equal(pool_in_use(), 0);
}

/* AF_UNIX stream socket both ways. */
static void test_socket(void **state)
{
	int sv[2], c[4];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 4; i++)
		c[i] = pattern_con(16 * KiB, 9, (uint64_t)i * 16 * KiB);
	assert_int_equal(cs_write(sv[0], 4, c, NULL, NULL, 0), 64 * KiB);
	shutdown(sv[0], SHUT_WR);
	read_check(sv[1], 64 * KiB, 9, 0, 2, CS_MAPALL);
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(pool_in_use(), 0);
}

/*
 * A container given away to a socket or a pipe goes by copy: the next
 * cs_alloc gets the same memory back at once, not detached (fresh pages),
 * and what the reader reads later is still the first container's bytes,
 * though the writer has overwritten that memory meanwhile.  32 KiB: above
 * the size iol_write would otherwise lend.
 */
static void test_write_gives_away_by_copy(void **state)
{
	struct zc_pool_stats st0, st;
	int fds[2][2], c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds[0]), 0);
	assert_int_equal(pipe(fds[1]), 0);
	for (int k = 0; k < 2; k++) {
		void *first, *again;

		zc_pool_stats(zc_default_pool(), &st0);
		c = cs_alloc(32 * KiB, &first, CS_MAPNOW);
		assert_true(c >= 0);
		tu_fill(first, 32 * KiB, 12, 0);
		assert_int_equal(cs_write(fds[k][1], 1, &c, NULL, NULL, 0),
				 32 * KiB);
		c = cs_alloc(32 * KiB, &again, CS_MAPNOW);
		assert_true(c >= 0);
		assert_ptr_equal(again, first);
		tu_fill(again, 32 * KiB, 12, 32 * KiB);
		assert_int_equal(cs_write(fds[k][1], 1, &c, NULL, NULL, 0),
				 32 * KiB);
		close(fds[k][1]);
		read_check(fds[k][0], 64 * KiB, 12, 0, 2, CS_MAPALL);
		close(fds[k][0]);
		zc_pool_stats(zc_default_pool(), &st);
		assert_int_equal(st.detaches, st0.detaches);
	}
	assert_int_equal(pool_in_use(), 0);
}

/* A channel: descriptors, read-only containers at the receiver, and a
 * message bigger than maxcon or size is handed out over several calls. */
static void test_channel_maxcon(void **state)
{
	zc_channel *a, *b;
	int c[5], offs[5], lens[5], fa, fb;
	struct rd r;

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	fa = zc_channel_fd(a);
	fb = zc_channel_fd(b);
	for (int i = 0; i < 5; i++) {
		c[i] = pattern_con(8 * KiB, 10, (uint64_t)i * 8 * KiB);
		offs[i] = 0;
		lens[i] = 8 * KiB;
	}
	assert_int_equal(cs_write(fa, 5, c, offs, lens, 0), 40 * KiB);
	assert_int_equal(cs_free(5, c), -EBADF);
	/* maxcon 2 of 5: 2, 2, 1. */
	assert_int_equal(read_check(fb, 40 * KiB, 10, 0, 2, CS_MAPALL), 5);
	/* size smaller than the message: a container is cut at `size`. */
	c[0] = pattern_con(10000, 11, 0);
	assert_int_equal(cs_write(fa, 1, c, NULL, NULL, 0), 10000);
	assert_int_equal(cs_read(fb, 3000, 8, rd_args(&r), CS_MAPALL), 1);
	assert_int_equal(r.lens[0], 3000);
	assert_int_equal(tu_check((char *)r.addrs[0] + r.offs[0], 3000, 11, 0), -1);
	assert_int_equal(cs_free(1, r.cids), 0);
	read_check(fb, 7000, 11, 3000, 8, 0);
	/* Non-blocking and empty. */
	assert_int_equal(zc_channel_set_nonblock(b, 1), 0);
	assert_int_equal(cs_read(fb, 100, 1, rd_args(&r), 0), -EAGAIN);
	zc_channel_reclaim(0);
	assert_int_equal(pool_in_use(), 0);
	/* The writer closes: end of stream. */
	zc_channel_close(a);
	assert_int_equal(cs_read(fb, 100, 1, rd_args(&r), 0), 0);
	zc_channel_close(b);
}

/* Containers from a peer map read-only, at the peer's bytes. */
static void test_channel_sizes(void **state)
{
	zc_channel *a, *b;
	int cid, off = 100, len = 5000;
	struct rd r;

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	cid = cs_alloc(3 * 4096, NULL, 0);
	{
		void *p;

		assert_int_equal(cs_map(1, &cid, &p, 0), 0);
		tu_fill((char *)p + 100, 5000, 12, 0);
	}
	assert_int_equal(cs_write(zc_channel_fd(a), 1, &cid, &off, &len, 0), 5000);
	assert_int_equal(cs_read(zc_channel_fd(b), 1 << 20, 4, rd_args(&r), 0), 1);
	assert_int_equal(r.offs[0], 100);
	assert_int_equal(r.lens[0], 5000);
	assert_int_equal(r.sizes[0], 5100);	/* published up to the data end */
	assert_null(r.addrs[0]);
	assert_int_equal(cs_map(1, r.cids, r.addrs, 0), 0);
	assert_int_equal(tu_check((char *)r.addrs[0] + 100, 5000, 12, 0), -1);
	/* Forward it on: a received container can be written again. */
	{
		int p[2];

		assert_int_equal(pipe(p), 0);
		assert_int_equal(cs_write(p[1], 1, r.cids, NULL, NULL, 0), 5000);
		close(p[1]);
		read_check(p[0], 5000, 12, 0, 4, CS_MAPALL);
		close(p[0]);
	}
	zc_channel_reclaim(0);
	assert_int_equal(pool_in_use(), 0);
	zc_channel_close(a);
	zc_channel_close(b);
}

/* Pending data belongs to the stream, not the descriptor number. */
static void test_pending_not_leaked(void **state)
{
	int p[2], q[2], c[2], fd;
	struct rd r;

	(void)state;
	assert_int_equal(pipe(p), 0);
	c[0] = pattern_con(1000, 13, 0);
	c[1] = pattern_con(1000, 13, 1000);
	assert_int_equal(cs_write(p[1], 2, c, NULL, NULL, 0), 2000);
	/* Read 500 bytes: the rest stays pending for p[0]. */
	assert_int_equal(cs_read(p[0], 500, 1, rd_args(&r), 0), 1);
	assert_int_equal(cs_free(1, r.cids), 0);
	fd = p[0];
	close(p[0]);
	close(p[1]);
	/* A new pipe gets the same number: no stale data. */
	assert_int_equal(pipe(q), 0);
	assert_int_equal(q[0], fd);
	c[0] = pattern_con(700, 14, 0);
	assert_int_equal(cs_write(q[1], 1, c, NULL, NULL, 0), 700);
	close(q[1]);
	read_check(q[0], 700, 14, 0, 4, CS_MAPALL);
	close(q[0]);
	assert_int_equal(pool_in_use(), 0);
}

/* -------------------------------------------------------- bad arguments */

static void test_bad_args(void **state)
{
	void *addr = (void *)1;
	int cid, bad = 123456, neg = -1, p[2];
	struct rd r;

	(void)state;
	assert_int_equal(cs_alloc(0, &addr, 0), -EINVAL);
	assert_null(addr);
	assert_int_equal(cs_alloc(-5, NULL, 0), -EINVAL);
	assert_int_equal(cs_alloc(100, NULL, CS_MAPNOW), -EINVAL);
	assert_int_equal(cs_alloc(100, &addr, 0x100), -EINVAL);

	assert_int_equal(cs_free(-1, &bad), -EINVAL);
	assert_int_equal(cs_free(1, NULL), -EINVAL);
	assert_int_equal(cs_free(0, NULL), 0);
	assert_int_equal(cs_free(1, &bad), -EBADF);
	assert_int_equal(cs_free(1, &neg), -EBADF);

	cid = cs_alloc(100, NULL, 0);
	assert_int_equal(cs_map(1, &cid, NULL, 0), -EINVAL);
	assert_int_equal(cs_map(1, NULL, &addr, 0), -EINVAL);
	assert_int_equal(cs_map(-1, &cid, &addr, 0), -EINVAL);
	assert_int_equal(cs_map(1, &cid, &addr, 7), -EINVAL);
	assert_int_equal(cs_map(1, &bad, &addr, 0), -EBADF);
	assert_int_equal(cs_unmap(1, NULL), -EINVAL);
	assert_int_equal(cs_unmap(-2, &cid), -EINVAL);
	assert_int_equal(cs_unmap(1, &bad), -EBADF);

	assert_int_equal(cs_write(-1, 1, &cid, NULL, NULL, 0), -EBADF);
	assert_int_equal(cs_write(1, -1, &cid, NULL, NULL, 0), -EINVAL);
	assert_int_equal(cs_write(1, 1, NULL, NULL, NULL, 0), -EINVAL);
	assert_int_equal(cs_write(1, 1, &cid, NULL, NULL, 3), -EINVAL);
	assert_int_equal(cs_write(1, 1, &bad, NULL, NULL, 0), -EBADF);
	assert_int_equal(cs_write(1, 0, &cid, NULL, NULL, 0), 0);
	{
		int two[2] = { cid, cid };

		assert_int_equal(cs_write(1, 2, two, NULL, NULL, 0), -EINVAL);
	}
	assert_int_equal(cs_map(1, &cid, &addr, 0), 0);	/* still ours */

	assert_int_equal(cs_read(-1, 100, 1, rd_args(&r), 0), -EBADF);
	assert_int_equal(cs_read(0, 0, 1, rd_args(&r), 0), -EINVAL);
	assert_int_equal(cs_read(0, -1, 1, rd_args(&r), 0), -EINVAL);
	assert_int_equal(cs_read(0, 100, 0, rd_args(&r), 0), -EINVAL);
	assert_int_equal(cs_read(0, 100, -3, rd_args(&r), 0), -EINVAL);
	assert_int_equal(cs_read(0, 100, 1, NULL, 0), -EINVAL);
	r.args.cids = NULL;
	assert_int_equal(cs_read(0, 100, 1, &r.args, 0), -EINVAL);
	assert_int_equal(cs_read(0, 100, 1, rd_args(&r), CS_MAPNOW), -EINVAL);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(cs_read(p[0], 100, 1, rd_args(&r), 0), -EBADF);
	assert_int_equal(cs_write(p[1], 1, &cid, NULL, NULL, 0), -EBADF);
	assert_int_equal(cs_free(1, &cid), 0);
	assert_int_equal(pool_in_use(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_channel),	/* first: see there */
		cmocka_unit_test(test_alloc_map_free),
		cmocka_unit_test(test_free_duplicates),
		cmocka_unit_test(test_write_pipe_move),
		cmocka_unit_test(test_write_whole),
		cmocka_unit_test(test_write_error_keeps),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_socket),
		cmocka_unit_test(test_write_gives_away_by_copy),
		cmocka_unit_test(test_channel_maxcon),
		cmocka_unit_test(test_channel_sizes),
		cmocka_unit_test(test_pending_not_leaked),
		cmocka_unit_test(test_bad_args),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
