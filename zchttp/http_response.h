/*
 * http_response.h - HTTP/1.x response heads, as a reverse proxy reads its
 * upstreams' answers (RFC 9110, RFC 9112), and the hop-by-hop fields an
 * intermediary removes.
 *
 * The request parser's twin: the same scanner, line limits, field syntax
 * and framing fields (http_parser.h says what they accept), the same
 * incremental, linear contract (same return values, the same answer
 * however the bytes are split, offsets only between calls, a restart when
 * len shrinks), the same caller-owned slots.
 *
 *	struct http_header slots[64];
 *	struct http_limits lim = HTTP_LIMITS_DEFAULT;     // lim.max_headers <= 64
 *	struct http_parser p;
 *	struct http_response resp = { .headers = slots };
 *
 *	http_parser_init(&p);
 *	for (;;) {
 *		append what the upstream sent to buf, len += n;
 *		ssize_t r = http_parse_response(&p, buf, len, &lim, &resp);
 *		if (r == HTTP_PARSE_INCOMPLETE) continue;           // read more
 *		if (r == HTTP_PARSE_ERROR) log resp.why, answer 502, close the
 *			upstream connection (never reuse it);
 *		if (resp.status is 1xx other than 101) pass it on or drop it,
 *			http_parser_init(&p), parse again at buf + r;  // the
 *			final response follows
 *		the body starts at buf + r, delimited as
 *		http_response_body(&resp, request's method) says.
 *	}
 *
 * Limits: lim->max_request_line bounds the status line, max_head_bytes and
 * max_headers the field section as for requests; over any of them is an
 * oversized head, HTTP_E_HEADERS_TOO_LARGE.
 *
 * Strictness: everything that is not exactly one reading is an error (the
 * proxy answers 502 and closes the upstream connection; `error` is the
 * class: 400 malformed or ambiguous, 431 oversized, 505 another version;
 * `why` says which rule):
 *   - Status line: "HTTP/1.d" SP 3DIGIT [SP reason-phrase], single spaces;
 *     HTTP/1.0 and HTTP/1.1 (another "HTTP/d.d": 505); status 100..599;
 *     reason-phrase HTAB, SP, VCHAR and obs-text only ("HTTP/1.1 200" and
 *     "HTTP/1.1 200 " are both an empty reason).  No empty lines before
 *     it (RFC 9112 2.2 allows skipping them before a request only).
 *   - Line ends, fields: as in requests (CRLF or bare LF; a bare CR, an
 *     obs-fold, whitespace before a colon, a CTL in a value are errors).
 *   - Framing (RFC 9112 6, the ambiguities that desynchronise a reused
 *     connection or smuggle a response):
 *       Content-Length  1*DIGIT up to INT64_MAX; repeated only with the
 *                       same text; no list ("5, 5")
 *       Transfer-Encoding  one line; with Content-Length: error; in an
 *                       HTTP/1.0 response: error; empty or with a coding
 *                       that is not a bare token: error; chunked twice,
 *                       or chunked before another coding ("chunked,
 *                       gzip": close-delimited by the RFC, but a double
 *                       chunking in the making): error.  Chunked last:
 *                       HTTP_F_CHUNKED (with HTTP_RF_TE_OTHER when codings
 *                       come before it: the de-chunked body is still
 *                       coded); no chunked at all ("gzip"): the body
 *                       ends with the connection, HTTP_RF_TE_CLOSE (RFC
 *                       9112 6.3 rule 4), HTTP_RF_TE_OTHER.
 *       1xx and 204     no Transfer-Encoding, no Content-Length other
 *                       than 0 (RFC 9112 6.1, RFC 9110 8.6 MUST NOT): such
 *                       a response has no body, and the bytes the field
 *                       announces would be read as the next response.
 *   - Connection: "close" and "keep-alive" as for requests;
 *     HTTP_F_KEEP_ALIVE is the decision by version and Connection alone
 *     (a body delimited by close ends the connection too: see
 *     http_response_body).
 *   - Upgrade: HTTP_RF_UPGRADE when the field is present (a 101 switches
 *     to its protocol; http_connection_lists(..., "upgrade") says whether
 *     Connection names it, as RFC 9110 7.8 wants).
 * 1xx responses, 101 included, are returned as any other head: the caller
 * loops to read the final one.
 */
