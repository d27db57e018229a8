/*
 * h2_conn.c - an HTTP/2 connection (h2.h, h2_int.h): its nghttp2 session
 * on the connection's socket, the loop that runs it, its timers, its end.
 *
 * run() is the whole of it, called from the socket's hooks, from posted
 * news (a handler finished, sent, wants input) and from nothing else:
 *
 *   feed     what the socket read goes to nghttp2, all of it (nghttp2 keeps
 *            a partial frame itself); its callbacks (h2_recv.c) make and
 *            route the streams -- most requests are answered right there;
 *   settle   streams with news act on it (h2_stream.c);
 *   flush    nghttp2 makes frames into the output queue (h2_data.c) and
 *            the socket sends it, until one of them has no more.
 *
 * Backpressure: once H2_OUT_HIGH bytes wait for the socket, nghttp2 makes
 * no more frames and the socket is not read, so a client that does not
 * read stops being read, and what it could queue -- pings' and settings'
 * acknowledgements included -- is bounded.  Then the connection waits for
 * room; otherwise it reads.
 *
 * One timer at a time says how long the connection may stay as it is:
 *
 *   send     a response waits for the client (its output is queued, or
 *            its DATA waits for a window the client does not open): the
 *            client must take bytes within --send-timeout, re-armed by
 *            every send that moves some (a zero window, or a client that
 *            never reads, ends there);
 *   header   a stream's head or a body nobody asked for is still
 *            arriving: --header-timeout from when that began, not re-armed
 *            by what trickles in;
 *   handler  a handler has a request and bounds its own waits (FastCGI),
 *            or the send timeout bounds each (a file on a helper);
 *   idle     no stream at all: --h2-idle-timeout, then GOAWAY and close.
 *
 * Besides, our SETTINGS must be acknowledged within --h2-settings-timeout
 * (RFC 9113 6.5.3), and frames that make work without a request (PING,
 * SETTINGS, PRIORITY, RST_STREAM, empty DATA) are limited per second:
 * beyond that the client gets GOAWAY ENHANCE_YOUR_CALM.  nghttp2 itself
 * bounds the rest: acknowledgements queued for a client that does not read
 * (1,000), CONTINUATION frames per head, and the rate of streams a client
 * resets (CVE-2023-44487: 1,000 at once, 33 a second after).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"
#include "errlog.h"
#include "h2_int.h"
#include "sock.h"
#include "tls.h"
#include "zchttpd.h"

/* The client connection preface (RFC 9113 3.4). */
static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof(preface) - 1)

/* Frames that make work without a request, per connection and second. */
#define CHEAP_PER_SECOND 1000
/* CONTINUATION frames after a HEADERS (nghttp2's own default: a head
 * larger than --h2-max-header-list is refused long before). */
#define MAX_CONTINUATIONS 8
/* Reset streams: a burst, then a rate per second (nghttp2's defaults,
 * said here). */
#define RESET_BURST 1000
#define RESET_RATE 33

static nghttp2_session_callbacks *callbacks;	/* one set per process */
static nghttp2_option *options;

static void run(struct h2_conn *h);
static const struct sock_hooks h2_sock_hooks;

const char *h2_unavailable(void)
{
	return NULL;
}

/* ------------------------------------------------------------ choice */

enum h2_choice h2_detect(const struct zh_sock *s, const struct zh_config *cfg)
{
	size_t n = s->in.len < PREFACE_LEN ? s->in.len : PREFACE_LEN;

	/* HTTPS speaks what ALPN chose: h2c's preface is for plain HTTP
	 * only (RFC 9113 3.3). */
	if (s->tls)
		return tls_alpn_h2(s->tls) ? H2_YES : H2_NO;
	/* A plain port for h2c alone: nghttp2 checks the preface (and
	 * closes on anything else). */
	if (cfg->h2.c_only)
		return H2_YES;
	if (memcmp(s->in.buf, preface, n))
		return H2_NO;
	return n == PREFACE_LEN ? H2_YES : H2_MAYBE;
}

/* ------------------------------------------------------------ life */

static int setup_once(void)
{
	if (callbacks)
		return 0;
	if (nghttp2_session_callbacks_new(&callbacks) ||
	    nghttp2_option_new(&options))
		return -ENOMEM;
	h2_recv_callbacks(callbacks);
	h2_data_callbacks(callbacks);
	/* A stream's window reopens as its handler takes the body, not as
	 * nghttp2 receives it (h2_stream.c). */
	nghttp2_option_set_no_auto_window_update(options, 1);
	nghttp2_option_set_max_continuations(options, MAX_CONTINUATIONS);
	nghttp2_option_set_stream_reset_rate_limit(options, RESET_BURST,
						   RESET_RATE);
	return 0;
}

