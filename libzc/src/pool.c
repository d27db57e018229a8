/*
 * pool.c - pools: memfd-backed regions that hold I/O data.
 *
 * A pool is one memfd, sealed so that nobody (not even its owner) can shrink
 * it: a peer that maps it read-only can then never take a SIGBUS.  The owner
 * maps it read-write once; buffers are page-aligned runs of pages found with
 * a next-fit bitmap search.  Released buffers of up to 64 pages go to a small
 * per-size cache so a steady stream of equal transfers allocates nothing.
 *
 * Which cached buffer comes next: one only this process touched is reused
 * first (last in, first out: its lines are in our own caches).  One that a
 * peer read (it came back over a channel with ZC_ENT_F_READ) is reused
 * last, the oldest such first: its lines sit in the peer's caches, and
 * writing them at once makes every store pull its line away from the peer
 * core.  Reused last, they have left both cores' private caches by then.
 * Measured on an AMD EPYC host (docs/ipc-benchmark.md, "Reuse order"): two
 * processes moving 128 KiB blocks through a channel, both touching every
 * byte, 7.8 GB/s reusing the peer's buffer at once, 18 GB/s reusing it
 * last (medians of 9 runs); a shared-memory ring does the same, 12 GB/s
 * when its writer cycles through 1 MiB, 40-55 GB/s through 2-4 MiB.  On
 * an Intel Xeon neither order was faster.
 *
 * Recycling and the kernel: a buffer that was handed to the kernel by
 * reference (vmsplice into a pipe, sendfile from the memfd into a socket) may
 * still have its pages referenced by a pipe or a socket queue long after the
 * write returned -- a pipe reader may even have spliced them onward.  Rather
 * than guess when the kernel is done, we detach such pages on release:
 * FALLOC_FL_PUNCH_HOLE removes them from the memfd, the kernel's references
 * keep the old pages (and their old content) alive, and the next user of the
 * range faults in fresh zeroed pages.  Buffers never lent to the kernel are
 * reused as they are, without zeroing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define ZC_POOL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static zc_pool *pool_new(int fd, size_t size, bool owner)
{
	struct stat st;
	zc_pool *p;

	if (fstat(fd, &st) < 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	atomic_init(&p->refs, 1);
	p->fd = fd;
	p->ro_fd = -1;
	p->owner = owner;
	p->fork_gen = zc_fork_gen();
	p->size = size;
	p->id = (uint64_t)st.st_ino;
	p->npages = size / zc_page_size();
	p->st.size = size;
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

int zc_pool_create(size_t size, zc_pool **out)
{
	zc_pool *p;
	void *base;
	int fd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (size == 0)
		size = ZC_POOL_DEFAULT_SIZE;
	if (size > ZC_POOL_MAX_SIZE)
		return -EINVAL;
	size = zc_page_round(size);

	fd = memfd_create("zc-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Mode 0444: a peer holding our read-only descriptor must not be
	 * able to reopen it read-write through /proc/self/fd. */
	if (ftruncate(fd, (off_t)size) < 0 || fchmod(fd, 0444) < 0 ||
	    fcntl(fd, F_ADD_SEALS, ZC_POOL_SEALS) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* MAP_NORESERVE: a big pool costs nothing until pages are touched. */
	base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	/* Detaching punches whole base pages; inside a huge page a punch
	 * would zero memory in place that the kernel may still be sending. */
	madvise(base, size, MADV_NOHUGEPAGE);
	p = pool_new(fd, size, true);
	if (p)
		p->bitmap = calloc((p->npages + 63) / 64, sizeof(uint64_t));
	if (!p || !p->bitmap) {
		if (p)
			free(p);
		munmap(base, size);
		close(fd);
		return -ENOMEM;
	}
	p->base = base;
	*out = p;
	return 0;
}

