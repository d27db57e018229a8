/*
 * agg.c - buffer aggregates (IO-Lite's IOL_Agg): ordered lists of slices.
 *
 * An aggregate is a vector of slices with free room at both ends, so the
 * common operations -- append a body, prepend a header, drop what a socket
 * accepted -- are O(1) pointer work.  Slices hold references: a buffer or
 * file stays alive as long as any aggregate names it.  Small aggregates
 * (up to four slices, e.g. header + body) need no allocation beyond the
 * aggregate itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INLINE_SLICES (sizeof(((zc_agg *)0)->inline_s) / \
		       sizeof(((zc_agg *)0)->inline_s[0]))

/* Borrowed memory (ZC_SLICE_MEM) holds no reference: its owner answers
 * for its lifetime (zc.h).  A pipe counts its slices apart from its other
 * references: with none left, nothing can write its bytes (pipe.c). */
static void slice_get(const struct zc_slice_int *s)
{
	switch (s->kind) {
	case ZC_SLICE_BUF:
		zc_buf_ref(s->buf);
		break;
	case ZC_SLICE_FILE:
		zc_file_ref(s->file);
		break;
	case ZC_SLICE_PIPE:
		zc_pipe_slice_get(s->pipe);
		break;
	default:
		break;
	}
}

static void slice_put(const struct zc_slice_int *s)
{
	switch (s->kind) {
	case ZC_SLICE_BUF:
		zc_buf_release(s->buf);
		break;
	case ZC_SLICE_FILE:
		zc_file_release(s->file);
		break;
	case ZC_SLICE_PIPE:
		zc_pipe_slice_put(s->pipe);
		break;
	default:
		break;
	}
}

int zc_agg_create(zc_agg **out)
{
	zc_agg *a;

	if (!out)
		return -EINVAL;
	a = zc_obj_get(ZC_OBJ_AGG);	/* objcache.c */
	if (a)
		memset(a, 0, sizeof(*a));
	else
		a = calloc(1, sizeof(*a));
	*out = a;
	if (!a)
		return -ENOMEM;
	a->s = a->inline_s;
	a->cap = INLINE_SLICES;
	return 0;
}

static void drop_all(zc_agg *a)
{
	for (size_t i = 0; i < a->n; i++)
		slice_put(&a->s[a->head + i]);
	a->head = a->n = a->len = 0;
}

void zc_agg_release(zc_agg *agg)
{
	if (!agg)
		return;
	drop_all(agg);
	if (agg->s != agg->inline_s)
		free(agg->s);
	if (!zc_obj_put(ZC_OBJ_AGG, agg))
		free(agg);
}

/* Make room for one more slice at the front or the back.  Grows to twice
 * the size and centres the slices, so alternating prepends and appends
 * stay amortised O(1). */
