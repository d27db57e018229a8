/*
 * http_parser.h - HTTP/1.x request heads, byte ranges and HTTP-dates.
 * (Response heads, for a proxy: http_response.h.)
 *
 * A strict, incremental, allocation-free parser for the head of an HTTP/1.0
 * or HTTP/1.1 request (RFC 9110, RFC 9112), in the spirit of picohttpparser
 * and nginx's ngx_http_parse.c.  The caller owns every byte of memory: the
 * receive buffer and a fixed array of header slots.  The parser returns
 * pointers and lengths into the caller's buffer; nothing is copied or
 * NUL-terminated.
 *
 * Usage (one connection, one request at a time):
 *
 *	struct http_header slots[64];
 *	struct http_limits lim = HTTP_LIMITS_DEFAULT;     // lim.max_headers <= 64
 *	struct http_parser p;
 *	struct http_request req = { .headers = slots };
 *
 *	http_parser_init(&p);
 *	for (;;) {
 *		append what the socket has to buf, len += n;
 *		ssize_t r = http_parse_request(&p, buf, len, &lim, &req);
 *		if (r == HTTP_PARSE_INCOMPLETE) continue;           // read more
 *		if (r == HTTP_PARSE_ERROR) respond req.error (400, 414, ...) and close;
 *		serve req; the next request (pipelining) starts at buf + r:
 *		http_parser_init(&p) and parse again from there.
 *	}
 *
 * Incremental and linear.  Call again with the same parser state, the same
 * bytes and more of them appended whenever more arrive.  Each call searches
 * only the new bytes for line ends and checks each completed line once, so
 * a request dripped in byte by byte (slowloris) costs O(n) in total, and
 * errors (bad syntax, limits) are reported as soon as the offending line is
 * complete, not when the whole head has arrived.  The parser keeps only
 * offsets between calls: the caller may move the buffer (compact it, copy
 * it) between calls as long as the bytes already passed stay the same.
 * `req` holds a request only when a call returns a complete head (or an
 * error); a call that returns "incomplete" may have written to it.
 * Feeding a request in any number of pieces gives exactly the same result
 * (return value, error code, fields) as feeding it all at once.
 *
 * Strictness (what is accepted, what is a 400):
 *   - Request line: method SP request-target SP HTTP-version, single spaces.
 *     Method: 1..16 token characters, case-sensitive (a longer token is 501).
 *     Version: "HTTP/1.0" or "HTTP/1.1"; any other "HTTP/d.d" is 505;
 *     anything else is 400.
 *   - request-target: origin-form ("/path?q"); absolute-form
 *     ("http://host[:port]/path", scheme http or https, case-insensitive; no
 *     userinfo), split into authority and path; asterisk-form ("*") only for
 *     OPTIONS; authority-form ("host:port") only for CONNECT.  Bytes allowed:
 *     0x21-0x7E and 0x80-0xFF (raw UTF-8 is common in the wild); CTLs, SP and
 *     DEL are 400.  Percent-decoding and dot-segments are uri.h's job.
 *   - Line ends: CRLF, or a bare LF (RFC 9112 2.2 lets a recipient accept a
 *     bare LF; nginx and picohttpparser do, and so do netcat-driven tests).
 *     This is safe for an origin server: a bare LF can never hide inside a
 *     field value here, because every LF ends a line.  A bare CR anywhere is
 *     400 (RFC 9112 2.2: reject or replace; we reject).
 *   - Up to 4 empty lines before the request line are skipped (RFC 9112 2.2:
 *     SHOULD ignore at least one, sent by old clients after a POST body).
 *   - Fields: token ":" OWS value OWS.  Whitespace between name and colon is
 *     400 (RFC 9112 5.1 MUST).  obs-fold (a line starting with SP or HTAB)
 *     is 400 (RFC 9112 5.2 allows that instead of unfolding).  Values may
 *     hold VCHAR, obs-text, SP and HTAB only: NUL, bare CR, other CTLs and
 *     DEL are 400.
 *
 * Semantics extracted while parsing (so the server never re-scans):
 *   Host            exactly one for HTTP/1.1 (none or more: 400), at most one
 *                   for HTTP/1.0; its value must be a plausible host[:port]
 *                   (no '/', '@', whitespace; not empty): else 400.  For an
 *                   absolute-form target `host` is the target's authority
 *                   (RFC 9112 3.2.2: the Host field is then ignored).
 *   Connection      comma-separated tokens, case-insensitive; "close" and
 *                   "keep-alive" are recognised, combined over all Connection
 *                   lines; HTTP_F_KEEP_ALIVE is the resulting decision.
 *   Content-Length  1*DIGIT only (no sign, space, hex or list), at most
 *                   INT64_MAX; repeated lines with the same value are
 *                   accepted (RFC 9110 8.6), with different values 400.
 *   Transfer-Encoding  (smuggling defense, as nginx does)
 *                   with Content-Length: 400; in an HTTP/1.0 request: 400;
 *                   more than one Transfer-Encoding line: 400;
 *                   exactly "chunked" (case-insensitive): HTTP_F_CHUNKED;
 *                   final coding not chunked ("identity", "gzip",
 *                   "chunked, gzip"): 400, the body length cannot be known
 *                   (RFC 9112 6.3 MUST); chunked after another coding
 *                   ("gzip, chunked"): 501, we implement no other coding.
 *   If-None-Match, If-Modified-Since, Range, Expect
 *                   raw values.  Repeated lines make the field "dropped"
 *                   (p == NULL): ignoring a precondition or a Range is always
 *                   a correct answer (a full 200), so that is the safe
 *                   reading of a conflicting repeat.
 *   Expect          HTTP_F_EXPECT_CONTINUE for "100-continue" in HTTP/1.1
 *                   (RFC 9110 10.1.1: ignore it in HTTP/1.0).
 */
