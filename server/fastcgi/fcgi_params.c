/*
 * fcgi_params.c - the CGI/1.1 parameters of a request (RFC 3875 section 4.1,
 * and what nginx's fastcgi_params adds), as FastCGI name-value pairs.
 *
 * The pairs are encoded into a growable scratch block first, then framed
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

#define NAME_MAX_LEN 256	/* "HTTP_" + a header name */

struct block {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put(struct block *b, const char *name, size_t nlen,
		const char *value, size_t vlen)
{
	size_t need = fcgi_nv_len(nlen, vlen);

	if (b->err)
		return;
	if (b->cap - b->len < need) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap - b->len < need)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	b->err = fcgi_nv_encode(b->p, b->cap, &b->len, name, nlen, value,
				vlen);
}

static void putz(struct block *b, const char *name, const char *value)
{
	put(b, name, strlen(name), value, strlen(value));
}

static void puts_(struct block *b, const char *name, const char *v,
		  size_t vlen)
{
	put(b, name, strlen(name), v, vlen);
}

static void put_num(struct block *b, const char *name, unsigned long long v)
{
	char num[HTTP_DEC_MAX], *d = http_dec(num, v);

	puts_(b, name, d, (size_t)(num + sizeof(num) - d));
}

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

static void put_addr(struct block *b, const char *addr_name,
		     const char *port_name, const struct sockaddr_storage *ss)
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
	putz(b, addr_name, host);
	put_num(b, port_name, port);
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
		putz(b, "SERVER_NAME", "");
		return;
	}
	if (h[0] == '[') {		/* "[::1]:8080" */
		const char *e = memchr(h, ']', n);

		n = e ? (size_t)(e - h) + 1 : n;
	} else {
		const char *c = memchr(h, ':', n);

		n = c ? (size_t)(c - h) : n;
	}
	puts_(b, "SERVER_NAME", h, n);
}

/* The pairs of one request into b. */
static void encode(struct block *b, const struct fcgi_params_in *in)
{
	const struct http_request *req = in->req;
	const char *q = in->query;

	putz(b, "GATEWAY_INTERFACE", "CGI/1.1");
	putz(b, "SERVER_SOFTWARE", "zchttpd/" ZC_VERSION);
	putz(b, "SERVER_PROTOCOL", in->protocol ? in->protocol :
				   req->minor ? "HTTP/1.1" : "HTTP/1.0");
	puts_(b, "REQUEST_METHOD", req->method_str.p, req->method_str.len);
	puts_(b, "REQUEST_URI", req->target.p, req->target.len);
	puts_(b, "QUERY_STRING", q ? q : "", q ? in->query_len : 0);
	puts_(b, "SCRIPT_NAME", in->script_name, in->script_name_len);
	puts_(b, "PATH_INFO", in->path_info, in->path_info_len);
	puts_(b, "SCRIPT_FILENAME", in->script_filename,
	      strlen(in->script_filename));
	putz(b, "DOCUMENT_ROOT", in->document_root);
	putz(b, "DOCUMENT_URI", in->document_uri);
	if (in->content_type)
		puts_(b, "CONTENT_TYPE", in->content_type,
		      in->content_type_len);
	else
		putz(b, "CONTENT_TYPE", "");
	if (in->has_body)
		put_num(b, "CONTENT_LENGTH", in->content_length);
	else
		putz(b, "CONTENT_LENGTH", "");
	put_server_name(b, req);
	put_addr(b, "SERVER_ADDR", "SERVER_PORT", in->server);
	put_addr(b, "REMOTE_ADDR", "REMOTE_PORT", in->peer);
	putz(b, "HTTPS", "off");
	/* PHP built with --enable-force-cgi-redirect insists on it. */
	putz(b, "REDIRECT_STATUS", "200");
	/* HTTP_HOST is the host the request is for: for an absolute-form
	 * target its authority, not a Host field that may say otherwise
	 * (RFC 9112 3.2.2; what Debian's nginx fastcgi_params does too). */
	if (req->host.p)
		puts_(b, "HTTP_HOST", req->host.p, req->host.len);
	put_headers(b, req);
}

int fcgi_params_build(const struct fcgi_params_in *in, uint16_t request_id,
		      bool keep_conn, zc_agg *out)
{
	struct block blk = { 0 };
	struct fcgi_batch b;
	uint8_t begin[16];
	int err;

	encode(&blk, in);
	if (blk.err) {
		free(blk.p);
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
	free(blk.p);
	return err;
}
