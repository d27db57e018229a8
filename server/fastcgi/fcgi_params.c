/*
 * fcgi_params.c - the CGI/1.1 parameters of a request (RFC 3875 section 4.1,
 * and what nginx's fastcgi_params adds), as FastCGI name-value pairs.
 *
 * The pairs are encoded into a scratch block first (on the stack unless a
 * request's headers outgrow it), then framed
 * into PARAMS records (65535 bytes of content at most each) behind the
 * BEGIN_REQUEST record by fcgi_batch.h, all copied into one pool buffer:
 * one buffer, one slice, one descriptor on the zero-copy transport.
 *
 * Request headers become HTTP_* parameters (upper case, '-' as '_').  A
 * header whose name holds '_' is not passed (HTTP_X_A could then come from
 * "X-A" or "X_A": nginx drops those too), nor is Proxy (httpoxy: apps
 * read HTTP_PROXY as their outgoing proxy), Content-Type and
 * Content-Length go as CONTENT_TYPE and CONTENT_LENGTH, and Host as the
 * request's effective host.  Repeated headers
 * are joined with ", " (Cookie with "; ", RFC 9113 8.2.3), as one
 * parameter: an environment has one value per name.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fcgi_batch.h"
#include "fcgi_params.h"
#include "fcgi_proto.h"
#include "http_lex.h"
#include "request.h"

#define NAME_MAX_LEN 256	/* "HTTP_" + a header name */

/* The encoded pairs: on the stack until they outgrow it (a request with
 * kilobytes of headers), so a usual request allocates nothing here. */
struct block {
	uint8_t *p;
	size_t len, cap;
	int err;
	uint8_t stack[4096];
};

static void block_init(struct block *b)
{
	b->p = b->stack;
	b->len = 0;
	b->cap = sizeof(b->stack);
	b->err = 0;
}

static void block_free(struct block *b)
{
	if (b->p != b->stack)
		free(b->p);
}

static bool grow(struct block *b, size_t need)
{
	size_t cap = b->cap * 2;
	uint8_t *p;

	if (need > SIZE_MAX / 4 - b->len) {	/* a pair FastCGI cannot carry */
		b->err = -E2BIG;
		return false;
	}
	while (cap - b->len < need)
		cap *= 2;
	p = b->p == b->stack ? malloc(cap) : realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	if (b->p == b->stack)
		memcpy(p, b->stack, b->len);
	b->p = p;
	b->cap = cap;
	return true;
}

static void put(struct block *b, const char *name, size_t nlen,
		const char *value, size_t vlen)
{
	uint8_t *w;

	if (b->err)
		return;
	/* Both lengths in one byte: the common pair, written here. */
	if (nlen < 128 && vlen < 128) {
		if (b->cap - b->len < 2 + nlen + vlen &&
		    !grow(b, 2 + nlen + vlen))
			return;
		w = b->p + b->len;
		w[0] = (uint8_t)nlen;
		w[1] = (uint8_t)vlen;
		memcpy(w + 2, name, nlen);
		if (vlen)	/* an empty value may come as NULL */
			memcpy(w + 2 + nlen, value, vlen);
		b->len += 2 + nlen + vlen;
		return;
	}
	if (b->cap - b->len < fcgi_nv_len(nlen, vlen) &&
	    !grow(b, fcgi_nv_len(nlen, vlen)))
		return;
	b->err = fcgi_nv_encode(b->p, b->cap, &b->len, name, nlen, value,
				vlen);
}

/* A parameter whose name is a string literal (its length known). */
#define PUT(b, lit, v, vlen) put(b, lit, sizeof(lit) - 1, v, vlen)
#define PUTZ(b, lit, v) PUT(b, lit, v, strlen(v))

static void put_num(struct block *b, const char *name, size_t nlen,
		    unsigned long long v)
{
	char num[HTTP_DEC_MAX], *d = http_dec(num, v);

	put(b, name, nlen, d, (size_t)(num + sizeof(num) - d));
}

#define PUT_NUM(b, lit, v) put_num(b, lit, sizeof(lit) - 1, v)

