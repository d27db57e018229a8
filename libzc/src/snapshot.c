/*
 * snapshot.c - zc_buf_snapshot: bytes of a file, copied once, frozen.
 *
 * A server's cache of small files keeps each body as it was read, and
 * sends it again and again.  Two ways to hold it:
 *
 *   portable     pread into a pool buffer (immutable once published)
 *   patched      sendfile into a new memfd -- the one copy, made by the
 *   kernel with  kernel -- sealed against writes, shrinking, growing and
 *   IO-Lite      further seals, then iol_read from it: a kernel buffer
 *                over the memfd's own pages.  Those pages can never change
 *                again, and the kernel can prove it (the seals), so its
 *                checksum cache (kernel-patch 0009) reuses their transmit
 *                checksums on a device that does not checksum, and
 *                iol_write sends them by reference.  The memfd is closed
 *                at once: the buffer holds the file open.
 *
 * A pool buffer's pages cannot be sealed (the pool is one memfd that its
 * owner keeps writing), which is why the kernel way needs a memfd per
 * snapshot.  Any failure of the kernel way (no memfd, a descriptor
 * sendfile cannot read, a snapshot above one container) falls back to the
 * pool copy; a file shorter than asked is -ESTALE either way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "internal.h"

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

#define SNAPSHOT_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int snapshot_pool(zc_pool *pool, int fd, uint64_t off, size_t len,
			 zc_buf **out)
{
	zc_buf *b;
	int err = zc_buf_alloc(pool, len, &b);

	if (!err)
		err = zc_pread_exact(fd, off, zc_buf_wptr(b), len);
	if (!err)
		err = zc_buf_publish(b, len);
	if (err) {
		zc_buf_release(b);
		return err;
	}
	*out = b;
	return 0;
}

static int snapshot_sealed(int fd, uint64_t off, size_t len, zc_buf **out)
{
	int memfd = memfd_create("zc-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	off_t at = (off_t)off;
	size_t got = 0;
	int err = 0;

	if (memfd < 0)
		return -errno;
	while (got < len) {
		ssize_t n = sendfile(memfd, fd, &at, len - got);

		zc_stat_call();
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n == 0 ? -ESTALE : -errno;
			break;
		}
		got += (size_t)n;
	}
	if (!err && fcntl(memfd, F_ADD_SEALS, SNAPSHOT_SEALS) < 0)
		err = -errno;
	if (!err)
		err = zc_kiol_from_sealed(memfd, len, out);
	close(memfd);
	if (!err)
		zc_stat_copy(len);
	return err;
}

int zc_buf_snapshot(zc_pool *pool, int fd, uint64_t off, size_t len,
		    zc_buf **out)
{
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	if (len == 0 || len > (size_t)INT64_MAX || off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	if (zc_kiol()) {
		err = snapshot_sealed(fd, off, len, out);
		/* Done, or an answer about fd itself. */
		if (!err || err == -ESTALE || err == -EBADF)
			return err;
	}
	return snapshot_pool(pool, fd, off, len, out);
}
