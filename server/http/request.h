/*
 * request.h - one HTTP request, from its parsed head to the end of its
 * response, across any wait in between.
 *
 * Most requests are answered at once: a cache hit, the status page, an
 * error.  Some have to wait -- a cache miss for a helper thread that opens
 * and reads the file (diskio.h), a FastCGI request for its backend.  A
 * waiting request keeps everything it was parsed into: its head stays
 * where it was received (the connection does not compact its input past
 * it) and its header slots are copied out of the worker's shared array,
 * so when the wait ends the handler resumes where it stopped.  Nothing is
 * parsed, normalized or looked up twice.
 *
 * The handler that made a request wait owns it until it calls
 * request_finish().  Handlers run on the loop thread only.  A handler
 * never frees the connection or the request: it appends to request_out(),
 * asks for the output to be sent (request_send), and says when it is done;
 * the connection does the rest from its own stack (request.c posts it on
 * the loop's queue, event.h, run before the loop sleeps), so a handler
 * callback is never re-entered by the connection it serves.
 */
#ifndef ZC_REQUEST_H
#define ZC_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#include "http_parser.h"
#include "uri.h"
#include "zc.h"

struct h2_stream;
struct zh_conn;
struct zh_worker;
struct zh_vhost;
struct zh_request;
struct cache_entry;

/*
 * How a handler's part in a request ends, or that it goes on later: a type
 * of its own, so that it cannot be taken for an errno or for a plain status
 * (an int that carried "wait" as -1 and "cut" as -2 also carried -EPERM and
 * -ENOENT).  A handler's serve function returns
 *   ZH_ANSWERED         the response is complete in request_out();
 *   zh_status(S)        answer with the error page of status S instead;
 *   ZH_WAITING          it called request_wait(): it finishes the request
 *                       later with request_finish();
 * and request_finish() takes ZH_ANSWERED, zh_status(S), or
 *   ZH_TRUNCATED        the response was cut short after part of it was
 *                       queued (a backend died): what is queued is sent and
 *                       the connection closed, so the client cannot take
 *                       the truncated body for a complete one.
 * An error page is valid only while none of the response is queued; later
 * the connection cuts it (it becomes ZH_TRUNCATED).
 */
typedef struct zh_answer {
	int code;	/* 0, an HTTP status, or one of the two below (never
			 * a status: statuses start at 100) */
} zh_answer;

#define ZH_ANSWER_WAIT 1
#define ZH_ANSWER_CUT 2
#define ZH_ANSWERED ((zh_answer){ 0 })
#define ZH_WAITING ((zh_answer){ ZH_ANSWER_WAIT })
#define ZH_TRUNCATED ((zh_answer){ ZH_ANSWER_CUT })

/* status: 0 (answered) or an HTTP status, 100-599 (anything else would be
 * a bug: it is answered as 500, never as a wait or a cut). */
static inline zh_answer zh_status(int status)
{
	if (status && (status < 100 || status > 599))
		status = 500;
	return (zh_answer){ status };
}

static inline bool zh_waits(zh_answer a)
{
	return a.code == ZH_ANSWER_WAIT;
}

static inline bool zh_truncated(zh_answer a)
{
	return a.code == ZH_ANSWER_CUT;
}

/* The error page's status, or 0 for none. */
static inline int zh_error_status(zh_answer a)
{
	return a.code >= 100 ? a.code : 0;
}

/* A waiting request's hooks, called by the connection on the loop. */
struct zh_handler {
	const char *name;
	/* The handler bounds its own waits (FastCGI: --fastcgi-timeout);
	 * otherwise the connection's send timeout bounds each wait. */
	bool own_timeouts;
	/* The connection is going away (client gone, timeout, shutdown):
	 * drop every claim on r now; r is freed after this returns. */
	void (*abort)(struct zh_request *r);
	/* The queued response fell below the low-water mark after the
	 * handler paused for backpressure (request_send returned false). */
	void (*drained)(struct zh_request *r);
	/* The client sent more bytes while the handler asked for input
	 * (request_want_input): request bodies. */
	void (*input)(struct zh_request *r);
};

struct zh_request {
	struct zh_conn *conn;
	struct h2_stream *stream;	/* an HTTP/2 stream carries it (h2.h);
					 * NULL: HTTP/1.x */
	struct zh_worker *w;
	struct zh_vhost *vhost;		/* the site its Host names (vhost.h) */
	struct http_request http;	/* the parsed head (pointers into the
					 * connection's input buffer) */
	const char *uri;		/* "/" + the normalized path (uri.h) */
	size_t uri_len;
	struct uri_path up;		/* its query points into the head */
	size_t head_len;		/* bytes of the head in that buffer */
	bool head_only;			/* HEAD: no body */
	bool keep_alive;		/* may the connection stay open */
	bool body_read;			/* the handler took the whole request
					 * body: else the connection closes
					 * after the response, lingering */
	bool body_to_end;		/* HTTP/2 without Content-Length: the
					 * body runs to the stream's end
					 * (request_read returns 0 there) */
	int status;			/* the status sent (access log, counters) */
	uint64_t body_bytes;		/* bytes of body in the response */
	const char *upstream;		/* the server that answered (a proxy's:
					 * the access log); NULL: none */
	uint64_t upstream_ms;		/* ... from the request sent to the
					 * response's end */
	struct cache_entry *entry;	/* a cache entry the response body uses,
					 * with a reference the request holds
					 * until the connection pins the entry
					 * for the send (or drops it) */

