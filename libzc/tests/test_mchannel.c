/*
 * test_mchannel.c - multiway channels (one writer, many readers) and peek.
 *
 * Every reader gets every message byte for byte, in order, over many
 * messages from a small pool (so memory is recycled under the readers);
 * readers in other processes; a reader killed with SIGKILL stops holding
 * anything back; a late joiner starts at the current head; the slowest
 * reader bounds the writer (blocking and non-blocking); memory returns to
 * the pool only after the last reader released it; peek then recv give the
 * same buffers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/channel.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define WINDOW MiB		/* channel_send.c's default window */

/* ------------------------------------------------------------ helpers */

static size_t in_use(zc_pool *p)
{
	struct zc_pool_stats st;

	zc_pool_stats(p, &st);
	return st.bytes_in_use;
}

/* Message i: 1..3 buffers, together bytes [0, msg_len(i)) of stream
 * 1000 + i.  Sizes vary so that recycled memory lands at other offsets. */
static size_t msg_len(unsigned i)
{
	return 1 * KiB + (size_t)(i * 7919u % 61u) * KiB + i % 13u;
}

/* A buffer from pool, collecting what readers gave back while it is full. */
static zc_buf *alloc_retry(zc_mchannel *m, zc_pool *pool, size_t len)
{
	struct timespec ms = { 0, 1000000 };
	zc_buf *b;
	int err;

	for (int tries = 0;; tries++) {
		err = zc_buf_alloc(pool, len, &b);
		if (err == 0)
			return b;
		assert_int_equal(err, -ENOMEM);
		assert_true(tries < 20000);	/* 20 s: memory never came back */
		if (m)
			zc_mchannel_readers(m);
		zc_channel_reclaim(0);
		nanosleep(&ms, NULL);
	}
}

static zc_agg *make_msg(zc_mchannel *m, zc_pool *pool, unsigned i)
{
	size_t len = msg_len(i), pos = 0;
	unsigned parts = 1 + i % 3;
	zc_agg *agg;

	assert_int_equal(zc_agg_create(&agg), 0);
	for (unsigned k = 0; k < parts; k++) {
		size_t n = k + 1 < parts ? len / parts : len - pos;
		zc_buf *b = alloc_retry(m, pool, n);

		tu_fill(zc_buf_wptr(b), n, 1000 + i, pos);
		assert_int_equal(zc_buf_publish(b, n), 0);
		assert_int_equal(zc_agg_append_buf(agg, b, 0, n), 0);
		zc_buf_release(b);
		pos += n;
	}
	return agg;
}

/* 0 if agg is message i, else a non-zero code (usable in a child). */
static int msg_bad(const zc_agg *agg, unsigned i)
{
	size_t len = msg_len(i);
	unsigned char *got = malloc(len);
	int bad;

	if (!got)
		return 90;
	bad = zc_agg_len(agg) != len ? 91 :
	      zc_agg_copyout(agg, 0, got, len) != (ssize_t)len ? 92 :
	      tu_check(got, len, 1000 + i, 0) != -1 ? 93 : 0;
	free(got);
	return bad;
}

/* A reader in this process: the writer's end goes into m. */
static zc_channel *reader_here(zc_mchannel *m)
{
	zc_channel *w, *r;

	assert_int_equal(zc_channel_pair(&w, &r), 0);
	assert_int_equal(zc_mchannel_add(m, w), 0);
	return r;
}

/* One 64 KiB buffer as a message. */
static zc_agg *block_msg(zc_pool *pool, uint64_t seed)
{
	zc_agg *agg;
	zc_buf *b = alloc_retry(NULL, pool, 64 * KiB);

	tu_fill(zc_buf_wptr(b), 64 * KiB, seed, 0);
	assert_int_equal(zc_buf_publish(b, 64 * KiB), 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_buf(agg, b, 0, 64 * KiB), 0);
	zc_buf_release(b);
	return agg;
}

/* --------------------------------------------------------------- peek */

