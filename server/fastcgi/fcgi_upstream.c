/*
 * fcgi_upstream.c - FastCGI backend connections (see fcgi_upstream.h).
 *
 * The life of a link:
 *
 *   CONNECTING  non-blocking connect(2) in progress (TCP; a UNIX socket
 *               connects at once or fails)
 *   HANDSHAKE   zero-copy transport: the libzc channel's handshake, also
 *               non-blocking (the application answers it when it accepts)
 *   IDLE        in the backend's idle list, reading only to notice that
 *               the backend closed it; closed after --keepalive-timeout
 *   ACTIVE      serving requests (one, or on the zero-copy transport up to
 *               --fastcgi-pipeline, in a FIFO): records flow both ways;
 *               progress is bounded by --fastcgi-timeout, re-armed by every
 *               read or write that moved something
 *
 * Requests in flight.  The FIFO's head receives the records (they carry
 * its request id); the tail is the request whose records are being sent.
 * Another request joins the FIFO only when the tail's records have all
 * gone, so the application reads each request whole, one after another.
 * A request whose client went away stays in the FIFO without a client:
 * its records are dropped until its END_REQUEST.
 *
 * Wake-ups.  The channel is corked: a request sent does not wake the
 * application at once; the link rings before the loop sleeps
 * (on_link_ring), once for everything one turn of the loop sent.
 *
 * Reading.  Standard transport: iol_read() puts what the socket has into
 * pool buffers (the one copy, from the kernel), appended to `rx`.
 * Zero-copy transport: each channel message is an aggregate of the
 * application's buffers and file extents, appended to `rx` by reference.
 * Either way `rx` is then the record stream, and records are cut from it
 * with pointer work: a record's content is a sub-aggregate handed to the
 * client, never copied.
 *
 * Callbacks into the client may release or abort the link, or fail it;
 * a link therefore never frees itself while its own code is on the stack
 * (`busy`): the close is done when that code unwinds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errlog.h"
#include "fastcgi.h"
#include "fcgi_upstream.h"
#include "zc_channel.h"
#include "zchttpd.h"

#define READ_CHUNK (256u << 10)		/* one iol_read */
#define READ_BUDGET (1u << 20)		/* per wake-up, then others' turn */
#define RX_MAX (4u << 20)		/* received and not delivered */
#define TX_LOW_WATER (64u << 10)	/* the client may send more */

enum link_state { L_CONNECTING, L_HANDSHAKE, L_IDLE, L_ACTIVE };

/* A request in flight; cl NULL: gone, its records dropped. */
struct inflight {
	struct fcgi_client *cl;
	uint16_t id;
};

struct fcgi_upstream {
	const struct zh_fcgi_route *route;
	struct zh_worker *w;
	struct fcgi_link *idle;		/* most recently used first */
	struct fcgi_link *links;	/* every link (all_next) */
	unsigned nlinks;		/* every link, whatever its state */
	unsigned max_links;		/* --fastcgi-conns, or fewer: as many
					 * as spawned processes serve us */
	struct fcgi_client *qhead, *qtail;
	unsigned nqueued;
};

struct fcgi_link {
	struct fcgi_upstream *up;
	struct fcgi_link *next;		/* idle list */
	struct fcgi_link *all_next;	/* the upstream's list of links */
	enum link_state state;
	int fd;				/* what epoll watches */
	zc_channel *ch;			/* zero-copy transport, or NULL */
	zc_sink sink;			/* standard transport */
	zc_source source;
	struct inflight fifo[ZH_FCGI_PIPELINE_MAX];
	unsigned head, n;		/* fifo[head] receives; n in flight */
	bool tail_sent;			/* the newest request sent records */
	bool tail_whole;		/* ... all of them */
	uint16_t last_id;		/* the newest request's id */
	zc_agg *tx, *rx;
	uint32_t events;
	bool held;			/* the client holds delivery back */
	bool eof;			/* the backend closed */
	int busy;			/* our code is on the stack */
	bool doomed;			/* close when it unwinds */
	struct ev_post post;		/* pumped before the loop sleeps */
	struct ev_post ring;		/* the channel rung before it sleeps */
	struct ev_timer timer;
};

