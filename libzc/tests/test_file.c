/* test_file.c - file versions: unchanged, truncated, written, replaced by
 * rename, deleted; bad arguments. */
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
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