static void test_peek(void **state)
{
	zc_channel *w, *r;
	zc_pool *pool;
	zc_agg *m0, *m1, *p1, *p2, *got;
	struct zc_slice s1, s2, s3;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&w, &r), 0);
	assert_int_equal(zc_channel_set_nonblock(r, 1), 0);
	assert_int_equal(zc_channel_peek(r, &p1), -EAGAIN);
	m0 = make_msg(NULL, pool, 0);	/* one buffer */
	m1 = make_msg(NULL, pool, 1);	/* two */
	assert_int_equal(zc_channel_send(w, m0), 0);
	assert_int_equal(zc_channel_send(w, m1), 0);
	zc_agg_release(m0);
	zc_agg_release(m1);

	assert_int_equal(zc_channel_peek(r, &p1), 0);
	assert_int_equal(msg_bad(p1, 0), 0);
	assert_int_equal(zc_channel_peek(r, &p2), 0);	/* the same again */
	assert_int_equal(msg_bad(p2, 0), 0);
	assert_int_equal(zc_agg_slice(p1, 0, &s1), 0);
	assert_int_equal(zc_agg_slice(p2, 0, &s2), 0);
	assert_ptr_equal(s1.buf, s2.buf);		/* no copy */
	zc_agg_release(p1);
	zc_agg_release(p2);

	assert_int_equal(zc_channel_recv(r, &got), 0);	/* what was peeked */
	assert_int_equal(msg_bad(got, 0), 0);
	assert_int_equal(zc_agg_slice(got, 0, &s3), 0);
	assert_ptr_equal(s3.buf, s1.buf);
	zc_agg_release(got);

	assert_int_equal(zc_channel_recv(r, &got), 0);	/* then the next */
	assert_int_equal(msg_bad(got, 1), 0);
	zc_agg_release(got);
	assert_int_equal(zc_channel_peek(r, &p1), -EAGAIN);

	/* Everything came back to the writer. */
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);

	/* A peeked message is still received after the writer closed, then
	 * -EPIPE; closing with a peeked message releases it. */
	m0 = make_msg(NULL, pool, 2);
	assert_int_equal(zc_channel_send(w, m0), 0);
	assert_int_equal(zc_channel_send(w, m0), 0);
	zc_agg_release(m0);
	zc_channel_close(w);
	assert_int_equal(zc_channel_peek(r, &p1), 0);
	assert_int_equal(msg_bad(p1, 2), 0);
	zc_agg_release(p1);
	assert_int_equal(zc_channel_recv(r, &got), 0);
	zc_agg_release(got);
	assert_int_equal(zc_channel_peek(r, &p1), 0);
	zc_agg_release(p1);
	zc_channel_close(r);	/* with the second message peeked */
	zc_channel_reclaim(100);
	assert_int_equal(in_use(pool), 0);
	zc_pool_destroy(pool);
}

/* ------------------------------------------- every reader, byte-exact */

#define NREAD 3
#define NMSG 600

/* Readers in this process, each releasing with its own lag (reader k
 * holds its last k messages), from a pool far smaller than the stream:
 * memory is recycled all the time, and a buffer reused while any reader
 * still held it would show up as wrong bytes. */
