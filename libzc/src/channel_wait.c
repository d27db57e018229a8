/*
 * channel_wait.c - sleeping and waking: how a side with nothing to do waits
 * for its peer without a lost wakeup, and without a system call per
 * transfer while both are busy.
 *
 * The Dekker pattern: a consumer that finds nothing to do sets its shared
 * `sleeping` flag (seq_cst), checks again, and only then polls the socket.
 * A producer publishes, issues a seq_cst fence, and if the peer's flag is
 * set clears it and sends a doorbell byte (zc_ch_notify).  Blocking waits
 * first spin for a short while (SPIN_NS): on a busy channel the peer
 * answers within microseconds and a sleep/wake pair costs more than the
 * spin.
 *
 * Event loops: zc_channel_fd() turns readable when a doorbell or a control
 * message arrives, and a doorbell only goes to a side that announced it is
 * waiting -- which a non-blocking recv or send does when it returns -EAGAIN
 * (channel_recv.c, channel_send.c).  So: call recv (or send) until
 * -EAGAIN, then poll for POLLIN (after a send's -EAGAIN too: room on the
 * ring rings the same bell).
 *
 * One bell serves both waits, and a doorbell says nothing about which one
 * it is for; what matters is who may take it (zc_ch_nb_wait).  A loop that
 * waits for room and for data calls send and recv on each wake-up; if
 * whichever runs first took a bell meant for the other and went to sleep
 * having checked only its own wait, the descriptor would not be readable
 * any more and the loop would sleep with the channel ready -- the writer
 * waiting for room the reader made, the reader waiting for data that never
 * comes.  (zchttpd's FastCGI link did exactly that, rarely, under load.)
 *
 * While it waits a side keeps the channel alive: it reads the control
 * socket (doorbells, shared pools and files, CLOSE, EOF) and hands back
 * the RETURNs that did not fit the return ring, so the peer is never left
 * waiting for credits we hold.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include "channel_int.h"

#define SPIN_NS 50000			/* busy-wait before sleeping */
#define SPIN_PURE_NS 10000		/* ... the first part without yielding */

void zc_ch_notify(zc_channel *ch, unsigned want)
{
	static const unsigned char bell = ZC_CH_MSG_DOORBELL;
	_Atomic uint64_t *s = &ch->rx.shm->sleeping.v;

	atomic_thread_fence(memory_order_seq_cst);
	/* One bell wakes the peer for whatever it waited for: it looks at
	 * everything again when it wakes. */
	if ((atomic_load_explicit(s, memory_order_relaxed) & want) &&
	    atomic_exchange(s, 0))
		/* Never block: if the socket is full the peer's poll sees it
		 * readable anyway, which is all a doorbell has to achieve. */
		(void)zc_sock_send(ch->sock, &bell, 1, -1, MSG_DONTWAIT);
}

void zc_ch_flush_returns(zc_channel *ch)
{
	if (zc_ch_ret_flush(ch))
		zc_ch_notify(ch, ZC_RING_WANT_RETURNS);
}

/* Record the CPU we run on, for the peer's spin decision (refreshed on
 * every send, receive and wait, so the hint is never old).  Written only
 * when it changes: the line is shared with the peer. */
unsigned zc_ch_note_cpu(zc_channel *ch)
{
	int cpu = sched_getcpu();	/* rseq: a load, no system call */
	uint64_t v = cpu < 0 ? 0 : (uint64_t)cpu + 1;

	if (atomic_load_explicit(&ch->tx.shm->cpu.v, memory_order_relaxed) != v)
		atomic_store_explicit(&ch->tx.shm->cpu.v, v,
				      memory_order_relaxed);
	return (unsigned)v;
}

/*
 * Busy-wait a little before sleeping: a peer running on another CPU answers
 * within microseconds, much faster than a sleep and a doorbell.  Not when
 * the peer last ran on our own CPU -- it cannot make progress while we
 * spin.  After SPIN_PURE_NS we yield between checks, so on a crowded
 * machine the peer (or anyone else) gets the CPU.
 */
static int spin(zc_channel *ch, zc_ch_ready_fn ready)
{
	unsigned me = zc_ch_note_cpu(ch);
	uint64_t peer = atomic_load_explicit(&ch->rx.shm->cpu.v,
					     memory_order_relaxed);
	uint64_t t0 = zc_ch_now_ns(), t;

	if (me && peer == me)
		return ready(ch);
	for (unsigned i = 1;; i++) {
		int r = ready(ch);

		if (r)
			return r;
		if (i % 64 == 0) {
			t = zc_ch_now_ns() - t0;
			if (t > SPIN_NS)
				return 0;
			if (t > SPIN_PURE_NS)
				sched_yield();
		}
		zc_cpu_relax();
	}
}

int zc_ch_prepare_sleep(zc_channel *ch, zc_ch_ready_fn ready, unsigned want)
{
	int r;

	/* Or-ed in: an event loop may wait for data and room at once (a
	 * non-blocking recv and send that both said -EAGAIN). */
	atomic_fetch_or(&ch->tx.shm->sleeping.v, want);	/* seq_cst */
	r = ready(ch);
	if (r)
		atomic_fetch_and_explicit(&ch->tx.shm->sleeping.v, ~(uint64_t)want,
					  memory_order_relaxed);
	return r;
}