	/* While waiting: who owns the request, and its state. */
	const struct zh_handler *handler;
	void *wait;
	struct http_header *own_headers;	/* copied from the worker slots */
	char *own_uri;			/* uri, copied out of the worker */
	char *redirect;			/* the target of a local redirect */
	size_t redirect_len;
	unsigned redirects;
	bool want_input;
	bool finished;			/* request_finish was called ... */
	zh_answer finished_as;		/* ... with this */
	bool redirect_pending;		/* request_redirect was called */
};

/* The aggregate this request's response is appended to. */
zc_agg *request_out(struct zh_request *r);

/* A response head built in the connection's own memory (respond.h):
 * request_head_begin points h at free room of the connection's head
 * arena, resp_* fill it, request_head_end appends it to the output as a
 * borrowed slice (or, when the arena had no room, as a pool copy).
 * request_head_append does the same for bytes built elsewhere.  Returns
 * 0, or 500 (did not fit) / 503 (out of memory). */
struct resp_head;
void request_head_begin(struct zh_request *r, struct resp_head *h);
int request_head_end(struct zh_request *r, struct resp_head *h);
int request_head_append(struct zh_request *r, const char *p, size_t len);

/* Park r under handler h with state `wait`.  Returns 0, or 503 when the
 * header slots cannot be copied (the handler then answers with it). */
int request_wait(struct zh_request *r, const struct zh_handler *h,
		 void *wait);

/* The handler is done with r (it must not touch r afterwards; the
 * connection settles it from its own loop): ZH_ANSWERED, zh_status(S) or
 * ZH_TRUNCATED (see zh_answer). */
void request_finish(struct zh_request *r, zh_answer how);

/* Send what the handler appended so far (a streamed response).  Returns
 * false when the queued output is above the high-water mark: the handler
 * should stop producing until its drained hook is called. */
bool request_send(struct zh_request *r);

/* Ask for (or stop asking for) the input hook when the client sends. */
void request_want_input(struct zh_request *r, bool on);

/* The bytes the connection has received after the head and not yet given
 * to anyone (a request body, or pipelined requests after it). */
void request_input(struct zh_request *r, const char **p, size_t *len);
/* Drop the first n of those bytes (the body the handler used). */
void request_input_consume(struct zh_request *r, size_t n);
/* Whether request_input has bytes for the handler (input the socket held
 * ahead is moved into the buffer first).  A handler that reads the body
 * itself (request_read_body) must take those first: on the io_uring loop,
 * and from OpenSSL, bytes can reach the buffer after the handler first
 * looked. */
bool request_input_buffered(struct zh_request *r);
/* Read up to `want` bytes of a large body straight into `body` (read no
 * more than the body's length: what follows is not its own; *body NULL:
 * a new aggregate): by reference from the socket where libzc can
 * (iol_read), decrypted through a copy on HTTPS, copied from what the
 * socket held.  Bytes, 0 at EOF, -EAGAIN, or -errno. */
ssize_t request_read_body(struct zh_request *r, zc_agg **body, size_t want);
/* Read what the client sent into the connection's input (after what
 * request_input shows): bytes read, 0 at EOF, -EAGAIN, -ENOBUFS (the
 * input is full: take some first), or -errno. */
ssize_t request_read(struct zh_request *r);
/* Queue "100 Continue" ahead of the response (Expect: 100-continue). */
int request_continue(struct zh_request *r);
/* Queue an interim (1xx) response head ahead of the final one (a proxy
 * passing on its upstream's 103 Early Hints, 100 Continue): HTTP/1.1
 * only; for HTTP/1.0 and HTTP/2 nothing is sent.  0, or 503. */
int request_interim(struct zh_request *r, const char *head, size_t len);
/* Like request_send, and the drained hook is called once everything
 * queued has been sent (not merely fallen below the high-water mark): for
 * a handler whose bytes wait in a bounded place of their own until they
 * leave (a splice pipe). */
void request_send_wait(struct zh_request *r);
/* Whether the response may hold pipe slices (zc.h): the client's socket
 * writes its output with iol_write (HTTP/1.x over plain TCP, or kernel
 * TLS).  Not on HTTP/2 (frames), nor TLS in user space (copies out). */
bool request_takes_pipes(struct zh_request *r);
/* Whether the client came over TLS. */
bool request_secure(const struct zh_request *r);
/* The protocol of the request, as the access log and CGI's
 * SERVER_PROTOCOL name it: "HTTP/1.0", "HTTP/1.1", "HTTP/2.0". */
const char *request_protocol(const struct zh_request *r);
/* Serve `path` instead, as a GET without a body (a CGI local redirect,
 * RFC 3875 6.2.2): the handler gives the request up (its state must be
 * gone, and it must not touch r afterwards) and the connection routes it
 * again from the start. */
void request_redirect(struct zh_request *r, const char *path, size_t len);

/* The connection's side of request_redirect: r becomes a GET of the new
 * path without a body, to be routed from the start.  Returns true when
 * the old body was not read (an HTTP/1.1 connection must close after). */
bool request_redirected(struct zh_request *r);

/* The client's address, and ours on its connection. */
const struct sockaddr_storage *request_peer(const struct zh_request *r);
const struct sockaddr_storage *request_local(struct zh_request *r);

/* Bytes a handler derives from the connection's two addresses alone,
 * kept for the connection's next requests (the FastCGI handler's encoded
 * SERVER_ADDR, SERVER_PORT, REMOTE_ADDR, REMOTE_PORT): the addresses
 * cannot change while it lives, and a connection starts with len 0 (not
 * made yet). */
#define ZH_ADDR_MEMO_MAX 160
struct zh_addr_memo {
	uint8_t len;
	uint8_t bytes[ZH_ADDR_MEMO_MAX];
};
struct zh_addr_memo *request_addr_memo(struct zh_request *r);

#endif
