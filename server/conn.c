/*
 * conn.c - one HTTP connection: read, parse, answer, write, time out.
 *
 * The life of a connection:
 *
 *   IDLE     no bytes of a request yet; no input buffer held (10,000 idle
 *            keep-alive connections cost a struct each, not 32 KiB each);
 *            the keep-alive timer runs.
 *   READING  part of a request head arrived; the header timer runs from
 *            the first byte and is NOT re-armed by later bytes, so a
 *            slowloris drip cannot keep the connection forever.
 *   WRITING  responses are queued in `out` (an aggregate: head buffers and
 *            file extents); iol_write sends what the socket takes and keeps
 *            the rest; EPOLLOUT resumes it; the send timer runs while the
 *            client does not read.  No new request is parsed while output
 *            is pending beyond a small limit (backpressure for pipelining).
 *   WAITING  a request waits in its handler (request.h): a cache miss
 *            for a helper thread that opens and reads the file (diskio.h),
 *            a FastCGI request for its backend.  The request keeps its
 *            parsed head; the connection parses nothing more meanwhile
 *            (pipelined requests wait their turn) and reads only when the
 *            handler asks for input (a request body).  A handler that
 *            streams its response moves the connection between WAITING and
 *            WRITING as output comes and goes.
 *   LINGER   after an error response: our side is shut down for writing
 *            and the client's remaining input is read and dropped for a
 *            moment, so that unread input does not turn our close into a
 *            reset that destroys the response before the client reads it.
 *
 * Pipelined requests already in the buffer are answered in one batch: their
 * responses are appended to the same aggregate and leave in as few system
 * calls as iol_write can manage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access_log.h"
#include "cache.h"
#include "conn.h"
#include "conn_int.h"
#include "fastcgi.h"
#include "handlers.h"
#include "request.h"
#include "respond.h"
#include "uri.h"
#include "vhost.h"
#include "zchttpd.h"

#define ACCEPT_BATCH 64

#define conn_of_timer(t) \
	((struct zh_conn *)((char *)(t) - offsetof(struct zh_conn, timer)))

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);
static void process(struct zh_conn *c);
static void do_read(struct zh_conn *c);
static void on_posted(struct ev_post *p);

/* ------------------------------------------------------------ life */

/*
 * A connection holds an input buffer (with its head arena) only while a
 * request is in progress; one that goes idle gives it back here, so that
 * 10,000 idle keep-alive connections hold none, while the next request --
 * on this or another connection -- takes it again without a malloc and a
 * free of 40 KiB each (8 % of the instructions of a 1 KB keep-alive
 * request, callgrind).  At most ARRAY_SIZE(spare_in) are kept.
 */
static char *in_get(struct zh_worker *w)
{
	return w->nspare_in ? w->spare_in[--w->nspare_in]
			    : malloc(IN_CAP + HEAD_ARENA);
}

char *conn_in_get(struct zh_worker *w)
{
	return in_get(w);
}

static void in_put(struct zh_worker *w, char *in)
{
	if (!in)
		return;
	if (w->nspare_in < sizeof(w->spare_in) / sizeof(w->spare_in[0]))
		w->spare_in[w->nspare_in++] = in;
	else
		free(in);
}

static void unpin_sent(struct zh_conn *c, bool all)
{
	unsigned i = 0;

	while (i < c->nfl && (all || c->fl[i].end <= c->sent))
		cache_unpin(c->w->cache, c->fl[i++].e);
	memmove(c->fl, c->fl + i, (c->nfl - i) * sizeof(c->fl[0]));
	c->nfl -= i;
}

/* The request leaves its handler: what it holds of the connection goes. */
static void req_release(struct zh_conn *c)
{
	c->active = false;
	c->paused = false;
	c->req.handler = NULL;
	c->req.wait = NULL;
	c->req.want_input = false;
	c->req.finished = false;
	c->req.redirect_pending = false;
	if (c->req.entry) {
		cache_put(c->w->cache, c->req.entry);
		c->req.entry = NULL;
	}
	free(c->req.own_headers);
	c->req.own_headers = NULL;
	free(c->req.own_uri);
	c->req.own_uri = NULL;
	free(c->req.redirect);
	c->req.redirect = NULL;
}

