/*
 * channel_int.h - what the channel files share, and nobody else sees.
 *
 * A channel joins two processes by a UNIX socket plus shared descriptor
 * rings (Streamline-style) and shared pools.  What travels where:
 *
 *   socket   typed control messages only: the handshake (each side's ring
 *            region memfd), pool memfds (zc_pool_send), file descriptors,
 *            CLOSE, one-byte doorbells and RING.  It is also what the program
 *            polls, and its EOF is how we learn that the peer is gone.
 *   rings    descriptors: BUF (pool id, offset, length, generation, lend
 *            token, slice), FILE (file token, extent), MSG_END, and RETURN
 *            on a separate return ring (see ring.h).  While both sides are
 *            busy a transfer costs no system call at all.
 *
 * The files, one job each, each calling only the ones listed before it
 * (no file calls back into a file that calls it):
 *
 *   channel_registry.c  fd -> channel lookup, the list of all channels
 *   channel_lend.c      lend table (what the peer holds of ours) and the
 *                       return rings (credits, both directions)
 *   channel_ctl.c       the control socket: messages in, pools and files
 *                       shared with the peer, what it shared with us
 *   channel_hello.c     the handshake: ring regions created, checked, mapped
 *   channel_wait.c      sleeping and waking without lost wakeups
 *   channel.c           life cycle: open, pair, close, free, reaping
 *   channel_send.c      zc_channel_send, zc_channel_flush
 *   channel_recv.c      zc_channel_recv and zc_channel_peek, and the
 *                       RETURN a received buffer sends when it is released
 *
 * Cross-file functions are zc_ch_*; everything else is static to its file.
 * channel.h is the part other modules (cs.c) use.
 */
#ifndef ZC_CHANNEL_INT_H
#define ZC_CHANNEL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "internal.h"
#include "channel.h"
#include "ring.h"

#define ZC_CH_MAX_POOLS 1024u		/* pools shared per channel */
#define ZC_CH_MAX_FILES 1024u		/* files sent per channel */

/* Control messages.  The first byte says what follows; anything else is a
 * pool share in zc_pool_send's own format, checked by zc_pool_recv.
 * channel_ctl.c reads them all; channel_hello.c sends HELLO,
 * channel_wait.c DOORBELL, channel.c CLOSE (through zc_ch_send_close),
 * channel_wait.c RING (through zc_ch_ask_bell). */
enum {
	ZC_CH_MSG_HELLO = 0xC1,
	ZC_CH_MSG_FILE = 0xC2,
	ZC_CH_MSG_CLOSE = 0xC3,
	ZC_CH_MSG_RING = 0xC4,		/* "send me a doorbell" */
	ZC_CH_MSG_DOORBELL = 0xD0,
};

struct zc_ch_lent_slot {
	zc_buf *buf;		/* NULL: free */
	uint32_t gen;		/* bumped on reuse: stale tokens fail */
	uint32_t next;		/* free list */
};

struct zc_ch_imp_pool {
	uint64_t id;
	zc_pool *pool;
};

/* Each group of fields belongs to the file named above it; other files
 * only read what the comments say they read. */
struct zc_channel {
	/* channel.c: life cycle (peer_closed, peer_gone, broken are set
	 * wherever the news arrives, read everywhere) */
	atomic_int refs;	/* handle + each live foreign buffer + linger */
	int sock, socktype;
	unsigned owner_gen;	/* fork generation of the process using it */
	bool used;		/* sent or received since it was claimed */
	uint64_t serial;
	bool nonblock, closed, peer_closed;
	bool handshaking;	/* zc_channel_open_nb: the peer's HELLO not yet in */
	atomic_bool peer_gone, lingering;
	atomic_int broken;	/* sticky protocol error, 0 if none */

	/* channel_hello.c maps them; ring.h has the layout */
	struct zc_ring tx;	/* ours: we produce */
	struct zc_ring rx;	/* the peer's: we consume */

	/* channel_wait.c: what a non-blocking caller was told -EAGAIN for and
	 * has not had since (set and cleared by channel_send.c and
	 * channel_recv.c): its doorbells are not ours to take */
	bool rx_waiting;	/* a recv: data */
	bool tx_waiting;	/* a send: room for tx_wait_need slots and
				 * tx_wait_bytes bytes */
	size_t tx_wait_need;
	uint64_t tx_wait_bytes;
	bool bells_lost;	/* doorbells were taken while a caller waited,
				 * to reach a message behind them */
	int intr_fd;		/* zc_channel_set_interrupt: -1, or a
				 * descriptor whose readability ends an
				 * interruptible blocking wait */
	bool corked;		/* zc_channel_cork: data bells are owed */
	bool bell_owed;		/* a corked send published data */

