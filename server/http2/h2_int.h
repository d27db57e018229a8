/*
 * h2_int.h - what the parts of HTTP/2 share (h2.h):
 *
 *   h2_conn.c    the connection: its nghttp2 session, the socket's hooks,
 *                the loop that feeds input and flushes output, timers,
 *                GOAWAY, the limits on what a client may make us do;
 *   h2_recv.c    nghttp2's receive callbacks: streams begin, their fields,
 *                frames, body bytes, ends;
 *   h2_stream.c  a stream as a request: its head made an http_request,
 *                routed, answered, settled (error pages, the log, pins);
 *                request.h's calls for it;
 *   h2_head.c    the HTTP/1.1 response head a handler wrote, as HEADERS
 *                fields;
 *   h2_data.c    DATA frames by reference, and the connection's output
 *                queue (frame bytes, sent offsets, the cache pins of
 *                bodies in flight);
 *   h2_mem.c     the small blocks nghttp2 allocates, from free lists.
 */
#ifndef ZC_H2_INT_H
#define ZC_H2_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "event.h"
#include "h2.h"
#include "request.h"
#include "respond.h"
#include "zc.h"

struct cache_entry;
struct zh_worker;

/* Whether memory is reused here rather than given back to malloc (closed
 * streams, nghttp2's blocks): not under AddressSanitizer, which then
 * still catches a use after free. */
#if defined(__SANITIZE_ADDRESS__)
#define H2_REUSE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H2_REUSE 0
#endif
#endif
#ifndef H2_REUSE
#define H2_REUSE 1
#endif

/* Frames beyond this backlog wait in nghttp2 (and input is not read, so a
 * client that does not read stops being read): the output queue holds
 * references and small frame bytes only, but it bounds what one
 * connection makes ahead of its socket. */
#define H2_OUT_HIGH (256u << 10)
/* A stream's response held above this pauses a streaming handler
 * (request_send returns false) until the DATA frames took it below half. */
#define H2_STREAM_HIGH (256u << 10)
/* What a client may send us of a request body before we read it: the
 * stream's window, and so the most a stream buffers. */
#define H2_STREAM_WINDOW 65536u
/* The connection's receive window (the sum over its streams). */
#define H2_CONN_WINDOW (1u << 20)

/* DATA frames at least this large carry a file's pages by reference (a
 * sendfile each); smaller ones copy them from the file's mapping
 * (choose_data_path in h2_conn.c). */
#define H2_REF_FRAME_MIN (64u << 10)
/* The longest DATA frame we make, whatever the client allows. */
#define H2_FRAME_MAX (256u << 10)

/* ------------------------------------------------------------ output */

/* Frame bytes nghttp2 made (heads, control frames, DATA frame headers)
 * are copied into chunks and go into the output as borrowed slices: a
 * chunk is reused once the socket has sent past its last byte. */
#define H2_CHUNK (16u << 10)
struct h2_chunk {
	struct h2_chunk *next;
	uint64_t end;			/* output offset past its last byte */
	size_t used;
	char data[H2_CHUNK];
};

/* A cache entry whose body is in the output until offset `end`. */
struct h2_pin {
	struct cache_entry *e;
	uint64_t end;
};

struct h2_out {
	zc_agg *agg;			/* what the socket is to send, in order */
	uint64_t sent;			/* bytes the socket took so far */
	struct h2_chunk *first, *last;	/* chunks in use, oldest first */
	struct h2_chunk *spare;		/* one kept for reuse */
	struct h2_pin *pins;		/* in no order */
	unsigned npins, cap;
	unsigned reserved;		/* room promised to h2_out_pin */
};

/* ------------------------------------------------------------ streams */

enum h2_pseudo { H2P_METHOD, H2P_PATH, H2P_AUTHORITY, H2P_SCHEME, H2P_N };

struct h2_stream {
	struct zh_request req;		/* req.stream is this */
	struct h2_conn *h;
	int32_t id;
	struct h2_stream *prev, *next;	/* the connection's streams */
	struct h2_stream *id_next;	/* in its slot of h->by_id */
	struct h2_stream *news_prev, *news_next;	/* on h's news list */
	bool on_news;

