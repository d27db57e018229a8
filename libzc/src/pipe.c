/*
 * pipe.c - pipes: bytes on their way from one socket to another, named by
 * aggregates without ever entering user memory (a reverse proxy's bodies:
 * splice upstream -> pipe, then pipe -> client).
 *
 * A pipe is a stream.  wpos counts the bytes ever spliced in, rpos the
 * bytes ever taken out; a pipe slice names positions [off, off+len) of the
 * stream, so aggregate operations stay pointer work (agg.c) and only
 * iol_write (io_write.c) and iol_splice_in touch the kernel pipe.  The
 * kernel lets bytes out of a pipe only at its front, in order: a slice can
 * be written once, and bytes its owner dropped (truncated, trimmed,
 * released) must be taken out unsent before a later slice's bytes can go.
 * zc_pipe_discard_to does that, to /dev/null by splice (no copy), or into a
 * scratch buffer where /dev/null cannot be had.
 *
 * Bytes nobody names are dropped too, but nobody may ever come to write
 * them: a proxy that truncates the body it relays and then closes the
 * exchange would leave them filling the pipe for good.  So the pipe counts
 * the slices that name it (`named`, apart from its references), and
 * iol_splice_in empties a pipe no slice names before splicing more in.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "internal.h"

#define SPLICE_IN_MAX ((size_t)1 << 30)	/* bytes per call, as io_write.c */
#define SCRATCH ((size_t)64 << 10)	/* discarding by read: one chunk */

/* ---------------------------------------------------------- life cycle */

int zc_pipe_create(size_t capacity, zc_pipe **out)
{
	zc_pipe *p;
	int fds[2], sz;

	if (!out)
		return -EINVAL;
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		int err = -errno;

		free(p);
		return err;
	}
	/* Best effort: an unprivileged process is refused (EPERM) above
	 * /proc/sys/fs/pipe-max-size or beyond its pipe-user-pages quota,
	 * and then keeps the kernel's default -- still a working pipe. */
	if (capacity)
		fcntl(fds[1], F_SETPIPE_SZ,
		      (int)zc_min_size(capacity, INT_MAX));
	sz = fcntl(fds[1], F_GETPIPE_SZ);
	p->refs = 1;
	p->rfd = fds[0];
	p->wfd = fds[1];
	p->cap = sz > 0 ? (size_t)sz : 0;
	*out = p;
	return 0;
}

zc_pipe *zc_pipe_ref(zc_pipe *p)
{
	if (p)
		p->refs++;
	return p;
}

void zc_pipe_release(zc_pipe *p)
{
	if (!p || --p->refs > 0)
		return;
	/* The bytes still inside go with the kernel pipe. */
	close(p->rfd);
	close(p->wfd);
	free(p->spill);
	free(p);
}

size_t zc_pipe_held(const zc_pipe *p)
{
	return p ? (size_t)(p->wpos - p->rpos) : 0;
}

size_t zc_pipe_capacity(const zc_pipe *p)
{
	return p ? p->cap : 0;
}

void zc_pipe_slice_get(zc_pipe *p)
{
	p->refs++;
	p->named++;
}

void zc_pipe_slice_put(zc_pipe *p)
{
	p->named--;
	zc_pipe_release(p);
}

/* ---------------------------------------------------------- discarding */

/* /dev/null, opened once per process, write-only: splice into it frees a
 * pipe's buffers without copying them.  -1 if it cannot be had (a
 * chroot without it). */
static pthread_once_t null_once = PTHREAD_ONCE_INIT;
static int null_fd = -1;

static void null_open(void)
{
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
}

/* Take up to n bytes out of the kernel pipe unsent: how many, or -errno. */
static ssize_t discard_kernel(zc_pipe *p, size_t n)
{
	unsigned char *scratch;
	ssize_t r = -1;

	pthread_once(&null_once, null_open);
	if (null_fd >= 0) {
		r = splice(p->rfd, NULL, null_fd, NULL, n, SPLICE_F_NONBLOCK);
		zc_stat_call();
		if (r > 0)
			return r;
	}
	/* No /dev/null, or it refused the splice: read into scratch. */
	scratch = malloc(zc_min_size(n, SCRATCH));
	if (!scratch)
		return -ENOMEM;
	r = read(p->rfd, scratch, zc_min_size(n, SCRATCH));
	zc_stat_call();
	if (r < 0)
		r = -errno;
	free(scratch);
	return r == 0 ? -EIO : r;	/* the bytes were counted in: lost */
}

