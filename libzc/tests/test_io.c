/*
 * test_io.c - iol_read / iol_write over real descriptors.
 *
 * Every transfer pair (file extent | pool buffer | mixed aggregate | what
 * iol_read got from pipes and sockets: on the patched kernel with IO-Lite,
 * kernel buffers) ->
 * (TCP | pipe | file | UNIX socket | /dev/null), iol_read from every source
 * kind, and everything that goes wrong in real life: partial writes,
 * EAGAIN, EINTR, EOF, a peer that dies mid-transfer, a file that changes
 * under an extent, bad arguments.  Every byte is checked at the receiver
 * against a position-hashed pattern.
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
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "zc.h"
#include "../src/internal.h"
#include "io_test_util.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ------------------------------------------------------------- sources */

enum src_kind { SRC_FILE, SRC_BUF, SRC_MIXED, SRC_SMALL, SRC_BORROWED,
		SRC_READ };

/* An aggregate plus the bytes it must produce. */
struct src {
	zc_agg *agg;
	unsigned char *expect;
	size_t len, cap;
	zc_buf *big;		/* an extra reference, to inspect KREF */
	uint64_t seed;
	unsigned char *mem[8];	/* borrowed memory the aggregate names */
	size_t nmem;
};

static void expect_add(struct src *s, const void *data, size_t len)
{
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2;
		s->expect = realloc(s->expect, s->cap);
		assert_non_null(s->expect);
	}
	memcpy(s->expect + s->len, data, len);
	s->len += len;
}

/* Append [off, off + len) of a new buffer of off + len + tail bytes. */
static void add_buf(struct src *s, size_t off, size_t len, size_t tail)
{
	size_t total = off + len + tail;
	zc_buf *b;

	assert_int_equal(zc_buf_alloc(NULL, total, &b), 0);
	tu_fill(zc_buf_wptr(b), total, ++s->seed, 0);
	assert_int_equal(zc_buf_publish(b, total), 0);
	assert_int_equal(zc_agg_append_buf(s->agg, b, off, len), 0);
	expect_add(s, (const unsigned char *)zc_buf_data(b) + off, len);
	if (!s->big && len >= 16 * KiB)
		s->big = zc_buf_ref(b);
	zc_buf_release(b);
}

/* Append [off, off + len) of a new file of off + len + tail bytes. */
static void add_file(struct src *s, size_t off, size_t len, size_t tail)
{
	size_t total = off + len + tail;
	unsigned char *tmp = malloc(len + 1);
	zc_file *f;
	int fd;

	assert_non_null(tmp);
	fd = tu_pattern_file(total, ++s->seed, NULL, 0);
	assert_true(fd >= 0);
	assert_int_equal(zc_file_from_fd(fd, &f), 0);
	close(fd);
	assert_int_equal(zc_agg_append_file(s->agg, f, off, len), 0);
	zc_file_release(f);
	tu_fill(tmp, len, s->seed, off);
	expect_add(s, tmp, len);
	free(tmp);
}

/* Append len bytes of memory the source owns, by reference. */
static void add_mem(struct src *s, size_t len)
{
	unsigned char *m = malloc(len);

	assert_non_null(m);
	assert_true(s->nmem < sizeof(s->mem) / sizeof(s->mem[0]));
	tu_fill(m, len, ++s->seed, 0);
	s->mem[s->nmem++] = m;
	assert_int_equal(zc_agg_append_mem(s->agg, m, len), 0);
	expect_add(s, m, len);
}

/* Append len bytes that iol_read takes from a new pipe or stream socket
 * (pool buffers; kernel buffers on the patched kernel with IO-Lite), fed
 * as the reader makes room. */
