/*
 * sock_in.c - a socket's input, assembled in order (sock_in.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sock_in.h"

/* The overflow's first size: four of the ring's receive buffers (the
 * overflow holds what a ring receive delivered after the window filled,
 * which comes in pieces of at most EV_RECV_MAX, 2 KiB); it doubles from
 * there. */
#define OVER_FIRST 8192u

void sock_bufs_init(struct sock_bufs *b, size_t cap, size_t tail,
		    size_t over_max)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
	b->tail = tail;
	b->over_max = over_max;
}

void sock_bufs_fini(struct sock_bufs *b)
{
	while (b->nspare)
		free(b->spare[--b->nspare]);
}

bool sock_in_hold(struct sock_in *in, struct sock_bufs *b)
{
	if (in->buf)
		return true;
	in->buf = b->nspare ? b->spare[--b->nspare]
			    : malloc(b->cap + b->tail);
	return in->buf != NULL;
}

void sock_in_give_back(struct sock_in *in, struct sock_bufs *b)
{
	if (b->nspare < SOCK_IN_SPARE)
		b->spare[b->nspare++] = in->buf;
	else
		free(in->buf);
	in->buf = NULL;
	in->len = 0;
}

void sock_in_free(struct sock_in *in, struct sock_bufs *b)
{
	if (in->buf)
		sock_in_give_back(in, b);
	free(in->over);
	in->over = NULL;
	in->over_len = in->over_cap = 0;
}

static int over_append(struct sock_in *in, struct sock_bufs *b,
		       const char *p, size_t n)
{
	if (n > b->over_max - in->over_len)
		return -ENOBUFS;
	if (in->over_len + n > in->over_cap) {
		size_t cap = in->over_cap ? in->over_cap : OVER_FIRST;
		char *q;

		while (cap < in->over_len + n)
			cap *= 2;
		q = realloc(in->over, cap);
		if (!q)
			return -ENOMEM;
		in->over = q;
		in->over_cap = cap;
	}
	memcpy(in->over + in->over_len, p, n);
	in->over_len += n;
	return 0;
}

int sock_in_arrive(struct sock_in *in, struct sock_bufs *b, const char *p,
		   size_t n)
{
	if (!sock_in_hold(in, b))
		return -ENOMEM;
	if (!in->over_len) {
		size_t k = b->cap - in->len < n ? b->cap - in->len : n;

		memcpy(in->buf + in->len, p, k);
		in->len += k;
		p += k;
		n -= k;
	}
	return n ? over_append(in, b, p, n) : 0;
}

void sock_in_take_over(struct sock_in *in, size_t n)
{
	if (!n)
		return;
	memmove(in->over, in->over + n, in->over_len - n);
	in->over_len -= n;
}

bool sock_in_fill_held(struct sock_in *in, struct sock_bufs *b,
		       const struct sock_in_src *src)
{
	bool moved = false;

	for (;;) {
		enum sock_in_next next = sock_in_next(in, src);
		size_t room;
		ssize_t n;

		if (next != SOCK_IN_HELD && next != SOCK_IN_DECODED)
			return moved;
		if (!sock_in_hold(in, b))
			return moved;
		room = b->cap - in->len;
		if (!room)
			return moved;
		if (next == SOCK_IN_HELD) {
			n = (ssize_t)(room < in->over_len ? room : in->over_len);
			memcpy(in->buf + in->len, in->over, (size_t)n);
			sock_in_take_over(in, (size_t)n);
		} else {
			n = src->recv(src->ctx, in->buf + in->len, room);
			if (n <= 0)
				return moved;	/* the next read reports it */
		}
		in->len += (size_t)n;
		moved = true;
	}
}

ssize_t sock_in_read(struct sock_in *in, struct sock_bufs *b,
		     const struct sock_in_src *src)
{
	bool had = in->buf != NULL;
	size_t before = in->len;
	ssize_t n;

	switch (sock_in_next(in, src)) {
	case SOCK_IN_WAIT:
		return -EAGAIN;
	case SOCK_IN_SOURCE:
		break;
	default:		/* held or decoded: those first */
		if (sock_in_fill_held(in, b, src))
			return (ssize_t)(in->len - before);
		if (sock_in_next(in, src) != SOCK_IN_SOURCE)
			return in->buf ? -ENOBUFS : -ENOMEM;	/* no room */
		break;		/* it was no more than it said */
	}
	if (!sock_in_hold(in, b))
		return -ENOMEM;
	if (in->len == b->cap)
		return -ENOBUFS;
	n = src->recv(src->ctx, in->buf + in->len, b->cap - in->len);
	if (n > 0) {
		in->len += (size_t)n;
		return n;
	}
	if (!had)
		sock_in_release(in, b);
	return n;
}
