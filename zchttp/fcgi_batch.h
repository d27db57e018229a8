/*
 * fcgi_batch.h - FastCGI records as a libzc aggregate: the framing both
 * ends of zcstack's FastCGI share (zchttpd's requests, cgi/'s responses).
 *
 * Part of the protocol library `zchttp`, and its one file on libzc: the
 * records' bytes are fcgi_proto.h's, their content stays where it is.  A
 * batch collects the records of one send.  Content given as an aggregate
 * (a request body, a response's buffers and file extents) is cut at
 * FCGI_MAX_CONTENT by pointer work and never copied; content given as
 * bytes (parameters, a staged write, END_REQUEST's body) is copied once
 * into the buffer that holds the record headers, or borrowed, as the
 * destination wants:
 *
 *   FCGI_BATCH_COPY    headers and bytes in one pool buffer (one slice
 *                      where they are adjacent): for a channel, which
 *                      would otherwise copy each borrowed piece into a
 *                      buffer of its own, and for records queued beyond
 *                      the caller's stack;
 *   FCGI_BATCH_BORROW  headers (in the batch) and bytes (the caller's)
 *                      by reference: for a socket, where iol_write
 *                      gathers them into its sendmsg; written before the
 *                      batch is freed.
 *
 * An empty content is the one empty record that ends a stream.
 */
#ifndef ZC_FCGI_BATCH_H
#define ZC_FCGI_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fcgi_proto.h"
#include "zc.h"

struct fcgi_piece {
	uint8_t hdr[FCGI_HEADER_LEN];
	const void *bytes;	/* content as bytes, or NULL */
	size_t len;		/* content bytes */
	zc_agg *agg;		/* content as slices (the batch's), or NULL */
};

/* A request's records are a few pieces (begin, parameters, the end of a
 * stream): the first FCGI_BATCH_INLINE live in the batch itself, so
 * building them allocates nothing. */
#define FCGI_BATCH_INLINE 4

struct fcgi_batch {
	struct fcgi_piece *v;	/* the pieces once past inl; NULL: in inl */
	size_t n, cap;
	int err;		/* the first error while adding */
	struct fcgi_piece inl[FCGI_BATCH_INLINE];
};

enum fcgi_batch_mode { FCGI_BATCH_COPY, FCGI_BATCH_BORROW };

void fcgi_batch_init(struct fcgi_batch *b);
/* Records of `type` for request `id` carrying p[0..len); the bytes stay
 * as they are until the batch is built (copied) or written (borrowed). */
void fcgi_batch_bytes(struct fcgi_batch *b, uint8_t type, uint16_t id,
		      const void *p, size_t len);
/* Records carrying agg's content; the batch takes agg over. */
void fcgi_batch_agg(struct fcgi_batch *b, uint8_t type, uint16_t id,
		    zc_agg *agg);
/* Append the records, in order, to out: 0, or the first error in adding
 * or building (out is then unchanged).  The copy's buffer comes from pool
 * (NULL: the default pool).  The batch keeps its records until
 * fcgi_batch_free: a borrowed build must be written before that. */
int fcgi_batch_build(struct fcgi_batch *b, enum fcgi_batch_mode mode,
		     zc_pool *pool, zc_agg *out);
/* Release the records (their aggregates); the batch is empty again. */
void fcgi_batch_free(struct fcgi_batch *b);

#endif
