/*
 * cs_common.h - what both Container Shipping backends use (cs_common.c).
 *
 * Both backends meet libzc's own objects: the kernel backend still bridges
 * channels through pool buffers, and the portable one is made of them.
 * The code for that lives here, below both, so neither calls the other.
 */
#ifndef ZC_CS_COMMON_H
#define ZC_CS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "zc_cs.h"
#include "zc_channel.h"

/* A buffer from the default pool, waiting a little for loaned memory to
 * come back when the pool is full. */
int zc_cs_alloc_buf(size_t size, zc_buf **out);

/* The next data of the stream fd names (ch: its channel, or NULL): what an
 * earlier call left pending first, else a new channel message or iol_read,
 * cut to at most size bytes in at most maxcon slices (the rest stays
 * pending for the next call on the same stream).  1 with *agg, 0 at end of
 * stream, or a negative errno. */
int zc_cs_stream_next(int fd, zc_channel *ch, size_t size, size_t maxcon,
		      zc_agg **agg);

/* One container a cs_read made, to hand back to the caller. */
struct zc_cs_made {
	int cid;
	int off, len, size;	/* data region and container size */
	void *addr;		/* its mapping, if any */
};

/* Report n new containers in args (addrs only with mapall). */
void zc_cs_fill_args(cs_args *args, const struct zc_cs_made *m, size_t n,
		     bool mapall);

/*
 * Per-call arrays: in the caller's stack array when n entries fit, else on
 * the heap (zeroed).  Most calls name a handful of containers, so the
 * common case allocates nothing.
 */
#define ZC_CS_STACK 16

static inline void *zc_cs_scratch_of(size_t n, size_t size, void *stack,
				     size_t room)
{
	return n <= room ? stack : calloc(n, size);
}

#define zc_cs_scratch(n, size, stack) \
	zc_cs_scratch_of((n), (size), (stack), sizeof(stack) / (size))

static inline void zc_cs_scratch_free(void *p, void *stack)
{
	if (p != stack)
		free(p);
}

#endif /* ZC_CS_COMMON_H */
