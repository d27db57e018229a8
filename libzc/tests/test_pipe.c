/*
 * test_pipe.c - pipes and pipe slices: socket -> pipe -> destination with
 * splice, inside the aggregate model.
 *
 * Byte-exact relays of every awkward size from UNIX and TCP sources to
 * TCP, a pipe, a regular file and an odd descriptor (a SOCK_SEQPACKET
 * socket: the bounce path); a response head and trailer around a pipe
 * slice; partial writes resumed after EAGAIN; what truncate, trim_front,
 * split and release drop is never sent; a dup written twice; a full pipe,
 * EOF and a reset source; the calls that must refuse pipe slices.  Every
 * byte is checked at the receiver against a position-hashed pattern.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "zc_channel.h"
#include "../src/internal.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static const size_t sizes[] = { 0, 1, 4095, 4096, 65535, 65536, MiB + 7 };

/* ------------------------------------------------------------- helpers */

static size_t fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Feeder thread: writes bytes [0, len) of stream `seed` to fd, then
 * closes it (EOF), or resets the connection (rst: SO_LINGER 0). */
struct feeder {
	int fd;
	size_t len;
	uint64_t seed;
	bool rst;
	pthread_t tid;
};

static void *feeder_main(void *arg)
{
	struct feeder *f = arg;
	unsigned char chunk[32768];

	for (size_t off = 0; off < f->len;) {
		size_t n = zc_min_size(f->len - off, sizeof(chunk));
		ssize_t w;

		tu_fill(chunk, n, f->seed, off);
		w = write(f->fd, chunk, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (f->rst) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(f->fd);
	return NULL;
}

static void feeder_start(struct feeder *f, int fd, size_t len, uint64_t seed)
{
	f->fd = fd;
	f->len = len;
	f->seed = seed;
	assert_int_equal(pthread_create(&f->tid, NULL, feeder_main, f), 0);
}

/* Read exactly len bytes from a blocking fd. */
static void read_exact(int fd, void *dst, size_t len)
{
	unsigned char *p = dst;

	while (len) {
		ssize_t r = read(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		assert_true(r > 0);
		p += r;
		len -= (size_t)r;
	}
}

/* The next len bytes on fd are [pos, pos+len) of stream seed. */
static void expect_pat(int fd, uint64_t seed, uint64_t pos, size_t len)
{
	unsigned char *got = malloc(len ? len : 1);

	assert_non_null(got);
	read_exact(fd, got, len);
	assert_int_equal(tu_check(got, len, seed, pos), -1);
	free(got);
}

static void expect_str(int fd, const char *s)
{
	char got[256];
	size_t n = strlen(s);

	assert_true(n <= sizeof(got));
	read_exact(fd, got, n);
	assert_memory_equal(got, s, n);
}

/* Nothing more on fd: its writer closed, and no byte came before EOF. */
static void expect_eof(int fd)
{
	char c;

	assert_int_equal(read(fd, &c, 1), 0);
}

/* Write all of agg to a blocking fd. */
static size_t write_all(int fd, zc_agg *agg)
{
	size_t total = 0;

	while (zc_agg_len(agg)) {
		ssize_t w = iol_write(fd, agg);

		assert_true(w > 0);
		total += (size_t)w;
	}
	return total;
}

/*
 * A source (UNIX socketpair) whose bytes the test writes itself, a pipe,
 * and a TCP destination: for the cases that cut pipe slices, where the
 * stream position of every byte must be known.
 */
struct link {
	int sw, sr;		/* source: the test writes sw, splices sr */
	int dw, dr;		/* destination: TCP */
	zc_pipe *p;
	uint64_t seed;
	uint64_t pos;		/* stream bytes written to sw so far */
};

static void link_open(struct link *l, uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	assert_int_equal(tu_pair(TU_UNIX, &l->sw, &l->sr), 0);
	assert_int_equal(tu_pair(TU_TCP, &l->dw, &l->dr), 0);
	assert_int_equal(zc_pipe_create(MiB, &l->p), 0);
	l->seed = seed;
}

static void link_close(struct link *l)
{
	close(l->sw);
	close(l->sr);
	close(l->dw);
	expect_eof(l->dr);	/* nothing was sent that was not expected */
	close(l->dr);
	zc_pipe_release(l->p);
}

/* The next n bytes of the stream, spliced into *agg (NULL: a new one). */
static zc_agg *fill(struct link *l, zc_agg *agg, size_t n)
{
	unsigned char *chunk = malloc(n);
	size_t got = 0;

	assert_non_null(chunk);
	tu_fill(chunk, n, l->seed, l->pos);
	assert_int_equal(write(l->sw, chunk, n), (ssize_t)n);
	free(chunk);
	l->pos += n;
	while (got < n) {
		ssize_t r = iol_splice_in(l->sr, l->p, &agg, n - got);

		assert_true(r > 0);
		got += (size_t)r;
	}
	return agg;
}

/* ------------------------------------------------------------- relays */

enum dst { DST_TCP, DST_PIPE, DST_FILE, DST_APPEND, DST_SEQPACKET };

static int dst_open(enum dst d, int *rfd)
{
	int fds[2], wfd = -1;

	*rfd = -1;
	switch (d) {
	case DST_TCP:
		assert_int_equal(tu_pair(TU_TCP, &wfd, rfd), 0);
		break;
	case DST_PIPE:
		assert_int_equal(tu_pair(TU_PIPE, &wfd, rfd), 0);
		break;
	case DST_FILE:
		wfd = tu_pattern_file(0, 0, NULL, 0);
		break;
	case DST_APPEND:
		wfd = tu_pattern_file(0, 0, NULL, 0);
		fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_APPEND);
		break;
	case DST_SEQPACKET:
		assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET |
					    SOCK_CLOEXEC, 0, fds), 0);
		wfd = fds[0];
		*rfd = fds[1];
		break;
	}
	assert_true(wfd >= 0);
	return wfd;
}

