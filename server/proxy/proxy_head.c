/*
 * proxy_head.c - heads as the intermediary writes them (proxy_head.h).
 *
 * Forwarding fields (RFC 7239, and the de-facto X-Forwarded-*): a client
 * can write anything in them, so they are believed only from --proxy-trust
 * addresses (another proxy in front of us), where ours is appended to
 * theirs; from anyone else they are dropped and ours alone is sent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addr_text.h"
#include "http_lex.h"
#include "proxy_head.h"
#include "respond.h"

#define VIA_ID "zchttpd"

/* Is h the field `lit` (a string literal: its length is the compiler's)? */
#define named(h, lit) \
	((h)->name.len == sizeof("" lit) - 1 && \
	 !strncasecmp((h)->name.p, lit, sizeof(lit) - 1))

/* The names the Connection fields of a head list, gathered once: asking
 * http_connection_lists for every field scans every Connection field
 * again each time (2,400 instructions a proxied request, callgrind).
 * More than fit: `many`, and each field is asked the long way. */
#define CONN_NAMES 16

struct conn_names {
	struct http_str name[CONN_NAMES];
	unsigned n;
	bool many;
};

static void conn_names(const struct http_header *hs, size_t n,
		       struct conn_names *c)
{
	c->n = 0;
	c->many = false;
	for (size_t i = 0; i < n; i++) {
		struct http_str el;
		size_t pos = 0;

		if (!named(&hs[i], "Connection"))
			continue;
		while (http_list_next(hs[i].value, &pos, &el)) {
			if (c->n == CONN_NAMES) {
				c->many = true;
				return;
			}
			c->name[c->n++] = el;
		}
	}
}

/* A field that never goes to the next hop as it came. */
static bool dropped(const struct http_header *hs, size_t n,
		    const struct conn_names *c, const struct http_header *h)
{
	if (http_hop_by_hop(h->name.p, h->name.len) ||
	    named(h, "Content-Length"))
		return true;
	if (c->many)
		return http_connection_lists(hs, n, h->name.p, h->name.len);
	for (unsigned i = 0; i < c->n; i++)
		if (c->name[i].len == h->name.len &&
		    !strncasecmp(c->name[i].p, h->name.p, h->name.len))
			return true;
	return false;
}

static bool forwarding(const struct http_header *h)
{
	return named(h, "X-Forwarded-For") || named(h, "X-Forwarded-Proto") ||
	       named(h, "X-Forwarded-Host") || named(h, "Forwarded");
}

bool ph_trusted(const struct zh_proxy_config *pc,
		const struct sockaddr_storage *peer)
{
	for (unsigned i = 0; i < pc->ntrust; i++) {
		const struct zh_trusted_net *t = &pc->trust[i];
		const unsigned char *a, *b;
		unsigned bits = t->prefix, bytes;

		if (t->addr.ss_family != peer->ss_family)
			continue;
		if (peer->ss_family == AF_INET) {
			a = (const void *)&((const struct sockaddr_in *)peer)
					    ->sin_addr;
			b = (const void *)&((const struct sockaddr_in *)&t->addr)
					    ->sin_addr;
		} else if (peer->ss_family == AF_INET6) {
			a = (const void *)&((const struct sockaddr_in6 *)peer)
					    ->sin6_addr;
			b = (const void *)&((const struct sockaddr_in6 *)
					    &t->addr)->sin6_addr;
		} else {
			continue;
		}
		bytes = bits / 8;
		if (memcmp(a, b, bytes))
			continue;
		if (bits % 8 && ((a[bytes] ^ b[bytes]) &
				 (0xff00u >> (bits % 8)) & 0xff))
			continue;
		return true;
	}
	/* A UNIX socket's client is local: trusted when the loopback is. */
	return false;
}


/* Every value of the fields called `name`, joined by ", " (the trusted
 * forwarders' lists we extend). */
static void joined(struct resp_head *h, const struct http_request *req,
		   const char *name, bool *any)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *f = &req->headers[i];

		if (f->name.len != n || strncasecmp(f->name.p, name, n))
			continue;
		if (*any)
			resp_add_raw(h, ", ", 2);
		resp_add_raw(h, f->value.p, f->value.len);
		*any = true;
	}
}

