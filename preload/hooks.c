/*
 * hooks.c - the interposed I/O entry points.
 *
 * Each hook does what the real function does, through zcp_real, and lets
 * the conversions look at the call:
 *
 *   write, writev, send, sendto, sendmsg
 *                  forward counts a write of what was just read;
 *                  mapwrite may take the call over (source in a tracked
 *                  file mapping); pipes looks at the result
 *   read           pipes looks at the result, forward remembers the buffer
 *   pipe, pipe2, close, close_range, closefrom, dup2, dup3
 *                  descriptor numbers change meaning: caches forget (the
 *                  conversions' fd_forget hooks, conv.c), the preload's
 *                  own descriptors stay out of the program's way (fdstate.c,
 *                  whose moves go to zcp_own_fd_moved)
 *   mmap, munmap, mprotect, mremap
 *                  mapwrite's table of file mappings
 *
 * errno: a hook's post-processing may make system calls of its own; the
 * errno the program sees is always the one the real call left (each
 * helper saves and restores it around its own calls).
 *
 * Calls that glibc makes internally (fwrite's write, fclose's close, the
 * malloc's mmap) do not pass through here.  That is why every cache is
 * checked against the kernel before it is acted on (pipes.c, mapwrite.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	int i;

	for (i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/*
 * Every write-type hook: forward's count and mapwrite's chance before the
 * call (true: mapwrite did it, *r is the result and errno is set), the
 * pipe conversion's look after it.  Kept to direct calls and no errno
 * traffic on the way through: the hooks sit on every write of every
 * program, and each helper saves errno itself on its slow path only.
 * When mapwrite's cost guard chose the plain call (g->active), the hook
 * hands it the result (real_done).
 */
static inline bool before_write(int fd, const struct iovec *iov, int iovcnt,
				bool sock, int flags, ssize_t *r,
				struct zcp_guard_pick *g)
{
	g->active = false;
	if (iovcnt > 0 && iov[0].iov_len >= ZCP_FORWARD_MIN_IO)
		zcp_forward_write(iov, iovcnt);
	return zcp_map_any() && zcp_mapwrite(fd, iov, iovcnt, sock, flags, r, g);
}

static inline void real_done(struct zcp_guard_pick *g, ssize_t r)
{
	if (__builtin_expect(g->active, 0))
		zcp_mapwrite_copied(g, r);
}

static inline void after_write(int fd, size_t n, ssize_t r)
{
	if (zcp_pipe_write_worth(fd, n))
		zcp_pipe_after_io(fd, n, r, true);
}

ZCP_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct iovec iov = { (void *)buf, n };
	struct zcp_guard_pick g;
	ssize_t r;

	zcp_init();
	if (!before_write(fd, &iov, 1, false, 0, &r, &g)) {
		r = zcp_real.write(fd, buf, n);
		real_done(&g, r);
	}
	after_write(fd, n, r);
	return r;
}

ZCP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct zcp_guard_pick g;
	ssize_t r;

	zcp_init();
	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return zcp_real.writev(fd, iov, iovcnt);
	if (!before_write(fd, iov, iovcnt, false, 0, &r, &g)) {
		r = zcp_real.writev(fd, iov, iovcnt);
		real_done(&g, r);
	}
	after_write(fd, iov_total(iov, iovcnt), r);
	return r;
}

ZCP_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct iovec iov = { (void *)buf, n };
	struct zcp_guard_pick g;
	ssize_t r;

	zcp_init();
	if (!before_write(fd, &iov, 1, true, flags, &r, &g)) {
		r = zcp_real.send(fd, buf, n, flags);
		real_done(&g, r);
	}
	return r;
}

ZCP_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			  const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = { (void *)buf, n };
	struct zcp_guard_pick g = { .active = false };
	ssize_t r;

	zcp_init();
	/* An address: datagram-style, never ours. */
	if (to || !before_write(fd, &iov, 1, true, flags, &r, &g)) {
		r = zcp_real.sendto(fd, buf, n, flags, to, tolen);
		real_done(&g, r);
	}
	return r;
}

ZCP_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct zcp_guard_pick g = { .active = false };
	ssize_t r;

	zcp_init();
	/* Addresses and ancillary data (descriptors, credentials) pass. */
	if (!msg || msg->msg_name || msg->msg_controllen ||
	    msg->msg_iovlen > IOV_MAX ||
	    !before_write(fd, msg->msg_iov, (int)msg->msg_iovlen, true, flags,
			  &r, &g)) {
		r = zcp_real.sendmsg(fd, msg, flags);
		real_done(&g, r);
	}
	return r;
}

