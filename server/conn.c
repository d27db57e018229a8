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
 *   WAITING  the request needs the disk (a cache miss): a helper thread
 *            opens and prepares the file (diskio.h) while the loop serves
 *            others; the connection neither reads nor parses meanwhile,
 *            and when the job is done the same request is answered again,
 *            now from its result.
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
#include "respond.h"
#include "zchttpd.h"

#define IN_CAP (32u << 10)		/* request head buffer */
#define OUT_HIGH_WATER (256u << 10)	/* stop parsing beyond this backlog */
#define ACCEPT_BATCH 64
#define MAX_INFLIGHT 32			/* pinned entries per connection */

enum conn_state { C_IDLE, C_READING, C_WRITING, C_WAITING, C_LINGER };

struct conn {
	struct conn *prev, *next;	/* worker's list */
	struct worker *w;
	int fd;
	zc_sink sink;			/* fd, probed once for iol_write */
	enum conn_state state;
	struct ev_timer timer;
	char *in;			/* IN_CAP bytes, or NULL when idle */
	size_t in_len;
	struct http_parser parser;
	zc_agg *out;
	bool close_after;		/* close once out is sent */
	bool linger;			/* the client may still be sending:
					 * close via LINGER, not at once */
	uint32_t events;		/* epoll mask registered */
	bool in_epoll;			/* registered at all (see conn_new) */
	struct disk_job *pending;	/* helper job we wait for */
	struct disk_job *done;		/* its result, for the re-answer */
	struct sockaddr_storage peer;
	/* Cache entries used by queued responses, oldest first, each with
	 * the stream offset where its response ends: once `sent` passes
	 * it, the entry is unpinned. */
	uint64_t sent;
	struct inflight {
		struct cache_entry *e;
		uint64_t end;
	} fl[MAX_INFLIGHT];
	unsigned nfl;
};

#define conn_of_timer(t) \
	((struct conn *)((char *)(t) - offsetof(struct conn, timer)))

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);
static void process(struct conn *c);
static void do_read(struct conn *c);

/* ------------------------------------------------------------ life */

static void unpin_sent(struct conn *c, bool all)
{
	unsigned i = 0;

	while (i < c->nfl && (all || c->fl[i].end <= c->sent))
		cache_unpin(c->w->cache, c->fl[i++].e);
	memmove(c->fl, c->fl + i, (c->nfl - i) * sizeof(c->fl[0]));
	c->nfl -= i;
}

static void conn_free(struct conn *c)
{
	struct worker *w = c->w;

	unpin_sent(c, true);
	if (c->pending)
		c->pending->owner = NULL;	/* the loop frees it later */
	if (c->done)
		static_job_release(c->done);
	ev_timer_disarm(&c->timer);
	/* close() takes the fd out of epoll (nothing else holds it); just
	 * make sure a stale event later in this batch finds no handler. */
	ev_forget(w->loop, c->fd);
	close(c->fd);
	zc_agg_release(c->out);
	free(c->in);
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

static void count_status(struct worker *w, int status)
{
	int cls = status / 100;

	if (cls >= 1 && cls <= 5)
		w->stats->responses[cls]++;
}

static void on_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct conn *c = conn_of_timer(t);

	(void)loop;
	switch (c->state) {
	case C_READING:
		/* The head did not arrive in time: say so, then close. */
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
	case C_WAITING:		/* the disk did not answer in time */
	case C_WRITING:
		/* The client stopped reading: give up on it. */
		c->w->stats->timeouts++;
		conn_free(c);
		return;
	case C_IDLE:
	case C_LINGER:
		conn_free(c);
		return;
	}
}

static void arm(struct conn *c, struct ev_timer_list *l)
{
	ev_timer_arm(c->w->loop, l, &c->timer, on_timeout);
}

/* Level-triggered: while a response is pending we wait for EPOLLOUT only
 * (input is not read then, and a readable socket must not wake us in a
 * loop); while waiting for the disk for nothing; otherwise for EPOLLIN.
 * A new connection enters epoll only the first time it has to wait. */
