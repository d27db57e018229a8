/*
 * pipes.c - ZCP_PIPE: grow busy pipes (Streamline's self-scaling buffers).
 *
 * A Linux pipe holds 64 KiB.  A writer whose writes are larger than that
 * (dd bs=128k, tar, a compressor's output) always waits for the reader
 * part-way through a write, so every write costs a context switch pair.
 * We grow a pipe when the program shows it is too small for its traffic:
 *
 *   write  a write larger than the pipe's capacity: capacity becomes the
 *          smallest power of two that holds the write;
 *   read   a read that returned the whole capacity found the pipe full:
 *          capacity doubles.
 *
 * bounded by ZC_PIPE_MAX (default 1 MiB) and /proc/sys/fs/pipe-max-size,
 * and by a per-process budget of 1/16 of fs.pipe-user-pages-soft, so that
 * our growth never pushes an unprivileged user to the soft limit, past
 * which the kernel hands out 8 KiB pipes to *new* pipes of that user.
 * Measured (docs/preload.md): dd bs=128k | cat, 64 KiB -> 128 KiB pipe,
 * 1.4x; bigger than the I/O size is slower again (cache footprint), hence
 * "smallest power of two that holds the write", not "as big as allowed".
 *
 * Shrinking (self-scaling down, Streamline's "buffer pressure"): a big
 * pipe costs its pages for as long as it lives, so a pipe we grew goes
 * back down when its traffic no longer needs the room.  There is no timer
 * thread (a preload must not add threads to someone else's program): the
 * process's own I/O on the pipe is the clock, read from the vDSO's coarse
 * clock (no system call).  Whichever end grew the pipe -- the writer for a
 * large write, the reader for a full read -- scales it down; the other end
 * sees a size it did not set and leaves it alone:
 *
 *   idle      an I/O that comes IDLE_NS (1 s) or more after the previous
 *             one on the pipe: the pipeline went quiet in between (a
 *             reader's read blocked that long; a writer paused); the pipe
 *             goes straight back to what this I/O needs (64 KiB, or the
 *             power of two that holds a larger write);
 *   pressure  at most every SAMPLE_NS (10 ms), the pipe's fill: FIONREAD
 *             after a write; for a read, free -- a read that came back
 *             short emptied the pipe, so it held what it returned.  A pipe
 *             no more than a quarter full LOW_SAMPLES (4) samples in a row
 *             is halved (a trickle that the reader keeps up with), never
 *             below the power of two that holds the largest I/O of that
 *             streak -- shrinking below it would only make the next write
 *             grow it again.
 *
 * A pipe that still holds more than the new size refuses (EBUSY) and is
 * tried again at a later sample.  Growth is untouched, so a burst after a
 * quiet spell grows the pipe again at its first large write or full read.
 * The limit of having no timer: memory falls back only at the managing
 * end's next I/O; a pipeline that stops for good keeps the size it had
 * until the pipe is closed (its data pages are freed as the reader
 * empties it anyway; what the size keeps is the slot array and the
 * charge against the user's pipe-user-pages quota).
 *
 * Only pipes of the default size (16 pages) when we first see them, and
 * still of the size we last saw, are grown: any other size was set by
 * someone else (the program, or the preload in the process at the other
 * end) and is theirs to manage.  F_GETPIPE_SZ right before every
 * F_SETPIPE_SZ keeps us from resizing a pipe someone else has sized since,
 * except in the window between the two calls (another process resizing the
 * same pipe in that microsecond).
 *
 * What growing changes, observably: F_GETPIPE_SZ and FIONREAD report more;
 * writers block (or get EAGAIN, if non-blocking) later, after up to the new
 * capacity instead of 64 KiB; the user's pipe page count (pipe-user-pages)
 * is higher while the pipe lives.  What it cannot change: PIPE_BUF
 * atomicity (writes <= 4096 bytes are still all-or-nothing, EAGAIN when
 * they do not fit), EOF, EPIPE/SIGPIPE, the bytes and their order.
 *
 * The cache of what each descriptor is (unknown / not a pipe / a pipe of
 * capacity C / done with) is indexed by number; a stale entry (the program
 * or libc closed and reused the number behind our back) can only cost an
 * opportunity, never a wrong resize, because every resize is preceded by a
 * fresh F_GETPIPE_SZ that must match the cached capacity.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

#define FDMAX ZCP_FDMAX

/* State word: kind (2 bits) | grown (1) | reason (4) | capacity in pages. */
enum { K_UNKNOWN, K_NOTPIPE = ZCP_PIPE_NOTPIPE, K_PIPE, K_DONE };
#define KIND(w) ((w) & 3u)
#define GROWN ZCP_PIPE_GROWN
#define REASON(w) (((w) >> 3) & 15u)
#define PAGES(w) ((w) >> 7)
#define WORD(kind, grown, reason, pages) \
	((kind) | ((grown) ? GROWN : 0) | ((reason) << 3) | ((pages) << 7))