/*
 * size bytes from a src socket through a fresh pipe to destination d,
 * blocking on both sides: splice in whatever came, write it all out,
 * until EOF.  Checks every byte, the pipe's count, and the statistics:
 * a splice both ways counts by reference, the bounce by copy.
 */
static void relay(enum tu_kind src, enum dst d, size_t size, uint64_t seed)
{
	struct zc_io_stats st0, st1;
	struct tu_reader rd;
	struct feeder f = { .rst = false };
	size_t in = 0, out = 0;
	int sw = -1, sr = -1, dw, dr;
	zc_agg *agg = NULL;
	zc_pipe *p;

	assert_int_equal(tu_pair(src, &sw, &sr), 0);
	dw = dst_open(d, &dr);
	if (dr >= 0)
		assert_int_equal(tu_reader_start(&rd, dr, 0), 0);
	assert_int_equal(zc_pipe_create(0, &p), 0);
	zc_io_stats(&st0);
	feeder_start(&f, sw, size, seed);
	for (;;) {
		ssize_t r = iol_splice_in(sr, p, &agg, MiB);

		assert_true(r >= 0);
		assert_non_null(agg);
		if (r == 0)
			break;
		in += (size_t)r;
		assert_int_equal(zc_pipe_held(p), in - out);
		out += write_all(dw, agg);
		assert_int_equal(zc_pipe_held(p), 0);
	}
	zc_io_stats(&st1);
	pthread_join(f.tid, NULL);
	assert_int_equal(in, size);
	assert_int_equal(out, size);
	if (d == DST_SEQPACKET || d == DST_APPEND) {
		assert_int_equal(st1.bytes_by_reference - st0.bytes_by_reference,
				 size);
		assert_int_equal(st1.bytes_copied - st0.bytes_copied, size);
	} else {
		assert_int_equal(st1.bytes_by_reference - st0.bytes_by_reference,
				 2 * size);
		assert_int_equal(st1.bytes_copied - st0.bytes_copied, 0);
	}
	if (dr >= 0) {
		close(dw);
		tu_reader_join(&rd);
		assert_int_equal(rd.err, 0);
		assert_int_equal(rd.len, size);
		assert_int_equal(tu_check(rd.data, size, seed, 0), -1);
		tu_reader_free(&rd);
		close(dr);
	} else {
		unsigned char *got = malloc(size + 1);

		assert_non_null(got);
		assert_int_equal(pread(dw, got, size + 1, 0), (ssize_t)size);
		assert_int_equal(tu_check(got, size, seed, 0), -1);
		free(got);
		close(dw);
	}
	close(sr);
	zc_agg_release(agg);
	zc_pipe_release(p);
}

static void relay_sizes(enum tu_kind src, enum dst d)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		relay(src, d, sizes[i], 1000 * (uint64_t)src + 10 * d + i);
}

