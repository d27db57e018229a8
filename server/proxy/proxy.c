/*
 * proxy.c - a request answered by an HTTP upstream (proxy.h).
 *
 * The request waits in this handler (request.h) from its head to the end
 * of the response:
 *
 *   1. A connection (upstream.h): an idle keep-alive one, a new one, or a
 *      place in the group's queue.
 *   2. The request head as the intermediary rewrites it (proxy_head.c),
 *      then the body as it arrives from the client, framed by us: a length
 *      as the client gave it, else chunked.  Reading the client stops
 *      while the upstream has not taken what was sent (TX_HIGH_WATER).
 *   3. The response head, gathered in a pool buffer (bounded: a larger
 *      head is a 502), 1xx passed on to HTTP/1.1 clients; the client's
 *      head built from it; the body by proxy_relay.c.
 *   4. The body's end gives the connection back, to be kept if both the
 *      upstream and the exchange allow it.
 *
 * Faults.  Before a response head: the server is blamed (passive health)
 * and the request goes to another server when that is safe -- it was
 * never sent (the connection failed), or it is idempotent, had no body
 * and nothing came back -- else 502 (504 on a timeout).  A keep-alive
 * connection that the server closed just as we reused it is no fault of
 * the server's: the request goes again on a new one when safe.  After the
 * head: the client's connection is cut, so a truncated body is never taken
 * for a whole one.  A client that goes away closes the upstream
 * connection (its response can no longer be read to a clean end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errlog.h"
#include "proxy_int.h"
#include "proxy_req.h"
#include "request.h"
#include "zchttpd.h"

#define HEAD_MAX (64u << 10)		/* the request head we send */
#define RX_HEAD (32u << 10)		/* the response head's buffer */
#define BODY_READ (256u << 10)		/* one read of a request body */
#define TX_HIGH_WATER (512u << 10)	/* stop reading the client */
#define MAX_SPARE_PIPES 128	/* as many as responses in flight need */

static const struct zh_handler proxy_handler;

/* ------------------------------------------------------------ pipes */

zc_pipe *px_pipe_get(struct zh_worker *w)
{
	struct proxy_worker *pw = w->proxy;
	zc_pipe *p = NULL;

	/* A pipe whose bytes are all gone (held 0) can carry another
	 * response: every slice still naming it is behind its read
	 * position (zc.h). */
	pw->pipes_taken = true;
	for (unsigned i = 0; i < pw->npipes; i++)
		if (!zc_pipe_held(pw->pipes[i])) {
			p = pw->pipes[i];
			pw->pipes[i] = pw->pipes[--pw->npipes];
			return p;
		}
	return zc_pipe_create(w->cfg->proxy.pipe_size, &p) ? NULL : p;
}

static void pipes_free(struct proxy_worker *pw)
{
	for (unsigned i = 0; i < pw->npipes; i++)
		zc_pipe_release(pw->pipes[i]);
	pw->npipes = 0;
}

/* Spares nobody took for a whole --proxy-idle close, as idle upstream
 * connections do: a worker that stopped proxying holds no pipes. */
static void on_pipe_tick(struct ev_loop *loop, struct ev_timer *t)
{
	struct proxy_worker *pw = (struct proxy_worker *)
		((char *)t - offsetof(struct proxy_worker, pipe_timer));

	if (!pw->pipes_taken)
		pipes_free(pw);
	pw->pipes_taken = false;
	if (pw->npipes)
		ev_timer_arm(loop, pw->t_pipes, &pw->pipe_timer,
			     on_pipe_tick);
}

void px_pipe_put(struct zh_worker *w, zc_pipe *pipe)
{
	struct proxy_worker *pw = w->proxy;

	if (!pipe)
		return;
	if (!pw->pipes)
		pw->pipes = calloc(MAX_SPARE_PIPES, sizeof(*pw->pipes));
	if (!pw->pipes || pw->npipes == MAX_SPARE_PIPES) {
		/* Full: the oldest that still holds bytes goes (its
		 * slices keep it alive until they are sent or dropped). */
		unsigned i = 0;

		while (pw->pipes && i < pw->npipes &&
		       !zc_pipe_held(pw->pipes[i]))
			i++;
		if (!pw->pipes || i == pw->npipes) {
			zc_pipe_release(pipe);
			return;
		}
		zc_pipe_release(pw->pipes[i]);
		pw->pipes[i] = pipe;
		return;
	}
	pw->pipes[pw->npipes++] = pipe;
	if (!ev_timer_armed(&pw->pipe_timer))
		ev_timer_arm(w->loop, pw->t_pipes, &pw->pipe_timer,
			     on_pipe_tick);
}

