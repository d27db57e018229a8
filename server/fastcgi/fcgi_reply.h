/* fcgi_reply.h - an application's CGI head as an HTTP response head. */
#ifndef ZC_FCGI_REPLY_H
#define ZC_FCGI_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "fcgi_proto.h"
#include "zc.h"

struct fcgi_reply {
	int status;
	bool local_redirect;	/* Location "/path" without Status: serve
				 * that path instead (nothing is sent) */
	bool no_body;		/* HEAD, 204, 304: the app's body is dropped */
	bool has_length;	/* the app's Content-Length frames the body */
	uint64_t length;
	bool chunked;		/* framed as chunks (HTTP/1.1 client) */
	bool close_delimited;	/* ended by closing (HTTP/1.0 client) */
};

/* Decide status and framing.  -1: the head is unusable (an interim
 * status): the server answers 502. */
int fcgi_reply_plan(const struct cgi_head *h, bool head_only, int minor,
		    struct fcgi_reply *rep);
/* Append the HTTP head for it to r's output.  0, or -1 when out of
 * memory. */
struct zh_request;
int fcgi_reply_head(const struct cgi_head *h, const struct fcgi_reply *rep,
		    bool keep_alive, struct zh_request *r);

#endif
