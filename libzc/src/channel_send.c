/*
 * channel_send.c - zc_channel_send: an aggregate becomes descriptors on our
 * data ring.
 *
 * Each slice becomes one descriptor (BUF: the buffer is lent, its pool
 * shared first; FILE: the file shared first, then the extent); the last
 * one carries ZC_ENT_F_END, which closes the message (only an empty
 * message takes a MSG_END entry of its own).  Descriptors are written to
 * the ring and published together, with one release store of the tail, so
 * the peer sees whole messages; only a message longer than the ring
 * streams through it in parts (below, "send"), and a failure half way
 * then ends it with an ABORT MSG_END.  A blocking send waits for room
 * (channel_wait.c); a non-blocking one takes a whole message or nothing.
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

/* Does a message of `need` slots and `bytes` bytes fit now?  Bytes count
 * against the window unless the ring is empty, so one message of any
 * size can always go. */
static int tx_fits(zc_channel *ch, size_t need, uint64_t bytes)
{
	int64_t space = tx_space(ch);

	if (space < 0)
		return (int)space;
	return (size_t)space >= need &&
	       (ch->tx_inring == 0 || ch->tx_inring + bytes <= window);
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

/* Room for the message send_room waits for (tx_need slots, tx_want
 * bytes). */
static int tx_msg_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	return r ? r : tx_fits(ch, ch->tx_need, ch->tx_want);
}

/* Room for what a non-blocking send was told -EAGAIN for. */
int zc_ch_room_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	return r ? r : tx_fits(ch, ch->tx_wait_need, ch->tx_wait_bytes);
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
 * Non-blocking: room for `need` slots and `bytes` bytes now, or -EAGAIN
 * with the wait announced (zc_ch_nb_wait): the reader rings when it makes
 * room, and the program sees POLLIN on the channel fd.
 */
static int room_nonblock(zc_channel *ch, size_t need, uint64_t bytes)
{
	int err = tx_fits(ch, need, bytes);

	if (err == 0) {
		ch->tx_wait_need = need;
		ch->tx_wait_bytes = bytes;
		err = zc_ch_nb_wait(ch, ZC_RING_WANT_ROOM, zc_ch_room_ready);
		if (err == 0)
			return check_usable(ch) ?: -EAGAIN;
	}
	if (err < 0)
		return err;
	ch->tx_waiting = false;
	return 0;
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
	/* zc_channel_send refused pipe slices (zc_agg_owned_copy); should
	 * one come here, it is no buffer to lend. */
	if (s->kind == ZC_SLICE_PIPE || s->kind == ZC_SLICE_MEM)
		return -EINVAL;
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

/* Make what we wrote visible and wake the peer if it sleeps (corked: owe
 * it the wake-up, zc_channel_ring). */
static void publish(zc_channel *ch)
{
	if (ch->tx_pub == ch->tx_tail)
		return;
	zc_st_rel(&ch->tx.shm->data_tail.v, ch->tx_tail);
	ch->tx_pub = ch->tx_tail;
	if (ch->corked)
		ch->bell_owed = true;
	else
		zc_ch_notify(ch, ZC_RING_WANT_DATA);
}

void zc_channel_cork(zc_channel *ch, int on)
{
	ch->corked = on != 0;
	if (!on)
		zc_channel_ring(ch);
}

void zc_channel_ring(zc_channel *ch)
{
	if (!ch->bell_owed)
		return;
	ch->bell_owed = false;
	zc_ch_notify(ch, ZC_RING_WANT_DATA);
}

/* Write one descriptor into a free slot (the callers made sure of one;
 * -ENOSPC if there is none). */
static int put_entry(zc_channel *ch, const struct zc_ring_ent *e)
{
	int64_t space = tx_space(ch);

	if (space <= 0)
		return space < 0 ? (int)space : -ENOSPC;
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
	/* A slot is free: the failure came before a descriptor that had
	 * room, or the peer is gone and hears nothing anyway. */
	if (ch->tx_pub != start && !atomic_load(&ch->peer_gone) &&
	    put_entry(ch, &end) == 0)
		publish(ch);
}

/* --------------------------------------------------------------- send */

/*
 * A message longer than the ring (more slices than it has slots) cannot be
 * published whole, so it streams: the descriptors that fit go onto the
 * ring and are published (the reader keeps a partial message until its
 * END), the rest waits in tx_rest and follows as the reader makes room --
 * within the window, as any message: past the first descriptor, only as
 * many bytes as the window allows are on the ring at a time.  A blocking
 * send waits for all of it; a non-blocking one returns 0 once the message
 * is accepted and the rest moves on in later calls (send, recv,
 * zc_channel_flush), while every new send says -EAGAIN until it has gone:
 * all or nothing, messages in order.
 */

/* Room for the next descriptor of a streaming message (tx_want holds its
 * bytes): a free slot, within the window. */
static int tx_next_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	return r ? r : tx_fits(ch, 1, ch->tx_want);
}