/* ------------------------------------------------------------ the end */

static void px_free(struct px_req *p)
{
	ev_timer_disarm(&p->cl.qt);
	free(p->head);
	zc_agg_release(p->tx);
	zc_buf_release(p->rx);
	px_pipe_put(p->w, p->pipe);
	free(p);
}

/* The request is over for this handler: tell the connection how. */
static void finish(struct px_req *p, zh_answer how)
{
	struct zh_request *r = p->r;

	if (r) {
		r->body_read = p->body_read;
		if (p->start_ms)
			r->upstream_ms = ev_now_ms(p->w->loop) - p->start_ms;
		request_finish(r, how);
	}
	px_free(p);
}

/* Let go of the connection: kept when the exchange ended cleanly. */
static void drop_conn(struct px_req *p, bool reusable)
{
	if (p->uc) {
		up_release(p->uc, reusable);
		p->uc = NULL;
	}
}

void px_done(struct px_req *p)
{
	drop_conn(p, p->reusable && p->sent);
	finish(p, ZH_ANSWERED);
}

void px_cut(struct px_req *p, const char *why)
{
	zh_log(ZL_ERROR, "proxy %s: response cut after %llu bytes of body: "
	       "%s", p->uc ? up_server(p->uc)->spec : p->rt->spec,
	       (unsigned long long)p->body_sent, why);
	drop_conn(p, false);
	finish(p, ZH_TRUNCATED);
}

/* ------------------------------------------------------------ request */

static bool idempotent(const struct http_request *req)
{
	switch (req->method) {
	case HTTP_M_GET:
	case HTTP_M_HEAD:
	case HTTP_M_PUT:
	case HTTP_M_DELETE:
	case HTTP_M_OPTIONS:
	case HTTP_M_TRACE:
		return true;
	default:
		return false;
	}
}

/* Percent-encode a decoded path for a request-target: what RFC 3986
 * allows in a path segment stays, everything else is escaped. */
static size_t encode_path(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') ||
			     strchr("-._~!$&'()*+,;=:@/", c);

		if (k + 3 > cap)
			return SIZE_MAX;
		if (plain && c) {
			out[k++] = (char)c;
		} else {
			out[k++] = '%';
			out[k++] = hex[c >> 4];
			out[k++] = hex[c & 15];
		}
	}
	return k;
}

/* The request-target for the upstream into buf: as the client sent it,
 * or with the route's prefix replaced by the URL's path. */
static ssize_t target(const struct px_req *p, char *buf, size_t cap)
{
	const struct zh_request *r = p->r;
	const struct http_request *req = &r->http;
	const struct zh_proxy_route *rt = p->rt;
	const char *raw = req->path.p;
	size_t rn = req->path.len, k;

	if (req->form == HTTP_T_ASTERISK) {
		raw = "*";
		rn = 1;
	} else if (!rn) {
		raw = "/";		/* absolute-form without a path */
		rn = 1;
	}
	if (!rt->path || req->form == HTTP_T_ASTERISK) {
		if (rn > cap)
			return -ENOSPC;
		memcpy(buf, raw, rn);
		return (ssize_t)rn;
	}
	if (rt->path_len > cap)
		return -ENOSPC;
	memcpy(buf, rt->path, rt->path_len);
	k = rt->path_len;
	if (rn >= rt->match_len && !memcmp(raw, rt->match, rt->match_len)) {
		/* The prefix as written: the rest goes as it came. */
		if (k + rn - rt->match_len > cap)
			return -ENOSPC;
		memcpy(buf + k, raw + rt->match_len, rn - rt->match_len);
		return (ssize_t)(k + rn - rt->match_len);
	}
	/* Spelled otherwise (escapes, dot segments): the normalized path,
	 * encoded again, and the query. */
	{
		size_t e = encode_path(r->uri + rt->match_len,
				       r->uri_len - rt->match_len, buf + k,
				       cap - k);

		if (e == SIZE_MAX)
			return -ENOSPC;
		k += e;
	}
	if (r->up.query) {
		if (k + 1 + r->up.query_len > cap)
			return -ENOSPC;
		buf[k++] = '?';
		memcpy(buf + k, r->up.query, r->up.query_len);
		k += r->up.query_len;
	}
	return (ssize_t)k;
}

