/*
 * io_read.c - iol_read: bring data from a descriptor into an aggregate.
 *
 * Regular files are not read at all: the aggregate gets a file slice naming
 * the extent (file, offset, length, version) and the bytes stay in the page
 * cache until iol_write hands them to sendfile/splice/copy_file_range.  The
 * descriptor's offset advances exactly as read(2) would have moved it.
 *
 * Pipes and sockets have no page cache to point at, so their data is read
 * once -- the one copy that brings bytes into the zero-copy world -- into a
 * buffer from the default pool, which from then on is shared by reference.
 * One read(2) per call, like read(2) itself: iol_read never waits for more
 * data than the first read returns.  On the patched kernel with IO-Lite,
 * the kernel's iol_read does the same into kernel buffers (iol_kernel.c):
 * a pipe's pages are taken over instead of copied when the kernel can,
 * and iol_write sends those buffers by reference without pool detaching.
 *
 * Regular files stay file extents on that kernel too.  The kernel's
 * iol_read from a file would map the page-cache pages into the process
 * (page-table work per read) to gain nothing for sending -- an extent is
 * already sent by reference -- and its buffers follow later writes
 * (ESTALE at iol_write), as extents do.  A frozen copy of a file is
 * zc_buf_snapshot (snapshot.c).
 *
 * Channels deliver aggregates of the peer's buffers: descriptors, no bytes.
 *
 * The aggregate contract: on success (including EOF) *agg is non-NULL, so
 * the caller always has something to release; on error *agg is left as the
 * caller passed it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/* Largest buffer one stream read fills.  Bigger reads gain nothing (a
 * socket rarely has more queued) and would tie up pool space. */
#define ZC_READ_MAX ((size_t)256 << 10)

/*
 * Size the buffer to what is queued when the kernel can tell us: a server
 * reads after poll() said "readable", and a 300-byte request should cost one
 * page of pool, not 256 KiB.  With nothing queued (a blocking read that will
 * wait) we cannot know, so take the full size.
 */
static size_t stream_read_size(int fd, size_t size)
{
	size_t want = zc_min_size(size, ZC_READ_MAX);
	int avail = 0;

	if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0)
		want = zc_min_size(want, (size_t)avail);
	return want;
}

static ssize_t read_stream(int fd, zc_agg *agg, size_t size)
{
	size_t want = stream_read_size(fd, size);
	zc_buf *buf;
	ssize_t n;
	int err;

	err = zc_buf_alloc(NULL, want, &buf);
	if (err)
		return err;
	n = read(fd, zc_buf_wptr(buf), want);
	zc_stat_call();
	if (n <= 0) {
		err = n == 0 ? 0 : -errno;
		zc_buf_release(buf);
		return err;
	}
	zc_stat_copy((uint64_t)n);
	err = zc_buf_publish(buf, (size_t)n);
	if (!err)
		err = zc_agg_append_buf(agg, buf, 0, (size_t)n);
	/* The aggregate holds its own reference now (or the data is lost
	 * with an error, exactly like a failed read). */
	zc_buf_release(buf);
	return err ? err : n;
}

/*
 * A regular file: reference [offset, offset + len) of the version the file
 * has now, then move the offset past it.  Files that report size 0 may be
 * pseudo-files (/proc) whose content exists only when read, so those are
 * read like a stream; for a truly empty file that read returns 0 (EOF).
 */
static ssize_t read_file(int fd, zc_agg *agg, size_t size)
{
	int flags = fcntl(fd, F_GETFL);
	zc_file *file;
	int64_t fsize;
	off_t off;
	size_t len;
	int err;

	if (flags < 0)
		return -errno;
	if ((flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;	/* read(2) says the same */
	off = lseek(fd, 0, SEEK_CUR);
	if (off < 0)
		return -errno;
	err = zc_file_from_fd(fd, &file);
	if (err)
		return err;
	fsize = zc_file_size(file);
	if (fsize == 0) {
		zc_file_release(file);
		return read_stream(fd, agg, size);
	}
	if (off >= fsize) {
		zc_file_release(file);
		return 0;
	}
	len = zc_min_size(size, (size_t)(fsize - off));
	err = zc_agg_append_file(agg, file, (uint64_t)off, len);
	zc_file_release(file);
	if (err)
		return err;
	if (lseek(fd, off + (off_t)len, SEEK_SET) < 0) {
		err = -errno;
		zc_agg_truncate(agg, zc_agg_len(agg) - len);
		return err;
	}
	zc_stat_call();
	zc_stat_ref(len);
	return (ssize_t)len;
}

/*
 * A channel message arrives whole: a channel cannot put back the part of a
 * message that would exceed `size`, and dropping it would lose data, so the
 * whole message is returned even if it is longer (callers of a channel read
 * messages, not byte counts).  Empty messages are skipped so that 0 keeps
 * meaning end of stream; a departed peer is end of stream.
 */
static ssize_t read_channel(int fd, zc_agg *agg)
{
	zc_channel *ch = zc_channel_from_fd(fd);
	zc_agg *msg;
	size_t len;
	int err;

	if (!ch)
		return -EBADF;
	do {
		err = zc_channel_recv(ch, &msg);
		zc_stat_call();
		if (err == -EPIPE)
			return 0;
		if (err)
			return err;
		len = zc_agg_len(msg);
		if (len == 0)
			zc_agg_release(msg);
	} while (len == 0);
	err = zc_agg_concat(agg, msg);
	zc_agg_release(msg);
	if (err)
		return err;
	zc_stat_ref(len);
	return (ssize_t)len;
}

/* iol_read's work once the descriptor's kind is known. */
static ssize_t read_kind(int fd, enum zc_fdkind kind, zc_agg **agg,
			 size_t size)
{
	zc_agg *dst, *created = NULL;
	ssize_t n;
	int err;

	if (!agg)
		return -EINVAL;
	if (fd < 0 || kind == ZC_FD_BAD)
		return -EBADF;
	/* A size_t above SSIZE_MAX is almost always a negative length that
	 * was cast: refuse it rather than read "everything". */
	if (size > SSIZE_MAX)
		return -EINVAL;
	dst = *agg;
	if (!dst) {
		err = zc_agg_create(&created);
		if (err)
			return err;
		dst = created;
	}

	if (size == 0)
		n = 0;
	else if (kind == ZC_FD_FILE)
		n = read_file(fd, dst, size);
	else if (kind == ZC_FD_CHANNEL)
		n = read_channel(fd, dst);
	else if (kind == ZC_FD_OTHER || !zc_kiol() ||
		 (n = zc_kiol_read(fd, dst, stream_read_size(fd, size))) ==
		 -EOPNOTSUPP)
		n = read_stream(fd, dst, size);

	if (n < 0) {
		zc_agg_release(created);
		return n;
	}
	if (created)
		*agg = created;
	return n;
}

ssize_t iol_read(int fd, zc_agg **agg, size_t size)
{
	if (!agg)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	return read_kind(fd, zc_fdkind_of(fd), agg, size);
}

int zc_source_init(zc_source *src, int fd)
{
	enum zc_fdkind kind;

	if (!src)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	kind = zc_fdkind_of(fd);
	if (kind == ZC_FD_BAD)
		return -EBADF;
	src->fd = fd;
	src->kind = kind;
	return 0;
}

ssize_t iol_read_source(const zc_source *src, zc_agg **agg, size_t size)
{
	if (!src)
		return -EINVAL;
	return read_kind(src->fd, (enum zc_fdkind)src->kind, agg, size);
}
