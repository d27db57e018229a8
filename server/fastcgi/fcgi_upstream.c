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
 *   ACTIVE      serving one request: records flow both ways; the request's
 *               progress is bounded by --fastcgi-timeout, re-armed by every
 *               read or write that moved something
 *   DRAINING    its request went away: ABORT_REQUEST was sent and records
 *               are dropped until END_REQUEST, then it is reused
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
#define REQUEST_ID 1

enum link_state { L_CONNECTING, L_HANDSHAKE, L_IDLE, L_ACTIVE, L_DRAINING };

struct fcgi_upstream {
	const struct zh_fcgi_route *route;
	struct zh_worker *w;
	struct fcgi_link *idle;		/* most recently used first */
	unsigned nlinks;		/* every link, whatever its state */
	unsigned max_links;		/* --fastcgi-conns, or fewer: as many
					 * as spawned processes serve us */
	struct fcgi_client *qhead, *qtail;
	unsigned nqueued;
};

struct fcgi_link {
	struct fcgi_upstream *up;
	struct fcgi_link *next;		/* idle list */
	enum link_state state;
	int fd;				/* what epoll watches */
	zc_channel *ch;			/* zero-copy transport, or NULL */
	zc_sink sink;			/* standard transport */
	zc_source source;
	struct fcgi_client *cl;		/* ACTIVE: its request */
	zc_agg *tx, *rx;
	uint32_t events;
	bool held;			/* the client holds delivery back */
	bool eof;			/* the backend closed */
	int busy;			/* our code is on the stack */
	bool doomed;			/* close when it unwinds */
	struct ev_post post;		/* pumped before the loop sleeps */
	struct ev_timer timer;
};

#define link_of_timer(t) \
	((struct fcgi_link *)((char *)(t) - offsetof(struct fcgi_link, timer)))

static void on_link_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);
static void link_pump(struct fcgi_link *l);
static void on_link_posted(struct ev_post *p);

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
	ev_unpost(&l->post);
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

/* The request is done with its link: end it now or when our own code
 * unwinds. */
static void link_close(struct fcgi_link *l)
{
	l->cl = NULL;
	if (l->busy)
		l->doomed = true;
	else
		link_destroy(l, 502);
}

/* The link serves cl's request from now on. */
static void link_attach(struct fcgi_link *l, struct fcgi_client *cl)
{
	l->state = L_ACTIVE;
	l->cl = cl;
	l->held = false;
	link_arm(l, false);
	l->busy++;
	cl->attached(cl, l);
	l->busy--;
}

/* Give a ready link to the first queued request, or park it idle. */
static void link_ready(struct fcgi_link *l)
{
	struct fcgi_upstream *up = l->up;
	struct fcgi_client *cl = up->qhead;

	if (cl) {
		up->qhead = cl->qnext;
		if (!up->qhead)
			up->qtail = NULL;
		up->nqueued--;
		cl->queued = false;
		link_attach(l, cl);
		return;
	}
	l->state = L_IDLE;
	l->next = up->idle;
	up->idle = l;
	link_arm(l, true);
	link_set_events(l, EPOLLIN);
}

/* Queued requests whose backend cannot be reached: 502 for each, when no
 * link is left that could still serve them. */
static void fail_queue(struct fcgi_upstream *up, int status)
{
	while (up->qhead && up->nlinks == 0) {
		struct fcgi_client *cl = up->qhead;

		up->qhead = cl->qnext;
		if (!up->qhead)
			up->qtail = NULL;
		up->nqueued--;
		cl->queued = false;
		cl->failed(cl, status);
	}
}

static void link_fail(struct fcgi_link *l, int status)
{
	struct fcgi_client *cl = l->cl;

	if (l->doomed && !cl)
		return;
	l->cl = NULL;
	l->doomed = true;
	if (cl && l->state == L_ACTIVE)
		cl->failed(cl, status);
	if (!l->busy)
		link_destroy(l, status);
}

static const char *const state_names[] = {
	[L_CONNECTING] = "connecting", [L_HANDSHAKE] = "in the handshake",
	[L_IDLE] = "idle", [L_ACTIVE] = "serving a request",
	[L_DRAINING] = "draining an aborted request",
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
		"%s: %zu bytes to send, %zu received, %s", l->up->route->spec,
		state_names[l->state], zc_agg_len(l->tx), zc_agg_len(l->rx),
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
	zc_agg *rest;
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
	if (h->content_length) {
		err = zc_agg_split(l->rx, h->content_length, &rest);
		if (err)
			return err;
		*content = l->rx;
		l->rx = rest;
	}
	zc_agg_trim_front(l->rx, h->padding_length);
	return 1;
}

