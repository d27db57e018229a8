/*
 * test_channel.c - channels: descriptors instead of bytes, buffers that
 * come back, and everything that goes wrong between two processes.
 *
 * In one process (zc_channel_pair) and across fork: aggregates of several
 * buffers and a file extent arrive byte for byte; released buffers return
 * to the sender's pool; a steady stream allocates nothing new; non-blocking
 * ends say -EAGAIN and wake poll(); a peer killed mid-stream gives -EPIPE
 * and everything it held comes back; a raw peer writing garbage into the
 * rings or the socket gets -EPROTO and never a crash; bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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

#include "zc_channel.h"
#include "../src/internal.h"
#include "../src/channel.h"
#include "../src/channel_int.h"	/* the window: tx_inring */
#include "../src/ring.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* A published buffer holding bytes [pos, pos + len) of stream `seed`. */
static zc_buf *pattern_buf(zc_pool *pool, size_t len, uint64_t seed,
			   uint64_t pos)
{
	zc_buf *b;

	assert_int_equal(zc_buf_alloc(pool, len, &b), 0);
	tu_fill(zc_buf_wptr(b), len, seed, pos);
	assert_int_equal(zc_buf_publish(b, len), 0);
	return b;
}

static size_t in_use(zc_pool *p)
{
	struct zc_pool_stats st;

	zc_pool_stats(p, &st);
	return st.bytes_in_use;
}

/* Check that agg holds exactly bytes [0, len) of stream seed. */
static void check_agg(const zc_agg *agg, size_t len, uint64_t seed)
{
	unsigned char *got = malloc(len + 1);

	assert_non_null(got);
	assert_int_equal(zc_agg_len(agg), len);
	assert_int_equal(zc_agg_copyout(agg, 0, got, len), (ssize_t)len);
	assert_int_equal(tu_check(got, len, seed, 0), -1);
	free(got);
}

/*
 * The test message: three buffer slices (one cut out of the middle of a
 * bigger buffer), then a file extent, then another buffer -- together
 * bytes [0, total) of stream `seed`.
 */
struct msg {
	zc_agg *agg;
	size_t len;
	int file_fd;
	zc_file *file;
};

static void msg_build(struct msg *m, zc_pool *pool, uint64_t seed)
{
	static const size_t part[] = { 5000, 64 * KiB, 3 * KiB };
	size_t flen = 100 * KiB + 17;
	zc_buf *b;

	memset(m, 0, sizeof(*m));
	assert_int_equal(zc_agg_create(&m->agg), 0);
	for (int i = 0; i < 3; i++) {
		/* Buffer i holds 100 junk bytes, then the slice we send. */
		assert_int_equal(zc_buf_alloc(pool, part[i] + 200, &b), 0);
		memset(zc_buf_wptr(b), 0xee, part[i] + 200);
		tu_fill((char *)zc_buf_wptr(b) + 100, part[i], seed, m->len);
		assert_int_equal(zc_buf_publish(b, part[i] + 200), 0);
		assert_int_equal(zc_agg_append_buf(m->agg, b, 100, part[i]), 0);
		zc_buf_release(b);
		m->len += part[i];
	}
	/* The file holds the stream from position 0; send its extent
	 * [m->len, m->len + flen). */
	m->file_fd = tu_pattern_file(m->len + flen, seed, NULL, 0);
	assert_true(m->file_fd >= 0);
	assert_int_equal(zc_file_from_fd(m->file_fd, &m->file), 0);
	assert_int_equal(zc_agg_append_file(m->agg, m->file, m->len, flen), 0);
	m->len += flen;
	b = pattern_buf(pool, 7 * KiB, seed, m->len);
	assert_int_equal(zc_agg_append_buf(m->agg, b, 0, 7 * KiB), 0);
	zc_buf_release(b);
	m->len += 7 * KiB;
}

static void msg_free(struct msg *m)
{
	zc_agg_release(m->agg);
	zc_file_release(m->file);
	close(m->file_fd);
}

/* ------------------------------------------------------- in one process */