#define link_of_timer(t) \
	((struct fcgi_link *)((char *)(t) - offsetof(struct fcgi_link, timer)))

static void on_link_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);
static void link_pump(struct fcgi_link *l);
static void on_link_posted(struct ev_post *p);
static void on_link_ring(struct ev_post *p);
static void link_post(struct fcgi_link *l);

static struct inflight *fl_at(struct fcgi_link *l, unsigned i)
{
	return &l->fifo[(l->head + i) % ZH_FCGI_PIPELINE_MAX];
}

static struct inflight *fl_head(struct fcgi_link *l)
{
	return fl_at(l, 0);
}

static struct inflight *fl_tail(struct fcgi_link *l)
{
	return fl_at(l, l->n - 1);
}

/* The head leaves the FIFO. */
static void fl_shift(struct fcgi_link *l)
{
	l->head = (l->head + 1) % ZH_FCGI_PIPELINE_MAX;
	l->n--;
}

static struct inflight *fl_find(struct fcgi_link *l,
				const struct fcgi_client *cl)
{
	for (unsigned i = 0; i < l->n; i++)
		if (fl_at(l, i)->cl == cl)
			return fl_at(l, i);
	return NULL;
}

static struct fcgi_upstream *upstream_of(struct zh_worker *w,
					 const struct zh_fcgi_route *rt)
{
	return &w->upstreams[rt - w->cfg->fcgi];
}

/* ------------------------------------------------------------ life */