/* Scratch of the worker's loop (one thread): the target being made, and
 * the client's response head before the connection copies it. */
static char tgt[ZH_PATH_MAX * 3 + 64];
static char client_head[RX_HEAD + 4096];

static int build_head(struct px_req *p, const struct zh_upstream_server *s)
{
	struct zh_request *r = p->r;
	struct ph_request in = {
		.req = &r->http,
		.pc = &p->w->cfg->proxy,
		.server = s,
		.peer = request_peer(r),
		.secure = request_secure(r),
		.h2 = r->stream != NULL,
		.upgrade = p->tunnel,
	};
	size_t cap = r->head_len + 2048;
	ssize_t n = target(p, tgt, sizeof(tgt));

	if (n < 0)
		return 414;
	in.target = tgt;
	in.target_len = (size_t)n;
	switch (p->body_in) {
	case PX_IN_NONE:
		in.framing = PH_NONE;
		break;
	case PX_IN_LENGTH:
		in.framing = PH_LENGTH;
		in.length = r->http.content_length;
		break;
	case PX_IN_CHUNKED:
	case PX_IN_TO_END:
		in.framing = PH_CHUNKED;
		break;
	}
	/* HTTP/2 heads have no text to size from: their fields' bytes. */
	if (r->stream)
		for (size_t i = 0; i < r->http.num_headers; i++)
			cap += r->http.headers[i].name.len +
			       r->http.headers[i].value.len + 4;
	cap += (size_t)n;
	for (;;) {
		char *h = realloc(p->head, cap);

		if (!h)
			return 503;
		p->head = h;
		n = ph_request_head(&in, h, cap);
		if (n >= 0 || cap >= HEAD_MAX)
			break;
		cap = cap * 2 > HEAD_MAX ? HEAD_MAX : cap * 2;
	}
	if (n < 0)
		return 431;
	p->head_len = (size_t)n;
	p->head_for = s;
	return 0;
}

ssize_t px_read(struct px_req *p, size_t want, zc_buf **out)
{
	zc_buf *b;
	ssize_t k;

	*out = NULL;
	if (zc_buf_alloc(NULL, want, &b))
		return -ENOMEM;
	do
		k = recv(up_fd(p->uc), zc_buf_wptr(b), want, 0);
	while (k < 0 && errno == EINTR);
	if (k <= 0) {
		k = k < 0 ? -errno : 0;
		zc_buf_release(b);
		return k;
	}
	zc_buf_publish(b, (size_t)k);
	*out = b;
	return k;
}

int px_chunk_line(zc_agg *out, size_t len)
{
	char line[24];
	int n = snprintf(line, sizeof(line), "%zx\r\n", len);

	return zc_agg_append_bytes(out, NULL, line, (size_t)n) ? -ENOMEM : 0;
}

/* Append body bytes for the upstream, framed as the head said. */
static int queue_body(struct px_req *p, zc_agg *data, const char *bytes,
		      size_t n)
{
	bool chunked = p->body_in == PX_IN_CHUNKED ||
		       p->body_in == PX_IN_TO_END;
	size_t len = data ? zc_agg_len(data) : n;
	int err = 0;

	if (!len)
		return 0;
	if (chunked)
		err = px_chunk_line(p->tx, len);
	if (!err)
		err = data ? zc_agg_concat(p->tx, data)
			   : zc_agg_append_bytes(p->tx, NULL, bytes, n);
	if (!err && chunked)
		err = zc_agg_append_bytes(p->tx, NULL, "\r\n", 2);
	return err ? -ENOMEM : 0;
}

/* The end of a chunked body (no trailer: the client's were checked and
 * are dropped). */
static int queue_end(struct px_req *p)
{
	if (p->body_ended)
		return 0;
	p->body_ended = true;
	if (p->body_in == PX_IN_CHUNKED || p->body_in == PX_IN_TO_END)
		return zc_agg_append_bytes(p->tx, NULL, "0\r\n\r\n", 5)
		       ? -ENOMEM : 0;
	return 0;
}

/* Take the body bytes the connection already has (after the head, or
 * read since).  Returns 0, an HTTP status (a bad chunk: 400, too large:
 * 413) or a negative errno. */