static void test_pair_roundtrip(void **state)
{
	zc_channel *a, *b;
	struct zc_slice s;
	struct msg m;
	zc_pool *pool;
	zc_agg *got;

	(void)state;
	assert_int_equal(zc_pool_create(8 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_ptr_equal(zc_channel_from_fd(zc_channel_fd(a)), a);
	assert_ptr_equal(zc_channel_from_fd(zc_channel_fd(b)), b);
	msg_build(&m, pool, 11);
	assert_int_equal(zc_channel_send(a, m.agg), 0);
	/* The aggregate is left as it was. */
	assert_int_equal(zc_agg_len(m.agg), m.len);
	assert_int_equal(zc_channel_lent(a), 4);

	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(zc_agg_nslices(got), 5);
	check_agg(got, m.len, 11);
	/* Buffers arrive as the peer's memory, read-only; the file as an
	 * extent, not bytes. */
	assert_int_equal(zc_agg_slice(got, 0, &s), 0);
	assert_int_equal(s.kind, ZC_SLICE_BUF);
	assert_false(zc_pool_is_owner(zc_buf_pool(s.buf)));
	assert_int_equal(zc_pool_id(zc_buf_pool(s.buf)), zc_pool_id(pool));
	assert_int_equal(s.off, 100);
	assert_int_equal(zc_agg_slice(got, 3, &s), 0);
	assert_int_equal(s.kind, ZC_SLICE_FILE);

	/* Everything comes back once the receiver lets go. */
	msg_free(&m);
	assert_true(in_use(pool) > 0);
	zc_agg_release(got);
	assert_true(zc_channel_reclaim(0) >= 4);
	assert_int_equal(zc_channel_lent(a), 0);
	assert_int_equal(in_use(pool), 0);

	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* An empty aggregate is a message too. */
static void test_empty_message(void **state)
{
	zc_channel *a, *b;
	zc_agg *e, *got;

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_agg_create(&e), 0);
	assert_int_equal(zc_channel_send(a, e), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(zc_agg_len(got), 0);
	zc_agg_release(got);
	zc_agg_release(e);
	zc_channel_close(a);
	zc_channel_close(b);
}

/* A file that changes after it was sent reads as -ESTALE at the receiver:
 * the extent carries the sender's version. */
static void test_file_changed(void **state)
{
	zc_channel *a, *b;
	struct msg m;
	zc_pool *pool;
	zc_agg *got;
	char c;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	msg_build(&m, pool, 12);
	assert_int_equal(zc_channel_send(a, m.agg), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(ftruncate(m.file_fd, 10), 0);
	assert_int_equal(zc_agg_copyout(got, 0, &c, 1), 1);	/* a buffer */
	{
		char *all = malloc(m.len);

		assert_int_equal(zc_agg_copyout(got, 0, all, m.len), -ESTALE);
		free(all);
	}
	zc_agg_release(got);
	msg_free(&m);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/* A steady stream reuses the same memory: nothing new is allocated. */
static void test_steady_stream(void **state)
{
	struct zc_pool_stats st0, st;
	zc_channel *a, *b;
	zc_pool *pool;
	size_t peak = 0;

	(void)state;
	assert_int_equal(zc_pool_create(16 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	zc_pool_stats(pool, &st0);
	for (unsigned i = 0; i < 10000; i++) {
		zc_buf *buf;
		zc_agg *agg, *got;
		uint64_t w;

		assert_int_equal(zc_buf_alloc(pool, 64 * KiB, &buf), 0);
		memcpy(zc_buf_wptr(buf), &(uint64_t){ i }, 8);
		assert_int_equal(zc_buf_publish(buf, 64 * KiB), 0);
		assert_int_equal(zc_agg_create(&agg), 0);
		assert_int_equal(zc_agg_append_buf(agg, buf, 0, 64 * KiB), 0);
		zc_buf_release(buf);
		assert_int_equal(zc_channel_send(a, agg), 0);
		zc_agg_release(agg);
		assert_int_equal(zc_channel_recv(b, &got), 0);
		assert_int_equal(zc_agg_copyout(got, 0, &w, 8), 8);
		assert_int_equal(w, i);
		zc_agg_release(got);
		if (in_use(pool) > peak)
			peak = in_use(pool);
	}
	zc_pool_stats(pool, &st);
	/* At most a couple of buffers are in flight at any time, and all but
	 * those first ones were served from recycled memory. */
	assert_true(peak <= 2 * 64 * KiB);
	assert_int_equal(st.allocs - st0.allocs, 10000);
	assert_true(st.allocs - st.reuses <= 3);
	assert_int_equal(st.detaches, 0);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* A receiver that gave the pages to its kernel says so; the owner then
 * detaches them instead of reusing them in place. */
static void test_kref_on_return(void **state)
{
	struct zc_pool_stats st;
	zc_channel *a, *b;
	struct zc_slice s;
	zc_pool *pool;
	zc_agg *agg, *got;
	zc_buf *buf;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	buf = pattern_buf(pool, 8 * KiB, 3, 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_buf(agg, buf, 0, 8 * KiB), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(zc_agg_slice(got, 0, &s), 0);
	zc_buf_mark_kref(s.buf);
	zc_agg_release(got);
	zc_channel_reclaim(0);
	assert_true(atomic_load(&buf->flags) & ZC_BUF_KREF);
	zc_buf_release(buf);
	zc_pool_stats(pool, &st);
	assert_int_equal(st.detaches, 1);
	assert_int_equal(st.bytes_in_use, 0);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/*
 * The order memory is reused in: a buffer the peer read (it took the
 * address) comes back marked so and is reused after everything else of
 * its size, oldest first; one the peer did not read is reused first, as
 * one only we touched.  Three 8 KiB buffers sent in order x, y, z; the
 * peer reads x and z, not y, and releases them in that order.  Reusing
 * the last released first (what the cache did before) would give z, y, x.
 */
static void test_reuse_order_after_return(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_buf *sent[3], *again[3];
	uint64_t off[3];
	zc_agg *agg, *got[3];
	struct zc_slice s;
	unsigned char byte;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	for (int i = 0; i < 3; i++) {
		sent[i] = pattern_buf(pool, 8 * KiB, 5, 0);
		off[i] = sent[i]->off;
		assert_int_equal(zc_agg_create(&agg), 0);
		assert_int_equal(zc_agg_append_buf(agg, sent[i], 0, 8 * KiB), 0);
		zc_buf_release(sent[i]);
		assert_int_equal(zc_channel_send(a, agg), 0);
		zc_agg_release(agg);
		assert_int_equal(zc_channel_recv(b, &got[i]), 0);
	}
	for (int i = 0; i < 3; i += 2) {
		assert_int_equal(zc_agg_copyout(got[i], 100, &byte, 1), 1);
		assert_int_equal(zc_agg_slice(got[i], 0, &s), 0);
		assert_true(atomic_load(&s.buf->flags) & ZC_BUF_READ);
	}
	assert_int_equal(zc_agg_slice(got[1], 0, &s), 0);
	assert_false(atomic_load(&s.buf->flags) & ZC_BUF_READ);
	for (int i = 0; i < 3; i++)
		zc_agg_release(got[i]);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(zc_buf_alloc(pool, 8 * KiB, &again[i]), 0);
		/* Reset: the mark does not outlive the buffer's life. */
		assert_false(atomic_load(&again[i]->flags) & ZC_BUF_PEER_READ);
	}
	assert_int_equal(again[0]->off, off[1]);	/* not read: first */
	assert_int_equal(again[1]->off, off[0]);	/* read, oldest */
	assert_int_equal(again[2]->off, off[2]);
	for (int i = 0; i < 3; i++)
		zc_buf_release(again[i]);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* A received buffer can be sent on over another channel; it comes home
 * through both. */
static void test_forward(void **state)
{
	zc_channel *a, *b, *c, *d;
	zc_pool *pool;
	zc_agg *agg, *mid, *got;
	zc_buf *buf;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_channel_pair(&c, &d), 0);
	buf = pattern_buf(pool, 40 * KiB, 5, 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_buf(agg, buf, 0, 40 * KiB), 0);
	zc_buf_release(buf);
	assert_int_equal(zc_channel_send(a, agg), 0);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_recv(b, &mid), 0);
	assert_int_equal(zc_channel_send(c, mid), 0);
	zc_agg_release(mid);
	assert_int_equal(zc_channel_recv(d, &got), 0);
	check_agg(got, 40 * KiB, 5);
	zc_agg_release(got);
	zc_channel_reclaim(0);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_close(c);
	zc_channel_close(d);
	zc_pool_release(pool);
}

/* iol_write / iol_read on a channel descriptor move descriptors. */
static void test_iol_on_channel(void **state)
{
	struct zc_io_stats st0, st;
	zc_channel *a, *b;
	zc_agg *got = NULL;
	struct msg m;
	zc_pool *pool;
	size_t len;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	msg_build(&m, pool, 21);
	len = m.len;
	zc_io_stats(&st0);
	assert_int_equal(iol_write(zc_channel_fd(a), m.agg), (ssize_t)len);
	zc_io_stats(&st);
	assert_int_equal(st.bytes_copied, st0.bytes_copied);
	assert_int_equal(iol_read(zc_channel_fd(b), &got, len), (ssize_t)len);
	check_agg(got, len, 21);
	zc_agg_release(got);
	msg_free(&m);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* What iol_read got from a pipe (kernel buffers on the patched kernel with
 * IO-Lite, which live in no pool) goes over a channel too: copied into
 * pool buffers first, every byte the same. */
static void test_read_data_on_channel(void **state)
{
	size_t len = 200 * KiB, put = 0, got = 0;
	unsigned char *m = malloc(len);
	zc_agg *in = NULL, *out = NULL;
	zc_channel *a, *b;
	int p[2];

	(void)state;
	assert_non_null(m);
	tu_fill(m, len, 33, 0);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	while (got < len) {
		ssize_t n = put < len ? write(p[1], m + put, len - put) : 0;

		if (n > 0)
			put += (size_t)n;
		n = iol_read(p[0], &in, len - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(iol_write(zc_channel_fd(a), in), (ssize_t)len);
	assert_int_equal(iol_read(zc_channel_fd(b), &out, len), (ssize_t)len);
	zc_agg_release(in);	/* the copy is the peer's now */
	check_agg(out, len, 33);
	zc_agg_release(out);
	zc_channel_reclaim(0);
	zc_channel_close(a);
	zc_channel_close(b);
	close(p[0]);
	close(p[1]);
	free(m);
}

/* ------------------------------------------------------ non-blocking */

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static zc_agg *one_buf_agg(zc_pool *pool, size_t len, uint64_t seed)
{
	zc_buf *buf = pattern_buf(pool, len, seed, 0);
	zc_agg *agg;

	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_buf(agg, buf, 0, len), 0);
	zc_buf_release(buf);
	return agg;
}

static void test_nonblock_recv(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got = (zc_agg *)&got;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_channel_set_nonblock(b, 1), 0);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	assert_null(got);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	/* Nothing to read yet: poll must not say readable... */
	assert_false(readable(zc_channel_fd(b), 0));
	/* ...and a send wakes it (the doorbell). */
	agg = one_buf_agg(pool, 4 * KiB, 9);
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_true(readable(zc_channel_fd(b), 1000));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, 4 * KiB, 9);
	zc_agg_release(got);
	/* Drained: -EAGAIN again and poll quiet again. */
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	assert_false(readable(zc_channel_fd(b), 0));
	zc_agg_release(agg);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

static void *write_pipe_later(void *arg)
{
	usleep(50000);
	(void)!write(*(int *)arg, "x", 1);
	return NULL;
}

/* zc_channel_set_interrupt: a blocking recv or send that would wait ends
 * with -EINTR once the descriptor is readable -- whether it was readable
 * before the call or turns readable while the call sleeps -- and what is
 * already there still comes first; -1 restores the plain wait. */
static void test_interrupt_fd(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got = NULL;
	pthread_t tid;
	int p[2], sent = 0, err;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(zc_channel_set_interrupt(b, p[0]), 0);
	/* Asleep in recv, then interrupted. */
	assert_int_equal(pthread_create(&tid, NULL, write_pipe_later, &p[1]), 0);
	assert_int_equal(zc_channel_recv(b, &got), -EINTR);
	assert_null(got);
	pthread_join(tid, NULL);
	/* Still readable: interrupted at once, the channel unharmed. */
	assert_int_equal(zc_channel_recv(b, &got), -EINTR);
	agg = one_buf_agg(pool, 4 * KiB, 3);
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);	/* data first */
	check_agg(got, 4 * KiB, 3);
	zc_agg_release(got);
	/* A send waiting for room: nothing of the message goes. */
	assert_int_equal(zc_channel_set_nonblock(a, 1), 0);
	while ((err = zc_channel_send(a, agg)) == 0)
		sent++;
	assert_int_equal(err, -EAGAIN);
	assert_int_equal(zc_channel_set_nonblock(a, 0), 0);
	assert_int_equal(zc_channel_set_interrupt(a, p[0]), 0);
	assert_int_equal(zc_channel_send(a, agg), -EINTR);
	assert_int_equal(zc_channel_set_nonblock(b, 1), 0);
	for (int i = 0; i < sent; i++) {
		assert_int_equal(zc_channel_recv(b, &got), 0);
		check_agg(got, 4 * KiB, 3);
		zc_agg_release(got);
	}
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	/* Cleared: a blocking recv waits for the message again. */
	assert_int_equal(zc_channel_set_nonblock(b, 0), 0);
	assert_int_equal(zc_channel_set_interrupt(b, -1), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	assert_int_equal(zc_channel_set_interrupt(NULL, p[0]), -EINVAL);
	assert_int_equal(zc_channel_set_interrupt(b, -2), -EINVAL);
	zc_agg_release(agg);
	zc_channel_close(a);
	zc_channel_close(b);
	close(p[0]);
	close(p[1]);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/* A channel pair in this process and a pool of `size` for its messages;
 * the ends named in `nonblock` (NB_A, NB_B) are non-blocking. */
#define NB_A 1u
#define NB_B 2u
static zc_pool *pair_with_pool(size_t size, zc_channel **a, zc_channel **b,
			       unsigned nonblock)
{
	zc_pool *pool;

	assert_int_equal(zc_pool_create(size, &pool), 0);
	assert_int_equal(zc_channel_pair(a, b), 0);
	if (nonblock & NB_A)
		assert_int_equal(zc_channel_set_nonblock(*a, 1), 0);
	if (nonblock & NB_B)
		assert_int_equal(zc_channel_set_nonblock(*b, 1), 0);
	return pool;
}

/* Both ends closed, every buffer back in the pool, the pool released. */
static void close_pair(zc_channel *a, zc_channel *b, zc_pool *pool)
{
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/* A full ring: -EAGAIN for the writer, POLLIN once the reader made room. */
static void test_nonblock_send_full(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got;
	unsigned sent = 0;
	int err;

	(void)state;
	pool = pair_with_pool(4 * MiB, &a, &b, NB_A);
	agg = one_buf_agg(pool, 4 * KiB, 1);
	while ((err = zc_channel_send(a, agg)) == 0)
		sent++;
	assert_int_equal(err, -EAGAIN);
	/* One slot per one-slice message (its end is a flag on it); 256
	 * messages of 4 KiB are also exactly the 1 MiB window. */
	assert_int_equal(sent, ZC_RING_DATA_CAP);
	assert_false(readable(zc_channel_fd(a), 0));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	assert_true(readable(zc_channel_fd(a), 1000));
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(zc_channel_flush(a), 0);	/* nothing pending */
	zc_agg_release(agg);
	close_pair(a, b, pool);
}

/*
 * An event loop that waits for room and for data on one channel: its send
 * said -EAGAIN (ring full), then its recv says -EAGAIN (nothing for it).
 * A doorbell one of them needs must not be taken by the other, or the
 * loop sleeps with the channel ready: tests/fastcgi.bats's 100 MiB upload
 * once waited 60 s for a 504 so -- zchttpd's link had its send refused,
 * the application made room and rang, and the link's recv drained that
 * bell before it went to sleep.
 */
static void fill_ring(zc_channel *a, zc_agg *agg)
{
	int err;

	while ((err = zc_channel_send(a, agg)) == 0)
		;
	assert_int_equal(err, -EAGAIN);
}

/* The reader made room after the writer's send said -EAGAIN; the writer's
 * recv then finds no data: its descriptor must stay readable. */
static void test_nonblock_room_bell_survives_recv(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got;

	(void)state;
	pool = pair_with_pool(4 * MiB, &a, &b, NB_A);
	agg = one_buf_agg(pool, 4 * KiB, 3);
	fill_ring(a, agg);
	assert_int_equal(zc_channel_recv(b, &got), 0);	/* room, a bell */
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);
	assert_true(readable(zc_channel_fd(a), 1000));
	assert_int_equal(zc_channel_send(a, agg), 0);
	/* Both waits satisfied and the bell handled: quiet again. */
	fill_ring(a, agg);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);
	assert_false(readable(zc_channel_fd(a), 0));
	zc_agg_release(agg);
	close_pair(a, b, pool);
}

/* The peer sent data after the writer's recv said -EAGAIN; the writer's
 * next send still finds no room: its descriptor must stay readable, and
 * the data is there. */
static void test_nonblock_data_bell_survives_send(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *reply, *got;

	(void)state;
	pool = pair_with_pool(4 * MiB, &a, &b, NB_A | NB_B);
	agg = one_buf_agg(pool, 4 * KiB, 4);
	reply = one_buf_agg(pool, 4 * KiB, 6);
	fill_ring(a, agg);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);
	assert_int_equal(zc_channel_send(b, reply), 0);	/* data, a bell */
	assert_int_equal(zc_channel_send(a, agg), -EAGAIN);
	assert_true(readable(zc_channel_fd(a), 1000));
	assert_int_equal(zc_channel_recv(a, &got), 0);
	check_agg(got, 4 * KiB, 6);
	zc_agg_release(got);
	zc_agg_release(reply);
	zc_agg_release(agg);
	close_pair(a, b, pool);
}

/* The room bell can sit in front of a pool the peer shares: receiving
 * the message that uses the pool must take the bell to reach the share.
 * The channel then asks the peer for another bell, which the peer sends
 * the next time it looks at its socket, so the writer still wakes. */
static void test_nonblock_room_bell_behind_a_share(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool, *other;
	zc_agg *agg, *reply, *got;

	(void)state;
	pool = pair_with_pool(4 * MiB, &a, &b, NB_A | NB_B);
	assert_int_equal(zc_pool_create(1 * MiB, &other), 0);
	agg = one_buf_agg(pool, 4 * KiB, 1);
	reply = one_buf_agg(other, 4 * KiB, 2);	/* a pool a has not seen */
	fill_ring(a, agg);
	/* b reads everything (room: bells), answers from a new pool (the
	 * share, then the data) and has nothing left to read. */
	while (zc_channel_recv(b, &got) == 0)
		zc_agg_release(got);
	assert_int_equal(zc_channel_send(b, reply), 0);
	assert_int_equal(zc_channel_recv(a, &got), 0);	/* takes the bells */
	check_agg(got, 4 * KiB, 2);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);
	/* b, waiting for data, looks at its socket and rings back. */
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	assert_true(readable(zc_channel_fd(a), 1000));
	assert_int_equal(zc_channel_send(a, agg), 0);
	zc_agg_release(reply);
	zc_agg_release(agg);
	close_pair(a, b, pool);
	zc_pool_release(other);
}

/* --------------------------------------------- longer than the ring */

struct bigrecv {
	zc_channel *ch;
	zc_agg *got;
	int err;
};

static void *bigrecv_main(void *arg)
{
	struct bigrecv *r = arg;

	r->err = zc_channel_recv(r->ch, &r->got);
	return NULL;
}

/* A blocking send of more slices than the ring holds streams through it
 * while the peer reads. */
static void test_message_longer_than_ring(void **state)
{
	const unsigned n = 3 * ZC_RING_DATA_CAP + 7;
	struct bigrecv r = { 0 };
	zc_channel *a, *b;
	pthread_t tid;
	zc_pool *pool;
	zc_agg *agg;

	(void)state;
	assert_int_equal(zc_pool_create(16 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	for (unsigned i = 0; i < n; i++) {
		zc_buf *buf = pattern_buf(pool, 4096, 77, (uint64_t)i * 4096);

		assert_int_equal(zc_agg_append_buf(agg, buf, 0, 4096), 0);
		zc_buf_release(buf);
	}
	r.ch = b;
	assert_int_equal(pthread_create(&tid, NULL, bigrecv_main, &r), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	pthread_join(tid, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(zc_agg_nslices(r.got), n);
	check_agg(r.got, (size_t)n * 4096, 77);
	zc_agg_release(r.got);
	zc_agg_release(agg);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* An aggregate of n distinct 4 KiB buffers (adjacent slices of one
 * buffer would merge): bytes [0, n * 4 KiB) of stream seed. */
static zc_agg *many_slices(zc_pool *pool, unsigned n, uint64_t seed)
{
	zc_agg *agg;

	assert_int_equal(zc_agg_create(&agg), 0);
	for (unsigned i = 0; i < n; i++) {
		zc_buf *buf = pattern_buf(pool, 4096, seed, (uint64_t)i * 4096);

		assert_int_equal(zc_agg_append_buf(agg, buf, 0, 4096), 0);
		zc_buf_release(buf);
	}
	return agg;
}

/*
 * Non-blocking, a message longer than the ring (three rings' worth of
 * slices, three windows' worth of bytes): refused whole while the ring
 * holds anything (nothing of it sent), taken whole once it is empty; then
 * its rest moves on as the reader makes room -- never more than a window
 * of bytes on the ring past the first descriptor, the writer woken through
 * POLLIN -- and every new send says -EAGAIN until it has gone.  The reader
 * gets one message, whole and in order, then the next one.
 */
static void test_nonblock_message_longer_than_ring(void **state)
{
	const unsigned n = 3 * ZC_RING_DATA_CAP + 5;
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *big, *small, *got;
	unsigned rounds = 0;
	int err;

	(void)state;
	pool = pair_with_pool(16 * MiB, &a, &b, NB_A | NB_B);
	big = many_slices(pool, n, 91);
	small = one_buf_agg(pool, 4 * KiB, 5);

	/* Something on the ring: all or nothing means nothing. */
	assert_int_equal(zc_channel_send(a, small), 0);
	assert_int_equal(zc_channel_send(a, big), -EAGAIN);
	assert_int_equal(zc_channel_flush(a), 0);	/* it kept nothing */
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, 4 * KiB, 5);
	zc_agg_release(got);

	/* An empty ring: taken, the rest kept. */
	assert_int_equal(zc_channel_send(a, big), 0);
	assert_int_equal(zc_channel_send(a, small), -EAGAIN);
	assert_int_equal(zc_channel_flush(a), -EAGAIN);
	for (;;) {
		/* The window: 256 slices of 4 KiB are one 1 MiB window. */
		assert_true(a->tx_inring <= MiB);
		err = zc_channel_recv(b, &got);
		if (err == 0)
			break;
		assert_int_equal(err, -EAGAIN);	/* a part, kept */
		/* The reader made room: the writer hears it. */
		assert_true(readable(zc_channel_fd(a), 1000));
		err = zc_channel_flush(a);
		assert_true(err == 0 || err == -EAGAIN);
		assert_true(++rounds < 100);
	}
	assert_true(rounds >= 2);	/* it did stream */
	assert_int_equal(zc_agg_nslices(got), n);
	check_agg(got, (size_t)n * 4096, 91);
	zc_agg_release(got);
	assert_int_equal(zc_channel_flush(a), 0);

	/* The next message follows it. */
	assert_int_equal(zc_channel_send(a, small), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, 4 * KiB, 5);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);

	zc_agg_release(small);
	zc_agg_release(big);
	close_pair(a, b, pool);
}

/* A non-blocking writer that only receives after a long message still
 * gets it out: recv moves the rest on, so a reader that answers once it
 * has the whole message is answered. */
static void test_nonblock_long_message_then_recv(void **state)
{
	const unsigned n = 2 * ZC_RING_DATA_CAP + 3;
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *big, *got = NULL, *reply;
	int err = -EAGAIN;

	(void)state;
	pool = pair_with_pool(16 * MiB, &a, &b, NB_A | NB_B);
	big = many_slices(pool, n, 17);
	assert_int_equal(zc_channel_send(a, big), 0);
	for (unsigned i = 0; i < 100 && err == -EAGAIN; i++) {
		err = zc_channel_recv(b, &got);
		if (err == -EAGAIN)
			assert_int_equal(zc_channel_recv(a, &reply), -EAGAIN);
	}
	assert_int_equal(err, 0);
	check_agg(got, (size_t)n * 4096, 17);
	zc_agg_release(got);
	assert_int_equal(zc_channel_flush(a), 0);
	zc_agg_release(big);
	close_pair(a, b, pool);
}

/* --------------------------------------------------- SOCK_STREAM */

struct opener {
	int sock;
	zc_channel *ch;
	int err;
};

static void *opener_main(void *arg)
{
	struct opener *o = arg;

	o->err = zc_channel_open(o->sock, &o->ch);
	return NULL;
}

/* zc_channel_open on a stream socket pair (the handshake needs both ends
 * at once, so one runs in a thread). */
/* A pool for a test's messages and a connected UNIX stream pair. */
static zc_pool *stream_pair(int sv[2])
{
	zc_pool *pool;

	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	return pool;
}

/* A channel over a stream socket pair, both ends opened (o.ch on sv[1],
 * *a on sv[0]); returns the pool stream_pair made. */
static zc_pool *stream_channels(int sv[2], zc_channel **a, struct opener *o)
{
	pthread_t tid;
	zc_pool *pool = stream_pair(sv);

	o->sock = sv[1];
	assert_int_equal(pthread_create(&tid, NULL, opener_main, o), 0);
	assert_int_equal(zc_channel_open(sv[0], a), 0);
	pthread_join(tid, NULL);
	assert_int_equal(o->err, 0);
	return pool;
}

static void test_stream_socket(void **state)
{
	struct opener o = { 0 };
	zc_channel *a;
	struct msg m;
	zc_pool *pool;
	zc_agg *got;
	int sv[2];

	(void)state;
	pool = stream_channels(sv, &a, &o);
	for (int round = 0; round < 3; round++) {
		msg_build(&m, pool, 30 + round);
		assert_int_equal(zc_channel_send(a, m.agg), 0);
		assert_int_equal(zc_channel_recv(o.ch, &got), 0);
		check_agg(got, m.len, 30 + round);
		zc_agg_release(got);
		msg_free(&m);
	}
	zc_channel_close(a);
	assert_int_equal(zc_channel_recv(o.ch, &got), -EPIPE);
	zc_channel_close(o.ch);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/*
 * Doorbells are taken in runs (channel_ctl.c reads 256 bytes at a time): a
 * burst of them ahead of a pool share on a stream socket, a burst longer
 * than one read, and one after which the read's end cuts the share in two
 * (240 bells + a 24-byte share), must neither hide the share nor eat into
 * it; every message arrives.
 */
static void test_doorbell_runs(void **state)
{
	static const unsigned char bells[300] = { [0 ... 299] = 0xD0 };
	static const size_t burst[] = { 1, 63, 64, 200, 240, 255, 256, 300 };
	struct opener o = { 0 };
	zc_channel *a;
	struct msg m;
	zc_pool *pool, *fresh;
	zc_agg *got;
	int sv[2];

	(void)state;
	pool = stream_channels(sv, &a, &o);
	assert_int_equal(zc_channel_set_nonblock(o.ch, 1), 0);
	for (int round = 0; round < (int)(sizeof(burst) / sizeof(burst[0]));
	     round++) {
		/* Rings from a (as if it had woken us that often), then a
		 * message from a pool o.ch has never seen: its share comes
		 * after the bells on the socket. */
		size_t nb = burst[round];

		assert_int_equal(write(sv[0], bells, nb), (ssize_t)nb);
		assert_int_equal(zc_pool_create(1 * MiB, &fresh), 0);
		msg_build(&m, fresh, 40 + round);
		assert_int_equal(zc_channel_send(a, m.agg), 0);
		assert_int_equal(zc_channel_recv(o.ch, &got), 0);
		check_agg(got, m.len, 40 + round);
		zc_agg_release(got);
		msg_free(&m);
		/* Bells alone: drained, and then there is nothing to read. */
		assert_int_equal(write(sv[0], bells, nb), (ssize_t)nb);
		for (int i = 0; i < 4; i++)
			assert_int_equal(zc_channel_recv(o.ch, &got), -EAGAIN);
		{
			char c;

			assert_int_equal(recv(sv[1], &c, 1, MSG_PEEK | MSG_DONTWAIT), -1);
			assert_int_equal(errno, EAGAIN);
		}
		zc_channel_reclaim(0);
		zc_pool_release(fresh);
	}
	zc_channel_close(a);
	assert_int_equal(zc_channel_set_nonblock(o.ch, 0), 0);
	assert_int_equal(zc_channel_recv(o.ch, &got), -EPIPE);
	zc_channel_close(o.ch);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/* Corked sends owe the waiting peer its wake-up: no bell until
 * zc_channel_ring (or uncorking), then one for every message sent, and
 * nothing when nothing is owed. */
static void test_cork_owes_the_bell(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool = pair_with_pool(4 * MiB, &a, &b, NB_B);
	zc_agg *m1 = one_buf_agg(pool, 4 * KiB, 21);
	zc_agg *m2 = one_buf_agg(pool, 8 * KiB, 22);
	zc_agg *got;

	(void)state;
	/* The pool's share goes on the socket with the first message (b's
	 * descriptor turns readable for it): out of the way first. */
	assert_int_equal(zc_channel_send(a, m1), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);	/* b waits */
	assert_false(readable(zc_channel_fd(b), 0));
	zc_channel_cork(a, 1);
	assert_int_equal(zc_channel_send(a, m1), 0);
	assert_int_equal(zc_channel_send(a, m2), 0);
	assert_false(readable(zc_channel_fd(b), 50));
	zc_channel_ring(a);
	assert_true(readable(zc_channel_fd(b), 1000));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, 4 * KiB, 21);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, 8 * KiB, 22);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	/* Nothing owed: no bell. */
	zc_channel_ring(a);
	assert_false(readable(zc_channel_fd(b), 50));
	/* Uncorking rings what is owed; uncorked sends ring at once. */
	assert_int_equal(zc_channel_send(a, m1), 0);
	assert_false(readable(zc_channel_fd(b), 50));
	zc_channel_cork(a, 0);
	assert_true(readable(zc_channel_fd(b), 1000));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	assert_int_equal(zc_channel_recv(b, &got), -EAGAIN);
	assert_int_equal(zc_channel_send(a, m2), 0);
	assert_true(readable(zc_channel_fd(b), 1000));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	zc_agg_release(m1);
	zc_agg_release(m2);
	close_pair(a, b, pool);
}

struct echo_arg {
	zc_channel *ch;
	int err;
};

/* Receive one message (blocking: it sleeps until woken) and send it back. */
static void *echo_main(void *p)
{
	struct echo_arg *e = p;
	zc_agg *got;

	e->err = zc_channel_recv(e->ch, &got);
	if (!e->err) {
		e->err = zc_channel_send(e->ch, got);
		zc_agg_release(got);
	}
	return NULL;
}

/* A corked side that blocks on the channel rings first: the peer asleep
 * in its own wait gets the request corked sends left it, and answers
 * (without that, both sides would sleep for ever). */
static void test_cork_blocking_wait_rings(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool = pair_with_pool(4 * MiB, &a, &b, 0);
	zc_agg *m = one_buf_agg(pool, 4 * KiB, 23), *got;
	struct echo_arg e = { .ch = b };
	pthread_t tid;

	(void)state;
	/* The pool's share (a message on the socket, which wakes b by
	 * itself) goes first. */
	assert_int_equal(zc_channel_send(a, m), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	zc_agg_release(got);
	assert_int_equal(pthread_create(&tid, NULL, echo_main, &e), 0);
	usleep(100 * 1000);	/* the echo side is asleep in its wait */
	zc_channel_cork(a, 1);
	assert_int_equal(zc_channel_send(a, m), 0);
	alarm(10);		/* a lost wake-up fails here, not in CI's timeout */
	assert_int_equal(zc_channel_recv(a, &got), 0);
	alarm(0);
	pthread_join(tid, NULL);
	assert_int_equal(e.err, 0);
	check_agg(got, 4 * KiB, 23);
	zc_agg_release(got);
	zc_agg_release(m);
	close_pair(a, b, pool);
}

/* zc_channel_open_nb: our half of the handshake goes out at once; the
 * channel is usable (-EAGAIN until then) when the peer's half arrives,
 * without ever blocking -- an event loop opens channels this way.  A peer
 * that is not a channel, and a close before the handshake, are clean. */
static void test_open_nonblocking(void **state)
{
	struct msg m;
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *got;
	int sv[2];

	(void)state;
	pool = stream_pair(sv);
	assert_int_equal(zc_channel_open_nb(sv[0], &a), 0);
	assert_int_equal(zc_channel_handshake(a), -EAGAIN);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);
	msg_build(&m, pool, 77);
	assert_int_equal(zc_channel_send(a, m.agg), -EAGAIN);
	/* The peer opens the usual way: our HELLO is already there. */
	assert_int_equal(zc_channel_open(sv[1], &b), 0);
	struct pollfd p = { .fd = zc_channel_fd(a), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_int_equal(zc_channel_handshake(a), 0);
	assert_int_equal(zc_channel_handshake(a), 0);	/* done is done */
	assert_ptr_equal(zc_channel_from_fd(sv[0]), a);
	assert_int_equal(zc_channel_send(a, m.agg), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	check_agg(got, m.len, 77);
	zc_agg_release(got);
	msg_free(&m);
	assert_int_equal(zc_channel_recv(a, &got), -EAGAIN);	/* non-blocking */
	zc_channel_close(a);
	zc_channel_close(b);

	/* A peer that speaks something else. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(zc_channel_open_nb(sv[0], &a), 0);
	assert_int_equal(write(sv[1], "\x01\x01\x00\x01\x00\x08\x00\x00", 8), 8);
	assert_int_equal(zc_channel_handshake(a), -EPROTO);
	assert_int_equal(zc_channel_recv(a, &got), -EPROTO);
	zc_channel_close(a);
	close(sv[1]);

	/* Closed before the peer answered; and a peer that hung up. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(zc_channel_open_nb(sv[0], &a), 0);
	zc_channel_close(a);
	assert_int_equal(fcntl(sv[0], F_GETFD), -1);	/* closed with it */
	close(sv[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(zc_channel_open_nb(sv[0], &a), 0);
	close(sv[1]);
	assert_int_equal(zc_channel_handshake(a), -EPIPE);
	zc_channel_close(a);

	/* Not a socket at all: refused, the descriptor stays the caller's. */
	assert_int_equal(pipe(sv), 0);
	assert_true(zc_channel_open_nb(sv[0], &a) < 0);
	assert_null(a);
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(zc_channel_open_nb(-1, NULL), -EINVAL);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_pool_release(pool);
}

/* Borrowed memory is never lent to the peer: it travels as copies, so
 * the sender may reuse it the moment send returns. */
static void test_borrowed_copied(void **state)
{
	char head[32] = "HTTP/1.1 200 OK\r\n\r\n";
	zc_channel *a, *b;
	zc_agg *agg, *got;
	zc_buf *body;
	char out[64];

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_mem(agg, head, 19), 0);
	assert_int_equal(zc_buf_from_bytes(NULL, "body", 4, &body), 0);
	assert_int_equal(zc_agg_append_buf(agg, body, 0, 4), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	memset(head, 'X', sizeof(head));
	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(zc_agg_len(got), 23);
	assert_int_equal(zc_agg_copyout(got, 0, out, 23), 23);
	assert_memory_equal(out, "HTTP/1.1 200 OK\r\n\r\nbody", 23);
	zc_agg_release(got);
	zc_agg_release(agg);
	zc_buf_release(body);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_reclaim(0);
}

/* Parts of one buffer that arrive as separate (foreign) buffers -- a
 * document cut into records with headers between -- are sent to a socket
 * with one sendfile when they are adjacent again. */
static void test_received_parts_one_sendfile(void **state)
{
	struct zc_io_stats before, after;
	struct tu_reader r;
	zc_channel *a, *b;
	zc_agg *agg, *got, *tail, *mid;
	zc_buf *doc, *hdr;
	int wfd = -1, rfd = -1;

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	doc = pattern_buf(NULL, 100 * KiB, 91, 0);
	assert_int_equal(zc_buf_from_bytes(NULL, "hdr", 3, &hdr), 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_buf(agg, doc, 0, 60 * KiB), 0);
	assert_int_equal(zc_agg_append_buf(agg, hdr, 0, 3), 0);
	assert_int_equal(zc_agg_append_buf(agg, doc, 60 * KiB, 40 * KiB), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(zc_channel_recv(b, &got), 0);
	assert_int_equal(zc_agg_nslices(got), 3);
	/* Cut the header out: the two parts are adjacent again. */
	assert_int_equal(zc_agg_split(got, 60 * KiB, &mid), 0);
	assert_int_equal(zc_agg_split(mid, 3, &tail), 0);
	assert_int_equal(zc_agg_concat(got, tail), 0);
	assert_int_equal(zc_agg_nslices(got), 2);	/* two buffers */
	assert_int_equal(tu_pair(TU_TCP, &wfd, &rfd), 0);
	assert_int_equal(tu_reader_start(&r, rfd, 0), 0);
	zc_io_stats(&before);
	assert_int_equal(iol_write(wfd, got), (ssize_t)(100 * KiB));
	zc_io_stats(&after);
	assert_int_equal(after.calls - before.calls, 1);	/* one sendfile */
	assert_int_equal(after.bytes_by_reference - before.bytes_by_reference,
			 100 * KiB);
	close(wfd);
	tu_reader_join(&r);
	close(rfd);
	assert_int_equal(r.len, 100 * KiB);
	assert_int_equal(tu_check(r.data, r.len, 91, 0), -1);
	tu_reader_free(&r);
	zc_agg_release(got);
	zc_agg_release(mid);
	zc_agg_release(tail);
	zc_agg_release(agg);
	zc_buf_release(doc);
	zc_buf_release(hdr);
	zc_channel_close(a);
	zc_channel_close(b);
	zc_channel_reclaim(0);
}

/* ------------------------------------------------------- across fork */

#define FORK_MSGS 200

/* Child: receive FORK_MSGS messages, check them, answer with one of its
 * own.  Exit status says what went wrong. */
static int fork_child(zc_channel *ch)
{
	zc_pool *mine;
	zc_agg *got, *reply;
	zc_buf *buf;

	for (int i = 0; i < FORK_MSGS; i++) {
		size_t len = 4 * KiB + (size_t)i * 512;
		unsigned char *bytes = malloc(len);

		if (zc_channel_recv(ch, &got) || zc_agg_len(got) != len)
			return 2;
		if (zc_agg_copyout(got, 0, bytes, len) != (ssize_t)len ||
		    tu_check(bytes, len, 1000 + i, 0) != -1)
			return 3;
		free(bytes);
		zc_agg_release(got);
	}
	if (zc_pool_create(1 * MiB, &mine) || zc_agg_create(&reply))
		return 4;
	buf = pattern_buf(mine, 12345, 4242, 0);
	if (zc_agg_append_buf(reply, buf, 0, 12345) ||
	    zc_channel_send(ch, reply))
		return 5;
	zc_buf_release(buf);
	zc_agg_release(reply);
	/* Wait until the parent gave our buffer back. */
	for (int k = 0; k < 200 && zc_channel_lent(ch) > 0; k++)
		zc_channel_reclaim(50);
	if (zc_channel_lent(ch))
		return 6;
	zc_channel_close(ch);
	return 0;
}

static void test_fork(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *got;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_channel_close(a);	/* the parent's end: silent */
		_exit(fork_child(b));
	}
	zc_channel_close(b);
	assert_int_equal(zc_pool_create(32 * MiB, &pool), 0);
	for (int i = 0; i < FORK_MSGS; i++) {
		size_t len = 4 * KiB + (size_t)i * 512;
		zc_agg *agg = one_buf_agg(pool, len, 1000 + i);

		assert_int_equal(zc_channel_send(a, agg), 0);
		zc_agg_release(agg);
	}
	assert_int_equal(zc_channel_recv(a, &got), 0);
	check_agg(got, 12345, 4242);
	zc_agg_release(got);	/* goes back to the child */
	assert_int_equal(zc_channel_recv(a, &got), -EPIPE);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(a);
	zc_pool_release(pool);
}

/* A peer killed with SIGKILL mid-stream: -EPIPE on both calls, and what
 * it held comes back (detached, since it might have been in a pipe). */
static void test_peer_killed(void **state)
{
	struct zc_pool_stats st;
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got;
	pid_t pid;
	int err = 0, ready[2];
	char c;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_agg *held[5];

		zc_channel_close(a);
		for (int i = 0; i < 5; i++)
			if (zc_channel_recv(b, &held[i]))
				_exit(2);
		(void)!write(ready[1], "x", 1);
		pause();	/* holding five messages */
		_exit(0);
	}
	zc_channel_close(b);
	assert_int_equal(zc_pool_create(8 * MiB, &pool), 0);
	agg = one_buf_agg(pool, 16 * KiB, 8);
	for (int i = 0; i < 10; i++)
		assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(zc_channel_lent(a), 10);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	for (int i = 0; i < 1000 && err == 0; i++)
		err = zc_channel_send(a, agg);
	assert_int_equal(err, -EPIPE);
	assert_int_equal(zc_channel_recv(a, &got), -EPIPE);
	assert_int_equal(zc_channel_lent(a), 0);
	zc_agg_release(agg);
	zc_pool_stats(pool, &st);
	assert_int_equal(st.bytes_in_use, 0);
	assert_true(st.detaches >= 1);
	zc_channel_close(a);
	zc_pool_release(pool);
	close(ready[0]);
	close(ready[1]);
}

/* Closing while the peer still holds our buffers: the peer reads what was
 * sent, gets -EPIPE, and the buffers come back when it lets go. */
static void test_close_while_lent(void **state)
{
	zc_channel *a, *b;
	zc_pool *pool;
	zc_agg *agg, *got1, *got2;

	(void)state;
	assert_int_equal(zc_pool_create(4 * MiB, &pool), 0);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	agg = one_buf_agg(pool, 8 * KiB, 2);
	assert_int_equal(zc_channel_send(a, agg), 0);
	assert_int_equal(zc_channel_send(a, agg), 0);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_recv(b, &got1), 0);
	zc_channel_close(a);	/* lingers: two buffers are out */
	assert_true(in_use(pool) > 0);
	assert_int_equal(zc_channel_recv(b, &got2), 0);
	check_agg(got2, 8 * KiB, 2);
	zc_agg_release(got2);
	assert_int_equal(zc_channel_recv(b, &got2), -EPIPE);
	assert_null(got2);
	check_agg(got1, 8 * KiB, 2);	/* still intact */
	zc_agg_release(got1);
	zc_channel_reclaim(0);
	assert_int_equal(in_use(pool), 0);
	zc_channel_close(b);
	zc_pool_release(pool);
}

/* ---------------------------------------------------- a raw peer */

/* Our side of the protocol, written by hand, to send what a correct peer
 * never would. */
struct raw {
	int sock;		/* the raw end */
	zc_channel *ch;		/* the libzc end under test */
	struct zc_ring_shm *shm;
	struct zc_ring_ent *data;
	struct zc_ret_ent *ret;
	size_t len;
	struct zc_ring_shm *peer;	/* the libzc end's region */
};

struct raw_hello {
	uint8_t type, version;
	uint16_t pad;
	uint32_t data_cap, ret_cap;
	uint32_t pad2;
	uint64_t region_size;
};

/* Read the libzc end's HELLO and map its region. */
static struct zc_ring_shm *map_hello(int sock, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct raw_hello h;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	void *m;
	int fd;

	assert_int_equal(recvmsg(sock, &mh, 0), (ssize_t)sizeof(h));
	assert_non_null(CMSG_FIRSTHDR(&mh));
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	assert_int_equal(h.region_size, len);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	close(fd);
	return m;
}

/* Handshake from the raw side: our region (sealed unless told not to),
 * then zc_channel_open on the other end. */
static int raw_open(struct raw *r, bool seal, uint32_t data_cap)
{
	struct raw_hello h = { .type = 0xC1, .version = ZC_RING_VERSION,
			       .data_cap = data_cap,
			       .ret_cap = ZC_RING_RET_CAP };
	int sv[2], fd, err;

	memset(r, 0, sizeof(*r));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	r->len = zc_ring_region_size(ZC_RING_DATA_CAP, ZC_RING_RET_CAP);
	h.region_size = r->len;
	fd = memfd_create("raw", MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)r->len), 0);
	if (seal)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	r->shm = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(r->shm != MAP_FAILED);
	r->shm->magic = ZC_RING_MAGIC;
	r->data = (void *)((char *)r->shm + zc_ring_data_off());
	r->ret = (void *)((char *)r->shm + zc_ring_ret_off(ZC_RING_DATA_CAP));
	assert_int_equal(zc_sock_send(sv[1], &h, sizeof(h), fd, 0), 0);
	close(fd);
	r->sock = sv[1];
	err = zc_channel_open(sv[0], &r->ch);
	if (err) {
		close(sv[0]);
		return err;
	}
	r->peer = map_hello(r->sock, r->len);
	return 0;
}

static void raw_close(struct raw *r)
{
	zc_channel_close(r->ch);
	close(r->sock);
	munmap(r->shm, r->len);
	if (r->peer)
		munmap(r->peer, r->len);
}

/* Publish entries on the raw side's data ring. */
static void raw_put(struct raw *r, const struct zc_ring_ent *e, unsigned n)
{
	uint64_t tail = atomic_load(&r->shm->data_tail.v);

	for (unsigned i = 0; i < n; i++)
		r->data[(tail + i) % ZC_RING_DATA_CAP] = e[i];
	atomic_store(&r->shm->data_tail.v, tail + n);
}

static void expect_proto(struct raw *r)
{
	zc_agg *got = NULL;

	assert_int_equal(zc_channel_set_nonblock(r->ch, 1), 0);
	assert_int_equal(zc_channel_recv(r->ch, &got), -EPROTO);
	assert_null(got);
	/* Sticky: the stream is no longer trustworthy. */
	assert_int_equal(zc_channel_recv(r->ch, &got), -EPROTO);
}

static void test_raw_good(void **state)
{
	struct zc_ring_ent e[2] = { { .type = ZC_ENT_BUF }, { .type = ZC_ENT_MSG_END } };
	struct raw r;
	zc_pool *pool;
	zc_buf *buf;
	zc_agg *got;

	(void)state;
	/* First the well-formed case, so the failures below are real. */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	assert_int_equal(zc_pool_create(1 * MiB, &pool), 0);
	buf = pattern_buf(pool, 8192, 55, 0);
	assert_int_equal(zc_pool_send(r.sock, pool), 0);
	e[0].pool = zc_pool_id(pool);
	e[0].off = buf->off;
	e[0].len = 8192;
	e[0].gen = buf->gen;
	e[0].token = 0x1234;
	e[0].soff = 0;
	e[0].slen = 8192;
	raw_put(&r, e, 2);
	assert_int_equal(zc_channel_recv(r.ch, &got), 0);
	check_agg(got, 8192, 55);
	zc_agg_release(got);
	/* The token came back on the libzc end's return ring. */
	assert_int_equal(atomic_load(&r.peer->ret_tail.v), 1);
	{
		struct zc_ret_ent *ret = (void *)((char *)r.peer +
				zc_ring_ret_off(ZC_RING_DATA_CAP));

		assert_int_equal(ret[0].type, ZC_ENT_RETURN);
		assert_int_equal(ret[0].token, 0x1234);
	}
	zc_buf_release(buf);
	raw_close(&r);
	zc_pool_release(pool);
}

static void test_raw_unknown_pool(void **state)
{
	struct zc_ring_ent e[2] = {
		{ .type = ZC_ENT_BUF, .pool = 999999, .len = 4096, .slen = 4096 },
		{ .type = ZC_ENT_MSG_END },
	};
	struct raw r;

	(void)state;
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	raw_put(&r, e, 2);
	expect_proto(&r);
	raw_close(&r);
}

static void test_raw_out_of_range(void **state)
{
	struct zc_ring_ent e[2] = { { .type = ZC_ENT_BUF }, { .type = ZC_ENT_MSG_END } };
	struct raw r;
	zc_pool *pool;

	(void)state;
	assert_int_equal(zc_pool_create(1 * MiB, &pool), 0);
	/* Buffer beyond the end of the pool. */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	assert_int_equal(zc_pool_send(r.sock, pool), 0);
	e[0].pool = zc_pool_id(pool);
	e[0].off = 1 * MiB - 4096;
	e[0].len = 8192;
	e[0].slen = 8192;
	raw_put(&r, e, 2);
	expect_proto(&r);
	raw_close(&r);
	/* Slice beyond the end of the buffer (offset overflow). */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	assert_int_equal(zc_pool_send(r.sock, pool), 0);
	e[0].off = 0;
	e[0].len = 4096;
	e[0].soff = UINT64_MAX - 10;
	e[0].slen = 100;
	raw_put(&r, e, 2);
	expect_proto(&r);
	raw_close(&r);
	zc_pool_release(pool);
}

static void test_raw_bad_type_and_index(void **state)
{
	struct zc_ring_ent e = { .type = 77 };
	struct raw r;

	(void)state;
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	raw_put(&r, &e, 1);
	expect_proto(&r);
	raw_close(&r);
	/* A tail that claims more entries than the ring holds. */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	atomic_store(&r.shm->data_tail.v, ZC_RING_DATA_CAP + 5);
	expect_proto(&r);
	raw_close(&r);
	/* A file extent with a token never sent. */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	e.type = ZC_ENT_FILE;
	e.pool = 3;
	e.slen = 10;
	raw_put(&r, &e, 1);
	expect_proto(&r);
	raw_close(&r);
}

/* A RETURN for a token we never lent. */
static void test_raw_bad_return(void **state)
{
	struct zc_ret_ent re = { .type = ZC_ENT_RETURN, .token = 12345 };
	struct raw r;
	zc_agg *agg;

	(void)state;
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	r.ret[0] = re;
	atomic_store(&r.shm->ret_tail.v, 1);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_channel_send(r.ch, agg), -EPROTO);
	assert_int_equal(zc_channel_send(r.ch, agg), -EPROTO);
	zc_agg_release(agg);
	raw_close(&r);
}

/* Garbage on the socket instead of a control message. */
static void test_raw_bad_socket(void **state)
{
	struct zc_ring_ent e[2] = {
		{ .type = ZC_ENT_BUF, .pool = 4242, .len = 4096, .slen = 4096 },
		{ .type = ZC_ENT_MSG_END },
	};
	static const char junk[7] = "garbage";
	struct raw r;
	int fd;

	(void)state;
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	/* A junk packet carrying a descriptor (which must not leak). */
	fd = open("/dev/null", O_RDONLY);
	assert_int_equal(zc_sock_send(r.sock, junk, sizeof(junk), fd, 0), 0);
	close(fd);
	raw_put(&r, e, 2);	/* makes the receiver read the socket */
	expect_proto(&r);
	raw_close(&r);
	/* A second HELLO. */
	assert_int_equal(raw_open(&r, true, ZC_RING_DATA_CAP), 0);
	{
		struct raw_hello h = { .type = 0xC1 };

		assert_int_equal(zc_sock_send(r.sock, &h, sizeof(h), -1, 0), 0);
	}
	raw_put(&r, e, 2);
	expect_proto(&r);
	raw_close(&r);
}

/* Handshakes that must be refused: an unsealed region (could be truncated
 * under our mapping), a ring size that is not a power of two. */
static void test_raw_bad_hello(void **state)
{
	struct raw r;

	(void)state;
	assert_int_equal(raw_open(&r, false, ZC_RING_DATA_CAP), -EPROTO);
	close(r.sock);
	munmap(r.shm, r.len);
	assert_int_equal(raw_open(&r, true, 100), -EPROTO);
	close(r.sock);
	munmap(r.shm, r.len);
}

/* ------------------------------------------------------- bad arguments */

static void test_bad_args(void **state)
{
	zc_channel *a, *b, *c = (zc_channel *)&c;
	zc_agg *agg, *got = (zc_agg *)&got;
	int sv[2], p[2], udp;

	(void)state;
	assert_int_equal(zc_channel_open(-1, &c), -EBADF);
	assert_null(c);
	assert_int_equal(zc_channel_open(0, NULL), -EINVAL);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(zc_channel_open(p[0], &c), -ENOTSOCK);
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(zc_channel_open(udp, &c), -EPROTOTYPE);
	close(udp);
	udp = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(zc_channel_open(udp, &c), -ENOTCONN);
	close(udp);
	close(p[0]);
	close(p[1]);
	assert_int_equal(zc_channel_open(12345, &c), -EBADF);

	assert_int_equal(zc_channel_pair(NULL, &b), -EINVAL);
	assert_int_equal(zc_channel_pair(&a, &b), 0);
	assert_int_equal(zc_channel_open(zc_channel_fd(a), &c), -EBUSY);
	assert_int_equal(zc_channel_fd(NULL), -EINVAL);
	assert_int_equal(zc_channel_set_nonblock(NULL, 1), -EINVAL);
	assert_int_equal(zc_channel_send(NULL, NULL), -EINVAL);
	assert_int_equal(zc_channel_send(a, NULL), -EINVAL);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_channel_send(NULL, agg), -EINVAL);
	assert_int_equal(zc_channel_recv(NULL, &got), -EINVAL);
	assert_null(got);
	assert_int_equal(zc_channel_recv(b, NULL), -EINVAL);
	assert_null(zc_channel_from_fd(-1));
	assert_null(zc_channel_from_fd(1 << 30));
	assert_null(zc_channel_from_fd(0));
	zc_channel_close(NULL);
	zc_agg_release(agg);
	assert_int_equal(zc_channel_reclaim(-5), 0);
	zc_channel_close(a);
	zc_channel_close(b);
	(void)sv;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_roundtrip),
		cmocka_unit_test(test_empty_message),
		cmocka_unit_test(test_file_changed),
		cmocka_unit_test(test_steady_stream),
		cmocka_unit_test(test_kref_on_return),
		cmocka_unit_test(test_reuse_order_after_return),
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_iol_on_channel),
		cmocka_unit_test(test_read_data_on_channel),
		cmocka_unit_test(test_nonblock_recv),
		cmocka_unit_test(test_interrupt_fd),
		cmocka_unit_test(test_nonblock_send_full),
		cmocka_unit_test(test_nonblock_room_bell_survives_recv),
		cmocka_unit_test(test_nonblock_data_bell_survives_send),
		cmocka_unit_test(test_nonblock_room_bell_behind_a_share),
		cmocka_unit_test(test_message_longer_than_ring),
		cmocka_unit_test(test_nonblock_message_longer_than_ring),
		cmocka_unit_test(test_nonblock_long_message_then_recv),
		cmocka_unit_test(test_stream_socket),
		cmocka_unit_test(test_doorbell_runs),
		cmocka_unit_test(test_cork_owes_the_bell),
		cmocka_unit_test(test_cork_blocking_wait_rings),
		cmocka_unit_test(test_open_nonblocking),
		cmocka_unit_test(test_borrowed_copied),
		cmocka_unit_test(test_received_parts_one_sendfile),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_peer_killed),
		cmocka_unit_test(test_close_while_lent),
		cmocka_unit_test(test_raw_good),
		cmocka_unit_test(test_raw_unknown_pool),
		cmocka_unit_test(test_raw_out_of_range),
		cmocka_unit_test(test_raw_bad_type_and_index),
		cmocka_unit_test(test_raw_bad_return),
		cmocka_unit_test(test_raw_bad_socket),
		cmocka_unit_test(test_raw_bad_hello),
		cmocka_unit_test(test_bad_args),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