static void link_free(struct fcgi_link *l)
{
	struct fcgi_upstream *up = l->up;
	struct fcgi_link **pp;

	for (pp = &up->idle; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	for (pp = &up->links; *pp; pp = &(*pp)->all_next)
		if (*pp == l) {
			*pp = l->all_next;
			break;
		}
	ev_unpost(&l->post);
	ev_unpost(&l->ring);
	ev_timer_disarm(&l->timer);
	ev_forget(up->w->loop, l->fd);
	if (l->ch)
		zc_channel_close(l->ch);	/* closes its socket */
	else
		close(l->fd);
	zc_agg_release(l->tx);
	zc_agg_release(l->rx);
	up->nlinks--;
	free(l);
}

static void link_set_events(struct fcgi_link *l, uint32_t events)
{
	if (events == l->events)
		return;
	l->events = events;
	if (ev_mod(l->up->w->loop, l->fd, events, on_link_io, l))
		l->doomed = true;
}

static void on_link_timeout(struct ev_loop *loop, struct ev_timer *t);

static void link_arm(struct fcgi_link *l, bool idle)
{
	struct zh_worker *w = l->up->w;

	ev_timer_arm(w->loop, idle ? &w->t_fcgi_idle : &w->t_fcgi, &l->timer,
		     on_link_timeout);
}

static int link_open(struct fcgi_upstream *up, struct fcgi_link **out);
static void fail_queue(struct fcgi_upstream *up, int status);

/* A link is gone.  If it had been connected, the backend may well be
 * fine (only that connection ended): requests still queued get a new link
 * if there is room.  If it never connected, the backend is not there:
 * the queue fails with `status` once no link is left that could serve
 * it (retrying would only spin). */
static void link_destroy(struct fcgi_link *l, int status)
{
	struct fcgi_upstream *up = l->up;
	bool was_connected = l->state != L_CONNECTING &&
			     l->state != L_HANDSHAKE;
	struct fcgi_link *fresh;

	link_free(l);
	if (was_connected && up->qhead && up->nlinks < up->max_links &&
	    link_open(up, &fresh) == 0)
		return;
	fail_queue(up, status);
}

static void link_fail(struct fcgi_link *l, int status);

/* The link is not to be reused: requests still in flight on it fail
 * (502), and it ends now or when our own code unwinds. */
static void link_close(struct fcgi_link *l)
{
	link_fail(l, 502);
}

/* The first request of the backend's queue, taken off it. */
static struct fcgi_client *queue_pop(struct fcgi_upstream *up)
{
	struct fcgi_client *cl = up->qhead;

	up->qhead = cl->qnext;
	if (!up->qhead)
		up->qtail = NULL;
	up->nqueued--;
	cl->queued = false;
	return cl;
}

/* cl's request joins the link's FIFO (the first makes the link ACTIVE). */
static void link_attach(struct fcgi_link *l, struct fcgi_client *cl)
{
	struct inflight *f = fl_at(l, l->n);

	if (++l->last_id == FCGI_NULL_REQUEST_ID)
		l->last_id = 1;
	f->cl = cl;
	f->id = l->last_id;
	cl->request_id = f->id;
	l->up->w->stats->fcgi.requests++;
	if (l->n)
		l->up->w->stats->fcgi.pipelined++;
	if (!l->n++) {
		l->state = L_ACTIVE;
		l->held = false;
		link_arm(l, false);
	}
	l->tail_sent = l->tail_whole = false;
	l->busy++;
	cl->attached(cl, l);
	l->busy--;
}

static bool link_unsent(struct fcgi_link *l);

/* Can the link take one more request behind those in flight? */
static bool link_can_pipeline(struct fcgi_link *l)
{
	return l->ch && l->state == L_ACTIVE && !l->doomed && !l->eof &&
	       l->n < l->up->w->cfg->fcgi_pipeline && l->tail_whole &&
	       !link_unsent(l);
}

/* Requests of the queue join a link that can pipeline them. */
static void link_fill(struct fcgi_link *l)
{
	while (l->up->qhead && link_can_pipeline(l))
		link_attach(l, queue_pop(l->up));
}

/* Give a ready link to the first queued request, or park it idle. */
static void link_ready(struct fcgi_link *l)
{
	struct fcgi_upstream *up = l->up;

	if (up->qhead) {
		link_attach(l, queue_pop(up));
		return;
	}
	l->state = L_IDLE;
	l->next = up->idle;
	up->idle = l;
	link_arm(l, true);
	link_set_events(l, EPOLLIN);
}

/* The head request is done (its END_REQUEST came): the next in flight
 * receives now; with none left, the link is ready for more if the record
 * stream ended cleanly with it. */
static void link_pop(struct fcgi_link *l)
{
	fl_shift(l);
	l->held = false;
	if (l->n) {
		link_fill(l);
		return;
	}
	if (l->eof || zc_agg_len(l->rx) || link_unsent(l))
		link_close(l);
	else
		link_ready(l);
}

/* The head request ended, but the connection is not to be reused: the
 * others fail, the next counted as begun (the application may be on it
 * already). */
static void link_close_after_head(struct fcgi_link *l)
{
	fl_shift(l);
	link_close(l);
}

/* The newest request leaves before any of its records was sent: as if it
 * had never come. */
static void link_drop_tail(struct fcgi_link *l)
{
	l->tail_sent = l->tail_whole = true;	/* nothing of it can follow */
	if (--l->n == 0)
		link_ready(l);
}

/* Queued requests whose backend cannot be reached: 502 for each, when no
 * link is left that could still serve them. */
static void fail_queue(struct fcgi_upstream *up, int status)
{
	while (up->qhead && up->nlinks == 0) {
		struct fcgi_client *cl = queue_pop(up);

		cl->failed(cl, status, true);
	}
}

/* The link is broken (or not to be reused): every request in flight on it
 * fails with `status`, and the link goes when our code unwinds.  Only the
 * head can have been begun: the application takes requests in order. */
static void link_fail(struct fcgi_link *l, int status)
{
	bool begun = true;

	if (l->doomed && !l->n)
		return;
	l->doomed = true;
	while (l->n) {
		struct fcgi_client *cl = fl_head(l)->cl;

		fl_shift(l);
		if (cl)
			cl->failed(cl, status, begun);
		begun = false;
	}
	if (!l->busy)
		link_destroy(l, status);
}

static const char *const state_names[] = {
	[L_CONNECTING] = "connecting", [L_HANDSHAKE] = "in the handshake",
	[L_IDLE] = "idle", [L_ACTIVE] = "serving",
};

static void on_link_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct fcgi_link *l = link_of_timer(t);

	(void)loop;
	if (l->state == L_IDLE) {
		link_free(l);
		return;
	}
	/* Where it stood, for whoever reads the 504 in the log. */
	zh_log(ZL_ERROR, "fastcgi %s: no progress within --fastcgi-timeout, "
		"%s: %u requests in flight, %zu bytes to send, %zu received, "
		"%s", l->up->route->spec, state_names[l->state], l->n,
		zc_agg_len(l->tx), zc_agg_len(l->rx),
		l->eof ? "the application closed" : "the application silent");
	l->busy++;
	link_fail(l, 504);
	l->busy--;
	if (l->doomed)
		link_destroy(l, 504);
}