static void test_relay_unix_to_tcp(void **state)
{
	(void)state;
	relay_sizes(TU_UNIX, DST_TCP);
}

static void test_relay_tcp_to_tcp(void **state)
{
	(void)state;
	relay_sizes(TU_TCP, DST_TCP);
}

static void test_relay_to_pipe(void **state)
{
	(void)state;
	relay_sizes(TU_UNIX, DST_PIPE);
	relay_sizes(TU_TCP, DST_PIPE);
}

static void test_relay_to_file(void **state)
{
	(void)state;
	relay_sizes(TU_UNIX, DST_FILE);
	relay_sizes(TU_TCP, DST_FILE);
}

/* Splice refuses O_APPEND files, and a SEQPACKET socket is no stream
 * (ZC_FD_OTHER): both go through the bounce buffer. */
static void test_relay_bounce(void **state)
{
	(void)state;
	relay_sizes(TU_TCP, DST_APPEND);
	relay_sizes(TU_TCP, DST_SEQPACKET);
}

/* ------------------------------------------------- one response, in order */

static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
			   "\r\n";
static const char trailer[] = "\r\n0\r\n\r\n";

/* A borrowed head, a pipe slice, a trailer buffer: one aggregate, one
 * iol_write, arriving in that order (the head goes by sendmsg with
 * MSG_MORE, the body by splice with SPLICE_F_MORE, the trailer last). */
static void test_head_body_trailer(void **state)
{
	struct link l;
	zc_agg *agg;
	size_t body = 200 * KiB + 3;

	(void)state;
	link_open(&l, 77);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_mem(agg, head, strlen(head)), 0);
	for (size_t done = 0; done < body;) {
		size_t n = zc_min_size(body - done, 50 * KiB);

		fill(&l, agg, n);	/* contiguous: merges into one slice */
		done += n;
	}
	assert_int_equal(zc_agg_nslices(agg), 2);
	assert_int_equal(zc_agg_append_bytes(agg, NULL, trailer,
					     strlen(trailer)), 0);
	assert_int_equal(zc_agg_nslices(agg), 3);
	{
		struct zc_slice s;

		assert_int_equal(zc_agg_slice(agg, 1, &s), 0);
		assert_int_equal(s.kind, ZC_SLICE_PIPE);
		assert_ptr_equal(s.pipe, l.p);
		assert_null(s.buf);
		assert_null(s.mem);
		assert_int_equal(s.off, 0);
		assert_int_equal(s.len, body);
	}
	{
		struct tu_reader rd;
		size_t total = strlen(head) + body + strlen(trailer);

		assert_int_equal(tu_reader_start(&rd, l.dr, total), 0);
		assert_int_equal(write_all(l.dw, agg), total);
		tu_reader_join(&rd);
		assert_int_equal(rd.len, total);
		assert_memory_equal(rd.data, head, strlen(head));
		assert_int_equal(tu_check(rd.data + strlen(head), body, 77, 0),
				 -1);
		assert_memory_equal(rd.data + strlen(head) + body, trailer,
				    strlen(trailer));
		tu_reader_free(&rd);
	}
	assert_int_equal(zc_pipe_held(l.p), 0);
	zc_agg_release(agg);
	link_close(&l);
}

/* -------------------------------------------------------- partial writes */

/* Collect what a non-blocking receiver has, at most max bytes. */
static void slow_read(int fd, unsigned char *dst, size_t *len, size_t cap,
		      size_t max)
{
	ssize_t r = read(fd, dst + *len, zc_min_size(cap - *len, max));

	if (r > 0)
		*len += (size_t)r;
	else
		assert_true(r < 0 && errno == EAGAIN);
}

/*
 * Head + the body as it comes + trailer, written to a non-blocking
 * destination that takes little at a time and a receiver that reads
 * slowly: iol_write says -EAGAIN or moves part, the aggregate is the
 * state, and every byte arrives right.  A SEQPACKET destination takes
 * whole bounce chunks or nothing, so a chunk read out of the pipe stays
 * in its spill for the next call.
 */