	/* The request head as its fields arrive: names and values are
	 * copied into `text`; until the head is complete the fields hold
	 * offsets into it (text may move as it grows). */
	struct http_header *fields;	/* becomes req.own_headers */
	unsigned nfields, fields_cap;
	char *text;
	size_t text_len, text_cap;
	size_t list_size;		/* RFC 9113's header list size */
	struct { size_t off, len; bool set; } pseudo[H2P_N];
	int reject;			/* the status to answer instead */

	/* The request body: what arrived and the handler has not taken
	 * (at most the stream's window). */
	char *body;
	size_t body_len;
	bool body_end;			/* END_STREAM received */
	bool end_told;			/* ... and the handler was told */
	bool input_news;		/* bytes or the end since it was told */

	/* The response: the head a handler wrote (held here until it goes
	 * as HEADERS), then out holds the body not yet framed. */
	zc_agg *out;
	char *head;			/* head_local or malloc'ed */
	size_t head_len;
	uint64_t framed;		/* body bytes put into DATA frames */
	bool routed;			/* its head was complete and routed */
	bool active;			/* a handler has it (request_wait) */
	bool done;			/* answered: out is the whole rest */
	bool submitted;			/* its HEADERS are queued */
	bool deferred;			/* nghttp2 waits for more body */
	bool send_asked;		/* request_send: submit what there is */
	bool paused;			/* request_send said stop */
	bool eof;			/* its last DATA (or HEADERS with
					 * END_STREAM) is made */
	bool pin_reserved;		/* room for its pin in h->out */
	struct cache_entry *pinned;	/* its body's entry, pinned */

	/* Last, so that a stream is cleared up to here only (h2_stream.c):
	 * a handler writes a head before it is read. */
	char head_local[RESP_HEAD_MAX];
};

/* Closed streams the worker keeps for its next ones (on any
 * connection), with their text and fields (when small) and aggregate: a
 * stream then costs no allocation.  None under AddressSanitizer (see
 * H2_REUSE). */
#define H2_SPARE_STREAMS (H2_REUSE ? 64u : 0u)

/* ------------------------------------------------------------ connection */

/* The streams a connection holds, by id: a client's ids go up by two, so
 * that the open ones fill the slots in turn and a chain is short (one
 * stream per slot up to this many at once). */
#define H2_ID_SLOTS 64u

struct h2_conn {
	struct zh_conn *c;		/* the socket, peer, worker: conn.c's */
	struct zh_worker *w;
	struct zh_sock *sock;
	nghttp2_session *session;
	struct h2_out out;
	struct ev_post post;		/* run() before the loop sleeps */
	struct ev_timer timer;		/* idle, header, send, linger */
	struct ev_timer_list *timer_list;	/* which of them (the timer
						 * forgets when it fires) */
	struct ev_timer settings_timer;	/* our SETTINGS not acknowledged */
	struct h2_stream *news_first, *news_last;	/* streams with
							 * something to do */
	struct h2_stream *streams;	/* every stream we know */
	unsigned nstreams;
	struct h2_stream *by_id[H2_ID_SLOTS];	/* the same streams, in
						 * chains by id (h2_stream_find) */
	bool tls;
	bool in_run;			/* run() is on the stack */
	bool closing;			/* close when run() returns */
	bool lingering;			/* GOAWAY sent after an error: the
					 * client's rest is read and dropped */
	bool shutting_down;		/* GOAWAY sent for a graceful stop */
	uint64_t progress_ms;		/* last time the socket took bytes */
	/* Frames that ask us for work without a request (PING, SETTINGS,
	 * PRIORITY, RST_STREAM, WINDOW_UPDATE, empty DATA): counted per
	 * second; a flood ends the connection. */
	uint64_t cheap_window_ms;
	unsigned cheap_frames;
	/* Which of the 64 client stream ids up to last_opened (odd: bit i
	 * is last_opened - 2i) began a stream: HEADERS on one that never
	 * did, below the last, is a protocol error (RFC 9113 5.1.1), where
	 * one that did may be trailers after a reset (ignored). */
	int32_t last_opened;
	uint64_t opened;
};