/* ------------------------------------------------------------ connect */

static int link_open(struct fcgi_upstream *up, struct fcgi_link **out)
{
	const struct zh_fcgi_route *rt = up->route;
	struct fcgi_link *l = calloc(1, sizeof(*l));
	int fd, err = 0;

	*out = NULL;
	if (!l || zc_agg_create(&l->tx) || zc_agg_create(&l->rx)) {
		err = -ENOMEM;
		goto fail_alloc;
	}
	const struct sockaddr_storage *addr = &rt->addr;
	socklen_t alen = rt->addr_len;

	if (rt->worker_addr) {	/* spawned: this worker's own processes */
		addr = &rt->worker_addr[up->w->index];
		alen = rt->worker_addr_len;
	}
	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto fail_alloc;
	}
	l->up = up;
	l->fd = fd;
	ev_post_init(&l->post, on_link_posted);
	ev_post_init(&l->ring, on_link_ring);
	l->state = L_CONNECTING;
	if (connect(fd, (const struct sockaddr *)addr, alen) &&
	    errno != EINPROGRESS) {
		/* ECONNREFUSED, ENOENT; a UNIX socket whose backlog is full
		 * says EAGAIN: the backend is overloaded, the same 502. */
		err = -errno;
		close(fd);
		goto fail_alloc;
	}
	err = ev_add(up->w->loop, fd, EPOLLOUT, on_link_io, l);
	if (err) {
		close(fd);
		goto fail_alloc;
	}
	l->events = EPOLLOUT;
	l->all_next = up->links;
	up->links = l;
	up->nlinks++;
	link_arm(l, false);	/* connect and handshake: same bound */
	*out = l;
	return 0;
fail_alloc:
	if (l) {
		zc_agg_release(l->tx);
		zc_agg_release(l->rx);
	}
	free(l);
	return err;
}

/* The socket is connected (or failed): set up the transport. */
static void link_connected(struct fcgi_link *l)
{
	int soerr = 0, err;
	socklen_t len = sizeof(soerr);

	if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) || soerr) {
		link_fail(l, 502);
		return;
	}
	if (l->up->route->transport != ZH_FCGI_ZC) {
		/* Probed once: the link reads and writes it many times. */
		zc_source_init(&l->source, l->fd);
		zc_sink_init(&l->sink, l->fd);
		/* A request body read from the client passes through once. */
		zc_sink_copy_first_trip(&l->sink, 1);
		link_ready(l);
		return;
	}
	/* The channel takes the socket (its handshake does not block: the
	 * application answers it when it accepts); from then on epoll
	 * watches the channel's descriptor. */
	ev_del(l->up->w->loop, l->fd);
	err = zc_channel_open_nb(l->fd, &l->ch);
	if (err) {
		l->events = 0;
		link_fail(l, 502);	/* the socket is still ours: closed */
		return;
	}
	l->fd = zc_channel_fd(l->ch);
	zc_channel_cork(l->ch, 1);	/* on_link_ring rings */
	l->state = L_HANDSHAKE;
	l->events = EPOLLIN;
	if (ev_add(l->up->w->loop, l->fd, EPOLLIN, on_link_io, l)) {
		link_fail(l, 502);
		return;
	}
	link_pump(l);
}