static void partial_case(enum dst d, size_t body, uint64_t seed)
{
	size_t hl = strlen(head), tl = strlen(trailer), total = hl + body + tl;
	unsigned char *got = malloc(total + 65536);
	size_t len = 0, eagains = 0, writes = 0, turn = 0;
	bool eof = false, tail = false;
	struct feeder f = { .rst = false };
	int sw = -1, sr = -1, dw, dr, small = 4096;
	zc_agg *agg;
	zc_pipe *p;

	assert_non_null(got);
	assert_int_equal(tu_pair(TU_UNIX, &sw, &sr), 0);
	dw = dst_open(d, &dr);
	if (d == DST_TCP) {
		/* The receiver's buffer stays as it is: a tiny window
		 * makes loopback TCP wait for delayed ACKs (seconds). */
		setsockopt(dw, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	} else if (d == DST_PIPE) {
		fcntl(dw, F_SETPIPE_SZ, small);
	}
	tu_set_nonblock(dw, 1);
	tu_set_nonblock(dr, 1);
	assert_int_equal(zc_pipe_create(16 * KiB, &p), 0);
	assert_int_equal(zc_agg_create(&agg), 0);
	assert_int_equal(zc_agg_append_mem(agg, head, hl), 0);
	feeder_start(&f, sw, body, seed);
	while (!tail || zc_agg_len(agg) || len < total) {
		if (!eof) {
			ssize_t r = iol_splice_in(sr, p, &agg, 64 * KiB);

			assert_true(r >= 0 || r == -EAGAIN);
			if (r == -EAGAIN)
				assert_true(zc_pipe_held(p) > 0);  /* full */
			eof = r == 0;
		}
		if (eof && !tail) {
			assert_int_equal(zc_agg_append_bytes(agg, NULL, trailer,
							     tl), 0);
			tail = true;
		}
		if (zc_agg_len(agg)) {
			size_t before = zc_agg_len(agg);
			ssize_t w = iol_write(dw, agg);

			assert_true(w > 0 || w == -EAGAIN);
			if (w > 0) {
				assert_int_equal(zc_agg_len(agg),
						 before - (size_t)w);
				writes++;
			} else {
				eagains++;
			}
		}
		/* A SEQPACKET message is read whole (up to a bounce chunk),
		 * every eighth turn, so that the writer fills the socket. */
		if (d != DST_SEQPACKET || ++turn % 8 == 0 || eof)
			slow_read(dr, got, &len, total + 65536,
				  d == DST_SEQPACKET ? 65536 : 3000);
		assert_true(len <= total);
	}
	pthread_join(f.tid, NULL);
	assert_int_equal(len, total);
	assert_memory_equal(got, head, hl);
	assert_int_equal(tu_check(got + hl, body, seed, 0), -1);
	assert_memory_equal(got + hl + body, trailer, tl);
	assert_int_equal(zc_pipe_held(p), 0);
	assert_true(eagains > 0);	/* the partial path was taken */
	assert_true(writes > 3);
	zc_agg_release(agg);
	zc_pipe_release(p);
	close(sr);
	close(dw);
	close(dr);
	free(got);
}

static void test_partial_tcp(void **state)
{
	(void)state;
	partial_case(DST_TCP, MiB + 7, 501);
}

static void test_partial_pipe(void **state)
{
	(void)state;
	partial_case(DST_PIPE, MiB + 7, 502);
}

static void test_partial_bounce(void **state)
{
	(void)state;
	partial_case(DST_SEQPACKET, MiB + 7, 503);
}

/* ------------------------------------------------------- cutting slices */

/* Truncated and trimmed bytes stay in the pipe, counted, until a later
 * slice is written: then they are discarded, never sent. */
static void test_truncate_trim(void **state)
{
	struct link l;
	zc_agg *a, *b;

	(void)state;
	link_open(&l, 11);
	a = fill(&l, NULL, 10000);
	assert_int_equal(zc_agg_trim_front(a, 1000), 0);
	assert_int_equal(zc_agg_truncate(a, 5000), 0);	/* [1000, 6000) */
	b = fill(&l, NULL, 3000);			/* [10000, 13000) */
	assert_int_equal(zc_pipe_held(l.p), 13000);
	assert_int_equal(write_all(l.dw, a), 5000);
	assert_int_equal(zc_pipe_held(l.p), 7000);	/* 1000 discarded */
	assert_int_equal(write_all(l.dw, b), 3000);
	assert_int_equal(zc_pipe_held(l.p), 0);		/* 4000 discarded */
	expect_pat(l.dr, 11, 1000, 5000);
	expect_pat(l.dr, 11, 10000, 3000);
	zc_agg_release(a);
	zc_agg_release(b);
	link_close(&l);
}

/* split and split_front cut pipe slices like any other; the parts of
 * one pipe, concatenated with bytes of the caller's between them, are
 * written in one call, the dropped middle discarded on the way. */
static void test_split(void **state)
{
	struct link l;
	zc_agg *a, *t, *c, *x, *front;

	(void)state;
	link_open(&l, 12);
	a = fill(&l, NULL, 20000);
	assert_int_equal(zc_agg_split(a, 8000, &t), 0);
	assert_int_equal(zc_agg_truncate(a, 3000), 0);		/* [0, 3000) */
	assert_int_equal(zc_agg_trim_front(t, 2000), 0);	/* [10000, 20000) */
	assert_int_equal(zc_agg_create(&c), 0);
	assert_int_equal(zc_agg_append_mem(c, "HEAD", 4), 0);
	assert_int_equal(zc_agg_concat(c, a), 0);
	assert_int_equal(zc_agg_append_mem(c, "MID", 3), 0);
	assert_int_equal(zc_agg_concat(c, t), 0);
	zc_agg_release(a);
	zc_agg_release(t);
	assert_int_equal(zc_agg_nslices(c), 4);
	assert_int_equal(write_all(l.dw, c), 4 + 3000 + 3 + 10000);
	expect_str(l.dr, "HEAD");
	expect_pat(l.dr, 12, 0, 3000);
	expect_str(l.dr, "MID");
	expect_pat(l.dr, 12, 10000, 10000);
	assert_int_equal(zc_pipe_held(l.p), 0);
	zc_agg_release(c);

	/* split_front, in order; the halves of a cut rejoin. */
	x = fill(&l, NULL, 5000);				/* [20000, 25000) */
	assert_int_equal(zc_agg_split_front(x, 2000, &front), 0);
	assert_int_equal(zc_agg_len(front), 2000);
	assert_int_equal(zc_agg_concat(front, x), 0);
	assert_int_equal(zc_agg_nslices(front), 1);		/* merged */
	zc_agg_release(front);
	front = NULL;
	assert_int_equal(zc_agg_split_front(x, 2000, &front), 0);
	assert_int_equal(write_all(l.dw, front), 2000);	/* [22000, 24000) */
	assert_int_equal(write_all(l.dw, x), 1000);
	expect_pat(l.dr, 12, 22000, 3000);
	zc_agg_release(front);
	zc_agg_release(x);
	link_close(&l);
}

/* Bytes leave a pipe at its front only: the tail of a split written first
 * discards the front's bytes, and the front then fails, sending nothing. */
static void test_out_of_order(void **state)
{
	struct link l;
	zc_agg *a, *t;

	(void)state;
	link_open(&l, 13);
	a = fill(&l, NULL, 6000);
	assert_int_equal(zc_agg_split(a, 2000, &t), 0);
	assert_int_equal(write_all(l.dw, t), 4000);
	assert_int_equal(iol_write(l.dw, a), -EINVAL);
	assert_int_equal(zc_agg_len(a), 2000);		/* unchanged */
	expect_pat(l.dr, 13, 2000, 4000);
	zc_agg_release(a);
	zc_agg_release(t);
	link_close(&l);
}

/* A dup shares the positions: the second write finds them gone. */
static void test_dup_twice(void **state)
{
	struct link l;
	zc_agg *a, *d;

	(void)state;
	link_open(&l, 14);
	a = fill(&l, NULL, 4000);
	assert_int_equal(zc_agg_dup(a, &d), 0);
	assert_int_equal(write_all(l.dw, a), 4000);
	assert_int_equal(iol_write(l.dw, d), -EINVAL);
	assert_int_equal(zc_agg_len(d), 4000);
	zc_agg_release(d);

	/* The dup trimmed and written first: the original's rest is gone
	 * too, even the part the dup did not send. */
	zc_agg_release(a);
	a = fill(&l, NULL, 4000);				/* [4000, 8000) */
	assert_int_equal(zc_agg_dup(a, &d), 0);
	assert_int_equal(zc_agg_trim_front(d, 1000), 0);
	assert_int_equal(write_all(l.dw, d), 3000);
	assert_int_equal(iol_write(l.dw, a), -EINVAL);

	/* And the stream goes on right after both. */
	zc_agg_release(a);
	zc_agg_release(d);
	a = fill(&l, NULL, 500);
	assert_int_equal(write_all(l.dw, a), 500);
	expect_pat(l.dr, 14, 0, 4000);
	expect_pat(l.dr, 14, 5000, 3000);
	expect_pat(l.dr, 14, 8000, 500);
	zc_agg_release(a);
	link_close(&l);
}

/* Bytes no slice names any more (their aggregate released) are emptied
 * out by the next iol_splice_in: nothing could ever write them, and they
 * would fill the pipe. */
static void test_released_bytes(void **state)
{
	struct link l;
	zc_agg *a;

	(void)state;
	link_open(&l, 15);
	a = fill(&l, NULL, 3000);
	zc_agg_release(a);
	assert_int_equal(zc_pipe_held(l.p), 3000);
	a = fill(&l, NULL, 1000);
	assert_int_equal(zc_pipe_held(l.p), 1000);
	assert_int_equal(write_all(l.dw, a), 1000);
	expect_pat(l.dr, 15, 3000, 1000);
	zc_agg_release(a);

	/* Truncated to nothing, the same. */
	a = fill(&l, NULL, 2000);
	assert_int_equal(zc_agg_truncate(a, 0), 0);
	assert_int_equal(zc_pipe_held(l.p), 2000);
	a = fill(&l, a, 700);
	assert_int_equal(zc_pipe_held(l.p), 700);
	assert_int_equal(write_all(l.dw, a), 700);
	expect_pat(l.dr, 15, 6000, 700);
	zc_agg_release(a);
	link_close(&l);
}

/* zc_pipe_held follows every step: in, out, dropped, discarded. */
static void test_held(void **state)
{
	struct link l;
	zc_agg *a;

	(void)state;
	link_open(&l, 16);
	assert_int_equal(zc_pipe_held(l.p), 0);
	assert_int_equal(zc_pipe_held(NULL), 0);
	assert_true(zc_pipe_capacity(l.p) >= 64 * KiB);
	a = fill(&l, NULL, 100);
	assert_int_equal(zc_pipe_held(l.p), 100);
	a = fill(&l, a, 200);
	assert_int_equal(zc_pipe_held(l.p), 300);
	assert_int_equal(zc_agg_nslices(a), 1);
	assert_int_equal(zc_agg_trim_front(a, 50), 0);
	assert_int_equal(zc_pipe_held(l.p), 300);	/* still inside */
	assert_int_equal(write_all(l.dw, a), 250);
	assert_int_equal(zc_pipe_held(l.p), 0);
	expect_pat(l.dr, 16, 50, 250);
	zc_agg_release(a);
	link_close(&l);
}

/* ------------------------------------------------------ in: EAGAIN, EOF */

/* A pipe one page large fills up: -EAGAIN with bytes held; a source with
 * nothing queued: -EAGAIN with none; a closed one: 0, with *agg given. */
static void test_full_empty_eof(void **state)
{
	static unsigned char junk[256 << 10];
	int sw, sr;
	zc_pipe *p;
	zc_agg *agg = NULL;
	ssize_t r, total = 0;
	int calls = 0;

	(void)state;
	assert_int_equal(tu_pair(TU_TCP, &sw, &sr), 0);
	tu_fill(junk, sizeof(junk), 21, 0);
	tu_set_nonblock(sw, 1);
	assert_true(write(sw, junk, sizeof(junk)) > 64 * (ssize_t)KiB);
	usleep(20000);
	assert_int_equal(zc_pipe_create(4096, &p), 0);
	assert_int_equal(zc_pipe_capacity(p), 4096);
	while ((r = iol_splice_in(sr, p, &agg, MiB)) > 0) {
		total += r;
		assert_true(++calls < 1000);
	}
	assert_int_equal(r, -EAGAIN);
	assert_int_equal(zc_pipe_held(p), (size_t)total);
	assert_true(total > 0);
	printf("# a 4 KiB pipe took %zd bytes from loopback TCP in %d "
	       "splices before -EAGAIN\n", total, calls);
	zc_agg_release(agg);
	zc_pipe_release(p);	/* with bytes inside */

	/* Nothing queued on a non-blocking source: -EAGAIN, pipe empty,
	 * *agg as passed. */
	close(sw);
	close(sr);
	assert_int_equal(tu_pair(TU_UNIX, &sw, &sr), 0);
	tu_set_nonblock(sr, 1);
	assert_int_equal(zc_pipe_create(0, &p), 0);
	agg = NULL;
	assert_int_equal(iol_splice_in(sr, p, &agg, 4096), -EAGAIN);
	assert_null(agg);
	assert_int_equal(zc_pipe_held(p), 0);

	/* EOF: 0, with an (empty) aggregate to release; size 0: 0 too. */
	close(sw);
	assert_int_equal(iol_splice_in(sr, p, &agg, 4096), 0);
	assert_non_null(agg);
	assert_int_equal(zc_agg_len(agg), 0);
	assert_int_equal(iol_splice_in(sr, p, &agg, 0), 0);
	zc_agg_release(agg);
	zc_pipe_release(p);
	close(sr);
}

/* How much one splice from a loopback TCP socket moves into pipes of a
 * few sizes, and what F_SETPIPE_SZ gave: reported, not asserted beyond
 * sanity (it depends on the kernel and on how the sender cut the data). */
static void test_capacity_report(void **state)
{
	static const size_t wish[] = { 0, 4096, 100000, MiB, 16 * MiB,
				       SIZE_MAX };
	static unsigned char junk[MiB];

	(void)state;
	tu_fill(junk, sizeof(junk), 22, 0);
	for (size_t i = 0; i < sizeof(wish) / sizeof(wish[0]); i++) {
		int sw, sr, q = 0;
		zc_pipe *p;
		zc_agg *agg = NULL;
		ssize_t r, put;

		assert_int_equal(zc_pipe_create(wish[i], &p), 0);
		assert_true(zc_pipe_capacity(p) >= 4096);
		assert_int_equal(tu_pair(TU_TCP, &sw, &sr), 0);
		tu_set_nonblock(sw, 1);
		put = write(sw, junk, sizeof(junk));
		assert_true(put > 0);
		usleep(50000);
		ioctl(sr, FIONREAD, &q);
		r = iol_splice_in(sr, p, &agg, MiB);
		assert_true(r > 0);
		assert_true((size_t)r <= (size_t)put);
		printf("# pipe wish %zu: capacity %zu; one splice from loopback "
		       "TCP (%d queued) moved %zd\n", wish[i],
		       zc_pipe_capacity(p), q, r);
		zc_agg_release(agg);
		zc_pipe_release(p);
		close(sw);
		close(sr);
	}
}

/* A source reset mid-body: an error, never EOF, and what came before it
 * is right. */
static void test_source_reset(void **state)
{
	struct tu_reader rd;
	struct feeder f = { .rst = true };
	int sw = -1, sr = -1, dw, dr;
	size_t in = 0;
	zc_agg *agg = NULL;
	zc_pipe *p;
	ssize_t r;

	(void)state;
	assert_int_equal(tu_pair(TU_TCP, &sw, &sr), 0);
	assert_int_equal(tu_pair(TU_TCP, &dw, &dr), 0);
	assert_int_equal(tu_reader_start(&rd, dr, 0), 0);
	assert_int_equal(zc_pipe_create(0, &p), 0);
	feeder_start(&f, sw, 512 * KiB, 31);
	/* Let the reset come while bytes are still unread. */
	pthread_join(f.tid, NULL);
	while ((r = iol_splice_in(sr, p, &agg, 16 * KiB)) > 0) {
		in += (size_t)r;
		write_all(dw, agg);
	}
	assert_true(r < 0);
	assert_true(r != -EAGAIN);
	printf("# reset source: %zu bytes relayed, then %zd (%s)\n", in, r,
	       strerror((int)-r));
	close(dw);
	tu_reader_join(&rd);
	assert_int_equal(rd.len, in);
	assert_int_equal(tu_check(rd.data, in, 31, 0), -1);
	tu_reader_free(&rd);
	zc_agg_release(agg);
	zc_pipe_release(p);
	close(sr);
	close(dr);
}

/* ----------------------------------------------------------- refusals */

/* copyout, map, a channel: each would have to consume the pipe, so each
 * says -EINVAL, and the aggregate and the pipe are as they were. */
static void test_refusals(void **state)
{
	struct link l;
	zc_channel *ca, *cb;
	const void *data;
	char buf[8192];
	size_t len;
	zc_agg *a;

	(void)state;
	link_open(&l, 41);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_mem(a, "HEAD", 4), 0);
	fill(&l, a, 5000);
	assert_int_equal(zc_agg_copyout(a, 0, buf, 4), 4);	/* head only */
	assert_int_equal(zc_agg_copyout(a, 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(zc_agg_copyout(a, 100, buf, 10), -EINVAL);
	assert_int_equal(zc_agg_map(a, NULL, &data, &len), -EINVAL);
	assert_int_equal(zc_agg_nslices(a), 2);

	assert_int_equal(zc_channel_pair(&ca, &cb), 0);
	assert_int_equal(zc_channel_send(ca, a), -EINVAL);
	assert_int_equal(iol_write(zc_channel_fd(ca), a), -EINVAL);
	zc_channel_close(ca);
	zc_channel_close(cb);

	assert_int_equal(zc_agg_len(a), 4 + 5000);
	assert_int_equal(zc_pipe_held(l.p), 5000);
	assert_int_equal(write_all(l.dw, a), 4 + 5000);
	expect_str(l.dr, "HEAD");
	expect_pat(l.dr, 41, 0, 5000);
	zc_agg_release(a);
	link_close(&l);
}

static void test_bad_args(void **state)
{
	zc_pipe *p;
	zc_agg *agg = NULL;

	(void)state;
	assert_int_equal(zc_pipe_create(0, NULL), -EINVAL);
	assert_int_equal(zc_pipe_create(0, &p), 0);
	assert_int_equal(iol_splice_in(0, NULL, &agg, 10), -EINVAL);
	assert_int_equal(iol_splice_in(0, p, NULL, 10), -EINVAL);
	assert_int_equal(iol_splice_in(-1, p, &agg, 10), -EBADF);
	assert_int_equal(iol_splice_in(0, p, &agg, (size_t)-1), -EINVAL);
	/* Its own read end is no source. */
	assert_true(iol_splice_in(p->rfd, p, &agg, 10) < 0);
	assert_null(agg);
	assert_ptr_equal(zc_pipe_ref(p), p);
	zc_pipe_release(p);
	zc_pipe_release(p);
	zc_pipe_release(NULL);
	assert_null(zc_pipe_ref(NULL));
	assert_int_equal(zc_pipe_capacity(NULL), 0);
}

/* ------------------------------------------------------------- freeing */

/* Bytes inside at the end go with the pipe, in whichever order the pipe
 * and its slices are released: no descriptor or memory left (the ASan
 * build checks leaks). */
static void test_release_with_bytes(void **state)
{
	size_t fds0 = fd_count();
	struct link l;
	zc_agg *a, *b;

	(void)state;
	link_open(&l, 51);
	a = fill(&l, NULL, 30000);
	assert_int_equal(zc_agg_dup(a, &b), 0);
	zc_pipe_release(zc_pipe_ref(l.p));
	/* Pipe first: the slices keep it alive. */
	close(l.sw);
	close(l.sr);
	close(l.dw);
	close(l.dr);
	zc_pipe_release(l.p);
	assert_int_equal(zc_agg_len(a), 30000);
	zc_agg_release(a);
	assert_int_equal(fd_count(), fds0 + 2);	/* both ends still open */
	zc_agg_release(b);
	assert_int_equal(fd_count(), fds0);

	/* Slices first, then the pipe; and bytes left in a spill. */
	link_open(&l, 52);
	a = fill(&l, NULL, 30000);
	assert_int_equal(zc_pipe_discard_to(l.p, 10), 0);
	assert_true(zc_pipe_fill_spill(l.p, 1000) > 0);
	zc_agg_release(a);
	close(l.sw);
	close(l.sr);
	close(l.dw);
	close(l.dr);
	zc_pipe_release(l.p);
	assert_int_equal(fd_count(), fds0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_unix_to_tcp),
		cmocka_unit_test(test_relay_tcp_to_tcp),
		cmocka_unit_test(test_relay_to_pipe),
		cmocka_unit_test(test_relay_to_file),
		cmocka_unit_test(test_relay_bounce),
		cmocka_unit_test(test_head_body_trailer),
		cmocka_unit_test(test_partial_tcp),
		cmocka_unit_test(test_partial_pipe),
		cmocka_unit_test(test_partial_bounce),
		cmocka_unit_test(test_truncate_trim),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_dup_twice),
		cmocka_unit_test(test_released_bytes),
		cmocka_unit_test(test_held),
		cmocka_unit_test(test_full_empty_eof),
		cmocka_unit_test(test_capacity_report),
		cmocka_unit_test(test_source_reset),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_release_with_bytes),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
