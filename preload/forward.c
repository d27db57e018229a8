/*
 * forward.c - ZCP_FORWARD: data read into a buffer and written out
 * unmodified.  Observed and counted; never converted.
 *
 * Converting read(in, buf) + write(out, buf) into splice needs a proof
 * that nothing stored into buf in between - not the program, not another
 * thread, not a signal handler, not the kernel on behalf of some other
 * call.  We built and measured the mechanisms that give such a proof
 * (docs/preload.md, "forward"; the prototype is
 * preload/experiments/forward_wp.c):
 *
 *   - mprotect + a chained SIGSEGV handler sees the program's own stores,
 *     but a kernel store into the protected buffer (a read(), recv() or
 *     fread() that glibc issues internally, past our hooks) fails with
 *     EFAULT instead of succeeding: not provably transparent.
 *   - userfaultfd write-protection in asynchronous mode with PAGEMAP_SCAN
 *     (Linux 6.7+) sees every store, the kernel's included.  Re-arming
 *     after each read costs a write fault per 4 KiB page on the next read:
 *     0.55x of the plain copy loop with 128 KiB buffers.  Lifting the
 *     protection around our own read (no faults) gives 0.89x at 128 KiB
 *     and 1.13x at 1 MiB - and opens a window (a signal handler running
 *     between the read's return and the re-arm) that only wrapping every
 *     signal handler of the program would close.
 *   - Mapping the file over the buffer instead of reading (no copy at
 *     all) changes what the buffer holds when the file changes later, and
 *     a truncation makes the buffer fault: not acceptable at any setting.
 *
 * And for a file source every by-reference transfer has mapwrite's window
 * (the page-cache pages go out after write() returned), so even a proven
 * buffer would only be convertible on request.  Not correct and
 * beneficial at once, so not shipped; what is left is this observer, so
 * that the statistics show how often programs forward data: a write whose
 * buffer is the one the same thread just read into counts as seen, and as
 * passed with its source's kind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "preload.h"

#define MIN_IO ZCP_FORWARD_MIN_IO

/* The calling thread's last read() (initial-exec TLS: no allocation,
 * async-signal-safe; the preload is loaded at start, never dlopen'ed). */
static __thread struct {
	uintptr_t buf;
	size_t len;
	int fd;
} last __attribute__((tls_model("initial-exec")));

void zcp_forward_read(int fd, const void *buf, ssize_t got)
{
	if (got < MIN_IO)
		return;
	last.fd = fd;
	last.buf = (uintptr_t)buf;
	last.len = got;
}

/*
 * The source's kind, for the reason label only: learnt with one fstat per
 * descriptor and cached (a stale entry, after libc closed and reused the
 * number behind our back, can only mislabel a count).
 */
#define NKIND 65536
static _Atomic unsigned char kind_of[NKIND]; /* 0: not known yet */

static const char *const kinds[] = {
	"",
	"read-then-write from a file (not converted: see docs/preload.md)",
	"read-then-write from a pipe (not converted: see docs/preload.md)",
	"read-then-write from a socket (not converted: see docs/preload.md)",
	"read-then-write from another kind (not converted: see docs/preload.md)",
};

static const char *source_kind(int fd)
{
	struct stat st;
	unsigned char k = fd >= 0 && fd < NKIND ? kind_of[fd] : 0;

	if (!k) {
		int e = errno;

		if (fstat(fd, &st) != 0)
			k = 4;
		else if (S_ISREG(st.st_mode))
			k = 1;
		else if (S_ISFIFO(st.st_mode))
			k = 2;
		else if (S_ISSOCK(st.st_mode))
			k = 3;
		else
			k = 4;
		if (fd >= 0 && fd < NKIND)
			kind_of[fd] = k;
		errno = e;
	}
	return kinds[k];
}

void zcp_forward_forget(int fd)
{
	if (fd >= 0 && fd < NKIND)
		kind_of[fd] = 0;
}

void zcp_forward_write(const struct iovec *iov, int iovcnt)
{
	uintptr_t a;

	if (!last.len || iovcnt < 1 || iov[0].iov_len < MIN_IO)
		return;
	a = (uintptr_t)iov[0].iov_base;
	if (a < last.buf || a + iov[0].iov_len > last.buf + last.len)
		return;
	/* No vfork check (a getpid per write): a vfork child's calls merely
	 * count in its parent's statistics, which it shares. */
	if (!zcp_enabled(ZCP_FORWARD))
		return;
	last.len = 0; /* one write per read counts */
	zcp_seen(ZCP_FORWARD);
	zcp_passed(ZCP_FORWARD, source_kind(last.fd));
}