/* Put descriptors of agg's slices [*next, n) on the ring while there is
 * room for them (every one if all_fit: the caller made sure), advancing
 * *next; the message's last one carries END.  0 or a negative errno
 * (a slice whose pool or file could not be shared, no room in the lend
 * table): then nothing of this call is on the ring. */
static int put_slices(zc_channel *ch, const zc_agg *agg, size_t *next,
		      bool all_fit)
{
	for (; *next < agg->n; (*next)++) {
		const struct zc_slice_int *s = &agg->s[agg->head + *next];
		struct zc_ring_ent e;
		int err;

		if (!all_fit) {
			ch->tx_want = s->len;	/* what tx_next_ready waits for */
			if ((err = tx_fits(ch, 1, s->len)) <= 0)
				return err;
		}
		err = make_entry(ch, s, &e);
		if (err)
			return err;
		if (*next + 1 == agg->n)
			e.flags |= ZC_ENT_F_END;	/* no MSG_END needed */
		err = put_entry(ch, &e);
		if (err) {
			if (e.type == ZC_ENT_BUF)
				zc_ch_unlend(ch, e.token);
			return err;
		}
	}
	return 0;
}

/* A failure half way through an accepted message: the peer is told to
 * drop what it has of it, and the channel cannot be trusted with the next
 * message either (this one was promised): the error sticks. */
static int fail_message(zc_channel *ch, int err)
{
	abort_message(ch, ch->tx_msg_start);
	zc_agg_release(ch->tx_rest);
	ch->tx_rest = NULL;
	return zc_ch_broke(ch, err);
}

/*
 * Move the rest of a streaming message on.  0 once it has all gone (or
 * there was none), -EAGAIN (non-blocking) while some is left -- with our
 * sleeping flag set, so the reader rings when it makes room -- or another
 * negative errno.  A blocking channel waits until all has gone.
 */
int zc_ch_push_rest(zc_channel *ch)
{
	int err;

	while (ch->tx_rest) {
		err = put_slices(ch, ch->tx_rest, &ch->tx_rest_next, false);
		if (err < 0)
			return fail_message(ch, err);
		publish(ch);
		if (ch->tx_rest_next == ch->tx_rest->n) {
			zc_agg_release(ch->tx_rest);
			ch->tx_rest = NULL;
			ch->tx_waiting = false;
			break;
		}
		/* No room for the next descriptor: wait, or say so. */
		if (ch->nonblock) {
			err = room_nonblock(ch, 1, ch->tx_want);
			if (err)
				return err;
			continue;	/* room appeared meanwhile */
		}
		/* Not interruptible: part of the message has gone, and a
		 * caller that tried again after -EINTR would send it twice. */
		err = zc_ch_wait(ch, tx_next_ready, false, ZC_RING_WANT_ROOM);
		if (err)
			return fail_message(ch, err);
	}
	return 0;
}