static void add_read(struct src *s, enum tu_kind kind, size_t len)
{
	unsigned char *m = malloc(len);
	size_t put = 0, got = 0;
	int wfd = -1, rfd = -1;

	assert_non_null(m);
	tu_fill(m, len, ++s->seed, 0);
	assert_int_equal(tu_pair(kind, &wfd, &rfd), 0);
	tu_set_nonblock(wfd, 1);
	while (got < len) {
		ssize_t n = put < len ? write(wfd, m + put, len - put) : 0;

		assert_true(n >= 0 || errno == EAGAIN);
		if (n > 0)
			put += (size_t)n;
		if (put == got)
			continue;
		n = iol_read(rfd, &s->agg, len - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	expect_add(s, m, len);
	free(m);
	close(wfd);
	close(rfd);
}

static void src_make(struct src *s, enum src_kind kind)
{
	memset(s, 0, sizeof(*s));
	s->seed = 1000 + kind * 100;
	assert_int_equal(zc_agg_create(&s->agg), 0);
	switch (kind) {
	case SRC_FILE:
		add_file(s, 4099, MiB + 100, 77);
		break;
	case SRC_BUF:
		add_buf(s, 7, MiB - 20, 13);
		break;
	case SRC_SMALL:
		for (int i = 0; i < 40; i++)
			add_buf(s, (size_t)i, 1000 + (size_t)i * 211, 3);
		break;
	case SRC_MIXED:
		add_buf(s, 0, 137, 0);			/* a header */
		add_file(s, 333, 200 * KiB, 5);		/* a body */
		add_buf(s, 100, 300 * KiB, 0);		/* a large buffer */
		add_buf(s, 1, 5000, 9);			/* chunk trailer */
		add_file(s, 0, 17, 0);			/* a tiny file */
		add_buf(s, 0, 1, 0);
		add_buf(s, 100, 64 * KiB, 64 * KiB);
		add_file(s, 4096, 150 * KiB, 0);
		add_buf(s, 0, 2, 0);
		break;
	case SRC_BORROWED:
		add_mem(s, 137);			/* a response head */
		add_file(s, 333, 200 * KiB, 5);
		add_mem(s, 40 * KiB);			/* large: still copied */
		add_buf(s, 100, 300 * KiB, 0);
		add_mem(s, 1);
		add_file(s, 0, 17, 0);
		add_mem(s, 5000);
		break;
	case SRC_READ:
		add_read(s, TU_UNIX, 137);		/* a request head */
		add_read(s, TU_PIPE, 300 * KiB);	/* pages of a pipe */
		add_file(s, 333, 200 * KiB, 5);
		add_read(s, TU_TCP, 5000);
		add_buf(s, 1, 5000, 9);
		add_read(s, TU_UNIX, 70 * KiB);
		add_read(s, TU_PIPE, 1);
		break;
	}
	assert_int_equal(zc_agg_len(s->agg), s->len);
}

static void src_free(struct src *s)
{
	zc_agg_release(s->agg);
	zc_buf_release(s->big);
	free(s->expect);
	for (size_t i = 0; i < s->nmem; i++)
		free(s->mem[i]);
}

static bool buf_kref(const zc_buf *b)
{
	return atomic_load(&((zc_buf *)b)->flags) & ZC_BUF_KREF;
}

/* --------------------------------------------------- every transfer pair */

enum dst_kind { DST_TCP, DST_PIPE, DST_UNIX, DST_FILE, DST_NULL };

struct pair_case {
	enum src_kind src;
	enum dst_kind dst;
};

/* Stream destinations: a reader thread collects everything until EOF. */
static void send_stream(struct src *s, enum dst_kind dst)
{
	static const enum tu_kind kinds[] = { TU_TCP, TU_PIPE, TU_UNIX };
	struct tu_reader r;
	int wfd = -1, rfd = -1;
	ssize_t n;

	assert_int_equal(tu_pair(kinds[dst], &wfd, &rfd), 0);
	assert_int_equal(tu_reader_start(&r, rfd, 0), 0);
	/* A blocking descriptor takes the whole aggregate in one call. */
	n = iol_write(wfd, s->agg);
	assert_int_equal(n, (ssize_t)s->len);
	assert_int_equal(zc_agg_len(s->agg), 0);
	close(wfd);
	tu_reader_join(&r);
	close(rfd);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.len, s->len);
	assert_memory_equal(r.data, s->expect, s->len);
	tu_reader_free(&r);
}

/* A file destination writes at (and advances) the current offset. */
static void send_file(struct src *s, int append)
{
	char path[256];
	unsigned char *back;
	int fd = tu_pattern_file(0, 0, path, sizeof(path));

	assert_true(fd >= 0);
	if (append) {
		close(fd);
		fd = open(path, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
	}
	assert_int_equal(write(fd, "PREFIX", 6), 6);
	if (append)
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);	/* ignored */
	assert_int_equal(iol_write(fd, s->agg), (ssize_t)s->len);
	assert_int_equal(zc_agg_len(s->agg), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (off_t)(6 + s->len));
	close(fd);

	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	back = malloc(s->len + 6);
	assert_non_null(back);
	assert_int_equal(pread(fd, back, s->len + 7, 0), (ssize_t)(s->len + 6));
	assert_memory_equal(back, "PREFIX", 6);
	assert_memory_equal(back + 6, s->expect, s->len);
	free(back);
	close(fd);
	unlink(path);
}

static void test_pair(void **state)
{
	const struct pair_case *c = *state;
	struct zc_io_stats before, after;
	struct src s;
	int fd;

	src_make(&s, c->src);
	zc_io_stats(&before);
	switch (c->dst) {
	case DST_TCP:
	case DST_PIPE:
	case DST_UNIX:
		send_stream(&s, c->dst);
		break;
	case DST_FILE:
		send_file(&s, 0);
		break;
	case DST_NULL:
		fd = open("/dev/null", O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(iol_write(fd, s.agg), (ssize_t)s.len);
		assert_int_equal(zc_agg_len(s.agg), 0);
		close(fd);
		break;
	}
	zc_io_stats(&after);
	assert_true(after.calls > before.calls);
	if (c->dst <= DST_UNIX && c->src != SRC_SMALL) {
		/* Large buffers and file extents went by reference... */
		uint64_t lent = after.bytes_by_reference -
				before.bytes_by_reference;

		assert_true(lent >= (c->src == SRC_MIXED || c->src == SRC_READ
				     ? s.len / 2 : s.len));
	}
	if (s.big) {
		/* ...and every buffer lent to the kernel is marked so. */
		assert_int_equal(buf_kref(s.big), c->dst <= DST_UNIX);
	}
	src_free(&s);
}

static void partial_writes(enum tu_kind kind, enum src_kind sk);

/* Borrowed memory (zc_agg_append_mem) goes out by copy on every path --
 * never vmspliced, never sendfile'd -- so its owner may reuse it as soon
 * as iol_write has passed it; partial writes resume inside it. */
static void test_borrowed_memory(void **state)
{
	static const enum dst_kind dsts[] = { DST_TCP, DST_PIPE, DST_UNIX };
	struct zc_io_stats before, after;
	struct src s;

	(void)state;
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		src_make(&s, SRC_BORROWED);
		zc_io_stats(&before);
		send_stream(&s, dsts[i]);
		zc_io_stats(&after);
		/* 137 + 40 KiB + 1 + 5000 borrowed bytes were copied. */
		assert_true(after.bytes_copied - before.bytes_copied >=
			    137 + 40 * KiB + 1 + 5000);
		/* Nothing is left that names the memory: scribble on it. */
		for (size_t k = 0; k < s.nmem; k++)
			s.mem[k][0] ^= 0xff;
		src_free(&s);
	}
	src_make(&s, SRC_BORROWED);
	send_file(&s, 0);
	src_free(&s);
	partial_writes(TU_PIPE, SRC_BORROWED);
	partial_writes(TU_UNIX, SRC_BORROWED);
	partial_writes(TU_TCP, SRC_BORROWED);
}

static void test_append_destination(void **state)
{
	struct src s;

	(void)state;
	src_make(&s, SRC_MIXED);	/* file slices take the fallback */
	send_file(&s, 1);
	src_free(&s);
}

/* Small buffers are copied (cheaper than detaching pages), never marked. */
static void test_small_slices_copied(void **state)
{
	struct tu_reader r;
	zc_buf *b;
	zc_agg *a;
	int wfd = -1, rfd = -1;

	(void)state;
	assert_int_equal(zc_buf_from_bytes(NULL, "GET / HTTP/1.1\r\n\r\n", 18,
					   &b), 0);
	assert_int_equal(zc_agg_create(&a), 0);
	assert_int_equal(zc_agg_append_buf(a, b, 0, 18), 0);
	assert_int_equal(tu_pair(TU_PIPE, &wfd, &rfd), 0);
	assert_int_equal(tu_reader_start(&r, rfd, 0), 0);
	assert_int_equal(iol_write(wfd, a), 18);
	close(wfd);
	tu_reader_join(&r);
	assert_int_equal(r.len, 18);
	assert_memory_equal(r.data, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_false(buf_kref(b));
	tu_reader_free(&r);
	close(rfd);
	zc_agg_release(a);
	zc_buf_release(b);
}

/* ------------------------------------------------------------- iol_read */

struct writer {
	int fd;
	size_t len;
	uint64_t seed;
	pthread_t tid;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned char chunk[10007];

	for (size_t off = 0; off < w->len;) {
		size_t n = w->len - off < sizeof(chunk) ? w->len - off
							: sizeof(chunk);
		ssize_t k;

		tu_fill(chunk, n, w->seed, off);
		k = write(w->fd, chunk, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	close(w->fd);
	return NULL;
}

/* Read everything with iol_read, then compare the aggregate's bytes. */
static void read_stream_kind(enum tu_kind kind)
{
	struct writer w = { .len = 3 * MiB + 12345, .seed = 77 + kind };
	zc_agg *a = NULL;
	unsigned char *got;
	size_t total = 0;
	int rfd = -1;
	ssize_t n;

	assert_int_equal(tu_pair(kind, &w.fd, &rfd), 0);
	assert_int_equal(pthread_create(&w.tid, NULL, writer_main, &w), 0);
	while ((n = iol_read(rfd, &a, 100 * KiB)) > 0) {
		assert_true(n <= (ssize_t)(100 * KiB));
		total += (size_t)n;
	}
	assert_int_equal(n, 0);
	pthread_join(w.tid, NULL);
	assert_int_equal(total, w.len);
	assert_int_equal(zc_agg_len(a), w.len);
	for (size_t i = 0; i < zc_agg_nslices(a); i++) {
		struct zc_slice sl;

		assert_int_equal(zc_agg_slice(a, i, &sl), 0);
		assert_int_equal(sl.kind, ZC_SLICE_BUF);
	}
	got = malloc(w.len);
	assert_non_null(got);
	assert_int_equal(zc_agg_copyout(a, 0, got, w.len), (ssize_t)w.len);
	assert_int_equal(tu_check(got, w.len, w.seed, 0), -1);
	/* At EOF: 0 again, and a NULL aggregate is created empty. */
	zc_agg *b = NULL;

	assert_int_equal(iol_read(rfd, &b, 10), 0);
	assert_non_null(b);
	assert_int_equal(zc_agg_len(b), 0);
	zc_agg_release(b);
	free(got);
	zc_agg_release(a);
	close(rfd);
}

static void test_read_pipe(void **state)
{
	(void)state;
	read_stream_kind(TU_PIPE);
}

static void test_read_tcp(void **state)
{
	(void)state;
	read_stream_kind(TU_TCP);
}

static void test_read_unix(void **state)
{
	(void)state;
	read_stream_kind(TU_UNIX);
}

/* A file read references the page cache: no data is read, the offset
 * moves as read(2) would move it. */
static void test_read_file(void **state)
{
	const size_t flen = 300000;
	struct zc_io_stats before, after;
	struct zc_slice sl;
	unsigned char *got;
	zc_agg *a = NULL;
	int fd = tu_pattern_file(flen, 5, NULL, 0);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 100, SEEK_SET), 100);
	zc_io_stats(&before);
	assert_int_equal(iol_read(fd, &a, 1000), 1000);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 1100);
	assert_int_equal(zc_agg_nslices(a), 1);
	assert_int_equal(zc_agg_slice(a, 0, &sl), 0);
	assert_int_equal(sl.kind, ZC_SLICE_FILE);
	assert_int_equal(sl.off, 100);
	assert_int_equal(iol_read(fd, &a, 10 * MiB), (ssize_t)(flen - 1100));
	zc_io_stats(&after);
	assert_int_equal(after.bytes_copied, before.bytes_copied);
	assert_int_equal(after.bytes_by_reference - before.bytes_by_reference,
			 flen - 100);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (off_t)flen);
	assert_int_equal(iol_read(fd, &a, 10), 0);	/* EOF */
	assert_int_equal(zc_agg_len(a), flen - 100);
	got = malloc(flen);
	assert_non_null(got);
	assert_int_equal(zc_agg_copyout(a, 0, got, flen - 100),
			 (ssize_t)(flen - 100));
	assert_int_equal(tu_check(got, flen - 100, 5, 100), -1);
	/* Past the end (sparse seek): EOF too. */
	assert_int_equal(lseek(fd, (off_t)flen + 5000, SEEK_SET),
			 (off_t)flen + 5000);
	assert_int_equal(iol_read(fd, &a, 10), 0);
	free(got);
	zc_agg_release(a);
	close(fd);
}