static void link_handshake(struct fcgi_link *l)
{
	int err = zc_channel_handshake(l->ch);

	if (err == -EAGAIN)
		return;
	if (err) {
		link_fail(l, 502);
		return;
	}
	link_ready(l);
}

/* ------------------------------------------------------------ records */

/* Cut the next record out of rx: 1 (h, *content set), 0 (incomplete),
 * -EPROTO. */
static int take_record(struct fcgi_link *l, struct fcgi_header *h,
		       zc_agg **content)
{
	uint8_t hb[FCGI_HEADER_LEN];
	int err;

	*content = NULL;
	if (zc_agg_len(l->rx) < FCGI_HEADER_LEN)
		return 0;
	if (zc_agg_copyout(l->rx, 0, hb, sizeof(hb)) != sizeof(hb))
		return -EPROTO;		/* a file slice went stale */
	err = fcgi_header_decode(hb, h);
	if (err)
		return err;
	if (zc_agg_len(l->rx) < fcgi_record_len(h))
		return 0;
	zc_agg_trim_front(l->rx, FCGI_HEADER_LEN);
	/* Off the front: rx may hold many records (pipelined answers). */
	if (h->content_length &&
	    (err = zc_agg_split_front(l->rx, h->content_length, content)))
		return err;
	zc_agg_trim_front(l->rx, h->padding_length);
	return 1;
}

/* Is h a record a responder may send us for request `id`? */
static bool expected(const struct fcgi_header *h, uint16_t id)
{
	return h->request_id == id &&
	       (h->type == FCGI_STDOUT || h->type == FCGI_STDERR ||
		h->type == FCGI_END_REQUEST);
}

/* Hand the complete records in rx to the head request's client (or drop
 * them, its client gone), request after request. */
static void deliver(struct fcgi_link *l)
{
	while (!l->doomed && l->n) {
		struct inflight *f = fl_head(l);
		struct fcgi_client *cl = f->cl;
		uint16_t id = f->id;
		struct fcgi_header h;
		zc_agg *content;
		int r;

		if (cl && l->held)
			return;
		r = take_record(l, &h, &content);
		if (r == 0)
			return;
		if (r < 0 || !expected(&h, id)) {
			zc_agg_release(content);
			link_fail(l, 502);	/* and drop the link */
			return;
		}
		if (!cl) {
			zc_agg_release(content);
			if (h.type == FCGI_END_REQUEST)
				link_pop(l);
			continue;
		}
		cl->record(cl, &h, content);
		if (h.type == FCGI_END_REQUEST && !l->doomed && l->n &&
		    fl_head(l)->id == id) {
			/* The client did not release it: a bug upstairs;
			 * do not let the connection serve anyone else. */
			link_close_after_head(l);
		}
	}
}

/* Read what the backend has (bounded per wake-up). */
static int link_read(struct fcgi_link *l)
{
	size_t budget = READ_BUDGET;

	while (budget && zc_agg_len(l->rx) < RX_MAX) {
		if (l->ch) {
			zc_agg *msg;
			int err = zc_channel_recv(l->ch, &msg);

			if (err == -EAGAIN)
				return 0;
			if (err == -EPIPE) {
				l->eof = true;
				return 0;
			}
			if (err)
				return err;
			budget -= zc_agg_len(msg) < budget ? zc_agg_len(msg)
							   : budget;
			if (zc_agg_len(l->rx) == 0) {
				/* The common case: take the message as it is
				 * rather than copy its slices over. */
				zc_agg_release(l->rx);
				l->rx = msg;
				continue;
			}
			err = zc_agg_concat(l->rx, msg);
			zc_agg_release(msg);
			if (err)
				return err;
		} else {
			ssize_t n = iol_read_source(&l->source, &l->rx, READ_CHUNK);

			if (n == -EAGAIN || n == -EINTR)
				return 0;
			if (n == 0) {
				l->eof = true;
				return 0;
			}
			if (n < 0)
				return (int)n;
			budget -= (size_t)n < budget ? (size_t)n : budget;
		}
	}
	/* Stopped by the budget: the rest is read before the loop sleeps
	 * (after others' turn).  A channel's descriptor does not stay
	 * readable for messages left in its ring: waiting for it would
	 * wait for a doorbell the application already rang. */
	if (!budget)
		link_post(l);
	return 0;
}