static void forwarded_fields(struct resp_head *h, const struct ph_request *in)
{
	const struct http_request *req = in->req;
	bool trusted = ph_trusted(in->pc, in->peer);
	const char *proto = in->secure ? "https" : "http";
	char addr[ADDR_TEXT_MAX];
	const char *who = addr_text(in->peer, addr) ? addr : "unknown";
	bool any = false;

	resp_add_raw(h, "X-Forwarded-For: ", 17);
	if (trusted)
		joined(h, req, "X-Forwarded-For", &any);
	if (any)
		resp_add_raw(h, ", ", 2);
	resp_add_raw(h, who, strlen(who));
	resp_add_raw(h, "\r\n", 2);

	any = false;
	if (trusted && http_find_header(req, "X-Forwarded-Proto")) {
		resp_add_raw(h, "X-Forwarded-Proto: ", 19);
		joined(h, req, "X-Forwarded-Proto", &any);
		resp_add_raw(h, "\r\n", 2);
	} else {
		resp_add(h, "X-Forwarded-Proto", proto);
	}
	any = false;
	if (trusted && http_find_header(req, "X-Forwarded-Host")) {
		resp_add_raw(h, "X-Forwarded-Host: ", 18);
		joined(h, req, "X-Forwarded-Host", &any);
		resp_add_raw(h, "\r\n", 2);
	} else if (req->host.p) {
		resp_field(h, "X-Forwarded-Host", 16, req->host.p,
			   req->host.len);
	}

	/* RFC 7239: for= an IPv6 address is quoted and bracketed; host= a
	 * value with a colon (a port) is quoted too. */
	any = false;
	resp_add_raw(h, "Forwarded: ", 11);
	if (trusted)
		joined(h, req, "Forwarded", &any);
	if (any)
		resp_add_raw(h, ", ", 2);
	resp_add_raw(h, "for=", 4);
	if (in->peer->ss_family == AF_INET6) {
		resp_add_raw(h, "\"[", 2);
		resp_add_raw(h, who, strlen(who));
		resp_add_raw(h, "]\"", 2);
	} else if (in->peer->ss_family == AF_INET) {
		resp_add_raw(h, who, strlen(who));
	} else {
		resp_add_raw(h, "unknown", 7);
	}
	if (req->host.p && req->host.len && req->host.len < 256 &&
	    !memchr(req->host.p, '"', req->host.len) &&
	    !memchr(req->host.p, '\\', req->host.len)) {
		resp_add_raw(h, ";host=\"", 7);
		resp_add_raw(h, req->host.p, req->host.len);
		resp_add_raw(h, "\"", 1);
	}
	resp_add_raw(h, ";proto=", 7);
	resp_add_raw(h, proto, strlen(proto));
	resp_add_raw(h, "\r\n", 2);
}

/* HTTP/2's cookie crumbs as the one Cookie field HTTP/1.1 allows
 * (RFC 9113 8.2.3: joined with "; "). */
static void cookies(struct resp_head *h, const struct http_request *req)
{
	bool first = true;

	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *f = &req->headers[i];

		if (!named(f, "Cookie"))
			continue;
		resp_add_raw(h, first ? "Cookie: " : "; ", first ? 8 : 2);
		resp_add_raw(h, f->value.p, f->value.len);
		first = false;
	}
	if (!first)
		resp_add_raw(h, "\r\n", 2);
}

static void framing(struct resp_head *h, enum ph_framing f, uint64_t length)
{
	if (f == PH_LENGTH)
		resp_add_num(h, "Content-Length", 14, length);
	else if (f == PH_CHUNKED)
		resp_add_raw(h, "Transfer-Encoding: chunked\r\n", 28);
}

static ssize_t done(struct resp_head *h)
{
	return h->overflow ? -ENOSPC : (ssize_t)h->len;
}