/* Files whose size says 0 (procfs) are read like streams. */
static void test_read_proc_file(void **state)
{
	zc_agg *a = NULL;
	const void *data;
	size_t len;
	int fd = open("/proc/self/status", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_true(iol_read(fd, &a, 64 * KiB) > 0);
	assert_int_equal(zc_agg_map(a, NULL, &data, &len), 0);
	assert_non_null(memmem(data, len, "Name:", 5));
	zc_agg_release(a);
	close(fd);

	/* An empty regular file: EOF straight away. */
	fd = tu_pattern_file(0, 0, NULL, 0);
	a = NULL;
	assert_int_equal(iol_read(fd, &a, 100), 0);
	assert_int_equal(zc_agg_len(a), 0);
	zc_agg_release(a);
	close(fd);
}

static void test_read_eagain(void **state)
{
	zc_agg *a = NULL;
	int fds[2];

	(void)state;
	assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
	assert_int_equal(iol_read(fds[0], &a, 100), -EAGAIN);
	assert_null(a);		/* unchanged on error */
	assert_int_equal(write(fds[1], "abc", 3), 3);
	assert_int_equal(iol_read(fds[0], &a, 100), 3);
	assert_int_equal(zc_agg_len(a), 3);
	/* Appends to an existing aggregate; still -EAGAIN when empty. */
	assert_int_equal(iol_read(fds[0], &a, 100), -EAGAIN);
	assert_int_equal(zc_agg_len(a), 3);
	close(fds[1]);
	assert_int_equal(iol_read(fds[0], &a, 100), 0);
	assert_int_equal(zc_agg_len(a), 3);
	zc_agg_release(a);
	close(fds[0]);
}

/* A small read takes a small buffer, not 256 KiB of pool. */
static void test_read_sized_to_queue(void **state)
{
	struct zc_slice sl;
	zc_agg *a = NULL;
	int fds[2];

	(void)state;
	assert_int_equal(pipe2(fds, 0), 0);
	assert_int_equal(write(fds[1], "hello", 5), 5);
	assert_int_equal(iol_read(fds[0], &a, 1 * MiB), 5);
	assert_int_equal(zc_agg_slice(a, 0, &sl), 0);
	assert_int_equal(zc_buf_capacity(sl.buf), 4096);
	zc_agg_release(a);
	close(fds[0]);
	close(fds[1]);
}

/* ------------------------------------------------------ partial writes */

static void shrink_buffers(enum tu_kind kind, int wfd, int rfd)
{
	int small = 4096;

	if (kind == TU_PIPE) {
		assert_true(fcntl(wfd, F_SETPIPE_SZ, 4096) >= 0);
		return;
	}
	assert_int_equal(setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	/* A tiny TCP receive window crawls (zero-window probes, delayed
	 * ACKs); the small send buffer alone gives partial writes. */
	if (kind != TU_TCP)
		assert_int_equal(setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &small,
					    sizeof(small)), 0);
}

/* Read whatever is there without blocking; returns bytes read. */
static size_t drain(int fd, unsigned char *dst, size_t room)
{
	size_t got = 0;
	ssize_t n;

	while (got < room && (n = read(fd, dst + got, room - got)) > 0)
		got += (size_t)n;
	return got;
}

static void partial_writes(enum tu_kind kind, enum src_kind sk)
{
	struct src s;
	unsigned char *recv;
	size_t got = 0, written;
	int wfd = -1, rfd = -1, calls = 1, eagains = 0, iter = 0;
	ssize_t n;

	src_make(&s, sk);
	assert_int_equal(tu_pair(kind, &wfd, &rfd), 0);
	shrink_buffers(kind, wfd, rfd);
	tu_set_nonblock(wfd, 1);
	tu_set_nonblock(rfd, 1);
	recv = malloc(s.len);
	assert_non_null(recv);

	n = iol_write(wfd, s.agg);
	assert_true(n > 0 && (size_t)n < s.len);	/* partial */
	written = (size_t)n;
	assert_int_equal(zc_agg_len(s.agg), s.len - written);
	while (got < s.len) {
		assert_true(++iter < 1000000);
		struct pollfd p[2] = { { rfd, POLLIN, 0 },
				       { wfd, POLLOUT, 0 } };
		size_t d = drain(rfd, recv + got, s.len - got);

		got += d;
		if (zc_agg_len(s.agg)) {
			n = iol_write(wfd, s.agg);
			calls++;
			if (n == -EAGAIN)
				eagains++;
			else
				assert_true(n > 0);
			if (n > 0)
				written += (size_t)n;
			/* The aggregate is the resumable state. */
			assert_int_equal(zc_agg_len(s.agg), s.len - written);
		}
		if (!d && (n <= 0 || !zc_agg_len(s.agg)))
			poll(p, zc_agg_len(s.agg) ? 2 : 1, 200);
		if (!zc_agg_len(s.agg) && wfd >= 0) {
			close(wfd);
			wfd = -1;
		}
	}
	assert_true(calls > 2);
	assert_int_equal(got, s.len);
	assert_memory_equal(recv, s.expect, s.len);
	free(recv);
	close(rfd);
	src_free(&s);
	(void)eagains;
}

static void test_partial_pipe(void **state)
{
	(void)state;
	partial_writes(TU_PIPE, SRC_MIXED);
	partial_writes(TU_PIPE, SRC_SMALL);
	partial_writes(TU_PIPE, SRC_READ);
}

static void test_partial_unix(void **state)
{
	(void)state;
	partial_writes(TU_UNIX, SRC_MIXED);
	partial_writes(TU_UNIX, SRC_SMALL);
	partial_writes(TU_UNIX, SRC_READ);
}

static void test_partial_tcp(void **state)
{
	(void)state;
	partial_writes(TU_TCP, SRC_MIXED);
	partial_writes(TU_TCP, SRC_SMALL);
	partial_writes(TU_TCP, SRC_READ);
}

/* ----------------------------------------------------------------- EAGAIN */

/* Fill a non-blocking descriptor until nothing more fits, and make sure it
 * stays full (TCP keeps moving data to the receiver for a while). */
static void fill_full(int fd)
{
	static char junk[65536];

	for (int round = 0; round < 100; round++) {
		for (size_t sz = sizeof(junk); sz >= 1; sz /= 2)
			while (write(fd, junk, sz) > 0)
				;
		usleep(20000);
		if (write(fd, junk, 1) < 0 && errno == EAGAIN)
			return;
	}
	fail_msg("descriptor never filled up");
}

static void eagain_case(enum tu_kind kind, enum src_kind sk)
{
	struct zc_slice before, after;
	struct src s;
	int wfd = -1, rfd = -1;
	size_t nsl;

	src_make(&s, sk);
	assert_int_equal(tu_pair(kind, &wfd, &rfd), 0);
	tu_set_nonblock(wfd, 1);
	fill_full(wfd);
	nsl = zc_agg_nslices(s.agg);
	assert_int_equal(zc_agg_slice(s.agg, 0, &before), 0);
	assert_int_equal(iol_write(wfd, s.agg), -EAGAIN);
	assert_int_equal(zc_agg_len(s.agg), s.len);
	assert_int_equal(zc_agg_nslices(s.agg), nsl);
	assert_int_equal(zc_agg_slice(s.agg, 0, &after), 0);
	assert_int_equal(after.off, before.off);
	assert_int_equal(after.len, before.len);
	close(wfd);
	close(rfd);
	src_free(&s);
}

static void test_eagain(void **state)
{
	static const enum tu_kind kinds[] = { TU_PIPE, TU_UNIX, TU_TCP };
	static const enum src_kind srcs[] = { SRC_FILE, SRC_BUF, SRC_SMALL,
					      SRC_MIXED, SRC_READ };

	(void)state;
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < 5; i++)
			eagain_case(kinds[k], srcs[i]);
}

