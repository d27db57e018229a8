/*
 * io_write.c - iol_write: send an aggregate with the cheapest mechanism for
 * each (slice, destination) pair.
 *
 *   slice \ to   TCP / UNIX stream    pipe           file             other
 *   small buf    sendmsg (copy)       writev (copy)  writev (copy)    writev
 *   large buf    sendfile from memfd  vmsplice       writev (copy)    writev
 *   file extent  sendfile (*)         splice         copy_file_range  sendfile
 *   kernel buf   iol_write (by reference)            iol_write        writev
 *   pipe slice   splice (by reference)  splice       splice (**)      bounce
 *
 * "Small" is below 16 KiB: copying a header costs less than what lending it
 * to the kernel costs afterwards (a detached page must be punched out of the
 * pool and a fresh one faulted in), and gathering a header with its
 * neighbours into one sendmsg lets it share a TCP segment with the body.
 *
 * By-reference transfers (sendfile from a pool memfd, vmsplice) leave the
 * kernel holding the buffer's pages after the call returns -- in a socket
 * queue until acknowledged, in a pipe until read, and beyond if the reader
 * splices them onward.  Every such path marks the buffer ZC_BUF_KREF *before*
 * the call; on release, pool.c then punches the pages out of the memfd so
 * the kernel keeps the old pages and the next user gets fresh ones.  Never
 * add a by-reference path without the mark.
 *
 * (*) With zc_sink_copy_mapped_files, an extent of a mapped file
 * (zc_file_map) goes by copy from the mapping, gathered like a small
 * buffer: for extents cut small with bytes of the caller's between them
 * (HTTP/2 frames) one sendmsg costs less than a sendfile per piece.  The
 * kernel is the only reader of the mapping; a page past a shrunk end fails
 * the copy with EFAULT, reported as -ESTALE like a short sendfile.
 *
 * (**) Not to an O_APPEND file, which splice refuses: that one bounces.
 * A pipe slice's bytes wait in a kernel pipe (pipe.c) and leave it only at
 * its front: bytes before the slice's position that are still there were
 * dropped by the aggregate's owner and are discarded first, never sent;
 * bytes already gone (a dup written twice) make the call fail.  To odd
 * descriptors they go through a bounce buffer, the pipe's spill: what the
 * write did not take stays there, first in the pipe's stream, so a retry
 * sends it before anything else of the pipe.  With more of the aggregate
 * to follow, SPLICE_F_MORE holds the last segment back as MSG_MORE does a
 * header (no TCP_CORK needed, unlike sendfile).
 *
 * Kernel IO-Lite buffers (iol_kernel.c; the patched kernel only) go by the
 * kernel's iol_write at any size: the kernel keeps its own page references,
 * so lending one costs no detaching, and their pages' checksums may be
 * cached (a sealed snapshot).  To a file it writes through the page cache.
 *
 * Resumable state: after every system call the bytes it accepted are
 * trimmed from the front of the aggregate.  The aggregate itself is the
 * write state; a caller that got a short count or -EAGAIN calls again with
 * the same aggregate.
 *
 * Blocking: a short count from write/writev/sendmsg/sendfile on a blocking
 * descriptor means a signal arrived (or SO_SNDTIMEO expired), so we stop
 * and report the progress, exactly as write(2) does.  splice and vmsplice
 * into a pipe are different: they wait for room only *before* moving
 * anything, then move what fits and return, so their short counts are
 * routine and we keep going; the same holds for copies between files.
 * A blocking descriptor thus gets the whole aggregate unless an error or a
 * signal stops it, and a signal is never swallowed by our loop.  On a
 * non-blocking descriptor every short count stops (the next call would
 * only say EAGAIN).
 *
 * SIGPIPE: sendfile, splice, vmsplice and writev raise SIGPIPE on a broken
 * pipe or connection exactly as write(2) does; sendmsg (small slices on
 * sockets) is issued with MSG_NOSIGNAL and only returns -EPIPE.  A program
 * must therefore expect -EPIPE *and* may get SIGPIPE: ignore it (zc.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal.h"

#define ZC_SMALL ((size_t)16 << 10)	/* below: copy; at or above: lend */
#define ZC_IOV_MAX 64			/* slices gathered per call */
#define ZC_CALL_MAX ((size_t)1 << 30)	/* bytes per call (< MAX_RW_COUNT) */
#define ZC_BOUNCE ((size_t)64 << 10)	/* file->file fallback chunk */

