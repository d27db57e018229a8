/* test_pool.c - pools and buffers: allocation, publishing, generations,
 * recycling without re-zeroing, detaching kernel-referenced pages, sharing
 * with a peer over a UNIX socket, bad arguments. */
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/internal.h"

static void test_create_and_seal(void **state)
{
	zc_pool *p;
	int seals;

	(void)state;
	assert_int_equal(zc_pool_create(100000, &p), 0);
	assert_int_equal(zc_pool_size(p), 102400);	/* page rounded */
	assert_true(zc_pool_is_owner(p));
	assert_true(zc_pool_id(p) != 0);
	seals = fcntl(zc_pool_fd(p), F_GET_SEALS);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	/* Sealed: nobody can shrink the memfd under a peer's mapping. */
	assert_int_equal(ftruncate(zc_pool_fd(p), 4096), -1);
	assert_int_equal(errno, EPERM);
	zc_pool_release(p);
}

static void test_bad_args(void **state)
{
	zc_pool *p;
	zc_buf *b;

	(void)state;
	assert_int_equal(zc_pool_create(0, NULL), -EINVAL);
	assert_int_equal(zc_pool_create(ZC_POOL_MAX_SIZE + 1, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(zc_pool_create(8192, &p), 0);
	assert_int_equal(zc_buf_alloc(p, 0, &b), -EINVAL);
	assert_int_equal(zc_buf_alloc(p, (size_t)-1, &b), -EINVAL);
	assert_int_equal(zc_buf_alloc(p, 8193, &b), -EINVAL);
	assert_int_equal(zc_buf_alloc(p, 10, NULL), -EINVAL);
	assert_int_equal(zc_buf_publish(NULL, 1), -EINVAL);
	assert_int_equal(zc_buf_alloc(p, 10, &b), 0);
	assert_int_equal(zc_buf_publish(b, 4097), -EINVAL);
	assert_int_equal(zc_buf_publish(b, 10), 0);
	assert_int_equal(zc_buf_publish(b, 10), -EPERM);
	assert_null(zc_buf_wptr(b));	/* immutable once published */
	zc_buf_release(b);
	assert_int_equal(zc_buf_from_bytes(p, NULL, 5, &b), -EINVAL);
	assert_int_equal(zc_pool_send(-1, p), -EBADF);
	zc_pool *imp = (zc_pool *)1;
	assert_int_equal(zc_pool_recv(-1, &imp), -EBADF);
	assert_null(imp);
	zc_buf_release(NULL);
	zc_pool_release(NULL);
	zc_pool_release(p);
}

static void test_full_pool(void **state)
{
	zc_pool *p;
	zc_buf *b[4], *x;
	struct zc_pool_stats st;

	(void)state;
	assert_int_equal(zc_pool_create(4 * 4096, &p), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(zc_buf_alloc(p, 4096, &b[i]), 0);
	assert_int_equal(zc_buf_alloc(p, 1, &x), -ENOMEM);
	zc_pool_stats(p, &st);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.bytes_in_use, 4 * 4096);
	/* Freeing two non-adjacent pages does not make room for two. */
	zc_buf_release(b[0]);
	zc_buf_release(b[2]);
	assert_int_equal(zc_buf_alloc(p, 8192, &x), -ENOMEM);
	zc_buf_release(b[1]);
	/* Cached single pages are flushed back to make a run of three. */
	assert_int_equal(zc_buf_alloc(p, 3 * 4096, &x), 0);
	zc_buf_release(x);
	zc_buf_release(b[3]);
	zc_pool_stats(p, &st);
	assert_int_equal(st.bytes_in_use, 0);
	zc_pool_release(p);
}

static void test_generation_and_reuse(void **state)
{
	struct zc_buf_id id1, id2;
	struct zc_pool_stats st;
	zc_pool *p;
	zc_buf *b;
	char *w;

	(void)state;
	assert_int_equal(zc_pool_create(1 << 20, &p), 0);
	assert_int_equal(zc_buf_alloc(p, 5000, &b), 0);
	assert_int_equal(zc_buf_capacity(b), 8192);
	w = zc_buf_wptr(b);
	memset(w, 'A', 5000);
	assert_int_equal(zc_buf_publish(b, 5000), 0);
	zc_buf_id(b, &id1);
	assert_int_equal(id1.len, 5000);
	assert_int_equal(id1.pool, zc_pool_id(p));
	zc_buf_release(b);

	/* Same size again: the same memory, a new generation, and the old
	 * bytes still there (recycled without re-zeroing). */
	assert_int_equal(zc_buf_alloc(p, 6000, &b), 0);
	zc_buf_id(b, &id2);
	assert_int_equal(id2.off, id1.off);
	assert_true(id2.gen != id1.gen);
	assert_int_equal(((char *)zc_buf_wptr(b))[100], 'A');
	zc_pool_stats(p, &st);
	assert_int_equal(st.reuses, 1);
	assert_int_equal(st.detaches, 0);
	zc_buf_release(b);
	zc_pool_release(p);
}

static void test_kref_detaches(void **state)
{
	struct zc_pool_stats st;
	zc_pool *p;
	zc_buf *b;
	int pfd[2];
	char out[4096];

	(void)state;
	assert_int_equal(zc_pool_create(1 << 20, &p), 0);
	assert_int_equal(zc_buf_alloc(p, 4096, &b), 0);
	memset(zc_buf_wptr(b), 'K', 4096);
	zc_buf_publish(b, 4096);
	/* Lend the page to a pipe by reference, then release the buffer. */
	assert_int_equal(pipe(pfd), 0);
	struct iovec iov = { (void *)zc_buf_data(b), 4096 };
	zc_buf_mark_kref(b);
	assert_int_equal(vmsplice(pfd[1], &iov, 1, 0), 4096);
	zc_buf_release(b);
	zc_pool_stats(p, &st);
	assert_int_equal(st.detaches, 1);

	/* The range now has fresh zero pages; scribbling on them must not
	 * change what the pipe still holds. */
	assert_int_equal(zc_buf_alloc(p, 4096, &b), 0);
	assert_int_equal(((char *)zc_buf_wptr(b))[0], 0);
	memset(zc_buf_wptr(b), 'X', 4096);
	assert_int_equal(read(pfd[0], out, sizeof(out)), 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(out[i], 'K');
	zc_buf_release(b);
	close(pfd[0]);
	close(pfd[1]);
	zc_pool_release(p);
}

static void test_pool_outlives_destroy(void **state)
{
	zc_pool *p;
	zc_buf *b;

	(void)state;
	assert_int_equal(zc_pool_create(1 << 16, &p), 0);
	assert_int_equal(zc_buf_from_bytes(p, "hello", 5, &b), 0);
	zc_pool_release(p);	/* buffer keeps the memory alive */
	assert_memory_equal(zc_buf_data(b), "hello", 5);
	zc_buf_release(b);
}

static void test_share_with_peer(void **state)
{
	int sv[2], status;
	zc_pool *p;
	zc_buf *b;
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(zc_pool_create(1 << 16, &p), 0);
	assert_int_equal(zc_buf_from_bytes(p, "shared bytes", 12, &b), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_pool *imp;
		char off[32];
		zc_buf *fb, *nb;
		const char *d;
		ssize_t n;

		close(sv[0]);
		if (zc_pool_recv(sv[1], &imp))
			_exit(1);
		if (zc_pool_is_owner(imp) || zc_pool_size(imp) != 1 << 16)
			_exit(2);
		/* Imported pools cannot be allocated from. */
		if (zc_buf_alloc(imp, 10, &nb) != -EPERM)
			_exit(3);
		n = read(sv[1], off, sizeof(off) - 1);
		if (n <= 0)
			_exit(4);
		off[n] = 0;
		if (zc_buf_foreign(imp, strtoull(off, NULL, 10), 12, 1, &fb))
			_exit(5);
		d = zc_buf_data(fb);
		if (!d || memcmp(d, "shared bytes", 12))
			_exit(6);
		/* Read-only: a store would fault.  Check the protection. */
		if (mprotect((void *)((uintptr_t)d & ~4095ul), 4096,
			     PROT_READ | PROT_WRITE) == 0)
			_exit(7);
		zc_buf_release(fb);
		zc_pool_release(imp);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(zc_pool_send(sv[0], p), 0);
	char off[32];
	struct zc_buf_id id;
	zc_buf_id(b, &id);
	int len = snprintf(off, sizeof(off), "%llu", (unsigned long long)id.off);
	assert_int_equal(write(sv[0], off, len), len);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(sv[0]);
	zc_buf_release(b);
	zc_pool_release(p);
}

static void test_import_rejects_unsealed(void **state)
{
	zc_pool *p;
	int fd = memfd_create("x", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(zc_pool_import_fd(fd, &p), -EPERM);
	assert_null(p);
	close(fd);
}

static void test_default_pool(void **state)
{
	zc_buf *b;

	(void)state;
	assert_non_null(zc_default_pool());
	assert_ptr_equal(zc_default_pool(), zc_default_pool());
	assert_int_equal(zc_buf_alloc(NULL, 100, &b), 0);
	assert_ptr_equal(zc_buf_pool(b), zc_default_pool());
	zc_buf_release(b);
	/* The backend follows the running kernel: "kernel" exactly when it
	 * publishes the Container Shipping ABI (kernel-patch/) and nobody
	 * forced the portable one. */
	if (access("/sys/kernel/zc/abi_version", R_OK) == 0 &&
	    !(getenv("ZC_BACKEND") && !strcmp(getenv("ZC_BACKEND"), "portable")))
		assert_string_equal(zc_backend_name(), "kernel");
	else
		assert_string_equal(zc_backend_name(), "portable");
}

/* A forked child must not allocate from, or recycle into, its parent's
 * pools (same memfd, separate bitmaps); it gets a default pool of its own. */
static void test_fork_child_gets_own_pools(void **state)
{
	zc_pool *p, *parent_default = zc_default_pool();
	zc_buf *b, *kept;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(zc_pool_create(1 << 16, &p), 0);
	assert_int_equal(zc_buf_from_bytes(p, "parent", 6, &kept), 0);
	zc_buf_mark_kref(kept);	/* releasing it in the child must not punch */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_buf *x;

		if (zc_buf_alloc(p, 10, &x) != -EPERM)
			_exit(1);
		if (zc_default_pool() == parent_default || !zc_default_pool())
			_exit(2);
		if (zc_buf_alloc(NULL, 10, &x))
			_exit(3);
		zc_buf_release(x);
		if (memcmp(zc_buf_data(kept), "parent", 6))
			_exit(4);
		zc_buf_release(kept);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The child's release did not punch our pages. */
	assert_memory_equal(zc_buf_data(kept), "parent", 6);
	assert_int_equal(zc_buf_alloc(p, 10, &b), 0);
	zc_buf_release(b);
	zc_buf_release(kept);
	zc_pool_release(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_and_seal),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_full_pool),
		cmocka_unit_test(test_generation_and_reuse),
		cmocka_unit_test(test_kref_detaches),
		cmocka_unit_test(test_pool_outlives_destroy),
		cmocka_unit_test(test_share_with_peer),
		cmocka_unit_test(test_import_rejects_unsealed),
		cmocka_unit_test(test_default_pool),
		cmocka_unit_test(test_fork_child_gets_own_pools),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
