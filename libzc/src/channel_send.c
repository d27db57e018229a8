/*
 * channel_send.c - zc_channel_send: an aggregate becomes descriptors on our
 * data ring.
 *
 * Each slice becomes one descriptor (BUF: the buffer is lent, its pool
 * shared first; FILE: the file shared first, then the extent); the last
 * one carries ZC_ENT_F_END, which closes the message (only an empty
 * message takes a MSG_END entry of its own).  Descriptors are written to the ring and
 * published together, with one release store of the tail, so the peer sees
 * whole messages; only a message longer than the ring streams through it in
 * parts (and a failure half way then ends it with an ABORT MSG_END).  A
 * blocking send waits for room (channel_wait.c); a non-blocking one sends
 * all of a message or nothing.
 *
 * The window: bytes a writer may have published that its reader has not
 * consumed yet -- the channel's socket buffer.  Without it a writer that
 * runs ahead fills the whole ring (256 one-slice messages: 32 MiB of
 * 128 KiB blocks in flight), the buffers cycle through far more memory than
 * the caches hold, and the bytes go to and from L3 or DRAM.  A small window
 * keeps a few buffers in flight and cache-hot: 1 MiB is eight 128 KiB blocks,
 * well inside a core's L2 (windows from 256 KiB to 16 MiB measured within
 * the machine's noise of it, see docs/ipc-benchmark.md).
 * ZC_CHANNEL_WINDOW (bytes) overrides it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "channel_int.h"

#define DEFAULT_WINDOW (1u << 20)

static pthread_once_t window_once = PTHREAD_ONCE_INIT;
static uint64_t window = DEFAULT_WINDOW;

static void window_init(void)
{
	const char *w = getenv("ZC_CHANNEL_WINDOW");
	char *end;
	unsigned long long v;

	if (w && *w) {
		v = strtoull(w, &end, 0);
		if (!*end && v > 0)
			window = v;
	}
}

/* ---------------------------------------------------------------- room */

/* Free data slots on our ring, or a negative errno.  Also settles the
 * byte count of what the peer consumed since we last looked. */
static int64_t tx_space(zc_channel *ch)
{
	uint64_t head = zc_ld_acq(&ch->tx.shm->data_head.v);
	uint64_t mask = ch->tx.data_cap - 1;

	if (ch->tx_tail - head > ch->tx.data_cap ||
	    head - ch->tx_seen > ch->tx.data_cap)
		return zc_ch_broke(ch, -EPROTO); /* head ran backwards or ahead */
	for (; ch->tx_seen != head; ch->tx_seen++)
		ch->tx_inring -= ch->tx_bytes[ch->tx_seen & mask];
	return (int64_t)(ch->tx.data_cap - (ch->tx_tail - head));
}

/* Does a message of `need` slots and ch->tx_want bytes fit now?  Bytes
 * count against the window unless the ring is empty, so one message of
 * any size can always go. */
static int tx_fits(zc_channel *ch, size_t need)
{
	int64_t space = tx_space(ch);

	if (space < 0)
		return (int)space;
	return (size_t)space >= need &&
	       (ch->tx_inring == 0 || ch->tx_inring + ch->tx_want <= window);
}

static int tx_check(zc_channel *ch)
{
	int r = zc_ch_drain_returns(ch);	/* credits keep flowing meanwhile */

	if (r < 0)
		return r;
	if (ch->peer_closed || atomic_load(&ch->peer_gone))
		return -EPIPE;
	return 0;
}

/* Room for one more descriptor (a message streaming through the ring). */
static int tx_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	if (r)
		return r;
	r = (int)tx_space(ch);
	return r < 0 ? r : r > 0;
}

/* Room for a whole message of one slice (its end is a flag on it), within
 * the window. */
static int tx_window_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	return r ? r : tx_fits(ch, 1);
}

static int check_usable(zc_channel *ch)
{
	int err = atomic_load(&ch->broken);

	if (err)
		return err;
	if (ch->peer_closed || atomic_load(&ch->peer_gone))
		return -EPIPE;
	return 0;
}

/*
 * Non-blocking send: all of a message or nothing, so it needs `need` free
 * slots now.  Otherwise -EAGAIN with our sleeping flag left set: the reader
 * rings when it makes room, and the program sees POLLIN on the channel fd.
 */
static int room_nonblock(zc_channel *ch, size_t need)
{
	int err;

	if (need > ch->tx.data_cap)
		return -EMSGSIZE;
	if ((err = tx_fits(ch, need)))
		return err < 0 ? err : 0;
	if ((err = zc_ch_drain_sock(ch)) < 0)
		return err;
	atomic_fetch_or(&ch->tx.shm->sleeping.v, ZC_RING_WANT_ROOM);
	if ((err = tx_fits(ch, need)) == 0)
		return check_usable(ch) ?: -EAGAIN;
	atomic_fetch_and_explicit(&ch->tx.shm->sleeping.v,
				  ~(uint64_t)ZC_RING_WANT_ROOM,
				  memory_order_relaxed);
	return err < 0 ? err : 0;
}

/* ----------------------------------------------------------- descriptors */

/* Turn one slice into a descriptor, sharing its pool or file first. */
static int make_entry(zc_channel *ch, const struct zc_slice_int *s,
		      struct zc_ring_ent *e)
{
	uint32_t ftok = 0;
	int err;