void conn_free(struct zh_conn *c)
{
	struct zh_worker *w = c->w;

	if (c->active) {
		/* The client is gone or out of time: the handler drops its
		 * claims (a helper job, a backend request) -- unless it had
		 * already let go of the request. */
		if (!c->req.finished && !c->req.redirect_pending)
			c->req.handler->abort(&c->req);
		req_release(c);
	}
	ev_unpost(&c->post);
	unpin_sent(c, true);
	ev_timer_disarm(&c->timer);
	/* close() takes the fd out of epoll (nothing else holds it); just
	 * make sure a stale event later in this batch finds no handler. */
	ev_forget(w->loop, c->fd);
	conn_ring_forget(c);
	tls_conn_free(c->tls);	/* close_notify first, if it can */
	close(c->fd);
	zc_agg_release(c->out);
	in_put(w, c->in);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	w->nconns--;
	w->stats->conns_open = w->nconns;
	free(c);
}

static void count_status(struct zh_worker *w, int status)
{
	int cls = status / 100;

	if (cls >= 1 && cls <= 5)
		w->stats->responses[cls]++;
}

static void on_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct zh_conn *c = conn_of_timer(t);

	(void)loop;
	switch (c->state) {
	case C_READING:
		/* The head did not arrive in time: say so, then close. */
		if (c->tls && !tls_established(c->tls)) {
			c->w->stats->timeouts++;
			conn_free(c);
			return;
		}
		c->w->stats->timeouts++;
		zc_agg_truncate(c->out, 0);
		resp_error(c->out, 408, false, false, NULL);
		count_status(c->w, 408);
		c->close_after = true;
		c->linger = true;
		c->in_len = 0;
		c->state = C_WRITING;
		process(c);
		return;
	case C_WAITING:		/* the handler made no progress in time */
	case C_WRITING:		/* the client stopped reading */
		c->w->stats->timeouts++;
		conn_free(c);
		return;
	case C_IDLE:
		if (c->tls && !tls_established(c->tls))
			c->w->stats->timeouts++;	/* a stalled handshake */
		conn_free(c);
		return;
	case C_LINGER:
		conn_free(c);
		return;
	}
}

static void arm(struct zh_conn *c, struct ev_timer_list *l)
{
	ev_timer_arm(c->w->loop, l, &c->timer, on_timeout);
}

/* Level-triggered: while a response is pending we wait for EPOLLOUT only
 * (input is not read then, and a readable socket must not wake us in a
 * loop); otherwise for READ_EVENTS.  While a handler has the request the
 * mask stays READ_EVENTS too, so that a request waiting on a backend costs
 * no epoll_ctl, unless bytes the handler did not ask for arrive: on_io then
 * narrows it to EPOLLRDHUP (lazily, as this is rare).  A new connection
 * enters epoll only the first time it has to wait. */
#define READ_EVENTS (EPOLLIN | EPOLLRDHUP)

static int set_events(struct zh_conn *c, uint32_t events)
{
	/* Whatever epoll waits for now, the ring does not receive. */
	conn_ring_stop(c);
	if (c->in_epoll && events == c->events)
		return 0;
	c->events = events;
	if (!c->in_epoll) {
		if (!events)
			return 0;	/* nothing to wait for yet */
		c->in_epoll = true;
		return ev_add(c->w->loop, c->fd, events, on_io, c);
	}
	return ev_mod(c->w->loop, c->fd, events, on_io, c);
}

/*
 * A new connection is read at once, before it is registered with epoll:
 * the listener defers accept until the request has arrived
 * (TCP_DEFER_ACCEPT, listen.c), so the first recv normally finds it.  A
 * one-request connection (Connection: close) is then answered and closed
 * without ever entering epoll -- accept4, recv, send, close -- and a
 * keep-alive one is registered only when it first has to wait.  It also
 * inherits TCP_NODELAY from the listener: responses leave as whole
 * aggregates, and Nagle would only delay the last partial segment of each.
 */