/* Is h a record a responder may send us now? */
static bool expected(const struct fcgi_header *h)
{
	return h->request_id == REQUEST_ID &&
	       (h->type == FCGI_STDOUT || h->type == FCGI_STDERR ||
		h->type == FCGI_END_REQUEST);
}

/* Hand the complete records in rx to the client (or drop them while
 * draining). */
static void deliver(struct fcgi_link *l)
{
	while (!l->doomed && !(l->state == L_ACTIVE && l->held)) {
		struct fcgi_header h;
		zc_agg *content;
		int r = take_record(l, &h, &content);

		if (r == 0)
			return;
		if (r < 0 || !expected(&h) ||
		    (l->state != L_ACTIVE && l->state != L_DRAINING)) {
			zc_agg_release(content);
			link_fail(l, 502);	/* and drop the link */
			return;
		}
		if (l->state == L_DRAINING) {
			zc_agg_release(content);
			if (h.type == FCGI_END_REQUEST)
				link_ready(l);
			continue;
		}
		struct fcgi_client *cl = l->cl;

		cl->record(cl, &h, content);
		if (h.type == FCGI_END_REQUEST && l->cl == cl && !l->doomed) {
			/* The client did not release it: a bug upstairs;
			 * do not let the connection serve anyone else. */
			l->cl = NULL;
			l->doomed = true;
		}
		if (l->state != L_ACTIVE && l->state != L_DRAINING)
			return;	/* released: idle or given to the next */
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
			err = zc_agg_concat(l->rx, msg);
			budget -= zc_agg_len(msg) < budget ? zc_agg_len(msg)
							   : budget;
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
	if (l->state == L_ACTIVE && l->cl && before >= TX_LOW_WATER &&
	    zc_agg_len(l->tx) < TX_LOW_WATER)
		l->cl->writable(l->cl);
	if (l->doomed)
		goto out;
	held = l->state == L_ACTIVE && l->held;
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

int fcgi_link_acquire(struct zh_worker *w, const struct zh_fcgi_route *rt,
		      struct fcgi_client *cl)
{
	struct fcgi_upstream *up = upstream_of(w, rt);
	struct fcgi_link *l = up->idle;

	if (l) {
		up->idle = l->next;
		l->next = NULL;
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

int fcgi_link_send(struct fcgi_link *l, zc_agg *records)
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

void fcgi_link_release(struct fcgi_link *l, bool reusable)
{
	l->cl = NULL;
	if (!reusable || l->eof || zc_agg_len(l->rx) || link_unsent(l)) {
		link_close(l);
		return;
	}
	link_ready(l);
}

void fcgi_link_abort(struct fcgi_link *l)
{
	uint8_t rec[FCGI_HEADER_LEN];
	struct fcgi_header h;
	zc_agg *a, *content;
	int r;

	l->cl = NULL;
	l->held = false;	/* the records are ours to drop now */
	l->state = L_DRAINING;
	/* What already arrived may end the request: then the application
	 * is done with it and hears nothing (a late ABORT_REQUEST could hit
	 * its next request, which has the same id). */
	while ((r = take_record(l, &h, &content)) == 1) {
		zc_agg_release(content);
		if (h.type == FCGI_END_REQUEST && expected(&h)) {
			fcgi_link_release(l, true);
			return;
		}
	}
	fcgi_header_encode(rec, FCGI_ABORT_REQUEST, REQUEST_ID, 0, 0);
	if (r < 0 || l->eof || zc_agg_create(&a)) {
		link_close(l);
		return;
	}
	/* What was queued of the request goes first: the record stream
	 * must stay whole for the connection to be reused. */
	if (zc_agg_append_bytes(a, NULL, rec, sizeof(rec))) {
		zc_agg_release(a);
		link_close(l);
		return;
	}
	if (fcgi_link_send(l, a)) {
		zc_agg_release(a);
		link_close(l);
		return;
	}
	zc_agg_release(a);
	/* Drain until END_REQUEST, bounded by --fastcgi-timeout; records
	 * already here first. */
	link_arm(l, false);
	link_post(l);
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
