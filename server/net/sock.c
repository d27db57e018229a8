/*
 * sock.c - a connection's socket (sock.h): what its owner waits for, how
 * input gets into its buffer, and the plain record layer.
 *
 * The owner is in one of three modes, and the socket waits accordingly:
 *
 *   reading   input goes into s->in by itself.  On the io_uring loop a
 *             plain socket keeps a multishot receive armed (event.h's ring
 *             receives): requests land in the loop's provided buffers and
 *             are copied into s->in, with no epoll registration and no recv
 *             per request.  Otherwise epoll says when to read (HTTPS also
 *             on the io_uring loop: OpenSSL reads the socket itself).
 *   draining  the same, the bytes dropped.
 *   waiting   for readiness (sock_wait): epoll, and a ring receive is
 *             cancelled.  The owner reads itself (sock_read, sock_read_agg).
 *
 * Order is the one thing that must not break.  Bytes the kernel had
 * already received when a ring receive was cancelled still arrive after
 * the cancel: they are appended to s->in (to its overflow when it is full),
 * and until the receive's last call the socket is not read and its
 * readiness not reported (epoll is level-triggered: it reports again), so
 * the socket's bytes always come after them.  sock_in_next() says what
 * comes next for every read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "event.h"
#include "event_ring.h"
#include "sock.h"
#include "sock_int.h"

enum { M_NONE, M_READ, M_DRAIN, M_WAIT };

#define READ_EVENTS (EPOLLIN | EPOLLRDHUP)

/*
 * The most the overflow holds: what a ring receive delivers after the
 * buffer filled.  The receive is stopped as soon as the buffer is half full
 * and whenever the owner stops reading, so that is one io_uring_enter's
 * worth at most, which the loop's pool of provided buffers bounds (2 MiB,
 * event_uring.c) -- bytes epoll would have left in the socket's receive
 * buffer.  Measured: 400-2,000 pipelined requests against a client that
 * reads late (tests/helpers/pipeflood.py) put up to about 165 KB there
 * while the socket takes no output.  This is a last line; beyond it the
 * owner is told to close.
 */
#define OVER_MAX (8u << 20)

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);

/* ------------------------------------------------------------ plain */

static ssize_t plain_recv(void *ctx, void *buf, size_t len)
{
	struct zh_sock *s = ctx;
	ssize_t n = recv(s->fd, buf, len, 0);

	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return n;
}

static ssize_t plain_read_agg(struct zh_sock *s, zc_agg **agg, size_t want)
{
	return iol_read(s->fd, agg, want);
}

static ssize_t plain_send(struct zh_sock *s, zc_agg *out)
{
	return iol_write_sink(&s->sink, out);
}

static const struct sock_layer plain_layer = {
	.recv = plain_recv,
	.read_agg = plain_read_agg,
	.send = plain_send,
};

/* ------------------------------------------------------------ life */

int sock_env_init(struct sock_env *env, struct ev_loop *loop, size_t cap,
		  size_t tail, struct zh_tls *tls, struct tls_stats *stats)
{
	memset(env, 0, sizeof(*env));
	env->loop = loop;
	sock_bufs_init(&env->bufs, cap, tail, OVER_MAX);
	env->tls = tls;
	env->tls_stats = stats;
	return tls ? sock_tls_env_init(env) : 0;
}

void sock_env_fini(struct sock_env *env)
{
	sock_bufs_fini(&env->bufs);
	free(env->bounce);
	env->bounce = NULL;
}

int sock_init(struct zh_sock *s, struct sock_env *env, int fd,
	      unsigned flags, const struct sock_hooks *hooks, void *data)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->env = env;
	s->hooks = hooks;
	s->data = data;
	s->layer = &plain_layer;
	if (flags & SOCK_TLS) {
		int err = sock_tls_open(s);

		if (err)
			return err;
		s->layer = &sock_tls_layer;
		s->handshake = true;
	}
	s->src = (struct sock_in_src){ s->layer->recv, s->layer->decoded, s };
	/* OpenSSL reads the socket itself: HTTPS waits through epoll (or
	 * the ring's poll of it) for readiness, not for ring receives. */
	s->ring = !(flags & SOCK_TLS) && ev_has_ring(env->loop);
	/* Accepted from our own TCP listener, non-blocking: no need to
	 * probe what kind of descriptor it is. */
	zc_sink_init_tcp(&s->sink, fd, 1);
	/* Our own pool buffers reach a client once (a FastCGI answer read
	 * from a socket): a copy costs less than the detach a lent buffer
	 * costs its pool (zc.h).  Cached bodies are file extents or kernel
	 * buffers, lent as before. */
	zc_sink_copy_first_trip(&s->sink, 1);
	if (flags & SOCK_TRUST_EXTENTS)
		zc_sink_trust_extents(&s->sink, 1);
	return 0;
}