/* preload.h reads it too (zcp_pipe_worth), so it is not static. */
_Atomic uint32_t zcp_pipe_state[FDMAX];

static const char *const reasons[] = {
	"pipe never found full",
	"pipe size set by someone else",
	"pipe at ZC_PIPE_MAX or pipe-max-size",
	"process pipe budget spent",
	"F_SETPIPE_SZ refused (user pipe quota)",
	"F_SETPIPE_SZ failed",
};
enum { R_NOTFULL, R_FOREIGN, R_ATMAX, R_BUDGET, R_EPERM, R_FAILED };

#define IDLE_NS 1000000000ull	/* a pause this long: the pipeline went quiet */
#define SAMPLE_NS 10000000ull	/* at most one FIONREAD per pipe per 10 ms */
#define LOW_SAMPLES 4		/* quarter-full samples in a row to halve */

/* Our view of the traffic on a pipe we grew (the shrink rule above).  Races
 * between threads writing one pipe cost an opportunity at most: every
 * resize is checked against a fresh F_GETPIPE_SZ. */
struct pace {
	_Atomic uint64_t last_ns;	/* previous write */
	_Atomic uint64_t sampled_ns;	/* previous FIONREAD */
	_Atomic uint32_t low;		/* low-pressure samples in a row */
	_Atomic uint32_t max_io;	/* largest I/O of the current streak */
};
static struct pace pace[FDMAX];

static size_t page_sz = 4096;
static atomic_long limit;         /* bytes; 0 = not read yet */
static atomic_long budget;        /* bytes we may still add */

/* A small file of /proc/sys as a number (async-signal-safe). */
static long proc_long(const char *path)
{
	char b[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = zcp_real.read(fd, b, sizeof(b) - 1);
	zcp_real.close(fd);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	return strtol(b, NULL, 10);
}

static void limits(void)
{
	long max, soft, lim;
	const char *e;

	if (atomic_load(&limit))
		return;
	page_sz = sysconf(_SC_PAGESIZE);
	max = proc_long("/proc/sys/fs/pipe-max-size");
	soft = proc_long("/proc/sys/fs/pipe-user-pages-soft");
	e = getenv("ZC_PIPE_MAX");
	lim = e && *e ? strtol(e, NULL, 0) : 1L << 20;
	if (max > 0 && lim > max)
		lim = max;
	if (lim < 65536)
		lim = 65536;
	atomic_store(&budget, soft > 0 ? soft * (long)page_sz / 16 : 1L << 40);
	atomic_store(&limit, lim);
}

static size_t pow2_at_least(size_t n)
{
	size_t p = 65536;

	while (p < n && p < ((size_t)1 << 40))
		p <<= 1;
	return p;
}

static void set_state(int fd, uint32_t old, uint32_t w)
{
	/* A concurrent I/O on the same fd may have moved on: keep its word. */
	atomic_compare_exchange_strong(&zcp_pipe_state[fd], &old, w);
}

static void done(int fd, uint32_t w, int reason)
{
	set_state(fd, w, WORD(K_DONE, w & GROWN, reason, PAGES(w)));
	if (w & GROWN)
		zcp_converted(ZCP_PIPE, 0);
	else
		zcp_passed(ZCP_PIPE, reasons[reason]);
}

static void grow(int fd, uint32_t w, size_t want)
{
	size_t cap = PAGES(w) * page_sz;
	long lim, got;
	int cur;

	limits();
	lim = atomic_load(&limit);
	if (want > (size_t)lim)
		want = lim;
	if (want <= cap)
		return done(fd, w, R_ATMAX);
	cur = fcntl(fd, F_GETPIPE_SZ);
	if (cur < 0) { /* the number now names something else */
		set_state(fd, w, WORD(K_NOTPIPE, 0, 0, 0));
		return;
	}
	if ((size_t)cur != cap)
		return done(fd, w, R_FOREIGN);
	if (atomic_fetch_sub(&budget, want - cap) < (long)(want - cap)) {
		atomic_fetch_add(&budget, want - cap);
		return done(fd, w, R_BUDGET);
	}
	got = fcntl(fd, F_SETPIPE_SZ, (int)want);
	if (got < 0) {
		atomic_fetch_add(&budget, want - cap);
		return done(fd, w, errno == EPERM ? R_EPERM : R_FAILED);
	}
	/* The kernel rounds up to a power-of-two number of pages. */
	if ((size_t)got > want)
		atomic_fetch_sub(&budget, got - want);
	set_state(fd, w, WORD(K_PIPE, 1, 0, (size_t)got / page_sz));
	zcp_converted(ZCP_PIPE, 0);
}

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);	/* vDSO */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Make a pipe we grew smaller (not below 64 KiB).  Returns true if it was
 * resized. */
