/*
 * channel_lend.c - lending and credits: the lend table (what the peer holds
 * of ours) and the return rings (RETURNs, both directions).
 *
 * Every BUF descriptor carries a token naming a reference the sender keeps
 * (zc_buf_ref) in its lend table.  The receiver wraps the memory in a
 * foreign zc_buf whose last release pushes a RETURN with the token
 * (channel_recv.c); the sender then drops its reference and the memory goes
 * back to its pool, hot, without zeroing.  Flow control is the ring size (a
 * full ring blocks or gives -EAGAIN) and pool space (cs_alloc reclaims
 * returned buffers through zc_channel_reclaim when the pool is full).
 * RETURNs have a ring of their own (ring.h), so credits flow even while
 * unread data sits in front of them.
 *
 * A peer with no channel state left (EOF on the socket: it exited, was
 * killed, or closed with nothing of ours in hand) returns nothing any more:
 * what is still lent is released, marked KREF because a dead peer may have
 * handed the pages to its kernel (a pipe, a socket) and the pool must then
 * detach them.
 *
 * Threads: a channel belongs to one thread at a time (zc.h), but the
 * buffers it delivers may be released on any thread, so the return-ring
 * producer side has its own lock (ret_lock), and the lend table has one
 * (lend_lock) because zc_channel_reclaim may run on another thread.
 * Nothing here calls the other channel files: waking the peer after a
 * RETURN is the caller's (zc_ch_notify).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel_int.h"

#define MAX_LENT (1u << 20)		/* lend table slots per channel */
#define LENT_NONE UINT32_MAX
#define BATCH 32			/* buffers released per lock hold */

void zc_ch_lend_init(zc_channel *ch)
{
	ch->lent_free = LENT_NONE;
	pthread_mutex_init(&ch->lend_lock, NULL);
	pthread_mutex_init(&ch->ret_lock, NULL);
}

void zc_ch_lend_free(zc_channel *ch)
{
	free(ch->lent);
	free(ch->ovf);
	pthread_mutex_destroy(&ch->lend_lock);
	pthread_mutex_destroy(&ch->ret_lock);
}

/* ------------------------------------------------------------ lend table */

static int lent_grow(zc_channel *ch)
{
	uint32_t cap = ch->lent_cap ? ch->lent_cap * 2 : 64;
	struct zc_ch_lent_slot *v;

	if (cap > MAX_LENT)
		return -ENOBUFS;
	v = realloc(ch->lent, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = ch->lent_cap; i < cap; i++) {
		v[i].buf = NULL;
		v[i].gen = 0;
		v[i].next = i + 1 < cap ? i + 1 : ch->lent_free;
	}
	ch->lent_free = ch->lent_cap;
	ch->lent = v;
	ch->lent_cap = cap;
	return 0;
}

/* Keep a reference to buf for the peer; the token names it.  lend_lock. */
static int lent_add(zc_channel *ch, zc_buf *buf, uint64_t *token)
{
	struct zc_ch_lent_slot *s;
	uint32_t idx;
	int err;

	if (ch->lent_free == LENT_NONE && (err = lent_grow(ch)))
		return err;
	idx = ch->lent_free;
	s = &ch->lent[idx];
	ch->lent_free = s->next;
	s->buf = zc_buf_ref(buf);
	s->gen++;
	*token = (uint64_t)s->gen << 32 | idx;
	atomic_fetch_add_explicit(&ch->lent_n, 1, memory_order_relaxed);
	return 0;
}

/* The reference a token names, removed from the table; NULL if the token
 * is not one we handed out.  lend_lock. */
static zc_buf *lent_take(zc_channel *ch, uint64_t token)
{
	uint32_t idx = (uint32_t)token;
	struct zc_ch_lent_slot *s;
	zc_buf *buf;

	if (idx >= ch->lent_cap)
		return NULL;
	s = &ch->lent[idx];
	if (!s->buf || s->gen != (uint32_t)(token >> 32))
		return NULL;
	buf = s->buf;
	s->buf = NULL;
	s->next = ch->lent_free;
	ch->lent_free = idx;
	atomic_fetch_sub_explicit(&ch->lent_n, 1, memory_order_relaxed);
	return buf;
}

