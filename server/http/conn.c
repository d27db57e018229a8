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
 *            file extents); the socket sends what it takes and the rest
 *            waits; room (SOCK_OUT) resumes it; the send timer runs while
 *            the client does not read.  No new request is parsed while output
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
 *
 * Below the state machine is the connection's socket (sock.h): it reads
 * the input into its buffer and calls on_read, reports readiness to
 * on_ready, and sends; whether that is recv, a ring receive, OpenSSL or
 * kernel TLS is its business.  Beside it, the router (router.h) says
 * which handler answers a request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access_log.h"
#include "cache.h"
#include "conn.h"
#include "conn_int.h"
#include "h2.h"
#include "request.h"
#include "respond.h"
#include "router.h"
#include "sock.h"
#include "vhost.h"
#include "zchttpd.h"

#define ACCEPT_BATCH 64

#define conn_of_timer(t) \
	((struct zh_conn *)((char *)(t) - offsetof(struct zh_conn, timer)))

static void process(struct zh_conn *c);
static void on_posted(struct ev_post *p);
static const struct sock_hooks conn_sock_hooks, conn_first_hooks;

/* ------------------------------------------------------------ life */

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

static void conn_free(struct zh_conn *c)
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
	if (c->h2)
		h2_conn_free(c->h2);	/* its streams' handlers aborted */
	ev_unpost(&c->post);
	unpin_sent(c, true);
	ev_timer_disarm(&c->timer);
	zc_agg_release(c->out);	/* before the head arena goes with the
				 * socket's buffer */
	sock_close(&c->sock);
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

/* Forget the input: the connection answers no more of it. */
static void drop_input(struct zh_conn *c)
{
	sock_in_consume(&c->sock.in, 0, c->sock.in.len);
}

static void on_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct zh_conn *c = conn_of_timer(t);

	(void)loop;
	switch (c->state) {
	case C_READING:
		/* The head did not arrive in time: say so, then close. */
		if (sock_handshaking(&c->sock)) {
			c->w->stats->timeouts++;
			conn_free(c);
			return;
		}
		c->w->stats->timeouts++;
		zc_agg_truncate(c->out, 0);
		resp_error(c->out, 408, false, false, NULL);
		zh_count_status(c->w, 408);
		c->close_after = true;
		c->linger = true;
		drop_input(c);
		c->state = C_WRITING;
		process(c);
		return;
	case C_WAITING:		/* the handler made no progress in time */
	case C_WRITING:		/* the client stopped reading */
		c->w->stats->timeouts++;
		conn_free(c);
		return;
	case C_IDLE:
		if (sock_handshaking(&c->sock))
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

/*
 * A new connection is read at once (sock_try_read), before its socket
 * waits for anything: the listener defers accept until the request has
 * arrived (TCP_DEFER_ACCEPT, listen.c), so the first recv normally finds it.  A
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
	/* The cache revalidates files every --cache-ttl: no fstat per send. */
	if (sock_init(&c->sock, &w->socks, fd,
		      (tls ? SOCK_TLS : 0) | SOCK_TRUST_EXTENTS,
		      w->cfg->h2.on ? &conn_first_hooks : &conn_sock_hooks,
		      c)) {
		zc_agg_release(c->out);
		free(c);
		return NULL;
	}
	c->w = w;
	ev_post_init(&c->post, on_posted);
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
	arm(c, sock_handshaking(&c->sock) ? &w->t_header : &w->t_idle);
	return c;
}

int conn_worker_init(struct zh_worker *w)
{
	return sock_env_init(&w->socks, w->loop, IN_CAP, HEAD_ARENA,
			     w->cfg->tls_ctx, &w->stats->tls);
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
		sock_try_read(&c->sock);	/* may answer and free it */
	}
	return 0;
}

void conn_close_idle(struct zh_worker *w)
{
	struct zh_conn *c = w->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->h2)
			h2_conn_shutdown(c->h2);	/* GOAWAY */
		else if (c->state == C_IDLE || c->state == C_LINGER)
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
	sock_env_fini(&w->socks);
}

/* Posted by a handler through request.c (conn_post). */
static void on_posted(struct ev_post *p)
{
	process((struct zh_conn *)((char *)p - offsetof(struct zh_conn, post)));
}

/* ------------------------------------------------------------ output */

/* Wait for more input (the socket reads it into its buffer and calls
 * on_read); returns false if the connection had to be freed. */
static bool want_input(struct zh_conn *c)
{
	if (sock_read_start(&c->sock)) {
		conn_free(c);
		return false;
	}
	return true;
}