/* See the SIGPIPE note above. */
#define ZC_SENDMSG_FLAGS MSG_NOSIGNAL

struct wstate {
	int fd;
	enum zc_fdkind kind;
	bool nonblock;		/* O_NONBLOCK on the destination */
	bool append;		/* O_APPEND: copy_file_range refuses it */
	bool copy_first;	/* zc_sink_copy_first_trip */
	uint32_t trip;		/* this call, among copy_first calls */
	bool trust;		/* skip file version checks (caller's job) */
	bool copy_mapped;	/* zc_sink_copy_mapped_files */
};

enum how {
	HOW_COPY,		/* gather buf slices, write/sendmsg */
	HOW_VMSPLICE,		/* gather buf slices, vmsplice by reference */
	HOW_SENDFILE_BUF,	/* one buf slice, sendfile from the memfd */
	HOW_FILE,		/* one file slice */
	HOW_KIOL,		/* kernel buffers, the iol_write system call */
	HOW_PIPE,		/* one pipe slice: splice, or bounce */
};

static struct zc_slice_int *slice_at(zc_agg *agg, size_t i)
{
	return &agg->s[agg->head + i];
}

static bool is_stream_socket(const struct wstate *w)
{
	return w->kind == ZC_FD_TCP || w->kind == ZC_FD_UNIX;
}

/* zc_sink_copy_first_trip: a buffer of our own pools that no earlier
 * call lent or copied through such a sink.  The slices of one buffer in
 * one call (FastCGI records cut from one read) all make the same trip. */
static bool first_trip(const struct wstate *w, const zc_buf *b)
{
	unsigned f = atomic_load_explicit(&b->flags, memory_order_relaxed);

	if (f & (ZC_BUF_KREF | ZC_BUF_FOREIGN))
		return false;
	return !(f & ZC_BUF_COPIED) || b->copy_trip == w->trip;
}

/* The extent's bytes in its file's mapping, if the sink copies those. */
static const unsigned char *mapped_bytes(const struct wstate *w,
					 const struct zc_slice_int *s)
{
	const unsigned char *map;

	if (!w->copy_mapped || !is_stream_socket(w))
		return NULL;
	map = atomic_load_explicit(&s->file->map, memory_order_acquire);
	if (!map || s->off > (uint64_t)s->file->v.size ||
	    s->len > (uint64_t)s->file->v.size - s->off)
		return NULL;
	return map;
}

static enum how how_for(const struct wstate *w, const struct zc_slice_int *s)
{
	if (s->kind == ZC_SLICE_PIPE)
		return HOW_PIPE;
	if (s->kind == ZC_SLICE_FILE)
		return mapped_bytes(w, s) ? HOW_COPY : HOW_FILE;
	if (s->kind == ZC_SLICE_BUF && zc_buf_is_kernel(s->buf))
		return is_stream_socket(w) || w->kind == ZC_FD_PIPE ||
		       w->kind == ZC_FD_FILE ? HOW_KIOL : HOW_COPY;
	/* Borrowed memory is never lent: its owner reuses it at will. */
	if (s->len < ZC_SMALL || s->kind == ZC_SLICE_MEM ||
	    (w->copy_first && first_trip(w, s->buf)))
		return HOW_COPY;
	if (is_stream_socket(w))
		return HOW_SENDFILE_BUF;
	if (w->kind == ZC_FD_PIPE)
		return HOW_VMSPLICE;
	/* Files and other devices: no by-reference path from user memory;
	 * a plain write is honest and as cheap as anything else. */
	return HOW_COPY;
}

/*
 * Gather the run of slices at the front that share mechanism `how` into
 * iov (at most ZC_IOV_MAX entries, ZC_CALL_MAX bytes).  Returns the number
 * of entries, -ENOMEM if the first buffer cannot be mapped (an imported
 * pool whose mapping failed), or the first file's failed version check.
 */
static int gather(const struct wstate *w, zc_agg *agg, enum how how,
		  struct iovec *iov, size_t *bytes)
{
	const zc_file *checked = NULL;
	int n = 0;

