/*
 * cs_portable.c - Container Shipping (Anderson, Pasquale et al.) on stock
 * Linux: the portable backend of cs_alloc, cs_free, cs_read, cs_write,
 * cs_map and cs_unmap (cs.c has checked the arguments).
 *
 * A container is a libzc buffer with move semantics on top:
 *
 *   cs_alloc   a writable buffer from the process's pool (zc_default_pool)
 *   cs_write   publishes the containers (immutable from then on), sends
 *              their slices with iol_write -- descriptors on a channel --
 *              and gives them away: their ids are dead afterwards.  To
 *              anything but a channel a container goes by copy
 *              (zc_sink_copy_first_trip): given away, it is released
 *              after its one trip, and a buffer lent to the kernel
 *              (sendfile from the pool into a socket, vmsplice into a
 *              pipe) must then be detached -- its pages punched out and
 *              fresh zeroed ones faulted in by the next cs_alloc, which
 *              on stock Linux costs several times the copy (the mixed
 *              case (g) of docs/ipc-benchmark.md: 0.14x of write/read
 *              lent, about 1x copied)
 *   cs_read    turns what arrives into new, read-only containers
 *
 * Mapping, honestly: on this backend a pool is mapped once per process (the
 * owner read-write, peers read-only, imports lazily on first use), so
 * cs_map hands out an address inside that mapping without a system call,
 * and "unmapped" is bookkeeping.  What the paper's no-map case saves --
 * never touching the pages -- holds here too: a container that is never
 * mapped is never read or written by this process.  The kernel backend
 * (cs_kernel.c) maps and unmaps per container.
 *
 * Container ids are small integers reused through a free list, like file
 * descriptors.  The table is guarded by one mutex, so the calls are
 * thread-safe; a program that shares ids between threads still has to
 * order its own cs_free/cs_write against another thread's cs_map.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "cs_backend.h"
#include "cs_common.h"

#define MAX_CIDS (INT_MAX / 2)

struct cs_con {
	zc_buf *buf;		/* NULL: free slot */
	uint32_t data_off;	/* where the data starts in the container */
	uint32_t data_len;
	bool mapped;
	bool readonly;		/* received or published: never writable */
	int next_free;
	unsigned mark;		/* duplicate detection (epoch) */
};

static struct {
	pthread_mutex_t lock;
	struct cs_con *v;
	int cap, free_head;
	unsigned epoch;
} tab = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, -1, 0 };

/* ---------------------------------------------------------------- table */

static struct cs_con *con_get(int cid)
{
	if (cid < 0 || cid >= tab.cap || !tab.v[cid].buf)
		return NULL;
	return &tab.v[cid];
}

static int tab_grow(void)
{
	int cap = tab.cap ? tab.cap * 2 : 64;
	struct cs_con *v;

	if (cap > MAX_CIDS)
		return -ENOMEM;
	v = realloc(tab.v, (size_t)cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + tab.cap, 0, (size_t)(cap - tab.cap) * sizeof(*v));
	/* Low ids first, like file descriptors. */
	for (int i = cap - 1; i >= tab.cap; i--) {
		v[i].next_free = tab.free_head;
		tab.free_head = i;
	}
	tab.v = v;
	tab.cap = cap;
	return 0;
}

/* A new container holding the caller's reference to buf.  Lock held. */
static int con_insert(zc_buf *buf, size_t off, size_t len, bool readonly,
		      bool mapped)
{
	struct cs_con *c;
	int cid, err;

	if (tab.free_head < 0 && (err = tab_grow()))
		return err;
	cid = tab.free_head;
	c = &tab.v[cid];
	tab.free_head = c->next_free;
	c->buf = buf;
	c->data_off = (uint32_t)off;
	c->data_len = (uint32_t)len;
	c->readonly = readonly;
	c->mapped = mapped;
	return cid;
}

/* Forget a container; returns the reference it held.  Lock held. */
static zc_buf *con_remove(int cid)
{
	struct cs_con *c = &tab.v[cid];
	zc_buf *buf = c->buf;

	c->buf = NULL;
	c->mapped = false;
	c->next_free = tab.free_head;
	tab.free_head = cid;
	return buf;
}

