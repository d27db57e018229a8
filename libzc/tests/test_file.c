/* test_file.c - file versions: unchanged, truncated, written, replaced by
 * rename, deleted; bad arguments.  Snapshots (zc_buf_snapshot): frozen
 * bytes, sent whole after the file changed, errors, nothing leaked; on the
 * patched kernel with IO-Lite, a kernel buffer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"

static char dir[] = "/tmp/zc-file-XXXXXX";

static void make(const char *name, const char *content, char *path)
{
	int fd;

	sprintf(path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)),
			 (ssize_t)strlen(content));
	close(fd);
}

/* mtime granularity is coarse on some filesystems: make sure a later
 * change gets a different timestamp. */
static void tick(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void test_unchanged(void **state)
{
	char p[128];
	struct zc_file_version v;
	zc_file *f;

	(void)state;
	make("a", "abcdef", p);
	assert_int_equal(zc_file_open(p, &f), 0);
	assert_int_equal(zc_file_size(f), 6);
	zc_file_version(f, &v);
	assert_int_equal(v.size, 6);
	assert_true(v.ino != 0);
	assert_int_equal(zc_file_check(f), 0);
	assert_true(zc_file_fd(f) >= 0);
	/* What a stat says is the same version; a changed size is not. */
	struct stat st;
	struct zc_file_version w;
	assert_int_equal(fstat(zc_file_fd(f), &st), 0);
	zc_file_version_of(&st, &w);
	assert_true(zc_file_version_same(&v, &w));
	w.size++;
	assert_false(zc_file_version_same(&v, &w));
	assert_ptr_equal(zc_file_ref(f), f);
	zc_file_release(f);
	assert_int_equal(zc_file_check(f), 0);
	zc_file_release(f);
}

static void test_truncated_written(void **state)
{
	char p[128];
	zc_file *f;

	(void)state;
	make("b", "abcdef", p);
	assert_int_equal(zc_file_open(p, &f), 0);
	assert_int_equal(truncate(p, 3), 0);
	assert_int_equal(zc_file_check(f), -ESTALE);
	zc_file_release(f);

	assert_int_equal(zc_file_open(p, &f), 0);
	tick();
	int fd = open(p, O_WRONLY);
	assert_int_equal(pwrite(fd, "X", 1, 0), 1);	/* same size */
	close(fd);
	assert_int_equal(zc_file_check(f), -ESTALE);
	zc_file_release(f);
}

/* zc_file_trust: an arena its owner rewrites where nothing in flight
 * looks (a memfd) is never stale, and its slices are read as they are. */
static void test_trusted(void **state)
{
	int fd = memfd_create("zc-arena", MFD_CLOEXEC);
	char out[4] = { 0 };
	zc_agg *a;
	zc_file *f;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "abcdef", 6, 0), 6);
	assert_int_equal(zc_file_from_fd(fd, &f), 0);
	tick();
	assert_int_equal(pwrite(fd, "XY", 2, 4), 2);
	assert_int_equal(zc_file_check(f), -ESTALE);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_file(a, f, 1, 3), 0);
	assert_int_equal(zc_agg_copyout(a, 0, out, 3), -ESTALE);
	zc_file_trust(f);
	assert_int_equal(zc_file_check(f), 0);
	assert_int_equal(zc_agg_copyout(a, 0, out, 3), 3);
	assert_memory_equal(out, "bcd", 3);
	zc_agg_release(a);
	zc_file_release(f);
	zc_file_trust(NULL);		/* harmless */
	close(fd);
}

static void test_replaced_and_deleted(void **state)
{
	char p[128], q[128];
	zc_file *f, *g;

	(void)state;
	make("c", "old", p);
	make("c.new", "new", q);
	assert_int_equal(zc_file_open(p, &f), 0);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(zc_file_check(f), -ESTALE);
	zc_file_release(f);

	assert_int_equal(zc_file_open(p, &f), 0);
	assert_int_equal(zc_file_from_fd(zc_file_fd(f), &g), 0);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(zc_file_check(f), -ESTALE);	/* has a path */
	/* Without a path only the inode's own version counts. */
	int err = zc_file_check(g);
	assert_true(err == 0 || err == -ESTALE);	/* ctime may change */
	zc_file_release(f);
	zc_file_release(g);
}