/*
 * Everything before a new message's descriptors: the channel is usable,
 * returns are collected, an earlier message's rest has gone, and agg fits:
 * a message no longer than the ring needs as many free slots and room in
 * the window; a longer one an empty ring (it then streams).  A blocking
 * channel waits for that; a non-blocking one says -EAGAIN (nothing sent).
 */
static int send_room(zc_channel *ch, const zc_agg *agg)
{
	size_t need = agg->n ? agg->n : 1;
	int err;

	if (ch->handshaking && (err = zc_channel_handshake(ch)))
		return err;
	pthread_once(&window_once, window_init);
	zc_ch_claim(ch);
	/* Now and then look at the socket even when nothing waits: this is
	 * how a sender that never blocks learns that its peer died. */
	if (++ch->sends % 64 == 0) {
		/* Not while a caller waits: its doorbells are its own
		 * (channel_wait.c, zc_ch_nb_wait), and its event loop watches
		 * the socket, so it will read the news itself. */
		if (!ch->rx_waiting && !ch->tx_waiting)
			zc_ch_drain_sock(ch);
		zc_ch_reap_maybe();
	}
	if ((err = check_usable(ch)))
		return err;
	zc_ch_flush_returns(ch);
	if ((err = zc_ch_drain_returns(ch)) < 0)
		return err;
	if ((err = zc_ch_push_rest(ch)))
		return err;
	ch->tx_want = agg->len;
	if (need > ch->tx.data_cap) {
		ch->tx_want = 0;	/* an empty ring: the window is too */
		need = ch->tx.data_cap;
	}
	if (ch->nonblock)
		return room_nonblock(ch, need, ch->tx_want);
	if ((err = tx_fits(ch, need, ch->tx_want)) != 0)
		return err < 0 ? err : 0;
	ch->tx_need = need;
	return zc_ch_wait(ch, tx_msg_ready, true, ZC_RING_WANT_ROOM);
}

int zc_channel_send(zc_channel *ch, const zc_agg *agg)
{
	size_t next = 0;
	int err;

	if (!ch || !agg)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	if (zc_agg_has_borrowed(agg)) {
		/* Borrowed bytes are never lent: the peer gets copies.  A
		 * pipe's bytes cannot be copied without consuming the pipe:
		 * zc_agg_owned_copy says -EINVAL. */
		zc_agg *owned;

		err = zc_agg_owned_copy(agg, &owned);
		if (!err)
			err = zc_channel_send(ch, owned);
		zc_agg_release(owned);
		return err;
	}
	if ((err = send_room(ch, agg)))
		return err;
	ch->tx_msg_start = ch->tx_tail;
	if (agg->n == 0) {
		struct zc_ring_ent end = { .type = ZC_ENT_MSG_END };

		if ((err = put_entry(ch, &end)))
			return err;
		publish(ch);
		return 0;
	}
	/* A message that fits goes whole, published at once. */
	err = put_slices(ch, agg, &next, agg->n <= ch->tx.data_cap);
	if (err < 0) {
		abort_message(ch, ch->tx_msg_start);
		return err;
	}
	if (next == agg->n) {
		publish(ch);
		return 0;
	}
	/* A longer one streams: its rest follows. */
	if ((err = zc_agg_dup(agg, &ch->tx_rest))) {
		abort_message(ch, ch->tx_msg_start);
		return err;
	}
	ch->tx_rest_next = next;
	publish(ch);
	err = zc_ch_push_rest(ch);
	return err == -EAGAIN ? 0 : err;	/* accepted: the rest follows */
}

int zc_channel_flush(zc_channel *ch)
{
	if (!ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	if (!ch->tx_rest) {
		ch->tx_waiting = false;	/* nothing of the caller's waits */
		return 0;
	}
	zc_ch_claim(ch);
	zc_ch_drain_returns(ch);
	return zc_ch_push_rest(ch);
}