static int take_input(struct px_req *p)
{
	struct zh_request *r = p->r;
	const char *in;
	size_t n, used = 0;
	int err = 0;

	if (p->body_read)
		return 0;
	request_input(r, &in, &n);
	if (!n)
		return 0;
	switch (p->body_in) {
	case PX_IN_NONE:
		return 0;
	case PX_IN_TO_END:
		/* The decoder is idle here: its count is the body's. */
		if (p->dec.body + n > p->w->cfg->max_body_bytes)
			return 413;
		p->dec.body += n;
		err = queue_body(p, NULL, in, n);
		used = n;
		break;
	case PX_IN_LENGTH:
		used = n > p->body_left ? (size_t)p->body_left : n;
		err = queue_body(p, NULL, in, used);
		p->body_left -= used;
		p->body_read = !p->body_left;
		break;
	case PX_IN_CHUNKED:
		while (used < n && !http_chunked_done(&p->dec)) {
			size_t off, dlen;
			ssize_t k = http_chunked_step(&p->dec, in + used,
						      n - used, &off, &dlen);

			if (k < 0)
				return k == -E2BIG ? 413 : 400;
			if (dlen)
				err = queue_body(p, NULL, in + used + off,
						 dlen);
			if (err)
				return err;
			used += (size_t)k;
		}
		p->body_read = http_chunked_done(&p->dec);
		break;
	}
	request_input_consume(r, used);
	if (!err && p->body_read)
		err = queue_end(p);
	return err;
}

/* Send what is queued for the upstream; ask the client for more body
 * while the upstream keeps up.  0, or a negative errno (the connection
 * broke), or an HTTP status from the body. */
static int pump(struct px_req *p)
{
	struct zh_request *r = p->r;
	int err;

	if (!p->uc)
		return 0;
	err = take_input(p);
	if (err)
		return err;
	while (zc_agg_len(p->tx)) {
		ssize_t k = iol_write_sink(up_sink(p->uc), p->tx);

		if (k == -EINTR)
			continue;
		if (k == -EAGAIN)
			break;		/* EPOLLOUT calls us back */
		if (k < 0)
			return (int)k;
	}
	if (p->body_read && !zc_agg_len(p->tx) && !p->sent) {
		p->sent = true;
		if (!p->head_done)
			up_arm(p->uc);	/* the first byte is due */
	}
	if (!p->sent && !p->head_done)
		up_arm(p->uc);		/* the request's progress, both ways */
	if (!r || p->body_read)
		return 0;
	/* A client that sent "Expect: 100-continue" waits for our word. */
	if ((r->http.flags & HTTP_F_EXPECT_CONTINUE) && !p->continued &&
	    !p->got) {
		p->continued = true;
		if (request_continue(r))
			return 503;
	}
	request_want_input(r, zc_agg_len(p->tx) < TX_HIGH_WATER);
	return 0;
}

/* ------------------------------------------------------------ faults */

/* Could the request go to another server (or a new connection) now? */
static bool may_retry(const struct px_req *p)
{
	const struct http_request *req = &p->r->http;

	/* A request with a body is never sent twice: its bytes went as they
	 * came and are not kept. */
	return p->r && !p->got && !p->tunnel &&
	       p->body_in == PX_IN_NONE && idempotent(req) &&
	       p->attempts <= p->w->cfg->proxy.groups[p->rt->group].n;
}

static void retry_or_fail(struct px_req *p, int status, const char *why);

/* The connection failed before a response head.  stale: a reused
 * keep-alive connection that died at once (not the server's fault). */
static void conn_failed(struct px_req *p, int status, const char *why,
			bool blame)
{
	const struct zh_upstream_server *s = up_server(p->uc);
	unsigned idx = s->index - p->w->cfg->proxy.groups[p->rt->group].first;
	bool stale = up_reused(p->uc) && !p->got;

	if (blame && !stale)
		up_fail(p->uc, why);
	else
		up_release(p->uc, false);
	p->uc = NULL;
	if (!stale)
		p->cl.tried |= 1ull << idx;
	zh_log(stale ? ZL_INFO : ZL_ERROR, "proxy %s: %s (request %s)",
	       s->spec, why, p->got ? "answered in part" :
	       p->sent ? "sent" : "not all sent");
	retry_or_fail(p, status, why);
}

static void retry_or_fail(struct px_req *p, int status, const char *why)
{
	if (may_retry(p)) {
		int st;

		p->w->stats->proxy.retries++;
		zc_agg_truncate(p->tx, 0);
		p->sent = p->body_ended = false;
		st = up_acquire(p->w, p->rt->group, &p->cl);
		if (!st)
			return;
		status = st;
	}
	(void)why;
	finish(p, zh_status(status));
}