/* The zero-copy transport: what is queued goes as one message, however
 * many records (a large request body framed as records is thousands of
 * slices: the channel streams it); records need not align with messages,
 * the receiver joins them.  With nothing queued, the rest of an earlier
 * message moves on. */
static int write_channel(struct fcgi_link *l)
{
	int err;

	if (!zc_agg_len(l->tx))
		err = zc_channel_flush(l->ch);
	else if (!(err = zc_channel_send(l->ch, l->tx)))
		zc_agg_truncate(l->tx, 0);
	/* Whatever went owes the application a wake-up: one before the
	 * loop sleeps, for all this turn sent (the channel is corked). */
	ev_post(l->up->w->loop, &l->ring);
	return err == -EAGAIN ? 0 : err;	/* room rings the bell */
}

/* Send what is queued.  0 (sent or waiting for room) or a negative errno. */
static int link_write(struct fcgi_link *l)
{
	if (l->ch)
		return write_channel(l);
	if (!zc_agg_len(l->tx))
		return 0;
	while (zc_agg_len(l->tx)) {
		ssize_t n = iol_write_sink(&l->sink, l->tx);

		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
	}
	return 0;
}

/* Records of the request not yet sent: in our queue, or (zero-copy
 * transport) the rest of a long message the channel still holds. */
static bool link_unsent(struct fcgi_link *l)
{
	return zc_agg_len(l->tx) || (l->ch && zc_channel_flush(l->ch));
}

/* Everything a wake-up may need: handshake, send, read, deliver, and the
 * events to wait for next. */
static void link_pump(struct fcgi_link *l)
{
	size_t before = zc_agg_len(l->tx);
	uint32_t want;
	bool held;
	int err;

	l->busy++;
	if (l->state == L_HANDSHAKE) {
		link_handshake(l);
		if (l->state == L_HANDSHAKE || l->doomed)
			goto out;
	}
	err = link_write(l);
	if (!err && !(l->state == L_ACTIVE && l->held))
		err = link_read(l);
	if (err) {
		link_fail(l, 502);
		goto out;
	}
	if (l->state == L_IDLE) {
		/* An idle backend has nothing to say but EOF. */
		if (l->eof || zc_agg_len(l->rx))
			link_close(l);
		goto out;
	}
	deliver(l);
	if (l->doomed || l->state == L_IDLE)
		goto out;
	if (l->eof && l->state != L_IDLE) {
		/* Closed before END_REQUEST: the app died or broke. */
		link_fail(l, 502);
		goto out;
	}
	if (l->state == L_ACTIVE && fl_tail(l)->cl && before >= TX_LOW_WATER &&
	    zc_agg_len(l->tx) < TX_LOW_WATER)
		fl_tail(l)->cl->writable(fl_tail(l)->cl);
	if (l->doomed)
		goto out;
	link_fill(l);
	if (l->doomed || l->state == L_IDLE)
		goto out;
	held = l->n && fl_head(l)->cl && l->held;
	if (l->ch)	/* one bell for data, returns and room */
		want = !held || link_unsent(l) ? EPOLLIN : 0;
	else
		want = (zc_agg_len(l->tx) ? EPOLLOUT : 0) | (held ? 0 : EPOLLIN);
	link_set_events(l, want);
	if (held)
		ev_timer_disarm(&l->timer);	/* the client is slow, not
						 * the backend */
	else
		link_arm(l, false);	/* progress: the clock starts again */
out:
	l->busy--;
	if (l->doomed && !l->busy)
		link_destroy(l, 502);
}

static void on_link_io(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct fcgi_link *l = data;

	(void)loop;
	(void)fd;
	(void)ev;
	if (l->state == L_CONNECTING) {
		l->busy++;
		link_connected(l);
		l->busy--;
		if (l->doomed)
			link_destroy(l, 502);
		return;
	}
	link_pump(l);
}

