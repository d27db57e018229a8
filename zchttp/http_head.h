/*
 * http_head.h - what the two HTTP/1.x head parsers of `zchttp` share:
 * requests (http_parser.c) and upstream responses (http_response.c).
 * Internal to the library, not an interface of it.
 *
 * A head is a start line, field lines and an empty line, whatever its
 * direction; only the start line and the meaning of some fields differ.
 * So one scanner (http_head_parse) finds the lines, enforces the limits,
 * splits the fields and keeps the incremental contract of http_parser.h,
 * and calls the direction's own start-line and semantics functions; and
 * the fields that frame a body and a connection (Content-Length,
 * Transfer-Encoding, Connection) are read by one set of functions, so a
 * request and a response can never disagree on what a field says.
 */
#ifndef ZC_HTTP_HEAD_H
#define ZC_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "http_lex.h"
#include "http_parser.h"

/* What makes a head a request head or a response head, for the scanner. */
struct http_head_syntax {
	/* Clear the message (all but its slots) and parse the start line
	 * s..e (line end excluded) into it. */
	enum http_error (*start_line)(void *msg, const char *s, const char *e,
				      const char **why);
	/* The meaning of the fields, once the empty line is in. */
	enum http_error (*semantics)(void *msg, const char **why);
	unsigned max_leading_empty;	/* empty lines skipped before the
					 * start line; one more is 400 */
	const char *leading_empty_why;
	enum http_error start_too_long;	/* over lim->max_request_line */
	const char *start_too_long_why;
};

/* A message as the scanner sees it: where its fields and its error go. */
struct http_head {
	const struct http_head_syntax *syn;
	void *msg;
	struct http_header *slots;
	size_t *num_headers;
	enum http_error *error;
	const char **why;
};

/* http_parse_request's contract (http_parser.h) for any head. */
ssize_t http_head_parse(struct http_parser *p, const char *buf, size_t len,
			const struct http_limits *lim,
			const struct http_head *h);

/* "HTTP/" DIGIT "." DIGIT at s[0..8): 1 for HTTP/1.0 and HTTP/1.1
 * (*minor set), 0 for another version (505), -1 for no version. */
static inline int http_version(const char *s, int *minor)
{
	if (memcmp(s, "HTTP/", 5) != 0 || s[6] != '.' || s[5] < '0' ||
	    s[5] > '9' || s[7] < '0' || s[7] > '9')
		return -1;
	if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
		return 0;
	*minor = s[7] - '0';
	return 1;
}

/* Content-Length, Transfer-Encoding and Connection as they are read. */
struct http_framing {
	unsigned flags;		/* HTTP_F_CONTENT_LENGTH, HTTP_F_CONN_CLOSE,
				 * HTTP_F_CONN_KEEP_ALIVE, then
				 * HTTP_F_KEEP_ALIVE (http_framing_end) */
	uint64_t content_length;
	struct http_str cl;	/* the first Content-Length, as sent */
	struct http_str te;	/* the Transfer-Encoding value */
	unsigned te_lines;
};

/* Connection's options that decide persistence, into HTTP_F_CONN_*. */
static inline void http_connection_tokens(struct http_str v, unsigned *flags)
{
	struct http_str el;
	size_t pos = 0;

	while (http_list_next(v, &pos, &el)) {
		if (http_lc_eq(el.p, el.len, "close"))
			*flags |= HTTP_F_CONN_CLOSE;
		else if (http_lc_eq(el.p, el.len, "keep-alive"))
			*flags |= HTTP_F_CONN_KEEP_ALIVE;
	}
}

/*
 * Take the field n: v if it is one of the framing fields: NULL, or why it
 * is an error.  Content-Length is 1*DIGIT up to INT64_MAX, repeated only
 * with the same text; Transfer-Encoding comes at most once (a second
 * line is a smuggling device: some parsers read only one of them).
 * Inline: it is on every request's path, for a few field names.
 */
static inline const char *http_framing_field(struct http_framing *f,
					     struct http_str n,
					     struct http_str v)
{
	switch (n.len) {
	case 10:
		if (http_lc_eq(n.p, n.len, "connection"))
			http_connection_tokens(v, &f->flags);
		break;
	case 14:
		if (!http_lc_eq(n.p, n.len, "content-length"))
			break;
		if (http_parse_decimal(v, &f->content_length) < 0)
			return "bad Content-Length";
		if (f->cl.p && (f->cl.len != v.len ||
				memcmp(f->cl.p, v.p, v.len) != 0))
			return "conflicting Content-Length";
		f->cl = v;
		f->flags |= HTTP_F_CONTENT_LENGTH;
		break;
	case 17:
		if (!http_lc_eq(n.p, n.len, "transfer-encoding"))
			break;
		if (++f->te_lines > 1)
			return "more than one Transfer-Encoding";
		f->te = v;
		break;
	}
	return NULL;
}

/* After the last field: NULL, or why the framing is ambiguous (a
 * Transfer-Encoding in HTTP/1.0, or with a Content-Length); and
 * HTTP_F_KEEP_ALIVE decided by version and Connection. */
const char *http_framing_end(struct http_framing *f, int minor);

/* The codings of a Transfer-Encoding value, empty list elements skipped. */
struct http_te {
	size_t codings;		/* elements */
	size_t chunked;		/* of them "chunked" (case-insensitive) */
	bool chunked_last;	/* the last one is */
	bool bad;		/* one is not a bare token (parameters) */
};

void http_te_list(struct http_str v, struct http_te *t);

#endif /* ZC_HTTP_HEAD_H */