/* Every id must name a container this process holds (-EBADF); with
 * unique, none may appear twice (-EINVAL: it cannot be given away or freed
 * twice).  Lock held. */
static int check_cids(int count, const int *cids, bool unique)
{
	unsigned epoch = ++tab.epoch;

	if (epoch == 0) {	/* wrapped: old marks could collide */
		for (int i = 0; i < tab.cap; i++)
			tab.v[i].mark = 0;
		epoch = tab.epoch = 1;
	}
	for (int i = 0; i < count; i++) {
		struct cs_con *c = con_get(cids[i]);

		if (!c)
			return -EBADF;
		if (unique && c->mark == epoch)
			return -EINVAL;
		c->mark = epoch;
	}
	return 0;
}

static bool con_writable(const struct cs_con *c)
{
	return !c->readonly && zc_buf_wptr(c->buf);
}

/* The container's size: its capacity while writable, else what was
 * published (a received buffer is exactly its data). */
static size_t con_size(const struct cs_con *c)
{
	return con_writable(c) ? zc_buf_capacity(c->buf) : zc_buf_len(c->buf);
}

static void *con_addr(struct cs_con *c)
{
	if (con_writable(c))
		return zc_buf_wptr(c->buf);
	return (void *)zc_buf_data(c->buf);
}

/* ------------------------------------------------------ alloc, map, free */

static int portable_alloc(int size, void **addr, int options)
{
	bool mapnow = options & CS_MAPNOW;
	zc_buf *b;
	int cid;

	cid = zc_cs_alloc_buf((size_t)size, &b);
	if (cid)
		return cid;
	pthread_mutex_lock(&tab.lock);
	cid = con_insert(b, 0, (size_t)size, false, mapnow);
	pthread_mutex_unlock(&tab.lock);
	if (cid < 0) {
		zc_buf_release(b);
		return cid;
	}
	if (mapnow)
		*addr = zc_buf_wptr(b);
	return cid;
}

static int portable_free(int count, const int *cids)
{
	int err;

	pthread_mutex_lock(&tab.lock);
	err = check_cids(count, cids, true);
	/* Releasing under the lock is safe: a release never calls back
	 * into this module. */
	for (int i = 0; !err && i < count; i++)
		zc_buf_release(con_remove(cids[i]));
	pthread_mutex_unlock(&tab.lock);
	return err;
}

/* Map (addrs non-NULL: each container's address goes to addrs[i]) or
 * unmap (addrs NULL).  Nothing changes unless every id checked out and,
 * for a peer's pool, its read-only mapping could be made. */
static int set_mapped(int count, const int *cids, void **addrs)
{
	int err;

	pthread_mutex_lock(&tab.lock);
	err = check_cids(count, cids, false);
	for (int i = 0; !err && addrs && i < count; i++)
		if (!(addrs[i] = con_addr(&tab.v[cids[i]])))
			err = -ENOMEM;	/* mapping the peer's pool failed */
	for (int i = 0; !err && i < count; i++)
		tab.v[cids[i]].mapped = addrs != NULL;
	pthread_mutex_unlock(&tab.lock);
	return err;
}

static int portable_map(int count, const int *cids, void **addrs)
{
	return set_mapped(count, cids, addrs);
}

static int portable_unmap(int count, const int *cids)
{
	return set_mapped(count, cids, NULL);
}

/* --------------------------------------------------------------- cs_write */

struct wslice {
	zc_buf *buf;		/* our own reference */
	size_t off, len;
	bool writable;
};

/* Resolve (cid, off, len) triples under the lock, taking references.
 * offs NULL: the container's data offset; lens NULL: to the data's end. */
static int collect(int count, const int *cids, const int *offs,
		   const int *lens, struct wslice *v)
{
	int err = check_cids(count, cids, true);

	for (int i = 0; !err && i < count; i++) {
		struct cs_con *c = &tab.v[cids[i]];
		size_t size = con_size(c), end = (size_t)c->data_off + c->data_len;
		long long off = offs ? offs[i] : (long long)c->data_off;
		long long len = lens ? lens[i] : (long long)end - off;

		if (off < 0 || len < 0 || (size_t)off > size ||
		    (size_t)len > size - (size_t)off) {
			err = -EINVAL;
			break;
		}
		v[i].buf = zc_buf_ref(c->buf);
		v[i].off = (size_t)off;
		v[i].len = (size_t)len;
		v[i].writable = con_writable(c);
	}
	return err;
}