/* Wait for readiness (on_ready); returns false if the connection had to
 * be freed. */
static bool want_ready(struct zh_conn *c, unsigned events)
{
	if (sock_wait(&c->sock, events)) {
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
	/* An idle connection holds no input buffer (out is empty: its head
	 * arena is free). */
	c->arena_used = 0;
	sock_release_buffer(&c->sock);
	if (!want_input(c))
		return false;
	arm(c, &c->w->t_idle);
	return true;
}

/* Returns false if the connection was freed. */
static bool start_linger(struct zh_conn *c)
{
	sock_shutdown(&c->sock);
	c->state = C_LINGER;
	drop_input(c);
	if (sock_drain_start(&c->sock)) {
		conn_free(c);
		return false;
	}
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
	if (c->linger || c->sock.in.len)
		return start_linger(c);
	conn_free(c);
	return false;
}

/* Send what we can; returns false if the connection was freed.  Output
 * left over waits for room under the send timer. */
static bool flush(struct zh_conn *c)
{
	while (zc_agg_len(c->out)) {
		ssize_t n = sock_send(&c->sock, c->out);

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
			if (!want_ready(c, SOCK_OUT))
				return false;
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
		if (resp_error_sized(c->out, err, r->head_only, r->keep_alive,
				     err == 405 ? "Allow: GET, HEAD\r\n" : NULL,
				     &r->body_bytes))
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
	zh_count_status(w, r->status);
	/* The body's bytes, as Combined Log Format means them (Apache's
	 * %b, nginx's $body_bytes_sent): what log analysers take for the
	 * object's size. */
	access_log_request_upstream(r->vhost->log, &c->peer, &r->http, NULL,
				    r->status, r->body_bytes, r->upstream,
				    r->upstream_ms);
	if (!r->keep_alive)
		c->close_after = true;
}

/* Answer the request parsed into c->req.http (its head is the first
 * head_len bytes of the input).  Returns false if the answer waits in a
 * handler. */
static bool answer(struct zh_conn *c, size_t head_len)
{
	struct zh_worker *w = c->w;
	struct zh_request *r = &c->req;
	const struct http_request *req = &r->http;
	const size_t past_head = offsetof(struct zh_request, http) +
				 sizeof(r->http);
	zh_answer how;

	/* Everything but the head starts anew (no copy of the head). */
	memset(r, 0, offsetof(struct zh_request, http));
	memset((char *)r + past_head, 0, sizeof(*r) - past_head);
	r->conn = c;
	r->w = w;
	r->vhost = &w->vhosts[vhost_find(w->cfg, req)];
	r->head_len = head_len;
	r->head_only = req->method == HTTP_M_HEAD;
	r->keep_alive = (req->flags & HTTP_F_KEEP_ALIVE) && !w->stopping;
	c->req_start = conn_queued_end(c);
	zh_count_request(w, r->vhost);
	how = router_route(&w->router, r);
	if (zh_waits(how))
		return false;
	complete(c, how);
	return true;
}

static void consume(struct zh_conn *c, size_t n)
{
	sock_in_consume(&c->sock.in, 0, n);
	http_parser_init(&c->parser);
}

/* Parse and answer every complete request in the buffer; returns true if
 * the head in the buffer is incomplete (more input is needed). */
static bool answer_buffered(struct zh_conn *c)
{
	struct zh_worker *w = c->w;

	while (!c->active && c->sock.in.len && !c->close_after &&
	       c->nfl < MAX_INFLIGHT && zc_agg_len(c->out) < OUT_HIGH_WATER) {
		/* No request is active: its head is parsed in place. */
		struct http_request *req = &c->req.http;
		ssize_t r;

		req->headers = w->slots;
		r = http_parse_request(&c->parser, c->sock.in.buf,
				       c->sock.in.len, &w->cfg->limits, req);

		if (r == HTTP_PARSE_INCOMPLETE) {
			if (c->sock.in.len < sock_in_cap(&c->sock))
				return true;
			/* Limits are below IN_CAP, so the parser should
			 * have refused first; be safe anyway. */
			req->error = HTTP_E_HEADERS_TOO_LARGE;
			r = HTTP_PARSE_ERROR;
		}
		if (r == HTTP_PARSE_ERROR) {
			uint64_t page = 0;

			resp_error_sized(c->out, req->error, false, false, NULL,
					 &page);
			zh_count_status(w, req->error);
			/* Unparsed: no Host to go by, the default site's. */
			access_log_request(w->vhosts[w->cfg->default_site].log,
					   &c->peer, NULL, req->error, page);
			c->close_after = true;
			c->linger = true;
			drop_input(c);
			return false;
		}
		if (!answer(c, (size_t)r))
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

	c->paused = false;
	if (request_redirected(r)) {
		r->keep_alive = false;	/* the old body is still coming */
		c->linger = true;
	}
	how = router_route(&c->w->router, r);
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
	/* SOCK_HUP: a client that leaves while its request waits aborts it
	 * (on_ready), unless it left pipelined bytes behind.  Input is
	 * watched too while nothing arrived that the handler did not ask
	 * for: the same interest as reading, so that a request waiting on a
	 * backend costs no epoll_ctl.  Once on_ready has narrowed it to
	 * SOCK_HUP it stays so for this request. */
	if (!want_ready(c, c->rdhup_seen ? 0 :
			   !c->req.want_input &&
			   sock_waits(&c->sock) == SOCK_HUP
			   ? SOCK_HUP : SOCK_IN | SOCK_HUP))
		return false;
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
				return true;	/* SOCK_OUT calls us back */
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
		if ((!c->sock.in.len || need_more) && sock_fill(&c->sock))
			continue;	/* what the socket holds ahead */
		if (!c->sock.in.len || need_more)
			break;
	}

	if (c->sock.in.len) {
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

/* The socket's read hook: bytes came into its buffer, or it ended. */
static void on_read(struct zh_sock *s, ssize_t n)
{
	struct zh_conn *c = s->data;

	if (n <= 0) {
		/* Peer closed (or broke).  Nothing in flight is owed to it. */
		conn_free(c);
		return;
	}
	if (c->state == C_IDLE) {
		c->state = C_READING;
		arm(c, &c->w->t_header);
	}
	process(c);
}

/* The socket's readiness hook: room to send (WRITING), or input or a
 * hang-up while a handler has the request (WAITING). */
static void on_ready(struct zh_sock *s, unsigned ev)
{
	struct zh_conn *c = s->data;

	if (c->state != C_WAITING) {
		/* Writable (or an error the send will report): send the rest,
		 * then answer whatever is buffered. */
		process(c);
		return;
	}
	if (c->req.finished || c->req.redirect_pending) {
		process(c);	/* settle it; input waits its turn */
		return;
	}
	if (c->req.want_input && (ev & SOCK_IN)) {
		/* The handler reads (a request body); it reports through
		 * request.h, which posts us.  Input the socket holds beyond
		 * what it took (decoded TLS records, bytes a ring receive
		 * delivered behind the buffer) wakes nothing: feed it while
		 * the handler still asks. */
		do
			c->req.handler->input(&c->req);
		while (c->req.want_input && !c->req.finished &&
		       !c->req.redirect_pending && sock_holds(&c->sock));
		return;
	}
	if (!(ev & (SOCK_HUP | SOCK_ERR))) {
		/* Pipelined bytes, no hang-up: they wait their turn; watch
		 * for the hang-up only until then. */
		want_ready(c, SOCK_HUP);
		return;
	}
	if (!(ev & SOCK_ERR) && sock_peek(&c->sock)) {
		/* Half-closed after more requests: they wait their turn, and
		 * we cannot watch for the close any more (it would be
		 * reported until they are read). */
		c->rdhup_seen = true;
		sock_wait(&c->sock, 0);
		return;
	}
	/* The client is gone: the handler's work is abandoned (as nginx does
	 * unless told to ignore client aborts). */
	conn_free(c);
}

static const struct sock_hooks conn_sock_hooks = {
	.read = on_read,
	.ready = on_ready,
};

/* The first bytes (on HTTPS, the protocol ALPN chose) say what the
 * connection speaks: HTTP/2 takes the socket over (h2.h); for HTTP/1.x
 * the hooks above read from then on, and this costs nothing more. */
static void on_first_read(struct zh_sock *s, ssize_t n)
{
	struct zh_conn *c = s->data;

	switch (n > 0 ? h2_detect(s, c->w->cfg) : H2_NO) {
	case H2_MAYBE:		/* part of the preface: the rest is due */
		if (c->state == C_IDLE) {
			c->state = C_READING;
			arm(c, &c->w->t_header);
		}
		want_input(c);
		return;
	case H2_YES:
		if (h2_conn_start(c))
			conn_free(c);
		return;
	case H2_NO:
		break;
	}
	sock_set_hooks(s, &conn_sock_hooks, c);
	on_read(s, n);
}

static const struct sock_hooks conn_first_hooks = {
	.read = on_first_read,
	.ready = on_ready,
};

void conn_close(struct zh_conn *c)
{
	conn_free(c);
}