/* ------------------------------------------------------------------ EINTR */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* SIGALRM without SA_RESTART, so blocking calls fail with EINTR. */
static void alarm_in(long ms, struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, old), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void alarm_off(const struct sigaction *old)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
	sigaction(SIGALRM, old, NULL);
}

/*
 * A blocking write interrupted by a signal: -EINTR if nothing went out,
 * else the partial count; then resuming delivers exactly the right bytes.
 * `prefill`: fill the destination completely first (so nothing can go).
 */
static void eintr_case(enum tu_kind kind, enum src_kind sk, int prefill)
{
	struct sigaction old;
	struct tu_reader r;
	struct src s;
	size_t junk = 0, written = 0;
	int wfd = -1, rfd = -1;
	ssize_t n;

	src_make(&s, sk);
	assert_int_equal(tu_pair(kind, &wfd, &rfd), 0);
	shrink_buffers(kind, wfd, rfd);
	if (prefill) {
		tu_set_nonblock(wfd, 1);
		fill_full(wfd);
		tu_set_nonblock(wfd, 0);
	}
	alarms = 0;
	alarm_in(150, &old);
	n = iol_write(wfd, s.agg);
	alarm_off(&old);
	assert_int_equal(alarms, 1);
	if (prefill && kind != TU_TCP) {
		assert_int_equal(n, -EINTR);
		assert_int_equal(zc_agg_len(s.agg), s.len);	/* unchanged */
	} else {
		/* TCP's receive window keeps growing (autotuning), so even a
		 * "full" connection may take some bytes before blocking. */
		assert_true(n == -EINTR || (n > 0 && (size_t)n < s.len));
		if (n > 0)
			written = (size_t)n;
		assert_int_equal(zc_agg_len(s.agg), s.len - written);
	}

	/* Resume with a reader draining: everything arrives exactly once. */
	assert_int_equal(tu_reader_start(&r, rfd, 0), 0);
	n = iol_write(wfd, s.agg);
	assert_int_equal(n, (ssize_t)(s.len - written));
	close(wfd);
	tu_reader_join(&r);
	if (prefill) {
		/* The prefill was zero bytes; the data follows it. */
		assert_true(r.len >= s.len);
		junk = r.len - s.len;
		for (size_t i = 0; i < junk; i++)
			assert_int_equal(r.data[i], 0);
	}
	assert_int_equal(r.len, junk + s.len);
	assert_memory_equal(r.data + junk, s.expect, s.len);
	tu_reader_free(&r);
	close(rfd);
	src_free(&s);
}

