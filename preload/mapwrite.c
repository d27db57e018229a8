/*
 * mapwrite.c - ZCP_MAPWRITE: a write whose source is a read-only file
 * mapping becomes sendfile/splice from the file.
 *
 * mmap+write servers (Apache httpd with EnableSendfile Off) map a file and
 * write() the mapping to a socket: the kernel copies every byte from the
 * page cache (through the mapping) into socket buffers.  Sent from the file
 * instead, the page cache pages go to the socket by reference.
 *
 * Which writes (all must hold, else the real call and a reason counted):
 *   - the source range lies in a mapping the program made through mmap()
 *     with PROT_READ and without PROT_WRITE, of a regular file, and never
 *     made writable since (mprotect); a MAP_PRIVATE mapping must also have
 *     no private (copied-on-write) page in the range, which
 *     /proc/self/pagemap tells page by page;
 *   - the kernel confirms at the time of the write that the address is
 *     still that mapping of that file at that offset (PROCMAP_QUERY on
 *     /proc/self/maps, Linux 6.11+, else a scan of /proc/self/maps): our
 *     table only learns of mmap/munmap calls that go through the PLT;
 *   - the range lies inside the file's current size (the plain write past
 *     the end would read the zero tail of the last page, or fault);
 *   - the destination is a pipe (and the call is larger than PIPE_BUF, so
 *     that atomic writes stay atomic) or a stream socket; the call's flags
 *     are none or MSG_NOSIGNAL; the call moves at least ZC_MAPWRITE_MIN
 *     bytes from mappings (default 64 KiB: below, the checks cost more
 *     than the copy);
 *   - the cost guard (guard.c) measured the conversion no dearer than the
 *     plain call for this destination and size, in this process: whether
 *     file pages by reference cost the sender less than a copy differs
 *     from machine to machine (docs/bench-preload.md), so the program's
 *     own CPU time decides; ZC_MAPWRITE_GUARD=0 converts regardless.
 *
 * Why this is off for ordinary files unless ZC_ENABLE=mapwrite: write(2)
 * copies, so bytes written are fixed when write returns.  sendfile and
 * splice pass page-cache pages by reference; if the file is modified after
 * write returned but before the reader (or TCP) has consumed those pages,
 * the reader sees the new bytes.  (A file truncated then is harmless: the
 * pages stay referenced, except that truncating to a size inside a page
 * zeroes that page's tail in place.)  So by default only files that cannot
 * change are converted: sealed memfds (F_SEAL_WRITE and F_SEAL_SHRINK) and
 * files on read-only filesystem types (squashfs, erofs, iso9660, cramfs,
 * romfs).  With ZC_ENABLE=mapwrite every regular file is; that is the
 * setting for a server whose files are replaced by rename, never rewritten
 * in place.
 *
 * The file is sent from a duplicate of the mapped descriptor taken at mmap
 * time (fdstate.c keeps it out of the program's way); the duplicate shares
 * the program's file offset, which sendfile/splice with an explicit offset
 * never move.  Each transfer duplicates it once more for its own duration
 * and checks that duplicate's identity (st_dev, st_ino): once that check
 * passed, nothing the program does to descriptor numbers (close_range,
 * dup2) can make the transfer read another file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h" /* libzc's zc_fdkind_of() */
#include "preload.h"
#include "xfer.h"

#ifndef ROMFS_MAGIC
#define ROMFS_MAGIC 0x7275 /* linux/magic.h lacks it before 6.x */
#endif

#define NMAP 256
#define NSEG 64 /* iovecs per converted call (more: real call) */

struct map {
	uintptr_t start, end;   /* 0 = free slot */
	off_t off;              /* file offset of start */
	dev_t dev;
	ino_t ino;
	int fd;                 /* our duplicate, or -1 */
	bool shared;            /* MAP_SHARED */
	const char *why;        /* non-NULL: writes from here pass, why */
};

static struct map maps[NMAP];
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
/* preload.h reads it (zcp_map_any): not static. */
atomic_int zcp_nmaps;
static size_t page_sz;

/* /proc/self/maps and /proc/self/pagemap, opened lazily (our own fds). */
static atomic_int maps_fd = -1, pagemap_fd = -1;
static atomic_bool no_query; /* PROCMAP_QUERY said ENOTTY */

