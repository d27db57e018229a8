/*
 * xfer.c - one write(2)/writev(2)/send(2) call, carried out as a sequence
 * of copies (memory the kernel must copy) and file ranges (sent with
 * sendfile or spliced by reference), with the results write(2) would give.
 *
 * libzc's iol_write does similar transfers but with its own contract (it
 * keeps going after short counts a plain write would report, and may
 * leave SIGPIPE to the caller); here the contract is the plain call's, so
 * the rules are write(2)'s, destination by destination:
 *
 * Stream sockets (TCP, UNIX stream).  One sendfile per file range, however
 * large: on a blocking socket it returns short only when a signal arrives,
 * like write.  SIGPIPE: write raises it only when *nothing* was sent; a
 * sendfile that had sent something and then met a dead peer may raise it
 * too.  So SIGPIPE is blocked around every sendfile and a SIGPIPE that
 * arrived during it is consumed unless the plain call would have raised
 * it (nothing sent so far, no MSG_NOSIGNAL).  If SIGPIPE was already
 * pending before, nothing is consumed (a second one would have merged).
 * Copies after the first call go out with MSG_NOSIGNAL for the same reason;
 * before a file range, TCP copies carry MSG_MORE so a header shares
 * segments with the body as it would in one writev.
 *
 * Pipes.  splice(file -> pipe) waits for room only before moving anything,
 * then moves what fits and returns, so one call is not one write.  The
 * first splice of the call is blocking (it waits, and is restarted or
 * fails with EINTR, exactly as pipe_write does when it has written
 * nothing); later ones are non-blocking, and when the pipe is full we
 * wait in poll(POLLOUT): a signal handler that runs makes poll fail with
 * EINTR whatever SA_RESTART says, and we return the count so far - what
 * pipe_write does when interrupted after writing something.  (One
 * difference remains: a stop/continue without a handler restarts poll but
 * makes pipe_write return short; the converted call then completes.)
 * SIGPIPE: splice and pipe_write both raise it whenever readers are gone,
 * with or without progress, so nothing needs hiding.  Only calls larger
 * than PIPE_BUF come here (mapwrite.c): smaller ones must stay atomic.
 *
 * Any error before the first byte moved that a plain write would not have
 * produced (EINVAL, ENOSYS, EIO from the source, ...) makes the caller
 * fall back to the real call, which then produces the real result.  A file
 * that shrank under us ends the call short (the plain write would have hit
 * the hole in the mapping and reported EFAULT or a short count); a call
 * that could move nothing at all falls back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xfer.h"
#include "preload.h"

/* Errors that say "this mechanism", not "this destination". */
static bool mechanism_error(int e)
{
	return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EIO ||
	       e == ESPIPE || e == EOVERFLOW || e == EBADF || e == ENOMEM;
}

/* SIGPIPE discipline around one socket call (see the header comment). */
struct sigpipe_guard {
	sigset_t old;
	bool was_pending;
};

static void guard_on(struct sigpipe_guard *g)
{
	sigset_t s, pend;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigpending(&pend);
	g->was_pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, &g->old);
}

static void guard_off(struct sigpipe_guard *g, bool raise_ok)
{
	static const struct timespec zero;
	sigset_t s, pend;

	if (!raise_ok && !g->was_pending) {
		sigpending(&pend);
		if (sigismember(&pend, SIGPIPE)) {
			sigemptyset(&s);
			sigaddset(&s, SIGPIPE);
			sigtimedwait(&s, NULL, &zero);
		}
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static ssize_t copy_seg(const struct zcp_xfer *x, const struct zcp_seg *s,
			size_t done, bool more)
{
	int flags = 0;

	if (!x->sock)
		return zcp_real.write(x->fd, s->buf, s->len);
	if (done || x->nosignal)
		flags |= MSG_NOSIGNAL;
	if (more && x->tcp)
		flags |= MSG_MORE;
	return zcp_real.send(x->fd, s->buf, s->len, flags);
}

static ssize_t sock_file_seg(const struct zcp_xfer *x, const struct zcp_seg *s,
			     size_t done)
{
	struct sigpipe_guard g;
	off_t off = s->off;
	ssize_t r;
	int e;

	guard_on(&g);
	r = sendfile(x->fd, s->src, &off, s->len);
	e = errno;
	/* Only "nothing sent at all, SIGPIPE allowed" may keep the signal. */
	guard_off(&g, r < 0 && !done && !x->nosignal);
	errno = e;
	return r;
}

/* Returns bytes moved (possibly short), or -1 with errno. */
static ssize_t pipe_file_seg(const struct zcp_xfer *x, const struct zcp_seg *s,
			     size_t done)
{
	off_t off = s->off;
	size_t moved = 0;
	ssize_t r;

	while (moved < s->len) {
		unsigned flags = SPLICE_F_MORE;

		if (x->nonblock || done + moved)
			flags |= SPLICE_F_NONBLOCK;
		r = splice(s->src, &off, x->fd, NULL, s->len - moved, flags);
		if (r > 0) {
			moved += r;
			continue;
		}
		if (r == 0) /* the file ends early: shrunk */
			break;
		if (errno == EAGAIN && !x->nonblock && done + moved) {
			struct pollfd p = { .fd = x->fd, .events = POLLOUT };

			if (poll(&p, 1, -1) < 0 && errno == EINTR)
				break;
			continue;
		}
		if (moved)
			break;
		/* A blocking pipe never says EAGAIN to write(2); our source
		 * descriptor shares the program's O_NONBLOCK.  Fall back. */
		if (errno == EAGAIN && !x->nonblock)
			errno = EINVAL;
		return -1;
	}
	return moved;
}

ssize_t zcp_xfer(const struct zcp_xfer *x, const struct zcp_seg *seg, int n,
		 bool *fallback)
{
	size_t done = 0;
	int i;

	*fallback = false;
	for (i = 0; i < n; i++) {
		const struct zcp_seg *s = &seg[i];
		ssize_t r;

		if (!s->len)
			continue;
		if (s->src < 0)
			r = copy_seg(x, s, done, i + 1 < n);
		else if (x->sock)
			r = sock_file_seg(x, s, done);
		else
			r = pipe_file_seg(x, s, done);
		if (r < 0) {
			if (done)
				return done;
			if (s->src >= 0 && mechanism_error(errno))
				*fallback = true;
			return -1;
		}
		if (r == 0 && s->src >= 0 && !done) {
			*fallback = true; /* nothing moved: let the real call say */
			return -1;
		}
		done += r;
		if ((size_t)r < s->len)
			return done;
	}
	return done;
}