int zc_pool_import_fd(int fd, zc_pool **out)
{
	struct stat st;
	int seals;
	zc_pool *p;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > ZC_POOL_MAX_SIZE ||
	    st.st_size % zc_page_size())
		return -EINVAL;
	/* Without the shrink seal the owner could truncate the memfd under
	 * our mapping and turn every read into a SIGBUS: refuse it. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
			 (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	p = pool_new(fd, (size_t)st.st_size, false);
	if (!p)
		return -ENOMEM;
	*out = p;
	return 0;
}

unsigned char *zc_pool_base(zc_pool *pool)
{
	unsigned char *base = __atomic_load_n(&pool->base, __ATOMIC_ACQUIRE);
	void *m;

	if (ZC_LIKELY(base))
		return base;
	/* Imported pools are mapped on first access only (mapping happens
	 * when asked, not when the pool arrives). */
	pthread_mutex_lock(&pool->lock);
	if (!pool->base) {
		m = mmap(NULL, pool->size, PROT_READ, MAP_SHARED, pool->fd, 0);
		if (m != MAP_FAILED)
			__atomic_store_n(&pool->base, m, __ATOMIC_RELEASE);
	}
	base = pool->base;
	pthread_mutex_unlock(&pool->lock);
	return base;
}

/* ---------------------------------------------------------- page bitmap */

static bool page_used(const zc_pool *p, size_t pg)
{
	return p->bitmap[pg / 64] >> (pg % 64) & 1;
}

static void mark_pages(zc_pool *p, size_t first, size_t n, bool used)
{
	for (size_t pg = first; pg < first + n; pg++) {
		if (used)
			p->bitmap[pg / 64] |= 1ull << (pg % 64);
		else
			p->bitmap[pg / 64] &= ~(1ull << (pg % 64));
	}
}

/* Find n free pages in [from, to); returns the first page or SIZE_MAX. */
static size_t find_run(const zc_pool *p, size_t from, size_t to, size_t n)
{
	size_t run = 0;

	for (size_t pg = from; pg < to; pg++) {
		/* Skip fully used words quickly. */
		if (pg % 64 == 0 && p->bitmap[pg / 64] == ~0ull &&
		    pg + 64 <= to) {
			run = 0;
			pg += 63;
			continue;
		}
		if (page_used(p, pg)) {
			run = 0;
			continue;
		}
		if (++run == n)
			return pg + 1 - n;
	}
	return SIZE_MAX;
}

static size_t alloc_pages(zc_pool *p, size_t n)
{
	size_t first = find_run(p, p->hint, p->npages, n);

	if (first == SIZE_MAX)
		first = find_run(p, 0, p->npages, n);
	if (first == SIZE_MAX)
		return SIZE_MAX;
	mark_pages(p, first, n, true);
	p->hint = first + n < p->npages ? first + n : 0;
	return first;
}

/* ---------------------------------------------------- the size cache */

#define CACHE_AT(c, i) ((c)->b[((c)->first + (i)) % ZC_POOL_CACHE_DEPTH])

/* The buffer to reuse next: the top.  NULL if none. */
static zc_buf *cache_take(struct zc_pool_cache *c)
{
	return c->n ? CACHE_AT(c, --c->n) : NULL;
}

/* Keep b, on top (reused next) or at the bottom (reused last); false if
 * the cache is full. */
static bool cache_keep(struct zc_pool_cache *c, zc_buf *b, bool bottom)
{
	if (c->n == ZC_POOL_CACHE_DEPTH)
		return false;
	if (bottom) {
		c->first = (c->first + ZC_POOL_CACHE_DEPTH - 1) % ZC_POOL_CACHE_DEPTH;
		c->b[c->first] = b;
	} else {
		CACHE_AT(c, c->n) = b;
	}
	c->n++;
	return true;
}

/* Give every cached buffer's pages back to the bitmap (when a large
 * allocation does not fit and cached memory might make room). */
static void flush_cache(zc_pool *p)
{
	size_t ps = zc_page_size();

	for (unsigned c = 0; c < ZC_POOL_CACHE_CLASSES; c++) {
		zc_buf *b;

		while ((b = cache_take(&p->cache[c]))) {
			mark_pages(p, b->off / ps, b->cap / ps, false);
			zc_buf_header_free(b);
		}
	}
}

/* ------------------------------------------------------------ buffers */

static void buf_reset(zc_pool *p, zc_buf *b)
{
	atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&b->flags, ZC_BUF_WRITABLE, memory_order_relaxed);
	b->len = 0;
	b->gen = ++p->gen;
	b->on_release = NULL;
	b->release_ctx = NULL;
	b->release_token = 0;
}