static struct zh_conn *conn_new(struct zh_worker *w, int fd,
				const struct sockaddr_storage *ss, bool tls)
{
	struct zh_conn *c = calloc(1, sizeof(*c));

	if (!c || zc_agg_create(&c->out)) {
		free(c);
		return NULL;
	}
	if (tls && tls_conn_new(w->cfg->tls_ctx, fd, &c->tls)) {
		zc_agg_release(c->out);
		free(c);
		return NULL;
	}
	c->w = w;
	c->fd = fd;
	ev_post_init(&c->post, on_posted);
	/* Accepted from our own TCP listener, non-blocking: no need to
	 * probe what kind of descriptor it is. */
	zc_sink_init_tcp(&c->sink, fd, 1);
	/* The cache revalidates files every --cache-ttl: no fstat per send. */
	zc_sink_trust_extents(&c->sink, 1);
	c->peer = *ss;
	c->state = C_IDLE;
	http_parser_init(&c->parser);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	w->nconns++;
	w->stats->conns_open = w->nconns;
	w->stats->conns_total++;
	/* The handshake has the time a request head has (an idle
	 * connection closes quietly when its timer runs out). */
	arm(c, tls ? &w->t_header : &w->t_idle);
	return c;
}

int conn_accept_all(struct zh_worker *w, bool tls)
{
	int lfd = tls ? w->tls_lfd : w->lfd;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		struct zh_conn *c;
		int fd = accept4(lfd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EAGAIN: done.  EMFILE/ENFILE/ENOBUFS: the
			 * connection waits in the backlog until we have
			 * room again. */
			return errno == EAGAIN ? 0 : -errno;
		}
		if (w->stopping || w->nconns >= w->cfg->max_conns) {
			w->stats->conns_refused++;
			close(fd);
			continue;
		}
		c = conn_new(w, fd, &ss, tls);
		if (!c) {
			close(fd);
			continue;
		}
		do_read(c);	/* may answer and free it */
	}
	return 0;
}

void conn_close_idle(struct zh_worker *w)
{
	struct zh_conn *c = w->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->state == C_IDLE || c->state == C_LINGER)
			conn_free(c);
		else if (c->active)	/* answered, then closed */
			c->req.keep_alive = false;
		else
			c->close_after = true;
	}
}

void conn_close_all(struct zh_worker *w)
{
	while (w->conns)
		conn_free(w->conns);
	while (w->nspare_in)
		free(w->spare_in[--w->nspare_in]);
}

/* Posted by a handler through request.c (conn_post). */
static void on_posted(struct ev_post *p)
{
	process((struct zh_conn *)((char *)p - offsetof(struct zh_conn, post)));
}

/* ------------------------------------------------------------ output */

/* Wait for more input (registering with epoll if this is the first wait);
 * returns false if the connection had to be freed. */
static bool want_input(struct zh_conn *c)
{
	/* OpenSSL reads the socket itself: HTTPS waits through epoll (or
	 * the ring's poll) for readiness, not for ring receives. */
	if (ev_has_ring(c->w->loop) && !c->tls) {
		switch (conn_ring_wait(c)) {
		case RING_WAITS:
			return true;
		case RING_FREED:
			return false;
		case RING_NO:
			break;
		}
	}
	if (set_events(c, READ_EVENTS)) {
		conn_free(c);
		return false;
	}
	return true;
}

/* Heads in the arena are named by out until they are sent. */
static void arena_reset(struct zh_conn *c)
{
	if (!zc_agg_len(c->out))
		c->arena_used = 0;
}

static bool go_idle(struct zh_conn *c)
{
	c->state = C_IDLE;
	/* An idle connection holds no input buffer. */
	in_put(c->w, c->in);
	c->in = NULL;
	if (!want_input(c))
		return false;
	arm(c, &c->w->t_idle);
	return true;
}

/* Returns false if the connection was freed. */
static bool start_linger(struct zh_conn *c)
{
	if (c->tls)
		tls_conn_notify_close(c->tls);
	shutdown(c->fd, SHUT_WR);
	c->state = C_LINGER;
	c->in_len = 0;
	if (!want_input(c))
		return false;
	arm(c, &c->w->t_linger);
	return true;
}

/*
 * The last response is sent.  Close at once when the client has nothing
 * more on its way (the common case: one request, Connection: close); linger
 * only when it may still be sending (an error cut its request short, a body
 * we did not read, pipelined requests after the last one we answer), since
 * closing with unread input makes the kernel send a reset that can destroy
 * the response before the client has read it.  Returns false if freed.
 */
static bool finish(struct zh_conn *c)
{
	if (c->linger || c->in_len)
		return start_linger(c);
	conn_free(c);
	return false;
}

/* Send what we can; returns false if the connection was freed.  Output
 * left over waits for EPOLLOUT under the send timer. */
