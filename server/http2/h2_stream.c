/*
 * h2_stream.c - an HTTP/2 stream as a request (h2_int.h).
 *
 * Its fields arrive one by one (h2_recv.c): names and values are copied
 * into the stream's own text, bounded by --h2-max-header-list (RFC 9113's
 * header list size: every field counts 32 bytes more than its name and
 * value, so a flood of empty fields is bounded too) and --max-headers.
 * When the head is complete it becomes an http_request by the same checks
 * and semantics an HTTP/1.1 head gets (http_request_from_fields: the
 * pseudo-fields are the request line, :authority the Host), is counted
 * and routed (router.h), and the handler answers into the stream's own
 * aggregate, as for HTTP/1.1.
 *
 * Answered (at once, or when its handler calls request_finish), the
 * stream's head goes out as HEADERS and the rest of its aggregate as DATA
 * (h2_data.c); a streaming handler's head goes out with its first
 * request_send.  An error page replaces a response none of which is
 * queued yet; later, a response cut short ends in RST_STREAM, so a client
 * never takes it for a whole one.  The body's cache entry is pinned until
 * the socket has sent its last DATA frame.
 *
 * A request body comes in DATA frames: up to the stream's window
 * (H2_STREAM_WINDOW) is buffered for the handler, which takes it through
 * request.h's input calls; what it takes is given back to the client's
 * window (nghttp2_session_consume), so the client never sends more than we
 * hold.  A body nobody reads is dropped, and its window given back, as it
 * arrives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "access_log.h"
#include "cache.h"
#include "conn_int.h"
#include "h2_int.h"
#include "router.h"
#include "vhost.h"
#include "zchttpd.h"

/* Fields of a response head we send (fcgi_reply.c takes up to 100 from an
 * application, and adds a few of its own). */
#define HEAD_FIELDS 128
/* The largest response head (an application's CGI head is at most
 * 16 KiB, fastcgi.c) read back out of a stream's aggregate. */
#define HEAD_SCRATCH (20u << 10)

/* ------------------------------------------------------------ life */

/* What a kept stream may hold for reuse: more goes with it. */
#define SPARE_TEXT_MAX 4096u
#define SPARE_FIELDS_MAX 64u

/* The worker's closed streams kept for reuse (H2_SPARE_STREAMS), linked
 * by next: its loop is the only thread that runs HTTP/2. */
static struct h2_stream *spare;
static unsigned nspare;

static unsigned id_slot(int32_t id)
{
	return ((uint32_t)id >> 1) % H2_ID_SLOTS;
}

struct h2_stream *h2_stream_new(struct h2_conn *h, int32_t id)
{
	struct h2_stream *s = spare;
	struct http_header *fields = NULL;
	unsigned fields_cap = 0;
	char *text = NULL;
	size_t text_cap = 0;
	zc_agg *out = NULL;

	if (s) {
		spare = s->next;
		nspare--;
		fields = s->fields;
		fields_cap = s->fields_cap;
		text = s->text;
		text_cap = s->text_cap;
		out = s->out;		/* empty */
	} else if (!(s = malloc(sizeof(*s))) || zc_agg_create(&out)) {
		free(s);
		return NULL;
	}
	/* head_local, last, is written before it is read. */
	memset(s, 0, offsetof(struct h2_stream, head_local));
	s->fields = fields;
	s->fields_cap = fields_cap;
	s->text = text;
	s->text_cap = text_cap;
	s->out = out;
	s->h = h;
	s->id = id;
	s->req.conn = h->c;
	s->req.w = h->w;
	s->req.stream = s;
	s->next = h->streams;
	if (h->streams)
		h->streams->prev = s;
	h->streams = s;
	h->nstreams++;
	s->id_next = h->by_id[id_slot(id)];
	h->by_id[id_slot(id)] = s;
	return s;
}

struct h2_stream *h2_stream_find(const struct h2_conn *h, int32_t id)
{
	struct h2_stream *s = h->by_id[id_slot(id)];

	while (s && s->id != id)
		s = s->id_next;
	return s;
}

static void stream_free(struct h2_stream *s)
{
	zc_agg_release(s->out);
	free(s->fields);
	free(s->text);
	free(s);
}