	memset(e, 0, sizeof(*e));
	e->soff = s->off;
	e->slen = s->len;
	if (s->kind == ZC_SLICE_FILE) {
		err = zc_ch_share_file(ch, s->file, &ftok);
		e->type = ZC_ENT_FILE;
		e->pool = ftok;
		return err;
	}
	err = zc_ch_share_pool(ch, s->buf->pool);
	if (err)
		return err;
	e->type = ZC_ENT_BUF;
	e->pool = s->buf->pool->id;
	e->off = s->buf->off;
	e->len = s->buf->len;
	e->gen = s->buf->gen;
	return zc_ch_lend(ch, s->buf, &e->token);
}

/* Make what we wrote visible and wake the peer if it sleeps. */
static void publish(zc_channel *ch)
{
	if (ch->tx_pub == ch->tx_tail)
		return;
	zc_st_rel(&ch->tx.shm->data_tail.v, ch->tx_tail);
	ch->tx_pub = ch->tx_tail;
	zc_ch_notify(ch, ZC_RING_WANT_DATA);
}

/* Write one descriptor, waiting for room if the ring is full. */
static int put_entry(zc_channel *ch, const struct zc_ring_ent *e)
{
	int64_t space = tx_space(ch);
	int err;

	if (space < 0)
		return (int)space;
	if (space == 0) {
		/* A message longer than the ring streams through it: show
		 * the peer what we have so it can make room. */
		publish(ch);
		err = zc_ch_wait(ch, tx_ready, false, ZC_RING_WANT_ROOM);
		if (err)
			return err;
	}
	memcpy(&ch->tx.data[ch->tx_tail & (ch->tx.data_cap - 1)], e, sizeof(*e));
	ch->tx_bytes[ch->tx_tail & (ch->tx.data_cap - 1)] = e->slen;
	ch->tx_inring += e->slen;
	ch->tx_tail++;
	return 0;
}

/* Undo a message that failed half way: unpublished descriptors are taken
 * back; if part of it was already published, the peer is told to drop it. */
static void abort_message(zc_channel *ch, uint64_t start)
{
	struct zc_ring_ent end = { .type = ZC_ENT_MSG_END,
				   .flags = ZC_ENT_F_ABORT };

	for (uint64_t i = ch->tx_pub; i < ch->tx_tail; i++) {
		struct zc_ring_ent *e = &ch->tx.data[i & (ch->tx.data_cap - 1)];

		if (e->type == ZC_ENT_BUF)
			zc_ch_unlend(ch, e->token);
		ch->tx_inring -= e->slen;
	}
	ch->tx_tail = ch->tx_pub;
	if (ch->tx_pub != start && !atomic_load(&ch->peer_gone) &&
	    put_entry(ch, &end) == 0)
		publish(ch);
}

/* --------------------------------------------------------------- send */

/*
 * Everything before the descriptors: the channel is usable, returns are
 * collected, and a message of agg's size fits -- a blocking channel waits
 * for room, a non-blocking one says -EAGAIN (nothing sent).  Once this said
 * 0, room only grows (we are the ring's only producer), so
 * zc_ch_send_fitted can follow at any later time.  A multiway channel
 * (channel_multi.c) asks every reader this before it sends to any.
 */
int zc_ch_send_room(zc_channel *ch, const zc_agg *agg)
{
	int err;

	if (ch->closed)
		return -EBADF;
	if (ch->handshaking && (err = zc_channel_handshake(ch)))
		return err;
	pthread_once(&window_once, window_init);
	zc_ch_claim(ch);
	/* Now and then look at the socket even when nothing waits: this is
	 * how a sender that never blocks learns that its peer died. */
	if (++ch->sends % 64 == 0) {
		zc_ch_drain_sock(ch);
		zc_ch_reap_maybe();
	}
	if ((err = check_usable(ch)))
		return err;
	zc_ch_flush_returns(ch);
	if ((err = zc_ch_drain_returns(ch)) < 0)
		return err;
	ch->tx_want = agg->len;
	if (ch->nonblock)
		return room_nonblock(ch, agg->n ? agg->n : 1);
	if ((err = tx_fits(ch, 1)) != 0)
		return err < 0 ? err : 0;
	return zc_ch_wait(ch, tx_window_ready, true, ZC_RING_WANT_ROOM);
}

/*
 * The descriptors of agg (no borrowed slices), published; the last one
 * carries ZC_ENT_F_END (an empty message is a MSG_END entry alone).
 */
int zc_ch_send_fitted(zc_channel *ch, const zc_agg *agg)
{
	uint64_t start = ch->tx_tail;
	int err;

	for (size_t i = 0; i < agg->n; i++) {
		struct zc_ring_ent e;

		err = make_entry(ch, &agg->s[agg->head + i], &e);
		if (i + 1 == agg->n)
			e.flags |= ZC_ENT_F_END;	/* no MSG_END needed */
		if (!err && (err = put_entry(ch, &e)) && e.type == ZC_ENT_BUF)
			zc_ch_unlend(ch, e.token);
		if (err) {
			abort_message(ch, start);
			return err;
		}
	}
	struct zc_ring_ent end = { .type = ZC_ENT_MSG_END };

	if (agg->n == 0 && (err = put_entry(ch, &end))) {
		abort_message(ch, start);
		return err;
	}
	publish(ch);
	return 0;
}

int zc_channel_send(zc_channel *ch, const zc_agg *agg)
{
	int err;

	if (!ch || !agg)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	if (zc_agg_has_borrowed(agg)) {
		/* Borrowed bytes are never lent: the peer gets copies. */
		zc_agg *owned;

		err = zc_agg_owned_copy(agg, &owned);
		if (!err)
			err = zc_channel_send(ch, owned);
		zc_agg_release(owned);
		return err;
	}
	err = zc_ch_send_room(ch, agg);
	return err ? err : zc_ch_send_fitted(ch, agg);
}