static const char R_CHANGE[] =
	"source file can change (ZC_ENABLE=mapwrite converts it)";
static const char R_COPY_CHEAPER[] =
	"the copy measured cheaper here (cost guard)";
static const char R_COPY_PROBE[] =
	"a plain call of the cost guard's measuring epochs";


static size_t min_bytes(void)
{
	static atomic_long v = -1;
	long x = atomic_load(&v);
	const char *e;

	if (x < 0) {
		e = getenv("ZC_MAPWRITE_MIN");
		x = e && *e ? strtol(e, NULL, 0) : 64 * 1024;
		if (x < PIPE_BUF + 1)
			x = PIPE_BUF + 1;
		atomic_store(&v, x);
	}
	return x;
}

/* Can the file's bytes never change?  (Seals, or a read-only fs type.) */
static bool immutable(int fd)
{
	struct statfs sf;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals >= 0 && (seals & F_SEAL_WRITE) && (seals & F_SEAL_SHRINK))
		return true;
	if (fstatfs(fd, &sf) != 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case SQUASHFS_MAGIC:
	case EROFS_SUPER_MAGIC_V1:
	case ISOFS_SUPER_MAGIC:
	case CRAMFS_MAGIC:
	case ROMFS_MAGIC:
		return true;
	}
	return false;
}

/* Drop entries overlapping [a, b); caller holds the write lock. */
static void remove_locked(uintptr_t a, uintptr_t b)
{
	int i;

	for (i = 0; i < NMAP; i++) {
		struct map *m = &maps[i];

		if (!m->start || m->end <= a || m->start >= b)
			continue;
		/* A transfer in flight has its own duplicate (zcp_mapwrite). */
		if (m->fd >= 0)
			zcp_fd_release(m->fd);
		m->start = m->end = 0;
		m->fd = -1;
		atomic_fetch_sub(&zcp_nmaps, 1);
	}
}

void zcp_map_removed(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	if (!zcp_map_any() || !len)
		return;
	pthread_rwlock_wrlock(&lock);
	remove_locked(a, a + len);
	pthread_rwlock_unlock(&lock);
}