int zc_buf_alloc(zc_pool *pool, size_t len, zc_buf **out)
{
	size_t ps = zc_page_size(), npg, first;
	zc_buf *b = NULL;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!pool && !(pool = zc_default_pool()))
		return -ENOMEM;
	if (!zc_pool_usable(pool))
		return -EPERM;	/* imported, or inherited across fork */
	if (len == 0 || len > pool->size)
		return -EINVAL;
	npg = zc_page_round(len) / ps;

	pthread_mutex_lock(&pool->lock);
	if (npg <= ZC_POOL_CACHE_CLASSES &&
	    (b = cache_take(&pool->cache[npg - 1]))) {
		pool->st.reuses++;
	} else {
		first = alloc_pages(pool, npg);
		if (first == SIZE_MAX) {
			flush_cache(pool);
			first = alloc_pages(pool, npg);
		}
		if (first != SIZE_MAX) {
			b = zc_buf_header_new();
			if (!b)
				mark_pages(pool, first, npg, false);
		}
		if (b) {
			b->pool = pool;
			b->off = (uint64_t)first * ps;
			b->cap = npg * ps;
		} else {
			pool->st.failures++;
		}
	}
	if (b) {
		buf_reset(pool, b);
		pool->st.allocs++;
		pool->st.bytes_in_use += b->cap;
	}
	pthread_mutex_unlock(&pool->lock);
	if (!b)
		return -ENOMEM;
	zc_pool_get(pool);
	*out = b;
	return 0;
}

void zc_pool_recycle(zc_pool *p, zc_buf *b)
{
	size_t ps = zc_page_size(), npg = b->cap / ps;
	bool detached = false;

	if (ZC_UNLIKELY(!zc_pool_usable(p))) {
		/* Inherited across fork: the memory is the parent's. */
		zc_buf_header_free(b);
		zc_pool_put(p);
		return;
	}
	if (atomic_load_explicit(&b->flags, memory_order_acquire) & ZC_BUF_KREF) {
		/* The kernel may still read these pages: let it keep them and
		 * take fresh ones ourselves (see the comment at the top). */
		if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)b->off, (off_t)b->cap) == 0) {
			detached = true;
		} else {
			/* Cannot detach: never reuse this memory. */
			pthread_mutex_lock(&p->lock);
			p->st.bytes_in_use -= b->cap;
			pthread_mutex_unlock(&p->lock);
			zc_buf_header_free(b);
			zc_pool_put(p);
			return;
		}
	}
	pthread_mutex_lock(&p->lock);
	p->st.bytes_in_use -= b->cap;
	if (detached)
		p->st.detaches++;
	if (npg <= ZC_POOL_CACHE_CLASSES &&
	    cache_keep(&p->cache[npg - 1], b,
		       atomic_load_explicit(&b->flags, memory_order_relaxed) &
			       ZC_BUF_PEER_READ)) {
		b = NULL;
	} else {
		mark_pages(p, b->off / ps, npg, false);
	}
	pthread_mutex_unlock(&p->lock);
	zc_buf_header_free(b);
	zc_pool_put(p);
}

/* -------------------------------------------------------- life cycle */

void zc_pool_get(zc_pool *pool)
{
	atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
}