/* zc_file_adopt takes the descriptor itself (no dup) and the caller's
 * stat (no fstat): the version is the one the caller saw, and a file
 * changed since is stale at the first check.  On failure the descriptor
 * stays open and the caller's. */
static void test_adopt(void **state)
{
	char p[128];
	struct zc_file_version v;
	struct stat st;
	zc_file *f;
	int fd;

	(void)state;
	make("adopt", "0123456789", p);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(zc_file_adopt(fd, &st, &f), 0);
	assert_int_equal(zc_file_fd(f), fd);
	zc_file_version(f, &v);
	assert_int_equal(v.size, 10);
	assert_int_equal(v.ino, (uint64_t)st.st_ino);
	assert_int_equal(zc_file_check(f), 0);
	tick();
	make("adopt", "changed", p);	/* O_TRUNC: same inode, new size */
	assert_int_equal(zc_file_check(f), -ESTALE);
	zc_file_release(f);
	assert_int_equal(fcntl(fd, F_GETFD), -1);	/* closed with it */
	assert_int_equal(errno, EBADF);

	/* Without a stat it takes its own. */
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_int_equal(zc_file_adopt(fd, NULL, &f), 0);
	assert_int_equal(zc_file_size(f), 7);
	zc_file_release(f);

	/* Not a regular file: refused, fd untouched. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(fstat(fd, &st), 0);
	f = (zc_file *)1;
	assert_int_equal(zc_file_adopt(fd, &st, &f), -EINVAL);
	assert_null(f);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	close(fd);
	assert_int_equal(zc_file_adopt(-1, NULL, &f), -EBADF);
	assert_int_equal(zc_file_adopt(0, NULL, NULL), -EINVAL);
}

static void test_bad_args(void **state)
{
	zc_file *f = (zc_file *)1;

	(void)state;
	assert_int_equal(zc_file_open(NULL, &f), -EINVAL);
	assert_null(f);
	assert_int_equal(zc_file_open("/nonexistent/x", &f), -ENOENT);
	assert_int_equal(zc_file_open("/tmp", &f), -EISDIR);
	assert_int_equal(zc_file_open("/dev/null", &f), -EINVAL);
	assert_int_equal(zc_file_from_fd(-1, &f), -EBADF);
	assert_int_equal(zc_file_from_fd(1000000, &f), -EBADF);
	assert_int_equal(zc_file_open("/tmp", NULL), -EINVAL);
	assert_int_equal(zc_file_check(NULL), -EINVAL);
	zc_file_release(NULL);
}

/* Bytes of the default pool in use (snapshots must give all back). */
static size_t pool_in_use(void)
{
	struct zc_pool_stats st;

	zc_pool_stats(zc_default_pool(), &st);
	return st.bytes_in_use;
}

/* Whether this process's snapshots should be kernel buffers: the patched
 * kernel's IO-Lite calls are there and not switched off. */
static int kernel_snapshots(void)
{
	const char *iol = getenv("ZC_IOLITE");

	return strcmp(zc_backend_name(), "kernel") == 0 &&
	       access("/sys/kernel/zc/syscalls/iol_read", F_OK) == 0 &&
	       !(iol && strcmp(iol, "off") == 0);
}

/* A file of n bytes of a pattern that depends on seed. */
static int pattern_file(const char *name, size_t n, unsigned seed, char *path)
{
	unsigned char *b = malloc(n);
	int fd;

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + seed * 131 + (i >> 9));
	sprintf(path, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	free(b);
	return fd;
}

static int same_pattern(const unsigned char *p, size_t off, size_t n,
			unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)((off + i) * 7 + seed * 131 +
					    ((off + i) >> 9)))
			return 0;
	return 1;
}