#ifndef ZC_HTTP_PARSER_H
#define ZC_HTTP_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------- requests */

/* A string inside the caller's buffer (never NUL-terminated).  p == NULL
 * means the field is absent. */
struct http_str {
	const char *p;
	size_t len;
};

struct http_header {
	struct http_str name;	/* token, case as sent */
	struct http_str value;	/* OWS trimmed on both sides; may be empty */
};

enum http_method {
	HTTP_M_OTHER = 0,	/* a valid token we have no name for: 405/501 */
	HTTP_M_GET,
	HTTP_M_HEAD,
	HTTP_M_POST,
	HTTP_M_PUT,
	HTTP_M_DELETE,
	HTTP_M_OPTIONS,
	HTTP_M_TRACE,
	HTTP_M_CONNECT,
	HTTP_M_PATCH,
};

enum http_target_form {
	HTTP_T_ORIGIN = 0,	/* "/path?query" */
	HTTP_T_ABSOLUTE,	/* "http://authority/path?query" */
	HTTP_T_ASTERISK,	/* "*" (OPTIONS only) */
	HTTP_T_AUTHORITY,	/* "host:port" (CONNECT only) */
};

/* Errors ARE the status codes to answer with, then close the connection. */
enum http_error {
	HTTP_OK = 0,
	HTTP_E_BAD_REQUEST = 400,	/* syntax, framing, Host */
	HTTP_E_URI_TOO_LONG = 414,	/* request line over max_request_line */
	HTTP_E_HEADERS_TOO_LARGE = 431, /* too many fields or too many bytes */
	HTTP_E_NOT_IMPLEMENTED = 501,	/* method over 16 bytes, unknown coding */
	HTTP_E_VERSION = 505,		/* HTTP/d.d other than 1.0 and 1.1 */
};

/* Flags in http_request.flags. */
#define HTTP_F_CONTENT_LENGTH	0x01u	/* Content-Length present */
#define HTTP_F_CHUNKED		0x02u	/* Transfer-Encoding: chunked */
#define HTTP_F_CONN_CLOSE	0x04u	/* Connection: close seen */
#define HTTP_F_CONN_KEEP_ALIVE	0x08u	/* Connection: keep-alive seen */
#define HTTP_F_KEEP_ALIVE	0x10u	/* decision: keep the connection open */
#define HTTP_F_EXPECT_CONTINUE	0x20u	/* Expect: 100-continue (HTTP/1.1) */

struct http_limits {
	size_t max_request_line; /* bytes of the request line without its
				  * line end; one more is 414 */
	size_t max_headers;	/* header fields; one more is 431.  The
				  * request's slot array must hold this many */
	size_t max_head_bytes;	/* bytes after the request line up to and
				  * including the empty line; one more is 431 */
};

/* nginx-like defaults: 8 KiB request line, 100 fields, 16 KiB of fields. */
#define HTTP_LIMITS_DEFAULT { 8192, 100, 16384 }

struct http_request {
	/* Set by the caller before the first call; never written. */
	struct http_header *headers;	/* lim->max_headers slots */

	/* Request line. */
	enum http_method method;
	struct http_str method_str;
	enum http_target_form form;
	struct http_str target;		/* request-target exactly as sent */
	struct http_str path;		/* path[?query][#frag]: origin-form: the
					 * target; absolute-form: what follows
					 * the authority, possibly empty (means
					 * "/"); else empty */
	struct http_str authority;	/* absolute- and authority-form */
	int minor;			/* HTTP/1.minor: 0 or 1 */

	size_t num_headers;

	/* Semantics (see the top of this file). */
	unsigned flags;			/* HTTP_F_* */
	uint64_t content_length;	/* valid with HTTP_F_CONTENT_LENGTH */
	struct http_str host;
	struct http_str if_none_match;
	struct http_str if_modified_since;
	struct http_str range;
	struct http_str expect;

	/* On HTTP_PARSE_ERROR: the status to answer, and a static
	 * one-line reason for the error log. */
	enum http_error error;
	const char *why;
};

/* Parser state between calls: offsets only.  Private to http_parser.c;
 * the response parser (http_response.h) uses it too. */