static bool flush(struct zh_conn *c)
{
	while (zc_agg_len(c->out)) {
		/* HTTPS: the kernel encrypts (kTLS) what iol_write sends, or
		 * we encrypt one record at a time. */
		ssize_t n = c->tls && !tls_kernel_sends(c->tls)
			? tls_send(c->tls, c->out, c->w->tls_bounce,
				   &c->w->stats->tls)
			: iol_write_sink(&c->sink, c->out);

		if (n > 0) {
			c->w->stats->bytes_sent += (uint64_t)n;
			c->sent += (uint64_t)n;
			if (c->nfl)
				unpin_sent(c, false);
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN) {
			if (set_events(c, EPOLLOUT)) {
				conn_free(c);
				return false;
			}
			if (!ev_timer_armed(&c->timer) ||
			    c->timer.list != &c->w->t_send)
				arm(c, &c->w->t_send);
			return true;
		}
		/* EPIPE, ECONNRESET, ESTALE (file changed under a response
		 * already half sent: the only honest end is to close). */
		conn_free(c);
		return false;
	}
	arena_reset(c);
	return true;
}

/* ------------------------------------------------------------ requests */

/*
 * The request in c->req is answered (`how` as request_finish() takes it):
 * the error page if there is one, the pin on the cache entry its body
 * uses, counters, the access log, and whether the connection stays open.
 */
static void complete(struct zh_conn *c, zh_answer how)
{
	struct zh_worker *w = c->w;
	struct zh_request *r = &c->req;
	int err = zh_error_status(how);
	bool cut = zh_truncated(how);

	if (!r->body_read && ((r->http.flags & HTTP_F_CHUNKED) ||
			      ((r->http.flags & HTTP_F_CONTENT_LENGTH) &&
			       r->http.content_length))) {
		/* The rest of the body is on its way and cannot be told
		 * from a next request: close, reading it meanwhile so that
		 * our close does not reset the response away. */
		r->keep_alive = false;
		c->linger = true;
	}
	if (err && conn_queued_end(c) != c->req_start) {
		err = 0;		/* too late for an error page */
		cut = true;
	}
	if (cut) {
		/* Send what is queued, then close: a client can tell a cut
		 * body (Content-Length, chunked framing) from a whole one
		 * only if the connection ends there. */
		r->keep_alive = false;
		c->linger = true;
	} else if (err) {
		zc_agg_truncate(c->out, zc_agg_len(c->out) -
					(size_t)(conn_queued_end(c) - c->req_start));
		r->status = err;
		r->body_bytes = 0;
		if (err >= 500 && err != 501 && err != 503)
			r->keep_alive = false;
		if (resp_error(c->out, err, r->head_only, r->keep_alive,
			       err == 405 ? "Allow: GET, HEAD\r\n" : NULL))
			r->keep_alive = false;
	} else if (r->entry) {
		cache_pin(w->cache, r->entry);
		c->fl[c->nfl].e = r->entry;
		c->fl[c->nfl].end = conn_queued_end(c);
		c->nfl++;
	}
	if (r->entry) {
		cache_put(w->cache, r->entry);	/* the request's reference */
		r->entry = NULL;
	}
	count_status(w, r->status);
	access_log_request(r->vhost->log, &c->peer, &r->http, r->status,
			   conn_queued_end(c) - c->req_start);
	if (!r->keep_alive)
		c->close_after = true;
}

