/*
 * stdio.c - ZCP_STDIO: Mach's mapped stdio for unmodified glibc programs.
 *
 * Tevanian et al. rebuilt 4.3BSD stdio on map_fd(): a file opened for
 * reading is mapped whole and the stdio buffer *is* the mapping, so getc()
 * and friends read the page cache directly instead of read() copying 4 KiB
 * at a time into a private buffer.  They also added fmap() and fbufsize()
 * so that a program can address the buffered file as an array.
 *
 * glibc already contains exactly that machinery, behind the little-known
 * 'm' mode flag (fopen(path, "rm")): the stream starts on the jump table
 * _IO_file_jumps_maybe_mmap, and at its first read glibc fstat()s the
 * descriptor, maps a regular non-empty file whole (MAP_SHARED, PROT_READ)
 * and switches to _IO_file_jumps_mmap, whose underflow never copies and
 * re-fstat()s (mremap on growth, trim on shrink) when the window runs out;
 * anything else falls back to the ordinary jump table.  Because those
 * tables live inside glibc's vtable section, glibc's vtable validation
 * (IO_validate_vtable / _IO_vtable_check, which aborts on foreign tables in
 * 2.36) accepts them, and every stdio entry point - including the getc()
 * and getc_unlocked() macros that read _IO_read_ptr directly - keeps
 * working unchanged.  So this conversion does not reimplement stdio: it
 * adds 'm' to read-only modes and repairs the few places where glibc's
 * mmap mode is observably different from its read() mode:
 *
 *   fdopen    glibc's first read assumes stream offset 0 when _offset is
 *             unknown; we record the descriptor's real offset at fdopen.
 *   fflush    the mmap mode keeps using its cached position after a
 *             flush, while the read() mode (and POSIX) resume at the
 *             descriptor's offset, which another handle may have moved;
 *             after fflush() we demote the stream to the read() mode.
 *   fork      same reason: an unread mapped-mode stream is demoted before
 *             fork (pthread_atfork), so parent and child share the offset
 *             exactly as they would without us.
 *   SEEK_END  the mmap seekoff measures from the mapped size, not from the
 *             file's current size; we turn it into SEEK_SET from fstat().
 *   SIGBUS    a file truncated under the mapping would kill the program;
 *             a chained SIGBUS handler maps zero pages over the vanished
 *             part (the reader sees NULs, then EOF at the next underflow)
 *             and leaves every other SIGBUS to the program's disposition.
 *
 * Approaches rejected (docs/preload.md, section stdio, has more): our own
 * jump table (aborted by glibc's vtable validation), fopencookie (fileno()
 * is -1, which breaks fstat/isatty/read on the stream), and interposing
 * fread/getline/getc (misses the getc macros, and is not a mapping).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

/* glibc keeps the jump table pointer right after the FILE (_IO_FILE_plus). */
#define VTABLE(fp) (*(void *const *)((const char *)(fp) + sizeof(FILE)))
#define IO_POS_BAD ((off64_t)-1)

/* glibc's jump tables, learnt from a probe stream (see probe()). */
static const void *maybe_vt, *mmap_vt;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool usable; /* the probe behaved exactly as expected */

/*
 * Registry of converted streams, an open-addressed hash of FILE pointers.
 * The SIGBUS handler walks it without locks, so slots are atomics; the
 * writers (open/close paths) serialise on reg_lock.  A stream is removed
 * before glibc frees it, and removal waits for handlers in flight, so the
 * handler never reads a freed FILE.
 */
#define NSLOT 1024
static FILE *_Atomic slot[NSLOT];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int in_handler;
static atomic_int nlive, nregions; /* let fclose() skip all this when 0 */

/* fmap() regions: our own mappings, stable until fclose (see fmap()). */
#define NREGION 256
struct region {
	FILE *_Atomic fp;
	char *base;
	size_t len;    /* fbufsize() */
	size_t maplen; /* bytes mapped (page multiple) */
};
static struct region region[NREGION];

static size_t hash(const FILE *fp)
{
	uintptr_t x = (uintptr_t)fp;

	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (x >> 32) % NSLOT;
}

