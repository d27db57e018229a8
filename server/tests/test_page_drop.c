/* test_page_drop.c - dropping a file's pages now and on the retries:
 * pages in use survive the first drop and go on a retry; a cancelled file
 * keeps its pages; the queue's timing and its bound. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "page_drop.h"

#define FILE_SIZE (64 << 10)

static char path[] = "page_drop_test.XXXXXX";	/* in the build tree: a disk */

/* Pages of fd's file in the page cache (mincore on a mapping that is
 * never touched). */
static size_t resident_pages(int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = (FILE_SIZE + (size_t)pg - 1) / (size_t)pg, count = 0;
	unsigned char vec[64];
	void *p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);

	assert_true(p != MAP_FAILED);
	assert_true(n <= sizeof(vec));
	assert_int_equal(mincore(p, FILE_SIZE, vec), 0);
	munmap(p, FILE_SIZE);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

/* A written, synced file that is read once (all its pages resident). */
static zc_file *warm_file(void)
{
	static char buf[FILE_SIZE];
	zc_file *f;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(buf));
	close(fd);
	assert_int_equal(zc_file_open(path, &f), 0);
	unlink(path);
	memcpy(path + sizeof(path) - 7, "XXXXXX", 6);
	return f;
}

static void test_drop_now_and_on_retry(void **state)
{
	struct page_drop_queue q = { .n = 0 };
	zc_file *f = warm_file();
	int fd = zc_file_fd(f);
	char *held;

	(void)state;
	/* Something still uses the pages (as a socket does with a response
	 * sent by sendfile): a mapping, touched. */
	held = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(held != MAP_FAILED);
	for (size_t i = 0; i < FILE_SIZE; i += 4096)
		assert_int_equal(held[i], 'z');
	page_drop(&q, f, 1000);
	assert_int_equal(q.n, 1);
	assert_true(resident_pages(fd) > 0);	/* in use: kept */
	assert_int_equal(page_drop_run(&q, 1050), 50);	/* not due yet */
	munmap(held, FILE_SIZE);
	/* Due: dropped now that nothing holds them; one retry left. */
	assert_int_equal(page_drop_run(&q, 1100), 1000);
	assert_int_equal(resident_pages(fd), 0);
	assert_int_equal(q.n, 1);
	assert_int_equal(page_drop_run(&q, 2100), 5000);	/* the last retry */
	assert_int_equal(q.n, 1);
	assert_int_equal(page_drop_run(&q, 7100), -1);
	assert_int_equal(q.n, 0);
	zc_file_release(f);	/* the queue released its reference */
}

static void test_cancel_keeps_pages(void **state)
{
	struct page_drop_queue q = { .n = 0 };
	zc_file *f = warm_file(), *other = warm_file();
	struct zc_file_version v;
	char c;

	(void)state;
	page_drop(&q, f, 0);
	page_drop(&q, other, 0);
	assert_int_equal(q.n, 2);
	/* The cache serves f again: its pages come back and must stay. */
	assert_int_equal(pread(zc_file_fd(f), &c, 1, 0), 1);
	zc_file_version(f, &v);
	page_drop_cancel(&q, v.dev, v.ino);
	assert_int_equal(q.n, 1);
	assert_int_equal(page_drop_run(&q, 5000), 1000);
	assert_true(resident_pages(zc_file_fd(f)) > 0);
	page_drop_clear(&q);
	assert_int_equal(q.n, 0);
	zc_file_release(f);
	zc_file_release(other);
}

static void test_full_queue_drops_without_retries(void **state)
{
	struct page_drop_queue *q = calloc(1, sizeof(*q));
	zc_file *f = warm_file();

	(void)state;
	assert_non_null(q);
	for (unsigned i = 0; i < PAGE_DROP_MAX + 10; i++)
		page_drop(q, f, i);
	assert_int_equal(q->n, PAGE_DROP_MAX);
	assert_int_equal(resident_pages(zc_file_fd(f)), 0);
	page_drop_clear(q);
	free(q);
	zc_file_release(f);	/* all PAGE_DROP_MAX references went back */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_now_and_on_retry),
		cmocka_unit_test(test_cancel_keeps_pages),
		cmocka_unit_test(test_full_queue_drops_without_retries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