struct http_parser {
	size_t scanned;		/* bytes searched for line ends */
	size_t line_start;	/* start of the line being received */
	size_t rl_start;	/* start of the request (or status) line */
	size_t rl_end;		/* just past its line end; 0: not yet seen */
	size_t nfields;		/* header lines completed */
	unsigned nempty;	/* empty lines skipped before the request */
	size_t done;		/* head length once complete, else 0 */
};

#define HTTP_PARSE_ERROR	(-1)
#define HTTP_PARSE_INCOMPLETE	(-2)

void http_parser_init(struct http_parser *p);

/*
 * Parse the request head at buf[0..len).  Returns the length of the head
 * (request line, fields and the empty line: the body or the next pipelined
 * request starts at buf + that), HTTP_PARSE_INCOMPLETE when more bytes are
 * needed, or HTTP_PARSE_ERROR with req->error and req->why set.  Once a
 * head is complete, further calls return it again; call http_parser_init
 * to parse the next request (and after an error, if you must go on).
 * If len is smaller than on the previous call the parser starts over.
 */
ssize_t http_parse_request(struct http_parser *p, const char *buf, size_t len,
			   const struct http_limits *lim,
			   struct http_request *req);

/*
 * A request head that came as fields instead of text (HTTP/2's HEADERS,
 * RFC 9113 8.3): `method` and `target` are the :method and :path values
 * (:authority for CONNECT), req->headers[0..num_headers) the regular
 * fields -- with a Host field where only :authority named the host.  req is
 * filled as http_parse_request fills it for the same head sent as an
 * HTTP/1.1 request line and fields, by the same checks and semantics.
 * Returns HTTP_OK, or the status to answer (req->error and req->why set).
 */
enum http_error http_request_from_fields(struct http_request *req,
					 struct http_str method,
					 struct http_str target);

/* First field named `name` (case-insensitive), or NULL. */
const struct http_header *http_find_header(const struct http_request *req,
					   const char *name);

/* "GET", "HEAD", ... ; "OTHER" for HTTP_M_OTHER. */
const char *http_method_name(enum http_method m);

/* ------------------------------------------------------------------ Range */

/*
 * Range: a single byte range, the way nginx answers with max_ranges 1
 * (we send no multipart/byteranges):
 *
 *   "bytes=a-b"   a..min(b, size-1)             b < a: not satisfiable
 *   "bytes=a-"    a..size-1                     a >= size: not satisfiable
 *   "bytes=-n"    the last min(n, size) bytes   n == 0: not satisfiable
 *
 *   unit other than "bytes" (case-insensitive)       HTTP_RANGE_IGNORE (200;
 *                                                    RFC 9110 14.2 MUST)
 *   several ranges, more than one satisfiable        HTTP_RANGE_IGNORE (200)
 *   several ranges, exactly one satisfiable          that one (206)
 *   syntax error (as nginx: 416, RFC 9110 allows it) HTTP_RANGE_UNSATISFIABLE
 *   nothing satisfiable                              HTTP_RANGE_UNSATISFIABLE
 *   empty file, a range starting at 0                HTTP_RANGE_IGNORE (nginx)
 *
 * SP/HTAB is tolerated around numbers, '-' and ',' (as nginx).  Numbers too
 * large for 64 bits are handled as their meaning says, not as overflow: a
 * huge first-pos is unsatisfiable, a huge last-pos or suffix is clamped to
 * the file (nginx answers 416 to those; RFC 9110 14.1.1 says clamp).
 */
enum http_range_result {
	HTTP_RANGE_IGNORE = 0,		/* send the whole file: 200 */
	HTTP_RANGE_OK = 206,		/* send [*start, *start + *len) */
	HTTP_RANGE_UNSATISFIABLE = 416,	/* with Content-Range: bytes * / size */
};

enum http_range_result http_range_parse(const char *v, size_t n,
					uint64_t size, uint64_t *start,
					uint64_t *len);

/* -------------------------------------------------------------- HTTP-date */

/* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define HTTP_DATE_LEN 29

/*
 * Parse an HTTP-date (RFC 9110 5.6.7) into seconds since the epoch: the
 * preferred IMF-fixdate and, as recipients MUST, the obsolete RFC 850
 * ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37
 * 1994") forms.  Exact grammar: no surrounding whitespace, case-sensitive
 * names, day checked against the month (Feb 29 only in leap years),
 * second 60 accepted (leap second) and counted as the next second.  An RFC
 * 850 two-digit year more than 50 years in the future is taken as the
 * previous century (the only use of the clock here).  Returns 0, or -1 if
 * the text is not an HTTP-date.  No locale, no timegm, no time zone.
 */
int http_date_parse(const char *s, size_t n, int64_t *t);

/* Same, with the RFC 850 century decided against `now` (for tests). */
int http_date_parse_at(const char *s, size_t n, int64_t now, int64_t *t);

/* Format t as IMF-fixdate into out (HTTP_DATE_LEN + 1 bytes, NUL-terminated).
 * Returns HTTP_DATE_LEN, or 0 when the year is outside 0000..9999. */
size_t http_date_format(int64_t t, char *out);

#endif /* ZC_HTTP_PARSER_H */