	/* channel_send.c (tx_bytes is allocated and freed by channel.c) */
	unsigned sends;		/* for the occasional socket check */
	uint64_t tx_tail;	/* next data slot we fill */
	uint64_t tx_pub;	/* tail the peer can see */
	uint64_t tx_seen;	/* peer head we last accounted for */
	uint64_t tx_inring;	/* bytes published and not yet consumed */
	uint64_t tx_want;	/* bytes of the message waiting to go */
	size_t tx_need;		/* slots it needs (a blocking wait) */
	uint64_t *tx_bytes;	/* bytes per data slot (tx_inring upkeep) */
	zc_agg *tx_rest;	/* a message longer than the ring: its slices,
				 * from tx_rest_next on still to go */
	size_t tx_rest_next;
	uint64_t tx_msg_start;	/* slot of its first descriptor */

	/* channel_recv.c (channel.c releases rx_agg and rx_peeked at the
	 * end) */
	uint64_t rx_head;	/* next data slot we read */
	zc_agg *rx_agg;		/* message being assembled */
	zc_agg *rx_peeked;	/* whole message peeked, not yet received */

	/* channel_lend.c, lending side: what the peer holds of ours
	 * (channel.c and the registry read lent_n) */
	pthread_mutex_t lend_lock;
	struct zc_ch_lent_slot *lent;
	uint32_t lent_cap, lent_free;
	atomic_uint lent_n;
	_Atomic uint64_t rx_ret_head;

	/* channel_lend.c, returning side: RETURNs we produce (any thread) */
	pthread_mutex_t ret_lock;
	uint64_t tx_ret_tail;
	struct zc_ret_ent *ovf;	/* returns waiting for ring space */
	size_t ovf_cap;
	atomic_size_t ovf_n;
	bool ret_dead;		/* peer gone: returns are dropped */

	/* channel_ctl.c: what we sent (references held so ids stay
	 * unique) and what we received */
	zc_pool **sent_pools;
	uint32_t n_sent_pools, cap_sent_pools, last_pool;
	zc_file **sent_files;	/* index = file token */
	uint32_t n_sent_files;
	struct zc_ch_imp_pool *imp_pools;
	uint32_t n_imp_pools, cap_imp_pools, last_imp;
	zc_file **imp_files;	/* index = file token */

	/* channel_registry.c: all channels (its list lock) */
	zc_channel *prev, *next;
};

/* ------------------------------------------------------- small helpers */

/* Does this process speak for the channel (channel.c: "Ownership")? */
static inline bool zc_ch_owned(const zc_channel *ch)
{
	return ch->owner_gen == zc_fork_gen();
}

unsigned zc_ch_note_cpu(zc_channel *ch);

/* Every send and receive: this process speaks for the channel, and the
 * peer learns which CPU we run on. */
static inline void zc_ch_claim(zc_channel *ch)
{
	ch->owner_gen = zc_fork_gen();
	ch->used = true;
	zc_ch_note_cpu(ch);
}

/* Make err the channel's sticky error (the first one stays); returns err. */
static inline int zc_ch_broke(zc_channel *ch, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&ch->broken, &zero, err);
	return err;
}

static inline void zc_ch_get(zc_channel *ch)
{
	atomic_fetch_add_explicit(&ch->refs, 1, memory_order_relaxed);
}

/* A reference unless the channel is already being freed. */
static inline bool zc_ch_tryget(zc_channel *ch)
{
	int r = atomic_load_explicit(&ch->refs, memory_order_relaxed);

	while (r > 0) {
		if (atomic_compare_exchange_weak(&ch->refs, &r, r + 1))
			return true;
	}
	return false;
}

static inline uint64_t zc_ch_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 ready, 0 not yet, <0 error (what zc_ch_wait waits for). */
typedef int (*zc_ch_ready_fn)(zc_channel *ch);

/* Is there something for recv: a published descriptor not yet taken, or
 * the news that the peer is gone? */
static inline int zc_ch_data_ready(zc_channel *ch)
{
	return zc_ld_acq(&ch->rx.shm->data_tail.v) != ch->rx_head ||
	       ch->peer_closed || atomic_load(&ch->peer_gone);
}

/* ------------------------------------------------- channel_registry.c */

/* fd -> channel: set the slot to ch if it holds expect (-EBUSY if not). */
int zc_ch_reg_set(int fd, zc_channel *expect, zc_channel *ch);
void zc_ch_list_add(zc_channel *ch);
void zc_ch_list_del(zc_channel *ch);
/* References to this process's channels with buffers out on loan or
 * lingering, NULL-terminated (NULL if out of memory). */
zc_channel **zc_ch_snapshot_lending(void);
/* In a forked child: the registry's locks may have been held. */
void zc_ch_registry_forked(void);

/* ----------------------------------------------------- channel_lend.c */