static void news_unlink(struct h2_stream *s)
{
	struct h2_conn *h = s->h;

	if (!s->on_news)
		return;
	if (s->news_prev)
		s->news_prev->news_next = s->news_next;
	else
		h->news_first = s->news_next;
	if (s->news_next)
		s->news_next->news_prev = s->news_prev;
	else
		h->news_last = s->news_prev;
	s->news_prev = s->news_next = NULL;
	s->on_news = false;
}

void h2_stream_news(struct h2_stream *s)
{
	struct h2_conn *h = s->h;

	if (!s->on_news) {
		s->on_news = true;
		s->news_prev = h->news_last;
		s->news_next = NULL;
		if (h->news_last)
			h->news_last->news_next = s;
		else
			h->news_first = s;
		h->news_last = s;
	}
	h2_conn_post(h);
}

/* Body bytes the stream holds go back to the client's window, unread. */
static void drop_body(struct h2_stream *s)
{
	if (s->body_len)
		nghttp2_session_consume(s->h->session, s->id, s->body_len);
	s->body_len = 0;
}

/* The request leaves its handler (answered, redirected, or aborted). */
static void leave_handler(struct h2_stream *s)
{
	struct zh_request *r = &s->req;

	s->active = false;
	s->paused = false;
	r->handler = NULL;
	r->wait = NULL;
	r->want_input = false;
	r->finished = false;
}

static void drop_head(struct h2_stream *s)
{
	if (s->head != s->head_local)
		free(s->head);
	s->head = NULL;
	s->head_len = 0;
}

void h2_stream_close(struct h2_stream *s)
{
	struct h2_conn *h = s->h;
	struct zh_request *r = &s->req;
	struct cache *cache = h->w->cache;

	if (s->active && !r->finished && !r->redirect_pending)
		r->handler->abort(r);	/* the client reset it, or left */
	if (r->entry)
		cache_put(cache, r->entry);
	/* Nothing of its body is framed from now on: what is in the
	 * output is all of it. */
	if (s->pinned)
		h2_out_pin(&h->out, s->pinned);
	else if (s->pin_reserved)
		h->out.reserved--;
	if (h->session)
		drop_body(s);
	news_unlink(s);
	for (struct h2_stream **p = &h->by_id[id_slot(s->id)]; *p;
	     p = &(*p)->id_next)
		if (*p == s) {
			*p = s->id_next;
			break;
		}
	if (s->prev)
		s->prev->next = s->next;
	else
		h->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->nstreams--;
	drop_head(s);
	free(s->body);
	free(r->own_uri);
	free(r->redirect);
	/* The request's fields are the array the stream made (make_head):
	 * back to the stream, for reuse. */
	if (r->own_headers) {
		free(s->fields);
		s->fields = r->own_headers;
	}
	if (nspare == H2_SPARE_STREAMS || s->text_cap > SPARE_TEXT_MAX ||
	    s->fields_cap > SPARE_FIELDS_MAX || zc_agg_truncate(s->out, 0)) {
		stream_free(s);
		return;
	}
	s->next = spare;
	spare = s;
	nspare++;
}

/* ------------------------------------------------------------ the head */

/* Room for n more bytes of text, within the header list bound. */
static int text_room(struct h2_stream *s, size_t n)
{
	size_t cap = s->text_cap ? s->text_cap : 512;
	char *p;

	if (s->text_len + n <= s->text_cap)
		return 0;
	while (cap < s->text_len + n)
		cap *= 2;
	p = realloc(s->text, cap);
	if (!p)
		return -ENOMEM;
	s->text = p;
	s->text_cap = cap;
	return 0;
}

/* Copy p[0..n) into the text: its offset. */
static size_t text_add(struct h2_stream *s, const void *p, size_t n)
{
	size_t off = s->text_len;

	memcpy(s->text + off, p, n);
	s->text_len += n;
	return off;
}