static void on_posted(struct ev_post *p)
{
	run((struct h2_conn *)((char *)p - offsetof(struct h2_conn, post)));
}

static void on_settings_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct h2_conn *h = (struct h2_conn *)((char *)t -
				offsetof(struct h2_conn, settings_timer));

	(void)loop;
	h->w->stats->timeouts++;
	nghttp2_session_terminate_session(h->session,
					  NGHTTP2_SETTINGS_TIMEOUT);
	run(h);
}

/* Our SETTINGS (the server's preface) and the connection's window. */
static int session_new(struct h2_conn *h)
{
	const struct zh_config *cfg = h->w->cfg;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, cfg->h2.max_streams },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW - 1 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
		  cfg->h2.max_header_list },
	};

	if (setup_once() ||
	    nghttp2_session_server_new3(&h->session, callbacks, h, options,
					h2_mem()))
		return -ENOMEM;
	if (nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, iv,
				    sizeof(iv) / sizeof(iv[0])) ||
	    nghttp2_session_set_local_window_size(h->session,
						  NGHTTP2_FLAG_NONE, 0,
						  H2_CONN_WINDOW))
		return -ENOMEM;
	ev_timer_arm(h->w->loop, &h->w->t_h2_settings, &h->settings_timer,
		     on_settings_timeout);
	return 0;
}

int h2_conn_start(struct zh_conn *c)
{
	struct zh_worker *w = c->w;
	struct h2_conn *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->c = c;
	h->w = w;
	h->sock = &c->sock;
	h->tls = c->sock.tls != NULL;
	ev_post_init(&h->post, on_posted);
	if (h2_out_init(&h->out) || session_new(h)) {
		h2_conn_free(h);
		return -ENOMEM;
	}
	c->h2 = h;
	ev_timer_disarm(&c->timer);	/* ours from now on */
	sock_set_hooks(&c->sock, &h2_sock_hooks, h);
	h2_choose_data_path(h);
	w->stats->h2.conns++;
	if (h->tls)
		w->stats->h2.conns_tls++;
	/* The preface and what came with it are in the socket's buffer. */
	run(h);
	return 0;
}

void h2_conn_free(struct h2_conn *h)
{
	ev_unpost(&h->post);
	ev_timer_disarm(&h->timer);
	ev_timer_disarm(&h->settings_timer);
	/* Every stream goes (its handler aborted) while the session still
	 * exists; nghttp2 calls nothing back when it is deleted. */
	while (h->streams)
		h2_stream_close(h->streams);
	nghttp2_session_del(h->session);
	h->session = NULL;
	h2_out_fini(&h->out, h->w);
	if (h->c)
		h->c->h2 = NULL;
	free(h);
}

void h2_conn_shutdown(struct h2_conn *h)
{
	if (h->shutting_down)
		return;
	h->shutting_down = true;
	/* The streams it has begun are finished; it may begin no more. */
	nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
			      nghttp2_session_get_last_proc_stream_id(h->session),
			      NGHTTP2_NO_ERROR, NULL, 0);
	run(h);
}

void h2_conn_post(struct h2_conn *h)
{
	if (!h->in_run)
		ev_post(h->w->loop, &h->post);
}

bool h2_conn_cheap_frame(struct h2_conn *h)
{
	uint64_t now = ev_now_ms(h->w->loop);

	if (now - h->cheap_window_ms >= 1000) {
		h->cheap_window_ms = now;
		h->cheap_frames = 0;
	}
	if (++h->cheap_frames <= CHEAP_PER_SECOND)
		return true;
	if (h->cheap_frames == CHEAP_PER_SECOND + 1) {
		h->w->stats->h2.refused++;
		zh_log(ZL_INFO, "HTTP/2: more than %d frames a second that "
		       "ask for no response: GOAWAY", CHEAP_PER_SECOND);
		nghttp2_session_terminate_session(h->session,
						  NGHTTP2_ENHANCE_YOUR_CALM);
	}
	return false;
}

/* ------------------------------------------------------------ the loop */

static bool backed_up(const struct h2_conn *h)
{
	return zc_agg_len(h->out.agg) >= H2_OUT_HIGH;
}

/* Input the socket has, to nghttp2.  false: the session broke (a bad
 * preface, a flood nghttp2 refused, no memory). */