ssize_t ph_request_head(const struct ph_request *in, char *buf, size_t cap)
{
	const struct http_request *req = in->req;
	const struct zh_proxy_config *pc = in->pc;
	struct conn_names c;
	struct resp_head h;

	conn_names(req->headers, req->num_headers, &c);
	resp_head_over(&h, buf, cap);
	resp_add_raw(&h, req->method_str.p, req->method_str.len);
	resp_add_raw(&h, " ", 1);
	resp_add_raw(&h, in->target, in->target_len);
	resp_add_raw(&h, " HTTP/1.1\r\n", 11);

	if (pc->host == ZH_HOST_SET)
		resp_add(&h, "Host", pc->host_name);
	else if (pc->host == ZH_HOST_UPSTREAM || !req->host.p)
		resp_add(&h, "Host", in->server->authority);
	else
		resp_field(&h, "Host", 4, req->host.p, req->host.len);

	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *f = &req->headers[i];

		if (dropped(req->headers, req->num_headers, &c, f) ||
		    named(f, "Host") || named(f, "Expect") || forwarding(f) ||
		    (in->h2 && named(f, "Cookie")))
			continue;
		resp_field(&h, f->name.p, f->name.len, f->value.p,
			   f->value.len);
	}
	if (in->h2)
		cookies(&h, req);
	forwarded_fields(&h, in);
	if (pc->via)
		resp_add_raw(&h, req->minor || in->h2 ? "Via: 1.1 " VIA_ID "\r\n"
						      : "Via: 1.0 " VIA_ID "\r\n",
			     9 + sizeof(VIA_ID) - 1 + 2);
	if (in->upgrade) {
		const struct http_header *u = http_find_header(req, "Upgrade");

		if (u)
			resp_field(&h, "Upgrade", 7, u->value.p, u->value.len);
		resp_add_raw(&h, "Connection: upgrade\r\n", 21);
	}
	framing(&h, in->framing, in->length);
	resp_add_raw(&h, "\r\n", 2);
	return done(&h);
}

ssize_t ph_response_head(const struct ph_response *in, char *buf, size_t cap)
{
	const struct http_response *resp = in->resp;
	struct conn_names c;
	struct resp_head h;
	bool date = false;

	conn_names(resp->headers, resp->num_headers, &c);
	resp_head_over(&h, buf, cap);
	/* Our version, the upstream's status and reason (RFC 9110 6.2: a
	 * proxy forwards the status; its own protocol version). */
	resp_add_raw(&h, "HTTP/1.1 ", 9);
	{
		char st[4] = { (char)('0' + resp->status / 100),
			       (char)('0' + resp->status / 10 % 10),
			       (char)('0' + resp->status % 10), ' ' };

		resp_add_raw(&h, st, 4);
	}
	resp_add_raw(&h, resp->reason.p, resp->reason.len);
	resp_add_raw(&h, "\r\n", 2);

	for (size_t i = 0; i < resp->num_headers; i++) {
		const struct http_header *f = &resp->headers[i];

		if (dropped(resp->headers, resp->num_headers, &c, f))
			continue;
		date |= named(f, "Date");
		resp_field(&h, f->name.p, f->name.len, f->value.p,
			   f->value.len);
	}
	/* RFC 9110 6.6.1: a recipient with a clock adds Date when the
	 * origin did not. */
	if (!date && !in->interim)
		resp_add(&h, "Date", resp_date());
	if (in->pc->via)
		resp_add_raw(&h, resp->minor ? "Via: 1.1 " VIA_ID "\r\n"
					     : "Via: 1.0 " VIA_ID "\r\n",
			     9 + sizeof(VIA_ID) - 1 + 2);
	if (in->interim) {
		if (in->upgrade) {
			const struct http_header *u = NULL;

			for (size_t i = 0; i < resp->num_headers; i++)
				if (named(&resp->headers[i], "Upgrade"))
					u = &resp->headers[i];
			if (u)
				resp_field(&h, "Upgrade", 7, u->value.p,
					   u->value.len);
			resp_add_raw(&h, "Connection: upgrade\r\n", 21);
		}
		resp_add_raw(&h, "\r\n", 2);
		return done(&h);
	}
	framing(&h, in->framing, in->length);
	resp_end(&h, in->keep_alive);
	return done(&h);
}