/* A fault of ours or the client's (a negative errno), or the status to
 * answer (from the body, or a bad head). */
static void fault(struct px_req *p, int err, const char *why)
{
	zh_log(err > 0 ? ZL_INFO : ZL_ERROR, "proxy %s: %s: %s", p->rt->spec,
	       why, err > 0 ? "refused" : strerror(-err));
	if (p->head_done) {
		px_cut(p, why);
		return;
	}
	if (p->uc) {
		up_release(p->uc, false);
		p->uc = NULL;
	}
	if (p->r)
		p->r->keep_alive = false;
	finish(p, err > 0 ? zh_status(err) : ZH_TRUNCATED);
}

/* ------------------------------------------------------------ response */

static void clear_response(struct px_req *p)
{
	http_parser_init(&p->hp);
	p->resp = (struct http_response){ .headers = p->fields };
}

/* Queue a 1xx for an HTTP/1.1 client (not HTTP/2: its interim HEADERS
 * are not ours to send; not a 100 after our own). */
static int pass_interim(struct px_req *p)
{
	struct zh_request *r = p->r;
	char buf[8192];
	struct ph_response in = {
		.resp = &p->resp,
		.pc = &p->w->cfg->proxy,
		.interim = true,
	};
	ssize_t n;

	if (!r || r->stream || r->http.minor < 1 ||
	    (p->resp.status == 100 && p->continued))
		return 0;
	n = ph_response_head(&in, buf, sizeof(buf));
	if (n < 0)
		return 0;	/* too large to pass on: interim, skippable */
	p->continued |= p->resp.status == 100;
	return request_interim(r, buf, (size_t)n);
}

/* How the client gets the body, and whether the connection stays. */
static void plan(struct px_req *p)
{
	struct zh_request *r = p->r;
	const struct http_response *resp = &p->resp;

	p->kind = http_response_body(resp, r->http.method);
	p->resp_left = resp->content_length;
	p->reusable = (resp->flags & HTTP_F_KEEP_ALIVE) &&
		      p->kind != HTTP_BODY_CLOSE;
	if (p->kind == HTTP_BODY_NONE) {
		/* HEAD, 204, 304: no body, but a length the upstream gave
		 * describes the representation and goes on. */
		p->out = (resp->flags & HTTP_F_CONTENT_LENGTH) &&
			 resp->status != 204 ? PH_LENGTH : PH_NONE;
		return;
	}
	if (p->kind == HTTP_BODY_LENGTH) {
		p->out = PH_LENGTH;
	} else if (r->stream) {
		p->out = PH_NONE;	/* the stream's end delimits it */
	} else if (r->http.minor < 1) {
		p->out = PH_CLOSE;
		r->keep_alive = false;
	} else {
		p->out = PH_CHUNKED;
		/* The upstream's own chunks go on as they are: validated
		 * by the decoder, trailers included. */
		p->passthrough = p->kind == HTTP_BODY_CHUNKED;
	}
	if (p->kind == HTTP_BODY_CHUNKED) {
		struct http_chunked_limits lim = {
			.max_body = UINT64_MAX,
			.max_ext = 4096,
			.max_trailer = 16384,
		};

		http_chunked_init(&p->rdec, &lim);
	}
}

/* The final head parsed (`hl` bytes of rx): the client's head, then the
 * body. */
static int on_head(struct px_req *p, size_t hl)
{
	struct zh_request *r = p->r;
	ssize_t n;
	int err;
	struct ph_response in = {
		.resp = &p->resp,
		.pc = &p->w->cfg->proxy,
	};

	up_answered(p->uc);
	plan(p);
	r->status = p->resp.status;
	in.framing = p->out;
	in.length = p->resp.content_length;
	in.keep_alive = r->keep_alive;
	/* The upstream's head, less what goes, plus ours: it fits. */
	n = ph_response_head(&in, client_head, sizeof(client_head));
	if (n < 0)
		return 502;
	err = request_head_append(r, client_head, (size_t)n);
	if (err)
		return err;
	p->head_done = true;
	return px_relay_start(p, hl);
}