void zcp_map_added(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off)
{
	const char *why = NULL;
	struct stat st;
	int dup = -1, i;

	if (!zcp_enabled(ZCP_MAPWRITE) || zcp_in_vfork_child())
		return;
	if ((prot & PROT_WRITE) || !(prot & PROT_READ) || len < min_bytes())
		return;
	if (!(flags & (MAP_SHARED | MAP_PRIVATE)) || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return;
	if (!page_sz)
		page_sz = sysconf(_SC_PAGESIZE);
	if (!zcp_optin(ZCP_MAPWRITE) && !immutable(fd))
		why = R_CHANGE;
	else if ((dup = zcp_fd_hide(fd)) < 0)
		why = "no descriptor left for the file";

	pthread_rwlock_wrlock(&lock);
	remove_locked((uintptr_t)addr, (uintptr_t)addr + len);
	for (i = 0; i < NMAP; i++)
		if (!maps[i].start)
			break;
	if (i == NMAP) {
		pthread_rwlock_unlock(&lock);
		if (dup >= 0)
			zcp_fd_release(dup);
		zcp_seen(ZCP_MAPWRITE);
		zcp_passed(ZCP_MAPWRITE, "mapping table full");
		return;
	}
	maps[i] = (struct map){
		.start = (uintptr_t)addr,
		.end = (uintptr_t)addr + len,
		.off = off,
		.dev = st.st_dev,
		.ino = st.st_ino,
		.fd = dup,
		.shared = flags & MAP_SHARED,
		.why = why,
	};
	atomic_fetch_add(&zcp_nmaps, 1);
	pthread_rwlock_unlock(&lock);
}

void zcp_map_fd_moved(int old, int new)
{
	int i;

	pthread_rwlock_wrlock(&lock);
	for (i = 0; i < NMAP; i++) {
		if (maps[i].start && maps[i].fd == old) {
			maps[i].fd = new;
			if (new < 0)
				maps[i].why = "program closed the file descriptors";
		}
	}
	pthread_rwlock_unlock(&lock);
}

/*
 * fork: the table lock is taken around it, so that the child never
 * inherits it held by a thread that does not exist there (its next
 * mmap would wait for ever) nor a table half-updated.  Only lookups and
 * updates hold it, never a transfer, so fork waits microseconds at most.
 */
void zcp_map_fork_prepare(void)
{
	pthread_rwlock_wrlock(&lock);
}

void zcp_map_fork_parent(void)
{
	pthread_rwlock_unlock(&lock);
}

void zcp_map_fork_child(void)
{
	/* Both name the parent's memory: reopen on first use. */
	int fd;

	/*
	 * Not unlock: glibc's rwlock knows its writer by thread id, and the
	 * child's thread has another.  The child is single-threaded and the
	 * table is consistent (prepare took the lock): start a fresh lock.
	 */
	lock = (pthread_rwlock_t)PTHREAD_RWLOCK_INITIALIZER;
	zcp_guard_fork_child();

	fd = atomic_exchange(&maps_fd, -1);
	if (fd >= 0)
		zcp_fd_release(fd);
	fd = atomic_exchange(&pagemap_fd, -1);
	if (fd >= 0)
		zcp_fd_release(fd);
}

/* ------------------------------------------------------------------ */
/* The kernel's view of an address.                                    */

struct vma {
	uintptr_t start, end;
	uint64_t off;
	dev_t dev;
	ino_t ino;
	bool writable, shared;
};

#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_SHARED 0x08
#endif

static int proc_fd(atomic_int *slot, const char *path)
{
	int fd = atomic_load(slot), o, h;

	if (fd >= 0)
		return fd;
	o = open(path, O_RDONLY | O_CLOEXEC);
	if (o < 0)
		return -1;
	h = zcp_fd_hide(o);
	zcp_real.close(o);
	if (h < 0)
		return -1;
	fd = -1;
	if (!atomic_compare_exchange_strong(slot, &fd, h)) {
		zcp_fd_release(h); /* another thread was first */
		return fd;
	}
	return h;
}

static bool query_ioctl(int fd, uintptr_t addr, struct vma *v)
{
	struct procmap_query q = { .size = sizeof(q), .query_addr = addr };

	if (ioctl(fd, PROCMAP_QUERY, &q) != 0) {
		if (errno == ENOTTY || errno == EINVAL)
			atomic_store(&no_query, true);
		return false;
	}
	*v = (struct vma){
		.start = q.vma_start,
		.end = q.vma_end,
		.off = q.vma_offset,
		.dev = makedev(q.dev_major, q.dev_minor),
		.ino = q.inode,
		.writable = q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE,
		.shared = q.vma_flags & PROCMAP_QUERY_VMA_SHARED,
	};
	return true;
}

/* A number in base 16 or 10 up to the first other character. */
static unsigned long long num(const char **p, int base)
{
	unsigned long long v = 0;

	for (;; (*p)++) {
		int c = **p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return v;
		v = v * base + d;
	}
}

/*
 * One line of /proc/self/maps: "start-end perm offset maj:min inode path".
 * By hand, not sscanf: this may run in a signal handler.
 */
static bool parse_line(const char *l, struct vma *v)
{
	unsigned long long maj, min;
	const char *perm;

	v->start = num(&l, 16);
	if (*l++ != '-')
		return false;
	v->end = num(&l, 16);
	if (*l++ != ' ')
		return false;
	perm = l;
	l += 4;
	if (*l++ != ' ')
		return false;
	v->off = num(&l, 16);
	if (*l++ != ' ')
		return false;
	maj = num(&l, 16);
	if (*l++ != ':')
		return false;
	min = num(&l, 16);
	if (*l++ != ' ')
		return false;
	v->ino = num(&l, 10);
	v->dev = makedev(maj, min);
	v->writable = perm[1] == 'w';
	v->shared = perm[3] == 's';
	return true;
}

/* Older kernels: find the line of /proc/self/maps that holds addr. */
static bool query_scan(int fd, uintptr_t addr, struct vma *v)
{
	char buf[4096];
	size_t have = 0;
	off_t pos = 0;

	for (;;) {
		ssize_t n = pread(fd, buf + have, sizeof(buf) - 1 - have, pos);
		char *line = buf, *nl;

		if (n <= 0)
			return false;
		pos += n;
		have += n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (parse_line(line, v) && v->start <= addr &&
			    addr < v->end)
				return true;
			line = nl + 1;
		}
		have = buf + have - line;
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			return false; /* a line longer than the buffer */
	}
}