	*bytes = 0;
	for (size_t i = 0; i < agg->n && n < ZC_IOV_MAX; i++) {
		struct zc_slice_int *s = slice_at(agg, i);
		const unsigned char *data;
		size_t len;

		if (how_for(w, s) != how || *bytes >= ZC_CALL_MAX)
			break;
		if (s->kind == ZC_SLICE_FILE) {
			/* Checked once per call (frames of one file
			 * alternate with their headers). */
			if (!w->trust && s->file != checked) {
				int err = zc_file_check(s->file);

				zc_stat_call();
				if (err) {
					if (n == 0)
						return err;
					break;
				}
				checked = s->file;
			}
			data = mapped_bytes(w, s);
		} else {
			data = s->kind == ZC_SLICE_MEM ? s->mem
						       : zc_buf_data(s->buf);
		}
		if (!data)
			break;
		if (how == HOW_VMSPLICE)
			zc_buf_mark_kref(s->buf);	/* before the call */
		else if (w->copy_first && s->kind == ZC_SLICE_BUF &&
			 s->len >= ZC_SMALL) {
			/* Its next trip lends it (whether or not this call
			 * takes all of it: the bytes are right either way). */
			s->buf->copy_trip = w->trip;
			atomic_fetch_or_explicit(&s->buf->flags, ZC_BUF_COPIED,
						 memory_order_relaxed);
		}
		len = zc_min_size(s->len, ZC_CALL_MAX - *bytes);
		iov[n].iov_base = (void *)(data + s->off);
		iov[n].iov_len = len;
		*bytes += len;
		n++;
	}
	return n ? n : -ENOMEM;
}

/* Did the run of n slices at the front copy from a file's mapping?  Then
 * an EFAULT is a page past that file's (shrunk) end, which makes it stale;
 * anything else faulting is a bug to report as it is. */
static bool copied_mapped(zc_agg *agg, int n)
{
	for (int i = 0; i < n && (size_t)i < agg->n; i++)
		if (slice_at(agg, (size_t)i)->kind == ZC_SLICE_FILE)
			return true;
	return false;
}

static ssize_t write_copy_run(const struct wstate *w, zc_agg *agg,
			      size_t *want)
{
	struct iovec iov[ZC_IOV_MAX];
	int n = gather(w, agg, HOW_COPY, iov, want);
	ssize_t r;

	if (n < 0)
		return n;
	if (is_stream_socket(w)) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		int flags = ZC_SENDMSG_FLAGS;

		/* A header waits for the body so both share a segment. */
		if (w->kind == ZC_FD_TCP && *want < agg->len)
			flags |= MSG_MORE;
		r = sendmsg(w->fd, &mh, flags);
	} else {
		r = writev(w->fd, iov, n);
	}
	zc_stat_call();
	if (r < 0)
		return errno == EFAULT && copied_mapped(agg, n) ? -ESTALE
							      : -errno;
	zc_stat_copy((uint64_t)r);
	return r;
}

static ssize_t write_vmsplice_run(const struct wstate *w, zc_agg *agg,
				  size_t *want)
{
	struct iovec iov[ZC_IOV_MAX];
	int n = gather(w, agg, HOW_VMSPLICE, iov, want);
	ssize_t r;

	if (n < 0)
		return n;
	/* No SPLICE_F_GIFT: the pages stay the pool's; KREF (set in gather)
	 * makes their release detach them instead of reusing them. */
	r = vmsplice(w->fd, iov, (size_t)n,
		     w->nonblock ? SPLICE_F_NONBLOCK : 0);
	zc_stat_call();
	if (r < 0)
		return -errno;
	zc_stat_ref((uint64_t)r);
	return r;
}

/*
 * AF_UNIX before Linux 6.5.  sendfile to a UNIX stream socket goes through
 * its ->sendpage(), which in those kernels appends pages to the peer's
 * last queued skb without checking for send-buffer room: a socket that
 * write(2) finds full still takes the data, so a non-blocking writer never
 * sees EAGAIN and a blocking one never waits (nor gets EINTR) -- no
 * backpressure at all.  6.5 replaced sendpage with MSG_SPLICE_PAGES, which
 * waits like write.  On the older kernels we ask poll() first, as write
 * would wait: not writable is -EAGAIN (non-blocking) or a wait that a
 * signal ends with -EINTR (blocking).  One sendfile may still overshoot by
 * what fits in the tail skb; that is bounded.  Debian 12's kernel is 6.1.
 */
static pthread_once_t unix_quirk_once = PTHREAD_ONCE_INIT;
static bool unix_quirk;

static void unix_quirk_probe(void)
{
	struct utsname u;
	unsigned major, minor;

	unix_quirk = uname(&u) != 0 ||
		     sscanf(u.release, "%u.%u", &major, &minor) != 2 ||
		     major < 6 || (major == 6 && minor < 5);
}