int zc_pipe_discard_to(zc_pipe *p, uint64_t pos)
{
	size_t n;

	if (pos < p->rpos || pos > p->wpos)
		return -EINVAL;
	/* What a bounce left in the spill is first in the stream. */
	n = (size_t)zc_min_size(pos - p->rpos, p->kpos - p->rpos);
	if (n)
		zc_pipe_spill_done(p, n);
	while (p->rpos < pos) {
		ssize_t r = discard_kernel(p, (size_t)(pos - p->rpos));

		if (r < 0)
			return (int)r;
		p->kpos += (uint64_t)r;
		p->rpos += (uint64_t)r;
	}
	return 0;
}

/* ---------------------------------------------------------- the spill */

ssize_t zc_pipe_fill_spill(zc_pipe *p, size_t len)
{
	size_t have = (size_t)(p->kpos - p->rpos), room;
	ssize_t r;

	if (!p->spill && !(p->spill = malloc(ZC_PIPE_SPILL)))
		return -ENOMEM;
	if (have && p->spill_at)
		memmove(p->spill, p->spill + p->spill_at, have);
	p->spill_at = 0;
	room = zc_min_size(len, ZC_PIPE_SPILL - have);
	if (!room)
		return 0;
	r = read(p->rfd, p->spill + have, room);
	zc_stat_call();
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EIO;	/* counted in, yet not there */
	p->kpos += (uint64_t)r;
	return r;
}

void zc_pipe_spill_done(zc_pipe *p, size_t n)
{
	p->rpos += n;
	p->spill_at += n;
	if (p->rpos == p->kpos) {
		/* Empty: give the memory back, a bounce is the rare path. */
		free(p->spill);
		p->spill = NULL;
		p->spill_at = 0;
	}
}

/* ---------------------------------------------------------- splicing in */

/* Bytes no slice names can never be written: take them out, so they do
 * not fill the pipe for good. */
static int drop_unnamed(zc_pipe *p)
{
	if (p->named || p->rpos == p->wpos)
		return 0;
	return zc_pipe_discard_to(p, p->wpos);
}

/* Is the pipe full (no slot free)?  POLLOUT says a slot is. */
static bool pipe_full(const zc_pipe *p)
{
	struct pollfd pf = { .fd = p->wfd, .events = POLLOUT };

	zc_stat_call();
	return !(poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT));
}

/*
 * splice said EAGAIN.  The pipe must never wait (we are its only reader),
 * and the kernel applies SPLICE_F_NONBLOCK to a UNIX socket or pipe
 * source as well (a TCP socket follows its own O_NONBLOCK): so a
 * blocking source waits here for data, as read(2) would, unless the pipe
 * is what is full.  0: try again; -EAGAIN, -EINTR, -errno: return it.
 */
static int wait_source(int fd, const zc_pipe *p)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int fl = fcntl(fd, F_GETFL);

	zc_stat_call();
	if (fl < 0)
		return -errno;
	if ((fl & O_NONBLOCK) || pipe_full(p))
		return -EAGAIN;
	zc_stat_call();
	return poll(&pf, 1, -1) < 0 ? -errno : 0;
}

/* One splice into the pipe: bytes moved, 0 at EOF, or -errno.  After a
 * wait that found fd readable, EAGAIN can only be the pipe's. */
static ssize_t splice_in(int fd, zc_pipe *p, size_t size)
{
	for (bool waited = false;; waited = true) {
		ssize_t n = splice(fd, NULL, p->wfd, NULL,
				   zc_min_size(size, SPLICE_IN_MAX),
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int err;

		zc_stat_call();
		if (n >= 0)
			return n;
		if (errno != EAGAIN || waited)
			return -errno;
		if ((err = wait_source(fd, p)))
			return err;
	}
}

ssize_t iol_splice_in(int fd, zc_pipe *p, zc_agg **agg, size_t size)
{
	zc_agg *dst, *created = NULL;
	uint64_t pos;
	ssize_t n;
	int err;

	if (!agg || !p || size > SSIZE_MAX)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	if ((err = drop_unnamed(p)))
		return err;
	dst = *agg;
	if (!dst) {
		if ((err = zc_agg_create(&created)))
			return err;
		dst = created;
	}
	n = size ? splice_in(fd, p, size) : 0;
	if (n > 0) {
		/* The bytes are in the pipe and have their positions whether
		 * or not a slice names them: a failed append leaves them
		 * unnamed, and the next slice written discards them. */
		pos = p->wpos;
		p->wpos += (uint64_t)n;
		zc_stat_ref((uint64_t)n);
		err = zc_agg_append_pipe(dst, p, pos, (size_t)n);
		if (err)
			n = err;
	}
	if (n < 0) {
		zc_agg_release(created);
		return n;
	}
	if (created)
		*agg = created;
	return n;
}