static void test_all_readers_exact(void **state)
{
	zc_channel *r[NREAD];
	zc_agg *held[NREAD][NREAD];
	struct zc_pool_stats st;
	zc_mchannel *m;
	zc_pool *pool;
	size_t total = 0;

	(void)state;
	memset(held, 0, sizeof(held));
	assert_int_equal(zc_pool_create(1 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	for (int k = 0; k < NREAD; k++)
		r[k] = reader_here(m);
	assert_int_equal(zc_mchannel_readers(m), NREAD);
	for (unsigned i = 0; i < NMSG; i++) {
		zc_agg *agg = make_msg(m, pool, i);

		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
		total += msg_len(i);
		for (int k = 0; k < NREAD; k++) {
			zc_agg *got;

			assert_int_equal(zc_channel_recv(r[k], &got), 0);
			assert_int_equal(msg_bad(got, i), 0);
			if (k == 0) {
				zc_agg_release(got);
				continue;
			}
			zc_agg_release(held[k][i % (unsigned)k]);
			held[k][i % (unsigned)k] = got;
		}
	}
	for (int k = 0; k < NREAD; k++)
		for (int j = 0; j < NREAD; j++)
			zc_agg_release(held[k][j]);
	assert_int_equal(zc_mchannel_readers(m), NREAD);
	zc_pool_stats(pool, &st);
	assert_int_equal(st.bytes_in_use, 0);
	assert_true(total > 10 * st.size);	/* the pool was reused ... */
	assert_true(st.reuses > 0);		/* ... also hot, as is */
	zc_mchannel_close(m);
	for (int k = 0; k < NREAD; k++)
		zc_channel_close(r[k]);
	zc_pool_destroy(pool);
}

/* -------------------------------------------------- pool accounting */

/* The memory goes back to the pool when the last reader released it,
 * not before; then it is reused hot (same place, new generation). */
static void test_recycled_after_last_reader(void **state)
{
	zc_channel *r[NREAD];
	zc_agg *agg, *got[NREAD];
	struct zc_pool_stats st0, st1;
	struct zc_buf_id id0, id1;
	struct zc_slice s;
	zc_mchannel *m;
	zc_pool *pool;
	zc_buf *b;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	for (int k = 0; k < NREAD; k++)
		r[k] = reader_here(m);
	agg = block_msg(pool, 5);
	assert_int_equal(zc_agg_slice(agg, 0, &s), 0);
	zc_buf_id(s.buf, &id0);
	assert_int_equal(zc_mchannel_send(m, agg), 0);
	zc_agg_release(agg);		/* only the readers hold it now */
	assert_int_equal(in_use(pool), 64 * KiB);

	for (int k = 0; k < NREAD; k++) {
		assert_int_equal(zc_channel_recv(r[k], &got[k]), 0);
		assert_int_equal(zc_agg_slice(got[k], 0, &s), 0);
		assert_true(tu_check(zc_buf_data(s.buf), 64 * KiB, 5, 0) == -1);
	}
	for (int k = 0; k < NREAD - 1; k++) {
		zc_agg_release(got[k]);
		assert_int_equal(zc_mchannel_readers(m), NREAD);
		assert_int_equal(in_use(pool), 64 * KiB);	/* still held */
	}
	zc_pool_stats(pool, &st0);
	zc_agg_release(got[NREAD - 1]);
	assert_int_equal(zc_mchannel_readers(m), NREAD);
	assert_int_equal(in_use(pool), 0);

	/* Returned clean by every reader: reused as is, same place. */
	assert_int_equal(zc_buf_alloc(pool, 64 * KiB, &b), 0);
	zc_buf_publish(b, 64 * KiB);
	zc_buf_id(b, &id1);
	zc_pool_stats(pool, &st1);
	assert_int_equal(id1.off, id0.off);
	assert_true(id1.gen != id0.gen);
	assert_int_equal(st1.reuses, st0.reuses + 1);
	assert_int_equal(st1.detaches, st0.detaches);
	zc_buf_release(b);
	zc_mchannel_close(m);
	for (int k = 0; k < NREAD; k++)
		zc_channel_close(r[k]);
	zc_pool_destroy(pool);
}

/* ------------------------------------------------------- late joiner */

static void test_late_joiner(void **state)
{
	zc_channel *a, *b = NULL;
	zc_mchannel *m;
	zc_pool *pool;
	zc_agg *agg, *got;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	a = reader_here(m);
	for (unsigned i = 0; i < 20; i++) {
		if (i == 10)
			b = reader_here(m);
		agg = make_msg(m, pool, i);
		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
	}
	for (unsigned i = 0; i < 20; i++) {
		assert_int_equal(zc_channel_recv(a, &got), 0);
		assert_int_equal(msg_bad(got, i), 0);
		zc_agg_release(got);
	}
	/* b starts at the head it joined at: message 10. */
	for (unsigned i = 10; i < 20; i++) {
		assert_int_equal(zc_channel_recv(b, &got), 0);
		assert_int_equal(msg_bad(got, i), 0);
		zc_agg_release(got);
	}
	assert_int_equal(zc_channel_set_nonblock(b, 1), 0);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	assert_int_equal(zc_mchannel_readers(m), 2);
	assert_int_equal(in_use(pool), 0);
	zc_mchannel_close(m);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_destroy(pool);
}

/* ------------------------------------------ readers that leave early */

/* A reader that closes its end with messages unread: dropped, and what it
 * held of ours comes back; the others go on. */
static void test_reader_closes(void **state)
{
	zc_channel *a, *b;
	zc_mchannel *m;
	zc_pool *pool;
	zc_agg *agg, *got;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	a = reader_here(m);
	b = reader_here(m);
	for (unsigned i = 0; i < 4; i++) {
		agg = make_msg(m, pool, i);
		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
	}
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(zc_channel_recv(a, &got), 0);
		zc_agg_release(got);
	}
	assert_true(in_use(pool) > 0);	/* b has not read them */
	zc_channel_close(b);
	assert_int_equal(zc_mchannel_readers(m), 1);
	assert_int_equal(in_use(pool), 0);
	agg = make_msg(m, pool, 4);
	assert_int_equal(zc_mchannel_send(m, agg), 0);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_recv(a, &got), 0);
	assert_int_equal(msg_bad(got, 4), 0);
	zc_agg_release(got);
	/* The last reader leaves (noticed here: a writer that never waits
	 * looks at its readers' sockets only every 64 sends); sending then
	 * has nobody to go to. */
	zc_channel_close(a);
	assert_int_equal(zc_mchannel_readers(m), 0);
	agg = make_msg(m, pool, 5);
	assert_int_equal(zc_mchannel_send(m, agg), -EPIPE);
	zc_agg_release(agg);
	zc_mchannel_close(m);
	assert_int_equal(in_use(pool), 0);
	zc_pool_destroy(pool);
}