static int set_events(struct conn *c, uint32_t events)
{
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
static struct conn *conn_new(struct worker *w, int fd,
			     const struct sockaddr_storage *ss)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c || zc_agg_create(&c->out)) {
		free(c);
		return NULL;
	}
	c->w = w;
	c->fd = fd;
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
	arm(c, &w->t_idle);
	return c;
}

int conn_accept_all(struct worker *w)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		struct conn *c;
		int fd = accept4(w->lfd, (struct sockaddr *)&ss, &len,
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
		c = conn_new(w, fd, &ss);
		if (!c) {
			close(fd);
			continue;
		}
		do_read(c);	/* may answer and free it */
	}
	return 0;
}

void conn_close_idle(struct worker *w)
{
	struct conn *c = w->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->state == C_IDLE || c->state == C_LINGER)
			conn_free(c);
		else if (c->state != C_WAITING)	/* that one is answered,
						 * then closed (stopping) */
			c->close_after = true;
	}
}

void conn_close_all(struct worker *w)
{
	while (w->conns)
		conn_free(w->conns);
}

/* ------------------------------------------------------------ output */

/* Wait for more input (registering with epoll if this is the first wait);
 * returns false if the connection had to be freed. */
static bool want_input(struct conn *c)
{
	if (set_events(c, EPOLLIN)) {
		conn_free(c);
		return false;
	}
	return true;
}

static void go_idle(struct conn *c)
{
	c->state = C_IDLE;
	/* An idle connection holds no input buffer. */
	free(c->in);
	c->in = NULL;
	if (want_input(c))
		arm(c, &c->w->t_idle);
}

