/*
 * fdstate.c - the preload's own descriptors, and keeping them out of the
 * program's way.
 *
 * mapwrite keeps a duplicate of each file it may send from (a program is
 * free to close its descriptor right after mmap).  Those descriptors must
 * not change what the program observes, as far as that can be arranged:
 *
 *   - they are close-on-exec and live above the numbers programs use (from
 *     1024, or half the RLIMIT_NOFILE soft limit when that is lower), so
 *     open() keeps returning the numbers it would return without us;
 *   - close() of one of them says EBADF and leaves it open, exactly what a
 *     program closing a number it never opened gets without the preload;
 *   - dup2()/dup3() onto one moves ours elsewhere first, so the program's
 *     dup2 succeeds as it would have;
 *   - close_range()/closefrom() take them along: the owner is told first
 *     and forgets them (a daemon closing everything wants files released).
 *
 * Owners learn of a move through the function the caller of zcp_fd_evict()
 * and zcp_fd_range_closing() passes (hooks.c passes the conversions'
 * registry): this file calls no conversion itself.
 *
 * What still shows: they count against RLIMIT_NOFILE and appear in
 * /proc/self/fd, and fcntl(F_GETFD) on their number succeeds.
 *
 * A transfer reads its file through a transient duplicate whose identity
 * it has checked.  Such a number must not be closed or replaced while the
 * transfer runs, or a file the program opens meanwhile could take the
 * number and be sent instead.  So dup2() onto a transient, or a
 * close_range() over one, waits until the transfer is over (unless the
 * caller is the transfer's own thread, in a signal handler: it cannot wait
 * for itself).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "preload.h"

#define NBITS 65536
static atomic_ulong ours[NBITS / (8 * sizeof(unsigned long))];
static atomic_int nours;

#define WORD(fd) ((fd) / (8 * sizeof(unsigned long)))
#define BIT(fd) (1UL << ((fd) % (8 * sizeof(unsigned long))))

static int hide_base(void)
{
	static atomic_int base;
	struct rlimit rl;
	int b = atomic_load(&base);

	if (b)
		return b;
	b = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 2 < 1024)
		b = rl.rlim_cur / 2;
	if (b < 3)
		b = 3;
	atomic_store(&base, b);
	return b;
}

static void mark(int fd, bool on)
{
	if (fd < 0 || fd >= NBITS)
		return;
	if (on) {
		atomic_fetch_or(&ours[WORD(fd)], BIT(fd));
		atomic_fetch_add(&nours, 1);
	} else {
		atomic_fetch_and(&ours[WORD(fd)], ~BIT(fd));
		atomic_fetch_sub(&nours, 1);
	}
}

bool zcp_fd_is_ours(int fd)
{
	if (fd < 0 || fd >= NBITS || !atomic_load(&nours))
		return false;
	return atomic_load(&ours[WORD(fd)]) & BIT(fd);
}

int zcp_fd_hide(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, hide_base());

	if (h < 0)
		return -1;
	if (h >= NBITS) { /* cannot track it: do not keep it */
		zcp_real.close(h);
		errno = EMFILE;
		return -1;
	}
	mark(h, true);
	return h;
}

void zcp_fd_release(int fd)
{
	if (!zcp_fd_is_ours(fd))
		return;
	mark(fd, false);
	zcp_real.close(fd);
}

/* Transient descriptors in use by transfers, and their threads. */
#define NTRANS 64
static struct {
	atomic_int fd; /* -1 or 0 when free (0 is never ours) */
	pid_t tid;
} trans[NTRANS];

int zcp_fd_transient(int fd)
{
	int h = zcp_fd_hide(fd), i;

	if (h < 0)
		return -1;
	for (i = 0; i < NTRANS; i++) {
		int free_ = 0;

		if (atomic_compare_exchange_strong(&trans[i].fd, &free_, h)) {
			trans[i].tid = gettid();
			return h;
		}
	}
	zcp_fd_release(h); /* too many transfers at once */
	errno = EMFILE;
	return -1;
}

void zcp_fd_transient_done(int fd)
{
	int i;

	zcp_fd_release(fd);
	for (i = 0; i < NTRANS; i++) {
		int f = fd;

		if (atomic_compare_exchange_strong(&trans[i].fd, &f, 0))
			return;
	}
}

/* Wait until no transfer of another thread uses a number in [lo, hi]. */
static void wait_transients(unsigned lo, unsigned hi)
{
	pid_t me = gettid();
	int i;

	for (i = 0; i < NTRANS; i++) {
		int f;

		while ((f = atomic_load(&trans[i].fd)) > 0 &&
		       (unsigned)f >= lo && (unsigned)f <= hi &&
		       trans[i].tid != me)
			sched_yield();
	}
}

/* The program wants number fd, which is ours: move ours. */
void zcp_fd_evict(int fd, zcp_fd_moved_fn *moved)
{
	int h;

	if (!zcp_fd_is_ours(fd))
		return;
	wait_transients(fd, fd);
	if (!zcp_fd_is_ours(fd))
		return; /* it was a transient, now gone */
	h = fcntl(fd, F_DUPFD_CLOEXEC, hide_base());
	if (h >= 0 && h < NBITS) {
		mark(h, true);
		moved(fd, h);
	} else {
		if (h >= 0)
			zcp_real.close(h);
		moved(fd, -1);
	}
	mark(fd, false);
	zcp_real.close(fd);
}

/* close_range/closefrom over [lo, hi]: our descriptors there go too. */
void zcp_fd_range_closing(unsigned lo, unsigned hi, zcp_fd_moved_fn *moved)
{
	unsigned fd;

	if (!atomic_load(&nours))
		return;
	wait_transients(lo, hi);
	if (hi >= NBITS)
		hi = NBITS - 1;
	for (fd = lo; fd <= hi; fd++)
		if (zcp_fd_is_ours(fd)) {
			moved(fd, -1);
			mark(fd, false);
		}
}