/* Read and parse the response head; the body follows in proxy_relay.c. */
static int read_head(struct px_req *p)
{
	const struct http_limits lim = { 8192, PX_HEAD_FIELDS, 16384 };

	for (;;) {
		ssize_t k, hl;

		if (!p->rx) {
			if (zc_buf_alloc(NULL, RX_HEAD, &p->rx))
				return 503;
			p->rx_len = 0;
			p->rx_cap = RX_HEAD;
			clear_response(p);
		}
		if (p->rx_len == p->rx_cap) {
			up_fail(p->uc, "response head too large");
			p->uc = NULL;
			return 502;
		}
		/* The head and what follows it: a small body whole; of a
		 * body that goes by splice, the part that came with the head
		 * (copying 32 KiB costs less than a splice round). */
		k = recv(up_fd(p->uc), (char *)zc_buf_wptr(p->rx) + p->rx_len,
			 p->rx_cap - p->rx_len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return 0;
		if (k <= 0) {
			conn_failed(p, 502, k ? strerror(errno)
					      : "closed before a response",
				    true);
			return 1;	/* p is settled */
		}
		if (!p->got) {
			p->got = true;
			up_disarm(p->uc);
		}
		p->rx_len += (size_t)k;
parse:
		hl = http_parse_response(&p->hp, zc_buf_wptr(p->rx), p->rx_len,
					 &lim, &p->resp);
		if (hl == HTTP_PARSE_INCOMPLETE) {
			up_arm(p->uc);
			continue;
		}
		if (hl == HTTP_PARSE_ERROR) {
			zh_log(ZL_ERROR, "proxy %s: bad response head: %s",
			       up_server(p->uc)->spec,
			       p->resp.why ? p->resp.why : "malformed");
			up_fail(p->uc, "bad response head");
			p->uc = NULL;
			return 502;
		}
		if (p->resp.status >= 100 && p->resp.status < 200 &&
		    p->resp.status != 101) {
			/* Interim: passed on, and the final head follows in
			 * the same bytes or later ones. */
			char *b = zc_buf_wptr(p->rx);
			int err = pass_interim(p);

			if (err)
				return err;
			memmove(b, b + hl, p->rx_len - (size_t)hl);
			p->rx_len -= (size_t)hl;
			clear_response(p);
			if (p->rx_len)
				goto parse;
			continue;
		}
		if (p->resp.flags & HTTP_RF_TE_OTHER) {
			/* gzip, say, under the chunks: the client would get
			 * coded bytes it was never told of. */
			zh_log(ZL_ERROR, "proxy %s: a transfer coding other "
			       "than chunked", up_server(p->uc)->spec);
			up_fail(p->uc, "transfer coding");
			p->uc = NULL;
			return 502;
		}
		if (p->resp.status == 101) {
			if (!p->tunnel) {
				up_fail(p->uc, "101 to a request that asked "
					"for no upgrade");
				p->uc = NULL;
				return 502;
			}
			return px_tunnel_start(p, (size_t)hl);
		}
		up_disarm(p->uc);
		return on_head(p, (size_t)hl);
	}
}

/* ------------------------------------------------------------ pool calls */

static struct px_req *of(struct up_client *cl)
{
	return (struct px_req *)cl;
}

static void cl_attached(struct up_client *cl, struct up_conn *uc)
{
	struct px_req *p = of(cl);
	int err;

	p->uc = uc;
	p->attempts++;
	if (p->r)
		p->r->upstream = up_server(uc)->authority;
	if (!p->start_ms)
		p->start_ms = ev_now_ms(p->w->loop);
	/* The head names the server when Host is the upstream's: made again
	 * for a server other than the one it was made for. */
	if (!p->head || (p->w->cfg->proxy.host == ZH_HOST_UPSTREAM &&
			 p->head_for != up_server(uc))) {
		err = build_head(p, up_server(uc));
		if (err) {
			fault(p, err, "request head");
			return;
		}
	}
	zc_agg_truncate(p->tx, 0);
	if (zc_agg_append_mem(p->tx, p->head, p->head_len)) {
		fault(p, 503, "out of memory");
		return;
	}
	if (p->body_in == PX_IN_NONE)
		p->body_read = true, p->body_ended = true;
	err = pump(p);
	if (err < 0 && !p->got)
		conn_failed(p, 502, strerror(-err), true);
	else if (err)
		fault(p, err, "request body");
}

static void cl_failed(struct up_client *cl, int status, const char *why)
{
	struct px_req *p = of(cl);

	zh_log(ZL_ERROR, "proxy %s: %s", p->rt->spec, why);
	finish(p, zh_status(status));
}

static void cl_timeout(struct up_client *cl)
{
	struct px_req *p = of(cl);

	if (p->tunneling) {
		px_tunnel_idle(p);
		return;
	}
	if (!p->body_read && !p->got && !zc_agg_len(p->tx)) {
		/* The client's body stopped coming (the upstream took all we
		 * had): not the server's fault, and the request cannot be
		 * finished. */
		zh_log(ZL_INFO, "proxy %s: the request body stalled",
		       p->rt->spec);
		up_release(p->uc, false);
		p->uc = NULL;
		if (p->r)
			p->r->keep_alive = false;
		finish(p, zh_status(408));
		return;
	}
	if (!p->head_done) {
		conn_failed(p, 504, "timed out waiting for the response",
			    true);
		return;
	}
	up_fail(p->uc, "timed out in the body");
	p->uc = NULL;
	px_cut(p, "upstream timed out");
}

static void cl_io(struct up_client *cl, uint32_t ev)
{
	struct px_req *p = of(cl);
	int err = 0;

	if (p->tunneling) {
		px_tunnel_io(p, ev);
		return;
	}
	if (ev & EPOLLOUT) {
		err = pump(p);
		if (err < 0 && !p->got && !(ev & EPOLLIN)) {
			conn_failed(p, 502, strerror(-err), true);
			return;
		}
		if (err > 0) {
			fault(p, err, "request body");
			return;
		}
		err = 0;	/* a broken send: the read says why */
	}
	if (!(ev & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)))
		return;
	if (!p->head_done) {
		err = read_head(p);
		if (err == 1)
			return;		/* settled */
	} else if (!p->paused) {
		err = px_relay_more(p);
	}
	if (err)
		fault(p, err, "response");
}