static bool feed(struct h2_conn *h)
{
	struct sock_in *in = &h->sock->in;

	while (!backed_up(h) && (in->len || sock_fill(h->sock))) {
		ssize_t n = nghttp2_session_mem_recv(h->session,
						     (const uint8_t *)in->buf,
						     in->len);

		if (n < 0) {
			zh_log(ZL_INFO, "HTTP/2: %s", nghttp2_strerror((int)n));
			if (n == NGHTTP2_ERR_FLOODED ||
			    n == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
				h->w->stats->h2.refused++;
			/* nghttp2 leaves the GOAWAY to us here (none after
			 * a bad preface: that client does not speak
			 * HTTP/2). */
			if (n != NGHTTP2_ERR_BAD_CLIENT_MAGIC)
				nghttp2_session_terminate_session(h->session,
					n == NGHTTP2_ERR_FLOODED ||
					n == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ?
					NGHTTP2_ENHANCE_YOUR_CALM :
					NGHTTP2_PROTOCOL_ERROR);
			return false;
		}
		sock_in_consume(in, 0, in->len);
	}
	/* An idle connection holds no input buffer. */
	sock_release_buffer(h->sock);
	return true;
}

static void settle_news(struct h2_conn *h)
{
	struct h2_stream *s;

	while ((s = h->news_first)) {
		h->news_first = s->news_next;
		if (h->news_first)
			h->news_first->news_prev = NULL;
		else
			h->news_last = NULL;
		s->news_next = s->news_prev = NULL;
		s->on_news = false;
		h2_stream_settle(s);
	}
}

/*
 * How a file's extents leave in DATA frames: set when the connection
 * starts (the frame size is 16 KiB until the client's SETTINGS say
 * otherwise) and again when its SETTINGS arrive (h2_recv.c).  Each frame is a 9-byte
 * header and at most the client's SETTINGS_MAX_FRAME_SIZE of payload
 * (16 KiB unless it asks more; browsers, curl and h2load do not).  By
 * reference that is a sendmsg and a sendfile per frame: 100 KB as seven
 * frames cost the sender 54.3 us of CPU on Linux 6.18 against 23.7 us
 * copied from the file's mapping in one sendmsg (bench/floor/zcframes.c,
 * docs/bench-static.md).  A call pair costs about what copying 64 KiB
 * costs, so frames that large go by reference again.  (Over TLS the layer
 * copies everything out anyway.)
 */
void h2_choose_data_path(struct h2_conn *h)
{
	uint32_t frame = nghttp2_session_get_remote_settings(
		h->session, NGHTTP2_SETTINGS_MAX_FRAME_SIZE);

	zc_sink_copy_mapped_files(&h->sock->sink, frame < H2_REF_FRAME_MIN);
}

/* Frames to the socket: 0 when all went, -EAGAIN when it is full, or
 * another negative errno (the session broke, the socket failed). */
static int flush(struct h2_conn *h)
{
	struct worker_stats *st = h->w->stats;

	for (;;) {
		struct zc_io_stats before, after;
		ssize_t n;

		if (!backed_up(h) && nghttp2_session_send(h->session))
			return -EPROTO;
		if (!zc_agg_len(h->out.agg))
			return 0;
		zc_io_stats(&before);
		n = sock_send(h->sock, h->out.agg);
		zc_io_stats(&after);
		st->h2.bytes_by_reference += after.bytes_by_reference -
					     before.bytes_by_reference;
		st->h2.bytes_copied += after.bytes_copied - before.bytes_copied;
		if (n > 0) {
			st->bytes_sent += (uint64_t)n;
			h2_out_sent(&h->out, h->w, (size_t)n);
			h->progress_ms = ev_now_ms(h->w->loop);
			continue;
		}
		if (n != -EINTR)
			return (int)n;
	}
}

/* ------------------------------------------------------------ timers */

static void on_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct h2_conn *h = (struct h2_conn *)((char *)t -
					       offsetof(struct h2_conn, timer));

	(void)loop;
	if (h->timer_list == &h->w->t_h2_idle) {
		/* Nothing in flight: say goodbye, then go. */
		nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
				      nghttp2_session_get_last_proc_stream_id(
					      h->session),
				      NGHTTP2_NO_ERROR, NULL, 0);
		h->shutting_down = true;
		run(h);
		return;
	}
	if (h->timer_list != &h->w->t_linger)
		h->w->stats->timeouts++;
	conn_close(h->c);
}