/* ------------------------------------------------------------ ring */

static void ring_stop(struct zh_sock *s)
{
	if (!s->rx_on)
		return;
	ev_recv_cancel(s->env->loop, s->fd);
	s->rx_on = false;
	s->rx_draining = true;
	s->rx_got = false;
}

static void ring_forget(struct zh_sock *s)
{
	if (s->rx_on || s->rx_draining)
		ev_recv_forget(s->env->loop, s->fd);
	s->rx_on = s->rx_draining = false;
	s->in.arriving = false;
}

static int wait_input(struct zh_sock *s);

/* A ring receive's call: bytes (n > 0), its end, or an error; `more`
 * false is its last. */
static void on_ring(struct ev_loop *loop, int fd, const char *buf, ssize_t n,
		    bool more, void *data)
{
	struct zh_sock *s = data;
	int err;

	(void)loop;
	(void)fd;
	if (!more) {
		s->rx_on = s->rx_draining = false;
		s->in.arriving = false;
	}
	if (n > 0) {
		if (s->mode != M_DRAIN) {	/* draining drops them */
			err = sock_in_arrive(&s->in, &s->env->bufs, buf,
					     (size_t)n);
			if (err) {
				s->hooks->read(s, err);	/* lost: close */
				return;
			}
			s->rx_got = true;
			/* Enough ahead: receive again when the owner
			 * reads again. */
			if (s->in.len > s->env->bufs.cap / 2 || s->in.over_len)
				ring_stop(s);
		}
	} else if (n != -ENOBUFS && n != -ECANCELED && n != -EINTR &&
		   n != -EAGAIN) {
		s->rx_eof = true;	/* what recv would say next */
	}
	if (s->mode == M_READ || s->mode == M_DRAIN) {
		if (s->rx_eof) {
			s->hooks->read(s, n < 0 ? n : 0);
			return;
		}
		if (n > 0 && s->mode == M_READ) {
			s->hooks->read(s, n);
			return;
		}
		if (!more && (err = wait_input(s)))	/* out of buffers:
							 * wait some other
							 * way */
			s->hooks->read(s, err);
		return;
	}
	/* Waiting for readiness: the receive was cancelled and epoll has
	 * the socket.  Once the last bytes are in, an owner that waits for
	 * input is told (the socket may have nothing more to wake it). */
	if (!more) {
		bool got = s->rx_got || s->in.over_len;

		s->rx_got = false;
		if (got && s->mode == M_WAIT && (s->want & SOCK_IN))
			s->hooks->ready(s, SOCK_IN);
	}
}

/* ------------------------------------------------------------ waiting */

/* Register the socket's epoll interest (it enters epoll only the first
 * time it has to wait for something). */
static int set_events(struct zh_sock *s, uint32_t events)
{
	if (s->in_epoll && events == s->events)
		return 0;
	s->events = events;
	if (!s->in_epoll) {
		if (!events)
			return 0;	/* nothing to wait for yet */
		s->in_epoll = true;
		return ev_add(s->env->loop, s->fd, events, on_io, s);
	}
	return ev_mod(s->env->loop, s->fd, events, on_io, s);
}

/* Input for a reading (or draining) owner: the ring receive if the socket
 * has one, else epoll. */
static int wait_input(struct zh_sock *s)
{
	if (s->ring) {
		if (s->rx_eof)
			return -ECONNRESET;	/* what recv would say */
		if (!s->rx_on && !s->rx_draining &&
		    !ev_recv_start(s->env->loop, s->fd, on_ring, s)) {
			s->rx_on = true;
			s->in.arriving = true;
		}
		if (s->rx_on || s->rx_draining) {
			/* A receive still draining ends in on_ring, which
			 * then waits again.  Input does not come through
			 * epoll meanwhile. */
			if (s->in_epoll && s->events) {
				ev_del(s->env->loop, s->fd);
				s->in_epoll = false;
				s->events = 0;
			}
			return 0;
		}
		/* No receive (no room on the ring): epoll, as without. */
	}
	return set_events(s, s->handshake_out ? EPOLLOUT : READ_EVENTS);
}

int sock_read_start(struct zh_sock *s)
{
	s->mode = M_READ;
	return wait_input(s);
}

int sock_drain_start(struct zh_sock *s)
{
	s->mode = M_DRAIN;
	return wait_input(s);
}