/* Which handler answers a request, and the checks before it. */
static zh_answer route(struct zh_conn *c, struct zh_request *r)
{
	struct zh_worker *w = c->w;
	const struct http_request *req = &r->http;
	bool get = req->method == HTTP_M_GET || req->method == HTTP_M_HEAD;
	int bad_method = req->method == HTTP_M_OTHER ? 501 : 405;
	bool has_body = (req->flags & HTTP_F_CHUNKED) ||
			((req->flags & HTTP_F_CONTENT_LENGTH) &&
			 req->content_length);
	const struct zh_fcgi_route *rt = NULL;
	enum uri_error ue;

	if ((req->flags & HTTP_F_CONTENT_LENGTH) &&
	    req->content_length > w->cfg->max_body_bytes)
		return zh_status(413);	/* refused before anything else */
	if (status_matches(w, req)) {
		if (has_body)
			r->keep_alive = false;	/* as below */
		return get ? status_serve(r) : zh_status(bad_method);
	}
	/* One normalization per request (uri.h), kept in the worker's
	 * scratch; a request that waits takes a copy (request_wait). */
	w->uri[0] = '/';
	ue = uri_normalize_path(req->path.p, req->path.len, w->uri + 1,
				sizeof(w->uri) - 1, &r->up);
	if (ue != URI_OK) {
		if (!get && !w->cfg->nfcgi)
			return zh_status(bad_method);
		return zh_status(ue == URI_E_TOO_LONG ? 414 : 400);
	}
	r->uri = w->uri;
	r->uri_len = r->up.len + 1;
	if (w->cfg->nfcgi)
		rt = fastcgi_route(w, r->vhost->index, r->uri, r->uri_len);
	if (rt)
		return fastcgi_serve(r, rt);
	/* A request body would have to be read and thrown away: the static
	 * server takes none, so it answers and closes (its head must say so;
	 * complete() lingers: body_read stays false). */
	if (has_body)
		r->keep_alive = false;
	if (!get)
		return zh_status(bad_method);
	return static_serve(r);
}

/* Answer one parsed request (its head is the first head_len bytes of the
 * input).  Returns false if the answer waits in a handler. */
static bool answer(struct zh_conn *c, const struct http_request *req,
		   size_t head_len)
{
	struct zh_worker *w = c->w;
	struct zh_request *r = &c->req;
	zh_answer how;

	*r = (struct zh_request){
		.conn = c,
		.w = w,
		.vhost = &w->vhosts[vhost_find(w->cfg, req)],
		.http = *req,
		.head_len = head_len,
		.head_only = req->method == HTTP_M_HEAD,
		.keep_alive = (req->flags & HTTP_F_KEEP_ALIVE) && !w->stopping,
	};
	c->req_start = conn_queued_end(c);
	w->stats->requests++;
	if (r->vhost->site->stat_slot >= 0)
		w->stats->site_requests[r->vhost->site->stat_slot]++;
	how = route(c, r);
	if (zh_waits(how))
		return false;
	complete(c, how);
	return true;
}

static void consume(struct zh_conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
	http_parser_init(&c->parser);
}

/* Parse and answer every complete request in the buffer; returns true if
 * the head in the buffer is incomplete (more input is needed). */
static bool answer_buffered(struct zh_conn *c)
{
	struct zh_worker *w = c->w;

	while (!c->active && c->in_len && !c->close_after &&
	       c->nfl < MAX_INFLIGHT && zc_agg_len(c->out) < OUT_HIGH_WATER) {
		struct http_request req = { .headers = w->slots };
		ssize_t r = http_parse_request(&c->parser, c->in, c->in_len,
					       &w->cfg->limits, &req);

		if (r == HTTP_PARSE_INCOMPLETE) {
			if (c->in_len < IN_CAP)
				return true;
			/* Limits are below IN_CAP, so the parser should
			 * have refused first; be safe anyway. */
			req.error = HTTP_E_HEADERS_TOO_LARGE;
			r = HTTP_PARSE_ERROR;
		}
		if (r == HTTP_PARSE_ERROR) {
			resp_error(c->out, req.error, false, false, NULL);
			count_status(w, req.error);
			/* Unparsed: no Host to go by, the default site's. */
			access_log_request(w->vhosts[w->cfg->default_site].log,
					   &c->peer, NULL, req.error, 0);
			c->close_after = true;
			c->linger = true;
			c->in_len = 0;
			return false;
		}
		if (!answer(c, &req, (size_t)r))
			return false;	/* its handler has it now */
		consume(c, (size_t)r);
	}
	return false;
}

/* The handler finished the request (request_finish): answer it for good
 * and drop its head; what follows in the input is the next request. */
static void settle(struct zh_conn *c)
{
	complete(c, c->req.finished_as);
	consume(c, c->req.head_len);
	req_release(c);
}

/* A local redirect (request_redirect): the same request, now a GET of the
 * new path without a body, routed from the start. */