static int unix_room(const struct wstate *w)
{
	struct pollfd p = { .fd = w->fd, .events = POLLOUT };
	int r;

	if (w->kind != ZC_FD_UNIX)
		return 0;
	pthread_once(&unix_quirk_once, unix_quirk_probe);
	if (!unix_quirk)
		return 0;
	r = poll(&p, 1, w->nonblock ? 0 : -1);
	zc_stat_call();
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EAGAIN;
	return 0;	/* writable, or an error the sendfile will report */
}

/* Does n continue p's bytes in the same pool memfd (one sendfile)? */
static bool continues(const struct wstate *w, const struct zc_slice_int *p,
		      const struct zc_slice_int *n)
{
	return how_for(w, n) == HOW_SENDFILE_BUF && n->buf->pool == p->buf->pool &&
	       n->buf->off + n->off == p->buf->off + p->off + p->len;
}

/*
 * One sendfile from a pool's memfd: the first slice, and the slices after
 * it that continue its bytes in the same memfd.  Those are parts of one
 * buffer that arrived as separate buffers -- a document a peer sent over a
 * channel as several FastCGI records, each lent on its own -- and one call
 * serves them all.
 */
static ssize_t write_sendfile_buf(const struct wstate *w, zc_agg *agg,
				  size_t *want)
{
	struct zc_slice_int *s = slice_at(agg, 0);
	zc_buf *buf = s->buf;
	off_t off = (off_t)(buf->off + s->off);
	size_t len = zc_min_size(s->len, ZC_CALL_MAX);
	ssize_t r;

	r = unix_room(w);
	if (r)
		return r;
	zc_buf_mark_kref(buf);	/* the socket queue will hold its pages */
	/* Only after a first slice taken whole (not cut at ZC_CALL_MAX). */
	for (size_t i = 1; i < agg->n && s->len <= ZC_CALL_MAX; i++) {
		struct zc_slice_int *n = slice_at(agg, i);

		if (!continues(w, slice_at(agg, i - 1), n) ||
		    n->len > ZC_CALL_MAX - len)
			break;
		zc_buf_mark_kref(n->buf);
		len += n->len;
	}
	*want = len;
	r = sendfile(w->fd, buf->pool->fd, &off, *want);
	zc_stat_call();
	if (r < 0)
		return -errno;
	zc_stat_ref((uint64_t)r);
	return r;
}

/*
 * The run of kernel buffers at the front, by the iol_write system call,
 * which takes what a non-blocking pipe or socket has room for, as
 * write(2) does.
 */
static ssize_t write_kiol_run(const struct wstate *w, zc_agg *agg,
			      size_t *want)
{
	size_t n = 0;
	ssize_t r;

	r = unix_room(w);
	if (r)
		return r;
	while (n < agg->n && how_for(w, slice_at(agg, n)) == HOW_KIOL)
		n++;
	r = zc_kiol_write(w->fd, slice_at(agg, 0), n, ZC_CALL_MAX, want);
	if (r > 0) {
		if (w->kind == ZC_FD_FILE)
			zc_stat_copy((uint64_t)r);
		else
			zc_stat_ref((uint64_t)r);
	}
	return r;
}

/* The portable fallback for file -> file and file -> odd devices. */
static ssize_t copy_through_bounce(int fd, zc_file *f, off_t off, size_t len)
{
	size_t chunk = zc_min_size(len, ZC_BOUNCE);
	void *bounce = malloc(chunk);
	ssize_t n, r;

	if (!bounce)
		return -ENOMEM;
	n = pread(f->fd, bounce, chunk, off);
	zc_stat_call();
	if (n <= 0) {
		r = n == 0 ? 0 : -errno;
		free(bounce);
		return r;
	}
	r = write(fd, bounce, (size_t)n);
	zc_stat_call();
	if (r < 0)
		r = -errno;
	else
		zc_stat_copy((uint64_t)r);
	free(bounce);
	return r;
}

/* Errors that mean "this mechanism does not apply here", not "failed". */
static bool unsupported(int err)
{
	return err == EXDEV || err == EINVAL || err == ENOSYS ||
	       err == EOPNOTSUPP;
}

