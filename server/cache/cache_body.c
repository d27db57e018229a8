/*
 * cache_body.c - where an entry's body is and how it leaves: the arena
 * (by copy up to --cache-copy-max, by sendfile from the zone's memfd
 * above), a snapshot of this worker's (the patched kernel's IO-Lite
 * buffers), or the file; and bringing a body into memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cache_int.h"

#include <sys/syscall.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008	/* linux/fs.h: musl's headers lack it */
#endif

/* preadv2 of one buffer; musl (the static image) has no wrapper.  The
 * kernel takes the offset as two longs, low then high, each half a long
 * shifted twice (as the kernel does): the high one is 0 on 64 bits. */
static ssize_t pread_flags(int fd, void *buf, size_t len, off_t off, int flags)
{
	struct iovec iov = { buf, len };

#ifdef __GLIBC__
	return preadv2(fd, &iov, 1, off, flags);
#else
	return syscall(SYS_preadv2, fd, &iov, 1, (unsigned long)off,
		       (unsigned long)((uint64_t)off >> (sizeof(long) * 4) >>
				       (sizeof(long) * 4)), flags);
#endif
}

/* Does this libzc make kernel IO-Lite snapshots (the patched kernel)?  One
 * tiny snapshot says: a kernel buffer has no pool. */
bool cache_kernel_snapshots(zc_pool *pool)
{
	int fd = memfd_create("zchttpd-probe", MFD_CLOEXEC);
	bool yes = false;
	zc_buf *b;

	if (fd < 0)
		return false;
	if (write(fd, "x", 1) == 1 && zc_buf_snapshot(pool, fd, 0, 1, &b) == 0) {
		yes = zc_buf_pool(b) == NULL;
		zc_buf_release(b);
	}
	close(fd);
	return yes;
}

/* A file's extent.  For a socket that copies the frames' payloads from
 * mappings (zc_sink_copy_mapped_files) the file is mapped too; the
 * mapping lasts as long as this worker keeps the file.  Not where the
 * cache manages the page cache itself: a mapped page cannot be dropped. */
static int append_file(struct cache *c, zc_file *f, zc_agg *out,
		       uint64_t off, uint64_t len, unsigned how)
{
	if ((how & CACHE_MAPPED) && !c->z->cfg.owns_pages)
		(void)zc_file_map(f);	/* without it, by sendfile */
	return zc_agg_append_file(out, f, off, len);
}

int cache_append_body(struct cache *c, struct cache_entry *e, zc_agg *out,
		      uint64_t off, uint64_t len, unsigned how)
{
	struct cache_zone *z = c->z;
	struct cache_local *l;
	zc_file *f;

	if (!is_shared(e))
		return append_file(c, e->file, out, off, len, how);
	if (atomic_load_explicit(&e->body_state, memory_order_acquire) ==
	    CB_READY) {
		/* Small (or framed, cache.h): copied into the socket with
		 * the head, one sendmsg.  Larger: sendfile from the arena's
		 * memfd, whose pages are then punched before the place is
		 * reused. */
		if ((uint64_t)e->v.size <= z->cfg.copy_max ||
		    (how & CACHE_FRAMED))
			return zc_agg_append_mem(out, z->arena + e->body_off + off,
						 len);
		if (!atomic_load_explicit(&e->kref, memory_order_relaxed))
			atomic_store_explicit(&e->kref, true,
					      memory_order_relaxed);
		return zc_agg_append_file(out, c->arena_file,
					  (uint64_t)(z->arena - z->base) +
						  e->body_off + off, len);
	}
	l = local_of(c, e);
	if (l && l->snap)
		return zc_agg_append_buf(out, l->snap, off, len);
	f = l ? l->file : NULL;
	if (!f)
		return -EAGAIN;
	return append_file(c, f, out, off, len, how);
}

bool cache_body_in_memory(struct cache *c, struct cache_entry *e)
{
	struct cache_local *l;

	if (!is_shared(e))
		return false;
	if (atomic_load_explicit(&e->body_state, memory_order_acquire) ==
	    CB_READY)
		return true;
	l = local_of(c, e);
	return l && l->snap;
}