static void arm(struct h2_conn *h, struct ev_timer_list *l, bool again)
{
	if (again || !ev_timer_armed(&h->timer) || h->timer_list != l) {
		h->timer_list = l;
		ev_timer_arm(h->w->loop, l, &h->timer, on_timeout);
	}
}

/* Which timer the connection's state calls for (see the top). */
static void set_timer(struct h2_conn *h, bool moved)
{
	struct zh_worker *w = h->w;
	bool client = zc_agg_len(h->out.agg) != 0, head = false, busy = false;
	bool own = true;

	for (struct h2_stream *s = h->streams; s; s = s->next) {
		if (!s->routed || (s->done && s->eof && !s->body_end))
			head = true;
		else if (s->active) {
			busy = true;
			own = own && s->req.handler->own_timeouts;
		} else if (s->submitted && !s->eof && !s->deferred)
			client = true;		/* waits for a window */
	}
	if (client)
		arm(h, &w->t_send, moved);
	else if (head)
		arm(h, &w->t_header, false);
	else if (busy && !own)
		arm(h, &w->t_send, moved);
	else if (busy)
		ev_timer_disarm(&h->timer);
	else {
		h2_out_trim(&h->out);	/* idle: it holds no frame memory */
		arm(h, &w->t_h2_idle, false);
	}
}

/* ------------------------------------------------------------ run */

/* After a protocol error the client may still be sending: its bytes are
 * read and dropped for a moment, so that closing with them unread does not
 * reset the GOAWAY away before the client reads it. */
static void linger(struct h2_conn *h)
{
	h->lingering = true;
	sock_shutdown(h->sock);
	if (sock_drain_start(h->sock)) {
		h->closing = true;
		return;
	}
	arm(h, &h->w->t_linger, true);
}

static void run(struct h2_conn *h)
{
	uint64_t progress = h->progress_ms;
	bool broke = false;
	int err = 0;

	if (h->in_run || h->lingering)
		return;
	h->in_run = true;
	for (int pass = 0; pass < 64; pass++) {
		if (!feed(h)) {
			broke = true;
			break;
		}
		settle_news(h);
		err = flush(h);
		if (err && err != -EAGAIN)
			break;
		/* Handlers may have news again, or more input was let in
		 * (the output drained below the mark). */
		if (!h->news_first &&
		    (backed_up(h) || !h->sock->in.len))
			break;
	}
	h->in_run = false;
	if (h->news_first)
		h2_conn_post(h);	/* the passes ran out: later */
	if (broke && (!nghttp2_session_want_write(h->session) ||
		      !flush(h))) {
		/* A broken session (a flood, a bad preface) whose GOAWAY,
		 * if it made one, went: the client is probably still
		 * sending; its bytes are dropped for a moment, so that they
		 * do not reset the GOAWAY away before it is read. */
		linger(h);
	} else if (broke || (err && err != -EAGAIN)) {
		/* The socket failed, or a GOAWAY could not go at once. */
		h->closing = true;
	} else if (!nghttp2_session_want_read(h->session) &&
		   !nghttp2_session_want_write(h->session) && !err) {
		/* GOAWAY sent (or received) and no stream left. */
		if (h->shutting_down)
			h->closing = true;
		else
			linger(h);
	} else if (err == -EAGAIN) {
		if (sock_wait(h->sock, SOCK_OUT | (backed_up(h) ? 0 : SOCK_IN)))
			h->closing = true;
	} else if (sock_read_start(h->sock)) {
		h->closing = true;
	}
	if (h->closing)
		conn_close(h->c);
	else if (!h->lingering)
		set_timer(h, h->progress_ms != progress);
}

/* ------------------------------------------------------------ socket */

static void on_read(struct zh_sock *s, ssize_t n)
{
	struct h2_conn *h = s->data;

	if (n <= 0) {
		/* The client ended (or broke) the connection, or lingering
		 * is over: nothing more can reach it. */
		conn_close(h->c);
		return;
	}
	run(h);
}

static void on_ready(struct zh_sock *s, unsigned ev)
{
	struct h2_conn *h = s->data;

	if (ev & SOCK_IN) {
		ssize_t n = sock_read(s);

		if (n == 0 || (n < 0 && n != -EAGAIN && n != -ENOBUFS)) {
			conn_close(h->c);
			return;
		}
	}
	run(h);
}

static const struct sock_hooks h2_sock_hooks = {
	.read = on_read,
	.ready = on_ready,
};