static void test_snapshot(void **state)
{
	size_t n = 3 * 4096 + 123, used = pool_in_use();
	struct zc_buf_id id;
	char p[128];
	zc_buf *b, *tail;
	int fd;

	(void)state;
	fd = pattern_file("snap", n, 1, p);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 0, n, &b), 0);
	assert_int_equal(zc_buf_len(b), n);
	assert_true(same_pattern(zc_buf_data(b), 0, n, 1));
	/* Not the file's pages: a rewrite in place and a truncation do not
	 * show. */
	assert_int_equal(pwrite(fd, "XXXXXXXX", 8, 4096), 8);
	assert_int_equal(ftruncate(fd, 10), 0);
	assert_true(same_pattern(zc_buf_data(b), 0, n, 1));
	assert_null(zc_buf_wptr(b));
	assert_int_equal(zc_buf_publish(b, 1), -EPERM);
	zc_buf_id(b, &id);
	if (kernel_snapshots()) {
		/* The kernel's buffer: no pool, nothing taken from ours. */
		assert_null(zc_buf_pool(b));
		assert_int_equal(id.pool, 0);
		assert_int_equal(pool_in_use(), used);
	} else {
		assert_ptr_equal(zc_buf_pool(b), zc_default_pool());
		assert_true(pool_in_use() > used);
	}
	zc_buf_release(b);
	assert_int_equal(pool_in_use(), used);
	close(fd);

	/* An offset: the bytes from there on. */
	fd = pattern_file("snap2", n, 2, p);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 5000, n - 5000, &tail), 0);
	assert_int_equal(zc_buf_len(tail), n - 5000);
	assert_true(same_pattern(zc_buf_data(tail), 5000, n - 5000, 2));
	/* The descriptor's offset did not move (pread). */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (off_t)n);
	zc_buf_release(tail);
	close(fd);
}

/* A snapshot sent by iol_write to a pipe and to a stream socket, again and
 * again, after the file changed: every byte the one of the snapshot. */
static void test_snapshot_send(void **state)
{
	size_t n = 20000, got;
	unsigned char *in = malloc(n);
	int fd, pfd[2], sv[2];
	char p[128];
	zc_buf *b;

	(void)state;
	assert_non_null(in);
	fd = pattern_file("send", n, 3, p);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 0, n, &b), 0);
	assert_int_equal(pwrite(fd, "changed", 7, 100), 7);
	assert_int_equal(pipe(pfd), 0);
	/* n fits a pipe's default 64 KiB: each round writes it whole. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int round = 0; round < 3; round++) {
		int to[2] = { pfd[1], sv[0] }, from[2] = { pfd[0], sv[1] };

		for (int k = 0; k < 2; k++) {
			zc_agg *a;

			assert_int_equal(zc_agg_create(&a), 0);
			assert_int_equal(zc_agg_append_buf(a, b, 0, n), 0);
			assert_int_equal(iol_write(to[k], a), (ssize_t)n);
			assert_int_equal(zc_agg_len(a), 0);
			zc_agg_release(a);
			for (got = 0; got < n;) {
				ssize_t r = read(from[k], in + got, n - got);

				assert_true(r > 0);
				got += (size_t)r;
			}
			assert_true(same_pattern(in, 0, n, 3));
		}
	}
	/* Released while the pipe may still hold its pages: gone from
	 * here, the bytes already read are what they were. */
	zc_buf_release(b);
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
	close(fd);
	free(in);
}

static void test_snapshot_errors(void **state)
{
	size_t used = pool_in_use();
	zc_buf *b = (zc_buf *)1;
	int fd, pfd[2];
	char p[128];

	(void)state;
	fd = pattern_file("short", 1000, 4, p);
	/* Shorter than asked: -ESTALE, nothing kept. */
	assert_int_equal(zc_buf_snapshot(NULL, fd, 0, 1001, &b), -ESTALE);
	assert_null(b);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 999, 2, &b), -ESTALE);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 5000, 1, &b), -ESTALE);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 0, 0, &b), -EINVAL);
	assert_int_equal(zc_buf_snapshot(NULL, fd, UINT64_MAX, 1, &b), -EINVAL);
	assert_int_equal(zc_buf_snapshot(NULL, fd, 0, 1, NULL), -EINVAL);
	assert_int_equal(zc_buf_snapshot(NULL, -1, 0, 1, &b), -EBADF);
	/* Not a file: pread says so. */
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], "abc", 3), 3);
	assert_int_equal(zc_buf_snapshot(NULL, pfd[0], 0, 3, &b), -ESPIPE);
	assert_int_equal(pool_in_use(), used);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_truncated_written),
		cmocka_unit_test(test_replaced_and_deleted),
		cmocka_unit_test(test_trusted),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_snapshot_send),
		cmocka_unit_test(test_snapshot_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
