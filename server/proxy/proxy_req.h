/*
 * proxy_req.h - a proxied request's state, shared by the files that move
 * its bytes: proxy.c (the request, the response head, faults),
 * proxy_relay.c (the response body), proxy_tunnel.c (Upgrade).
 */
#ifndef ZC_PROXY_REQ_H
#define ZC_PROXY_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include "http_chunked.h"
#include "http_response.h"
#include "proxy.h"
#include "proxy_head.h"
#include "upstream.h"
#include "zc.h"

#define PX_HEAD_FIELDS 100

enum px_body_in {
	PX_IN_NONE,
	PX_IN_LENGTH,			/* Content-Length from the client */
	PX_IN_CHUNKED,			/* chunked from the client */
	PX_IN_TO_END,			/* HTTP/2 without a length: to the
					 * stream's end */
};

struct px_req {
	struct up_client cl;		/* first: the pool's callbacks */
	struct zh_request *r;		/* NULL: the client went away */
	struct zh_worker *w;
	const struct zh_proxy_route *rt;
	struct up_conn *uc;		/* the connection, once attached */
	unsigned attempts;		/* connections the request went on */
	uint64_t start_ms;		/* first send, for the log's time */

	/* The request. */
	char *head;			/* as the upstream gets it */
	size_t head_len;
	const struct zh_upstream_server *head_for;	/* ... made for */
	zc_agg *tx;			/* queued for the upstream */
	enum px_body_in body_in;
	uint64_t body_left;		/* PX_IN_LENGTH */
	struct http_chunked dec;	/* PX_IN_CHUNKED */
	bool body_read;			/* all of it read from the client */
	bool body_ended;		/* ... and its end queued */
	bool sent;			/* head and body all sent */
	bool continued;			/* our 100 Continue queued */
	bool tunnel;			/* an Upgrade asked for */
	bool tunneling;			/* ... and the upstream agreed: bytes
					 * both ways (proxy_tunnel.c) */

	/* The response. */
	zc_buf *rx;			/* the head being gathered */
	size_t rx_len, rx_cap;
	struct http_parser hp;
	struct http_response resp;
	bool got;			/* any byte of a response came */
	bool head_done;
	enum http_body_kind kind;	/* how the upstream delimits it */
	uint64_t resp_left;		/* HTTP_BODY_LENGTH */
	struct http_chunked rdec;	/* HTTP_BODY_CHUNKED */
	enum ph_framing out;		/* how the client gets it */
	bool passthrough;		/* the upstream's chunked bytes go to
					 * the client as they are */
	bool splice;			/* by splice through `pipe` */
	zc_pipe *pipe;
	bool paused;			/* waiting for the client to drain */
	bool reusable;			/* the upstream connection may be
					 * kept when the body ends */
	uint64_t body_sent;

	struct http_header fields[PX_HEAD_FIELDS];
};

/* proxy_relay.c: the response body, after the head was queued (its bytes
 * already in rx past `at` go first).  Each returns 0 (going on, or done:
 * px_done was called), or a negative errno / HTTP status for
 * proxy.c's px_fault. */
int px_relay_start(struct px_req *p, size_t at);
/* More can move: the upstream is readable, or the client drained. */
int px_relay_more(struct px_req *p);
/* The body is complete: the client's framing ends, the connection goes
 * back (proxy.c). */
void px_done(struct px_req *p);
/* A fault after the head went: the client's response is cut. */
void px_cut(struct px_req *p, const char *why);

/* proxy_tunnel.c: after the upstream's 101 (its head `hl` bytes of rx):
 * 0, or a status for px_fault.  Then the upstream's events, the client's
 * input, its drained output and the idle timeout go there. */
int px_tunnel_start(struct px_req *p, size_t hl);
void px_tunnel_io(struct px_req *p, uint32_t events);
void px_tunnel_input(struct px_req *p);
void px_tunnel_more(struct px_req *p);
void px_tunnel_idle(struct px_req *p);

/* Read up to `want` bytes of the upstream into a new pool buffer,
 * published: bytes (*out set), 0 at the end, -EAGAIN, -errno (*out NULL
 * unless bytes came). */
ssize_t px_read(struct px_req *p, size_t want, zc_buf **out);
/* A chunk's size line ("%zx\r\n") onto out: 0 or -ENOMEM (its data and
 * the CRLF after it are the caller's). */
int px_chunk_line(zc_agg *out, size_t len);

/* proxy.c's spare pipes (per worker): one with nothing in it, or a new
 * one; back when the request is done with it. */
zc_pipe *px_pipe_get(struct zh_worker *w);
void px_pipe_put(struct zh_worker *w, zc_pipe *pipe);

#endif