static bool shrink(int fd, uint32_t w, size_t want)
{
	size_t cap = PAGES(w) * page_sz;
	long got;
	int cur;

	if (want >= cap)
		return false;
	cur = fcntl(fd, F_GETPIPE_SZ);
	if (cur < 0) {
		set_state(fd, w, WORD(K_NOTPIPE, 0, 0, 0));
		return false;
	}
	if ((size_t)cur != cap) {
		done(fd, w, R_FOREIGN);
		return false;
	}
	got = fcntl(fd, F_SETPIPE_SZ, (int)want);
	if (got < 0 || (size_t)got >= cap)
		return false;	/* EBUSY: it holds more than want; later */
	atomic_fetch_add(&budget, (long)(cap - (size_t)got));
	set_state(fd, w, WORD(K_PIPE, (size_t)got > 16 * page_sz, 0,
			      (size_t)got / page_sz));
	atomic_store_explicit(&pace[fd].max_io, 0, memory_order_relaxed);
	atomic_store_explicit(&pace[fd].low, 0, memory_order_relaxed);
	return true;
}

/* An I/O on a pipe we grew: the shrink rule.  Writes sample the fill
 * with FIONREAD after the write; a read that came back short of what it
 * asked emptied the pipe, so it held `got` bytes -- a free sample; a full
 * read is a high one. */
static bool pace_io(int fd, uint32_t w, size_t asked, size_t got,
		    bool is_write)
{
	struct pace *p = &pace[fd];
	uint64_t now = coarse_ns();
	uint64_t last = atomic_exchange_explicit(&p->last_ns, now,
						 memory_order_relaxed);
	size_t cap = PAGES(w) * page_sz, io = is_write ? asked : got, fill, want;
	uint32_t io32 = io < UINT32_MAX ? (uint32_t)io : UINT32_MAX, n;
	int inq;

	if (io32 > atomic_load_explicit(&p->max_io, memory_order_relaxed))
		atomic_store_explicit(&p->max_io, io32, memory_order_relaxed);
	if (last && now - last >= IDLE_NS)
		return shrink(fd, w, pow2_at_least(is_write ? asked : 0));
	if (now - atomic_load_explicit(&p->sampled_ns, memory_order_relaxed) <
	    SAMPLE_NS)
		return false;
	atomic_store_explicit(&p->sampled_ns, now, memory_order_relaxed);
	if (!is_write)
		fill = got < asked ? got : SIZE_MAX;
	else if (ioctl(fd, FIONREAD, &inq) < 0)
		return false;
	else
		fill = (size_t)inq;
	if (fill > cap / 4) {
		atomic_store_explicit(&p->low, 0, memory_order_relaxed);
		return false;
	}
	n = atomic_fetch_add_explicit(&p->low, 1, memory_order_relaxed) + 1;
	if (n == 1)	/* a streak starts: the busy I/O before it is past */
		atomic_store_explicit(&p->max_io, io32, memory_order_relaxed);
	if (n < LOW_SAMPLES)
		return false;
	atomic_store_explicit(&p->low, 0, memory_order_relaxed);
	want = pow2_at_least(atomic_load_explicit(&p->max_io,
						  memory_order_relaxed));
	return shrink(fd, w, want > cap / 2 ? want : cap / 2);
}