static void reroute(struct zh_conn *c)
{
	struct zh_request *r = &c->req;
	zh_answer how;

	r->redirect_pending = false;
	r->handler = NULL;
	r->wait = NULL;
	r->want_input = false;
	c->paused = false;
	if (!r->body_read && (r->http.flags & (HTTP_F_CHUNKED |
					       HTTP_F_CONTENT_LENGTH)) &&
	    (r->http.content_length || (r->http.flags & HTTP_F_CHUNKED))) {
		r->keep_alive = false;	/* the old body is still coming */
		c->linger = true;
	}
	r->http.method = HTTP_M_GET;
	r->http.method_str = (struct http_str){ "GET", 3 };
	r->http.target = r->http.path =
		(struct http_str){ r->redirect, r->redirect_len };
	r->http.flags &= ~(HTTP_F_CONTENT_LENGTH | HTTP_F_CHUNKED |
			   HTTP_F_EXPECT_CONTINUE);
	r->http.content_length = 0;
	free(r->own_uri);
	r->own_uri = NULL;
	r->uri = NULL;
	r->status = 0;
	r->body_bytes = 0;
	how = route(c, r);
	if (!zh_waits(how)) {
		r->finished = true;	/* settled by the caller's loop */
		r->finished_as = how;
	}
}

/* A handler has the request and nothing is left to send: wait for it,
 * reading only if it asked for input.  Its progress is bounded by the
 * send timeout (re-armed whenever it produced output).  Returns false if
 * the connection was freed. */
static bool wait_in_handler(struct zh_conn *c)
{
	c->state = C_WAITING;
	/* EPOLLRDHUP: a client that leaves while its request waits aborts
	 * it (on_io), unless it left pipelined bytes behind.  Once on_io
	 * has narrowed the mask to EPOLLRDHUP it stays so for this request. */
	if (set_events(c, c->rdhup_seen ? 0 :
			  !c->req.want_input && c->in_epoll &&
			  c->events == EPOLLRDHUP ? EPOLLRDHUP : READ_EVENTS)) {
		conn_free(c);
		return false;
	}
	if (c->req.handler->own_timeouts)
		ev_timer_disarm(&c->timer);
	else
		arm(c, &c->w->t_send);
	return true;
}

/* Answer what is buffered and send it, until input runs out, the socket
 * is full or a handler has the request; then set the state and timer for
 * what comes next.  Returns false if the connection was freed. */
static bool step(struct zh_conn *c)
{
	struct zh_worker *w = c->w;
	bool need_more = false;

	for (;;) {
		if (c->active && c->req.finished)
			settle(c);
		else if (c->active && c->req.redirect_pending)
			reroute(c);
		if (c->active && (c->req.finished || c->req.redirect_pending))
			continue;
		if (!c->active)
			need_more = answer_buffered(c);
		if (zc_agg_len(c->out)) {
			c->state = C_WRITING;
			if (!flush(c))
				return false;
			if (zc_agg_len(c->out))
				return true;	/* EPOLLOUT calls us back */
		}
		if (c->active) {
			if (c->req.finished || c->req.redirect_pending)
				continue;
			if (c->paused) {
				/* The handler may produce again; what it
				 * does is looked at by this same loop. */
				c->paused = false;
				c->req.handler->drained(&c->req);
				continue;
			}
			return wait_in_handler(c);
		}
		if (c->close_after)
			return finish(c);
		if ((!c->in_len || need_more) && conn_refill(c))
			continue;	/* what the ring received ahead */
		if (!c->in_len || need_more)
			break;
	}

	if (c->in_len) {
		/* Part of the next request is here: its clock started when
		 * its first byte arrived, so keep the header timer running
		 * rather than re-arming it on every read. */
		if (c->state != C_READING) {
			c->state = C_READING;
			arm(c, &w->t_header);
		}
		return want_input(c);
	}
	if (w->stopping) {
		conn_free(c);
		return false;
	}
	return go_idle(c);
}

/* step(), with the handlers' posts folded into it (see post()). */
static void process(struct zh_conn *c)
{
	c->in_process = true;
	if (step(c))
		c->in_process = false;
}

/* ------------------------------------------------------------ input */