int sock_wait(struct zh_sock *s, unsigned want)
{
	/* Whatever epoll waits for now, the ring does not receive. */
	ring_stop(s);
	s->mode = M_WAIT;
	s->want = want;
	return set_events(s, (want & SOCK_IN ? EPOLLIN : 0) |
			     (want & SOCK_OUT ? EPOLLOUT : 0) |
			     (want & SOCK_HUP ? EPOLLRDHUP : 0));
}

unsigned sock_waits(const struct zh_sock *s)
{
	return s->mode == M_WAIT && s->in_epoll ? s->want : 0;
}

/* ------------------------------------------------------------ input */

/* Reading: the handshake first (HTTPS), then what is there. */
static void do_read(struct zh_sock *s)
{
	ssize_t n;

	if (s->mode == M_DRAIN) {
		char sink[4096];

		n = s->src.recv(s, sink, sizeof(sink));
		if (n == 0 || (n < 0 && n != -EAGAIN))
			s->hooks->read(s, n);
		return;
	}
	if (s->handshake) {
		int err = s->layer->handshake(s);

		if (err == -EAGAIN || err == -EINPROGRESS) {
			s->handshake_out = err == -EINPROGRESS;
			err = set_events(s, s->handshake_out ? EPOLLOUT
							     : READ_EVENTS);
			if (err)
				s->hooks->read(s, err);
			return;
		}
		if (err) {
			s->hooks->read(s, err);
			return;
		}
		/* Established: the request may be here already. */
		s->handshake = s->handshake_out = false;
	}
	n = sock_read(s);
	if (n == -EAGAIN) {
		/* Nothing yet (a new connection whose request is not here,
		 * or a spurious wake-up): wait, holding no buffer if there is
		 * nothing in it (sock_in_read gave it back). */
		n = wait_input(s);
		if (n)
			s->hooks->read(s, n);
		return;
	}
	s->hooks->read(s, n);
}

void sock_try_read(struct zh_sock *s)
{
	s->mode = M_READ;
	do_read(s);
}

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct zh_sock *s = data;

	(void)loop;
	(void)fd;
	if (s->mode == M_WAIT) {
		/* A cancelled ring receive's last bytes come first: input
		 * and hang-ups wait for its last call (they are reported
		 * again, and then). */
		if (s->rx_draining && !(s->want & SOCK_OUT))
			return;
		s->hooks->ready(s, (ev & EPOLLIN ? SOCK_IN : 0) |
				   (ev & EPOLLOUT ? SOCK_OUT : 0) |
				   (ev & EPOLLRDHUP ? SOCK_HUP : 0) |
				   (ev & (EPOLLHUP | EPOLLERR) ? SOCK_ERR : 0));
		return;
	}
	/* Reading; the handshake may wait for room (EPOLLOUT). */
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) || s->handshake)
		do_read(s);
}

bool sock_holds(struct zh_sock *s)
{
	enum sock_in_next next = sock_in_next(&s->in, &s->src);

	return next == SOCK_IN_HELD || next == SOCK_IN_DECODED;
}

ssize_t sock_read(struct zh_sock *s)
{
	return sock_in_read(&s->in, &s->env->bufs, &s->src);
}

ssize_t sock_read_agg(struct zh_sock *s, zc_agg **agg, size_t want)
{
	size_t k;

	switch (sock_in_next(&s->in, &s->src)) {
	case SOCK_IN_HELD:
		k = want < s->in.over_len ? want : s->in.over_len;
		if ((!*agg && zc_agg_create(agg)) ||
		    zc_agg_append_bytes(*agg, NULL, s->in.over, k))
			return -ENOMEM;
		sock_in_take_over(&s->in, k);
		return (ssize_t)k;
	case SOCK_IN_WAIT:
		return -EAGAIN;
	default:
		return s->layer->read_agg(s, agg, want);
	}
}

bool sock_peek(struct zh_sock *s)
{
	char b;

	return recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* ------------------------------------------------------------ output */

ssize_t sock_send(struct zh_sock *s, zc_agg *out)
{
	return s->layer->send(s, out);
}

bool sock_sends_by_reference(const struct zh_sock *s)
{
	return !s->layer->by_reference || s->layer->by_reference(s);
}

void sock_shutdown(struct zh_sock *s)
{
	if (s->layer->shutdown)
		s->layer->shutdown(s);
	shutdown(s->fd, SHUT_WR);
}

void sock_close(struct zh_sock *s)
{
	/* close() takes the fd out of epoll (nothing else holds it); just
	 * make sure a stale event later in this batch finds no handler. */
	ev_forget(s->env->loop, s->fd);
	ring_forget(s);
	if (s->layer->close)
		s->layer->close(s);	/* close_notify first, if it can */
	close(s->fd);
	s->fd = -1;
	sock_in_free(&s->in, &s->env->bufs);
}