/* ------------------------------------------------------------ API */

/* The link of the upstream that can take one more request in flight and
 * has the fewest, or NULL. */
static struct fcgi_link *pipelining_link(struct fcgi_upstream *up)
{
	struct fcgi_link *best = NULL;

	for (struct fcgi_link *l = up->links; l; l = l->all_next)
		if (link_can_pipeline(l) && (!best || l->n < best->n))
			best = l;
	return best;
}

int fcgi_link_acquire(struct zh_worker *w, const struct zh_fcgi_route *rt,
		      struct fcgi_client *cl)
{
	struct fcgi_upstream *up = upstream_of(w, rt);
	struct fcgi_link *l = up->idle;

	if (l) {
		up->idle = l->next;
		l->next = NULL;
	} else if (!up->nqueued && up->nlinks >= up->max_links) {
		/* Every connection busy: behind the shortest pipeline, if
		 * one can take it (not ahead of requests already waiting). */
		l = pipelining_link(up);
	}
	if (l) {
		link_attach(l, cl);
		if (l->doomed && !l->busy)
			link_destroy(l, 502);
		return 0;
	}
	if (up->nqueued >= w->cfg->fcgi_queue)
		return 503;
	if (up->nlinks < up->max_links) {
		int err = link_open(up, &l);

		if (err) {
			zh_log(ZL_ERROR, "fastcgi %s: connect: %s",
				rt->spec, strerror(-err));
			return 502;
		}
	}
	cl->qnext = NULL;
	cl->queued = true;
	if (up->qtail)
		up->qtail->qnext = cl;
	else
		up->qhead = cl;
	up->qtail = cl;
	up->nqueued++;
	return 0;
}

void fcgi_link_cancel(struct zh_worker *w, const struct zh_fcgi_route *rt,
		      struct fcgi_client *cl)
{
	struct fcgi_upstream *up = upstream_of(w, rt);
	struct fcgi_client **pp, *prev = NULL;

	if (!cl->queued)
		return;
	for (pp = &up->qhead; *pp; prev = *pp, pp = &(*pp)->qnext) {
		if (*pp != cl)
			continue;
		*pp = cl->qnext;
		if (up->qtail == cl)
			up->qtail = prev;
		up->nqueued--;
		cl->queued = false;
		return;
	}
}

/* Pump l before the loop sleeps (event.h's posted work): API calls never
 * call the client back themselves, only the link's own wake-ups do. */
static void link_post(struct fcgi_link *l)
{
	ev_post(l->up->w->loop, &l->post);
}

static void on_link_posted(struct ev_post *p)
{
	struct fcgi_link *l = (struct fcgi_link *)((char *)p -
					offsetof(struct fcgi_link, post));

	if (l->doomed && !l->busy)
		link_destroy(l, 502);
	else
		link_pump(l);
}

static void on_link_ring(struct ev_post *p)
{
	struct fcgi_link *l = (struct fcgi_link *)((char *)p -
					offsetof(struct fcgi_link, ring));

	zc_channel_ring(l->ch);
}

/* Queue records and write what the backend takes now. */
static int link_queue(struct fcgi_link *l, zc_agg *records)
{
	int err = zc_agg_concat(l->tx, records);

	zc_agg_truncate(records, 0);
	if (err)
		return err;
	/* Write now (a request's records go out without waiting a loop
	 * turn), but deliver nothing: the caller is the client itself. */
	err = link_write(l);
	if (!err && zc_agg_len(l->tx) && !l->ch)
		link_set_events(l, l->events | EPOLLOUT);
	return err;
}

int fcgi_link_send(struct fcgi_link *l, zc_agg *records, bool last)
{
	l->tail_sent = true;
	if (last)
		l->tail_whole = true;
	return link_queue(l, records);
}

size_t fcgi_link_queued(const struct fcgi_link *l)
{
	return zc_agg_len(l->tx);
}

void fcgi_link_hold(struct fcgi_link *l, bool hold)
{
	if (l->held == hold)
		return;
	l->held = hold;
	if (!hold)
		link_post(l);	/* records already here, then read again */
}