static void do_read(struct zh_conn *c)
{
	ssize_t n;

	if (c->state == C_LINGER) {
		char sink[4096];

		n = conn_recv(c, sink, sizeof(sink));
		if (n == 0 || (n < 0 && n != -EAGAIN))
			conn_free(c);
		return;
	}
	if (c->tls && !tls_established(c->tls)) {
		int err = tls_handshake(c->tls, &c->w->stats->tls);

		if (err == -EAGAIN || err == -EINPROGRESS) {
			if (set_events(c, err == -EAGAIN ? READ_EVENTS
							 : EPOLLOUT))
				conn_free(c);
			return;
		}
		if (err) {
			conn_free(c);
			return;
		}
		/* Established: the request may be here already. */
	}
	if (!c->in) {
		c->in = in_get(c->w);
		c->arena_used = 0;
		if (!c->in) {
			conn_free(c);
			return;
		}
	}
	if (conn_refill(c)) {	/* the ring's bytes come first */
		conn_got_input(c);
		return;
	}
	n = conn_recv(c, c->in + c->in_len, IN_CAP - c->in_len);
	if (n < 0) {
		if (n != -EAGAIN) {
			conn_free(c);
			return;
		}
		/* Nothing yet (a new connection whose request is not here,
		 * or a spurious wake-up): wait, holding no buffer if idle. */
		if (!c->in_len && !zc_agg_len(c->out)) {
			in_put(c->w, c->in);
			c->in = NULL;
		}
		want_input(c);
		return;
	}
	if (n == 0) {
		/* Peer closed.  Nothing in flight is owed to it. */
		conn_free(c);
		return;
	}
	c->in_len += (size_t)n;
	conn_got_input(c);
}

/* n bytes of input were added to c->in. */
void conn_got_input(struct zh_conn *c)
{
	if (c->state == C_IDLE) {
		c->state = C_READING;
		arm(c, &c->w->t_header);
	}
	process(c);
}

bool conn_want_input(struct zh_conn *c)
{
	return want_input(c);
}

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct zh_conn *c = data;

	(void)loop;
	(void)fd;
	if (c->state == C_WAITING) {
		char b;

		if (c->rx_draining)
			return;	/* the ring's last bytes first (conn_ring.c) */

		if (c->req.finished || c->req.redirect_pending) {
			process(c);	/* settle it; input waits its turn */
			return;
		}
		if (c->req.want_input && (ev & EPOLLIN)) {
			/* The handler reads (a request body); it reports
			 * through request.h, which posts us.  Bytes OpenSSL
			 * decrypted beyond what it took wake no epoll: feed
			 * them while it still asks. */
			do
				c->req.handler->input(&c->req);
			while (c->tls && c->req.want_input &&
			       !c->req.finished && !c->req.redirect_pending &&
			       tls_pending(c->tls));
			return;
		}
		if (!(ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
			/* Pipelined bytes, no hang-up: they wait their turn;
			 * watch for the hang-up only until then. */
			if (set_events(c, EPOLLRDHUP))
				conn_free(c);
			return;
		}
		if (!(ev & (EPOLLHUP | EPOLLERR)) &&
		    recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
			/* Half-closed after more requests: they wait their
			 * turn, and we cannot watch for the close any more
			 * (it would be reported until they are read). */
			c->rdhup_seen = true;
			set_events(c, 0);
			return;
		}
		/* The client is gone: the handler's work is abandoned (as
		 * nginx does unless told to ignore client aborts). */
		conn_free(c);
		return;
	}
	if (c->state == C_WRITING) {
		/* Writable (or an error iol_write will report): send the
		 * rest, then answer whatever is buffered. */
		process(c);
		return;
	}
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) ||
	    (c->tls && !tls_established(c->tls)))	/* handshake: EPOLLOUT */
		do_read(c);
}

ssize_t conn_recv(struct zh_conn *c, void *buf, size_t len)
{
	ssize_t n;

	if (c->tls)
		return tls_recv(c->tls, buf, len);
	n = recv(c->fd, buf, len, 0);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return n;
}

/*
 * Input that arrived ahead of the socket, which epoll cannot report: what
 * the ring received into the spill (conn_ring.c), or what OpenSSL holds
 * already decrypted.  Returns true if some was added to c->in.
 */
bool conn_refill(struct zh_conn *c)
{
	ssize_t n;

	if (conn_spill_take(c))
		return true;
	if (!c->tls || !tls_pending(c->tls))
		return false;
	if (!c->in) {
		c->in = in_get(c->w);	/* out is empty: no heads in it */
		c->arena_used = 0;
		if (!c->in)
			return false;
	}
	if (c->in_len == IN_CAP)
		return false;
	n = tls_recv(c->tls, c->in + c->in_len, IN_CAP - c->in_len);
	if (n <= 0)
		return false;	/* the next read reports it */
	c->in_len += (size_t)n;
	return true;
}