/* Write the whole aggregate.  A blocking descriptor loops over partial
 * writes; a non-blocking one that took part of it waits for room, because
 * a container is given away whole or not at all. */
static ssize_t write_all(int fd, zc_agg *agg)
{
	zc_channel *ch = zc_channel_from_fd(fd);
	size_t total = zc_agg_len(agg), done = 0;
	zc_sink sink;
	int err;

	if (total == 0)
		return 0;
	if (ch) {
		err = zc_channel_send(ch, agg);
		return err ? err : (ssize_t)total;
	}
	if ((err = zc_sink_init(&sink, fd)))
		return err;
	zc_sink_copy_first_trip(&sink, 1);	/* see the top of the file */
	while (done < total) {
		ssize_t r = iol_write_sink(&sink, agg);

		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r == 0)
			r = -EIO;	/* no progress and no reason */
		if (done == 0)
			return r;	/* nothing went out: keep everything */
		if (r == -EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, -1);
		} else if (r != -EINTR) {
			return r;
		}
	}
	return (ssize_t)total;
}

/* After cs_write: the ids are dead (move semantics).  On failure they stay,
 * but what was published is read-only from now on. */
static void settle(int count, const int *cids, struct wslice *v, bool gone)
{
	pthread_mutex_lock(&tab.lock);
	for (int i = 0; i < count; i++) {
		struct cs_con *c = con_get(cids[i]);

		/* Another thread may have freed and reused the id. */
		if (!c || c->buf != v[i].buf)
			continue;
		if (gone)
			zc_buf_release(con_remove(cids[i]));
		else if (v[i].writable)
			c->readonly = true;
	}
	pthread_mutex_unlock(&tab.lock);
}

static ssize_t portable_write(int fd, int count, const int *cids,
			      const int *offs, const int *lens)
{
	struct wslice stackv[ZC_CS_STACK], *v;
	zc_agg *agg = NULL;
	ssize_t r;
	int err;

	if (!(v = zc_cs_scratch((size_t)count, sizeof(*v), stackv)))
		return -ENOMEM;
	memset(v, 0, (size_t)count * sizeof(*v));
	pthread_mutex_lock(&tab.lock);
	err = collect(count, cids, offs, lens, v);
	pthread_mutex_unlock(&tab.lock);
	/* Publishing freezes the bytes; it only happens once every id and
	 * range checked out. */
	for (int i = 0; !err && i < count; i++)
		if (v[i].writable)
			err = zc_buf_publish(v[i].buf, v[i].off + v[i].len);
	if (!err)
		err = zc_agg_create(&agg);
	for (int i = 0; !err && i < count; i++)
		if (v[i].len)
			err = zc_agg_append_buf(agg, v[i].buf, v[i].off, v[i].len);
	r = err ? err : write_all(fd, agg);
	zc_agg_release(agg);
	if (!err)
		settle(count, cids, v, r >= 0);
	for (int i = 0; i < count; i++)
		zc_buf_release(v[i].buf);
	zc_cs_scratch_free(v, stackv);
	return r;
}

/* ---------------------------------------------------------------- cs_read */

/* A container for one slice: buffers are shared as they are; file extents
 * are read into a new buffer (a copy -- mapping the page cache could raise
 * SIGBUS if the file shrank; the kernel backend moves the pages instead). */