static int reserve(zc_agg *a, bool front)
{
	struct zc_slice_int *s;
	size_t cap, head;

	if (front ? a->head > 0 : a->head + a->n < a->cap)
		return 0;
	if (a->n + 1 <= a->cap / 2) {
		/* Plenty of room, just on the wrong side: recentre. */
		head = (a->cap - a->n) / 2;
		memmove(&a->s[head], &a->s[a->head], a->n * sizeof(*s));
		a->head = head;
		return 0;
	}
	if (a->cap > SIZE_MAX / 2 / sizeof(*s))
		return -ENOMEM;
	cap = a->cap * 2;
	s = malloc(cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	head = (cap - a->n) / 2;
	memcpy(&s[head], &a->s[a->head], a->n * sizeof(*s));
	if (a->s != a->inline_s)
		free(a->s);
	a->s = s;
	a->cap = cap;
	a->head = head;
	return 0;
}

static struct zc_slice_int *first(zc_agg *a)
{
	return &a->s[a->head];
}

static struct zc_slice_int *last(zc_agg *a)
{
	return &a->s[a->head + a->n - 1];
}

/* Does slice n continue slice p exactly (same object, adjacent bytes)? */
static bool adjacent(const struct zc_slice_int *p, const struct zc_slice_int *n)
{
	if (p->kind != n->kind)
		return false;
	switch (p->kind) {
	case ZC_SLICE_MEM:	/* contiguous memory, any base */
		return p->mem + p->off + p->len == n->mem + n->off;
	case ZC_SLICE_BUF:
		return p->buf == n->buf && p->off + p->len == n->off;
	case ZC_SLICE_FILE:
		return p->file == n->file && p->off + p->len == n->off;
	case ZC_SLICE_PIPE:	/* positions that follow in one stream */
		return p->pipe == n->pipe && p->off + p->len == n->off;
	default:
		return false;
	}
}

/* Insert a slice, taking a new reference unless it merges with its
 * neighbour (then the neighbour's reference covers it). */
static int insert(zc_agg *a, const struct zc_slice_int *s, bool front)
{
	int err;

	if (s->len == 0)
		return 0;
	if (a->n && front && adjacent(s, first(a))) {
		first(a)->off = s->off;
		first(a)->len += s->len;
		a->len += s->len;
		return 0;
	}
	if (a->n && !front && adjacent(last(a), s)) {
		last(a)->len += s->len;
		a->len += s->len;
		return 0;
	}
	err = reserve(a, front);
	if (err)
		return err;
	slice_get(s);
	if (front)
		a->s[--a->head] = *s;
	else
		a->s[a->head + a->n] = *s;
	a->n++;
	a->len += s->len;
	return 0;
}

static int add_buf(zc_agg *a, zc_buf *buf, size_t off, size_t len, bool front)
{
	struct zc_slice_int s = { .kind = ZC_SLICE_BUF, .off = off, .len = len };

	if (!a || !buf)
		return -EINVAL;
	if (atomic_load_explicit(&buf->flags, memory_order_acquire) &
	    ZC_BUF_WRITABLE)
		return -EPERM;	/* only published (immutable) data is shared */
	if (off > buf->len || len > buf->len - off)
		return -ERANGE;
	s.buf = buf;
	return insert(a, &s, front);
}

static int add_file(zc_agg *a, zc_file *file, uint64_t off, size_t len,
		    bool front)
{
	struct zc_slice_int s = { .kind = ZC_SLICE_FILE, .off = off, .len = len };

	if (!a || !file)
		return -EINVAL;
	if (file->v.size < 0 || off > (uint64_t)file->v.size ||
	    len > (uint64_t)file->v.size - off)
		return -ERANGE;
	s.file = file;
	return insert(a, &s, front);
}

int zc_agg_append_buf(zc_agg *agg, zc_buf *buf, size_t off, size_t len)
{
	return add_buf(agg, buf, off, len, false);
}

int zc_agg_prepend_buf(zc_agg *agg, zc_buf *buf, size_t off, size_t len)
{
	return add_buf(agg, buf, off, len, true);
}

int zc_agg_append_file(zc_agg *agg, zc_file *file, uint64_t off, size_t len)
{
	return add_file(agg, file, off, len, false);
}

int zc_agg_prepend_file(zc_agg *agg, zc_file *file, uint64_t off, size_t len)
{
	return add_file(agg, file, off, len, true);
}

int zc_agg_append_bytes(zc_agg *agg, zc_pool *pool, const void *data,
			size_t len)
{
	zc_buf *b;
	int err;

	if (!agg || (!data && len))
		return -EINVAL;
	if (len == 0)
		return 0;
	err = zc_buf_from_bytes(pool, data, len, &b);
	if (err)
		return err;
	err = zc_agg_append_buf(agg, b, 0, len);
	zc_buf_release(b);
	return err;
}

int zc_agg_append_mem(zc_agg *agg, const void *data, size_t len)
{
	struct zc_slice_int s = { .kind = ZC_SLICE_MEM, .len = len };

	if (!agg || (!data && len))
		return -EINVAL;
	s.mem = data;
	return insert(agg, &s, false);
}

int zc_agg_append_pipe(zc_agg *agg, zc_pipe *p, uint64_t pos, size_t len)
{
	struct zc_slice_int s = { .kind = ZC_SLICE_PIPE, .off = pos, .len = len };

	if (!agg || !p)
		return -EINVAL;
	if (pos < p->rpos || pos > p->wpos || len > p->wpos - pos)
		return -ERANGE;
	s.pipe = p;
	return insert(agg, &s, false);
}

/* Bytes a peer cannot be lent: borrowed memory, kernel buffers, and a
 * pipe's bytes, which are in no memory at all. */
static bool unlendable(const struct zc_slice_int *s)
{
	return s->kind == ZC_SLICE_MEM || s->kind == ZC_SLICE_PIPE ||
	       (s->kind == ZC_SLICE_BUF && zc_buf_is_kernel(s->buf));
}

bool zc_agg_has_borrowed(const zc_agg *agg)
{
	for (size_t i = 0; i < agg->n; i++)
		if (unlendable(&agg->s[agg->head + i]))
			return true;
	return false;
}

int zc_agg_owned_copy(const zc_agg *src, zc_agg **out)
{
	zc_agg *a;
	int err = zc_agg_create(&a);

	for (size_t i = 0; !err && i < src->n; i++) {
		const struct zc_slice_int *s = &src->s[src->head + i];

		if (s->kind == ZC_SLICE_PIPE)
			err = -EINVAL;	/* copying it would consume the pipe */
		else if (s->kind == ZC_SLICE_MEM)
			err = zc_agg_append_bytes(a, NULL, s->mem + s->off,
						  s->len);
		else if (unlendable(s))
			err = zc_agg_append_bytes(a, NULL,
						  s->buf->kaddr + s->off,
						  s->len);
		else
			err = insert(a, s, false);
	}
	if (err) {
		zc_agg_release(a);
		a = NULL;
	}
	*out = a;
	return err;
}

int zc_agg_concat(zc_agg *dst, const zc_agg *src)
{
	size_t n, orig_len;
	int err;

	if (!dst || !src)
		return -EINVAL;
	/* dst == src doubles the aggregate: fix the count first, and copy
	 * each slice out before inserting since insert may move the array.
	 * On failure dst keeps what it had. */
	n = src->n;
	orig_len = dst->len;
	for (size_t i = 0; i < n; i++) {
		struct zc_slice_int s = src->s[src->head + i];

		err = insert(dst, &s, false);
		if (err) {
			zc_agg_truncate(dst, orig_len);
			return err;
		}
	}
	return 0;
}

int zc_agg_dup(const zc_agg *agg, zc_agg **out)
{
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!agg)
		return -EINVAL;
	err = zc_agg_create(out);
	if (!err)
		err = zc_agg_concat(*out, agg);
	if (err) {
		zc_agg_release(*out);
		*out = NULL;
	}
	return err;
}