static ssize_t file_to_file(const struct wstate *w, zc_file *f, off_t off,
			    size_t len)
{
	ssize_t r;

	/* NULL out offset: write at (and advance) the current offset, like
	 * write(2).  copy_file_range refuses O_APPEND outright. */
	if (!w->append) {
		r = copy_file_range(f->fd, &off, w->fd, NULL, len, 0);
		zc_stat_call();
		if (r >= 0) {
			zc_stat_ref((uint64_t)r);
			return r;
		}
		if (!unsupported(errno))
			return -errno;
	}
	return copy_through_bounce(w->fd, f, off, len);
}

static ssize_t file_to_other(const struct wstate *w, zc_file *f, off_t off,
			     size_t len)
{
	off_t o = off;
	ssize_t r = sendfile(w->fd, f->fd, &o, len);

	zc_stat_call();
	if (r >= 0) {
		zc_stat_ref((uint64_t)r);
		return r;
	}
	if (!unsupported(errno))
		return -errno;
	return copy_through_bounce(w->fd, f, off, len);
}

/*
 * A file extent.  The version check comes first: sending bytes of a file
 * that changed since the extent was taken would send the wrong data.  A
 * zero return with bytes still expected means the file shrank between the
 * check and the call: that is -ESTALE too (the caller reports progress
 * first if there was any, and the next call's check then fails).
 */
static ssize_t write_file_slice(const struct wstate *w, zc_agg *agg,
				size_t *want)
{
	const struct zc_slice_int *s = slice_at(agg, 0);
	zc_file *f = s->file;
	off_t off = (off_t)s->off;
	size_t len = zc_min_size(s->len, ZC_CALL_MAX);
	unsigned flags;
	ssize_t r;
	int err;

	if (!w->trust) {
		err = zc_file_check(f);
		zc_stat_call();
		if (err)
			return err;
	}
	*want = len;
	switch (w->kind) {
	case ZC_FD_TCP:
	case ZC_FD_UNIX:
		err = unix_room(w);
		if (err)
			return err;
		r = sendfile(w->fd, f->fd, &off, len);
		break;
	case ZC_FD_PIPE:
		flags = w->nonblock ? SPLICE_F_NONBLOCK : 0;
		if (len < agg->len)
			flags |= SPLICE_F_MORE;
		r = splice(f->fd, &off, w->fd, NULL, len, flags);
		break;
	case ZC_FD_FILE:
		r = file_to_file(w, f, off, len);
		return r == 0 ? -ESTALE : r;	/* counted inside */
	default:
		r = file_to_other(w, f, off, len);
		return r == 0 ? -ESTALE : r;
	}
	zc_stat_call();
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ESTALE;
	zc_stat_ref((uint64_t)r);
	return r;
}

/* Can a pipe's bytes be spliced to the destination? */
static bool splices_to(const struct wstate *w)
{
	return is_stream_socket(w) || w->kind == ZC_FD_PIPE ||
	       (w->kind == ZC_FD_FILE && !w->append);
}

/* The front of a pipe's spill (what a bounce read and a write did not
 * take), up to len bytes: copied out with write. */
static ssize_t write_spill(const struct wstate *w, zc_pipe *p, size_t len,
			   size_t *want)
{
	ssize_t r;

	*want = zc_min_size(len, (size_t)(p->kpos - p->rpos));
	r = write(w->fd, p->spill + p->spill_at, *want);
	zc_stat_call();
	if (r < 0)
		return -errno;
	zc_stat_copy((uint64_t)r);
	zc_pipe_spill_done(p, (size_t)r);
	return r;
}

/*
 * A blocking destination pipe was full.  Between two pipes the kernel
 * applies either end's O_NONBLOCK to both, and ours is non-blocking, so
 * the splice cannot wait for room itself: wait here, as write(2) would
 * (a signal ends it with -EINTR).  0: try again.
 */
static int pipe_room(const struct wstate *w)
{
	struct pollfd p = { .fd = w->fd, .events = POLLOUT };

	if (w->kind != ZC_FD_PIPE || w->nonblock)
		return -EAGAIN;
	zc_stat_call();
	return poll(&p, 1, -1) < 0 ? -errno : 0;
}

/* Pipe -> destination by splice: the pages move, nothing is copied.  The
 * source never waits (its bytes are there); a socket's or a file's own
 * O_NONBLOCK decides whether the destination does. */