static void after_io(int fd, size_t asked, ssize_t got, bool is_write,
		     uint32_t w);

void zcp_pipe_after_io(int fd, size_t asked, ssize_t got, bool is_write)
{
	uint32_t w;
	int e;

	if (!zcp_pipe_worth(fd) || got <= 0 || !zcp_enabled(ZCP_PIPE))
		return;
	w = atomic_load_explicit(&zcp_pipe_state[fd], memory_order_relaxed);
	e = errno; /* the program sees the real call's errno */
	after_io(fd, asked, got, is_write, w);
	errno = e;
}

static void after_io(int fd, size_t asked, ssize_t got, bool is_write,
		     uint32_t w)
{
	size_t cap;
	int c;
	if (KIND(w) == K_UNKNOWN) {
		if (asked < ZCP_PIPE_MIN_IO || zcp_in_vfork_child())
			return;
		limits();
		c = fcntl(fd, F_GETPIPE_SZ);
		if (c < 0)
			w = WORD(K_NOTPIPE, 0, 0, 0);
		else if ((size_t)c != 16 * page_sz)
			w = WORD(K_DONE, 0, R_FOREIGN, (uint32_t)c / page_sz);
		else
			w = WORD(K_PIPE, 0, 0, (uint32_t)c / page_sz);
		set_state(fd, 0, w);
		if (c < 0)
			return;
	}
	if ((w & GROWN) && !zcp_in_vfork_child() &&
	    (KIND(w) == K_PIPE ||
	     (KIND(w) == K_DONE && REASON(w) != R_FOREIGN)) &&
	    pace_io(fd, w, asked, (size_t)got, is_write))
		w = atomic_load_explicit(&zcp_pipe_state[fd],
					 memory_order_relaxed);
	if (asked < ZCP_PIPE_MIN_IO)
		return;
	zcp_seen(ZCP_PIPE);
	if (KIND(w) == K_DONE) {
		if (w & GROWN)
			zcp_converted(ZCP_PIPE, 0);
		else
			zcp_passed(ZCP_PIPE, reasons[REASON(w)]);
		return;
	}
	cap = PAGES(w) * page_sz;
	if (zcp_in_vfork_child())
		goto pass;
	if (is_write && asked > cap)
		return grow(fd, w, pow2_at_least(asked));
	if (!is_write && (size_t)got >= cap)
		return grow(fd, w, cap * 2);
pass:
	if (w & GROWN)
		zcp_converted(ZCP_PIPE, 0);
	else
		zcp_passed(ZCP_PIPE, reasons[R_NOTFULL]);
}

/* A descriptor number now names a new file: forget what we knew. */
void zcp_pipe_forget(int fd)
{
	if (fd >= 0 && fd < FDMAX) {
		atomic_store_explicit(&zcp_pipe_state[fd], 0, memory_order_relaxed);
		atomic_store_explicit(&pace[fd].last_ns, 0, memory_order_relaxed);
		atomic_store_explicit(&pace[fd].max_io, 0, memory_order_relaxed);
		atomic_store_explicit(&pace[fd].low, 0, memory_order_relaxed);
	}
}

void zcp_pipe_fork_child(void)
{
	/* Descriptors are inherited with what we know of them; the budget
	 * is per process. */
	long soft;

	if (!atomic_load(&limit))
		return;
	soft = proc_long("/proc/sys/fs/pipe-user-pages-soft");
	atomic_store(&budget, soft > 0 ? soft * (long)page_sz / 16 : 1L << 40);
}
