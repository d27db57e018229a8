/*
 * http_parser.c - the HTTP/1.x request-head parser (see http_parser.h),
 * and the head scanner and framing fields it shares with the response
 * parser (http_head.h, http_response.c).
 *
 * One pass over the lines, each looked at once, as it completes:
 *
 *   The scanner (http_head_parse) finds line ends in the bytes that are
 *   new since the last call, enforces the limits the moment a line
 *   completes, and then parses that line: the start line (request line
 *   or status line) into the message, a field into its slot.  When the
 *   empty line arrives, the semantics (Host, framing, Connection, ...)
 *   are worked out over the slots.  Between calls it keeps offsets only.
 *
 *   A head that arrives in several pieces has lines that completed in
 *   earlier calls, whose slots may point into a buffer that has moved
 *   since.  Those calls still check each line as it completes, and
 *   finish() parses the whole head again from the start once it is
 *   complete: the price of resuming, paid only by heads that were split
 *   after their request line.
 *
 * Checking each line as it completes answers garbage as soon as its line
 * ends instead of after a timeout, and makes errors come out in one order
 * no matter how the bytes were split: line by line, each line's limits
 * before its syntax, all syntax before any semantics -- exactly what a
 * byte-by-byte caller sees.  In the common case (the whole head in one
 * read) each byte is searched once for its line end and looked at once by
 * the line's parser.
 */
#define _GNU_SOURCE
#include <string.h>

#include "http_head.h"
#include "http_lex.h"
#include "http_parser.h"

/* Empty lines skipped before the request line; more is 400. */
#define MAX_LEADING_EMPTY 4
/* Longest method token; longer is 501. */
#define MAX_METHOD 16

/* ------------------------------------------------------ character classes */

