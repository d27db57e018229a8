/*
 * h2.h - HTTP/2 (RFC 9113) on a connection's socket: h2 over TLS, chosen
 * by ALPN, and h2c with prior knowledge on the plain port.
 *
 * libnghttp2 does the protocol -- framing, HPACK, flow control, stream
 * states; zchttpd owns the socket (sock.h), the streams' requests and the
 * bodies.  Each stream is a request as an HTTP/1.1 one is (request.h): the
 * router (router.h) chooses its handler, and static files, the status
 * endpoint and FastCGI answer it unchanged, into an aggregate of their own.
 * What they write there is an HTTP/1.1 response -- a head, then the body as
 * the cache's memory or a file extent -- and h2_stream.c sends the head as
 * HEADERS and the body as DATA frames whose payload is those same slices
 * (h2_data.c): sendfile, and kernel TLS, still carry the body.
 *
 * conn.c accepts every connection and hands it over (h2_conn_start) when
 * its first bytes are the connection preface, or when ALPN chose h2; from
 * then on the socket's hooks are h2_conn.c's.  The connection object
 * (struct zh_conn) stays conn.c's: it is in the worker's list, and
 * conn_close() ends it.
 *
 * Built without libnghttp2 (the static musl image), h2_none.c stands in:
 * nothing is ever taken for HTTP/2 and --http2 is refused.
 */
#ifndef ZC_H2_H
#define ZC_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "zc.h"

struct h2_conn;
struct resp_head;
struct zh_conn;
struct zh_config;
struct zh_request;
struct zh_sock;

/* Whether this build has HTTP/2 (for --http2 on at start): NULL, or why
 * not. */
const char *h2_unavailable(void);

/* What a connection's first bytes say (on HTTPS: what ALPN chose). */
enum h2_choice {
	H2_NO,				/* HTTP/1.x */
	H2_MAYBE,			/* a prefix of the preface: read more */
	H2_YES,
};
enum h2_choice h2_detect(const struct zh_sock *s, const struct zh_config *cfg);

/* c speaks HTTP/2 from now on, starting with what its socket has read:
 * 0, or a negative errno (then close c). */
int h2_conn_start(struct zh_conn *c);
/* conn_close(): every stream goes, its handler aborted. */
void h2_conn_free(struct h2_conn *h);
/* A graceful stop or reload: GOAWAY, the streams in flight are finished,
 * then the connection closes (at once when it has none). */
void h2_conn_shutdown(struct h2_conn *h);

/*
 * A stream's side of request.h, for request.c (r->stream set).  The same
 * contracts as there; what differs: the output is the stream's, a head is
 * held by the stream until it goes out as HEADERS, the request body comes
 * from DATA frames (a window's worth buffered, the window reopened as the
 * handler takes it), and news is posted to the HTTP/2 connection.
 */
zc_agg *h2_req_out(struct zh_request *r);
void h2_req_head_begin(struct zh_request *r, struct resp_head *h);
int h2_req_head_end(struct zh_request *r, struct resp_head *h);
int h2_req_head_append(struct zh_request *r, const char *p, size_t len);
void h2_req_waits(struct zh_request *r);
void h2_req_post(struct zh_request *r);
bool h2_req_send(struct zh_request *r);
void h2_req_input(struct zh_request *r, const char **p, size_t *len);
void h2_req_input_consume(struct zh_request *r, size_t n);
bool h2_req_input_buffered(struct zh_request *r);
ssize_t h2_req_read_body(struct zh_request *r, zc_agg **body, size_t want);
ssize_t h2_req_read(struct zh_request *r);
int h2_req_continue(struct zh_request *r);
/* Does the stream's socket copy DATA payloads from file mappings (h2c;
 * over TLS the record layer copies everything out itself)? */
bool h2_req_copies_mapped(const struct zh_request *r);
/* request_send, with the drained hook once the stream's output is low. */
void h2_req_send_wait(struct zh_request *r);
/* The stream's connection is HTTPS. */
bool h2_req_secure(const struct zh_request *r);

#endif
