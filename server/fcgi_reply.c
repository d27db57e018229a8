/*
 * fcgi_reply.c - an application's CGI response head (RFC 3875 section 6)
 * turned into the HTTP/1.1 head zchttpd sends.
 *
 * Status: sets the status line (reason included if the app gave one);
 * Location without Status is a redirect: a local one ("/path") is served
 * again inside the server (RFC 3875 6.2.2), any other is a 302 to the
 * client; Content-Type and every other field pass through, except those
 * that describe the connection or that the server itself sends (Date,
 * Server, Connection, Transfer-Encoding, ...): an app cannot frame or
 * keep the client's connection.  The body is framed by the app's
 * Content-Length if it gave one, else chunked for an HTTP/1.1 client, else
 * (HTTP/1.0) delimited by closing the connection.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fcgi_reply.h"
#include "http_parser.h"
#include "request.h"
#include "respond.h"

/* Fields the server owns (hop-by-hop or its own). */
static bool server_owned(const char *n, size_t len)
{
	static const char *const owned[] = {
		"Connection", "Keep-Alive", "Transfer-Encoding", "Date",
		"Server", "Proxy-Connection", "Upgrade", "TE", "Trailer",
	};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (strlen(owned[i]) == len && !strncasecmp(n, owned[i], len))
			return true;
	return false;
}

struct out {
	char *p;
	size_t len, cap;
};

static void add(struct out *o, const char *s, size_t n)
{
	if (n > o->cap - o->len)
		n = 0, o->cap = 0;	/* sized beforehand: cannot happen */
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void addz(struct out *o, const char *s)
{
	add(o, s, strlen(s));
}

static void field(struct out *o, const char *n, size_t nl, const char *v,
		  size_t vl)
{
	add(o, n, nl);
	add(o, ": ", 2);
	add(o, v, vl);
	add(o, "\r\n", 2);
}

int fcgi_reply_plan(const struct cgi_head *h, bool head_only, int minor,
		    struct fcgi_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->status = h->status;
	if (!rep->status && h->location) {
		if (h->location_len && h->location[0] == '/') {
			rep->local_redirect = true;
			return 0;
		}
		rep->status = 302;
	}
	if (!rep->status)
		rep->status = 200;
	if (rep->status < 200)
		return -1;	/* an app cannot send interim responses */
	rep->no_body = head_only || rep->status == 204 || rep->status == 304;
	if (h->has_content_length) {
		rep->has_length = true;
		rep->length = h->content_length;
	} else if (!rep->no_body) {
		if (minor >= 1)
			rep->chunked = true;
		else
			rep->close_delimited = true;
	}
	return 0;
}

int fcgi_reply_head(const struct cgi_head *h, const struct fcgi_reply *rep,
		    bool keep_alive, struct zh_request *r)
{
	size_t cap = 512 + h->reason_len + h->location_len +
		     h->content_type_len;
	struct out o;
	char line[64];
	int err;

	for (size_t i = 0; i < h->nfields; i++)
		cap += h->fields[i].name_len + h->fields[i].value_len + 4;
	o.p = malloc(cap);
	if (!o.p)
		return -1;
	o.len = 0;
	o.cap = cap;
	snprintf(line, sizeof(line), "HTTP/1.1 %03d ", rep->status);
	addz(&o, line);
	if (h->status && h->reason_len)
		add(&o, h->reason, h->reason_len);
	else
		addz(&o, resp_reason(rep->status));
	addz(&o, "\r\nServer: zchttpd\r\nDate: ");
	add(&o, resp_date(), HTTP_DATE_LEN);
	addz(&o, "\r\n");
	if (h->content_type)
		field(&o, "Content-Type", 12, h->content_type,
		      h->content_type_len);
	if (h->location)
		field(&o, "Location", 8, h->location, h->location_len);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct cgi_field *f = &h->fields[i];

		if (!server_owned(f->name, f->name_len))
			field(&o, f->name, f->name_len, f->value,
			      f->value_len);
	}
	if (rep->has_length && rep->status != 204) {
		snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
			 (unsigned long long)rep->length);
		addz(&o, line);
	} else if (rep->chunked) {
		addz(&o, "Transfer-Encoding: chunked\r\n");
	}
	addz(&o, keep_alive && !rep->close_delimited
			 ? "Connection: keep-alive\r\n\r\n"
			 : "Connection: close\r\n\r\n");
	/* Into the connection's head arena (a copy, but no buffer). */
	err = o.cap ? request_head_append(r, o.p, o.len) : -1;
	free(o.p);
	return err ? -1 : 0;
}