static void test_eintr_pipe(void **state)
{
	(void)state;
	eintr_case(TU_PIPE, SRC_BUF, 1);	/* vmsplice, nothing written */
	eintr_case(TU_PIPE, SRC_FILE, 1);	/* splice, nothing written */
	eintr_case(TU_PIPE, SRC_SMALL, 1);	/* writev */
	/* writev moved some bytes, then the signal: the partial count comes
	 * back at once (looping would block with no signal to come). */
	eintr_case(TU_PIPE, SRC_SMALL, 0);
	eintr_case(TU_PIPE, SRC_MIXED, 0);	/* partial */
	eintr_case(TU_PIPE, SRC_BUF, 0);
	eintr_case(TU_PIPE, SRC_READ, 1);
	eintr_case(TU_PIPE, SRC_READ, 0);
}

static void test_eintr_unix(void **state)
{
	(void)state;
	eintr_case(TU_UNIX, SRC_BUF, 1);	/* sendfile from memfd */
	eintr_case(TU_UNIX, SRC_SMALL, 0);	/* sendmsg */
	eintr_case(TU_UNIX, SRC_MIXED, 0);
	eintr_case(TU_UNIX, SRC_READ, 1);
	eintr_case(TU_UNIX, SRC_READ, 0);
}

static void test_eintr_tcp(void **state)
{
	(void)state;
	eintr_case(TU_TCP, SRC_FILE, 1);	/* sendfile */
	eintr_case(TU_TCP, SRC_MIXED, 0);
	eintr_case(TU_TCP, SRC_READ, 0);
}