int zc_ch_lend(zc_channel *ch, zc_buf *buf, uint64_t *token)
{
	int err;

	pthread_mutex_lock(&ch->lend_lock);
	err = lent_add(ch, buf, token);
	pthread_mutex_unlock(&ch->lend_lock);
	return err;
}

void zc_ch_unlend(zc_channel *ch, uint64_t token)
{
	zc_buf *b;

	pthread_mutex_lock(&ch->lend_lock);
	b = lent_take(ch, token);
	pthread_mutex_unlock(&ch->lend_lock);
	zc_buf_release(b);
}

/* Everything still lent comes back: the peer is gone or the channel is
 * ending.  KREF because the peer may have given the pages to its kernel.
 * Released outside the lock: a release can run a foreign buffer's
 * callback, which takes other locks. */
void zc_ch_release_all_lent(zc_channel *ch)
{
	zc_buf *batch[BATCH];
	unsigned nb;
	uint32_t i = 0;

	do {
		nb = 0;
		pthread_mutex_lock(&ch->lend_lock);
		for (; i < ch->lent_cap && nb < BATCH; i++) {
			zc_buf *b = ch->lent[i].buf;

			if (!b)
				continue;
			lent_take(ch, (uint64_t)ch->lent[i].gen << 32 | i);
			zc_buf_mark_kref(b);
			batch[nb++] = b;
		}
		pthread_mutex_unlock(&ch->lend_lock);
		for (unsigned k = 0; k < nb; k++)
			zc_buf_release(batch[k]);
	} while (nb == BATCH);
}

/* ------------------------------------------- returns the peer sends us */

/* Take back the buffers the peer has returned.  Returns how many, or a
 * negative errno for a corrupt ring or a token we never handed out. */
int zc_ch_drain_returns(zc_channel *ch)
{
	zc_buf *batch[BATCH];
	uint64_t head, tail;
	int n = 0, err = 0;
	unsigned nb;

	if (!ch->rx.shm)
		return 0;
	tail = zc_ld_acq(&ch->rx.shm->ret_tail.v);
	if (tail == atomic_load_explicit(&ch->rx_ret_head, memory_order_relaxed))
		return 0;
	do {
		/* Release in batches outside the lock: a release can run a
		 * foreign buffer's callback, which takes other locks. */
		nb = 0;
		pthread_mutex_lock(&ch->lend_lock);
		head = atomic_load_explicit(&ch->rx_ret_head, memory_order_relaxed);
		tail = zc_ld_acq(&ch->rx.shm->ret_tail.v);
		if (tail - head > ch->rx.ret_cap)
			err = -EPROTO;
		while (!err && head != tail && nb < BATCH) {
			struct zc_ret_ent e;
			zc_buf *b;

			memcpy(&e, &ch->rx.ret[head & (ch->rx.ret_cap - 1)],
			       sizeof(e));
			b = e.type == ZC_ENT_RETURN ? lent_take(ch, e.token) : NULL;
			if (!b) {
				err = -EPROTO;
				break;
			}
			head++;
			if (e.flags & ZC_ENT_F_KREF)
				zc_buf_mark_kref(b);
			if (e.flags & ZC_ENT_F_READ)
				atomic_fetch_or_explicit(&b->flags,
							 ZC_BUF_PEER_READ,
							 memory_order_relaxed);
			batch[nb++] = b;
		}
		atomic_store_explicit(&ch->rx_ret_head, head, memory_order_relaxed);
		zc_st_rel(&ch->rx.shm->ret_head.v, head);
		pthread_mutex_unlock(&ch->lend_lock);
		for (unsigned i = 0; i < nb; i++)
			zc_buf_release(batch[i]);
		n += (int)nb;
	} while (!err && nb == BATCH);
	return err ? zc_ch_broke(ch, err) : n;
}