/* ------------------------------------------------------------ handler */

/* More of the request body from the client. */
static void on_input(struct zh_request *r)
{
	struct px_req *p = r->wait;
	int err = 0;

	if (p->tunneling) {
		px_tunnel_input(p);
		return;
	}
	if (p->body_read) {
		/* All of it is here (an HTTP/2 stream's end may still be
		 * announced after the last byte). */
		request_want_input(r, false);
		return;
	}
	if (p->body_in == PX_IN_LENGTH && !request_input_buffered(r)) {
		size_t want = p->body_left < BODY_READ ? (size_t)p->body_left
						       : BODY_READ;
		zc_agg *in = NULL;
		ssize_t n = request_read_body(r, &in, want);

		if (n == -EAGAIN || n == -EINTR) {
			zc_agg_release(in);
			return;
		}
		if (n <= 0) {
			zc_agg_release(in);
			err = -EPIPE;	/* the client left mid-body */
			goto fail;
		}
		p->body_left -= (uint64_t)n;
		p->body_read = !p->body_left;
		err = queue_body(p, in, NULL, 0);
		zc_agg_release(in);
		if (!err && p->body_read)
			err = queue_end(p);
	} else if (p->body_in != PX_IN_LENGTH &&
		   !request_input_buffered(r)) {
		ssize_t n = request_read(r);

		if (n == -EAGAIN)
			return;
		if (n == 0 && p->body_in == PX_IN_TO_END) {
			p->body_read = true;
			err = queue_end(p);
		} else if (n <= 0) {
			err = -EPIPE;
			goto fail;
		}
	}
	if (!err)
		err = pump(p);
	if (!err)
		return;
fail:
	if (p->r)
		request_want_input(p->r, false);
	fault(p, err, "request body");
}

static void on_abort(struct zh_request *r)
{
	struct px_req *p = r->wait;

	p->r = NULL;
	if (p->uc) {
		/* Its response cannot be read to a clean end now. */
		up_release(p->uc, false);
		p->uc = NULL;
	} else {
		up_cancel(p->w, &p->cl);
	}
	px_free(p);
}

static void on_drained(struct zh_request *r)
{
	struct px_req *p = r->wait;
	int err;

	if (!p->paused)
		return;
	if (p->tunneling) {
		px_tunnel_more(p);
		return;
	}
	p->paused = false;
	err = px_relay_more(p);
	if (err)
		fault(p, err, "response");
}

static const struct zh_handler proxy_handler = {
	.name = "proxy",
	.own_timeouts = true,
	.abort = on_abort,
	.drained = on_drained,
	.input = on_input,
};

/* Upgrade: an HTTP/1.1 client asking for another protocol on this
 * connection (WebSocket), with "upgrade" in Connection. */