ZCP_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	ssize_t r;

	zcp_init();
	r = zcp_real.read(fd, buf, n);
	if (n >= ZCP_PIPE_MIN_IO && zcp_pipe_worth(fd))
		zcp_pipe_after_io(fd, n, r, false);
	if (r >= ZCP_FORWARD_MIN_IO)
		zcp_forward_read(fd, buf, r);
	return r;
}

ZCP_EXPORT int pipe(int fds[2])
{
	int r;

	zcp_init();
	r = zcp_real.pipe(fds);
	if (r == 0) {
		zcp_conv_fd_forget(fds[0]);
		zcp_conv_fd_forget(fds[1]);
	}
	return r;
}

ZCP_EXPORT int pipe2(int fds[2], int flags)
{
	int r;

	zcp_init();
	r = zcp_real.pipe2(fds, flags);
	if (r == 0) {
		zcp_conv_fd_forget(fds[0]);
		zcp_conv_fd_forget(fds[1]);
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* Descriptor numbers.                                                 */


ZCP_EXPORT int close(int fd)
{
	zcp_init();
	if (zcp_fd_is_ours(fd)) {
		/* Without us this number would not be open. */
		errno = EBADF;
		return -1;
	}
	zcp_conv_fd_forget(fd);
	return zcp_real.close(fd);
}

ZCP_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	unsigned fd;

	zcp_init();
	if (!zcp_real.close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (!(flags & CLOSE_RANGE_CLOEXEC)) {
		zcp_fd_range_closing(lo, hi, zcp_own_fd_moved);
		for (fd = lo; fd <= hi && fd < 65536; fd++)
			zcp_conv_fd_forget(fd);
	}
	return zcp_real.close_range(lo, hi, flags);
}

ZCP_EXPORT void closefrom(int lo)
{
	int fd;

	zcp_init();
	if (lo >= 0) {
		zcp_fd_range_closing(lo, ~0u, zcp_own_fd_moved);
		for (fd = lo; fd < 65536; fd++)
			zcp_conv_fd_forget(fd);
	}
	zcp_real.closefrom(lo);
}

/*
 * dup2/dup3: old must be the program's (ours are not open as far as it
 * knows: EBADF); new may be ours, which then moves out of the way.
 */
static bool dup_prepare(int old, int new)
{
	zcp_init();
	if (zcp_fd_is_ours(old)) {
		errno = EBADF;
		return false;
	}
	if (old != new) {
		zcp_fd_evict(new, zcp_own_fd_moved);
		zcp_conv_fd_forget(new);
	}
	return true;
}

ZCP_EXPORT int dup2(int old, int new)
{
	return dup_prepare(old, new) ? zcp_real.dup2(old, new) : -1;
}

ZCP_EXPORT int dup3(int old, int new, int flags)
{
	return dup_prepare(old, new) ? zcp_real.dup3(old, new, flags) : -1;
}

/* ------------------------------------------------------------------ */
/* Mappings.                                                           */

ZCP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	void *p;
	int e;

	zcp_init();
	/* A fixed mapping replaces whatever was there. */
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))
		zcp_map_removed(addr, len);
	p = zcp_real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && !(flags & MAP_ANONYMOUS) && fd >= 0) {
		e = errno;
		zcp_map_added(p, len, prot, flags, fd, off);
		errno = e;
	}
	return p;
}

ZCP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
			off_t off) __attribute__((alias("mmap")));

ZCP_EXPORT int munmap(void *addr, size_t len)
{
	zcp_init();
	zcp_map_removed(addr, len);
	return zcp_real.munmap(addr, len);
}

ZCP_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	zcp_init();
	/* Writable even once: private pages may be copies from then on. */
	if (prot & PROT_WRITE)
		zcp_map_removed(addr, len);
	return zcp_real.mprotect(addr, len, prot);
}

ZCP_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *want = NULL;
	va_list ap;

	zcp_init();
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	/* Forgotten rather than followed: only an opportunity lost. */
	zcp_map_removed(old, oldlen);
	if (flags & MREMAP_FIXED)
		zcp_map_removed(want, newlen);
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))
		return zcp_real.mremap(old, oldlen, newlen, flags, want);
	return zcp_real.mremap(old, oldlen, newlen, flags);
}