/* cl's request leaves the link (release, abort): its slot stays in line
 * without a client, or goes if none of its records was sent.  The slot,
 * or NULL when nothing more is to be done. */
static struct inflight *link_leave(struct fcgi_link *l,
				   const struct fcgi_client *cl)
{
	struct inflight *f = fl_find(l, cl);

	if (!f)
		return NULL;
	f->cl = NULL;
	if (f == fl_tail(l) && !l->tail_sent) {
		link_drop_tail(l);
		return NULL;
	}
	return f;
}

void fcgi_link_release(struct fcgi_link *l, struct fcgi_client *cl,
		       bool reusable)
{
	struct inflight *f = link_leave(l, cl);

	if (!f)
		return;
	if (f != fl_head(l))
		link_close(l);
	else if (reusable)
		link_pop(l);
	else
		link_close_after_head(l);
}

/* The request alone on the link goes away: what already arrived may end
 * it (then the application is done with it and hears nothing); else it
 * is sent FCGI_ABORT_REQUEST, and its records are dropped until its
 * END_REQUEST (deliver), bounded by --fastcgi-timeout. */
static void abort_alone(struct fcgi_link *l, uint16_t id)
{
	uint8_t rec[FCGI_HEADER_LEN];
	struct fcgi_header h;
	zc_agg *a, *content;
	int r;

	while ((r = take_record(l, &h, &content)) == 1) {
		zc_agg_release(content);
		if (h.type == FCGI_END_REQUEST && expected(&h, id)) {
			link_pop(l);
			return;
		}
	}
	fcgi_header_encode(rec, FCGI_ABORT_REQUEST, id, 0, 0);
	if (r < 0 || l->eof || zc_agg_create(&a)) {
		link_close(l);
		return;
	}
	/* What was queued of the request goes first: the record stream
	 * must stay whole for the connection to be reused. */
	if (zc_agg_append_bytes(a, NULL, rec, sizeof(rec)) ||
	    link_queue(l, a)) {
		zc_agg_release(a);
		link_close(l);
		return;
	}
	zc_agg_release(a);
	link_arm(l, false);
	link_post(l);
}

void fcgi_link_abort(struct fcgi_link *l, struct fcgi_client *cl)
{
	struct inflight *f = link_leave(l, cl);
	bool tail;

	if (!f)
		return;
	tail = f == fl_tail(l);
	if (f == fl_head(l))
		l->held = false;	/* the records are ours to drop now */
	if (l->n == 1) {
		abort_alone(l, f->id);
		return;
	}
	/* Others in flight: the application reads this request to its end
	 * and answers it; we drop the answer.  A request cut short cannot
	 * end its record stream with others in it: the connection goes. */
	if (tail && (!l->tail_whole || link_unsent(l)))
		link_close(l);
	else
		link_post(l);	/* records already here, then the next */
}

int fcgi_upstreams_init(struct zh_worker *w)
{
	unsigned n = w->cfg->nfcgi;

	if (!n)
		return 0;
	w->upstreams = calloc(n, sizeof(*w->upstreams));
	if (!w->upstreams)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		const struct zh_fcgi_route *rt = &w->cfg->fcgi[i];

		w->upstreams[i].route = rt;
		w->upstreams[i].w = w;
		w->upstreams[i].max_links = w->cfg->fcgi_conns;
		if (rt->worker_addr && rt->per_worker < w->cfg->fcgi_conns)
			w->upstreams[i].max_links = rt->per_worker;
	}
	return 0;
}

void fcgi_upstreams_fini(struct zh_worker *w)
{
	for (unsigned i = 0; w->upstreams && i < w->cfg->nfcgi; i++) {
		struct fcgi_upstream *up = &w->upstreams[i];

		while (up->idle)
			link_free(up->idle);
		/* Links still serving belong to requests that are gone by
		 * now (conn_close_all ran first) and were aborted: closing
		 * the worker's descriptors at exit ends them. */
	}
	free(w->upstreams);
	w->upstreams = NULL;
}