static bool wants_upgrade(const struct zh_request *r)
{
	return !r->stream && r->http.minor == 1 &&
	       http_find_header(&r->http, "Upgrade") &&
	       http_connection_lists(r->http.headers, r->http.num_headers,
				     "upgrade", 7);
}

/* The balancing key's hash (ZH_BALANCE_HASH). */
static uint32_t key_hash(const struct zh_request *r,
			 const struct zh_upstream_group *g)
{
	const struct http_header *h;
	const struct sockaddr_storage *ss;

	switch (g->hash_key) {
	case ZH_HASH_URI:
		return up_hash(r->http.target.p, r->http.target.len,
			       UP_HASH_INIT);
	case ZH_HASH_HEADER:
		h = http_find_header(&r->http, g->hash_header);
		return h ? up_hash(h->value.p, h->value.len, UP_HASH_INIT)
			 : UP_HASH_INIT;
	case ZH_HASH_CLIENT:
		ss = request_peer(r);
		if (ss->ss_family == AF_INET)
			return up_hash(&((const struct sockaddr_in *)ss)->sin_addr,
				       4, UP_HASH_INIT);
		if (ss->ss_family == AF_INET6)
			return up_hash(&((const struct sockaddr_in6 *)ss)
					       ->sin6_addr, 16, UP_HASH_INIT);
		return UP_HASH_INIT;
	}
	return UP_HASH_INIT;
}

zh_answer proxy_serve(struct zh_request *r, const struct zh_proxy_route *rt)
{
	const struct http_request *req = &r->http;
	const struct zh_upstream_group *g = &r->w->cfg->proxy.groups[rt->group];
	struct px_req *p;
	int err;

	if (req->method == HTTP_M_CONNECT)
		return zh_status(405);	/* a reverse proxy opens no tunnels
					 * to arbitrary hosts */
	p = malloc(sizeof(*p));
	if (p)
		memset(p, 0, offsetof(struct px_req, fields));
	if (!p || zc_agg_create(&p->tx)) {
		free(p);
		return zh_status(503);
	}
	p->w = r->w;
	p->rt = rt;
	p->r = r;
	p->cl.attached = cl_attached;
	p->cl.failed = cl_failed;
	p->cl.io = cl_io;
	p->cl.timeout = cl_timeout;
	if (g->balance == ZH_BALANCE_HASH)
		p->cl.hash = key_hash(r, g);
	if (r->body_to_end) {
		p->body_in = PX_IN_TO_END;
	} else if (req->flags & HTTP_F_CHUNKED) {
		struct http_chunked_limits lim = {
			.max_body = r->w->cfg->max_body_bytes,
			.max_ext = 4096,
			.max_trailer = r->w->cfg->limits.max_head_bytes,
		};

		p->body_in = PX_IN_CHUNKED;
		http_chunked_init(&p->dec, &lim);
	} else if ((req->flags & HTTP_F_CONTENT_LENGTH)) {
		p->body_in = PX_IN_LENGTH;
		p->body_left = req->content_length;
	}
	p->tunnel = wants_upgrade(r);
	err = request_wait(r, &proxy_handler, p);
	if (err) {
		px_free(p);
		return zh_status(err);
	}
	r->w->stats->proxy.requests++;
	err = build_head(p, &r->w->cfg->proxy.servers[g->first]);
	if (!err)
		err = up_acquire(r->w, rt->group, &p->cl);
	if (err) {
		zh_log(ZL_ERROR, "proxy %s: %s", rt->spec,
		       err == 503 ? "no server in service or the queue is "
				    "full" : "request refused");
		finish(p, zh_status(err));
	}
	return ZH_WAITING;
}

/* ------------------------------------------------------------ worker */

int proxy_worker_init(struct zh_worker *w)
{
	int err = up_worker_init(w);

	if (err || !w->proxy)
		return err;
	w->proxy->t_pipes = up_timer_list(w, w->cfg->proxy.defaults.idle_ms);
	return w->proxy->t_pipes ? 0 : -ENOSPC;
}

void proxy_worker_stop(struct zh_worker *w)
{
	up_worker_stop(w);
}

void proxy_worker_fini(struct zh_worker *w)
{
	if (w->proxy) {
		ev_timer_disarm(&w->proxy->pipe_timer);
		pipes_free(w->proxy);
		free(w->proxy->pipes);
	}
	up_worker_fini(w);
}
