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
	/* What the head can take at most: the fixed lines fit in 512. */
	size_t need = 512 + h->reason_len + h->location_len +
		      h->content_type_len;
	struct resp_head o = { .buf = NULL };
	zc_buf *big = NULL;
	int err;

	for (size_t i = 0; i < h->nfields; i++)
		need += h->fields[i].name_len + h->fields[i].value_len + 4;
	/* Built where it goes out from: the connection's head arena, as
	 * every head; one larger than its room in a pool buffer. */
	request_head_begin(r, &o);
	if (need > o.cap) {
		if (zc_buf_alloc(NULL, need, &big))
			return -1;
		o.buf = zc_buf_wptr(big);
		o.cap = need;
	}
	resp_begin_reason(&o, rep->status,
			  h->status && h->reason_len ? h->reason : NULL,
			  h->reason_len);
	if (h->content_type)
		resp_field(&o, "Content-Type", 12, h->content_type,
			   h->content_type_len);
	if (h->location)
		resp_field(&o, "Location", 8, h->location, h->location_len);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct cgi_field *f = &h->fields[i];

		if (!server_owned(f->name, f->name_len))
			resp_field(&o, f->name, f->name_len, f->value,
				   f->value_len);
	}
	if (rep->has_length && rep->status != 204)
		resp_add_num(&o, "Content-Length", 14, rep->length);
	else if (rep->chunked)
		resp_add(&o, "Transfer-Encoding", "chunked");
	resp_end(&o, keep_alive && !rep->close_delimited);
	if (!big)
		return request_head_end(r, &o) ? -1 : 0;
	err = o.overflow || zc_buf_publish(big, o.len) ||
	      zc_agg_append_buf(request_out(r), big, 0, o.len);
	zc_buf_release(big);
	return err ? -1 : 0;
}