static ssize_t splice_out(const struct wstate *w, zc_pipe *p, size_t len,
			  bool more)
{
	unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	ssize_t r;

	if (more)
		flags |= SPLICE_F_MORE;
	r = unix_room(w);
	if (r)
		return r;
	for (;;) {
		r = splice(p->rfd, NULL, w->fd, NULL, len, flags);
		zc_stat_call();
		if (r >= 0 || errno != EAGAIN)
			break;
		if ((r = pipe_room(w)))
			return r;
	}
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EIO;	/* counted in, yet not there */
	p->kpos += (uint64_t)r;
	p->rpos += (uint64_t)r;
	zc_stat_ref((uint64_t)r);
	return r;
}

/*
 * One pipe slice.  Its position must be where the pipe's stream stands
 * now, after discarding what was dropped before it; then the spill (if a
 * bounce left one) goes first, and the kernel pipe's bytes after it.
 */
static ssize_t write_pipe_slice(const struct wstate *w, zc_agg *agg,
				size_t *want)
{
	const struct zc_slice_int *s = slice_at(agg, 0);
	zc_pipe *p = s->pipe;
	size_t len = zc_min_size(s->len, ZC_CALL_MAX);
	ssize_t r;
	int err;

	if (s->off < p->rpos)
		return -EINVAL;	/* its bytes went out already */
	err = zc_pipe_discard_to(p, s->off);
	if (err)
		return err;
	if (p->kpos > p->rpos)
		return write_spill(w, p, len, want);
	if (splices_to(w)) {
		*want = len;
		return splice_out(w, p, len, len < agg->len);
	}
	r = zc_pipe_fill_spill(p, len);
	if (r < 0)
		return r;
	return write_spill(w, p, len, want);
}

/* Is a short count from mechanism `how` routine, rather than a sign that
 * a signal arrived?  See the top. */
static bool routine_short(const struct wstate *w, enum how how)
{
	if (w->kind == ZC_FD_FILE)
		return true;
	/* Not HOW_KIOL: the kernel's iol_write into a blocking pipe waits for
	 * room until everything went, so its short count means a signal. */
	return w->kind == ZC_FD_PIPE &&
	       (how == HOW_VMSPLICE || how == HOW_FILE || how == HOW_PIPE);
}

static ssize_t write_step(const struct wstate *w, zc_agg *agg, enum how how,
			  size_t *want)
{
	switch (how) {
	case HOW_COPY:
		return write_copy_run(w, agg, want);
	case HOW_VMSPLICE:
		return write_vmsplice_run(w, agg, want);
	case HOW_SENDFILE_BUF:
		return write_sendfile_buf(w, agg, want);
	case HOW_KIOL:
		return write_kiol_run(w, agg, want);
	case HOW_PIPE:
		return write_pipe_slice(w, agg, want);
	case HOW_FILE:
	default:
		return write_file_slice(w, agg, want);
	}
}

/*
 * TCP coalescing.  MSG_MORE joins a header with the sendfile that follows,
 * but sendfile pushes its last segment out, so a body followed by a trailer
 * (chunked encoding: size line, data, CRLF, ...) would go out as several
 * part-filled segments.  Cork for the duration of the call in that case
 * only, and never touch a cork the application set itself.
 */
static bool cork_begin(const struct wstate *w, zc_agg *agg)
{
	int on = 0, one = 1;
	socklen_t len = sizeof(on);
	bool needed = false;

	if (w->kind != ZC_FD_TCP)
		return false;
	for (size_t i = 0; i + 1 < agg->n && !needed; i++) {
		enum how how = how_for(w, slice_at(agg, i));

		/* A memfd range the same sendfile continues is no "more",
		 * nor a kernel buffer the same iol_write sends on. */
		needed = how == HOW_FILE ||
			 (how == HOW_SENDFILE_BUF &&
			  !continues(w, slice_at(agg, i), slice_at(agg, i + 1))) ||
			 (how == HOW_KIOL &&
			  how_for(w, slice_at(agg, i + 1)) != HOW_KIOL);
	}
	if (!needed)
		return false;
	if (getsockopt(w->fd, IPPROTO_TCP, TCP_CORK, &on, &len) < 0 || on)
		return false;
	return setsockopt(w->fd, IPPROTO_TCP, TCP_CORK, &one,
			  sizeof(one)) == 0;
}

