/*
 * channel_recv.c - zc_channel_recv: descriptors from the peer's data ring
 * become an aggregate of read-only buffers and file extents; releasing
 * such a buffer returns it to the peer.
 *
 * A BUF descriptor becomes a foreign zc_buf over the peer's pool (shared
 * with us before the descriptor: channel_ctl.c) whose last release, on any
 * thread, pushes a RETURN with the descriptor's lend token (ret_cb below;
 * the return ring is channel_lend.c's) and wakes the peer if it sleeps.
 * Each such buffer holds a reference to the channel, so a channel outlives
 * its handle until everything it delivered is released.
 *
 * Every entry is copied out of the shared ring before it is looked at (the
 * peer can rewrite the slot under us) and checked: an unknown type, pool
 * or file, a slice outside its buffer, indices that ran backwards are a
 * sticky -EPROTO.  A message is handed out whole, at its MSG_END; one
 * that ends with ABORT is dropped.
 *
 * Peek (Streamline's peek, section 5.1): zc_channel_peek receives the next
 * message as recv does, keeps it in rx_peeked and hands out a duplicate
 * aggregate (the same read-only buffers, one more reference each); the
 * next recv returns the kept aggregate itself.  Nothing is copied and the
 * ring is consumed once: a peeked message no longer counts against the
 * writer's window, exactly as if it had been received.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <string.h>

#include "channel_int.h"

/* The last release of a buffer received on this channel (any thread). */
static void ret_cb(zc_buf *buf)
{
	zc_channel *ch = buf->release_ctx;
	unsigned bf = atomic_load_explicit(&buf->flags, memory_order_relaxed);
	uint32_t flags = (bf & ZC_BUF_KREF ? ZC_ENT_F_KREF : 0) |
			 (bf & ZC_BUF_READ ? ZC_ENT_F_READ : 0);

	if (zc_ch_owned(ch) && zc_ch_ret_push(ch, buf->release_token, flags))
		zc_ch_notify(ch, ZC_RING_WANT_RETURNS);
	zc_ch_put(ch);
}

static int take_buf(zc_channel *ch, const struct zc_ring_ent *e)
{
	zc_pool *pool;
	zc_buf *b;
	int err = zc_ch_peer_pool(ch, e->pool, &pool);

	if (err)
		return err;
	if (e->slen == 0 || e->soff > e->len || e->slen > e->len - e->soff)
		return -EPROTO;
	err = zc_buf_foreign(pool, e->off, e->len, e->gen, &b);
	if (err)
		return err == -EINVAL ? -EPROTO : err;
	b->on_release = ret_cb;
	b->release_ctx = ch;
	b->release_token = e->token;
	zc_ch_get(ch);
	err = zc_agg_append_buf(ch->rx_agg, b, e->soff, e->slen);
	/* The aggregate holds the buffer now; if appending failed this
	 * release returns the token right away. */
	zc_buf_release(b);
	return err;
}

static int take_file(zc_channel *ch, const struct zc_ring_ent *e)
{
	zc_file *f;
	int err = zc_ch_peer_file(ch, e->pool, &f);

	if (err)
		return err;
	if (e->slen == 0)
		return -EPROTO;
	err = zc_agg_append_file(ch->rx_agg, f, e->soff, e->slen);
	return err == -ERANGE ? -EPROTO : err;
}

/* One descriptor: 1 at the end of a message, 0 to go on, <0 error. */
static int take_entry(zc_channel *ch, const struct zc_ring_ent *e)
{
	int err;

	if (!ch->rx_agg && (err = zc_agg_create(&ch->rx_agg)))
		return err;
	switch (e->type) {
	case ZC_ENT_BUF:
		err = take_buf(ch, e);
		return err ? err : !!(e->flags & ZC_ENT_F_END);
	case ZC_ENT_FILE:
		err = take_file(ch, e);
		return err ? err : !!(e->flags & ZC_ENT_F_END);
	case ZC_ENT_MSG_END:
		if (e->flags & ZC_ENT_F_ABORT) {
			zc_agg_release(ch->rx_agg);
			ch->rx_agg = NULL;
			return 0;
		}
		return 1;
	default:
		return -EPROTO;
	}
}

/* Pop descriptors into rx_agg up to a MSG_END: 1 with *out set, 0 if the
 * ring ran dry first (the partial message is kept), <0 error. */
static int pop_message(zc_channel *ch, zc_agg **out)
{
	uint64_t head = ch->rx_head;
	uint64_t tail = zc_ld_acq(&ch->rx.shm->data_tail.v);
	int r = 0;

	if (tail - head > ch->rx.data_cap)
		return zc_ch_broke(ch, -EPROTO);
	if (head == tail)
		return 0;
	while (head != tail && r == 0) {
		struct zc_ring_ent e;

		/* Copy first: the peer can rewrite the slot under us. */
		memcpy(&e, &ch->rx.data[head & (ch->rx.data_cap - 1)], sizeof(e));
		head++;
		r = take_entry(ch, &e);
	}
	ch->rx_head = head;
	zc_st_rel(&ch->rx.shm->data_head.v, head);
	zc_ch_notify(ch, ZC_RING_WANT_ROOM);	/* a writer may wait */
	if (r < 0)
		return zc_ch_broke(ch, r == -ENOMEM ? r : -EPROTO);
	if (r == 1) {
		*out = ch->rx_agg;
		ch->rx_agg = NULL;
	}
	return r;
}

static int rx_ready(zc_channel *ch)
{
	return zc_ch_data_ready(ch);
}

int zc_channel_recv(zc_channel *ch, zc_agg **out)
{
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	if (ch->rx_peeked) {
		*out = ch->rx_peeked;
		ch->rx_peeked = NULL;
		return 0;
	}
	if (ch->handshaking && (r = zc_channel_handshake(ch)))
		return r;
	zc_ch_claim(ch);
	if ((r = atomic_load(&ch->broken)))
		return r;
	/* The rest of a long message we sent moves on while we wait for
	 * an answer (which the peer may only give once it has it all). */
	if (ch->tx_rest && (r = zc_ch_push_rest(ch)) && r != -EAGAIN)
		return r;
	zc_ch_flush_returns(ch);
	if ((r = zc_ch_drain_returns(ch)) < 0)
		return r;
	for (;;) {
		r = pop_message(ch, out);
		if (r > 0)
			ch->rx_waiting = false;
		if (r)
			return r < 0 ? r : 0;
		if (ch->peer_closed || atomic_load(&ch->peer_gone)) {
			/* Everything published before the end was read. */
			zc_agg_release(ch->rx_agg);
			ch->rx_agg = NULL;
			return -EPIPE;
		}
		if (ch->nonblock) {
			/* The writer rings, poll sees POLLIN; doorbells
			 * nobody waits for any more are taken, so a
			 * level-triggered poll does not spin, and those a
			 * waiting send needs are not (channel_wait.c). */
			r = zc_ch_nb_wait(ch, ZC_RING_WANT_DATA,
					  zc_ch_room_ready);
			if (r < 0 && r != -EPIPE)
				return r;
			if (r == 0)
				return -EAGAIN;
			continue;
		}
		r = zc_ch_wait(ch, rx_ready, true, ZC_RING_WANT_DATA);
		if (r < 0 && r != -EPIPE)
			return r;
	}
}

int zc_channel_peek(zc_channel *ch, zc_agg **out)
{
	zc_agg *msg;
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!ch)
		return -EINVAL;
	if (!ch->rx_peeked) {
		if ((r = zc_channel_recv(ch, &msg)))
			return r;
		ch->rx_peeked = msg;
	}
	return zc_agg_dup(ch->rx_peeked, out);
}