/* a.b.c.d of a network-order IPv4 address into out (16 bytes). */
static void ipv4_text(const struct in_addr *a, char out[INET_ADDRSTRLEN])
{
	const uint8_t *o = (const uint8_t *)&a->s_addr;
	char *p = out;

	for (int i = 0; i < 4; i++) {
		char num[HTTP_DEC_MAX], *d = http_dec(num, o[i]);
		size_t n = (size_t)(num + sizeof(num) - d);

		memcpy(p, d, n);
		p += n;
		*p++ = i < 3 ? '.' : 0;
	}
}

static void put_addr(struct block *b, const char *addr_name, size_t alen,
		     const char *port_name, size_t plen,
		     const struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN] = "";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		ipv4_text(&in->sin_addr, host);
		port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	put(b, addr_name, alen, host, strlen(host));
	put_num(b, port_name, plen, port);
}

/* SERVER_ADDR, SERVER_PORT or REMOTE_ADDR, REMOTE_PORT. */
#define PUT_ADDR(b, what, ss) \
	put_addr(b, what "_ADDR", sizeof(what "_ADDR") - 1, \
		 what "_PORT", sizeof(what "_PORT") - 1, ss)

/* SERVER_ADDR .. REMOTE_PORT: encoded on a connection's first request,
 * copied from its memo on the next ones. */
static void put_addrs(struct block *b, const struct fcgi_params_in *in)
{
	struct zh_addr_memo *m = in->addr_memo;
	size_t start = b->len;

	if (m && m->len) {
		if (b->err || (b->cap - b->len < m->len && !grow(b, m->len)))
			return;
		memcpy(b->p + b->len, m->bytes, m->len);
		b->len += m->len;
		return;
	}
	PUT_ADDR(b, "SERVER", in->server);
	PUT_ADDR(b, "REMOTE", in->peer);
	if (m && !b->err && b->len - start <= sizeof(m->bytes)) {
		memcpy(m->bytes, b->p + start, b->len - start);
		m->len = (uint8_t)(b->len - start);
	}
}

