/*
 * http_response.c - the HTTP/1.x response-head parser (see
 * http_response.h): a status line and the meaning of a response's
 * fields, for the scanner and the framing fields it shares with the
 * request parser (http_head.h).
 */
#include <string.h>

#include "http_head.h"
#include "http_lex.h"
#include "http_response.h"

#define FAIL(code, reason) \
	do { \
		*why = (reason); \
		return (code); \
	} while (0)

/* HTTP-version SP 3DIGIT [SP reason-phrase], line end excluded: into r,
 * cleared first (http_head_syntax.start_line). */
static enum http_error status_line(void *msg, const char *s, const char *e,
				   const char **why)
{
	struct http_response *r = msg;
	struct http_header *slots = r->headers;
	const char *q;
	int v, i;

	memset(r, 0, sizeof(*r));
	r->headers = slots;
	if (e - s < 12 || s[8] != ' ' || (v = http_version(s, &r->minor)) < 0)
		FAIL(HTTP_E_BAD_REQUEST, "bad status line");
	if (v == 0)
		FAIL(HTTP_E_VERSION, "unsupported HTTP version");
	for (i = 9; i < 12; i++) {
		if (s[i] < '0' || s[i] > '9')
			FAIL(HTTP_E_BAD_REQUEST, "bad status code");
		r->status = r->status * 10 + (s[i] - '0');
	}
	if (r->status < 100 || r->status > 599 || (e > s + 12 && s[12] != ' '))
		FAIL(HTTP_E_BAD_REQUEST, "bad status code");

	/* The reason says nothing (RFC 9112 4: ignore it), but it is passed
	 * on: the same characters as a field value. */
	s = e > s + 12 ? s + 13 : e;
	q = http_skip_text(s, e, true);
	if (q < e)
		FAIL(HTTP_E_BAD_REQUEST, *q == '\r' ? "bare CR" :
			"control character in reason phrase");
	r->reason = (struct http_str){ s, (size_t)(e - s) };
	return HTTP_OK;
}

/* Transfer-Encoding, in an HTTP/1.1 response without Content-Length. */
static enum http_error transfer_coding(struct http_response *r,
				       struct http_str v, const char **why)
{
	struct http_te t;

	http_te_list(v, &t);
	if (!t.codings)
		FAIL(HTTP_E_BAD_REQUEST, "empty Transfer-Encoding");
	if (t.bad)
		FAIL(HTTP_E_BAD_REQUEST, "bad transfer coding");
	if (t.chunked > 1)
		FAIL(HTTP_E_BAD_REQUEST, "chunked applied twice");
	if (t.chunked && !t.chunked_last)
		FAIL(HTTP_E_BAD_REQUEST, "chunked before another coding");
	r->flags |= t.chunked ? HTTP_F_CHUNKED : HTTP_RF_TE_CLOSE;
	if (t.codings > t.chunked)
		r->flags |= HTTP_RF_TE_OTHER;
	return HTTP_OK;
}

/* http_head_syntax.semantics of a response. */
static enum http_error semantics(void *msg, const char **why)
{
	struct http_response *r = msg;
	struct http_framing f = { 0 };
	bool bodyless = r->status < 200 || r->status == 204;
	const char *w;
	size_t i;

	for (i = 0; i < r->num_headers; i++) {
		struct http_str n = r->headers[i].name, v = r->headers[i].value;

		if (n.len == 7 && http_lc_eq(n.p, n.len, "upgrade")) {
			r->flags |= HTTP_RF_UPGRADE;
			continue;
		}
		w = http_framing_field(&f, n, v);
		if (w)
			FAIL(HTTP_E_BAD_REQUEST, w);
	}
	w = http_framing_end(&f, r->minor);
	if (w)
		FAIL(HTTP_E_BAD_REQUEST, w);
	if (bodyless && (f.te_lines || f.content_length))
		FAIL(HTTP_E_BAD_REQUEST, "framing in a 1xx or 204 response");
	r->flags |= f.flags;
	r->content_length = f.content_length;
	return f.te_lines ? transfer_coding(r, f.te, why) : HTTP_OK;
}

static const struct http_head_syntax response_syntax = {
	.start_line = status_line,
	.semantics = semantics,
	.max_leading_empty = 0,
	.leading_empty_why = "empty line before status line",
	.start_too_long = HTTP_E_HEADERS_TOO_LARGE,
	.start_too_long_why = "status line too long",
};

ssize_t http_parse_response(struct http_parser *p, const char *buf,
			    size_t len, const struct http_limits *lim,
			    struct http_response *resp)
{
	const struct http_head h = {
		&response_syntax, resp, resp->headers, &resp->num_headers,
		&resp->error, &resp->why,
	};

	return http_head_parse(p, buf, len, lim, &h);
}

enum http_body_kind http_response_body(const struct http_response *resp,
				       enum http_method req_method)
{
	int st = resp->status;

	if (req_method == HTTP_M_HEAD || st < 200 || st == 204 || st == 304)
		return HTTP_BODY_NONE;
	if (req_method == HTTP_M_CONNECT && st < 300)
		return HTTP_BODY_NONE;
	if (resp->flags & HTTP_F_CHUNKED)
		return HTTP_BODY_CHUNKED;
	if (resp->flags & HTTP_F_CONTENT_LENGTH)
		return HTTP_BODY_LENGTH;
	return HTTP_BODY_CLOSE;
}

bool http_connection_lists(const struct http_header *hs, size_t n,
			   const char *name, size_t len)
{
	struct http_str el;
	size_t i, pos;

	if (len == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (!http_case_eq(hs[i].name.p, hs[i].name.len, "connection", 10))
			continue;
		for (pos = 0; http_list_next(hs[i].value, &pos, &el);)
			if (http_case_eq(el.p, el.len, name, len))
				return true;
	}
	return false;
}

bool http_hop_by_hop(const char *name, size_t len)
{
	switch (len) {
	case 2:
		return http_lc_eq(name, len, "te");
	case 7:
		return http_lc_eq(name, len, "upgrade") ||
		       http_lc_eq(name, len, "trailer");
	case 10:
		return http_lc_eq(name, len, "connection") ||
		       http_lc_eq(name, len, "keep-alive");
	case 16:
		return http_lc_eq(name, len, "proxy-connection");
	case 17:
		return http_lc_eq(name, len, "transfer-encoding");
	case 18:
		return http_lc_eq(name, len, "proxy-authenticate");
	case 19:
		return http_lc_eq(name, len, "proxy-authorization");
	}
	return false;
}