/* h2_conn.c */
void h2_conn_post(struct h2_conn *h);
/* A stream has news (request_finish, request_send, input): look at it in
 * run(). */
void h2_stream_news(struct h2_stream *s);
/* A frame that costs work without a request: false when the client has
 * sent too many of them (the session is then terminated). */
bool h2_conn_cheap_frame(struct h2_conn *h);
/* Tell the socket how DATA payloads of files leave for this client's
 * frame size (h2_conn.c): at the start and after each SETTINGS. */
void h2_choose_data_path(struct h2_conn *h);

/* h2_mem.c: the allocator nghttp2 uses (NULL: its own, malloc). */
nghttp2_mem *h2_mem(void);

/* h2_recv.c: the receive callbacks, set on cbs. */
void h2_recv_callbacks(nghttp2_session_callbacks *cbs);

/* h2_stream.c */
struct h2_stream *h2_stream_new(struct h2_conn *h, int32_t id);
/* The stream h holds with this id, or NULL (never begun, or closed). */
struct h2_stream *h2_stream_find(const struct h2_conn *h, int32_t id);
/* A field of the request head (names arrive lower-case, checked by
 * nghttp2): 0, or an nghttp2 error. */
int h2_stream_field(struct h2_stream *s, const uint8_t *name, size_t nlen,
		    const uint8_t *value, size_t vlen);
/* The head is complete (end: END_STREAM came with it): route it. */
void h2_stream_head_done(struct h2_stream *s, bool end);
/* Body bytes of the request (DATA), and its end. */
void h2_stream_body(struct h2_stream *s, const uint8_t *p, size_t n);
void h2_stream_body_end(struct h2_stream *s);
/* Act on a stream's news (run() calls it for each). */
void h2_stream_settle(struct h2_stream *s);
/* nghttp2 closed the stream (or the connection goes): its handler is
 * aborted if it still has it, and it is freed or kept for reuse. */
void h2_stream_close(struct h2_stream *s);

/* h2_head.c: the HTTP/1.1 head at the start of text[0..len) (status
 * line, fields, empty line; *head_len its length) as HTTP/2 fields in nv
 * (at most `max`, pointing into text, flagged for nghttp2 not to copy
 * them: the caller clears the flags where text will not last until the
 * HEADERS frame is made), names lower-cased in place; the fields that
 * describe an HTTP/1.1 connection are left out.  The number of
 * fields (":status" first), or -1 if text does not start with such a
 * head. */
int h2_head_fields(char *text, size_t len, nghttp2_nv *nv, size_t max,
		   int *status, size_t *head_len);

/* h2_data.c */
int h2_out_init(struct h2_out *o);
void h2_out_fini(struct h2_out *o, struct zh_worker *w);
/* Copy frame bytes into the output: 0 or -ENOMEM. */
int h2_out_bytes(struct h2_out *o, const void *p, size_t n);
/* Nothing is queued: its chunks go too (an idle connection holds
 * none). */
void h2_out_trim(struct h2_out *o);
/* The socket took n bytes: chunks and pins behind them go. */
void h2_out_sent(struct h2_out *o, struct zh_worker *w, size_t n);
/* Room for one more pin, so that h2_out_pin cannot fail: 0 or -ENOMEM. */
int h2_out_pin_reserve(struct h2_out *o);
/* e's body is in the output up to here (the stream is closed: nothing of
 * it comes later): unpinned once the socket has sent past it.  Takes a
 * reserved place. */
void h2_out_pin(struct h2_out *o, struct cache_entry *e);
static inline uint64_t h2_out_end(const struct h2_out *o)
{
	return o->sent + zc_agg_len(o->agg);
}
/* The data provider of a response whose body is s->out. */
nghttp2_data_provider h2_data_provider(struct h2_stream *s);
/* nghttp2's output callbacks, set on cbs. */
void h2_data_callbacks(nghttp2_session_callbacks *cbs);

#endif