void zc_pool_put(zc_pool *p)
{
	if (!p || atomic_fetch_sub_explicit(&p->refs, 1,
					    memory_order_acq_rel) != 1)
		return;
	if (p->bitmap)
		flush_cache(p);
	if (p->base)
		munmap(p->base, p->size);
	close(p->fd);
	if (p->ro_fd >= 0)
		close(p->ro_fd);
	free(p->bitmap);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void zc_pool_release(zc_pool *pool)
{
	zc_pool_put(pool);
}

/*
 * fork: a child inherits the parent's pool objects, bitmaps included, but
 * the memfds stay shared.  If both allocated from one pool they would hand
 * out the same pages; if the child detached (punched) a range it would
 * zero the parent's memory.  So every pool remembers the fork generation
 * (process.c) it was created in, and in a later generation it behaves as
 * imported: readable, never allocated from, never recycled.  The child
 * gets a fresh default pool of its own on first use.
 */
static _Atomic(zc_pool *) default_pool;

bool zc_pool_usable(const zc_pool *p)
{
	return p->owner && p->fork_gen == zc_fork_gen();
}

zc_pool *zc_default_pool(void)
{
	zc_pool *p = atomic_load_explicit(&default_pool, memory_order_acquire);
	zc_pool *expected = p;
	int err;

	/* One inherited across fork is the parent's: replace it. */
	if (ZC_LIKELY(p && zc_pool_usable(p)))
		return p;
	err = zc_pool_create(ZC_POOL_DEFAULT_SIZE, &p);
	if (err) {
		errno = -err;
		return NULL;
	}
	/* Two threads may race to create it: one wins, the other's goes. */
	if (!atomic_compare_exchange_strong(&default_pool, &expected, p)) {
		zc_pool_release(p);
		p = expected;
	}
	return p;
}

uint64_t zc_pool_id(const zc_pool *pool)
{
	return pool ? pool->id : 0;
}

int zc_pool_fd(const zc_pool *pool)
{
	return pool ? pool->fd : -EINVAL;
}

size_t zc_pool_size(const zc_pool *pool)
{
	return pool ? pool->size : 0;
}

int zc_pool_is_owner(const zc_pool *pool)
{
	return pool && pool->owner;
}

void zc_pool_stats(const zc_pool *pool, struct zc_pool_stats *st)
{
	zc_pool *p = (zc_pool *)pool;

	if (!st)
		return;
	if (!p) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------ sharing */

#define ZC_POOL_MSG_MAGIC 0x4c50435au	/* "ZCPL" */

struct pool_msg {
	uint32_t magic;
	uint32_t pad;
	uint64_t id;
	uint64_t size;
};
_Static_assert(sizeof(struct pool_msg) == ZC_POOL_MSG_SIZE, "internal.h");

/*
 * The descriptor peers get: a read-only reopening of the memfd, so that a
 * peer can neither write() to it nor map it writable (mprotect fails with
 * EACCES).  The owner keeps writing through its own earlier mapping.  If
 * /proc is not mounted the read-write descriptor is sent; peers still map
 * read-only, but that is then a convention rather than enforced.
 */
static int pool_share_fd(zc_pool *p)
{
	char path[64];

	if (!p->owner)
		return p->fd;
	pthread_mutex_lock(&p->lock);
	if (p->ro_fd < 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", p->fd);
		p->ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&p->lock);
	return p->ro_fd >= 0 ? p->ro_fd : p->fd;
}

int zc_pool_send(int sock, const zc_pool *pool)
{
	struct pool_msg m = { ZC_POOL_MSG_MAGIC, 0, 0, 0 };

	if (!pool || sock < 0)
		return pool ? -EBADF : -EINVAL;
	m.id = pool->id;
	m.size = pool->size;
	return zc_sock_send(sock, &m, sizeof(m), pool_share_fd((zc_pool *)pool),
			    0);
}

int zc_pool_msg_import(const void *msg, size_t len, int fd, zc_pool **out)
{
	struct pool_msg m;
	int err;

	*out = NULL;
	if (len != sizeof(m) || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	memcpy(&m, msg, sizeof(m));
	if (m.magic != ZC_POOL_MSG_MAGIC) {
		close(fd);
		return -EPROTO;
	}
	err = zc_pool_import_fd(fd, out);
	if (err == 0 && ((*out)->id != m.id || (*out)->size != m.size)) {
		zc_pool_put(*out);
		*out = NULL;
		return -EPROTO;	/* zc_pool_put closed fd */
	}
	if (err)
		close(fd);
	return err;
}

int zc_pool_recv(int sock, zc_pool **out)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct pool_msg m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { 0 };
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (sock < 0)
		return -EBADF;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	c = CMSG_FIRSTHDR(&mh);
	if (n != (ssize_t)sizeof(m) ||
	    (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || !c ||
	    c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)) || CMSG_NXTHDR(&mh, c)) {
		zc_sock_take_fds(&mh, NULL);
		return -EPROTO;
	}
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return zc_pool_msg_import(&m, sizeof(m), fd, out);
}