static int add_field(struct h2_stream *s, size_t noff, size_t nlen,
		     size_t voff, size_t vlen)
{
	if (s->nfields == s->fields_cap) {
		unsigned cap = s->fields_cap ? 2 * s->fields_cap : 16;
		struct http_header *f = realloc(s->fields, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		s->fields = f;
		s->fields_cap = cap;
	}
	/* Offsets for now (the text may move): made pointers once the head
	 * is complete. */
	s->fields[s->nfields++] = (struct http_header){
		{ (const char *)(uintptr_t)noff, nlen },
		{ (const char *)(uintptr_t)voff, vlen },
	};
	return 0;
}

/* Is name[0..n) the literal lit (n its length)?  A comparison of known
 * length, which the compiler makes a few loads rather than a call. */
#define IS(name, lit) (!memcmp((name), (lit), sizeof(lit) - 1))

/* Which pseudo-field name[0..nlen) is (enum h2_pseudo), or -1: by its
 * length and second byte, then one comparison. */
static int pseudo_index(const uint8_t *name, size_t nlen)
{
	switch (nlen) {
	case 5:
		return IS(name, ":path") ? H2P_PATH : -1;
	case 7:
		if (name[1] == 'm')
			return IS(name, ":method") ? H2P_METHOD : -1;
		return IS(name, ":scheme") ? H2P_SCHEME : -1;
	case 10:
		return IS(name, ":authority") ? H2P_AUTHORITY : -1;
	default:
		return -1;
	}
}
#undef IS

int h2_stream_field(struct h2_stream *s, const uint8_t *name, size_t nlen,
		    const uint8_t *value, size_t vlen)
{
	const struct zh_config *cfg = s->h->w->cfg;
	size_t noff, voff;

	if (s->routed)
		return 0;		/* trailers: no handler reads them */
	s->list_size += nlen + vlen + 32;
	if (s->reject)
		return 0;		/* decoded (HPACK's state) and dropped */
	if (s->list_size > cfg->h2.max_header_list ||
	    (nlen && name[0] != ':' &&
	     s->nfields >= cfg->limits.max_headers)) {
		s->reject = 431;
		return 0;
	}
	if (text_room(s, nlen + vlen))
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (nlen && name[0] == ':') {
		/* nghttp2 let through only the request's pseudo-fields, each
		 * once, before the others. */
		int i = pseudo_index(name, nlen);

		if (i >= 0) {
			s->pseudo[i].off = text_add(s, value, vlen);
			s->pseudo[i].len = vlen;
			s->pseudo[i].set = true;
		}
		return 0;
	}
	noff = text_add(s, name, nlen);
	voff = text_add(s, value, vlen);
	return add_field(s, noff, nlen, voff, vlen) ?
	       NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

static struct http_str text_str(const struct h2_stream *s, size_t off,
				size_t len)
{
	return (struct http_str){ s->text + off, len };
}

/* The fields as the request head: offsets made pointers, a Host from
 * :authority when there is none (as nginx makes one: applications read
 * HTTP_HOST).  Cookie crumbs (RFC 9113 8.2.3) stay separate fields, as
 * repeated fields of an HTTP/1.1 head would be: fcgi_params.c joins them
 * with "; ".  0, or a status. */
static int make_head(struct h2_stream *s)
{
	struct http_request *req = &s->req.http;
	bool host = false;

	for (unsigned i = 0; i < s->nfields; i++)
		if (s->fields[i].name.len == 4 &&
		    !memcmp(s->text + (uintptr_t)s->fields[i].name.p, "host",
			    4))
			host = true;
	if (!host && s->pseudo[H2P_AUTHORITY].set) {
		size_t n;

		if (text_room(s, 4))
			return 503;
		n = text_add(s, "host", 4);
		if (add_field(s, n, 4, s->pseudo[H2P_AUTHORITY].off,
			      s->pseudo[H2P_AUTHORITY].len))
			return 503;
	}
	for (unsigned i = 0; i < s->nfields; i++) {
		struct http_header *f = &s->fields[i];

		f->name.p = s->text + (uintptr_t)f->name.p;
		f->value.p = s->text + (uintptr_t)f->value.p;
	}
	*req = (struct http_request){ .headers = s->fields,
				      .num_headers = s->nfields };
	/* The request owns the fields from now on (request_wait keeps
	 * them, the stream frees them as the request's). */
	s->req.own_headers = s->fields;
	s->fields = NULL;
	return http_request_from_fields(req,
		text_str(s, s->pseudo[H2P_METHOD].off, s->pseudo[H2P_METHOD].len),
		s->pseudo[H2P_PATH].set ?
		text_str(s, s->pseudo[H2P_PATH].off, s->pseudo[H2P_PATH].len) :
		text_str(s, s->pseudo[H2P_AUTHORITY].off,
			 s->pseudo[H2P_AUTHORITY].len));
}

/* ------------------------------------------------------------ answers */

/* The head the handler wrote goes out as HEADERS (with END_STREAM when no
 * body follows).  0, or -1 when it cannot (the stream is then reset). */
static int respond(struct h2_stream *s)
{
	static char scratch[HEAD_SCRATCH];
	struct zh_request *r = &s->req;
	nghttp2_nv nv[HEAD_FIELDS];
	nghttp2_data_provider prd;
	char *text = s->head;
	size_t len = s->head_len, head_len;
	bool body;
	int n, status;

	if (!text) {
		/* Written straight into the output (an error page, a
		 * redirect): read it back. */
		ssize_t k = zc_agg_copyout(s->out, 0, scratch, sizeof(scratch));

		if (k < 0)
			return -1;
		text = scratch;
		len = (size_t)k;
	}
	n = h2_head_fields(text, len, nv, HEAD_FIELDS, &status, &head_len);
	if (n < 0)
		return -1;
	/* The stream's own head stays as it is until nghttp2 has made the
	 * HEADERS frame or dropped it (a stream that closes first is
	 * dropped: nghttp2 makes no frame for a closed stream, before
	 * reading the fields), so nghttp2 need not copy the fields; the
	 * scratch is the next stream's, so then it must. */
	if (text != s->head_local)
		for (int i = 0; i < n; i++)
			nv[i].flags = NGHTTP2_NV_FLAG_NONE;
	if (!s->head)
		zc_agg_trim_front(s->out, head_len);
	if (!r->status)
		r->status = status;
	if (r->head_only)
		zc_agg_truncate(s->out, 0);
	body = !r->head_only && (zc_agg_len(s->out) || !s->done);
	prd = h2_data_provider(s);
	if (nghttp2_submit_response(s->h->session, s->id, nv, (size_t)n,
				    body ? &prd : NULL))
		return -1;
	drop_head(s);
	s->submitted = true;
	s->eof = !body;
	return 0;
}

static void reset(struct h2_stream *s, uint32_t code)
{
	nghttp2_submit_rst_stream(s->h->session, NGHTTP2_FLAG_NONE, s->id,
				  code);
}

/*
 * The request is answered (`how` as request_finish takes it): the error
 * page if there is one, the pin on the cache entry its body uses, the
 * counters and the access log; then its head goes out, or the rest of its
 * body once nghttp2 asks for it.
 */
static void complete(struct h2_stream *s, zh_answer how)
{
	struct h2_conn *h = s->h;
	struct zh_request *r = &s->req;
	struct zh_worker *w = h->w;
	int err = zh_error_status(how);
	bool cut = zh_truncated(how);

	leave_handler(s);
	s->done = true;
	if (err && s->submitted) {
		err = 0;		/* too late for an error page */
		cut = true;
	}
	if (err) {
		zc_agg_truncate(s->out, 0);
		drop_head(s);
		r->status = err;
		r->body_bytes = 0;
		if (resp_error_sized(s->out, err, r->head_only, false,
				     err == 405 ? "Allow: GET, HEAD\r\n" : NULL,
				     &r->body_bytes))
			cut = true;
	} else if (!cut && r->entry && !h2_out_pin_reserve(&h->out)) {
		cache_pin(w->cache, r->entry);
		s->pinned = r->entry;
		s->pin_reserved = true;
	} else if (!cut && r->entry) {
		cut = true;		/* no memory to keep its pin */
	}
	if (r->entry) {
		cache_put(w->cache, r->entry);	/* the request's reference */
		r->entry = NULL;
	}
	if (!cut && !s->submitted && respond(s))
		cut = true;
	if (cut) {
		zc_agg_truncate(s->out, 0);
		reset(s, NGHTTP2_INTERNAL_ERROR);
	} else if (s->deferred) {
		s->deferred = false;
		nghttp2_session_resume_data(h->session, s->id);
	}
	/* A body nobody read is dropped, and the rest as it comes. */
	drop_body(s);
	zh_count_status(w, r->status);
	/* A head that was not made into a request logs as HTTP/1.1's that
	 * do not parse: "-". */
	access_log_request_upstream(r->vhost->log, &h->c->peer,
				    r->http.method_str.p ? &r->http : NULL,
				    "HTTP/2.0", r->status, r->body_bytes,
				    r->upstream, r->upstream_ms);
}

/* Route r (a new head, or a local redirect) and answer it when its
 * handler does not keep it. */
static void route(struct h2_stream *s)
{
	zh_answer how = router_route(&s->h->w->router, &s->req);

	if (!zh_waits(how))
		complete(s, how);
}

void h2_stream_head_done(struct h2_stream *s, bool end)
{
	struct zh_request *r = &s->req;
	struct zh_worker *w = s->h->w;
	int status;

	s->routed = true;
	s->body_end = end;
	status = make_head(s);
	if (s->reject)
		status = s->reject;
	r->vhost = &w->vhosts[vhost_find(w->cfg, &r->http)];
	r->head_only = r->http.method == HTTP_M_HEAD;
	r->keep_alive = true;		/* the stream's end, not ours */
	/* Without Content-Length a body runs to the stream's end (an
	 * HTTP/1.1 client would have chunked it). */
	r->body_to_end = !end && !(r->http.flags & HTTP_F_CONTENT_LENGTH);
	zh_count_request(w, r->vhost);
	w->stats->h2.requests++;
	if (status)
		complete(s, zh_status(status));
	else
		route(s);
}

void h2_stream_body(struct h2_stream *s, const uint8_t *p, size_t n)
{
	if (s->done) {
		/* Nobody reads it: its window back at once. */
		nghttp2_session_consume(s->h->session, s->id, n);
		return;
	}
	if (!s->body && !(s->body = malloc(H2_STREAM_WINDOW))) {
		reset(s, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	if (n > H2_STREAM_WINDOW - s->body_len) {
		/* More than the window we gave (nghttp2 would have said). */
		reset(s, NGHTTP2_FLOW_CONTROL_ERROR);
		return;
	}
	memcpy(s->body + s->body_len, p, n);
	s->body_len += n;
	s->input_news = true;
	h2_stream_news(s);
}

void h2_stream_body_end(struct h2_stream *s)
{
	s->body_end = true;
	s->input_news = true;
	h2_stream_news(s);
}

/* A local redirect (request_redirect): the same request, as a GET of the
 * new path without a body, routed from the start. */
static void reroute(struct h2_stream *s)
{
	struct zh_request *r = &s->req;

	leave_handler(s);
	request_redirected(r);
	drop_body(s);
	zc_agg_truncate(s->out, 0);
	drop_head(s);
	route(s);
}

/* The handler asked for the body: give it what arrived, again while it
 * takes some and more is there. */
static void feed_input(struct h2_stream *s)
{
	struct zh_request *r = &s->req;

	while (s->active && r->want_input && !r->finished &&
	       !r->redirect_pending &&
	       (s->body_len || (s->body_end && !s->end_told))) {
		size_t before = s->body_len;
		bool told = s->end_told;

		s->input_news = false;
		r->handler->input(r);
		if (s->body_len == before && s->end_told == told)
			break;		/* it took nothing: wait for news */
	}
}

void h2_stream_settle(struct h2_stream *s)
{
	struct zh_request *r = &s->req;

	if (s->active && r->finished) {
		complete(s, r->finished_as);
		return;
	}
	if (s->active && r->redirect_pending) {
		r->redirect_pending = false;
		reroute(s);
		return;
	}
	if (!s->active)
		return;
	if (s->input_news || r->want_input)
		feed_input(s);
	if (!s->active || r->finished || r->redirect_pending) {
		h2_stream_news(s);	/* it finished meanwhile */
		return;
	}
	if (s->send_asked && !s->submitted && s->head && respond(s)) {
		/* A streamed head we cannot send: the handler lets go. */
		r->handler->abort(r);
		leave_handler(s);
		s->done = true;
		reset(s, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	s->send_asked = false;
	if (s->submitted && s->deferred && zc_agg_len(s->out)) {
		s->deferred = false;
		nghttp2_session_resume_data(s->h->session, s->id);
	}
	if (s->paused && zc_agg_len(s->out) < H2_STREAM_HIGH / 2) {
		s->paused = false;
		r->handler->drained(r);
	}
}

/* ------------------------------------------------------------ request.h */

static struct h2_stream *of(struct zh_request *r)
{
	return r->stream;
}

zc_agg *h2_req_out(struct zh_request *r)
{
	return of(r)->out;
}

bool h2_req_copies_mapped(const struct zh_request *r)
{
	return !r->stream->h->tls;
}

void h2_req_head_begin(struct zh_request *r, struct resp_head *h)
{
	h->buf = of(r)->head_local;
	h->cap = sizeof(of(r)->head_local);
}

int h2_req_head_end(struct zh_request *r, struct resp_head *h)
{
	struct h2_stream *s = of(r);

	if (h->overflow)
		return 500;
	drop_head(s);
	if (h->buf != s->head_local)
		return h2_req_head_append(r, h->buf, h->len);
	s->head = s->head_local;
	s->head_len = h->len;
	return 0;
}

int h2_req_head_append(struct zh_request *r, const char *p, size_t len)
{
	struct h2_stream *s = of(r);
	char *to = len <= sizeof(s->head_local) ? s->head_local : malloc(len);

	if (!to)
		return 503;
	if (to != p)
		memmove(to, p, len);
	drop_head(s);
	s->head = to;
	s->head_len = len;
	return 0;
}

void h2_req_waits(struct zh_request *r)
{
	of(r)->active = true;
}

void h2_req_post(struct zh_request *r)
{
	h2_stream_news(of(r));
}

bool h2_req_send(struct zh_request *r)
{
	struct h2_stream *s = of(r);

	s->send_asked = true;
	h2_stream_news(s);
	if (zc_agg_len(s->out) < H2_STREAM_HIGH)
		return true;
	s->paused = true;
	return false;
}

void h2_req_send_wait(struct zh_request *r)
{
	struct h2_stream *s = of(r);

	h2_req_send(r);
	s->paused = true;
	h2_stream_news(s);
}

bool h2_req_secure(const struct zh_request *r)
{
	return r->stream->h->tls;
}

void h2_req_input(struct zh_request *r, const char **p, size_t *len)
{
	*p = of(r)->body;
	*len = of(r)->body_len;
}

void h2_req_input_consume(struct zh_request *r, size_t n)
{
	struct h2_stream *s = of(r);

	memmove(s->body, s->body + n, s->body_len - n);
	s->body_len -= n;
	/* Taken: the client may send as much again. */
	nghttp2_session_consume(s->h->session, s->id, n);
	h2_conn_post(s->h);
}

bool h2_req_input_buffered(struct zh_request *r)
{
	return of(r)->body_len != 0;
}

ssize_t h2_req_read_body(struct zh_request *r, zc_agg **body, size_t want)
{
	struct h2_stream *s = of(r);
	size_t k = want < s->body_len ? want : s->body_len;

	if (!k) {
		if (!s->body_end)
			return -EAGAIN;
		s->end_told = true;
		return 0;
	}
	if ((!*body && zc_agg_create(body)) ||
	    zc_agg_append_bytes(*body, NULL, s->body, k))
		return -ENOMEM;
	h2_req_input_consume(r, k);
	return (ssize_t)k;
}

ssize_t h2_req_read(struct zh_request *r)
{
	struct h2_stream *s = of(r);

	if (s->body_len)
		return (ssize_t)s->body_len;	/* all in request_input */
	if (!s->body_end)
		return -EAGAIN;
	s->end_told = true;
	return 0;
}

int h2_req_continue(struct zh_request *r)
{
	static const nghttp2_nv cont = { (uint8_t *)":status",
					 (uint8_t *)"100", 7, 3,
					 NGHTTP2_NV_FLAG_NONE };
	struct h2_stream *s = of(r);

	if (s->submitted)
		return 0;
	if (nghttp2_submit_headers(s->h->session, NGHTTP2_FLAG_NONE, s->id,
				   NULL, &cont, 1, NULL) < 0)
		return -ENOMEM;
	h2_conn_post(s->h);
	return 0;
}