#ifndef ZC_HTTP_RESPONSE_H
#define ZC_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http_parser.h"

/* Flags in http_response.flags, beside HTTP_F_CONTENT_LENGTH,
 * HTTP_F_CHUNKED, HTTP_F_CONN_CLOSE, HTTP_F_CONN_KEEP_ALIVE and
 * HTTP_F_KEEP_ALIVE (the connection may carry another request after this
 * response, by version and Connection). */
#define HTTP_RF_UPGRADE		0x100u	/* an Upgrade field */
#define HTTP_RF_TE_CLOSE	0x200u	/* Transfer-Encoding whose final coding
					 * is not chunked: the body ends with
					 * the connection (RFC 9112 6.3) */
#define HTTP_RF_TE_OTHER	0x400u	/* a transfer coding other than chunked:
					 * the body (de-chunked) is still coded */

struct http_response {
	/* Set by the caller before the first call; never written. */
	struct http_header *headers;	/* lim->max_headers slots */

	int minor;			/* HTTP/1.minor: 0 or 1 */
	int status;			/* 100..599 */
	struct http_str reason;		/* as sent, possibly empty; never NULL */
	size_t num_headers;
	unsigned flags;			/* HTTP_F_*, HTTP_RF_* */
	uint64_t content_length;	/* valid with HTTP_F_CONTENT_LENGTH */

	/* On HTTP_PARSE_ERROR: what went wrong (the proxy answers 502) and a
	 * static one-line reason for the error log. */
	enum http_error error;
	const char *why;
};

/*
 * Parse the response head at buf[0..len): its length (status line, fields
 * and the empty line: the body starts at buf + that),
 * HTTP_PARSE_INCOMPLETE, or HTTP_PARSE_ERROR with resp->error and
 * resp->why set.  http_parse_request's contract (http_parser.h) otherwise.
 */
ssize_t http_parse_response(struct http_parser *p, const char *buf,
			    size_t len, const struct http_limits *lim,
			    struct http_response *resp);

/* How the body of a response is delimited (RFC 9112 6.3). */
enum http_body_kind {
	HTTP_BODY_NONE,		/* none: the head is the whole response */
	HTTP_BODY_LENGTH,	/* content_length bytes */
	HTTP_BODY_CHUNKED,	/* chunked (http_chunked.h) */
	HTTP_BODY_CLOSE,	/* up to the end of the connection */
};

/*
 * The body of this response to a request of method req_method: none for
 * HEAD, 1xx, 204 and 304; none either for a 2xx to CONNECT -- the
 * connection becomes a tunnel from the end of the head on, and any
 * Content-Length or Transfer-Encoding is ignored (RFC 9110 9.3.6);
 * otherwise chunked, or Content-Length, or up to the close.
 */
enum http_body_kind http_response_body(const struct http_response *resp,
				       enum http_method req_method);

/*
 * Whether name[0..len) is one of the connection options listed by the
 * Connection fields of hs[0..n) (RFC 9110 7.6.1: a proxy removes every
 * field the Connection header names): case-insensitive, comma lists with
 * OWS, any number of Connection lines.  An empty name is never listed.
 */
bool http_connection_lists(const struct http_header *hs, size_t n,
			   const char *name, size_t len);

/*
 * Whether a field is hop-by-hop by definition, whatever Connection says
 * (RFC 9110 7.6.1, and RFC 2616 13.5.1's list): Connection, Keep-Alive,
 * Proxy-Connection, TE, Transfer-Encoding, Upgrade, Proxy-Authenticate,
 * Proxy-Authorization, Trailer; case-insensitive.
 */
bool http_hop_by_hop(const char *name, size_t len);

#endif /* ZC_HTTP_RESPONSE_H */