static int slice_buf(zc_agg *agg, size_t pos, const struct zc_slice *s,
		     zc_buf **buf, size_t *off)
{
	ssize_t n;
	int err;

	if (s->kind == ZC_SLICE_BUF) {
		*buf = zc_buf_ref(s->buf);
		*off = s->off;
		return 0;
	}
	/* A pipe's bytes cannot become a container without consuming the
	 * pipe (zc.h); channels and iol_read never deliver one. */
	if (s->kind == ZC_SLICE_PIPE)
		return -EINVAL;
	err = zc_cs_alloc_buf(s->len, buf);
	if (err)
		return err;
	n = zc_agg_copyout(agg, pos, zc_buf_wptr(*buf), s->len);
	if (n >= 0 && (size_t)n != s->len)
		n = -ESTALE;
	if (n < 0) {
		zc_buf_release(*buf);
		return (int)n;
	}
	*off = 0;
	return zc_buf_publish(*buf, s->len);
}

/* Enter all containers at once, or none.  The table takes over the
 * references; on failure they are handed back in bufs. */
static int insert_all(zc_buf **bufs, struct zc_cs_made *m, size_t n,
		      bool mapall)
{
	size_t i;
	int cid = 0;

	pthread_mutex_lock(&tab.lock);
	for (i = 0; i < n; i++) {
		cid = con_insert(bufs[i], (size_t)m[i].off, (size_t)m[i].len,
				 true, mapall);
		if (cid < 0)
			break;
		m[i].cid = cid;
	}
	if (cid < 0)
		while (i-- > 0)
			bufs[i] = con_remove(m[i].cid);
	pthread_mutex_unlock(&tab.lock);
	return cid < 0 ? cid : 0;
}

/* One slice's container, not yet in the table: 0, or a negative errno
 * with *buf holding nothing. */
static int make_one(zc_agg *agg, size_t pos, size_t i, bool mapall,
		    zc_buf **buf, struct zc_cs_made *m)
{
	struct zc_slice s;
	size_t off = 0;
	int err;

	zc_agg_slice(agg, i, &s);
	err = slice_buf(agg, pos, &s, buf, &off);
	if (err)
		return err;
	if (off > INT_MAX || zc_buf_len(*buf) > INT_MAX)
		err = -EOVERFLOW;
	*m = (struct zc_cs_made){ -1, (int)off, (int)s.len,
				  (int)zc_buf_len(*buf), NULL };
	if (!err && mapall && !(m->addr = (void *)zc_buf_data(*buf)))
		err = -ENOMEM;	/* mapping the peer's pool failed */
	if (err) {
		zc_buf_release(*buf);
		*buf = NULL;
	}
	return err;
}

/* Turn every slice of agg into a container and fill args. */
static int make_containers(zc_agg *agg, cs_args *args, bool mapall)
{
	size_t n = zc_agg_nslices(agg), pos = 0, got = 0;
	zc_buf *stackb[ZC_CS_STACK], **bufs;
	struct zc_cs_made stackm[ZC_CS_STACK], *m;
	int err = 0;

	bufs = zc_cs_scratch(n, sizeof(*bufs), stackb);
	m = zc_cs_scratch(n, sizeof(*m), stackm);
	if (!bufs || !m)
		err = -ENOMEM;
	for (; !err && got < n; got++) {
		err = make_one(agg, pos, got, mapall, &bufs[got], &m[got]);
		if (err)
			break;	/* bufs[got] holds nothing */
		pos += (size_t)m[got].len;
	}
	if (!err)
		err = insert_all(bufs, m, n, mapall);
	if (!err)
		zc_cs_fill_args(args, m, n, mapall);
	else
		for (size_t i = 0; i < got; i++)
			zc_buf_release(bufs[i]);
	if (bufs)
		zc_cs_scratch_free(bufs, stackb);
	if (m)
		zc_cs_scratch_free(m, stackm);
	return err ? err : (int)n;
}

static int portable_read(int fd, int size, int maxcon, cs_args *args,
			 int options)
{
	zc_agg *agg;
	int r;

	r = zc_cs_stream_next(fd, zc_channel_from_fd(fd), (size_t)size,
			      (size_t)maxcon, &agg);
	if (r <= 0)
		return r;
	r = make_containers(agg, args, options & CS_MAPALL);
	zc_agg_release(agg);
	return r;
}

const struct zc_cs_ops zc_cs_portable_ops = {
	.alloc = portable_alloc, .free = portable_free,
	.map = portable_map, .unmap = portable_unmap,
	.write = portable_write, .read = portable_read,
};