bool cache_load_begin(struct cache *c, struct cache_entry *e)
{
	struct cache_zone *z = c->z;
	uint32_t pages;
	uint64_t off;
	bool ok = false;

	if (!is_shared(e) || !e->wants_body || !cache_file(c, e))
		return false;
	if (c->snapshots) {
		struct cache_local *l = local_of(c, e);

		if (!l || l->snap || l->loading)
			return false;
		l->loading = true;
		return true;
	}
	if (atomic_load_explicit(&e->body_state, memory_order_relaxed) !=
	    CB_NONE)
		return false;
	pages = (uint32_t)(((size_t)e->v.size + page_size() - 1) / page_size());
	cache_lock(c);
	if (atomic_load_explicit(&e->state, memory_order_relaxed) == CE_READY &&
	    atomic_load_explicit(&e->body_state, memory_order_relaxed) ==
		    CB_NONE &&
	    zone_arena_alloc(z, pages, &off) == 0) {
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		e->body_off = off;
		e->body_pages = pages;
		e->body_loader = (int32_t)c->worker;
		atomic_store_explicit(&e->body_state, CB_LOADING,
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
		ok = true;
	}
	cache_unlock(c);
	return ok;
}

/* Read exactly len bytes at 0 into dst: 0, -EAGAIN (nowait and not all in
 * the page cache), -ESTALE (the file is shorter now), -errno. */
static int read_all(int fd, unsigned char *dst, size_t len, bool nowait)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread_flags(fd, dst + done, len - done, (off_t)done,
					nowait ? RWF_NOWAIT : 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EOPNOTSUPP && nowait ? -EAGAIN : -errno;
		if (n == 0)
			return -ESTALE;
		done += (size_t)n;
	}
	return 0;
}

int cache_load_fill(struct cache *c, struct cache_entry *e, bool nowait)
{
	struct cache_zone *z = c->z;
	struct cache_local *l = &c->local[slot_of(c, e)];
	zc_file *f = l->file;

	if (!f)
		return -EBADF;
	if (c->snapshots) {
		/* zc_buf_snapshot blocks on the page cache's misses. */
		if (nowait)
			return -EAGAIN;
		return zc_buf_snapshot(c->snap_pool, zc_file_fd(f), 0,
				       (size_t)e->v.size, &l->snap_new);
	}
	return read_all(zc_file_fd(f), z->arena + e->body_off,
			(size_t)e->v.size, nowait);
}

void cache_load_end(struct cache *c, struct cache_entry *e, int err)
{
	struct cache_zone *z = c->z;

	if (c->snapshots) {
		struct cache_local *l = &c->local[slot_of(c, e)];

		l->loading = false;
		if (!err && l->snap_new) {
			l->snap = l->snap_new;
			cache_local_hold(c, slot_of(c, e));
			c->st.bodies_loaded++;
		}
		l->snap_new = NULL;
		return;
	}
	cache_lock(c);
	if (atomic_load_explicit(&e->body_state, memory_order_relaxed) ==
		    CB_LOADING &&
	    e->body_loader == (int32_t)c->worker) {
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		if (err) {
			zone_arena_free(z, e->body_off, e->body_pages, false);
			e->body_pages = 0;
			atomic_store_explicit(&e->body_state, CB_NONE,
					      memory_order_relaxed);
		} else {
			/* Release: whoever sees READY sees the bytes. */
			atomic_store_explicit(&e->body_state, CB_READY,
					      memory_order_release);
			c->st.bodies_loaded++;
		}
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
	}
	cache_unlock(c);
	/* --page-cache policy: the arena holds it now, once.  The socket
	 * that sent its first answer may still hold some of the file's
	 * pages: page_drop tries again for those. */
	if (!err && z->cfg.owns_pages && cache_file(c, e))
		page_drop(&c->drops, cache_file(c, e), c->now_ms);
}