/* ------------------------------------------------------------ peer death */

static void peer_death(enum tu_kind kind, enum src_kind sk)
{
	struct src s;
	size_t total = 0;
	int wfd = -1, rfd = -1, status, iter = 0;
	pid_t pid;
	ssize_t n;

	src_make(&s, sk);
	/* Make it big enough that the peer cannot swallow it all. */
	for (int i = 0; i < 8; i++) {
		add_buf(&s, 0, MiB, 0);
		add_file(&s, 0, 512 * KiB, 0);
	}
	assert_int_equal(tu_pair(kind, &wfd, &rfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static unsigned char b[100000];
		size_t got = 0;
		ssize_t k;

		close(wfd);
		while (got < sizeof(b) &&
		       (k = read(rfd, b + got, sizeof(b) - got)) > 0)
			got += (size_t)k;
		_exit(memcmp(b, s.expect, got) ? 1 : 0);
	}
	close(rfd);
	while ((n = iol_write(wfd, s.agg)) > 0 && ++iter < 100000)
		total += (size_t)n;
	assert_true(n == -EPIPE || n == -ECONNRESET);
	assert_true(total < s.len);
	assert_int_equal(zc_agg_len(s.agg), s.len - total);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Still dead: no crash, same answer. */
	n = iol_write(wfd, s.agg);
	assert_true(n == -EPIPE || n == -ECONNRESET);
	close(wfd);
	src_free(&s);
}

static void test_peer_death(void **state)
{
	(void)state;
	peer_death(TU_PIPE, SRC_MIXED);
	peer_death(TU_UNIX, SRC_MIXED);
	peer_death(TU_TCP, SRC_MIXED);
	peer_death(TU_TCP, SRC_READ);
}

/* A forked child that releases what it inherited from iol_read frees
 * nothing of the parent's (kernel buffers: the ids are the parent's;
 * pool buffers: the pool is), and the parent then sends it whole. */
static void test_read_fork(void **state)
{
	struct src s;
	int status;
	pid_t pid;

	(void)state;
	src_make(&s, SRC_READ);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		zc_agg_release(s.agg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	send_stream(&s, DST_TCP);
	src_free(&s);
}

/* ---------------------------------------------- files changed under us */

static int open_dest(enum dst_kind d, int *rfd)
{
	static const enum tu_kind kinds[] = { TU_TCP, TU_PIPE, TU_UNIX };
	int wfd = -1;

	*rfd = -1;
	if (d <= DST_UNIX) {
		assert_int_equal(tu_pair(kinds[d], &wfd, rfd), 0);
		return wfd;
	}
	if (d == DST_FILE)
		return tu_pattern_file(0, 0, NULL, 0);
	return open("/dev/null", O_WRONLY);
}

static void stale_case(enum dst_kind d, int how)
{
	const size_t flen = 512 * KiB;
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	zc_agg *a = NULL;
	int fd = tu_pattern_file(flen, 9, NULL, 0);
	int wfd = -1, rfd = -1;

	assert_true(fd >= 0);
	assert_int_equal(iol_read(fd, &a, flen), (ssize_t)flen);
	if (how == 0)
		assert_int_equal(ftruncate(fd, 1000), 0);
	else
		assert_int_equal(futimens(fd, ts), 0);	/* mtime changed */
	wfd = open_dest(d, &rfd);
	assert_true(wfd >= 0);
	assert_int_equal(iol_write(wfd, a), -ESTALE);
	assert_int_equal(zc_agg_len(a), flen);
	zc_agg_release(a);
	close(wfd);
	if (rfd >= 0)
		close(rfd);
	close(fd);
}

static void test_stale_extent(void **state)
{
	(void)state;
	for (int d = DST_TCP; d <= DST_NULL; d++) {
		stale_case((enum dst_kind)d, 0);
		stale_case((enum dst_kind)d, 1);
	}
}

/* Truncated half way through a resumable write: progress first, then
 * -ESTALE, never a SIGBUS and never wrong bytes. */
static void test_stale_midway(void **state)
{
	const size_t flen = 512 * KiB;
	unsigned char got[8192];
	zc_agg *a = NULL;
	int fd = tu_pattern_file(flen, 10, NULL, 0);
	int wfd = -1, rfd = -1;
	ssize_t n;

	(void)state;
	assert_int_equal(iol_read(fd, &a, flen), (ssize_t)flen);
	assert_int_equal(tu_pair(TU_PIPE, &wfd, &rfd), 0);
	assert_true(fcntl(wfd, F_SETPIPE_SZ, 4096) >= 0);
	tu_set_nonblock(wfd, 1);
	n = iol_write(wfd, a);
	assert_true(n > 0 && (size_t)n < flen);
	assert_int_equal(read(rfd, got, sizeof(got)), n);
	assert_int_equal(tu_check(got, (size_t)n, 10, 0), -1);
	assert_int_equal(ftruncate(fd, 100), 0);
	assert_int_equal(iol_write(wfd, a), -ESTALE);
	assert_int_equal(zc_agg_len(a), flen - (size_t)n);
	zc_agg_release(a);
	close(wfd);
	close(rfd);
	close(fd);
}

/* A sink that trusts its extents skips the version check (a changed mtime
 * is sent), but a file that shrank still ends in -ESTALE, never in wrong
 * or missing bytes passed off as complete. */
static void test_trusted_extents(void **state)
{
	const size_t flen = 32 * KiB;
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	unsigned char got[32 * KiB];
	zc_agg *a = NULL;
	int fd = tu_pattern_file(flen, 11, NULL, 0);
	int wfd = -1, rfd = -1;
	zc_sink sink;

	(void)state;
	assert_int_equal(tu_pair(TU_PIPE, &wfd, &rfd), 0);
	assert_int_equal(zc_sink_init(&sink, wfd), 0);
	zc_sink_trust_extents(&sink, 1);

	assert_int_equal(iol_read(fd, &a, flen), (ssize_t)flen);
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(iol_write_sink(&sink, a), (ssize_t)flen);
	assert_int_equal(read(rfd, got, sizeof(got)), (ssize_t)flen);
	assert_int_equal(tu_check(got, flen, 11, 0), -1);
	zc_agg_release(a);

	a = NULL;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(iol_read(fd, &a, flen), (ssize_t)flen);
	assert_int_equal(ftruncate(fd, 1000), 0);
	assert_int_equal(iol_write_sink(&sink, a), 1000);
	assert_int_equal(iol_write_sink(&sink, a), -ESTALE);
	assert_int_equal(zc_agg_len(a), flen - 1000);
	zc_agg_release(a);
	close(wfd);
	close(rfd);
	close(fd);
}

/* --------------------------------------------------------- bad arguments */

static void test_bad_args(void **state)
{
	zc_agg *a = NULL, *b;
	int fds[2], closed;
	unsigned char before[64 * KiB];
	zc_buf *buf;

	(void)state;
	assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
	closed = dup(fds[0]);
	close(closed);

	assert_int_equal(iol_read(-1, &a, 10), -EBADF);
	assert_int_equal(iol_read(closed, &a, 10), -EBADF);
	assert_int_equal(iol_read(fds[0], NULL, 10), -EINVAL);
	assert_int_equal(iol_read(fds[0], &a, (size_t)-1), -EINVAL);
	assert_int_equal(iol_read(fds[0], &a, (size_t)-4096), -EINVAL);
	assert_null(a);
	/* Size 0: nothing read, but an aggregate to release. */
	assert_int_equal(iol_read(fds[0], &a, 0), 0);
	assert_non_null(a);
	assert_int_equal(zc_agg_len(a), 0);

	assert_int_equal(iol_write(fds[1], NULL), -EINVAL);
	assert_int_equal(iol_write(-1, a), -EBADF);
	assert_int_equal(iol_write(closed, a), -EBADF);
	assert_int_equal(iol_write(fds[1], a), 0);	/* empty */

	/* Writing to a read end: -EBADF, and above all vmsplice must not
	 * read the pipe into the (immutable) buffer. */
	assert_int_equal(write(fds[1], "zzzzzzzz", 8), 8);
	tu_fill(before, sizeof(before), 3, 0);
	assert_int_equal(zc_buf_from_bytes(NULL, before, sizeof(before), &buf),
			 0);
	assert_int_equal(zc_agg_append_buf(a, buf, 0, sizeof(before)), 0);
	assert_int_equal(iol_write(fds[0], a), -EBADF);
	assert_memory_equal(zc_buf_data(buf), before, sizeof(before));
	assert_int_equal(zc_agg_len(a), sizeof(before));
	assert_int_equal(iol_write(closed, a), -EBADF);
	assert_int_equal(iol_write(-5, a), -EBADF);

	/* A read-only file is not writable; a write-only one not readable. */
	{
		char path[256];
		int fd = tu_pattern_file(100, 1, path, sizeof(path));
		int ro = open(path, O_RDONLY), wo = open(path, O_WRONLY);

		b = NULL;
		assert_int_equal(iol_write(ro, a), -EBADF);
		assert_int_equal(iol_read(wo, &b, 10), -EBADF);
		assert_null(b);
		close(ro);
		close(wo);
		close(fd);
		unlink(path);
	}
	zc_buf_release(buf);
	zc_agg_release(a);
	close(fds[0]);
	close(fds[1]);
}

static void test_fdkind(void **state)
{
	int fds[2], c, s, fd;

	(void)state;
	assert_int_equal(zc_fdkind_of(-1), ZC_FD_BAD);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(zc_fdkind_of(fds[0]), ZC_FD_PIPE);
	assert_int_equal(zc_fdkind_of(fds[1]), ZC_FD_PIPE);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(zc_fdkind_of(fds[0]), ZC_FD_BAD);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	assert_int_equal(zc_fdkind_of(fds[0]), ZC_FD_UNIX);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, fds), 0);
	assert_int_equal(zc_fdkind_of(fds[0]), ZC_FD_OTHER);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(tu_tcp_pair(&c, &s), 0);
	assert_int_equal(zc_fdkind_of(c), ZC_FD_TCP);
	assert_int_equal(zc_fdkind_of(s), ZC_FD_TCP);
	close(c);
	close(s);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(zc_fdkind_of(fd), ZC_FD_OTHER);
	close(fd);
	fd = tu_pattern_file(1, 1, NULL, 0);
	assert_int_equal(zc_fdkind_of(fd), ZC_FD_FILE);
	close(fd);
	fd = open("/dev/null", O_RDWR);
	assert_int_equal(zc_fdkind_of(fd), ZC_FD_OTHER);
	close(fd);
}

