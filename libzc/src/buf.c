/*
 * buf.c - immutable buffers: publishing, reference counts, identity.
 *
 * A buffer is writable by its owner until zc_buf_publish(); from then on its
 * content never changes while any reference exists, which is what lets an
 * aggregate, a socket, a pipe and a peer process all share it.  Allocation
 * and recycling live in pool.c because they are page-allocator work.
 * Kernel buffers (iol_kernel.c) have no pool: the kernel mapped them, and
 * frees them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void *zc_buf_wptr(zc_buf *buf)
{
	if (!buf || !(atomic_load_explicit(&buf->flags, memory_order_relaxed) &
		      ZC_BUF_WRITABLE))
		return NULL;
	return buf->pool->base + buf->off;
}

int zc_buf_publish(zc_buf *buf, size_t len)
{
	if (!buf)
		return -EINVAL;
	if (!(atomic_load_explicit(&buf->flags, memory_order_relaxed) &
	      ZC_BUF_WRITABLE))
		return -EPERM;
	if (len > buf->cap)
		return -EINVAL;
	buf->len = len;
	/* Release: whoever later sees the buffer published sees its bytes. */
	atomic_fetch_and_explicit(&buf->flags, ~(unsigned)ZC_BUF_WRITABLE,
				  memory_order_release);
	return 0;
}

int zc_buf_from_bytes(zc_pool *pool, const void *data, size_t len,
		      zc_buf **out)
{
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!data && len)
		return -EINVAL;
	err = zc_buf_alloc(pool, len, out);
	if (err)
		return err;
	memcpy(zc_buf_wptr(*out), data, len);
	zc_stat_copy(len);
	return zc_buf_publish(*out, len);
}

const void *zc_buf_data(zc_buf *buf)
{
	unsigned char *base;
	unsigned flags;

	if (!buf)
		return NULL;
	if (zc_buf_is_kernel(buf))
		return buf->kaddr;
	base = zc_pool_base(buf->pool);
	if (!base)
		return NULL;
	/* Whoever asks for the address reads the bytes (or has the kernel
	 * copy them, on this CPU): the owner learns it with the buffer's
	 * return (ZC_ENT_F_READ) and reuses the memory last.  One atomic per
	 * buffer, not per call. */
	flags = atomic_load_explicit(&buf->flags, memory_order_relaxed);
	if ((flags & (ZC_BUF_FOREIGN | ZC_BUF_READ)) == ZC_BUF_FOREIGN)
		atomic_fetch_or_explicit(&buf->flags, ZC_BUF_READ,
					 memory_order_relaxed);
	return base + buf->off;
}

size_t zc_buf_len(const zc_buf *buf)
{
	return buf ? buf->len : 0;
}

size_t zc_buf_capacity(const zc_buf *buf)
{
	return buf ? buf->cap : 0;
}

zc_pool *zc_buf_pool(const zc_buf *buf)
{
	return buf ? buf->pool : NULL;
}

void zc_buf_id(const zc_buf *buf, struct zc_buf_id *id)
{
	if (!id)
		return;
	if (!buf) {
		memset(id, 0, sizeof(*id));
		return;
	}
	if (zc_buf_is_kernel(buf)) {
		id->pool = 0;		/* no pool: the kernel's id instead */
		id->off = (uint64_t)buf->kid;
		id->len = buf->len;
		id->gen = buf->kgen;
		return;
	}
	id->pool = buf->pool->id;
	id->off = buf->off;
	id->len = buf->len;
	id->gen = buf->gen;
}

zc_buf *zc_buf_ref(zc_buf *buf)
{
	if (buf)
		atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
	return buf;
}

void zc_buf_release(zc_buf *buf)
{
	zc_pool *pool;

	if (!buf || atomic_fetch_sub_explicit(&buf->refs, 1,
					      memory_order_acq_rel) != 1)
		return;
	if (zc_buf_is_kernel(buf)) {
		zc_kiol_free(buf);
		return;
	}
	pool = buf->pool;
	if (atomic_load_explicit(&buf->flags, memory_order_relaxed) &
	    ZC_BUF_FOREIGN) {
		/* A peer's buffer: tell the peer it may reuse the memory. */
		if (buf->on_release)
			buf->on_release(buf);
		zc_buf_header_free(buf);
		zc_pool_put(pool);
		return;
	}
	zc_pool_recycle(pool, buf);
}

int zc_buf_foreign(zc_pool *pool, uint64_t off, size_t len, uint64_t gen,
		   zc_buf **out)
{
	zc_buf *b;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!pool || off > pool->size || len > pool->size - off)
		return -EINVAL;
	b = zc_buf_header_new();
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	atomic_init(&b->flags, ZC_BUF_FOREIGN);
	b->pool = pool;
	b->off = off;
	b->cap = len;
	b->len = len;
	b->gen = gen;
	zc_pool_get(pool);
	*out = b;
	return 0;
}