void zc_ch_lend_init(zc_channel *ch);
void zc_ch_lend_free(zc_channel *ch);
/* Keep a reference to buf for the peer; *token names it. */
int zc_ch_lend(zc_channel *ch, zc_buf *buf, uint64_t *token);
/* Take back a lend the peer never saw (a send that failed). */
void zc_ch_unlend(zc_channel *ch, uint64_t token);
/* Take back what the peer returned: how many, or a negative errno. */
int zc_ch_drain_returns(zc_channel *ch);
/* Everything still lent comes back, marked KREF. */
void zc_ch_release_all_lent(zc_channel *ch);
/* The peer has no channel state left (EOF on the socket). */
void zc_ch_peer_gone(zc_channel *ch);
/* Queue a RETURN for token; true if it went onto the ring (then ring the
 * peer's bell: zc_ch_notify). */
bool zc_ch_ret_push(zc_channel *ch, uint64_t token, uint32_t flags);
/* Move overflowed RETURNs onto the ring; true if any went. */
bool zc_ch_ret_flush(zc_channel *ch);

/* ------------------------------------------------------ channel_ctl.c */

/* Read one message of exactly len bytes; *fd gets a passed descriptor or
 * -1. */
int zc_ch_read_msg(zc_channel *ch, void *buf, size_t len, int *fd);
/* Type byte of the next message; -EAGAIN if none, -EPIPE at EOF. */
int zc_ch_peek_type(int sock);
/* Handle the control messages already there (every doorbell in one read;
 * see drain() for when it stops early): 0, -EPIPE once the peer is gone,
 * or the channel's (now sticky) error. */
int zc_ch_drain_sock(zc_channel *ch);
/* The same, for zc_ch_nb_wait: how many doorbells it took, or a negative
 * errno as zc_ch_drain_sock's. */
int zc_ch_take_bells(zc_channel *ch);
/* For a wait that must leave doorbells to another caller: the doorbells at
 * the head of the socket, counted, not taken (control messages before
 * them are handled), or a negative errno as zc_ch_drain_sock's; then take
 * the n counted. */
int zc_ch_peek_bells(zc_channel *ch);
int zc_ch_take_counted_bells(zc_channel *ch, int n);
/* Share a pool / a file with the peer, once (ordering rule: before any
 * descriptor names it). */
int zc_ch_share_pool(zc_channel *ch, zc_pool *pool);
int zc_ch_share_file(zc_channel *ch, zc_file *file, uint32_t *token);
/* The peer's pool with this id / its file with this token (borrowed);
 * -EPROTO if the peer never shared it. */
int zc_ch_peer_pool(zc_channel *ch, uint64_t id, zc_pool **out);
int zc_ch_peer_file(zc_channel *ch, uint64_t token, zc_file **out);
void zc_ch_send_close(zc_channel *ch);
/* Ask the peer for a doorbell (it sends one when it next reads its
 * socket). */
void zc_ch_ask_bell(zc_channel *ch);
/* Drop every pool and file shared either way. */
void zc_ch_ctl_free(zc_channel *ch);

/* ---------------------------------------------------- channel_hello.c */

int zc_ch_hello_send(zc_channel *ch);
int zc_ch_hello_recv(zc_channel *ch);
/* The peer's HELLO once zc_ch_peek_type said `t` is next (or an error). */
int zc_ch_hello_take(zc_channel *ch, int t);
void zc_ch_rings_unmap(zc_channel *ch);

/* ----------------------------------------------------- channel_wait.c */

/* Wake the peer if it sleeps waiting for any of `want` (ZC_RING_WANT_*).
 * Any thread. */
void zc_ch_notify(zc_channel *ch, unsigned want);
/* zc_ch_ret_flush, and wake the peer if anything went. */
void zc_ch_flush_returns(zc_channel *ch);
/* Say we sleep waiting for `want` and ask ready() once more (the wish is
 * withdrawn again unless it says 0). */
int zc_ch_prepare_sleep(zc_channel *ch, zc_ch_ready_fn ready, unsigned want);
/* Block until ready() holds: 0, or <0 (-EINTR with intr on a signal). */
int zc_ch_wait(zc_channel *ch, zc_ch_ready_fn ready, bool intr,
	       unsigned want);
/* A non-blocking send (own ZC_RING_WANT_ROOM; room_ready says whether
 * the room it waits for is there) or recv (ZC_RING_WANT_DATA) about to say
 * -EAGAIN: 1 if what it waits for is there after all, 0 to say -EAGAIN
 * (the peer rings when it changes), or a negative errno. */
int zc_ch_nb_wait(zc_channel *ch, unsigned own, zc_ch_ready_fn room_ready);

/* ---------------------------------------------------------- channel.c */

void zc_ch_put(zc_channel *ch);
/* Reap closed channels whose lent buffers came back, if there are any. */
void zc_ch_reap_maybe(void);

/* ----------------------------------------------------- channel_send.c */

/* Move on the rest of a message longer than the ring: 0 when none is
 * left, -EAGAIN (non-blocking) while some is, or a negative errno. */
int zc_ch_push_rest(zc_channel *ch);
/* Is the room a non-blocking send was told -EAGAIN for there now?  (For
 * zc_ch_nb_wait.) */
int zc_ch_room_ready(zc_channel *ch);

#endif /* ZC_CHANNEL_INT_H */