/* ------------------------------------------------------------------ main */

#define PAIR(s, d) { s, d }
static const struct pair_case pairs[] = {
	PAIR(SRC_FILE, DST_TCP), PAIR(SRC_FILE, DST_PIPE),
	PAIR(SRC_FILE, DST_UNIX), PAIR(SRC_FILE, DST_FILE),
	PAIR(SRC_FILE, DST_NULL),
	PAIR(SRC_BUF, DST_TCP), PAIR(SRC_BUF, DST_PIPE),
	PAIR(SRC_BUF, DST_UNIX), PAIR(SRC_BUF, DST_FILE),
	PAIR(SRC_BUF, DST_NULL),
	PAIR(SRC_MIXED, DST_TCP), PAIR(SRC_MIXED, DST_PIPE),
	PAIR(SRC_MIXED, DST_UNIX), PAIR(SRC_MIXED, DST_FILE),
	PAIR(SRC_MIXED, DST_NULL),
	PAIR(SRC_SMALL, DST_TCP), PAIR(SRC_SMALL, DST_PIPE),
	PAIR(SRC_SMALL, DST_UNIX), PAIR(SRC_SMALL, DST_FILE),
	PAIR(SRC_READ, DST_TCP), PAIR(SRC_READ, DST_PIPE),
	PAIR(SRC_READ, DST_UNIX), PAIR(SRC_READ, DST_FILE),
	PAIR(SRC_READ, DST_NULL),
};