/* Returns false if the connection was freed. */
static bool start_linger(struct conn *c)
{
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
static bool finish(struct conn *c)
{
	if (c->linger || c->in_len)
		return start_linger(c);
	conn_free(c);
	return false;
}

/* Send what we can; returns false if the connection was freed. */
static bool flush(struct conn *c)
{
	while (zc_agg_len(c->out)) {
		ssize_t n = iol_write_sink(&c->sink, c->out);

		if (n > 0) {
			c->w->stats->bytes_sent += (uint64_t)n;
			c->sent += (uint64_t)n;
			if (c->nfl)
				unpin_sent(c, false);
			continue;
		}
		if (n == -EAGAIN || n == -EINTR) {
			if (n == -EINTR)
				continue;
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
	/* A connection about to close needs no input events (a lingering
	 * one registers its own): Connection: close never touches epoll. */
	if (c->close_after)
		return finish(c);
	if (set_events(c, c->pending ? 0 : EPOLLIN)) {
		conn_free(c);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ requests */

/* Answer one parsed request by appending its response to c->out.  Returns
 * false if the answer waits for a helper job (nothing was appended). */
static bool answer(struct conn *c, const struct http_request *req)
{
	struct worker *w = c->w;
	struct request_ctx rc = {
		.req = req,
		.head = req->method == HTTP_M_HEAD,
		.keep_alive = (req->flags & HTTP_F_KEEP_ALIVE) && !w->stopping,
		.done = c->done,
	};
	size_t before = zc_agg_len(c->out);
	int err = 0;

	w->stats->requests++;
	/* A request body would have to be read and thrown away; the static
	 * server takes none, so it answers and closes instead. */
	if ((req->flags & HTTP_F_CHUNKED) ||
	    ((req->flags & HTTP_F_CONTENT_LENGTH) && req->content_length)) {
		rc.keep_alive = false;
		c->linger = true;
	}

	if ((req->flags & HTTP_F_CONTENT_LENGTH) &&
	    req->content_length > w->cfg->max_body_bytes) {
		err = 413;	/* refused before anything else about it */
	} else if (req->method != HTTP_M_GET && req->method != HTTP_M_HEAD) {
		err = req->method == HTTP_M_OTHER ? 501 : 405;
	} else if (status_matches(w, req)) {
		err = status_serve(w, &rc, c->out);
	} else {
		err = static_serve(w, &rc, c->out);
	}
	if (c->done) {
		static_job_release(c->done);
		c->done = NULL;
	}
	if (rc.pending) {
		c->pending = rc.pending;
		c->pending->owner = c;
		return false;
	}
	if (err) {
		zc_agg_truncate(c->out, before);
		rc.status = err;
		rc.body_bytes = 0;
		if (err >= 500 && err != 501 && err != 503)
			rc.keep_alive = false;
		if (resp_error(c->out, err, rc.head, rc.keep_alive,
			       err == 405 ? "Allow: GET, HEAD\r\n" : NULL)) {
			rc.keep_alive = false;
		}
	}
	if (rc.entry && !err) {
		cache_pin(w->cache, rc.entry);
		c->fl[c->nfl].e = rc.entry;
		c->fl[c->nfl].end = c->sent + zc_agg_len(c->out);
		c->nfl++;
	}
	count_status(w, rc.status);
	access_log_request(w->log, &c->peer, req, rc.status,
			   zc_agg_len(c->out) - before);
	if (!rc.keep_alive)
		c->close_after = true;
	return true;
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
	http_parser_init(&c->parser);
}

/* Parse and answer every complete request in the buffer; returns true if
 * the head in the buffer is incomplete (more input is needed). */
static bool answer_buffered(struct conn *c)
{
	struct worker *w = c->w;

	while (!c->pending && c->in_len && !c->close_after &&
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
			access_log_request(w->log, &c->peer, NULL, req.error, 0);
			c->close_after = true;
			c->linger = true;
			c->in_len = 0;
			return false;
		}
		if (!answer(c, &req))
			return false;	/* the request stays until re-answered */
		consume(c, (size_t)r);
	}
	return false;
}

/* Answer what is buffered and send it, until input runs out or the socket
 * is full; then set the state and timer for what comes next. */
static void process(struct conn *c)
{
	struct worker *w = c->w;
	bool need_more;

	do {
		need_more = answer_buffered(c);
		if (zc_agg_len(c->out)) {
			c->state = C_WRITING;
			if (!flush(c) || c->state == C_LINGER)
				return;
			if (zc_agg_len(c->out))
				return;	/* EPOLLOUT calls us back */
		}
		if (c->pending) {
			/* Sent all that came before; now wait for the disk,
			 * bounded by the send timeout. */
			c->state = C_WAITING;
			arm(c, &w->t_send);
			return;
		}
		if (c->close_after) {
			finish(c);
			return;
		}
	} while (c->in_len && !need_more);

	if (c->in_len) {
		/* Part of the next request is here: its clock started when
		 * its first byte arrived, so keep the header timer running
		 * rather than re-arming it on every read. */
		if (c->state != C_READING) {
			c->state = C_READING;
			arm(c, &w->t_header);
		}
		want_input(c);
		return;
	}
	if (w->stopping) {
		conn_free(c);
		return;
	}
	go_idle(c);
}

/* ------------------------------------------------------------ input */

static void do_read(struct conn *c)
{
	ssize_t n;

	if (c->state == C_LINGER) {
		char sink[4096];

		n = recv(c->fd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			conn_free(c);
		return;
	}
	if (!c->in) {
		c->in = malloc(IN_CAP);
		if (!c->in) {
			conn_free(c);
			return;
		}
	}
	n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			conn_free(c);
			return;
		}
		/* Nothing yet (a new connection whose request is not here,
		 * or a spurious wake-up): wait, holding no buffer if idle. */
		if (!c->in_len) {
			free(c->in);
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
	if (c->state == C_IDLE) {
		c->state = C_READING;
		arm(c, &c->w->t_header);
	}
	c->in_len += (size_t)n;
	process(c);
}

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct conn *c = data;

	(void)loop;
	(void)fd;
	if (c->state == C_WAITING) {
		/* Only errors and hang-ups are reported now: the client is
		 * gone; the job is abandoned. */
		conn_free(c);
		return;
	}
	if (c->state == C_WRITING) {
		/* Writable (or an error iol_write will report): send the
		 * rest, then answer whatever is buffered. */
		process(c);
		return;
	}
	if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
		do_read(c);
}

void conn_disk_done(struct disk_job *job)
{
	struct conn *c = job->owner;

	c->pending = NULL;
	c->done = job;
	job->owner = NULL;
	c->state = C_READING;
	process(c);
}