const unsigned char http_tchar[256] = {
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
	['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
	['`'] = 1, ['|'] = 1, ['~'] = 1,
};

/* uri-host [":" port]: reg-name / IP-literal / IPv4 characters.  Anything
 * that could change the meaning of a host name downstream ('/', '@', '\',
 * whitespace, quotes) is out. */
static const unsigned char hostchar[256] = {
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['!'] = 1, ['$'] = 1,
	['&'] = 1, ['\''] = 1, ['('] = 1, [')'] = 1, ['*'] = 1, ['+'] = 1,
	[','] = 1, [';'] = 1, ['='] = 1, [':'] = 1, ['['] = 1, [']'] = 1,
	['%'] = 1,
};

/* -------------------------------------------------------------- methods */

static const char *const method_names[] = {
	[HTTP_M_OTHER] = "OTHER", [HTTP_M_GET] = "GET",
	[HTTP_M_HEAD] = "HEAD", [HTTP_M_POST] = "POST", [HTTP_M_PUT] = "PUT",
	[HTTP_M_DELETE] = "DELETE", [HTTP_M_OPTIONS] = "OPTIONS",
	[HTTP_M_TRACE] = "TRACE", [HTTP_M_CONNECT] = "CONNECT",
	[HTTP_M_PATCH] = "PATCH",
};

const char *http_method_name(enum http_method m)
{
	if ((unsigned)m >= sizeof(method_names) / sizeof(method_names[0]))
		return "OTHER";
	return method_names[m];
}

/* Methods are case-sensitive (RFC 9110 9.1): "get" is HTTP_M_OTHER.
 * Only the names of method_names[] of length n are compared. */
static enum http_method method_lookup(const char *s, size_t n)
{
	static const enum http_method by_len[][3] = {
		[3] = { HTTP_M_GET, HTTP_M_PUT },
		[4] = { HTTP_M_HEAD, HTTP_M_POST },
		[5] = { HTTP_M_TRACE, HTTP_M_PATCH },
		[6] = { HTTP_M_DELETE },
		[7] = { HTTP_M_OPTIONS, HTTP_M_CONNECT },
	};

	if (n >= sizeof(by_len) / sizeof(by_len[0]))
		return HTTP_M_OTHER;
	for (const enum http_method *m = by_len[n]; *m != HTTP_M_OTHER; m++)
		if (memcmp(s, method_names[*m], n) == 0)
			return *m;
	return HTTP_M_OTHER;
}

/* ---------------------------------------------------------- request line */

#define FAIL(code, reason) \
	do { \
		*why = (reason); \
		return (code); \
	} while (0)

static int valid_host(const char *s, size_t n)
{
	return n && http_skip_in(hostchar, s, s + n) == s + n;
}

static enum http_error parse_target(const char *s, size_t n,
				    struct http_request *r, const char **why)
{
	size_t i, a;

	if (http_skip_text(s, s + n, false) != s + n)
		FAIL(HTTP_E_BAD_REQUEST, "bad character in request-target");
	r->target = (struct http_str){ s, n };
	r->path = (struct http_str){ NULL, 0 };
	r->authority = (struct http_str){ NULL, 0 };

	if (s[0] == '/') {
		if (r->method == HTTP_M_CONNECT)
			FAIL(HTTP_E_BAD_REQUEST, "CONNECT needs authority-form");
		r->form = HTTP_T_ORIGIN;
		r->path = r->target;
		return HTTP_OK;
	}
	if (n == 1 && s[0] == '*') {
		if (r->method != HTTP_M_OPTIONS)
			FAIL(HTTP_E_BAD_REQUEST, "'*' target without OPTIONS");
		r->form = HTTP_T_ASTERISK;
		return HTTP_OK;
	}
	if (r->method == HTTP_M_CONNECT) {
		/* authority-form = uri-host ":" port */
		const char *colon = memrchr(s, ':', n);
		size_t k;

		if (!colon || colon == s || colon == s + n - 1 ||
		    !valid_host(s, n))
			FAIL(HTTP_E_BAD_REQUEST, "bad CONNECT target");
		for (k = colon - s + 1; k < n; k++)
			if (s[k] < '0' || s[k] > '9')
				FAIL(HTTP_E_BAD_REQUEST, "bad CONNECT target");
		r->form = HTTP_T_AUTHORITY;
		r->authority = r->target;
		return HTTP_OK;
	}
	/* absolute-form: http[s]://authority[/path][?query] */
	if (n > 7 && http_lc_eq(s, 7, "http://"))
		a = 7;
	else if (n > 8 && http_lc_eq(s, 8, "https://"))
		a = 8;
	else
		FAIL(HTTP_E_BAD_REQUEST, "bad request-target");
	for (i = a; i < n && s[i] != '/' && s[i] != '?' && s[i] != '#'; i++)
		;
	if (memchr(s + a, '@', i - a))
		FAIL(HTTP_E_BAD_REQUEST, "userinfo in request-target");
	if (!valid_host(s + a, i - a))
		FAIL(HTTP_E_BAD_REQUEST, "bad authority in request-target");
	r->form = HTTP_T_ABSOLUTE;
	r->authority = (struct http_str){ s + a, i - a };
	r->path = (struct http_str){ s + i, n - i };
	return HTTP_OK;
}

/* method SP request-target SP HTTP-version, line end excluded: into r,
 * cleared first (http_head_syntax.start_line). */
static enum http_error request_line(void *msg, const char *s, const char *e,
				    const char **why)
{
	struct http_request *r = msg;
	struct http_header *slots = r->headers;
	const char *q = http_skip_in(http_tchar, s, e), *sp;
	enum http_error err;
	int v;

	memset(r, 0, sizeof(*r));
	r->headers = slots;
	if (q == s || q == e || *q != ' ')
		FAIL(HTTP_E_BAD_REQUEST, "bad method");
	if (q - s > MAX_METHOD)
		FAIL(HTTP_E_NOT_IMPLEMENTED, "method too long");
	r->method_str = (struct http_str){ s, (size_t)(q - s) };
	r->method = method_lookup(s, q - s);

	s = q + 1;
	sp = memchr(s, ' ', e - s);
	if (!sp || sp == s)
		FAIL(HTTP_E_BAD_REQUEST, "bad request line");
	err = parse_target(s, sp - s, r, why);
	if (err)
		return err;

	/* HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive */
	s = sp + 1;
	if (e - s != 8 || (v = http_version(s, &r->minor)) < 0)
		FAIL(HTTP_E_BAD_REQUEST, "bad HTTP version");
	if (v == 0)
		FAIL(HTTP_E_VERSION, "unsupported HTTP version");
	return HTTP_OK;
}

/* ---------------------------------------------------------------- fields */

const char *http_field_split(const char *s, const char *e,
			     struct http_str *name, struct http_str *value)
{
	const char *q, *v, *ve;

	if (s < e && http_is_ows(*s))
		return "obs-fold (line folding)";
	q = http_skip_in(http_tchar, s, e);
	if (q == e)
		return "field without colon";
	if (http_is_ows(*q))
		return "whitespace before colon";
	if (*q != ':' || q == s)
		return "bad field name";
	*name = (struct http_str){ s, (size_t)(q - s) };

	for (v = q + 1; v < e && http_is_ows(*v); v++)
		;
	q = http_skip_text(v, e, true);
	if (q < e)
		return *q == '\r' ? "bare CR" : "control character in field value";
	for (ve = e; ve > v && http_is_ows(ve[-1]); ve--)
		;
	*value = (struct http_str){ v, (size_t)(ve - v) };
	return NULL;
}

/* field-name ":" OWS field-value OWS, line end excluded. */
static enum http_error parse_field(const char *s, const char *e,
				   struct http_header *h, const char **why)
{
	const char *w = http_field_split(s, e, &h->name, &h->value);

	if (w)
		FAIL(HTTP_E_BAD_REQUEST, w);
	return HTTP_OK;
}

/* Content-Length = 1*DIGIT, at most INT64_MAX (an off_t). */
int http_parse_decimal(struct http_str v, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (v.len == 0)
		return -1;
	for (i = 0; i < v.len; i++) {
		unsigned d = (unsigned char)v.p[i] - '0';

		if (d > 9 || x > ((uint64_t)INT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/* ------------------------------------------------------ framing fields */

const char *http_framing_end(struct http_framing *f, int minor)
{
	if (f->te_lines) {
		if (minor == 0)
			return "Transfer-Encoding in HTTP/1.0";
		if (f->flags & HTTP_F_CONTENT_LENGTH)
			return "Content-Length with Transfer-Encoding";
	}
	/* HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive";
	 * "close" wins when both are sent. */
	if (!(f->flags & HTTP_F_CONN_CLOSE) &&
	    (minor == 1 || (f->flags & HTTP_F_CONN_KEEP_ALIVE)))
		f->flags |= HTTP_F_KEEP_ALIVE;
	return NULL;
}

void http_te_list(struct http_str v, struct http_te *t)
{
	struct http_str el;
	size_t pos = 0;

	memset(t, 0, sizeof(*t));
	while (http_list_next(v, &pos, &el)) {
		if (el.len == 0)
			continue;
		t->codings++;
		t->chunked_last = http_lc_eq(el.p, el.len, "chunked");
		t->chunked += t->chunked_last;
		if (http_skip_in(http_tchar, el.p, el.p + el.len) != el.p + el.len)
			t->bad = true;
	}
}

/* Transfer-Encoding: the final coding must be chunked (else the body length
 * is unknowable: 400); any coding before it is one we do not decode (501). */
static enum http_error transfer_coding(struct http_str v, const char **why)
{
	struct http_te t;

	http_te_list(v, &t);
	if (!t.chunked_last)
		FAIL(HTTP_E_BAD_REQUEST, "Transfer-Encoding does not end in chunked");
	if (t.chunked > 1)
		FAIL(HTTP_E_BAD_REQUEST, "chunked applied twice");
	if (t.codings > 1)
		FAIL(HTTP_E_NOT_IMPLEMENTED, "unsupported transfer coding");
	return HTTP_OK;
}

/* A field that must appear at most once to mean anything: a repeat drops
 * it.  `seen` remembers the repeat so a third copy cannot revive it. */
static void single(struct http_str *f, int *seen, struct http_str v)
{
	if (!*seen)
		*f = v;
	else
		*f = (struct http_str){ NULL, 0 };
	*seen = 1;
}

/* http_head_syntax.semantics of a request (and of HTTP/2's fields). */
static enum http_error semantics(void *msg, const char **why)
{
	struct http_request *r = msg;
	int hosts = 0, inm = 0, ims = 0, range = 0, expect = 0;
	struct http_framing f = { 0 };
	enum http_error err;
	const char *w;
	size_t i;

	for (i = 0; i < r->num_headers; i++) {
		struct http_str n = r->headers[i].name, v = r->headers[i].value;

		switch (n.len) {
		case 4:
			if (!http_lc_eq(n.p, n.len, "host"))
				break;
			if (++hosts > 1)
				FAIL(HTTP_E_BAD_REQUEST, "more than one Host");
			if (!valid_host(v.p, v.len))
				FAIL(HTTP_E_BAD_REQUEST, "bad Host");
			if (r->form != HTTP_T_ABSOLUTE)
				r->host = v;
			break;
		case 5:
			if (http_lc_eq(n.p, n.len, "range"))
				single(&r->range, &range, v);
			break;
		case 6:
			if (http_lc_eq(n.p, n.len, "expect"))
				single(&r->expect, &expect, v);
			break;
		case 13:
			if (http_lc_eq(n.p, n.len, "if-none-match"))
				single(&r->if_none_match, &inm, v);
			break;
		case 17:
			if (http_lc_eq(n.p, n.len, "if-modified-since")) {
				single(&r->if_modified_since, &ims, v);
				break;
			}
			/* or Transfer-Encoding, a framing field */
			/* fall through */
		case 10:	/* Connection */
		case 14:	/* Content-Length */
			w = http_framing_field(&f, n, v);
			if (w)
				FAIL(HTTP_E_BAD_REQUEST, w);
			break;
		}
	}

	if (r->minor == 1 && hosts == 0)
		FAIL(HTTP_E_BAD_REQUEST, "HTTP/1.1 request without Host");
	if (r->form == HTTP_T_ABSOLUTE)
		r->host = r->authority;
	w = http_framing_end(&f, r->minor);
	if (w)
		FAIL(HTTP_E_BAD_REQUEST, w);
	if (f.te_lines) {
		err = transfer_coding(f.te, why);
		if (err)
			return err;
		f.flags |= HTTP_F_CHUNKED;
	}
	r->flags |= f.flags;
	r->content_length = f.content_length;
	if (r->minor == 1 && r->expect.p &&
	    http_lc_eq(r->expect.p, r->expect.len, "100-continue"))
		r->flags |= HTTP_F_EXPECT_CONTINUE;
	return HTTP_OK;
}

/* ------------------------------------------------------------ the scanner */

void http_parser_init(struct http_parser *p)
{
	memset(p, 0, sizeof(*p));
}

static ssize_t fail(const struct http_head *h, enum http_error err,
		    const char *why)
{
	*h->error = err;
	*h->why = why;
	return HTTP_PARSE_ERROR;
}

/* The whole head is buf[p->rl_start .. end): parse it into the message. */
static ssize_t finish(struct http_parser *p, const char *buf, size_t end,
		      const struct http_head *h)
{
	enum http_error err;
	const char *why = NULL;
	size_t s, lf;

	lf = p->rl_end - 1;
	err = h->syn->start_line(h->msg, buf + p->rl_start,
				 buf + http_content_end(buf, p->rl_start, lf),
				 &why);
	if (err)
		return fail(h, err, why);
	for (s = p->rl_end; s < end; s = lf + 1) {
		size_t e;

		lf = (const char *)memchr(buf + s, '\n', end - s) - buf;
		e = http_content_end(buf, s, lf);
		if (e == s)
			break;	/* the empty line */
		err = parse_field(buf + s, buf + e, &h->slots[*h->num_headers],
				  &why);
		if (err)
			return fail(h, err, why);
		++*h->num_headers;
	}
	err = h->syn->semantics(h->msg, &why);
	if (err)
		return fail(h, err, why);
	return (ssize_t)end;
}

ssize_t http_head_parse(struct http_parser *p, const char *buf, size_t len,
			const struct http_limits *lim,
			const struct http_head *h)
{
	const struct http_head_syntax *syn = h->syn;
	struct http_header tmp;
	enum http_error err;
	const char *why;
	bool direct;
	size_t i, n, s, e;

	if (len < p->scanned)
		http_parser_init(p);
	if (p->done)
		return finish(p, buf, p->done, h);

	/* Does this call see the start line complete?  Then every line of
	 * the head completes in calls that parse into the message from the
	 * start, and a head that completes in this call needs no second
	 * pass. */
	direct = !p->rl_end;
	while (http_next_line(buf, len, &p->scanned, &p->line_start, &s, &e)) {
		i = p->line_start;	/* just past the line's LF */
		if (!p->rl_end) {
			if (e == s) {	/* empty line before the start line */
				if (++p->nempty > syn->max_leading_empty)
					return fail(h, HTTP_E_BAD_REQUEST,
						    syn->leading_empty_why);
				p->rl_start = i;
				continue;
			}
			if (e - s > lim->max_request_line)
				return fail(h, syn->start_too_long,
					    syn->start_too_long_why);
			p->rl_end = i;
			err = syn->start_line(h->msg, buf + s, buf + e, &why);
			if (err)
				return fail(h, err, why);
			continue;
		}
		if (i - p->rl_end > lim->max_head_bytes)
			return fail(h, HTTP_E_HEADERS_TOO_LARGE,
				    "header section too large");
		if (e == s) {
			p->done = i;
			if (!direct)
				return finish(p, buf, i, h);
			err = syn->semantics(h->msg, &why);
			if (err)
				return fail(h, err, why);
			return (ssize_t)i;
		}
		if (++p->nfields > lim->max_headers)
			return fail(h, HTTP_E_HEADERS_TOO_LARGE,
				    "too many header fields");
		/* Lines completed in earlier calls are not in the message
		 * (the buffer may have moved since): then only check this
		 * one, and finish() parses the head from the start. */
		err = parse_field(buf + s, buf + e,
				  direct ? &h->slots[p->nfields - 1] : &tmp,
				  &why);
		if (err)
			return fail(h, err, why);
		if (direct)
			*h->num_headers = p->nfields;
	}

	/* Incomplete: does the line still open already break a limit (it
	 * will only grow)? */
	if (!p->rl_end) {
		n = len - p->line_start;
		if (n && buf[len - 1] == '\r')
			n--;	/* may be the CR of a CRLF */
		if (n > lim->max_request_line)
			return fail(h, syn->start_too_long,
				    syn->start_too_long_why);
	} else if (len - p->rl_end >= lim->max_head_bytes) {
		/* at least one more byte (an LF) must come */
		return fail(h, HTTP_E_HEADERS_TOO_LARGE,
			    "header section too large");
	}
	return HTTP_PARSE_INCOMPLETE;
}

/* ------------------------------------------------------------- requests */

static const struct http_head_syntax request_syntax = {
	.start_line = request_line,
	.semantics = semantics,
	.max_leading_empty = MAX_LEADING_EMPTY,
	.leading_empty_why = "empty lines before request",
	.start_too_long = HTTP_E_URI_TOO_LONG,
	.start_too_long_why = "request line too long",
};

ssize_t http_parse_request(struct http_parser *p, const char *buf, size_t len,
			   const struct http_limits *lim,
			   struct http_request *req)
{
	const struct http_head h = {
		&request_syntax, req, req->headers, &req->num_headers,
		&req->error, &req->why,
	};

	return http_head_parse(p, buf, len, lim, &h);
}

/* HTTP/2's request line: pseudo-header fields (http_request_from_fields). */
static enum http_error from_fields(struct http_request *r,
				   struct http_str method,
				   struct http_str target, const char **why)
{
	enum http_error err;

	for (size_t i = 0; i < method.len; i++)
		if (!http_tchar[(unsigned char)method.p[i]])
			FAIL(HTTP_E_BAD_REQUEST, "bad method");
	if (!method.len || !target.len)
		FAIL(HTTP_E_BAD_REQUEST, "bad request line");
	if (method.len > MAX_METHOD)
		FAIL(HTTP_E_NOT_IMPLEMENTED, "method too long");
	r->method_str = method;
	r->method = method_lookup(method.p, method.len);
	r->minor = 1;
	err = parse_target(target.p, target.len, r, why);
	return err ? err : semantics(r, why);
}

enum http_error http_request_from_fields(struct http_request *r,
					 struct http_str method,
					 struct http_str target)
{
	r->error = from_fields(r, method, target, &r->why);
	return r->error;
}

const struct http_header *http_find_header(const struct http_request *req,
					   const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];

		if (http_case_eq(h->name.p, h->name.len, name, n))
			return h;
	}
	return NULL;
}