static int reg_find(const FILE *fp) /* caller holds reg_lock */
{
	size_t i, h = hash(fp);

	for (i = 0; i < NSLOT; i++) {
		FILE *s = atomic_load(&slot[(h + i) % NSLOT]);

		if (s == fp)
			return (h + i) % NSLOT;
		if (!s)
			return -1;
	}
	return -1;
}

static bool reg_add(FILE *fp)
{
	size_t i, h = hash(fp);
	bool ok = false;

	pthread_mutex_lock(&reg_lock);
	/* Keep the table at most 3/4 full so probes stay short. */
	if (nlive < NSLOT * 3 / 4) {
		for (i = 0; i < NSLOT; i++) {
			FILE *s = atomic_load(&slot[(h + i) % NSLOT]);

			if (!s) {
				atomic_store(&slot[(h + i) % NSLOT], fp);
				nlive++;
				ok = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return ok;
}

/*
 * Remove slot i by backward shifting (no tombstones, so lookups of absent
 * streams stay short however many streams come and go).  An entry being
 * moved is written to its new slot before the old one is cleared, so the
 * lock-free SIGBUS handler sees every live stream at least once.
 */
static void reg_del(int i) /* caller holds reg_lock */
{
	int j = i;

	for (;;) {
		FILE *s;
		int k;

		j = (j + 1) % NSLOT;
		s = atomic_load(&slot[j]);
		if (!s)
			break;
		k = hash(s);
		/* s stays if its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		atomic_store(&slot[i], s);
		i = j;
	}
	atomic_store(&slot[i], NULL);
	nlive--;
}

/* Is fp a stream we converted?  Cheap enough for every fseek(). */
static bool reg_has(FILE *fp)
{
	bool r;

	if (!fp || !usable || !atomic_load(&nlive))
		return false;
	pthread_mutex_lock(&reg_lock);
	r = reg_find(fp) >= 0;
	pthread_mutex_unlock(&reg_lock);
	return r;
}

static void wait_handlers(void)
{
	while (atomic_load(&in_handler))
		sched_yield();
}

/*
 * Bytes a converted stream served from its mapping (its read position).
 * fflush() on a mapped stream (_IO_file_sync_mmap) moves the position to
 * _offset and empties the get area, as gnulib's fclose() wrapper does
 * before every fclose (cut, sort, ...): then _offset is the position.
 */
static uint64_t served(FILE *fp)
{
	size_t maplen;

	if (VTABLE(fp) != mmap_vt || !fp->_IO_buf_base)
		return 0;
	maplen = fp->_IO_buf_end - fp->_IO_buf_base;
	if (fp->_IO_read_ptr == fp->_IO_read_end &&
	    fp->_IO_read_ptr == fp->_IO_read_base && fp->_offset > 0)
		return (uint64_t)fp->_offset < maplen ? (uint64_t)fp->_offset
						      : maplen;
	if (fp->_IO_read_ptr < fp->_IO_buf_base ||
	    fp->_IO_read_ptr > fp->_IO_buf_end)
		return 0; /* in the ungetc backup area */
	return fp->_IO_read_ptr - fp->_IO_buf_base;
}

static void account(FILE *fp)
{
	if (VTABLE(fp) == mmap_vt)
		zcp_converted(ZCP_STDIO, served(fp));
	else
		zcp_passed(ZCP_STDIO, "not mapped at first read (not regular, empty, or never read)");
}

/* Stop treating fp as converted (it stays open): count what it served. */
static void reg_drop(FILE *fp)
{
	int i;

	pthread_mutex_lock(&reg_lock);
	i = reg_find(fp);
	if (i >= 0) {
		account(fp);
		reg_del(i);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* Forget fp before glibc closes or reopens it: stats, fmap() regions. */
static void reg_forget(FILE *fp)
{
	int i;

	/* fp cannot be registered concurrently: it is being closed. */
	if (!atomic_load(&nlive) && !atomic_load(&nregions))
		return;
	pthread_mutex_lock(&reg_lock);
	i = reg_find(fp);
	if (i >= 0) {
		account(fp);
		reg_del(i);
	}
	for (i = 0; i < NREGION; i++) {
		if (atomic_load(&region[i].fp) != fp)
			continue;
		atomic_store(&region[i].fp, NULL);
		atomic_fetch_sub(&nregions, 1);
		wait_handlers();
		if (region[i].maplen)
			munmap(region[i].base, region[i].maplen);
	}
	pthread_mutex_unlock(&reg_lock);
	wait_handlers();
}

/* ---------------------------------------------------------------------- */
/* SIGBUS: a truncated file must not kill the program.                     */

static struct sigaction prog_bus; /* what the program asked for */
static bool bus_installed;
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t page_size;

static uintptr_t page_up(uintptr_t x)
{
	return (x + page_size - 1) & ~(uintptr_t)(page_size - 1);
}

/* Replace [addr's page, end) by zero pages: the reader sees NULs. */
static bool zero_fill(uintptr_t addr, uintptr_t base, uintptr_t end)
{
	uintptr_t pg = addr & ~(uintptr_t)(page_size - 1);

	if (addr < base || addr >= end)
		return false;
	return mmap((void *)pg, end - pg, PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
}

static bool fault_is_ours(uintptr_t addr)
{
	int i;

	for (i = 0; i < NSLOT; i++) {
		FILE *fp = atomic_load(&slot[i]);
		uintptr_t b, e;

		if (!fp || VTABLE(fp) != mmap_vt)
			continue;
		/*
		 * Only the thread holding fp's lock reads or remaps its
		 * buffer, and a fault in it comes from that very thread, so
		 * these fields are stable here.
		 */
		b = (uintptr_t)fp->_IO_buf_base;
		e = page_up((uintptr_t)fp->_IO_buf_end);
		if (b && zero_fill(addr, b, e))
			return true;
	}
	for (i = 0; i < NREGION; i++) {
		struct region *r = &region[i];

		if (!atomic_load(&r->fp) || !r->maplen)
			continue;
		if (zero_fill(addr, (uintptr_t)r->base,
			      (uintptr_t)r->base + r->maplen))
			return true;
	}
	return false;
}

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction p;
	int saved = errno;
	bool ours = false;

	if (si->si_code == BUS_ADRERR) {
		atomic_fetch_add(&in_handler, 1);
		ours = fault_is_ours((uintptr_t)si->si_addr);
		atomic_fetch_sub(&in_handler, 1);
	}
	errno = saved;
	if (ours)
		return; /* the faulting load is retried on the zero page */

	/* Not ours: behave as the program's own disposition would. */
	p = prog_bus;
	if (p.sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* an ignored kill(SIGBUS) */
	if (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN) {
		/*
		 * A fault with SIGBUS ignored kills the process anyway, so
		 * both cases end in the default action: reinstate it and let
		 * the fault repeat (or the sent signal arrive again).
		 */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		zcp_real.sigaction(SIGBUS, &dfl, NULL);
		if (si->si_code <= 0)
			raise(SIGBUS);
		return;
	}
	if (p.sa_flags & SA_RESETHAND) {
		prog_bus.sa_handler = SIG_DFL;
		prog_bus.sa_flags &= ~SA_SIGINFO;
	}
	/* The kernel restores the interrupted mask on return; apply theirs. */
	if (!(p.sa_flags & SA_NODEFER))
		sigaddset(&p.sa_mask, sig);
	pthread_sigmask(SIG_SETMASK, &p.sa_mask, NULL);
	if (p.sa_flags & SA_SIGINFO)
		p.sa_sigaction(sig, si, uc);
	else
		p.sa_handler(sig);
}

/* Put our handler in front of SIGBUS, keeping the program's as the next. */
static void bus_install(void)
{
	struct sigaction sa = { .sa_sigaction = bus_handler };

	pthread_mutex_lock(&sig_lock);
	if (!bus_installed) {
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		if (zcp_real.sigaction(SIGBUS, &sa, &prog_bus) == 0)
			bus_installed = true;
	}
	pthread_mutex_unlock(&sig_lock);
}

/*
 * Once our handler is in place, the program's SIGBUS disposition is kept
 * as the next link of the chain and reported back as if it were installed.
 * (Weak so that a signal-chaining sigaction() elsewhere in the preload can
 * take over and call zcp_stdio_sigaction() for SIGBUS.)
 */
ZCP_EXPORT int zcp_stdio_sigaction(int sig, const struct sigaction *act,
				   struct sigaction *old)
{
	int r = 0;

	zcp_init();
	if (sig != SIGBUS)
		return zcp_real.sigaction(sig, act, old);
	pthread_mutex_lock(&sig_lock);
	if (!bus_installed) {
		r = zcp_real.sigaction(sig, act, old);
	} else {
		if (old)
			*old = prog_bus;
		if (act) {
			prog_bus = *act;
			if (act->sa_handler != SIG_DFL &&
			    act->sa_handler != SIG_IGN) {
				/* Their flags that matter at delivery. */
				struct sigaction sa = {
					.sa_sigaction = bus_handler,
					.sa_flags = SA_SIGINFO | SA_ONSTACK |
						    (act->sa_flags & SA_RESTART),
				};

				sigemptyset(&sa.sa_mask);
				zcp_real.sigaction(SIGBUS, &sa, NULL);
			}
		}
	}
	pthread_mutex_unlock(&sig_lock);
	return r;
}

ZCP_EXPORT __attribute__((weak)) int sigaction(int sig,
					       const struct sigaction *act,
					       struct sigaction *old)
{
	return zcp_stdio_sigaction(sig, act, old);
}

/* glibc's signal() calls sigaction internally, so it needs its own hook. */
ZCP_EXPORT __attribute__((weak)) sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa = { .sa_handler = h }, old;

	zcp_init();
	if (sig == SIGBUS && h != SIG_ERR) {
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, sig);
		sa.sa_flags = SA_RESTART; /* BSD semantics, as glibc's */
		if (zcp_stdio_sigaction(sig, &sa, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	return zcp_real.signal(sig, h);
}

/* ---------------------------------------------------------------------- */
/* Demotion: back to glibc's read() mode, exactly where the stream stands. */

/* glibc exports it (GLIBC_2.2.5): install a buffer, 1 = glibc frees it. */
extern void _IO_setb(FILE *fp, char *base, char *end, int owned)
	__attribute__((weak)); /* weak: the library also loads under musl */

/*
 * Put fp back on glibc's plain read() jump table, at the same position.
 * st, when the caller has it, spares glibc a second fstat().
 */
static void demote_locked(FILE *fp, const struct stat *st)
{
	char *base = fp->_IO_buf_base;
	size_t len = fp->_IO_buf_end - fp->_IO_buf_base;
	bool mapped = VTABLE(fp) == mmap_vt && base;
	size_t size = BUFSIZ;
	char *p;

	/*
	 * setvbuf(_IONBF) reaches _IO_file_setbuf_mmap, glibc's own way out
	 * of the mapped modes: it syncs the descriptor to the stream
	 * position, forgets the cached offset (as the read() mode does after
	 * a sync) and installs the plain jump table - on a one-byte buffer,
	 * and without unmapping the old one.  So we unmap it, drop the
	 * one-byte buffer and go back to full buffering with the buffer a
	 * plain fopen() would get: st_blksize bytes if below BUFSIZ, which
	 * glibc allocates itself at the next read unless we hand it over.
	 */
	if (setvbuf(fp, NULL, _IONBF, 0) != 0)
		return;
	if (mapped)
		munmap(base, len);
	fp->_IO_buf_base = fp->_IO_buf_end = NULL;
	if (st) {
		if (st->st_blksize > 0 && st->st_blksize < BUFSIZ)
			size = st->st_blksize;
		p = malloc(size);
		if (p && _IO_setb)
			_IO_setb(fp, p, p + size, 1);
		else
			free(p);
	}
	setvbuf(fp, NULL, _IOFBF, 0);
}

/* Demote fp if it is ours and still in a mapped mode. */
static void demote(FILE *fp)
{
	const void *vt;

	if (!reg_has(fp))
		return;
	flockfile(fp);
	vt = VTABLE(fp);
	if (vt == mmap_vt || vt == maybe_vt) {
		reg_drop(fp);
		demote_locked(fp, NULL);
	}
	funlockfile(fp);
}

/*
 * fork (conv.c's table; the preload's handlers run ours).  The locks are
 * taken only once the probe has found glibc as expected, as when these
 * were registered only then; the flag (the forking thread's own) releases
 * exactly what prepare took even if another thread's probe completed in
 * between.
 */
static __thread bool fork_locked __attribute__((tls_model("initial-exec")));

void zcp_stdio_fork_prepare(void)
{
	int i;

	if (!usable)
		return;
	/*
	 * Only streams that have not read yet: their first read would assume
	 * offset 0 instead of the offset the child may leave behind.  Streams
	 * already reading follow POSIX's handle rules (fflush before another
	 * handle is used), which our fflush() covers.
	 *
	 * Under reg_lock, so that no other thread's fclose() can free a
	 * stream while we look at it (fclose unregisters under reg_lock
	 * first).  A stream whose lock another thread holds is in use there
	 * and is skipped: waiting for it while holding reg_lock could
	 * deadlock with that thread's own demotion (stream lock, then
	 * reg_lock).  reg_lock and sig_lock stay held across fork, so that
	 * the child does not inherit them held by a thread it does not have.
	 */
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < NSLOT; i++) {
		FILE *fp = atomic_load(&slot[i]);

		if (!fp || VTABLE(fp) != maybe_vt || ftrylockfile(fp) != 0)
			continue;
		if (VTABLE(fp) == maybe_vt) {
			account(fp);
			reg_del(i);
			demote_locked(fp, NULL);
			i--; /* reg_del may have moved another entry here */
		}
		funlockfile(fp);
	}
	pthread_mutex_lock(&sig_lock);
	fork_locked = true;
}

void zcp_stdio_fork_release(void)
{
	if (!fork_locked)
		return;
	fork_locked = false;
	pthread_mutex_unlock(&sig_lock);
	pthread_mutex_unlock(&reg_lock);
}

/* ---------------------------------------------------------------------- */
/* Set-up.                                                                 */

/*
 * Learn glibc's two mmap jump tables from a one-byte memfd, and check that
 * this glibc behaves as the code above assumes.  Any surprise disables the
 * conversion for the life of the process.
 */
static void probe(void)
{
	FILE *f;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	if (!zcp_real.fopen || !zcp_real.fdopen || !zcp_real.freopen ||
	    !zcp_real.fclose || !zcp_real.fflush || !zcp_real.fseeko64 ||
	    !zcp_real.sigaction)
		return;
	/* Everything below is glibc's FILE; musl's is another animal. */
	if (!zcp_glibc() || !_IO_setb)
		return;

	fd = memfd_create("zcp-stdio-probe", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "z", 1) != 1 || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return;
	}
	f = zcp_real.fdopen(fd, "rm");
	if (!f) {
		close(fd);
		return;
	}
	maybe_vt = VTABLE(f);
	if (fgetc(f) == 'z' && VTABLE(f) != maybe_vt &&
	    f->_IO_buf_end - f->_IO_buf_base == 1 && fgetc(f) == EOF) {
		mmap_vt = VTABLE(f);
		usable = true;
	}
	zcp_real.fclose(f);
}

/* Every entry point's first step: the preload's set-up, then ours. */
static void init(void)
{
	zcp_init();
	pthread_once(&init_once, probe);
}

/*
 * The mode to hand glibc: "r" plus any of b/e/c, with 'm' appended.  glibc
 * parses at most six flag characters after the first, so longer modes (and
 * ",ccs=" wide modes, '+', 'x', anything unknown) are passed through.
 */
static const char *mapped_mode(const char *mode, char out[8], const char **why)
{
	size_t n = strlen(mode);
	size_t i;

	if (mode[0] != 'r') {
		*why = "mode not read-only";
		return NULL;
	}
	if (n > 6) {
		*why = "mode string too long";
		return NULL;
	}
	for (i = 1; i < n; i++) {
		if (mode[i] == 'm') {
			*why = "program asked for glibc mmap itself";
			return NULL;
		}
		if (!strchr("bec", mode[i])) {
			*why = mode[i] == '+' ? "mode not read-only"
					      : "unsupported mode flag";
			return NULL;
		}
	}
	memcpy(out, mode, n);
	out[n] = 'm';
	out[n + 1] = '\0';
	return out;
}

/* Decide, before opening, whether this open may be converted. */
static const char *want(const char *mode, char out[8])
{
	const char *why, *m;

	if (!zcp_enabled(ZCP_STDIO))
		return NULL;
	zcp_seen(ZCP_STDIO);
	init();
	if (!usable) {
		zcp_passed(ZCP_STDIO, zcp_glibc() ? "glibc mmap stdio probe failed"
						  : "not glibc (musl stdio)");
		return NULL;
	}
	m = mapped_mode(mode, out, &why);
	if (!m)
		zcp_passed(ZCP_STDIO, why);
	return m;
}

/*
 * Below this size the mapping costs more than the copies it saves: an
 * mmap, a page fault and an munmap (with its TLB flush) per file against
 * a read() or two.  Measured in docs/preload.md; ZC_STDIO_MIN sets it.
 */
static off_t min_size(void)
{
	static off_t v = -1;
	const char *e;

	if (v < 0) {
		e = getenv("ZC_STDIO_MIN");
		v = e && *e ? strtoll(e, NULL, 0) : 256 * 1024;
		if (v < 1)
			v = 1;
	}
	return v;
}

static FILE *demote_now(FILE *fp, const struct stat *st)
{
	flockfile(fp);
	demote_locked(fp, st);
	funlockfile(fp);
	return fp;
}

/* After a converted open: register it, or go back to the read() mode. */
static FILE *adopt(FILE *fp)
{
	const char *why = NULL;
	struct stat st;

	if (!fp)
		return NULL;
	/*
	 * Everything but a large regular file goes back to the read() mode
	 * now, before any read; a small file could still grow before then.
	 * Only a regular file gets its buffer from us: for a tty glibc's own
	 * allocation also turns on line buffering.
	 */
	if (fstat(fileno(fp), &st) != 0) {
		zcp_passed(ZCP_STDIO, "fstat failed");
		return demote_now(fp, NULL);
	}
	if (!S_ISREG(st.st_mode)) {
		zcp_passed(ZCP_STDIO, "not a regular file");
		return demote_now(fp, NULL);
	}
	if (st.st_size < min_size())
		why = st.st_size ? "smaller than ZC_STDIO_MIN"
				 : "size 0 at open (empty or /proc-like)";
	else if (bus_install(), !bus_installed)
		why = "cannot install the SIGBUS handler";
	else if (!reg_add(fp))
		why = "too many mapped streams open";
	if (why) {
		zcp_passed(ZCP_STDIO, why);
		demote_now(fp, &st);
	}
	return fp;
}

static FILE *open_common(FILE *(*real)(const char *, const char *),
			 const char *path, const char *mode)
{
	char m[8];
	const char *mm;

	mm = want(mode, m);
	if (!mm)
		return real(path, mode);
	return adopt(real(path, mm));
}

ZCP_EXPORT FILE *fopen(const char *path, const char *mode)
{
	init();
	return open_common(zcp_real.fopen, path, mode);
}

ZCP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	init();
	return open_common(zcp_real.fopen64 ? zcp_real.fopen64 : zcp_real.fopen,
			   path, mode);
}

ZCP_EXPORT FILE *fdopen(int fd, const char *mode)
{
	char m[8];
	const char *mm;
	off64_t off;
	FILE *fp;

	init();
	mm = want(mode, m);
	if (!mm)
		return zcp_real.fdopen(fd, mode);
	fp = zcp_real.fdopen(fd, mm);
	if (!fp)
		return NULL;
	/*
	 * glibc's first mapped read would start at offset 0; POSIX says the
	 * stream starts at the descriptor's offset.  Tell glibc.
	 */
	off = lseek(fd, 0, SEEK_CUR);
	if (off > 0)
		fp->_offset = off;
	return adopt(fp);
}

static FILE *reopen_common(FILE *(*real)(const char *, const char *, FILE *),
			   const char *path, const char *mode, FILE *fp)
{
	char m[8];
	const char *mm = NULL;
	FILE *r;

	reg_forget(fp);
	/* path == NULL changes the mode of the same descriptor: pass. */
	if (path)
		mm = want(mode, m);
	r = real(path, mm ? mm : mode, fp);
	return mm ? adopt(r) : r;
}

ZCP_EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp)
{
	init();
	return reopen_common(zcp_real.freopen, path, mode, fp);
}

ZCP_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
	init();
	return reopen_common(zcp_real.freopen64 ? zcp_real.freopen64
						: zcp_real.freopen,
			     path, mode, fp);
}

ZCP_EXPORT int fclose(FILE *fp)
{
	init();
	if (usable)
		reg_forget(fp);
	return zcp_real.fclose(fp);
}

ZCP_EXPORT int fcloseall(void)
{
	int i;

	init();
	if (usable) {
		for (i = 0; i < NSLOT; i++) {
			FILE *fp = atomic_load(&slot[i]);

			if (fp)
				reg_forget(fp);
		}
		for (i = 0; i < NREGION; i++) {
			FILE *fp = atomic_load(&region[i].fp);

			if (fp)
				reg_forget(fp);
		}
	}
	return zcp_real.fcloseall();
}

ZCP_EXPORT int fflush(FILE *fp)
{
	int r;

	init();
	r = zcp_real.fflush(fp);
	if (fp && r == 0)
		demote(fp);
	return r;
}

ZCP_EXPORT int fflush_unlocked(FILE *fp)
{
	int r;

	init();
	r = zcp_real.fflush_unlocked(fp);
	if (fp && r == 0)
		demote(fp);
	return r;
}

/*
 * SEEK_END: the mmap mode measures from the size mapped at the last
 * underflow; the read() mode from the file's size now.  Use the latter.
 */
static bool end_to_set(FILE *fp, off64_t *off, int *whence)
{
	struct stat st;

	if (*whence != SEEK_END || !reg_has(fp) || VTABLE(fp) != mmap_vt)
		return false;
	if (fstat(fileno(fp), &st) != 0)
		return false;
	*off += st.st_size;
	*whence = SEEK_SET;
	return true;
}

ZCP_EXPORT int fseeko64(FILE *fp, off64_t off, int whence)
{
	init();
	end_to_set(fp, &off, &whence);
	return zcp_real.fseeko64(fp, off, whence);
}

ZCP_EXPORT int fseeko(FILE *fp, off_t off, int whence)
{
	off64_t o = off;

	init();
	if (end_to_set(fp, &o, &whence))
		return zcp_real.fseeko64(fp, o, whence);
	return zcp_real.fseeko(fp, off, whence);
}

ZCP_EXPORT int fseek(FILE *fp, long off, int whence)
{
	off64_t o = off;

	init();
	if (end_to_set(fp, &o, &whence)) {
		/* fseek() reports EOVERFLOW where long cannot hold it. */
		if (o > LONG_MAX) {
			errno = EOVERFLOW;
			return -1;
		}
		return zcp_real.fseek(fp, (long)o, whence);
	}
	return zcp_real.fseek(fp, off, whence);
}

/* ---------------------------------------------------------------------- */
/* fmap() and fbufsize(): the Mach calls.                                  */

static struct region *region_last(FILE *fp) /* caller holds reg_lock */
{
	struct region *best = NULL;
	int i;

	for (i = 0; i < NREGION; i++) {
		if (atomic_load(&region[i].fp) != fp)
			continue;
		if (!best || region[i].len >= best->len)
			best = &region[i];
	}
	return best;
}

/*
 * fmap(stream, size): the stream's file as an array.  Mach's contract:
 * data[i] is file byte i for every i < fbufsize(stream); fseek/fread keep
 * working alongside; fclose releases the memory.
 *
 * Read-only streams map the whole file (size is a hint, as in Mach, and a
 * read-only map can never exceed the file).  Writable streams ("w", "a",
 * "r+") get a shared writable mapping of max(size, file size) bytes - the
 * file is extended with zeros to that size, Mach's zero-filled buffer -
 * and stores reach the file through the page cache.
 *
 * The mapping is ours, not glibc's stdio buffer: glibc may mremap() its
 * buffer when the file grows, which would pull the memory out from under
 * a pointer the program holds.  Ours moves only when fmap() is called
 * again with a larger need; earlier pointers stay valid until fclose.
 */
ZCP_EXPORT void *fmap(FILE *fp, size_t size)
{
	static char empty[1];
	struct region *r, *slotp = NULL;
	struct stat st;
	size_t len, maplen;
	bool wr;
	int fd, rw = -1, prot, i;
	void *p;

	init();
	if (!fp) {
		errno = EINVAL;
		return NULL;
	}
	wr = __fwritable(fp);
	if (wr && fflush(fp) != 0) /* pending fwrite data goes first */
		return NULL;
	fd = fileno(fp);
	if (fd < 0 || fstat(fd, &st) != 0)
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = ENODEV; /* what mmap() says for such files */
		return NULL;
	}
	len = st.st_size;
	if (wr) {
		if (size > len)
			len = size;
		if (len == 0)
			len = st.st_blksize > 0 ? st.st_blksize : BUFSIZ;
	}

	pthread_mutex_lock(&reg_lock);
	r = region_last(fp);
	if (r && r->len >= len) {
		p = r->base;
		pthread_mutex_unlock(&reg_lock);
		return p;
	}
	for (i = 0; i < NREGION; i++) {
		if (!atomic_load(&region[i].fp)) {
			slotp = &region[i];
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	if (!slotp) {
		errno = ENOMEM;
		return NULL;
	}
	if (len == 0) {
		/* Nothing to map: a valid pointer with fbufsize() == 0. */
		p = empty;
		maplen = 0;
		goto publish;
	}

	prot = PROT_READ;
	if (wr) {
		/* A shared writable map needs a read-write descriptor. */
		if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR) {
			rw = fd;
		} else {
			char path[32];

			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			rw = open(path, O_RDWR | O_CLOEXEC);
			if (rw < 0)
				return NULL;
		}
		if ((off_t)len > st.st_size && ftruncate(rw, len) != 0)
			goto fail_rw;
		prot |= PROT_WRITE;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, wr ? rw : fd, 0);
	if (p == MAP_FAILED)
		goto fail_rw;
	if (rw >= 0 && rw != fd)
		close(rw);
	maplen = page_up(len);
	bus_install();
publish:
	pthread_mutex_lock(&reg_lock);
	if (atomic_load(&slotp->fp)) { /* raced: find another slot */
		slotp = NULL;
		for (i = 0; i < NREGION; i++)
			if (!atomic_load(&region[i].fp)) {
				slotp = &region[i];
				break;
			}
	}
	if (!slotp) {
		pthread_mutex_unlock(&reg_lock);
		if (maplen)
			munmap(p, maplen);
		errno = ENOMEM;
		return NULL;
	}
	slotp->base = p;
	slotp->len = len;
	slotp->maplen = maplen;
	atomic_store(&slotp->fp, fp); /* publish to the SIGBUS handler last */
	atomic_fetch_add(&nregions, 1);
	pthread_mutex_unlock(&reg_lock);
	return p;

fail_rw:
	{
		int e = errno;

		if (rw >= 0 && rw != fd)
			close(rw);
		errno = e;
	}
	return NULL;
}

/*
 * fbufsize(stream): the size of the stream's buffer - of its fmap()
 * region once fmap() has been called, else of its stdio buffer (for a
 * mapped read stream that is the mapped file).
 */
ZCP_EXPORT size_t fbufsize(FILE *fp)
{
	struct region *r;
	size_t n;

	init();
	if (!fp)
		return 0;
	pthread_mutex_lock(&reg_lock);
	r = region_last(fp);
	n = r ? r->len : 0;
	pthread_mutex_unlock(&reg_lock);
	return r ? n : __fbufsize(fp);
}

/* Streams still open at exit were converted too: count them (conv.c). */
void zcp_stdio_exit(void)
{
	int i;

	if (!usable)
		return;
	for (i = 0; i < NSLOT; i++) {
		FILE *fp = atomic_load(&slot[i]);

		if (fp && VTABLE(fp) == mmap_vt)
			zcp_converted(ZCP_STDIO, served(fp));
	}
}