static void cork_end(const struct wstate *w)
{
	int off = 0;

	setsockopt(w->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
}

#define SINK_NONBLOCK 1u
#define SINK_APPEND 2u
#define SINK_TRUST 4u		/* zc_sink_trust_extents */
#define SINK_COPY_FIRST 8u	/* zc_sink_copy_first_trip */
#define SINK_COPY_MAPPED 16u	/* zc_sink_copy_mapped_files */

/* Numbers the calls of copy-first sinks (a buffer remembers the call
 * that copied it; 0 is no call). */
static atomic_uint copy_trips;

static void sink_option(zc_sink *sink, unsigned flag, int on)
{
	if (!sink)
		return;
	if (on)
		sink->flags |= flag;
	else
		sink->flags &= ~flag;
}

void zc_sink_copy_first_trip(zc_sink *sink, int on)
{
	sink_option(sink, SINK_COPY_FIRST, on);
}

void zc_sink_copy_mapped_files(zc_sink *sink, int on)
{
	sink_option(sink, SINK_COPY_MAPPED, on);
}

void zc_sink_trust_extents(zc_sink *sink, int on)
{
	sink_option(sink, SINK_TRUST, on);
}

int zc_sink_init(zc_sink *sink, int fd)
{
	zc_source probe;	/* the same probe as an origin's */
	int fl, err;

	if (!sink)
		return -EINVAL;
	err = zc_source_init(&probe, fd);
	if (err)
		return err;
	sink->fd = fd;
	sink->kind = probe.kind;
	sink->flags = 0;
	if (probe.kind == ZC_FD_CHANNEL)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	/* Also guards vmsplice: on a read-only pipe end it would *read*
	 * the pipe into our immutable buffers. */
	if ((fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	sink->flags = (fl & O_NONBLOCK ? SINK_NONBLOCK : 0) |
		      (fl & O_APPEND ? SINK_APPEND : 0);
	return 0;
}

/* A channel passes descriptors for the whole aggregate in one message. */
static ssize_t write_channel(int fd, zc_agg *agg)
{
	zc_channel *ch = zc_channel_from_fd(fd);
	size_t len = agg->len;
	int err;

	if (!ch)
		return -EBADF;
	err = zc_channel_send(ch, agg);
	zc_stat_call();
	if (err)
		return err;
	zc_stat_ref(len);
	zc_agg_trim_front(agg, len);
	return (ssize_t)len;
}

int zc_sink_init_tcp(zc_sink *sink, int fd, int nonblock)
{
	if (!sink)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	sink->fd = fd;
	sink->kind = ZC_FD_TCP;
	sink->flags = nonblock ? SINK_NONBLOCK : 0;
	return 0;
}

ssize_t iol_write_sink(const zc_sink *sink, zc_agg *agg)
{
	struct wstate w = { 0 };
	ssize_t total = 0, r = 0;
	bool corked;

	if (!agg || !sink)
		return -EINVAL;
	if (sink->fd < 0)
		return -EBADF;
	if (agg->len == 0)
		return 0;
	if (sink->kind == ZC_FD_CHANNEL)
		return write_channel(sink->fd, agg);
	w.fd = sink->fd;
	w.kind = (enum zc_fdkind)sink->kind;
	w.nonblock = sink->flags & SINK_NONBLOCK;
	w.append = sink->flags & SINK_APPEND;
	w.trust = sink->flags & SINK_TRUST;
	w.copy_first = sink->flags & SINK_COPY_FIRST;
	w.copy_mapped = sink->flags & SINK_COPY_MAPPED;
	if (w.copy_first)
		w.trip = atomic_fetch_add_explicit(&copy_trips, 1,
						   memory_order_relaxed) + 1;

	corked = cork_begin(&w, agg);
	while (agg->len > 0) {
		enum how how = how_for(&w, slice_at(agg, 0));
		size_t want = 0;

		r = write_step(&w, agg, how, &want);
		if (r <= 0)
			break;
		zc_agg_trim_front(agg, (size_t)r);
		total += r;
		if ((size_t)r < want && (w.nonblock || !routine_short(&w, how)))
			break;
	}
	if (corked)
		cork_end(&w);

	if (total > 0)
		return total;
	/* A call that accepted nothing and reported nothing: never return
	 * 0 for a non-empty aggregate (callers read 0 as "all done"). */
	return r < 0 ? r : -EIO;
}

ssize_t iol_write(int fd, zc_agg *agg)
{
	zc_sink sink;
	int err;

	if (!agg)
		return -EINVAL;
	err = zc_sink_init(&sink, fd);
	if (err)
		return err;
	return iol_write_sink(&sink, agg);
}
