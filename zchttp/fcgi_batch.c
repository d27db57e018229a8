/* fcgi_batch.c - FastCGI records as a libzc aggregate (fcgi_batch.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi_batch.h"

void fcgi_batch_init(struct fcgi_batch *b)
{
	b->v = NULL;		/* inl: each piece is set when added */
	b->n = b->cap = 0;
	b->err = 0;
}

/* One more record of len content bytes (<= FCGI_MAX_CONTENT), its header
 * encoded; NULL after an error (then b->err says which). */
static struct fcgi_piece *pieces(struct fcgi_batch *b)
{
	return b->v ? b->v : b->inl;
}

static struct fcgi_piece *piece(struct fcgi_batch *b, uint8_t type,
				uint16_t id, size_t len)
{
	struct fcgi_piece *p;

	if (b->err)
		return NULL;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : FCGI_BATCH_INLINE;

		if (b->cap == 0) {
			p = NULL;	/* inl, as it is */
		} else if (!b->v) {
			if ((p = malloc(cap * sizeof(*p))))
				memcpy(p, b->inl, sizeof(b->inl));
		} else {
			p = realloc(b->v, cap * sizeof(*p));
		}
		if (!p && b->cap) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->v = p;
		b->cap = cap;
	}
	p = &pieces(b)[b->n++];
	memset(p, 0, sizeof(*p));
	fcgi_header_encode(p->hdr, type, id, (uint16_t)len, 0);
	p->len = len;
	return p;
}

void fcgi_batch_bytes(struct fcgi_batch *b, uint8_t type, uint16_t id,
		      const void *p, size_t len)
{
	const uint8_t *s = p;

	do {
		size_t n = len > FCGI_MAX_CONTENT ? FCGI_MAX_CONTENT : len;
		struct fcgi_piece *r = piece(b, type, id, n);

		if (!r)
			return;
		r->bytes = n ? s : NULL;
		s += n;
		len -= n;
	} while (len);
}

void fcgi_batch_agg(struct fcgi_batch *b, uint8_t type, uint16_t id,
		    zc_agg *agg)
{
	size_t len = zc_agg_len(agg);

	do {
		size_t n = len > FCGI_MAX_CONTENT ? FCGI_MAX_CONTENT : len;
		zc_agg *tail = NULL;
		struct fcgi_piece *r;
		int err;

		if (n < len && (err = zc_agg_split(agg, n, &tail))) {
			b->err = b->err ? b->err : err;
			break;
		}
		r = piece(b, type, id, n);
		if (!r) {
			zc_agg_release(tail);
			break;
		}
		if (n)
			r->agg = agg;
		else
			zc_agg_release(agg);
		agg = tail;
		len -= n;
	} while (agg);
	zc_agg_release(agg);
}

/* Headers and byte contents copied into one buffer, in order; the
 * aggregates' slices between them. */
static int build_copy(struct fcgi_batch *b, zc_pool *pool, zc_agg *out)
{
	const struct fcgi_piece *v = pieces(b);
	size_t size = 0, off = 0, run = 0;
	zc_buf *buf;
	uint8_t *w;
	int err;

	for (size_t i = 0; i < b->n; i++)
		size += FCGI_HEADER_LEN + (v[i].bytes ? v[i].len : 0);
	if ((err = zc_buf_alloc(pool, size, &buf)))
		return err;
	w = zc_buf_wptr(buf);
	for (size_t i = 0; i < b->n; i++) {
		memcpy(w + off, v[i].hdr, FCGI_HEADER_LEN);
		off += FCGI_HEADER_LEN;
		if (v[i].bytes) {
			memcpy(w + off, v[i].bytes, v[i].len);
			off += v[i].len;
		}
	}
	err = zc_buf_publish(buf, size);
	/* Copied records that follow each other are one slice; a piece's
	 * slices go after its header. */
	off = 0;
	for (size_t i = 0; i < b->n && !err; i++) {
		run += FCGI_HEADER_LEN + (v[i].bytes ? v[i].len : 0);
		if (!v[i].agg && i + 1 < b->n)
			continue;
		err = zc_agg_append_buf(out, buf, off, run);
		off += run;
		run = 0;
		if (!err && v[i].agg)
			err = zc_agg_concat(out, v[i].agg);
	}
	zc_buf_release(buf);
	return err;
}

static int build_borrow(struct fcgi_batch *b, zc_agg *out)
{
	int err = 0;

	for (size_t i = 0; i < b->n && !err; i++) {
		const struct fcgi_piece *p = &pieces(b)[i];

		err = zc_agg_append_mem(out, p->hdr, FCGI_HEADER_LEN);
		if (!err && p->bytes)
			err = zc_agg_append_mem(out, p->bytes, p->len);
		if (!err && p->agg)
			err = zc_agg_concat(out, p->agg);
	}
	return err;
}

int fcgi_batch_build(struct fcgi_batch *b, enum fcgi_batch_mode mode,
		     zc_pool *pool, zc_agg *out)
{
	size_t before = zc_agg_len(out);
	int err = b->err;

	if (err || !b->n)
		return err;
	err = mode == FCGI_BATCH_COPY ? build_copy(b, pool, out)
				      : build_borrow(b, out);
	if (err)
		zc_agg_truncate(out, before);
	return err;
}

void fcgi_batch_free(struct fcgi_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		zc_agg_release(pieces(b)[i].agg);
	free(b->v);
	fcgi_batch_init(b);
}