int zc_ch_wait(zc_channel *ch, zc_ch_ready_fn ready, bool intr,
	       unsigned want)
{
	/* An interruptible wait also watches the caller's interrupt
	 * descriptor: a signal handler that writes it cannot be lost the
	 * way a signal that lands just before poll is. */
	struct pollfd p[2] = { { .fd = ch->sock, .events = POLLIN },
			       { .fd = ch->intr_fd, .events = POLLIN } };
	nfds_t n = intr && ch->intr_fd >= 0 ? 2 : 1;
	int r;

	/* A side that waits owes its peer every wake-up first: the peer may
	 * be asleep waiting for what corked sends published. */
	zc_channel_ring(ch);
	r = spin(ch, ready);

	/* The socket is read after poll, not before: whatever waits there
	 * (a doorbell from before, a control message, EOF) makes poll return
	 * at once, and a read that finds nothing costs a system call. */
	while (r == 0) {
		zc_ch_flush_returns(ch);
		r = zc_ch_prepare_sleep(ch, ready, want);
		if (r)
			break;
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR && intr)
				r = -EINTR;
		} else if (n == 2 && p[1].revents) {
			r = -EINTR;
		}
		atomic_store_explicit(&ch->tx.shm->sleeping.v, 0,
				      memory_order_relaxed);
		if (r == 0)
			r = zc_ch_drain_sock(ch);
	}
	return r < 0 ? r : 0;
}

/*
 * The non-blocking wait, for every caller waiting for something on the
 * channel -- this one (own) and any earlier one still told -EAGAIN
 * (rx_waiting, tx_waiting).
 *
 * Alone (the common case: a recv waiting for data), it takes every
 * doorbell with one read of the socket (channel_ctl.c), announces its
 * wait (the flag bit: the peer rings for it), looks at its condition
 * again, and goes on or sleeps: a bell that came before the look is
 * answered by it, one after it wakes us.
 *
 * With another wait pending, a bell may be that one's, and must not be
 * taken from it:
 *
 *   1. count the doorbells now at the head of the socket, taking none;
 *   2. announce every wait (the flag bits: the peer rings for any of them);
 *   3. look at every wait's condition again;
 *   4. own is there: withdraw it, go on (the bells stay for later);
 *      another's is there: leave the bells, so the descriptor stays
 *      readable and that caller, called again, finds it;
 *      none is: take the bells counted in 1 -- they are answered, every
 *      wait has been looked at since they came -- and sleep.
 *
 * A bell is taken only when no wait's condition holds after it arrived, so
 * whenever one holds, a bell is still there (the peer rang when it made it
 * hold, the flag being set by 2) or its own caller saw it in 3.
 *
 * One path must break the rule: a received descriptor that names a pool
 * or file the peer shares only reaches the share by reading through the
 * doorbells in front of it (channel_ctl.c: bells_lost).  When after that
 * another wait's condition holds with no bell left, we ask the peer for
 * one (RING): it answers the next time it reads its socket, which the
 * RING itself wakes it for.
 */
int zc_ch_nb_wait(zc_channel *ch, unsigned own, zc_ch_ready_fn room_ready)
{
	unsigned want = 0;
	int bells, data = 0, room = 0;

	if (own & ZC_RING_WANT_DATA)
		ch->rx_waiting = true;
	if (own & ZC_RING_WANT_ROOM)
		ch->tx_waiting = true;
	if (ch->rx_waiting)
		want |= ZC_RING_WANT_DATA;
	if (ch->tx_waiting)
		want |= ZC_RING_WANT_ROOM;
	if (!(want & ~own) && (own == ZC_RING_WANT_DATA || room_ready)) {
		bells = zc_ch_take_bells(ch);
		ch->bells_lost = false;	/* no other caller to miss them */
		if (bells < 0)
			return bells;
		return zc_ch_prepare_sleep(ch, own == ZC_RING_WANT_DATA ?
					   zc_ch_data_ready : room_ready, own);
	}
	bells = zc_ch_peek_bells(ch);
	if (bells < 0)
		return bells;
	atomic_fetch_or(&ch->tx.shm->sleeping.v, want);	/* seq_cst */
	if (ch->rx_waiting)
		data = zc_ch_data_ready(ch);
	if (ch->tx_waiting && room_ready && (room = room_ready(ch)) < 0)
		return room;
	if (((own & ZC_RING_WANT_DATA) && data) ||
	    ((own & ZC_RING_WANT_ROOM) && room)) {
		atomic_fetch_and_explicit(&ch->tx.shm->sleeping.v,
					  ~(uint64_t)own, memory_order_relaxed);
		return 1;
	}
	if (data || room) {
		/* Another caller's: its bells stay -- or come again. */
		if (!bells && ch->bells_lost)
			zc_ch_ask_bell(ch);
		ch->bells_lost = false;
		return 0;
	}
	ch->bells_lost = false;
	return zc_ch_take_counted_bells(ch, bells);
}