/* Index (relative to head) of the slice holding byte `at`, and the offset
 * of `at` inside it.  at == len gives (n, 0). */
static size_t locate(const zc_agg *a, size_t at, size_t *inner)
{
	size_t i = 0;

	while (i < a->n && at >= a->s[a->head + i].len) {
		at -= a->s[a->head + i].len;
		i++;
	}
	*inner = at;
	return i;
}

int zc_agg_truncate(zc_agg *agg, size_t len)
{
	size_t i, inner;

	if (!agg)
		return -EINVAL;
	if (len > agg->len)
		return -ERANGE;
	i = locate(agg, len, &inner);
	if (inner) {
		/* Slice i keeps its first `inner` bytes. */
		agg->s[agg->head + i].len = inner;
		i++;
	}
	for (size_t j = i; j < agg->n; j++)
		slice_put(&agg->s[agg->head + j]);
	agg->n = i;
	agg->len = len;
	return 0;
}

int zc_agg_trim_front(zc_agg *agg, size_t n)
{
	size_t i, inner;

	if (!agg)
		return -EINVAL;
	if (n > agg->len)
		return -ERANGE;
	i = locate(agg, n, &inner);
	for (size_t j = 0; j < i; j++)
		slice_put(&agg->s[agg->head + j]);
	agg->head += i;
	agg->n -= i;
	if (inner) {
		first(agg)->off += inner;
		first(agg)->len -= inner;
	}
	agg->len -= n;
	if (agg->n == 0)
		agg->head = 0;
	return 0;
}

/* A new aggregate of agg's bytes [from, to), with references of its own:
 * what zc_agg_split and zc_agg_split_front move out. */
static int part(const zc_agg *agg, size_t from, size_t to, zc_agg **out)
{
	size_t i, inner, left = to - from;
	zc_agg *p;
	int err = zc_agg_create(&p);

	if (err)
		return err;
	i = locate(agg, from, &inner);
	for (; left && i < agg->n; i++, inner = 0) {
		struct zc_slice_int s = agg->s[agg->head + i];

		s.off += inner;
		s.len -= inner;
		if (s.len > left)
			s.len = left;
		left -= s.len;
		err = insert(p, &s, false);
		if (err) {
			zc_agg_release(p);
			return err;
		}
	}
	*out = p;
	return 0;
}

/* The checks both splits make; 0 if agg may be cut at `at`. */
static int split_ok(const zc_agg *agg, size_t at, zc_agg **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!agg)
		return -EINVAL;
	return at > agg->len ? -ERANGE : 0;
}

int zc_agg_split(zc_agg *agg, size_t at, zc_agg **tail)
{
	int err = split_ok(agg, at, tail);

	if (!err && !(err = part(agg, at, agg->len, tail)))
		zc_agg_truncate(agg, at);	/* the tail has its references */
	return err;
}

int zc_agg_split_front(zc_agg *agg, size_t at, zc_agg **front)
{
	int err = split_ok(agg, at, front);

	if (!err && !(err = part(agg, 0, at, front)))
		zc_agg_trim_front(agg, at);	/* the front has its references */
	return err;
}

size_t zc_agg_len(const zc_agg *agg)
{
	return agg ? agg->len : 0;
}

size_t zc_agg_nslices(const zc_agg *agg)
{
	return agg ? agg->n : 0;
}

int zc_agg_slice(const zc_agg *agg, size_t i, struct zc_slice *out)
{
	const struct zc_slice_int *s;

	if (!agg || !out)
		return -EINVAL;
	if (i >= agg->n)
		return -ERANGE;
	s = &agg->s[agg->head + i];
	memset(out, 0, sizeof(*out));
	out->kind = s->kind;
	switch (s->kind) {
	case ZC_SLICE_BUF:
		out->buf = s->buf;
		break;
	case ZC_SLICE_FILE:
		out->file = s->file;
		break;
	case ZC_SLICE_PIPE:
		out->pipe = s->pipe;
		break;
	default:
		out->mem = s->mem;
		break;
	}
	out->off = s->off;
	out->len = s->len;
	return 0;
}