static bool kernel_vma(uintptr_t addr, struct vma *v)
{
	int fd = proc_fd(&maps_fd, "/proc/self/maps");

	if (fd < 0)
		return false;
	if (!atomic_load(&no_query) && query_ioctl(fd, addr, v))
		return true;
	if (!atomic_load(&no_query))
		return false; /* the ioctl exists and found nothing */
	return query_scan(fd, addr, v);
}

/*
 * A private mapping's page is the file's page until written; a written
 * (copied) page is anonymous, or a swap entry once swapped out.  Every
 * page of the range must be a file page or not yet faulted in.
 */
static bool private_pages_clean(uintptr_t a, size_t len)
{
	uint64_t ent[512];
	uintptr_t pg = a / page_sz, last = (a + len - 1) / page_sz;
	int fd = proc_fd(&pagemap_fd, "/proc/self/pagemap");

	if (fd < 0)
		return false;
	while (pg <= last) {
		size_t n = last - pg + 1, i;
		ssize_t r;

		if (n > 512)
			n = 512;
		r = pread(fd, ent, n * 8, (off_t)pg * 8);
		if (r != (ssize_t)(n * 8))
			return false;
		for (i = 0; i < n; i++) {
			bool present = ent[i] >> 63 & 1;
			bool swapped = ent[i] >> 62 & 1;
			bool file = ent[i] >> 61 & 1;

			if (swapped || (present && !file))
				return false;
		}
		pg += n;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* The write.                                                          */

/* The tracked mapping holding [a, a+len), or NULL (read lock held). */
static struct map *find(uintptr_t a, size_t len)
{
	int i;

	for (i = 0; i < NMAP; i++) {
		struct map *m = &maps[i];

		if (m->start && m->start <= a && a + len <= m->end)
			return m;
	}
	return NULL;
}

/*
 * Is [a, a+len) still file bytes [off, off+len) of m's file, read through
 * our transient duplicate src?  NULL if so, else why not.
 */
static const char *verify(const struct map *m, int src, uintptr_t a,
			  size_t len, off_t *off)
{
	struct stat st;
	struct vma v;

	*off = m->off + (off_t)(a - m->start);
	if (fstat(src, &st) != 0 || st.st_dev != m->dev ||
	    st.st_ino != m->ino)
		return "our descriptor no longer names the file";
	if (*off + (off_t)len > st.st_size)
		return "range beyond the end of the file";
	if (!kernel_vma(a, &v))
		return "no mapping at the address (kernel view)";
	if (v.end < a + len || v.dev != m->dev || v.ino != m->ino ||
	    v.writable || v.shared != m->shared ||
	    v.off + (a - v.start) != (uint64_t)*off)
		return "mapping changed behind our back";
	if (!m->shared && !private_pages_clean(a, len))
		return "private mapping has written pages";
	return NULL;
}

static void drop_transients(struct zcp_seg *seg, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (seg[i].src >= 0)
			zcp_fd_transient_done(seg[i].src);
}

void zcp_mapwrite_copied(struct zcp_guard_pick *g, ssize_t r)
{
	int saved = errno;

	zcp_guard_done(g, r);
	errno = saved;
}

bool zcp_mapwrite(int fd, const struct iovec *iov, int iovcnt, bool sock,
		  int flags, ssize_t *ret, struct zcp_guard_pick *g)
{
	struct zcp_seg seg[NSEG];
	struct map snap[NSEG]; /* the entries as they were under the lock */
	struct zcp_xfer x = { .fd = fd };
	struct zcp_guard_pick pick = { .active = false };
	const char *why = NULL;
	size_t total = 0, mapped = 0;
	int i, fl, saved = errno;
	enum zc_fdkind kind;
	bool fallback, any = false;
	ssize_t r;

	if (!zcp_enabled(ZCP_MAPWRITE) || iovcnt <= 0)
		return false;
	if (pthread_rwlock_tryrdlock(&lock) != 0)
		return false; /* a signal handler inside a table update */

	/* Is any part of the call from a tracked mapping?  (A snapshot: the
	 * table may change as soon as we let go of the lock.) */
	for (i = 0; i < iovcnt && i < NSEG; i++) {
		struct map *m = find((uintptr_t)iov[i].iov_base,
				     iov[i].iov_len);

		total += iov[i].iov_len;
		seg[i] = (struct zcp_seg){ iov[i].iov_base, iov[i].iov_len,
					   -1, 0 };
		snap[i].fd = -1;
		if (!m || !iov[i].iov_len)
			continue;
		any = true;
		if (m->why && !why)
			why = m->why;
		snap[i] = *m;
		mapped += iov[i].iov_len;
	}
	pthread_rwlock_unlock(&lock);
	/* A vfork child must not touch the parent's state (a getpid, so only
	 * for calls that could be converted). */
	if (!any || zcp_in_vfork_child())
		return false;
	zcp_seen(ZCP_MAPWRITE);
	if (!why && iovcnt > NSEG)
		why = "too many iovecs";
	if (!why && (flags & ~MSG_NOSIGNAL))
		why = "send flags other than MSG_NOSIGNAL";
	if (!why && mapped < min_bytes())
		why = "less than ZC_MAPWRITE_MIN from mappings";
	/*
	 * The cost guard, before the checks that cost system calls: when this
	 * epoch's way is the plain call, it is the caller's to make (and to
	 * report to the guard), at the plain call's cost; else the
	 * conversion, its checks included.
	 */
	if (!why) {
		zcp_guard_pick(&pick);
		if (pick.way == ZCP_WAY_COPY) {
			zcp_passed(ZCP_MAPWRITE, pick.probe ? R_COPY_PROBE : R_COPY_CHEAPER);
			*g = pick;
			errno = saved;
			return false;
		}
	}
	if (!why) {
		kind = zc_fdkind_of(fd);
		x.sock = kind == ZC_FD_TCP || kind == ZC_FD_UNIX;
		x.tcp = kind == ZC_FD_TCP;
		if (kind != ZC_FD_PIPE && !x.sock)
			why = "destination not a pipe or stream socket";
		else if (sock && !x.sock)
			why = "send() on a pipe";
		else if (!x.sock && total <= PIPE_BUF)
			why = "pipe write of PIPE_BUF or less (atomic)";
	}
	if (!why) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			why = "F_GETFL failed";
		x.nonblock = fl >= 0 && (fl & O_NONBLOCK);
		x.nosignal = flags & MSG_NOSIGNAL;
	}
	/*
	 * Each mapped part is read through a transient duplicate of the
	 * mapping's descriptor.  The table may have closed that number since
	 * the snapshot and the program may have reused it: verify() checks
	 * the duplicate's identity, so a reused number is caught.
	 */
	for (i = 0; !why && i < iovcnt; i++) {
		if (snap[i].fd < 0)
			continue;
		seg[i].src = zcp_fd_transient(snap[i].fd);
		if (seg[i].src < 0)
			why = "our descriptor no longer names the file";
		else
			why = verify(&snap[i], seg[i].src,
				     (uintptr_t)seg[i].buf, seg[i].len,
				     &seg[i].off);
	}
	if (why) {
		zcp_passed(ZCP_MAPWRITE, why);
		goto real;
	}
	errno = saved;
	r = zcp_xfer(&x, seg, iovcnt, &fallback);
	if (fallback) {
		zcp_passed(ZCP_MAPWRITE, "sendfile/splice refused the file");
		goto real;
	}
	saved = errno;
	drop_transients(seg, iovcnt < NSEG ? iovcnt : NSEG);
	zcp_guard_done(&pick, r);
	errno = saved;
	if (r > 0) {
		size_t copied = 0, left = r;

		/* Count only what went by reference. */
		for (i = 0; i < iovcnt && left; i++) {
			size_t n = seg[i].len < left ? seg[i].len : left;

			if (seg[i].src < 0)
				copied += n;
			left -= n;
		}
		zcp_converted(ZCP_MAPWRITE, r - copied);
	} else {
		zcp_converted(ZCP_MAPWRITE, 0);
	}
	*ret = r;
	return true;

real:
	drop_transients(seg, iovcnt < NSEG ? iovcnt : NSEG);
	errno = saved;
	return false;
}
