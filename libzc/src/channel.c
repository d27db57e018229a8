/*
 * channel.c - a channel's life: open, pair, close, free, and reaping the
 * closed channels that wait for their lent buffers.  (channel_int.h maps
 * the other channel files.)
 *
 * A channel is reference-counted: its handle, each buffer it delivered
 * that is still alive (channel_recv.c), and a lingering close hold one;
 * the last one frees it, on whatever thread that happens.
 *
 * Endings: zc_channel_close sends CLOSE; the peer's recv then drains what
 * was already published and returns -EPIPE.  Buffers lent to a peer stay
 * lent after our close until the peer returns them: the closed channel
 * "lingers" (socket and rings kept) and is reaped later, by the next
 * close, an occasional send, or zc_channel_reclaim.  EOF on the socket
 * means the peer process has no channel state left at all (it exited, was
 * killed, or closed with nothing of ours in hand): what is still lent is
 * released (channel_lend.c).
 *
 * Ownership and fork: both processes inherit both ends of a pair made
 * before fork, and each will use one of them.  An end belongs to the
 * process that last sent or received on it (it "claims" it, zc_ch_claim):
 * only that process speaks the protocol for it -- sends CLOSE, returns
 * tokens, releases what is lent.  Closing an end this process never used
 * (the other process's end) is silent: memory and descriptor go, the peer
 * hears nothing.  Hand each end to one process and do not use it on both
 * sides of a fork.  The fork generation is libzc's (process.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "channel_int.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint n_lingering;
static atomic_uint_fast64_t next_serial = 1;

static void on_fork_child(void)
{
	/* Another thread may have held these at fork time. */
	zc_ch_registry_forked();
	pthread_mutex_init(&reap_lock, NULL);
}

static void channel_init(void)
{
	zc_fork_child_hook(on_fork_child);
}

/* ------------------------------------------------------------ creation */

static int chan_new(int sock, int socktype, zc_channel **out)
{
	zc_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	pthread_once(&init_once, channel_init);
	atomic_init(&ch->refs, 1);
	ch->sock = sock;
	ch->socktype = socktype;
	ch->intr_fd = -1;
	ch->owner_gen = zc_fork_gen();
	ch->serial = atomic_fetch_add(&next_serial, 1);
	ch->tx_bytes = calloc(ZC_RING_DATA_CAP, sizeof(*ch->tx_bytes));
	if (!ch->tx_bytes) {
		free(ch);
		return -ENOMEM;
	}
	zc_ch_lend_init(ch);
	*out = ch;
	return 0;
}

/* Free everything.  close_sock is false when opening failed: the socket
 * then still belongs to the caller. */
static void chan_free(zc_channel *ch, bool close_sock)
{
	zc_ch_list_del(ch);
	if (zc_ch_owned(ch)) {
		zc_ch_drain_returns(ch);
		zc_ch_release_all_lent(ch);
	}	/* else: the lent references belong to the other process */
	zc_agg_release(ch->rx_agg);
	zc_agg_release(ch->rx_peeked);
	zc_agg_release(ch->tx_rest);
	zc_ch_ctl_free(ch);
	zc_ch_rings_unmap(ch);
	if (close_sock)
		close(ch->sock);
	zc_ch_lend_free(ch);
	free(ch->tx_bytes);
	free(ch);
}

void zc_ch_put(zc_channel *ch)
{
	if (atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) == 1)
		chan_free(ch, true);
}

