/*
 * conn_ring.c - a connection's input on the io_uring loop (--event
 * io_uring; event.h's ring receives).
 *
 * While a connection waits for input -- IDLE, READING a head, LINGER -- a
 * multishot receive stays armed on its socket: requests arrive in the
 * loop's provided buffers and are copied into the connection's input
 * buffer, with no epoll registration and no recv system call per request.
 * Everything else a connection waits for (a socket that takes no more
 * output, a handler, a request body the handler reads from the socket
 * itself) stays with epoll, so when the connection enters one of those
 * states the receive is cancelled (conn_ring_stop).
 *
 * Order is the one thing that must not break.  Bytes the kernel had already
 * received when the cancel went in still arrive afterwards: they are
 * appended to the input buffer (or, if that is full, to a bounded spill
 * behind it), and until the receive's last call nobody reads the socket
 * (on_io waits; see conn.c), so the socket's bytes always come after them.
 * Readers of input take the spill first (conn_refill, conn_spill_take).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

/*
 * Append what the ring received to the input.  Whatever does not fit goes
 * to the spill, which grows as needed.  It holds only what the kernel had
 * already received for us when the receive was stopped (it is stopped as
 * soon as the input buffer is half full, and whenever the connection
 * stops reading): one io_uring_enter's worth at most, which the loop's
 * pool of provided buffers bounds (2 MiB, event_uring.c) -- bytes epoll
 * would have left in the socket's receive buffer.  Measured: 400-2,000
 * pipelined requests against a client that reads late (tests/helpers/
 * pipeflood.py) spill up to about 165 KB while the socket takes no output.
 * SPILL_MAX is a last line; beyond it, or without memory, false (the
 * connection is dropped).
 */
static bool take_input(struct zh_conn *c, const char *buf, size_t n)
{
	if (!c->in) {
		c->in = conn_in_get(c->w);
		c->arena_used = 0;
		if (!c->in)
			return false;
	}
	if (!c->spill_len) {
		size_t k = IN_CAP - c->in_len < n ? IN_CAP - c->in_len : n;

		memcpy(c->in + c->in_len, buf, k);
		c->in_len += k;
		buf += k;
		n -= k;
	}
	if (c->in_len > IN_CAP / 2 || c->spill_len)
		conn_ring_stop(c);	/* enough ahead: read again when
					 * the connection wants input */
	if (!n)
		return true;
	if (n > SPILL_MAX - c->spill_len)
		return false;
	if (c->spill_len + n > c->spill_cap) {
		size_t cap = c->spill_cap ? c->spill_cap : 4 * EV_RECV_MAX;
		char *p;

		while (cap < c->spill_len + n)
			cap *= 2;
		p = realloc(c->spill, cap);
		if (!p)
			return false;
		c->spill = p;
		c->spill_cap = cap;
	}
	memcpy(c->spill + c->spill_len, buf, n);
	c->spill_len += n;
	return true;
}

bool conn_spill_take(struct zh_conn *c)
{
	size_t k;

	if (!c->spill_len || !c->in || c->in_len == IN_CAP)
		return false;
	k = IN_CAP - c->in_len < c->spill_len ? IN_CAP - c->in_len
					       : c->spill_len;
	memcpy(c->in + c->in_len, c->spill, k);
	c->in_len += k;
	memmove(c->spill, c->spill + k, c->spill_len - k);
	c->spill_len -= k;
	return true;
}

static bool waits_for_input(const struct zh_conn *c)
{
	return c->state == C_IDLE || c->state == C_READING ||
	       c->state == C_LINGER;
}

static void on_ring(struct ev_loop *loop, int fd, const char *buf, ssize_t n,
		    bool more, void *data)
{
	struct zh_conn *c = data;

	(void)loop;
	(void)fd;
	if (!more)
		c->rx_on = c->rx_draining = false;
	if (n > 0) {
		if (c->state == C_LINGER)
			;	/* read and dropped, as on_io would */
		else if (!take_input(c, buf, (size_t)n)) {
			conn_free(c);
			return;
		}
	} else if (n != -ENOBUFS && n != -ECANCELED && n != -EINTR &&
		   n != -EAGAIN) {
		c->rx_eof = true;	/* what recv would say next */
	}
	if (waits_for_input(c)) {
		if (c->rx_eof) {
			/* Peer closed (or reset).  Nothing in flight is owed
			 * to it. */
			conn_free(c);
			return;
		}
		if (n > 0 && c->state != C_LINGER) {
			conn_got_input(c);
			return;
		}
		if (!more)	/* out of buffers: wait some other way */
			conn_want_input(c);
		return;
	}
	/* WRITING or WAITING: the receive was cancelled; epoll has the
	 * socket.  Once the last bytes are in, a handler that reads the
	 * request body takes them from the buffer (the socket may have
	 * nothing more to wake it with). */
	if (!more && c->state == C_WAITING && c->active &&
	    c->req.want_input && !c->req.finished && !c->req.redirect_pending &&
	    (c->in_len > c->req.head_len || c->spill_len))
		c->req.handler->input(&c->req);
}

enum ring_wait conn_ring_wait(struct zh_conn *c)
{
	struct ev_loop *loop = c->w->loop;

	if (c->rx_eof) {
		conn_free(c);
		return RING_FREED;
	}
	if (!c->rx_on && !c->rx_draining) {
		if (ev_recv_start(loop, c->fd, on_ring, c))
			return RING_NO;	/* epoll, as without a ring */
		c->rx_on = true;
	}
	/* A receive still draining ends in on_ring, which then waits
	 * again.  Input does not come through epoll meanwhile. */
	if (c->in_epoll && c->events) {
		ev_del(loop, c->fd);
		c->in_epoll = false;
		c->events = 0;
	}
	return RING_WAITS;
}

void conn_ring_stop(struct zh_conn *c)
{
	if (!c->rx_on)
		return;
	ev_recv_cancel(c->w->loop, c->fd);
	c->rx_on = false;
	c->rx_draining = true;
}

void conn_ring_forget(struct zh_conn *c)
{
	if (c->rx_on || c->rx_draining)
		ev_recv_forget(c->w->loop, c->fd);
	c->rx_on = c->rx_draining = false;
	free(c->spill);
	c->spill = NULL;
	c->spill_len = c->spill_cap = 0;
}