/* The peer has no channel state left: take back what it returned, then
 * everything else it held (conservatively marked as kernel-referenced). */
void zc_ch_peer_gone(zc_channel *ch)
{
	if (atomic_exchange(&ch->peer_gone, true))
		return;
	pthread_mutex_lock(&ch->ret_lock);
	ch->ret_dead = true;
	atomic_store(&ch->ovf_n, 0);
	pthread_mutex_unlock(&ch->ret_lock);
	zc_ch_drain_returns(ch);
	zc_ch_release_all_lent(ch);
}

/* ------------------------------------------ returns we send the peer */

/* Room on our return ring; a corrupt head (the peer wrote nonsense) means
 * we stop returning to it.  ret_lock. */
static uint64_t ret_space(zc_channel *ch)
{
	uint64_t used = ch->tx_ret_tail - zc_ld_acq(&ch->tx.shm->ret_head.v);

	if (used > ch->tx.ret_cap) {
		ch->ret_dead = true;
		return 0;
	}
	return ch->tx.ret_cap - used;
}

static void ret_put_locked(zc_channel *ch, const struct zc_ret_ent *e)
{
	memcpy(&ch->tx.ret[ch->tx_ret_tail & (ch->tx.ret_cap - 1)], e,
	       sizeof(*e));
	ch->tx_ret_tail++;
}

/* Move overflowed returns onto the ring, oldest first.  ret_lock.
 * Returns true if anything was published. */
static bool ret_flush_locked(zc_channel *ch)
{
	size_t n = atomic_load(&ch->ovf_n), i = 0;
	uint64_t space = n ? ret_space(ch) : 0;

	while (i < n && i < space)
		ret_put_locked(ch, &ch->ovf[i++]);
	if (i == 0)
		return false;
	memmove(ch->ovf, ch->ovf + i, (n - i) * sizeof(*ch->ovf));
	atomic_store(&ch->ovf_n, n - i);
	zc_st_rel(&ch->tx.shm->ret_tail.v, ch->tx_ret_tail);
	return true;
}

/* Queue a return; if the ring is full it waits in the overflow list (the
 * lender is not draining right now) and goes out with a later call. */
static bool ret_push_locked(zc_channel *ch, uint64_t token, uint32_t flags)
{
	struct zc_ret_ent e = { ZC_ENT_RETURN, flags, token };
	size_t n;

	ret_flush_locked(ch);
	if (ch->ret_dead)
		return false;
	n = atomic_load(&ch->ovf_n);
	if (n == 0 && ret_space(ch) > 0) {
		ret_put_locked(ch, &e);
		zc_st_rel(&ch->tx.shm->ret_tail.v, ch->tx_ret_tail);
		return true;
	}
	if (n == ch->ovf_cap) {
		size_t cap = ch->ovf_cap ? ch->ovf_cap * 2 : 256;
		struct zc_ret_ent *v = realloc(ch->ovf, cap * sizeof(*v));

		if (!v)
			return false;	/* the peer's buffer stays lent:
					 * lost capacity, never corruption */
		ch->ovf = v;
		ch->ovf_cap = cap;
	}
	ch->ovf[n] = e;
	atomic_store(&ch->ovf_n, n + 1);
	return false;
}

bool zc_ch_ret_push(zc_channel *ch, uint64_t token, uint32_t flags)
{
	bool sent;

	pthread_mutex_lock(&ch->ret_lock);
	sent = ret_push_locked(ch, token, flags);
	pthread_mutex_unlock(&ch->ret_lock);
	return sent;
}

bool zc_ch_ret_flush(zc_channel *ch)
{
	bool sent;

	if (!atomic_load_explicit(&ch->ovf_n, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&ch->ret_lock);
	sent = ret_flush_locked(ch);
	pthread_mutex_unlock(&ch->ret_lock);
	return sent;
}