/* "HTTP_" + upper-cased name with '-' as '_'; false if not passed on. */
static bool cgi_name(const struct http_str *n, char *out, size_t *len)
{
	if (n->len + 5 > NAME_MAX_LEN)
		return false;
	if ((n->len == 12 && !strncasecmp(n->p, "Content-Type", 12)) ||
	    (n->len == 14 && !strncasecmp(n->p, "Content-Length", 14)) ||
	    (n->len == 5 && !strncasecmp(n->p, "Proxy", 5)) ||
	    (n->len == 4 && !strncasecmp(n->p, "Host", 4)))
		return false;
	memcpy(out, "HTTP_", 5);
	for (size_t i = 0; i < n->len; i++) {
		char c = n->p[i];

		if (c == '_')
			return false;
		out[5 + i] = c == '-' ? '_' :
			     (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
	}
	*len = n->len + 5;
	return true;
}

static bool same_name(const struct http_str *a, const struct http_str *b)
{
	return a->len == b->len && !strncasecmp(a->p, b->p, a->len);
}

/* Every request header as HTTP_*, repeats joined (see the top). */
static void put_headers(struct block *b, const struct http_request *req)
{
	char name[NAME_MAX_LEN];
	char *joined = NULL;
	size_t jcap = 0;

	for (size_t i = 0; i < req->num_headers && !b->err; i++) {
		const struct http_header *h = &req->headers[i];
		size_t nlen, vlen = h->value.len, k;
		bool first = true, cookie;

		for (k = 0; k < i; k++)
			if (same_name(&req->headers[k].name, &h->name))
				first = false;
		if (!first || !cgi_name(&h->name, name, &nlen))
			continue;
		for (k = i + 1; k < req->num_headers; k++)
			if (same_name(&req->headers[k].name, &h->name))
				break;
		if (k == req->num_headers) {
			put(b, name, nlen, h->value.p, h->value.len);
			continue;
		}
		/* Repeated: join every occurrence. */
		cookie = nlen == 11 && !memcmp(name, "HTTP_COOKIE", 11);
		for (k = i; k < req->num_headers; k++)
			if (same_name(&req->headers[k].name, &h->name))
				vlen += req->headers[k].value.len + 2;
		if (vlen > jcap) {
			char *p = realloc(joined, vlen);

			if (!p) {
				b->err = -ENOMEM;
				break;
			}
			joined = p;
			jcap = vlen;
		}
		vlen = 0;
		for (k = i; k < req->num_headers; k++) {
			const struct http_str *v = &req->headers[k].value;

			if (!same_name(&req->headers[k].name, &h->name))
				continue;
			if (vlen) {
				memcpy(joined + vlen, cookie ? "; " : ", ", 2);
				vlen += 2;
			}
			memcpy(joined + vlen, v->p, v->len);
			vlen += v->len;
		}
		put(b, name, nlen, joined, vlen);
	}
	free(joined);
}

/* SERVER_NAME: the Host the client used, without its port. */
static void put_server_name(struct block *b, const struct http_request *req)
{
	const char *h = req->host.p;
	size_t n = req->host.len;

	if (!h || !n) {
		PUT(b, "SERVER_NAME", "", 0);
		return;
	}
	if (h[0] == '[') {		/* "[::1]:8080" */
		const char *e = memchr(h, ']', n);

		n = e ? (size_t)(e - h) + 1 : n;
	} else {
		const char *c = memchr(h, ':', n);

		n = c ? (size_t)(c - h) : n;
	}
	PUT(b, "SERVER_NAME", h, n);
}

/* The pairs of one request into b. */
static void encode(struct block *b, const struct fcgi_params_in *in)
{
	const struct http_request *req = in->req;
	const char *q = in->query;

	PUTZ(b, "GATEWAY_INTERFACE", "CGI/1.1");
	PUTZ(b, "SERVER_SOFTWARE", "zchttpd/" ZC_VERSION);
	PUTZ(b, "SERVER_PROTOCOL", in->protocol ? in->protocol :
				   req->minor ? "HTTP/1.1" : "HTTP/1.0");
	PUT(b, "REQUEST_METHOD", req->method_str.p, req->method_str.len);
	PUT(b, "REQUEST_URI", req->target.p, req->target.len);
	PUT(b, "QUERY_STRING", q ? q : "", q ? in->query_len : 0);
	PUT(b, "SCRIPT_NAME", in->script_name, in->script_name_len);
	PUT(b, "PATH_INFO", in->path_info, in->path_info_len);
	PUTZ(b, "SCRIPT_FILENAME", in->script_filename);
	PUTZ(b, "DOCUMENT_ROOT", in->document_root);
	PUTZ(b, "DOCUMENT_URI", in->document_uri);
	if (in->content_type)
		PUT(b, "CONTENT_TYPE", in->content_type, in->content_type_len);
	else
		PUT(b, "CONTENT_TYPE", "", 0);
	if (in->has_body)
		PUT_NUM(b, "CONTENT_LENGTH", in->content_length);
	else
		PUT(b, "CONTENT_LENGTH", "", 0);
	put_server_name(b, req);
	put_addrs(b, in);
	PUTZ(b, "HTTPS", "off");
	/* PHP built with --enable-force-cgi-redirect insists on it. */
	PUTZ(b, "REDIRECT_STATUS", "200");
	/* HTTP_HOST is the host the request is for: for an absolute-form
	 * target its authority, not a Host field that may say otherwise
	 * (RFC 9112 3.2.2; what Debian's nginx fastcgi_params does too). */
	if (req->host.p)
		PUT(b, "HTTP_HOST", req->host.p, req->host.len);
	put_headers(b, req);
}

int fcgi_params_build(const struct fcgi_params_in *in, uint16_t request_id,
		      bool keep_conn, zc_agg *out)
{
	struct block blk;
	struct fcgi_batch b;
	uint8_t begin[16];
	int err;

	block_init(&blk);
	encode(&blk, in);
	if (blk.err) {
		block_free(&blk);
		return blk.err;
	}
	/* BEGIN_REQUEST, the PARAMS records, the empty PARAMS record: all
	 * bytes, copied together into one buffer (one slice). */
	fcgi_begin_encode(begin, request_id, FCGI_RESPONDER,
			  keep_conn ? FCGI_KEEP_CONN : 0);
	fcgi_batch_init(&b);
	fcgi_batch_bytes(&b, FCGI_BEGIN_REQUEST, request_id,
			 begin + FCGI_HEADER_LEN, 16 - FCGI_HEADER_LEN);
	if (blk.len)
		fcgi_batch_bytes(&b, FCGI_PARAMS, request_id, blk.p, blk.len);
	fcgi_batch_bytes(&b, FCGI_PARAMS, request_id, NULL, 0);
	err = fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL, out);
	fcgi_batch_free(&b);
	block_free(&blk);
	return err;
}