/* Open a socket type this module speaks; the socket must be connected. */
static int check_socket(int sock, int *type)
{
	int domain;
	socklen_t len = sizeof(domain);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (sock < 0)
		return -EBADF;
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return -errno;
	len = sizeof(*type);
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, type, &len) < 0)
		return -errno;
	if (domain != AF_UNIX ||
	    (*type != SOCK_SEQPACKET && *type != SOCK_STREAM))
		return -EPROTOTYPE;
	if (getpeername(sock, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	return 0;
}

static int chan_register(zc_channel *ch)
{
	int err = zc_ch_reg_set(ch->sock, NULL, ch);

	if (!err)
		zc_ch_list_add(ch);
	return err;
}

/* Both ways of opening: check the socket, make the channel, send our
 * HELLO.  The socket itself is made blocking (a control message is never
 * left half sent); *fl keeps its old flags to restore on failure. */
static int chan_start(int sock, zc_channel **out, int *fl)
{
	zc_channel *ch;
	int type, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((err = check_socket(sock, &type)))
		return err;
	if (zc_channel_from_fd(sock))
		return -EBUSY;
	*fl = fcntl(sock, F_GETFL);
	if (*fl < 0)
		return -errno;
	if ((err = chan_new(sock, type, &ch)))
		return err;
	if ((*fl & O_NONBLOCK) && fcntl(sock, F_SETFL, *fl & ~O_NONBLOCK) < 0)
		err = -errno;
	if (!err)
		err = zc_ch_hello_send(ch);
	if (err) {
		fcntl(sock, F_SETFL, *fl);
		chan_free(ch, false);
		return err;
	}
	*out = ch;
	return 0;
}

int zc_channel_open(int sock, zc_channel **out)
{
	int fl, err = chan_start(sock, out, &fl);

	if (err)
		return err;
	/* We wait for the peer's HELLO with poll(). */
	err = zc_ch_hello_recv(*out);
	if (!err)
		err = chan_register(*out);
	if (err) {
		fcntl(sock, F_SETFL, fl);
		chan_free(*out, false);
		*out = NULL;
	}
	return err;
}

int zc_channel_open_nb(int sock, zc_channel **out)
{
	int fl, err = chan_start(sock, out, &fl);

	if (err)
		return err;
	/* The channel's calls do not block; the handshake completes when
	 * the peer's HELLO is there (zc_channel_handshake). */
	(*out)->nonblock = true;
	(*out)->handshaking = true;
	return 0;
}

int zc_channel_handshake(zc_channel *ch)
{
	int err;

	if (!ch)
		return -EINVAL;
	if (!ch->handshaking)
		return 0;
	err = zc_ch_peek_type(ch->sock);
	if (err == -EAGAIN)
		return -EAGAIN;
	err = zc_ch_hello_take(ch, err);
	if (!err)
		err = chan_register(ch);
	if (err) {
		atomic_store(&ch->broken, err);
		return err;
	}
	ch->handshaking = false;
	return 0;
}

int zc_channel_pair(zc_channel **a, zc_channel **b)
{
	zc_channel *ch[2] = { NULL, NULL };
	int sv[2], err = 0;

	if (!a || !b)
		return -EINVAL;
	*a = *b = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	for (int i = 0; i < 2 && !err; i++)
		err = chan_new(sv[i], SOCK_SEQPACKET, &ch[i]);
	/* Both hellos go out before either is read: one thread does both
	 * ends, and the socket buffers the messages. */
	for (int i = 0; i < 2 && !err; i++)
		err = zc_ch_hello_send(ch[i]);
	for (int i = 0; i < 2 && !err; i++)
		err = zc_ch_hello_recv(ch[i]);
	for (int i = 0; i < 2 && !err; i++)
		err = chan_register(ch[i]);
	if (err) {
		for (int i = 0; i < 2; i++) {
			if (!ch[i]) {
				close(sv[i]);
				continue;
			}
			zc_ch_reg_set(sv[i], ch[i], NULL);
			chan_free(ch[i], true);
		}
		return err;
	}
	*a = ch[0];
	*b = ch[1];
	return 0;
}

/* ---------------------------------------------------------- accessors */

int zc_channel_fd(const zc_channel *ch)
{
	return ch ? ch->sock : -EINVAL;
}

int zc_channel_set_nonblock(zc_channel *ch, int on)
{
	if (!ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	ch->nonblock = on != 0;
	return 0;
}

int zc_channel_set_interrupt(zc_channel *ch, int fd)
{
	if (!ch || fd < -1)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	ch->intr_fd = fd;
	return 0;
}

uint64_t zc_channel_serial(const zc_channel *ch)
{
	return ch ? ch->serial : 0;
}

unsigned zc_channel_lent(const zc_channel *ch)
{
	return ch ? atomic_load(&((zc_channel *)ch)->lent_n) : 0;
}

/* --------------------------------------------------------------- close */

void zc_channel_close(zc_channel *ch)
{
	if (!ch || ch->closed)
		return;
	ch->closed = true;
	if (ch->handshaking) {
		/* Never registered, nothing lent or received yet. */
		chan_free(ch, true);
		return;
	}
	zc_ch_reg_set(ch->sock, ch, NULL);
	/* A partial message: its buffers go back to the peer. */
	zc_agg_release(ch->rx_agg);
	ch->rx_agg = NULL;
	zc_agg_release(ch->rx_peeked);
	ch->rx_peeked = NULL;
	/* The rest of a message not flushed: never sent (the peer drops the
	 * part it has at our CLOSE). */
	zc_agg_release(ch->tx_rest);
	ch->tx_rest = NULL;
	if (zc_ch_owned(ch) && ch->used && !atomic_load(&ch->broken) &&
	    !atomic_load(&ch->peer_gone)) {
		zc_ch_send_close(ch);
		zc_ch_flush_returns(ch);
		zc_ch_drain_returns(ch);
		if (atomic_load(&ch->lent_n) > 0) {
			/* The peer still reads our memory: keep the channel
			 * until it gives it back (see reap_one). */
			zc_ch_get(ch);
			atomic_store(&ch->lingering, true);
			atomic_fetch_add(&n_lingering, 1);
		}
	}
	zc_ch_put(ch);
	zc_ch_reap_maybe();
}

/* ---------------------------------------------------- reclaim and reaping */

/* A closed channel whose peer still held our buffers: collect returns,
 * notice the peer's end, and let it go when nothing is lent any more. */
static int reap_one(zc_channel *ch)
{
	int n;

	pthread_mutex_lock(&reap_lock);
	n = zc_ch_drain_returns(ch);
	if (atomic_load(&ch->lingering)) {
		zc_ch_drain_sock(ch);	/* EOF: the peer is gone, all comes back */
		if ((atomic_load(&ch->lent_n) == 0 ||
		     atomic_load(&ch->peer_gone) ||
		     atomic_load(&ch->broken)) &&
		    atomic_exchange(&ch->lingering, false)) {
			atomic_fetch_sub(&n_lingering, 1);
			zc_ch_put(ch);
		}
	}
	pthread_mutex_unlock(&reap_lock);
	return n > 0 ? n : 0;
}

static int reclaim_once(void)
{
	zc_channel **v = zc_ch_snapshot_lending();
	int total = 0;

	if (!v)
		return 0;
	for (size_t i = 0; v[i]; i++) {
		/* An open channel's socket belongs to its thread: only the
		 * return ring (lend_lock) is touched here. */
		int n;

		if (atomic_load(&v[i]->lingering))
			n = reap_one(v[i]);
		else
			n = zc_ch_drain_returns(v[i]);
		total += n > 0 ? n : 0;
	}
	for (size_t i = 0; v[i]; i++)
		zc_ch_put(v[i]);
	free(v);
	return total;
}

void zc_ch_reap_maybe(void)
{
	if (atomic_load_explicit(&n_lingering, memory_order_relaxed))
		reclaim_once();
}

int zc_channel_reclaim(int wait_ms)
{
	uint64_t deadline = zc_ch_now_ns() +
			    (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000u;
	struct timespec pause = { 0, 200000 };
	int n;

	while ((n = reclaim_once()) == 0 && zc_ch_now_ns() < deadline)
		nanosleep(&pause, NULL);
	return n;
}