/* ------------------------------------------------ the slowest reader */

/* Non-blocking: a reader that does not read holds the writer back by one
 * window, -EAGAIN sends nothing to anybody, and the writer's descriptor
 * turns readable when that reader makes room. */
static void test_slow_reader_nonblock(void **state)
{
	struct pollfd p;
	zc_channel *fast, *slow;
	zc_mchannel *m;
	zc_pool *pool;
	zc_agg *agg, *got;
	unsigned sent = 0, fast_got = 0;
	int err;

	(void)state;
	assert_int_equal(zc_pool_create(8 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	fast = reader_here(m);
	slow = reader_here(m);
	assert_int_equal(zc_mchannel_set_nonblock(m, 1), 0);
	agg = block_msg(pool, 77);
	while ((err = zc_mchannel_send(m, agg)) == 0) {
		sent++;
		assert_true(sent <= 64);
		/* The fast reader keeps up. */
		assert_int_equal(zc_channel_recv(fast, &got), 0);
		zc_agg_release(got);
		fast_got++;
	}
	assert_int_equal(err, -EAGAIN);
	assert_int_equal(sent, WINDOW / (64 * KiB));
	/* -EAGAIN sent nothing: the fast reader has nothing more. */
	assert_int_equal(zc_channel_set_nonblock(fast, 1), 0);
	assert_int_equal(zc_channel_recv(fast, &got), -EAGAIN);

	p = (struct pollfd){ .fd = zc_mchannel_fd(m), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(zc_channel_recv(slow, &got), 0);	/* room */
	zc_agg_release(got);
	assert_int_equal(poll(&p, 1, 1000), 1);
	assert_int_equal(zc_mchannel_send(m, agg), 0);
	assert_int_equal(zc_mchannel_send(m, agg), -EAGAIN);
	zc_agg_release(agg);

	/* Both still get everything, in order. */
	for (unsigned i = 0; i < sent; i++) {
		assert_int_equal(zc_channel_recv(slow, &got), 0);
		zc_agg_release(got);
	}
	assert_int_equal(zc_channel_recv(fast, &got), 0);
	zc_agg_release(got);
	assert_int_equal(zc_mchannel_readers(m), 2);
	assert_int_equal(in_use(pool), 0);
	zc_mchannel_close(m);
	zc_channel_close(fast);
	zc_channel_close(slow);
	zc_pool_destroy(pool);
}

/* Blocking, across processes: a reader that takes one message every
 * millisecond; the writer may run at most a window ahead of it. */
static void test_slow_reader_blocks(void **state)
{
	_Atomic unsigned *consumed;
	unsigned max_lag = 0, n = 150;
	zc_channel *w, *r;
	zc_mchannel *m;
	zc_pool *pool;
	zc_agg *agg;
	int sv[2], status;
	pid_t pid;

	(void)state;
	consumed = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(consumed != MAP_FAILED);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec ms = { 0, 1000000 };
		zc_agg *got;
		int bad = 0;

		close(sv[0]);
		if (zc_channel_open(sv[1], &r))
			_exit(80);
		for (unsigned i = 0; i < n && !bad; i++) {
			nanosleep(&ms, NULL);
			if (zc_channel_recv(r, &got))
				_exit(81);
			atomic_fetch_add(consumed, 1);
			bad = zc_agg_len(got) != 64 * KiB;
			zc_agg_release(got);
		}
		zc_channel_close(r);
		_exit(bad);
	}
	close(sv[1]);
	assert_int_equal(zc_channel_open(sv[0], &w), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	assert_int_equal(zc_mchannel_add(m, w), 0);
	assert_int_equal(zc_pool_create(8 * MiB, &pool), 0);
	agg = block_msg(pool, 3);
	for (unsigned i = 1; i <= n; i++) {
		unsigned lag;

		assert_int_equal(zc_mchannel_send(m, agg), 0);
		lag = i - atomic_load(consumed);
		if (lag > max_lag)
			max_lag = lag;
	}
	zc_agg_release(agg);
	/* A window of unread messages, plus the one the reader has taken
	 * off the ring and not yet counted. */
	assert_true(max_lag <= WINDOW / (64 * KiB) + 1);
	assert_true(max_lag >= WINDOW / (64 * KiB) / 2);  /* it did run ahead */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	zc_mchannel_close(m);
	zc_channel_reclaim(100);
	assert_int_equal(in_use(pool), 0);
	zc_pool_destroy(pool);
	munmap((void *)consumed, 4096);
}

/* ------------------------------------------- readers in other processes */

/* A reader process: every message byte-exact and in order, then -EPIPE
 * when the writer closes.  Exit status 0, or what went wrong. */
static int reader_proc(int sock, unsigned nmsg)
{
	zc_channel *r;
	zc_agg *got;
	int bad;

	if (zc_channel_open(sock, &r))
		return 70;
	for (unsigned i = 0; i < nmsg; i++) {
		if (zc_channel_recv(r, &got))
			return 71;
		bad = msg_bad(got, i);
		zc_agg_release(got);
		if (bad)
			return bad;
	}
	if (zc_channel_recv(r, &got) != -EPIPE)
		return 72;
	zc_channel_close(r);
	return 0;
}

/* Fork a reader; its writer end joins m.  Returns the child's pid. */
static pid_t fork_reader(zc_mchannel *m, unsigned nmsg)
{
	zc_channel *w;
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(reader_proc(sv[1], nmsg));
	}
	close(sv[1]);
	assert_int_equal(zc_channel_open(sv[0], &w), 0);
	assert_int_equal(zc_mchannel_add(m, w), 0);
	return pid;
}

static void expect_exit0(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define FORK_MSGS 800

static void test_fork_readers(void **state)
{
	pid_t pid[NREAD];
	struct zc_pool_stats st;
	zc_mchannel *m;
	zc_pool *pool;
	size_t total = 0;

	(void)state;
	assert_int_equal(zc_pool_create(2 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	for (int k = 0; k < NREAD; k++)
		pid[k] = fork_reader(m, FORK_MSGS);
	for (unsigned i = 0; i < FORK_MSGS; i++) {
		zc_agg *agg = make_msg(m, pool, i);

		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
		total += msg_len(i);
	}
	zc_mchannel_close(m);
	for (int k = 0; k < NREAD; k++)
		expect_exit0(pid[k]);
	zc_channel_reclaim(200);
	zc_pool_stats(pool, &st);
	assert_int_equal(st.bytes_in_use, 0);
	assert_true(total > 10 * st.size);
	zc_pool_destroy(pool);
}

/* A reader killed with SIGKILL mid-stream while it holds messages and
 * lags a window behind: the writer, blocked by it, goes on once it is
 * gone; what it held is released (detached: it might have been in a
 * pipe); the other reader sees every message. */
#define KILLED_MSGS 200	/* far more than the victim's window holds */

static void test_reader_killed(void **state)
{
	struct zc_pool_stats st;
	zc_channel *w;
	zc_mchannel *m;
	zc_pool *pool;
	zc_agg *agg;
	pid_t good, victim;
	int sv[2], ready[2], err;
	unsigned sent = 0;
	char c;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(zc_pool_create(8 * MiB, &pool), 0);
	assert_int_equal(zc_mchannel_create(&m), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	victim = fork();
	assert_true(victim >= 0);
	if (victim == 0) {
		zc_channel *r;
		zc_agg *held[3];

		close(sv[0]);
		if (zc_channel_open(sv[1], &r))
			_exit(60);
		for (int i = 0; i < 3; i++)
			if (zc_channel_recv(r, &held[i]))
				_exit(61);
		(void)!write(ready[1], "x", 1);
		pause();	/* holding three messages, reading no more */
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(zc_channel_open(sv[0], &w), 0);
	assert_int_equal(zc_mchannel_add(m, w), 0);
	good = fork_reader(m, KILLED_MSGS);

	for (unsigned i = 0; i < 3; i++) {
		agg = make_msg(m, pool, i);
		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
		sent++;
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	/* Now the victim lags: non-blocking sends stop at its window.  A
	 * slow good reader may say -EAGAIN first; wait and retry until the
	 * writer has been stuck for a while. */
	assert_int_equal(zc_mchannel_set_nonblock(m, 1), 0);
	for (int stuck = 0; stuck < 5;) {
		struct pollfd p = { zc_mchannel_fd(m), POLLIN, 0 };

		agg = make_msg(m, pool, sent);
		err = zc_mchannel_send(m, agg);
		zc_agg_release(agg);
		if (err == 0) {
			sent++;
			stuck = 0;
			continue;
		}
		assert_int_equal(err, -EAGAIN);
		if (poll(&p, 1, 100) == 0)
			stuck++;
	}
	/* The bound is the victim's window of unread bytes. */
	{
		size_t unread = 0;

		for (unsigned i = 3; i < sent; i++)
			unread += msg_len(i);
		assert_true(unread <= WINDOW);
		assert_true(unread + msg_len(sent) > WINDOW);
	}
	assert_true(sent < KILLED_MSGS / 2);
	assert_true(in_use(pool) > 0);
	kill(victim, SIGKILL);
	assert_int_equal(waitpid(victim, NULL, 0), victim);
	assert_int_equal(zc_mchannel_readers(m), 1);
	/* The rest goes to the good reader alone, without waiting. */
	assert_int_equal(zc_mchannel_set_nonblock(m, 0), 0);
	for (unsigned i = sent; i < KILLED_MSGS; i++) {
		agg = make_msg(m, pool, i);
		assert_int_equal(zc_mchannel_send(m, agg), 0);
		zc_agg_release(agg);
	}
	zc_mchannel_close(m);
	expect_exit0(good);
	zc_channel_reclaim(200);
	zc_pool_stats(pool, &st);
	assert_int_equal(st.bytes_in_use, 0);
	assert_true(st.detaches >= 3);	/* the victim's messages */
	zc_pool_destroy(pool);
	close(ready[0]);
	close(ready[1]);
}

/* ---------------------------------------------------------- arguments */

static void test_bad_args(void **state)
{
	zc_mchannel *m;
	zc_channel *w, *r;
	zc_agg *agg;

	(void)state;
	assert_int_equal(zc_mchannel_create(NULL), -EINVAL);
	assert_int_equal(zc_mchannel_create(&m), 0);
	assert_int_equal(zc_mchannel_add(NULL, NULL), -EINVAL);
	assert_int_equal(zc_mchannel_add(m, NULL), -EINVAL);
	assert_int_equal(zc_mchannel_send(m, NULL), -EINVAL);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_mchannel_send(NULL, agg), -EINVAL);
	assert_int_equal(zc_mchannel_send(m, agg), -EPIPE);	/* nobody */
	assert_int_equal(zc_mchannel_readers(NULL), -EINVAL);
	assert_int_equal(zc_mchannel_fd(NULL), -EINVAL);
	assert_true(zc_mchannel_fd(m) >= 0);
	assert_int_equal(zc_mchannel_set_nonblock(NULL, 1), -EINVAL);
	assert_int_equal(zc_channel_pair(&w, &r), 0);
	assert_int_equal(zc_mchannel_add(m, w), 0);
	assert_int_equal(zc_mchannel_add(m, w), -EEXIST);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_peek(NULL, &agg), -EINVAL);
	assert_null(agg);
	assert_int_equal(zc_channel_peek(r, NULL), -EINVAL);
	zc_mchannel_close(m);
	zc_mchannel_close(NULL);
	zc_channel_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_all_readers_exact),
		cmocka_unit_test(test_recycled_after_last_reader),
		cmocka_unit_test(test_late_joiner),
		cmocka_unit_test(test_reader_closes),
		cmocka_unit_test(test_slow_reader_nonblock),
		cmocka_unit_test(test_slow_reader_blocks),
		cmocka_unit_test(test_fork_readers),
		cmocka_unit_test(test_reader_killed),
		cmocka_unit_test(test_bad_args),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