/* Named like the pair, so a failure says which one. */
#define PAIR_TEST(i, name) \
	{ "pair_" name, test_pair, NULL, NULL, (void *)&pairs[i] }

int main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(0, "file_to_tcp"),
		PAIR_TEST(1, "file_to_pipe"),
		PAIR_TEST(2, "file_to_unix"),
		PAIR_TEST(3, "file_to_file"),
		PAIR_TEST(4, "file_to_devnull"),
		PAIR_TEST(5, "buf_to_tcp"),
		PAIR_TEST(6, "buf_to_pipe"),
		PAIR_TEST(7, "buf_to_unix"),
		PAIR_TEST(8, "buf_to_file"),
		PAIR_TEST(9, "buf_to_devnull"),
		PAIR_TEST(10, "mixed_to_tcp"),
		PAIR_TEST(11, "mixed_to_pipe"),
		PAIR_TEST(12, "mixed_to_unix"),
		PAIR_TEST(13, "mixed_to_file"),
		PAIR_TEST(14, "mixed_to_devnull"),
		PAIR_TEST(15, "small_to_tcp"),
		PAIR_TEST(16, "small_to_pipe"),
		PAIR_TEST(17, "small_to_unix"),
		PAIR_TEST(18, "small_to_file"),
		PAIR_TEST(19, "read_to_tcp"),
		PAIR_TEST(20, "read_to_pipe"),
		PAIR_TEST(21, "read_to_unix"),
		PAIR_TEST(22, "read_to_file"),
		PAIR_TEST(23, "read_to_devnull"),
		cmocka_unit_test(test_append_destination),
		cmocka_unit_test(test_borrowed_memory),
		cmocka_unit_test(test_small_slices_copied),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_read_pipe),
		cmocka_unit_test(test_read_tcp),
		cmocka_unit_test(test_read_unix),
		cmocka_unit_test(test_read_proc_file),
		cmocka_unit_test(test_read_eagain),
		cmocka_unit_test(test_read_sized_to_queue),
		cmocka_unit_test(test_partial_pipe),
		cmocka_unit_test(test_partial_unix),
		cmocka_unit_test(test_partial_tcp),
		cmocka_unit_test(test_eagain),
		cmocka_unit_test(test_eintr_pipe),
		cmocka_unit_test(test_eintr_unix),
		cmocka_unit_test(test_eintr_tcp),
		cmocka_unit_test(test_peer_death),
		cmocka_unit_test(test_read_fork),
		cmocka_unit_test(test_stale_extent),
		cmocka_unit_test(test_stale_midway),
		cmocka_unit_test(test_trusted_extents),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_fdkind),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
